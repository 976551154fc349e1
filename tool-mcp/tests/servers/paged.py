"""An MCP server (stdio) that lists its tools three at a time: `tools/list` answers a page and a
`nextCursor` until the last page, and refuses a cursor it did not give. Each tool `tool_N`
answers `N`.

    python paged.py COUNT
"""

import sys

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

PAGE = 3
COUNT = int(sys.argv[1])
TOOLS = [
    types.Tool(
        name=f"tool_{n}",
        description=f"Answers {n}.",
        input_schema={"type": "object", "properties": {}},
        annotations=types.ToolAnnotations(read_only_hint=True),
    )
    for n in range(COUNT)
]


async def list_tools(ctx, params):
    cursor = params.cursor if params is not None else None
    start = 0 if cursor is None else int(cursor.removeprefix("page-"))
    page = TOOLS[start : start + PAGE]
    more = start + PAGE < COUNT
    return types.ListToolsResult(tools=page, next_cursor=f"page-{start + PAGE}" if more else None)


async def call_tool(ctx, params):
    n = params.name.removeprefix("tool_")
    return types.CallToolResult(content=[types.TextContent(type="text", text=n)])


server = Server("paged", on_list_tools=list_tools, on_call_tool=call_tool)


async def main():
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


anyio.run(main)
