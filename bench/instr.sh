#!/usr/bin/env bash
# Instruction counts (valgrind callgrind) of the benchmarks' operations, beside criterion's times.
#
# Each bench binary doubles as a runner of single operations (test-support/src/instr.rs): with INSTR_CASE=<case> it runs that case INSTR_ITERS times inside the function
# `instr_measured_loop`, and callgrind counts only what runs inside it, so set-up and start-up
# are excluded. Instruction counts do not depend on what else the machine is doing, which makes
# them the stable companion of a time ratio on a shared machine (they do not see cache misses,
# branch mispredictions or lock contention, so they are a companion, not a replacement).
#
#   bash bench/instr.sh hydrate|registration|executor|codec|http_call|all
#       a markdown table: case, instructions per operation, baseline, ratio
#   bash bench/instr.sh check
#       every operation of bench/budgets.txt against its budget: exits non-zero when one costs
#       more than BUDGET_TOLERANCE_PCT (3) percent above it, and names those far below it
#   bash bench/instr.sh set-budgets
#       writes the counts of this build into bench/budgets.txt (commit it with the change that
#       moved them, and say why in the message)
#
# Every mode builds with the toolchain named in bench/budgets.txt (installed with rustup when
# missing) and the bench profile, so that counts compare with the committed budgets, and counts
# each operation under three fixed streams of random bytes (see FIXED_RANDOM below), so that two
# runs of one build give the same count.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WHAT="${1:-all}"
OUT="${INSTR_OUT:-$REPO/target/instr}"
BUDGETS="$REPO/bench/budgets.txt"
TOLERANCE_PCT="${BUDGET_TOLERANCE_PCT:-3}"
# a count this far below its budget is worth a lower budget, so that a later rise is seen
SLACK_PCT="${BUDGET_SLACK_PCT:-10}"
mkdir -p "$OUT"
command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 1; }

TOOLCHAIN="$(awk '$1 == "toolchain" { print $2 }' "$BUDGETS")"
[ -n "$TOOLCHAIN" ] || { echo "$BUDGETS names no toolchain" >&2; exit 1; }
if command -v rustup >/dev/null && ! rustup run "$TOOLCHAIN" rustc -V >/dev/null 2>&1; then
  rustup toolchain install --profile minimal "$TOOLCHAIN" >&2
fi
cargo_() { cargo "+$TOOLCHAIN" "$@"; }

# case baseline iterations, per bench ("-" as baseline: the row is itself a baseline)
cases_hydrate="serde_valid - 4000
serde_valid_tool_type - 4000
hydrate_valid_reader serde_valid_tool_type 4000
hydrate_valid serde_valid 4000
old_path_valid serde_valid 4000
hydrate_object serde_valid 4000
serde_object - 4000
hydrate_object_reader serde_object 4000
serde_invalid - 4000
hydrate_invalid serde_invalid 4000"
cases_registration="jsonschema_1000 - 3
typed_100_first jsonschema_1000 1
typed_first_derived jsonschema_1000 1
typed_first jsonschema_1000 1
typed_again jsonschema_1000 3
catalog_plannable jsonschema_1000 3
catalog_mixed10 jsonschema_1000 3
catalog_none jsonschema_1000 3
catalog_mixed10_forced jsonschema_1000 3"
cases_executor="direct_call - 4000
run_read_only direct_call 4000
run_confirmed direct_call 4000"
cases_http_call="bare_call - 2000
router_call bare_call 2000"
cases_codec=""
for p in openai openai-responses anthropic ollama gemini mcp; do
  cases_codec+="encode_fresh/$p - 300
encode_cached/$p encode_fresh/$p 300
"
done
for p in openai openai-responses anthropic ollama gemini; do
  cases_codec+="parse/$p - 2000
decode/$p parse/$p 2000
"
done

crate_of() {
  case "$1" in codec) echo tool-providers ;; http_call) echo tool-server ;; *) echo tool-runtime ;; esac
}

