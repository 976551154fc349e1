"""Drives a tool-runtime MCP server with the official MCP Python SDK client.

usage: client.py (--http URL --token TOKEN [--header NAME:VALUE]... | --stdio COMMAND [ARG...])
       --answer MODE CALL...

Each CALL is NAME=JSON (a tool and its arguments); `list` lists the tools. MODE is how the
client's user answers a confirmation: `none` (the client does not declare elicitation),
`accept`, `edit:JSON` (accept with edited arguments), `decline`, `cancel`, or `silent:SECONDS`
(answer accept only after that long). Prints one JSON line per step, and one per elicitation
received ({"elicitation": message}).
"""

import argparse
import asyncio
import json
import os
import sys

import anyio
import httpx2
from mcp import ClientSession, types
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client


def emit(obj):
    print(json.dumps(obj), flush=True)


def elicitation_callback(mode):
    async def answer(context, params):
        emit({"elicitation": params.message, "schema": params.requested_schema})
        if mode == "accept":
            return types.ElicitResult(action="accept", content={})
        if mode.startswith("edit:"):
            return types.ElicitResult(action="accept", content={"arguments": mode[5:]})
        if mode == "decline":
            return types.ElicitResult(action="decline")
        if mode == "cancel":
            return types.ElicitResult(action="cancel")
        if mode.startswith("silent:"):
            await anyio.sleep(float(mode[7:]))
            return types.ElicitResult(action="accept", content={})
        raise ValueError(mode)

    return answer


async def session_steps(read, write, mode, calls):
    kwargs = {}
    if mode != "none":
        kwargs["elicitation_callback"] = elicitation_callback(mode)
    async with ClientSession(read, write, **kwargs) as session:
        await session.initialize()
        for step in calls:
            if step == "list":
                tools = await session.list_tools()
                emit({"tools": [t.model_dump(mode="json", by_alias=True, exclude_none=True)
                                for t in tools.tools]})
                continue
            name, _, args = step.partition("=")
            result = await session.call_tool(name, json.loads(args or "{}"))
            emit({"call": name,
                  "result": result.model_dump(mode="json", by_alias=True, exclude_none=True)})


async def main():
    p = argparse.ArgumentParser()
    p.add_argument("--http")
    p.add_argument("--token")
    p.add_argument("--header", action="append", default=[])
    p.add_argument("--stdio", nargs=argparse.REMAINDER)
    p.add_argument("--answer", default="none")
    p.add_argument("calls", nargs="*")
    a = p.parse_args()
    if a.http:
        headers = {"Authorization": f"Bearer {a.token}"}
        for h in a.header:
            name, _, value = h.partition(":")
            headers[name.strip()] = value.strip()
        async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
            async with streamable_http_client(a.http, http_client=http) as (read, write):
                await session_steps(read, write, a.answer, a.calls)
    else:
        # --stdio takes the rest: the calls come before it
        command, *args = a.stdio
        # the SDK passes the server a minimal environment unless told otherwise; the tests
        # configure the server through theirs
        params = StdioServerParameters(command=command, args=args, env=dict(os.environ))
        async with stdio_client(params) as (read, write):
            await session_steps(read, write, a.answer, a.calls)


if __name__ == "__main__":
    asyncio.run(main())
