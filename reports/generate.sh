#!/usr/bin/env bash
# Regenerates the example reports in reports/ from the committed fixtures:
#   bash reports/generate.sh            (builds the binary with cargo)
# Env: BIN=path/to/rocprof-classify to skip the build, OUT=dir to write elsewhere (the tests
# compare a fresh run with the committed files), NO_SCREENSHOTS=1 to skip the Chromium screenshots.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
if [ -z "${BIN:-}" ]; then
  (cd "$root" && cargo build -q)
  BIN="${CARGO_TARGET_DIR:-$root/target}/debug/rocprof-classify"
fi
BIN="$(realpath "$BIN")"
OUT="$(realpath "${OUT:-$root/reports}")"
mkdir -p "$OUT"
# Relative paths, so the reports name the fixtures the same way on every machine.
cd "$root/fixtures/kineto/h100"
"$BIN" --color never eager_manual_attn.json.gz > "$OUT/eager_manual_attn.txt"
"$BIN" -q --json "$OUT/eager_manual_attn.json" --markdown "$OUT/eager_manual_attn.md" \
  --html "$OUT/eager_manual_attn.html" eager_manual_attn.json.gz > /dev/null
"$BIN" --color never train_eager_fp32.json.gz > "$OUT/train_eager_fp32.txt"
"$BIN" --color never compiled_graph_breaks.json.gz > "$OUT/compiled_graph_breaks.txt"
"$BIN" diff --color never eager_sdpa_fused.json.gz compiled_clean.json.gz \
  --markdown "$OUT/diff_sdpa_to_compiled.md" --html "$OUT/diff_sdpa_to_compiled.html" > "$OUT/diff_sdpa_to_compiled.txt"
# The same Llama eager, and with 22 matmuls planted per step: the verdict and the op that moved.
cd "$root/fixtures/kineto/h200/diff"
"$BIN" diff --color never base_a.json.gz planted.json.gz \
  --markdown "$OUT/diff_planted_matmul.md" --html "$OUT/diff_planted_matmul.html" > "$OUT/diff_planted_matmul.txt"
# Two ranks of DDP training, one slowed on its host: collectives, wait vs transfer, the straggler.
cd "$root/fixtures/kineto/h100x2"
"$BIN" --color never ddp_slow_rank > "$OUT/ddp_slow_rank.txt"
"$BIN" -q --markdown "$OUT/ddp_slow_rank.md" ddp_slow_rank > /dev/null
# A real model with CUDA-graph replays: graph gaps in the partition and the steps.
cd "$root/fixtures/kineto/zoo"
"$BIN" --color never llama_decode_reduce_overhead.json.gz > "$OUT/llama_decode_reduce_overhead.txt"
if [ -z "${NO_SCREENSHOTS:-}" ] && command -v chromium > /dev/null; then
  for page in eager_manual_attn diff_sdpa_to_compiled diff_planted_matmul; do
    profile="$(mktemp -d)"
    chromium --headless --no-sandbox --disable-gpu --disable-background-networking --disable-component-update \
      --no-first-run --disable-sync --user-data-dir="$profile" --window-size=1280,2400 \
      --screenshot="$OUT/$page.png" "file://$OUT/$page.html" > /dev/null 2>&1 || echo "screenshot of $page failed" >&2
    rm -rf "$profile"
  done
fi
