"""An MCP server (stdio) with a tool that takes long, for killing the server mid-call: `slow`
appends "started" to CALL_LOG and sleeps; `echo` answers at once. The process writes its id to
PID_FILE when it starts, so a test can kill it and see that another one was started.

    python slow.py CALL_LOG PID_FILE
"""

import asyncio
import os
import sys

from mcp.server.mcpserver import MCPServer

call_log, pid_file = sys.argv[1], sys.argv[2]
with open(pid_file, "w", encoding="utf-8") as f:
    f.write(str(os.getpid()))
server = MCPServer("slow")


async def slow(seconds: float) -> str:
    with open(call_log, "a", encoding="utf-8") as log:
        log.write("started\n")
    await asyncio.sleep(seconds)
    return "done"


def echo(text: str) -> str:
    return text


server.add_tool(slow, description="Sleeps, then answers.")
server.add_tool(echo, description="Echoes the text back.")
server.run()
