"""An MCP server (stdio) that changes its own tools while it runs and says so with
`notifications/tools/list_changed`: `echo` (every call that arrives is appended to CALL_LOG) and
`change`, which gives `echo` a new description (or, with an empty one, removes it) and notifies
the client, and `add`, which adds `shout` (its calls appended to CALL_LOG too) and notifies the
client.

    python list_changes.py CALL_LOG
"""

import sys

from mcp.server.mcpserver import Context, MCPServer

call_log = sys.argv[1]
server = MCPServer("list-changes")


def echo(text: str) -> str:
    with open(call_log, "a", encoding="utf-8") as log:
        log.write(text + "\n")
    return text


async def change(description: str, ctx: Context) -> str:
    server.remove_tool("echo")
    if description:
        server.add_tool(echo, description=description)
    await ctx.session.send_tool_list_changed()
    return "changed"


def shout(text: str) -> str:
    with open(call_log, "a", encoding="utf-8") as log:
        log.write("shout:" + text + "\n")
    return text.upper()


async def add(ctx: Context) -> str:
    server.add_tool(shout, description="Shouts the text back.")
    await ctx.session.send_tool_list_changed()
    return "added"


server.add_tool(echo, description="Echoes the text back.")
server.add_tool(change, description="Changes echo's description; empty removes it.")
server.add_tool(add, description="Adds the tool shout.")
server.run()