build_all() { # bench... -> builds them in one cargo call (bench profile); writes $OUT/bin.<bench>
  local args=() b crates
  crates="$(for b in "$@"; do crate_of "$b"; done | sort -u)"
  for b in $crates; do args+=(-p "$b"); done
  for b in "$@"; do args+=(--bench "$b"); done
  (cd "$REPO" && cargo_ bench -q "${args[@]}" --no-run --message-format=json 2>"$OUT/build.log") |
    OUT="$OUT" python3 -c 'import json, os, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] == ["bench"]:
        with open(os.path.join(os.environ["OUT"], "bin." + m["target"]["name"]), "w") as f:
            f.write(m["executable"])' ||
    { echo "could not build the benches $*:" >&2; tail -40 "$OUT/build.log" >&2; exit 1; }
  for b in "$@"; do
    [ -x "$(cat "$OUT/bin.$b" 2>/dev/null)" ] ||
      { echo "could not build the $b bench:" >&2; tail -40 "$OUT/build.log" >&2; exit 1; }
  done
}

# Every mode builds the runtime's and the providers' benches in one cargo call: features are
# unified over the packages built together, so one build gives every count, and the tables'
# counts are the budgets' counts. The server's bench is built in a second call: its
# dev-dependencies turn on tool-runtime features (sqlite, redis) that the first build does not
# have, and building it with the others would change what their counts measure.
ALL_BENCHES=(hydrate registration executor codec)
SERVER_BENCHES=(http_call)

build_every() {
  build_all "${ALL_BENCHES[@]}"
  build_all "${SERVER_BENCHES[@]}"
}

binary() { # bench -> path of the bench executable (built with the bench profile)
  # INSTR_NO_BUILD=1 reuses the path found last time (no cargo, so no wait on its lock)
  if [ "${INSTR_NO_BUILD:-0}" != 1 ] || [ ! -x "$(cat "$OUT/bin.$1" 2>/dev/null)" ]; then
    build_every
  fi
  cat "$OUT/bin.$1"
}

# The counted process gets a fixed stream from getrandom(2) (bench/fixed-random.c, preloaded,
# seeded by FIXED_RANDOM_SEED): its hash maps' seeds, and with them the order of its frees and the
# allocator's work, are then the same in every run, so a count is reproducible. One seed is one
# allocation pattern, and some cost a few percent more than most (router_call: 42,450 against
# 40,330), so each operation is counted under SEEDS seeds and the median is its count.
FIXED_RANDOM="$OUT/fixed-random.so"
SEEDS="${INSTR_SEEDS:-1 2 3}"
fixed_random() {
  if [ ! -f "$FIXED_RANDOM" ] || [ "$REPO/bench/fixed-random.c" -nt "$FIXED_RANDOM" ]; then
    "${CC:-cc}" -shared -fPIC -O2 -o "$FIXED_RANDOM" "$REPO/bench/fixed-random.c" ||
      { echo "could not build bench/fixed-random.c (a C compiler is needed: apt-get install gcc)" >&2; exit 1; }
  fi
}
fixed_random

count() { # binary case iterations -> instructions per iteration (the median over $SEEDS)
  local bin="$1" case="$2" iters="$3" file seed counts="" median
  file="$OUT/callgrind.$(echo "$case" | tr '/' '_').out"
  for seed in $SEEDS; do
    # callgrind counts only what runs under instr_measured_loop on the calling thread, so work
    # spread over other threads (register_catalog, ToolSet::prepare) would escape the count: the
    # process is pinned to one core, where that work runs inline and is counted in full
    FIXED_RANDOM_SEED="$seed" LD_PRELOAD="$FIXED_RANDOM" INSTR_CASE="$case" INSTR_ITERS="$iters" \
      taskset -c 0 valgrind --tool=callgrind --collect-atstart=no \
      --toggle-collect=instr_measured_loop --callgrind-out-file="$file.seed$seed" "$bin" \
      >"$file.seed$seed.log" 2>&1 ||
      { echo "callgrind failed for $case:" >&2; tail -20 "$file.seed$seed.log" >&2; exit 1; }
    counts+="$(awk -v n="$iters" -v s="$seed" '/^(totals|summary):/ { t = $2 }
      END { if (t == "") exit 1; printf "%.0f %s\n", t / n, s }' "$file.seed$seed")"$'\n' ||
      { echo "no totals in $file.seed$seed" >&2; exit 1; }
  done
  # the median seed's output is the one kept for callgrind_annotate
  median="$(printf '%s' "$counts" | sort -n | awk '{ c[NR] = $0 } END { print c[int((NR + 1) / 2)] }')"
  cp "$file.seed${median#* }" "$file"
  echo "${median% *}"
}

