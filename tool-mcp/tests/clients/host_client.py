"""Drives an MCP server listening on a TCP port (newline-delimited JSON-RPC, as over stdio) with
the official MCP Python SDK's `ClientSession`, as a host whose person answers questions, whose
model samples, and which prints the log it receives.

usage: host_client.py --port PORT [--elicit MODE] [--sample TEXT] [--level LEVEL]
                      [--cancel-after SECONDS] CALL...

MODE: `none` (no elicitation capability), `accept:JSON` (accept with that content), `decline`,
`cancel`, `silent` (never answers). --sample: the text the client's model answers (no sampling
capability without it). --level: sent with `logging/setLevel` first. --cancel-after: a call
still running after SECONDS is abandoned (the SDK sends `notifications/cancelled`) and printed as
{"call": NAME, "cancelled": true}. Each CALL is NAME=JSON.
Prints one JSON line per call result, per log entry ({"log": ...}), per question
({"elicitation": ..., "schema": ...}) and per sampling request ({"sampling": ...}).
"""

import argparse
import asyncio
import json

import anyio
from mcp import ClientSession, types
from mcp.shared.message import SessionMessage


def emit(obj):
    print(json.dumps(obj), flush=True)


async def tcp_streams(port, tg):
    stream = await anyio.connect_tcp("127.0.0.1", port)
    read_writer, read_stream = anyio.create_memory_object_stream(0)
    write_stream, write_reader = anyio.create_memory_object_stream(0)

    async def reader():
        buffer = b""
        async with read_writer:
            while True:
                try:
                    chunk = await stream.receive()
                except (anyio.EndOfStream, anyio.ClosedResourceError):
                    return
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if line.strip():
                        message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                        await read_writer.send(SessionMessage(message))

    async def writer():
        async with write_reader:
            async for session_message in write_reader:
                text = session_message.message.model_dump_json(by_alias=True, exclude_unset=True)
                await stream.send((text + "\n").encode())

    tg.start_soon(reader)
    tg.start_soon(writer)
    return read_stream, write_stream, stream


async def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--elicit", default="none")
    p.add_argument("--sample")
    p.add_argument("--level")
    p.add_argument("--cancel-after", type=float)
    p.add_argument("calls", nargs="*")
    a = p.parse_args()

    async def on_elicit(context, params):
        emit({"elicitation": params.message, "schema": params.requested_schema})
        if a.elicit.startswith("accept:"):
            return types.ElicitResult(action="accept", content=json.loads(a.elicit[7:]))
        if a.elicit == "silent":
            await anyio.sleep_forever()
        return types.ElicitResult(action=a.elicit)

    async def on_sample(context, params):
        emit({"sampling": params.model_dump(mode="json", by_alias=True, exclude_none=True)})
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=a.sample),
            model="test-model",
            stop_reason="endTurn",
        )

    async def on_log(params):
        emit({"log": params.model_dump(mode="json", by_alias=True, exclude_none=True)})

    kwargs = {"logging_callback": on_log}
    if a.elicit != "none":
        kwargs["elicitation_callback"] = on_elicit
    if a.sample is not None:
        kwargs["sampling_callback"] = on_sample
    async with anyio.create_task_group() as tg:
        read, write, stream = await tcp_streams(a.port, tg)
        async with ClientSession(read, write, **kwargs) as session:
            await session.initialize()
            if a.level:
                await session.set_logging_level(a.level)
            for step in a.calls:
                name, _, args = step.partition("=")
                result = None
                with anyio.move_on_after(a.cancel_after if a.cancel_after else float("inf")):
                    result = await session.call_tool(name, json.loads(args or "{}"))
                if result is None:
                    emit({"call": name, "cancelled": True})
                    continue
                emit({"call": name,
                      "result": result.model_dump(mode="json", by_alias=True, exclude_none=True)})
        await stream.aclose()
        tg.cancel_scope.cancel()


if __name__ == "__main__":
    asyncio.run(main())
