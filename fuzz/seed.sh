#!/usr/bin/env bash
# Builds fuzz/corpus/<target>/ from the project's fixtures and, when present, ../shared/corpus
# (real profiler outputs we may read but not redistribute: seeds are made here, never committed).
# Large files are cut to their first bytes: a cut input is a valid case (truncation) and keeps
# each run fast. Usage: fuzz/seed.sh
set -euo pipefail
cd "$(dirname "$0")"
root=..
shared=../../shared/corpus
out=corpus
rm -rf "$out"
mkdir -p "$out"/{kineto,kineto_pieces,scanner,rocprof_csv,rocprof_json,rocpd,rocpd_rows,rocprof_compute,torch_logs,torch_trace,rules}
head_of() { # FILE BYTES DEST
  if [[ $1 == *.gz ]]; then (zcat -f "$1" || true) | head -c "$2" > "$3"; else head -c "$2" "$1" > "$3"; fi
}
n=0
seed() { # TARGET FILE BYTES
  n=$((n + 1)); head_of "$2" "$3" "$out/$1/seed_$n"
}
for f in "$root"/fixtures/kineto/*/*.json.gz "$root"/fixtures/kineto/h100x2/*/*.json.gz "$root"/fixtures/bad/*; do
  seed kineto "$f" 65536
done
# scanner: every Kineto trace of the fixtures and of the corpus (the scanner against serde).
for f in "$root"/fixtures/kineto/*/*.json.gz "$root"/fixtures/kineto/*/*/*.json.gz "$root"/fixtures/bad/*; do
  seed scanner "$f" 65536
done
if [[ -d $shared ]]; then
  while IFS= read -r f; do
    if (zcat -f "$f" 2>/dev/null || true) | head -c 4096 | grep -q '"traceEvents"\|"ph"'; then
      seed scanner "$f" 65536
    fi
  done < <(find "$shared" -name '*.json' -o -name '*.json.gz' | sort)
fi
# kineto_pieces: the same traces behind a piece-size byte (some of 40 bytes, some of 200).
for f in "$out"/kineto/seed_*; do
  n=$((n + 1)); { if (( n % 2 )); then printf '\x27'; else printf '\xc7'; fi; cat "$f"; } > "$out/kineto_pieces/seed_$n"
done
for f in "$root"/fixtures/kineto/h100/torch_logs_extra.txt; do seed torch_logs "$f" 65536; done
seed torch_trace "$root"/fixtures/kineto/h100_torch_trace/torch_trace_log.gz 65536
for f in "$root"/rules/*.toml; do
  n=$((n + 1))
  case $(basename "$f") in ops.toml) b='\x01';; devices.toml) b='\x02';; ladder.toml) b='\x03';; *) b='\x00';; esac
  { printf "$b"; cat "$f"; } > "$out/rules/seed_$n"
done
# rocpd_rows: rows as its decoder reads them (kind, name, start, length, three ids), made here.
python3 - "$out/rocpd_rows" <<'PY'
import struct, sys
def row(kind, name, start, length, a, b, c):
    return bytes([kind, name]) + struct.pack("<qqqqq", start, length, a, b, c)
agent = row(3, 6, 0, 0, 0, 0, 0)
kernels = b"".join(row(0, i % 2, 1000 + 300 * i, 200, 0, i % 2, 10 + i) for i in range(8))
calls = b"".join(row(2, 2, 950 + 300 * i, 20, 0, 1, 1) for i in range(8))
copies = row(1, 6, 4000, 500, 0, 0, 99) + row(2, 3, 3990, 600, 0, 1, 1)
for n, data in enumerate([agent + kernels, agent + kernels + calls, agent + kernels + calls + copies, kernels]):
    open(f"{sys.argv[1]}/seed_{n}", "wb").write(data)
PY
if [[ -d $shared ]]; then
  for f in "$shared"/tracelens/*.json.gz "$shared"/hta/*.json.gz "$shared"/kineto_tb_plugin/*.json*; do
    [[ -f $f ]] && seed kineto "$f" 32768
  done
  for f in "$shared"/rocprof1_*/*.csv "$shared"/rocprofv3_sdk_docs*/*.csv; do seed rocprof_csv "$f" 16384; done
  for f in "$shared"/rocprof1_*/results.json "$shared"/tracelens_rocprof/*.json* "$shared"/rocprofv3_sdk_docs/*.json; do
    [[ -f $f ]] && seed rocprof_json "$f" 32768
  done
  for f in "$shared"/torch_logs/*; do seed torch_logs "$f" 32768; done
  for f in "$shared"/tlparse/*.log; do seed torch_trace "$f" 32768; done
  for d in $(find "$shared"/rocprof_compute* -name sysinfo.csv -printf '%h\n' | sort | head -8); do
    n=$((n + 1))
    { cat "$d/sysinfo.csv"; printf '\0'; head -n 40 "$d/pmc_perf.csv" 2>/dev/null || true; printf '\0';
      head -n 40 "$d/timestamps.csv" 2>/dev/null || true; } > "$out/rocprof_compute/seed_$n"
  done
  # A rocpd database shrunk to a few hundred rows per table (SQLite pages, not a text cut).
  python3 - "$shared/rocpd/15_results.db" "$out/rocpd/seed_small.db" <<'PY'
import shutil, sqlite3, sys
shutil.copy(sys.argv[1], sys.argv[2])
db = sqlite3.connect(sys.argv[2])
for (t,) in db.execute("select name from sqlite_master where type='table'").fetchall():
    try:
        db.execute(f'delete from "{t}" where rowid > 200')
    except sqlite3.Error:
        pass
db.commit()
db.execute("vacuum")
db.close()
PY
fi
for t in "$out"/*; do echo "$(basename "$t"): $(ls "$t" | wc -l) seeds, $(du -sh "$t" | cut -f1)"; done
