#!/usr/bin/env bash
# The serving surface under the loads a hostile review used, against a real `research serve`.
#
#   scripts/serve-load.sh [BINARY] [PORT]
#
# BINARY is the research agent (default target/debug/research, built with
# `cargo build -p examples --bin research`), PORT a free port (default 8411). Prints, one line
# each:
#   - the pending listing's size and the server's resident memory (now and peak) with 60
#     operations of 1 MB parked and the approvals page open in headless Chromium for 30 s;
#   - when 50 connections that sent half a request line, and 2,000 that sent nothing, were
#     closed by the server (seconds after they were opened);
#   - what 3,000 MCP `initialize` requests with the agent's token got, and the resident memory
#     before and after.
# Needs python3, curl and chromium (Debian's package). Nothing leaves 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="${1:-target/debug/research}"
PORT="${2:-8411}"
DIR="$(mktemp -d)"
export TOOLS_AGENT_TOKEN=agent-token-for-serve-load-01 TOOLS_APPROVER_TOKEN=approver-token-serve-load-01
"$BIN" serve --addr "127.0.0.1:$PORT" --db "$DIR/research.sqlite" 2>"$DIR/serve.log" &
SERVER=$!
trap 'kill $SERVER ${BROWSER:-} 2>/dev/null || true; rm -rf "$DIR"' EXIT
for _ in $(seq 50); do
  curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break
  sleep 0.2
done
rss() { grep -E "^$1" "/proc/$SERVER/status" | awk '{print int($2 / 1024) " MB"}'; }

python3 -c "import json; print(json.dumps({'arguments': {'id': 1, 'body': 'x' * 1000000}}))" \
  >"$DIR/body.json"
for _ in $(seq 60); do
  curl -s -o /dev/null -H "Authorization: Bearer $TOOLS_AGENT_TOKEN" \
    -H 'Content-Type: application/json' --data-binary @"$DIR/body.json" \
    "http://127.0.0.1:$PORT/api/v1/tools/edit_note/call"
done
chromium --headless --no-sandbox --disable-gpu --disable-background-networking \
  --disable-component-update --disable-sync --no-first-run --user-data-dir="$DIR/profile" \
  "http://127.0.0.1:$PORT/#token=$TOOLS_APPROVER_TOKEN" >/dev/null 2>&1 &
BROWSER=$!
sleep 30
LISTING="$(curl -s -H "Authorization: Bearer $TOOLS_APPROVER_TOKEN" \
  "http://127.0.0.1:$PORT/api/v1/pending" | wc -c)"
echo "60 pending 1 MB operations, page open 30 s: listing $LISTING bytes, RSS $(rss VmRSS), peak $(rss VmHWM)"
kill "$BROWSER" 2>/dev/null || true

python3 - "$PORT" "$SERVER" <<'EOF'
import json, resource, socket, sys, time, urllib.error, urllib.request, os
resource.setrlimit(resource.RLIMIT_NOFILE, (8192, 8192))
port, pid = int(sys.argv[1]), int(sys.argv[2])

def rss():
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1]) // 1024

def closed_after(n, data):
    socks = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port))
        if data:
            s.sendall(data)
        s.setblocking(False)
        socks.append(s)
    start, open_, last = time.time(), set(range(n)), 0.0
    while open_ and time.time() - start < 90:
        for i in list(open_):
            try:
                if socks[i].recv(1) == b"":
                    open_.discard(i)
                    last = time.time() - start
            except BlockingIOError:
                pass
            except OSError:
                open_.discard(i)
                last = time.time() - start
        time.sleep(0.05)
    return f"{n - len(open_)} of {n} closed, the last after {last:.1f} s"

print("50 connections with half a request line:", closed_after(50, b"GET / HTTP/1.1\r\nHost: 127.0.0.1"))
print("2,000 connections that send nothing:", closed_after(2000, b""))
before, answers = rss(), {}
body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "serve-load", "version": "1"}}}).encode()
for _ in range(3000):
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/mcp", method="POST", data=body,
        headers={"Authorization": "Bearer " + os.environ["TOOLS_AGENT_TOKEN"],
                 "Accept": "application/json, text/event-stream",
                 "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request) as response:
            status = response.status
            response.read()
    except urllib.error.HTTPError as e:
        status = e.code
    answers[status] = answers.get(status, 0) + 1
print(f"3,000 MCP initialize with the agent's token: {answers}, RSS {before} MB -> {rss()} MB")
EOF