run_bench() { # bench
  local bench="$1" bin list case base iters
  bin="$(binary "$bench")"
  [ -x "$bin" ] || { echo "could not build the $bench bench" >&2; exit 1; }
  list="cases_$bench"
  declare -A ir=()
  echo "| $bench case | instructions per op | baseline | ratio |"
  echo "|---|---|---|---|"
  while read -r case base iters; do
    [ -n "$case" ] || continue
    ir[$case]="$(count "$bin" "$case" "$iters")"
    if [ "$base" = "-" ]; then
      printf '| %s | %s | (baseline) | 1.00x |\n' "$case" "${ir[$case]}"
    else
      printf '| %s | %s | %s | %sx |\n' "$case" "${ir[$case]}" "$base" \
        "$(awk -v a="${ir[$case]}" -v b="${ir[$base]}" 'BEGIN { printf "%.2f", a / b }')"
    fi
  done <<<"${!list}"
  echo
}

budget_rows() { # the rows of the budget file: bench case iterations budget
  awk '!/^#/ && NF == 4' "$BUDGETS"
}

check() { # set: rewrite the budgets with the counts; otherwise compare
  local mode="$1" bench case iters budget n over=0 rows="" base
  echo "toolchain: $(cargo_ -V) ($(rustc "+$TOOLCHAIN" -V)), bench profile; valgrind: $(valgrind --version)"
  if [ "${INSTR_NO_BUILD:-0}" != 1 ]; then build_every; fi
  printf '| operation | budget | count | change |\n|---|---|---|---|\n'
  while read -r bench case iters budget; do
    n="$(count "$(cat "$OUT/bin.$bench")" "$case" "$iters")"
    rows+="$bench $case $iters $n"$'\n'
    local pct
    pct="$(awk -v n="$n" -v b="$budget" 'BEGIN { printf "%+.1f", (b > 0 ? (n - b) * 100 / b : 100) }')"
    printf '| %s/%s | %s | %s | %s%% |\n' "$bench" "$case" "$budget" "$n" "$pct"
    [ "$mode" = set ] && continue
    base="$OUT/callgrind.$(echo "$case" | tr '/' '_').out"
    if awk -v p="$pct" -v t="$TOLERANCE_PCT" 'BEGIN { exit !(p > t) }'; then
      over=1
      {
        echo "OVER BUDGET: $bench/$case costs $n instructions per operation, budget $budget ($pct%, more than +$TOLERANCE_PCT% fails)."
        echo "  where they go: callgrind_annotate --inclusive=yes $base | head -60"
        echo "  (remake it: bash bench/instr.sh check, or only this case: FIXED_RANDOM_SEED=1 LD_PRELOAD=$FIXED_RANDOM INSTR_CASE=$case INSTR_ITERS=$iters valgrind --tool=callgrind --collect-atstart=no --toggle-collect=instr_measured_loop $(cat "$OUT/bin.$bench"))"
        echo "  if the cost is meant, raise the budget in the same commit and say why in its message (bench/instr.sh set-budgets)."
      } >&2
    elif awk -v p="$pct" -v t="$SLACK_PCT" 'BEGIN { exit !(p < -t) }'; then
      echo "far below budget: $bench/$case costs $n, budget $budget ($pct%): lower the budget (bash bench/instr.sh set-budgets) so that a rise shows." >&2
    fi
  done < <(budget_rows)
  if [ "$mode" = set ]; then
    # the comments and the toolchain line stay; the rows keep their order
    {
      awk '/^#/ || $1 == "toolchain" || NF == 0' "$BUDGETS"
      printf '%s' "$rows" | awk '{ printf "%-13s %-22s %6s %10s\n", $1, $2, $3, $4 }'
    } >"$BUDGETS.new"
    mv "$BUDGETS.new" "$BUDGETS"
    echo "wrote $BUDGETS"
  fi
  return "$over"
}

if [ "$WHAT" = check ]; then
  check compare
  exit $?
elif [ "$WHAT" = set-budgets ]; then
  check set
  exit 0
elif [ "$WHAT" = all ]; then
  for b in hydrate registration executor codec http_call; do run_bench "$b"; done
else
  run_bench "$WHAT"
fi
