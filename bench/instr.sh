#!/usr/bin/env bash
# Instruction counts (valgrind callgrind) of the benchmarks' operations, beside criterion's times.
#
# Each bench binary doubles as a runner of single operations (test-support/src/instr.rs): with INSTR_CASE=<case> it runs that case INSTR_ITERS times inside the function
# `instr_measured_loop`, and callgrind counts only what runs inside it, so set-up and start-up
# are excluded. Instruction counts do not depend on what else the machine is doing, which makes
# them the stable companion of a time ratio on a shared machine (they do not see cache misses,
# branch mispredictions or lock contention, so they are a companion, not a replacement).
#
#   bash bench/instr.sh hydrate|registration|executor|codec|all
#
# Prints a markdown table: case, instructions per operation, baseline, ratio.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WHAT="${1:-all}"
OUT="${INSTR_OUT:-$REPO/target/instr}"
mkdir -p "$OUT"
command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 1; }

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
typed_first_derived jsonschema_1000 1
typed_first jsonschema_1000 1
typed_again jsonschema_1000 3
catalog_plannable jsonschema_1000 3
catalog_mixed10 jsonschema_1000 3
catalog_none jsonschema_1000 3
catalog_mixed10_forced jsonschema_1000 3"
cases_executor="direct_call - 4000
run_read_only direct_call 4000"
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

crate_of() { case "$1" in codec) echo tool-providers ;; *) echo tool-runtime ;; esac; }

binary() { # bench -> path of the bench executable (built with the bench profile)
  # INSTR_NO_BUILD=1 reuses the path found last time (no cargo, so no wait on its lock)
  if [ "${INSTR_NO_BUILD:-0}" = 1 ] && [ -x "$(cat "$OUT/bin.$1" 2>/dev/null)" ]; then
    cat "$OUT/bin.$1"
    return
  fi
  (cd "$REPO" && cargo bench -q -p "$(crate_of "$1")" --bench "$1" --no-run --message-format=json 2>/dev/null) |
    python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] == ["bench"]:
        print(m["executable"])' | tail -1 | tee "$OUT/bin.$1"
}

count() { # binary case iterations -> instructions per iteration
  local bin="$1" case="$2" iters="$3" file
  file="$OUT/callgrind.$(echo "$case" | tr '/' '_').out"
  # callgrind counts only what runs under instr_measured_loop on the calling thread, so work
  # spread over other threads (register_catalog, ToolSet::prepare) would escape the count: the
  # process is pinned to one core, where that work runs inline and is counted in full
  INSTR_CASE="$case" INSTR_ITERS="$iters" taskset -c 0 valgrind --tool=callgrind --collect-atstart=no \
    --toggle-collect=instr_measured_loop --callgrind-out-file="$file" "$bin" \
    >"$file.log" 2>&1 || { echo "callgrind failed for $case:" >&2; tail -20 "$file.log" >&2; exit 1; }
  awk -v n="$iters" '/^(totals|summary):/ { t = $2 } END { if (t == "") exit 1; printf "%.0f\n", t / n }' "$file" ||
    { echo "no totals in $file" >&2; exit 1; }
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

if [ "$WHAT" = all ]; then
  for b in hydrate registration executor codec; do run_bench "$b"; done
else
  run_bench "$WHAT"
fi
