#!/usr/bin/env bash
# Renders every report mlport has, in every format, of one stored database with two builds of
# mlport, and diffs the two renderings: a refactoring that promises "every report is byte-identical"
# proves it here (exit 0 and "identical" when the renderings match, exit 1 with the diff when not).
#
#   scripts/report_parity.sh make-store BIN DB [PAPER]    # a real store: the built-in catalogue on
#                                                          # this machine (eager + a compiled sweep),
#                                                          # the paper's data (default ../shared/paper-data)
#                                                          # and make-extra's runs
#   scripts/report_parity.sh make-extra BIN DB            # a two-machine campaign of a NumPy catalogue
#                                                          # and a pytest-json report imported twice (a suite)
#   scripts/report_parity.sh render BIN DB OUT            # every report of DB rendered by BIN into OUT
#   scripts/report_parity.sh compare OLD_BIN NEW_BIN DB   # render with both, diff -r
#
# On a slow machine (a debug build renders a bootstrap in seconds) PARITY_RUNS="ID ..." limits the
# per-run renderings to those runs and PARITY_SPECS=N the slowdowns to the first N pairs, and
# PARITY_PART=reports|pages|slowdowns|others renders one part into OUT/PART (run the parts side
# by side into the same OUT); unset, everything is rendered.
#
# What is rendered, per command: stdout, then the exit code, in one file; stderr apart for the
# commands whose stderr holds no timing. Runs are found in the store, so every stored run
# (live, modes, the paper's 18, a campaign's, a suite's) is rendered in every format and variant.
#
# `mlport report <KIND>` and the older flags that are its aliases: every report is rendered by
# its alias into NAME.out and by its kind into NAME.kind.out. A build without kinds (before they
# came) renders the alias only and copies it to NAME.kind.out, so `compare` proves
# old alias = new alias = new kind, byte for byte. HTML pages are compared as files: the run's
# page byte for byte once `&#x2f;` and `&#x27;` are decoded (the template escapes `/` and `'`,
# which the older hand-written escaping left as they were); the paper's page by its text
# (ids, headings, cells and paragraphs: its markup changed with the move to the template).
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"

# cmd NAME ARGS...: one rendering, stdout + exit code in OUT/NAME.out, stderr in OUT/NAME.err.
cmd() {
  local name="$1"; shift
  local rc=0
  (cd "$work" && "$bin" "$@" >"$out/$name.out" 2>"$out/$name.err") || rc=$?
  echo "exit $rc" >>"$out/$name.out"
}

# pair NAME ALIAS... -- KIND...: `report ALIAS...` into NAME, `report KIND...` into NAME.kind (a
# build without kinds: the alias's rendering copied there). A kind's options follow its name
# (`report --db X slowdown` is refused: the older flags and a kind do not go together).
pair() {
  local name="$1"; shift
  local alias=()
  while [ "$1" != "--" ]; do alias+=("$1"); shift; done
  shift
  cmd "$name" report --db "$db" "${alias[@]}"
  if [ "$kinds" = yes ]; then
    cmd "$name.kind" report "$@" --db "$db"
  else
    cp "$out/$name.out" "$out/$name.kind.out"; cp "$out/$name.err" "$out/$name.kind.err"
  fi
}

# page NAME ALIAS... -- KIND...: as `pair`, for an HTML page written with -o: the page is kept
# as NAME.html (and NAME.kind.html).
page() {
  local name="$1"; shift
  local alias=()
  while [ "$1" != "--" ]; do alias+=("$1"); shift; done
  shift
  cmd "$name" report --db "$db" "${alias[@]}" --format html -o "$work/page.html"
  mv "$work/page.html" "$out/$name.html" 2>/dev/null || true
  if [ "$kinds" = yes ]; then
    cmd "$name.kind" report "$@" --db "$db" --format html -o "$work/page.html"
    mv "$work/page.html" "$out/$name.kind.html" 2>/dev/null || true
  else
    cp "$out/$name.out" "$out/$name.kind.out"; cp "$out/$name.err" "$out/$name.kind.err"
    if [ -f "$out/$name.html" ]; then cp "$out/$name.html" "$out/$name.kind.html"; fi
  fi
}

