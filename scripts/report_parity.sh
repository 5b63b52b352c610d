#!/usr/bin/env bash
# Renders every report mlport has, in every format, of one stored database with two builds of
# mlport, and diffs the two renderings: a refactoring that promises "every report is byte-identical"
# proves it here (exit 0 and "identical" when the renderings match, exit 1 with the diff when not).
#
#   scripts/report_parity.sh make-store BIN DB [PAPER]    # a real store: the built-in catalogue on
#                                                          # this machine (eager + a compiled sweep)
#                                                          # and the paper's data (default ../shared/paper-data)
#   scripts/report_parity.sh render BIN DB OUT            # every report of DB rendered by BIN into OUT
#   scripts/report_parity.sh compare OLD_BIN NEW_BIN DB   # render with both, diff -r
#
# What is rendered, per command: stdout, then the exit code, in one file; stderr apart for the
# commands whose stderr holds no timing. Runs are found with `mlport runs`, so every stored run
# (live, modes, the paper's 18) is rendered in every format and variant.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"

# cmd NAME ARGS...: one rendering, stdout + exit code in OUT/NAME.out, stderr in OUT/NAME.err.
cmd() {
  local name="$1"; shift
  local rc=0
  (cd "$work" && "$bin" "$@" >"$out/$name.out" 2>"$out/$name.err") || rc=$?
  echo "exit $rc" >>"$out/$name.out"
}

render() {
  bin="$(realpath "$1")"; db="$(realpath "$2")"; out="$3"
  mkdir -p "$out"; out="$(realpath "$out")"
  work="$(mktemp -d)"
  local formats=(table markdown json csv)
  cmd runs runs --db "$db"
  local ids
  ids=$(sqlite3 "$db" 'SELECT id FROM runs ORDER BY id' 2>/dev/null || python3 - "$db" <<'EOF'
import sqlite3, sys
for (i,) in sqlite3.connect(sys.argv[1]).execute("SELECT id FROM runs ORDER BY id"):
    print(i)
EOF
)
  for f in "${formats[@]}"; do
    cmd "overview.$f" report --db "$db" --run all --format "$f"
    cmd "latest.$f" report --db "$db" --format "$f"
    for id in $ids; do
      cmd "run$id.$f" report --db "$db" --run "$id" --format "$f"
      cmd "run$id.functions.$f" report --db "$db" --run "$id" --functions --format "$f"
      cmd "run$id.all-failures.$f" report --db "$db" --run "$id" --all-failures --format "$f"
      cmd "run$id.dtypes.$f" report --db "$db" --run "$id" --dtypes --format "$f"
      cmd "run$id.frameworks.$f" report --db "$db" --run "$id" --frameworks --format "$f"
      cmd "run$id.modes.$f" report --db "$db" --run "$id" --modes --format "$f"
    done
  done
  # Slowdowns: between the paper's GPU and TPU runs (by label), eager vs compiled, framework vs
  # framework, every measure, every format (markdown is refused: its error is compared too).
  local labels
  labels=$(python3 - "$db" <<'EOF'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
cols = [r[1] for r in c.execute("PRAGMA table_info(runs)")]
if "label" in cols:
    for (l,) in c.execute("SELECT label FROM runs WHERE label IS NOT NULL ORDER BY id"):
        print(l)
EOF
)
  local specs=("cpu..cpu/compiled" "torch/cpu..jax/cpu" "numpy/cpu..torch/cpu" "torch/cpu..torch/cpu/compiled")
  local gpu tpu
  for fw in torch tensorflow jax; do
    gpu=$(echo "$labels" | grep "^paper/$fw/" | grep -i gpu | head -1 || true)
    tpu=$(echo "$labels" | grep "^paper/$fw/" | grep -i tpu | head -1 || true)
    [ -n "$gpu" ] && [ -n "$tpu" ] && specs+=("cuda:0@$gpu..tpu:0@$tpu")
  done
  local i=0
  for spec in "${specs[@]}"; do
    i=$((i + 1))
    for m in steady test first-call; do
      for f in "${formats[@]}"; do
        cmd "slowdown$i.$m.$f" report --db "$db" --slowdown "$spec" --measure "$m" --format "$f"
      done
    done
    cmd "slowdown$i.threshold" report --db "$db" --slowdown "$spec" --threshold 2 --threshold-for torch.add=1.5
  done
  # Catalogue listing, scan, audit, mine and sample over mlport's own Python and test fixtures.
  cmd list list --no-probe
  cmd list.functions list --no-probe --functions
  # Copied into the scratch folder and named relatively, so two checkouts render the same paths.
  mkdir -p "$work/code"
  cp -r "$here/src/worker/python" "$work/code/python"
  cp -r "$here/tests/fixtures" "$work/code/fixtures"
  cp -r "$here/benches" "$work/code/benches"
  find "$work/code" -name __pycache__ -prune -exec rm -rf {} +
  local py="code/python" fx="code/fixtures" bx="code/benches"
  for f in table json csv; do
    cmd "scan.$f" scan "$py" "$fx" "$bx" --format "$f"
  done
  for f in "${formats[@]}"; do
    cmd "audit.cpu.$f" audit "$py" "$fx" "$bx" --db "$db" --device cpu/compiled --format "$f"
    cmd "audit.tpu.$f" audit "$py" "$fx" "$bx" --db "$db" --device tpu:0 --reference cuda:0 --format "$f"
    cmd "mine.$f" mine "$py" "$bx" --framework numpy --format "$f"
  done
  cmd mine.csv.keep mine "$py" "$bx" --framework numpy --format csv
  head -n -1 "$out/mine.csv.keep.out" >"$work/freq.csv"
  for f in "${formats[@]}"; do
    cmd "sample.$f" sample "$work/freq.csv" --top 3 --per-decile 1 --seed 7 --format "$f"
  done
  # Repro scripts of the first results that did not pass (the script text is compared).
  local rid
  for rid in $(python3 - "$db" <<'EOF'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
for (i,) in c.execute("SELECT id FROM results WHERE outcome != 'pass' ORDER BY id LIMIT 5"):
    print(i)
EOF
); do
    cmd "repro$rid" repro "$rid" --db "$db" --out "$work/repro-$rid"
    [ -f "$work/repro-$rid/repro.py" ] && cp "$work/repro-$rid/repro.py" "$out/repro$rid.py"
  done
  # scan's, audit's and mine's stderr carry throughput timings; drop those lines only.
  sed -i -E '/scanned [0-9]+ files/d' "$out"/*.err
  sed -i "s#$work#WORK#g" "$out"/*.out "$out"/*.err
  rm -rf "$work"
  echo "rendered $(ls "$out" | wc -l) files into $out"
}

case "${1:-}" in
  make-store)
    bin="$(realpath "$2")"; db="$3"; paper="${4:-$here/../shared/paper-data}"
    "$bin" run --db "$db" --format json >/dev/null
    "$bin" run --db "$db" --modes eager,compiled --framework torch,jax --dtype float32 --format json >/dev/null
    "$bin" import paper "$paper" --db "$db" >/dev/null
    ;;
  render) render "$2" "$3" "$4" ;;
  compare)
    tmp="$(mktemp -d)"
    render "$2" "$4" "$tmp/old"
    render "$3" "$4" "$tmp/new"
    if diff -r "$tmp/old" "$tmp/new"; then
      echo "identical: $(ls "$tmp/old" | wc -l) renderings"
    else
      echo "renderings differ (above)"; exit 1
    fi
    ;;
  *) sed -n 2,12p "$0"; exit 2 ;;
esac
