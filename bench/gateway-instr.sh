#!/usr/bin/env bash
# Instructions the gateway executes for one forwarded call (valgrind callgrind).
#
# `tools gateway --stdio` (the gateway benchmark's binary, started as the gateway) in front of
# the reference everything server (node, stdio), with the result cache off, as
# `cargo bench -p tool-mcp --bench gateway` runs it. A small client sends `initialize`,
# `tools/list` and then CALLS calls of `up__echo`, one at a time, each answered before the next.
# The gateway is counted twice, once answering 1 call and once answering 1 + CALLS: the
# difference divided by CALLS is what one call costs the gateway, start-up and import left out.
# The server's own work is not counted (it is another process). Counted for the store in memory
# and for the SQLite store (the default), which writes each call's audit record.
#
#   bash bench/gateway-instr.sh            # CALLS=200
#
# Needs TOOLS_MCP_SERVERS (the npm reference servers, as .ci/run installs them), node, python3
# and valgrind. The everything server registers more tools once a client has initialized and
# says so; the client waits for the gateway's one listing again to land before the calls in both
# counts, where it cancels out (among the calls it would add about 10,000 to the figure).
# The SQLite store checkpoints its log on a thread of its own every 200 ms: how many checkpoints
# a run holds depends on how long valgrind takes, so the SQLite figure moves between runs.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CALLS="${CALLS:-200}"
SERVER="${TOOLS_MCP_SERVERS:?TOOLS_MCP_SERVERS must name the npm reference servers}/@modelcontextprotocol/server-everything/dist/index.js"
[ -f "$SERVER" ] || { echo "no everything server at $SERVER" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 1; }

BIN="$(cd "$REPO" && cargo bench -p tool-mcp --bench gateway --no-run 2>&1 \
  | sed -n 's/.*Executable benches\/gateway.rs (\(.*\))/\1/p' | tail -1)"
[ -x "$REPO/$BIN" ] && BIN="$REPO/$BIN"
[ -x "$BIN" ] || { echo "the gateway benchmark did not build" >&2; exit 1; }

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
tools_section="[cache]
enabled = false

[mcp.servers.up]
command = \"node\"
args = [\"$SERVER\", \"stdio\"]
categories = { echo = \"read_only\" }"
printf 'store = "memory"\n\n%s\n' "$tools_section" > "$WORK/memory.toml"
printf '[store]\npath = "%s"\n\n%s\n' "$WORK/audit.sqlite3" "$tools_section" > "$WORK/sqlite.toml"

cat > "$WORK/client.py" <<'PY'
import json, os, subprocess, sys, time
calls, command = int(sys.argv[1]), sys.argv[2:]
env = dict(os.environ, TOOL_MCP_BENCH_GATEWAY="1")
gateway = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)

def send(message):
    gateway.stdin.write((json.dumps(message) + "\n").encode())
    gateway.stdin.flush()

def answer():
    while True:
        message = json.loads(gateway.stdout.readline())
        if "id" in message and ("result" in message or "error" in message):
            return message

send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "gateway-instr", "version": "1"}}})
answer()
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
answer()
# the server registers more tools once initialized and says so (tools/list_changed): the
# gateway lists them again, once, which lands here in both counts instead of among the calls
time.sleep(3)
for i in range(calls):
    send({"jsonrpc": "2.0", "id": i + 2, "method": "tools/call",
          "params": {"name": "up__echo", "arguments": {"message": "hello"}}})
    result = answer()
    assert "result" in result and not result["result"].get("isError"), result
gateway.stdin.close()
sys.exit(gateway.wait())
PY

count() { # config calls -> total instructions
  rm -f "$WORK/audit.sqlite3"*
  python3 "$WORK/client.py" "$2" valgrind --tool=callgrind --callgrind-out-file="$WORK/cg.out" \
    "$BIN" gateway --stdio --config "$WORK/$1.toml" 2>/dev/null
  callgrind_annotate "$WORK/cg.out" 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }'
}

echo "| store | instructions per forwarded call |"
echo "|---|---|"
for store in memory sqlite; do
  one="$(count "$store" 1)"
  many="$(count "$store" $((CALLS + 1)))"
  echo "| $store | $(( (many - one) / CALLS )) |"
done