# part NAME: whether this rendering does part NAME (reports, pages, slowdowns, others): every
# part unless PARITY_PART names one, so that the parts can run side by side.
part() {
  [ -z "${PARITY_PART:-}" ] || [ "$PARITY_PART" = "$1" ]
}

# sql QUERY: the first column of a query's rows on the store, one value a line.
sql() {
  python3 - "$db" "$1" <<'EOF'
import sqlite3, sys
for row in sqlite3.connect(sys.argv[1]).execute(sys.argv[2]):
    print(row[0])
EOF
}

render() {
  bin="$(realpath "$1")"; db="$(realpath "$2")"; out="$3"
  # A part rendered side by side with the others writes its own folder: the rewrites at the end
  # (paths, timings) then touch its files only.
  if [ -n "${PARITY_PART:-}" ]; then out="$out/$PARITY_PART"; fi
  mkdir -p "$out"; out="$(realpath "$out")"
  work="$(mktemp -d)"
  kinds=no
  if "$bin" report portability --help >/dev/null 2>&1; then kinds=yes; fi
  local formats=(table markdown json csv)
  cmd runs runs --db "$db"
  local ids campaigns suites
  ids=${PARITY_RUNS:-$(sql 'SELECT id FROM runs ORDER BY id')}
  campaigns=$(sql 'SELECT DISTINCT campaign FROM runs WHERE campaign IS NOT NULL ORDER BY campaign')
  suites=$(sql "SELECT label FROM runs WHERE label LIKE 'suite-%' ORDER BY id" | paste -sd, -)
  if part reports; then
  for f in "${formats[@]}"; do
    pair "overview.$f" --run all --format "$f" -- overview --format "$f"
    pair "overview.all-failures.$f" --run all --all-failures --format "$f" -- overview --all-failures --format "$f"
    pair "latest.$f" --format "$f" -- portability --format "$f"
    pair "latest.modes.$f" --modes --run all --format "$f" -- modes --format "$f"
    pair "paper.$f" --paper --format "$f" -- paper --format "$f"
    pair "paper-compare.$f" --paper-compare --format "$f" -- paper-compare --format "$f"
    pair "suite.$f" --suite "$suites" --format "$f" -- suite ${suites//,/ } --format "$f"
    pair "suite.one.$f" --suite "${suites%%,*}" --format "$f" -- suite "${suites%%,*}" --format "$f"
    for id in $ids; do
      pair "run$id.$f" --run "$id" --format "$f" -- portability --run "$id" --format "$f"
      pair "run$id.functions.$f" --run "$id" --functions --format "$f" -- portability --run "$id" --functions --format "$f"
      pair "run$id.all-failures.$f" --run "$id" --all-failures --format "$f" -- portability --run "$id" --all-failures --format "$f"
      pair "run$id.reference.$f" --run "$id" --reference cpu --format "$f" -- portability --run "$id" --reference cpu --format "$f"
      pair "run$id.dtypes.$f" --run "$id" --dtypes --format "$f" -- dtypes --run "$id" --format "$f"
      pair "run$id.frameworks.$f" --run "$id" --frameworks --format "$f" -- frameworks --run "$id" --format "$f"
      pair "run$id.modes.$f" --run "$id" --modes --format "$f" -- modes --run "$id" --format "$f"
      pair "run$id.routes.$f" --run "$id" --routes --format "$f" -- routes --run "$id" --format "$f"
      pair "run$id.workloads.$f" --run "$id" --workloads --format "$f" -- workloads --run "$id" --format "$f"
      pair "run$id.paper-compare.$f" --run "$id" --paper-compare --format "$f" -- paper-compare --run "$id" --format "$f"
    done
    pair "run1.dtypes.only.$f" --run 1 --dtypes --only numpy.sum,cumsum --format "$f" -- dtypes --run 1 --only numpy.sum,cumsum --format "$f"
    pair "run1.frameworks.only.$f" --run 1 --frameworks --only torch.sum --format "$f" -- frameworks --run 1 --only torch.sum --format "$f"
    for c in $campaigns; do
      pair "campaign-$c.$f" --campaign "$c" --format "$f" -- campaign "$c" --format "$f"
      pair "campaign-$c.functions.$f" --campaign "$c" --functions --format "$f" -- campaign "$c" --functions --format "$f"
      pair "campaign-$c.all-failures.$f" --campaign "$c" --all-failures --format "$f" -- campaign "$c" --all-failures --format "$f"
      for m in $(sql "SELECT DISTINCT machine FROM runs WHERE campaign = '$c' ORDER BY machine"); do
        for v in dtypes frameworks modes routes workloads; do
          pair "campaign-$c.$m.$v.$f" --campaign "$c" --machine "$m" "--$v" --format "$f" -- "$v" --campaign "$c" --machine "$m" --format "$f"
        done
      done
      pair "campaign-$c.dtypes.no-machine.$f" --campaign "$c" --dtypes --format "$f" -- dtypes --campaign "$c" --format "$f"
    done
  done
  pair paper.seed --paper --stats-seed 3 -- paper --stats-seed 3
  # The refusals: each alias's message is its kind's.
  pair refuse.only --only numpy.sum -- portability --run nothing-such
  pair refuse.all-functions --run all --functions -- overview --format html
  pair refuse.output -o "$work/x.txt" -- portability -o "$work/x.txt"
  pair refuse.html-no-output --format html -- portability --format html
  pair refuse.suite-html --suite a,b --format html -- suite a b --format html
  pair refuse.routes-html --routes --format html -o "$work/x.html" -- routes --format html -o "$work/x.html"
  pair refuse.workloads-html --workloads --format html -o "$work/x.html" -- workloads --format html -o "$work/x.html"
  pair refuse.overview-html --run all --format html -o "$work/x.html" -- overview --format html
  pair refuse.paper-compare-html --paper-compare --format html -o "$work/x.html" -- paper-compare --format html
  pair refuse.no-campaign --campaign none -- campaign none
  fi
  if part pages; then
  # HTML pages: the run's (latest; each of the first runs, with each view flag that means it; a
  # campaign's machine) and the paper's.
  page page.latest -- portability
  for id in $(echo "$ids" | head -3); do
    page "page.run$id" --run "$id" -- portability --run "$id"
    page "page.run$id.all-failures" --run "$id" --all-failures --dtypes -- portability --run "$id" --all-failures
    page "page.run$id.modes" --run "$id" --modes -- modes --run "$id"
    page "page.run$id.frameworks" --run "$id" --frameworks -- frameworks --run "$id"
  done
  for c in $campaigns; do
    m=$(sql "SELECT DISTINCT machine FROM runs WHERE campaign = '$c' ORDER BY machine" | head -1)
    page "page.campaign-$c" --campaign "$c" --machine "$m" -- campaign "$c" --machine "$m"
    page "page.campaign-$c.dtypes" --campaign "$c" --machine "$m" --dtypes -- dtypes --campaign "$c" --machine "$m"
  done
  page page.paper --paper -- paper
  fi
  if part slowdowns; then
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
  if [ -n "${PARITY_SPECS:-}" ]; then specs=("${specs[@]:0:$PARITY_SPECS}"); fi
  local i=0
  for spec in "${specs[@]}"; do
    i=$((i + 1))
    for m in steady test first-call; do
      for f in "${formats[@]}"; do
        pair "slowdown$i.$m.$f" --slowdown "$spec" --measure "$m" --format "$f" -- slowdown "$spec" --measure "$m" --format "$f"
      done
    done
    pair "slowdown$i.threshold" --slowdown "$spec" --threshold 2 --threshold-for torch.add=1.5 -- slowdown "$spec" --threshold 2 --threshold-for torch.add=1.5
    pair "slowdown$i.rule-paper" --slowdown "$spec" --rule paper --stats-seed 5 -- slowdown "$spec" --rule paper --stats-seed 5
    pair "slowdown$i.run-all" --slowdown "$spec" --run all -- slowdown "$spec"
  done
  # Several slowdowns: one table each; refused in the other formats.
  for f in "${formats[@]}"; do
    pair "slowdowns.$f" --slowdown "${specs[0]}" --slowdown "${specs[1]}" --format "$f" -- slowdown "${specs[0]}" "${specs[1]}" --format "$f"
  done
  page page.slowdown --slowdown "${specs[0]}" --slowdown "${specs[1]}" -- slowdown "${specs[0]}" "${specs[1]}"
  local c ms cs
  for c in $campaigns; do
    ms=($(sql "SELECT DISTINCT machine FROM runs WHERE campaign = '$c' ORDER BY machine"))
    cs="numpy/cpu@${ms[0]}..numpy/cpu@${ms[${#ms[@]}-1]}"
    for f in "${formats[@]}"; do
      pair "campaign-$c.slowdown.$f" --campaign "$c" --slowdown "$cs" --measure first-call --format "$f" -- slowdown "$cs" --campaign "$c" --measure first-call --format "$f"
    done
  done
  fi
  # The pages: the run's byte for byte once the template's escaping of / and ' is decoded; the
  # paper's by its text (ids, headings, cells, paragraphs).
  if ls "$out"/page.*.html >/dev/null 2>&1; then
    sed -i -e 's|&#x2f;|/|g' -e "s|&#x27;|'|g" "$out"/page.*.html
  fi
  local p
  for p in "$out"/page.paper*.html; do
    [ -f "$p" ] || continue
    python3 - "$p" >"$p.text" <<'EOF'
import html.parser, sys
class Text(html.parser.HTMLParser):
    """Ids, then the text of every heading, cell and paragraph (not of SVG, styles or captions)."""
    def __init__(self):
        super().__init__()
        self.out, self.skip, self.cur = [], 0, None
    def handle_starttag(self, tag, attrs):
        self.skip += tag in ("svg", "style", "figcaption")
        if tag in ("td", "th", "p", "h1", "h2"):
            self.cur = []
        if tag == "br" and self.cur is not None:
            self.cur.append("\n")
        self.out += ["#" + v for k, v in attrs if k == "id"]
    def handle_endtag(self, tag):
        self.skip -= tag in ("svg", "style", "figcaption")
        if tag in ("td", "th", "p", "h1", "h2") and self.cur is not None:
            self.out.append(tag + ": " + "".join(self.cur))
            self.cur = None
    def handle_data(self, data):
        if self.cur is not None and not self.skip:
            self.cur.append(data)
t = Text()
t.feed(open(sys.argv[1]).read())
print("\n".join(t.out))
EOF
    rm "$p"
  done
  if part others; then
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
  fi
  sed -i "s#$work#WORK#g" "$out"/*.out "$out"/*.err
  rm -rf "$work"
  echo "rendered $(ls "$out" | wc -l) files into $out"
}

# make_extra BIN DB: a campaign of two machines (a NumPy catalogue in two shards) and one
# pytest-json report imported for two frameworks (`report suite`).
make_extra() {
  local bin="$1" db="$2"
  "$bin" run --db "$db" --catalogue "$here/tests/fixtures/fleet/numpy.toml" --campaign parity --machine box-a \
    --shard 0/2 --format json >/dev/null
  "$bin" run --db "$db" --catalogue "$here/tests/fixtures/fleet/numpy.toml" --campaign parity --machine box-b \
    --shard 1/2 --format json >/dev/null
  local fw
  for fw in torch jax; do
    "$bin" import pytest-json "$here/tests/fixtures/pytest-classify/report.json" --framework "$fw" --device cpu \
      --label "suite-$fw" --db "$db" >/dev/null
  done
}

case "${1:-}" in
  make-store)
    bin="$(realpath "$2")"; db="$3"; paper="${4:-$here/../shared/paper-data}"
    "$bin" run --db "$db" --format json >/dev/null
    "$bin" run --db "$db" --modes eager,compiled --framework torch,jax --dtype float32 --format json >/dev/null
    "$bin" import paper "$paper" --db "$db" >/dev/null
    make_extra "$bin" "$db"
    ;;
  make-extra) make_extra "$(realpath "$2")" "$3" ;;
  render) render "$2" "$3" "$4" ;;
  # diff OLD_OUT NEW_OUT: two renderings made with `render` (for parts rendered side by side).
  diff)
    if diff -r "$2" "$3"; then
      echo "identical: $(find "$2" -type f | wc -l) renderings"
    else
      echo "renderings differ (above)"; exit 1
    fi
    ;;
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
  *) sed -n 2,28p "$0"; exit 2 ;;
esac
