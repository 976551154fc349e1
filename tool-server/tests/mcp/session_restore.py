"""One MCP session of the official MCP Python SDK client across a restart of its server.

usage: session_restore.py URL TOKEN

Opens a session (`initialize`), calls `read_note`, prints {"session": ID, "before": RESULT},
then waits for a line on stdin (the test restarts the server meanwhile), and on the same
session lists the tools and calls `read_note` again, printing {"session": ID, "tools": NAMES,
"after": RESULT, "methods": [every JSON-RPC method the client sent]}.
"""

import json
import sys

import anyio
import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


def emit(obj):
    print(json.dumps(obj), flush=True)


async def main(url, token):
    seen = {"session": None, "methods": []}

    async def on_request(request):
        if request.method == "POST":
            try:
                seen["methods"].append(json.loads(request.content).get("method"))
            except (ValueError, AttributeError):
                pass

    async def on_response(response):
        sid = response.headers.get("mcp-session-id")
        if sid:
            seen["session"] = sid

    hooks = {"request": [on_request], "response": [on_response]}
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=60, event_hooks=hooks) as http:
        transport = streamable_http_client(url, http_client=http, terminate_on_close=False)
        async with transport as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                before = await session.call_tool("read_note", {"id": "n1"})
                emit({"session": seen["session"],
                      "before": before.model_dump(mode="json", by_alias=True, exclude_none=True)})
                await anyio.to_thread.run_sync(sys.stdin.readline)
                tools = await session.list_tools()
                after = await session.call_tool("read_note", {"id": "n1"})
                emit({"session": seen["session"],
                      "tools": [t.name for t in tools.tools],
                      "after": after.model_dump(mode="json", by_alias=True, exclude_none=True),
                      "methods": seen["methods"]})


anyio.run(main, sys.argv[1], sys.argv[2])
