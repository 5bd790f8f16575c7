#!/usr/bin/env bash
# Runs fuzz targets for SECONDS each, JOBS at a time (default: all targets, 2 at a time), and
# prints one summary line per target: runs, coverage (edges), features, corpus size, crashes.
# Crashing inputs land in fuzz/artifacts/<target>/; copy each to fuzz/regressions/<target>/ once
# fixed (the integration tests replay that directory). Usage: fuzz/run.sh SECONDS [TARGET...]
set -uo pipefail
cd "$(dirname "$0")"
secs=${1:?seconds per target}; shift
targets=("$@")
[[ ${#targets[@]} -eq 0 ]] && targets=(kineto kineto_pieces scanner rocprof_csv rocprof_json rocpd rocpd_rows rocprof_compute torch_logs torch_trace rules)
jobs=${JOBS:-2}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/rocprof-classify-fuzz-target}
[[ -d corpus ]] || ./seed.sh
cargo fuzz build -s none >/dev/null
mkdir -p logs
run_one() {
  local t=$1
  mkdir -p "corpus/$t"
  cargo fuzz run -s none "$t" "corpus/$t" -- -max_total_time="$secs" -rss_limit_mb=4096 \
    -timeout=20 -print_final_stats=1 > "logs/$t.log" 2>&1
  local rc=$?
  local done_line; done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "logs/$t.log" | tail -1)
  local crashes; crashes=$(ls "artifacts/$t" 2>/dev/null | wc -l)
  printf '%-16s rc=%s %s crashes=%s\n' "$t" "$rc" "${done_line:-(no DONE line: see fuzz/logs/$t.log)}" "$crashes"
}
i=0
for t in "${targets[@]}"; do
  run_one "$t" &
  i=$((i + 1))
  if (( i % jobs == 0 )); then wait; fi
done
wait
