"""Drives a tool-runtime MCP server with the official MCP Python SDK client.

usage: client.py (--http URL --token TOKEN [--header NAME:VALUE]... | --stdio COMMAND [ARG...])
       [--mode auto|legacy|session] --answer MODE CALL...

--mode picks the SDK's client: `auto` (the default of the SDK's high-level `Client`: it probes
`server/discover` and speaks the newest revision the server offers), `legacy` (the high-level
`Client` over the `initialize` handshake) or `session` (the low-level `ClientSession`, handshake
too). Each prints the protocol version it ended up with ({"protocol": VERSION}).

Each CALL is NAME=JSON (a tool and its arguments), `cancel:SECONDS:NAME=JSON` (the client
gives the call up after that long), `list` (the tools), or `changed:SECONDS` (waits that long at
most for `notifications/tools/list_changed`, and prints whether it came; `--mode session`
only). MODE is how the
client's user answers a confirmation: `none` (the client does not declare elicitation),
`accept`, `edit:JSON` (accept with edited arguments), `fill:JSON` (accept, answering each field
the form asks for that JSON has a value for), `decline`, `cancel`, or `silent:SECONDS` (answer
accept only after that long). Prints one JSON line per step, and one per elicitation
received ({"elicitation": message}).
"""

import argparse
import asyncio
import json
import os
import sys

import anyio
import httpx2
from mcp import Client, ClientSession, types
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client


def emit(obj):
    print(json.dumps(obj), flush=True)


# set when the server sends notifications/tools/list_changed (session mode)
tools_changed = anyio.Event()


async def on_message(message):
    if isinstance(message, types.ToolListChangedNotification):
        tools_changed.set()


def elicitation_callback(mode):
    async def answer(context, params):
        emit({"elicitation": params.message, "schema": params.requested_schema})
        if mode == "accept":
            return types.ElicitResult(action="accept", content={})
        if mode.startswith("fill:"):
            values = json.loads(mode[5:])
            asked = (params.requested_schema or {}).get("properties", {})
            return types.ElicitResult(
                action="accept", content={k: v for k, v in values.items() if k in asked})
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


async def run_steps(client, calls):
    for step in calls:
        if step == "list":
            tools = await client.list_tools()
            emit({"tools": [t.model_dump(mode="json", by_alias=True, exclude_none=True)
                            for t in tools.tools]})
            continue
        if step.startswith("changed:"):
            with anyio.move_on_after(float(step[8:])):
                await tools_changed.wait()
            emit({"list_changed": tools_changed.is_set()})
            continue
        give_up_after = None
        if step.startswith("cancel:"):
            _, seconds, step = step.split(":", 2)
            give_up_after = float(seconds)
        name, _, args = step.partition("=")
        try:
            if give_up_after is None:
                result = await client.call_tool(name, json.loads(args or "{}"))
            else:
                with anyio.move_on_after(give_up_after) as scope:
                    result = await client.call_tool(name, json.loads(args or "{}"))
                if scope.cancelled_caught:
                    emit({"call": name, "cancelled": True})
                    continue
        except Exception as e:  # an error answer is a step's outcome too
            emit({"call": name, "raised": type(e).__name__, "message": str(e)})
            continue
        emit({"call": name,
              "result": result.model_dump(mode="json", by_alias=True, exclude_none=True)})


async def session_steps(read, write, answer, calls):
    kwargs = {}
    if answer != "none":
        kwargs["elicitation_callback"] = elicitation_callback(answer)
    async with ClientSession(read, write, message_handler=on_message, **kwargs) as session:
        init = await session.initialize()
        emit({"protocol": init.protocol_version})
        await run_steps(session, calls)


async def client_steps(server, mode, answer, calls):
    kwargs = {}
    if answer != "none":
        kwargs["elicitation_callback"] = elicitation_callback(answer)
    async with Client(server, mode=mode, **kwargs) as client:
        emit({"protocol": client.protocol_version})
        await run_steps(client, calls)


async def main():
    p = argparse.ArgumentParser()
    p.add_argument("--http")
    p.add_argument("--token")
    p.add_argument("--header", action="append", default=[])
    p.add_argument("--stdio", nargs=argparse.REMAINDER)
    p.add_argument("--answer", default="none")
    p.add_argument("--mode", default="session", choices=["auto", "legacy", "session"])
    p.add_argument("calls", nargs="*")
    a = p.parse_args()
    if a.http:
        headers = {"Authorization": f"Bearer {a.token}"}
        for h in a.header:
            name, _, value = h.partition(":")
            headers[name.strip()] = value.strip()
        async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
            transport = streamable_http_client(a.http, http_client=http)
            if a.mode == "session":
                async with transport as (read, write):
                    await session_steps(read, write, a.answer, a.calls)
            else:
                await client_steps(transport, a.mode, a.answer, a.calls)
    else:
        # --stdio takes the rest: the calls come before it
        command, *args = a.stdio
        # the SDK passes the server a minimal environment unless told otherwise; the tests
        # configure the server through theirs
        params = StdioServerParameters(command=command, args=args, env=dict(os.environ))
        if a.mode == "session":
            async with stdio_client(params) as (read, write):
                await session_steps(read, write, a.answer, a.calls)
        else:
            await client_steps(params, a.mode, a.answer, a.calls)


if __name__ == "__main__":
    asyncio.run(main())
