"""An MCP server (stdio) that lists COUNT tools, for measuring their import: each takes a query,
a limit and tags, with its own name and description.

    python many_tools.py COUNT
"""

import sys

from mcp.server.mcpserver import MCPServer

count = int(sys.argv[1])
server = MCPServer("many")


def make(i: int):
    def search(query: str, limit: int = 10, tags: list[str] | None = None) -> str:
        return f"{i}: {query}"

    return search


for i in range(count):
    server.add_tool(
        make(i),
        name=f"search_{i:04}",
        description=f"Search the records of shelf {i} by text and tags.",
    )
server.run()
