#!/usr/bin/env python3
"""Validates what the tool-providers codecs emit against the providers' official SDK types.

Usage: check.py DIR

DIR holds one folder per provider (openai, openai-responses, anthropic, ollama, gemini, mcp), each
with JSON files written by tests/tests/it/conformance.rs: full request bodies (tool declarations,
tool_choice, the assistant turn echoed back, the tool results), or for MCP the tools/list result,
the tools/call requests and the CallToolResults.

Each document is validated with pydantic against the SDK's own request types (TypeAdapter over the
TypedDict params of openai and anthropic; the pydantic models of ollama, google-genai and mcp), then
compared with what the SDK type kept: a key the type does not know (silently dropped by a lenient
TypedDict or model) or a value it had to coerce is a failure, not only a validation error. The few
exceptions are listed in ALLOWED_DROPS with the reason.

Exit status: 0 all valid, 1 any problem (each printed), 2 usage.
"""

import json
import re
import sys
import warnings
from pathlib import Path

import pydantic
from pydantic import TypeAdapter

# Keys the Python SDK type does not model but the provider's server accepts, with the source.
ALLOWED_DROPS = {
    "ollama": [
        # api/types.go Message.ToolCallID and ToolCall.ID exist in the server (wire README §4.2,
        # §4.4); ollama-python's Message has neither.
        (r"^/messages/\d+/tool_call_id$", "server field (api/types.go Message.ToolCallID)"),
        (r"^/messages/\d+/tool_calls/\d+/id$", "server field (api/types.go ToolCall.ID)"),
        # Ollama keeps only a few JSON Schema keywords and drops the rest (wire README §4.5); the
        # canonical schema is still what validates the calls.
        (r"^/tools/\d+/function/parameters/.*", "JSON Schema keyword Ollama ignores (§4.5)"),
    ],
}


def materialize(value):
    """Turns what pydantic returned into plain JSON-like data. Iterating a lazy ValidatorIterator
    (the SDKs type many lists as Iterable[...]) is what validates its items."""
    if isinstance(value, pydantic.BaseModel):
        return materialize(value.model_dump(mode="json", by_alias=True, exclude_unset=True))
    if isinstance(value, dict):
        return {k: materialize(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [materialize(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if hasattr(value, "__iter__"):
        return [materialize(v) for v in value]
    if hasattr(value, "value"):  # enums
        return value.value
    return value


def diff(sent, kept, path, problems, provider):
    if isinstance(sent, dict):
        if not isinstance(kept, dict):
            problems.append(f"{path or '/'}: became {type(kept).__name__}")
            return
        for key, value in sent.items():
            child = f"{path}/{key}"
            if key not in kept:
                if not allowed(provider, child):
                    problems.append(f"{child}: not a field of the SDK type (it would be dropped)")
            else:
                diff(value, kept[key], child, problems, provider)
    elif isinstance(sent, list):
        if not isinstance(kept, list) or len(kept) != len(sent):
            problems.append(f"{path}: list changed")
            return
        for i, (a, b) in enumerate(zip(sent, kept)):
            diff(a, b, f"{path}/{i}", problems, provider)
    elif sent != kept or type(sent) is bool and type(kept) is not bool:
        problems.append(f"{path}: {sent!r} was coerced to {kept!r}")


def allowed(provider, pointer):
    return any(re.match(p, pointer) for p, _ in ALLOWED_DROPS.get(provider, []))


def check(adapter_or_model, value, path, problems, provider):
    # google-genai only warns about an unknown enum value ("X is not a valid Mode"): record
    # warnings and count them as problems
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            if isinstance(adapter_or_model, TypeAdapter):
                kept = materialize(adapter_or_model.validate_python(value))
            else:
                kept = materialize(adapter_or_model.model_validate(value))
        except pydantic.ValidationError as e:
            problems.append(f"{path}: rejected by the SDK type: {e}")
            return
    for w in caught:
        problems.append(f"{path}: the SDK type warned: {w.message}")
    diff(value, kept, path, problems, provider)


def check_openai(doc, problems):
    from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming

    check(TypeAdapter(CompletionCreateParamsNonStreaming), doc, "", problems, "openai")


def check_openai_responses(doc, problems):
    from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming

    check(TypeAdapter(ResponseCreateParamsNonStreaming), doc, "", problems, "openai-responses")


def check_anthropic(doc, problems):
    from anthropic.types.message_create_params import MessageCreateParamsNonStreaming

    check(TypeAdapter(MessageCreateParamsNonStreaming), doc, "", problems, "anthropic")


def check_ollama(doc, problems):
    from ollama._types import ChatRequest, Message, Tool

    # ChatRequest accepts plain mappings for tools untouched: validate each part with its model
    for i, tool in enumerate(doc.get("tools", [])):
        check(Tool, tool, f"/tools/{i}", problems, "ollama")
    for i, msg in enumerate(doc.get("messages", [])):
        check(Message, msg, f"/messages/{i}", problems, "ollama")
    rest = {k: v for k, v in doc.items() if k not in ("tools", "messages")}
    rest["messages"] = []
    check(ChatRequest, rest, "", problems, "ollama")


def check_gemini(doc, problems):
    from google.genai import types

    known = {"contents", "tools", "toolConfig"}
    for key in doc:
        if key not in known:
            problems.append(f"/{key}: not part of the generateContent body checked here")
    check(TypeAdapter(list[types.Content]), doc.get("contents", []), "/contents", problems, "gemini")
    check(TypeAdapter(list[types.Tool]), doc.get("tools", []), "/tools", problems, "gemini")
    if "toolConfig" in doc:
        check(types.ToolConfig, doc["toolConfig"], "/toolConfig", problems, "gemini")


def check_mcp(doc, problems):
    import mcp.types as m

    check(m.ListToolsResult, doc["tools_list"], "/tools_list", problems, "mcp")
    for i, req in enumerate(doc.get("calls", [])):
        check(m.JSONRPCRequest, req, f"/calls/{i}", problems, "mcp")
        check(m.CallToolRequest, {"method": req["method"], "params": req["params"]},
              f"/calls/{i}", problems, "mcp")
    for i, res in enumerate(doc.get("results", [])):
        check(m.CallToolResult, res, f"/results/{i}", problems, "mcp")


CHECKS = {
    "openai": check_openai,
    "openai-responses": check_openai_responses,
    "anthropic": check_anthropic,
    "ollama": check_ollama,
    "gemini": check_gemini,
    "mcp": check_mcp,
}


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    root = Path(argv[1])
    failures = 0
    checked = 0
    for provider, fn in CHECKS.items():
        for file in sorted((root / provider).glob("*.json")):
            problems = []
            fn(json.loads(file.read_text()), problems)
            checked += 1
            if problems:
                failures += 1
                print(f"FAIL {provider}/{file.name}")
                for p in problems:
                    print(f"  {p}")
            else:
                print(f"ok   {provider}/{file.name}")
    missing = [p for p in CHECKS if not (root / p).is_dir()]
    if missing:
        print(f"FAIL no documents for: {', '.join(missing)}")
        failures += 1
    print(f"{checked} documents checked, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
