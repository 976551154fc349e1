#!/usr/bin/env bash
# Runs the libFuzzer targets of fuzz/ (cargo-fuzz, nightly).
#
#   scripts/fuzz.sh smoke [SECONDS]   every target for SECONDS each (default 20): the CI check
#   scripts/fuzz.sh long SECONDS      every target for SECONDS each, from the corpus kept so far
#   scripts/fuzz.sh run TARGET SECONDS   one target
#
# Exits non-zero on any crash, timeout or out-of-memory (libFuzzer writes the input that caused
# it under fuzz/artifacts/TARGET/; replay it with
# `cargo +nightly fuzz run --sanitizer none TARGET FILE`). Prints
# the executions per target and the total.
#
# Environment: FUZZ_RSS_MB (memory per process, default 2048), FUZZ_TIMEOUT (seconds per input,
# default 10), FUZZ_JOBS (parallel fuzzing processes per target, default 1), FUZZ_MAX_LEN (bytes
# per input, default 16384), FUZZ_CORPUS (where new inputs are kept, default fuzz/corpus),
# FUZZ_SEED (libFuzzer's random seed) and FUZZ_RUNS (executions per
# target instead of SECONDS): with both, a run from the committed seeds is the same run on any
# machine, which is what CI uses so that its verdict does not depend on the machine's speed.
set -euo pipefail
cd "$(dirname "$0")/.."

MODE="${1:-smoke}"
RSS_MB="${FUZZ_RSS_MB:-2048}"
TIMEOUT="${FUZZ_TIMEOUT:-10}"
JOBS="${FUZZ_JOBS:-1}"
MAX_LEN="${FUZZ_MAX_LEN:-16384}"
TARGETS=(hydrate_derived hydrate_catalog register_catalog decode_provider schema_views repair)

usage() {
  sed -n '2,15p' "$0" >&2
  exit 2
}

case "$MODE" in
  smoke) SECONDS_EACH="${2:-20}"; SELECTED=("${TARGETS[@]}") ;;
  long) [ $# -ge 2 ] || usage; SECONDS_EACH="$2"; SELECTED=("${TARGETS[@]}") ;;
  run) [ $# -ge 3 ] || usage; SELECTED=("$2"); SECONDS_EACH="$3" ;;
  *) usage ;;
esac

# A fresh machine has rustup with stable and nightly only: libFuzzer's instrumentation needs
# nightly, and cargo-fuzz drives it.
if ! cargo +nightly --version >/dev/null 2>&1; then
  rustup toolchain install nightly --profile minimal
fi
# libfuzzer-sys compiles libFuzzer itself, which is C++
if ! command -v c++ >/dev/null && command -v apt-get >/dev/null; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends g++ >/dev/null
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked
fi

# The fuzz crate is its own workspace, with its own target directory under fuzz/ (its release
# profile keeps debug assertions and overflow checks on).
unset CARGO_TARGET_DIR
# No sanitizer: the code under test is safe Rust, and without ASan each run does several times
# more executions; panics, stack overflows, timeouts and memory limits are caught either way.
BUILD=(cargo +nightly fuzz build --sanitizer none --release)
echo "==> building the fuzz targets"
"${BUILD[@]}" >/dev/null

LOGS="fuzz/target/fuzz-logs"
mkdir -p "$LOGS"
total=0
failed=()
printf '%-18s %12s %8s  %s\n' target executions seconds result
for target in "${SELECTED[@]}"; do
  corpus="${FUZZ_CORPUS:-fuzz/corpus}/$target"
  mkdir -p "$corpus" "fuzz/artifacts/$target"
  seeds=()
  [ -d "fuzz/seeds/$target" ] && seeds=("fuzz/seeds/$target")
  log="$LOGS/$target.log"
  started=$(date +%s)
  status=0
  # -timeout: seconds per input; -rss_limit_mb: memory per process; -max_len bounds the input.
  # New inputs go to fuzz/corpus (ignored by git); the committed seeds are only read.
  extra=()
  if [ "$JOBS" -gt 1 ]; then
    extra=(-jobs="$JOBS" -workers="$JOBS")
  fi
  if [ -n "${FUZZ_RUNS:-}" ]; then
    extra+=(-runs="$FUZZ_RUNS")
  else
    extra+=(-max_total_time="$SECONDS_EACH")
  fi
  if [ -n "${FUZZ_SEED:-}" ]; then
    extra+=(-seed="$FUZZ_SEED")
  fi
  cargo +nightly fuzz run --sanitizer none --release "$target" \
    "$corpus" "${seeds[@]}" -- \
    -timeout="$TIMEOUT" -rss_limit_mb="$RSS_MB" \
    -malloc_limit_mb="$RSS_MB" -max_len="$MAX_LEN" -print_final_stats=1 \
    -artifact_prefix="fuzz/artifacts/$target/" "${extra[@]}" >"$log" 2>&1 || status=$?
  elapsed=$(($(date +%s) - started))
  # with -jobs each worker writes its own fuzz-N.log in the working directory; sum them all
  if [ "$JOBS" -gt 1 ]; then
    cat fuzz-*.log >>"$log" 2>/dev/null || true
    rm -f fuzz-*.log
  fi
  execs=$(awk '/^stat::number_of_executed_units:/ {s += $2} END {print s + 0}' "$log")
  total=$((total + execs))
  if [ "$status" -ne 0 ] || grep -qE '^(==[0-9]+== ?ERROR|SUMMARY: libFuzzer)|deadly signal|panicked at' "$log"; then
    result="FAILED (see $log)"
    failed+=("$target")
  else
    result=ok
  fi
  printf '%-18s %12s %8s  %s\n' "$target" "$execs" "$elapsed" "$result"
done
printf '%-18s %12s\n' total "$total"

if [ "${#failed[@]}" -gt 0 ]; then
  for target in "${failed[@]}"; do
    echo "---- $target" >&2
    grep -E -B2 -A25 'panicked at|ERROR: libFuzzer|deadly signal' "$LOGS/$target.log" | head -60 >&2 || true
    ls "fuzz/artifacts/$target" >&2 || true
  done
  exit 1
fi
