#!/usr/bin/env python3
"""Writes the fuzz targets' seed inputs into fuzz/seeds/<target>/.

Seeds are small, valid-looking inputs the fuzzer mutates from: the tests' own arguments, provider
response captures, and function definitions and calls in the BFCL dialect. Generated rather than
hand-kept so they can be rebuilt when the sources change; only a modest set is committed.

    scripts/fuzz-seeds.py [--wire WIRE_NOTES.md] [--bfcl BFCL_DIR] [--per-source N]

--wire: a Markdown file of provider wire examples, fenced blocks under headings numbered like the
        providers (1 OpenAI Chat, 2 Responses, 3 Anthropic, 4 Ollama, 5 Gemini, 6 MCP).
--bfcl: a directory with BFCL_v4_*.json (one case a line) and possible_answer/ beside them.
Without them, only the built-in seeds are written.
"""

import argparse
import hashlib
import json
import os
import re
import shutil
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fuzz", "seeds")
# the decode_provider selector: the index in tool_providers::codec::Provider::ALL
PROVIDERS = {1: 0, 2: 1, 3: 2, 4: 3, 5: 4, 6: 5}


def write(target, data):
    if isinstance(data, str):
        data = data.encode()
    folder = os.path.join(ROOT, target)
    os.makedirs(folder, exist_ok=True)
    name = hashlib.sha1(data).hexdigest()[:16]
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def selected(selector, text):
    return bytes([selector]) + text.encode()


def builtin():
    # hydrate_derived: selector = tool (search_notes, book_room, renamed, create_note, draw)
    derived = [
        (0, '{"query":"rust ownership","limit":10,"sort":"relevance","include_archived":false,'
            '"filter":{"author":"ana","min_score":0.25},"tags":["rust","memory"]}'),
        (0, '{"query":"","limit":500,"sort":"relevance","filter":{"author":null,"min_score":1.5},'
            '"tags":["rust"]}'),
        (1, '{"room":"blue","floor":3,"hours":1.5,"share":0.5,"note":null,"ages":[30,41],'
            '"tags":null,"prio":2,"location":{"notebook":"a","depth":1}}'),
        (1, '{"room":"b","floor":-3,"hours":9,"share":1.5,"note":"toolong","ages":[],'
            '"tags":["x"],"prio":0,"location":{"notebook":"a","depth":9,"x":1}}'),
        (2, '{"pageSize":3,"counters":{"a":1},"firstWord":"hi","retries":2,'
            '"origin":{"notebook":"n","depth":0},"stops":[{"notebook":"m","depth":2}],'
            '"order":"newest"}'),
        (2, '{"stops":[]}'),
        (3, '{"title":"Note","slug":"a-b-1","meta":{"k":-1},"location":null}'),
        (3, '{"title":"","slug":"A B","meta":{"k":1.5}}'),
        (4, '{"shape":{"circle":{"radius":2.5}},"fill":{"kind":"solid","color":"red"},'
            '"offsets":[1,null,-3],"seed":18446744073709551615,"scale":-2.5}'),
        (4, '{"shape":{"square":7},"fill":{"kind":"none"},"seed":0}'),
        (4, '{"shape":"empty","fill":null,"offsets":null,"seed":1,"scale":null}'),
    ]
    for sel, text in derived:
        write("hydrate_derived", selected(sel, text))
    # hydrate_catalog: selector = schema in fuzz/src/schemas.rs
    catalog = [
        (0, '{"n":2,"s":"abc","x":1.5,"e":{"k":[1]},"c":3,"k":"x","arr":[1,2],"obj":{"a":"z"},'
            '"map":{"a":1},"opt":{"v":true,"next":{"next":null}},"t":null}'),
        (1, '{"label":"a@b.c","when":"2020-01-01T00:00:00Z","children":[{"value":"v1"},'
            '{"children":[{"pick":{"a":1}}]}],"value":[0.5,1.0]}'),
        (2, '{"price":19.99,"ratio":0.3,"big":18446744073709551615,"tiny":1e-295,"step":-9}'),
        (3, '{"location":"Paris","unit":"celsius","days":2,"coords":[48.8,2.3],'
            '"filters":[{"field":"t","op":"lt","value":30}]}'),
        (4, '{"pair":["a",1],"set":[1,2],"mode":"strict","level":6,"x-a":"abc"}'),
        (5, '{"a":"aaaaaaaaaaaaaaaaaaaaaaaaaaaa!","b":"xyxyxz","c":"\u00e9t\u00e9_1",'
            '"d":"DEADBEEF-0123","e":"192.168.0.1"}'),
        (6, '{"head":{"v":1,"next":{"v":2,"next":null}},"either":true}'),
        (7, '{"any":[1,{}],"empty":null,"list":[1],"extra":true}'),
    ]
    for sel, text in catalog:
        write("hydrate_catalog", selected(sel, text))
    schemas = [
        {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
        {"type": "object", "properties": {"o": {"anyOf": [{"$ref": "#/$defs/T"}, {"type": "null"}]}},
         "$defs": {"T": {"type": "object", "properties": {"t": {"$ref": "#/$defs/T"}}}}},
        {"type": "object", "properties": {"m": {"type": "object",
                                                "additionalProperties": {"type": "integer"}}}},
        {"type": "object", "properties": {"u": {"oneOf": [{"const": 1}, {"type": "string",
                                                                          "pattern": "^(a|b)+$"}]}}},
    ]
    for s in schemas:
        write("schema_views", json.dumps(s))
        write("register_catalog", selected(1, json.dumps(s)))
    for text in ['{"a": 1,}', '```json\n{"a": [1, 2,],}\n```', '"{\\"n\\": 1}"', "", "  ",
                 '{"query": "x", "limit": 2, "sort": "newest", "filter": {"min_score": 0},'
                 ' "tags": [],}', '{"opt": null, "n": 2.0}', '```\n{"nested": {"x": 1e-999}}\n```']:
        write("repair", text)


def fenced_blocks(markdown):
    """(section number, block text) for each fenced block."""
    section = 0
    block = None
    for line in markdown.splitlines():
        m = re.match(r"^## (\d+)\.", line)
        if m and block is None:
            section = int(m.group(1))
            continue
        if line.startswith("```"):
            if block is None:
                block = []
            else:
                yield section, "\n".join(block)
                block = None
            continue
        if block is not None:
            block.append(line)


def wire(path, limit):
    with open(path, encoding="utf-8") as f:
        markdown = f.read()
    count = 0
    for section, text in fenced_blocks(markdown):
        if section not in PROVIDERS:
            continue
        # the notes shorten ids with an ellipsis; keep it, it is valid UTF-8 either way
        write("decode_provider", selected(PROVIDERS[section], text))
        for line in text.splitlines():
            payload = line[5:].strip() if line.startswith("data:") else line.strip()
            try:
                value = json.loads(payload)
            except ValueError:
                continue
            for args in find_arguments(value):
                write("repair", args)
            for schema in find_schemas(value):
                write("schema_views", json.dumps(schema))
        count += 1
        if count >= limit:
            break


def find_arguments(value):
    if isinstance(value, dict):
        for k, v in value.items():
            if k == "arguments" and isinstance(v, str):
                yield v
            else:
                yield from find_arguments(v)
    elif isinstance(value, list):
        for v in value:
            yield from find_arguments(v)


def find_schemas(value):
    if isinstance(value, dict):
        for k, v in value.items():
            if k in ("parameters", "input_schema", "inputSchema", "parametersJsonSchema") \
                    and isinstance(v, dict):
                yield v
            else:
                yield from find_schemas(v)
    elif isinstance(value, list):
        for v in value:
            yield from find_schemas(v)


BFCL_TYPES = {"dict": "object", "float": "number", "tuple": "array", "any": None}


def canonical(schema):
    """BFCL's dialect as JSON Schema."""
    if isinstance(schema, list):
        return [canonical(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {}
    for k, v in schema.items():
        if k == "type" and isinstance(v, str):
            t = BFCL_TYPES.get(v, v)
            if t is not None:
                out[k] = t
        elif k == "optional":
            continue
        elif k == "properties" and isinstance(v, dict):
            out[k] = {name: canonical(s) for name, s in v.items()}
        elif k in ("items", "additionalProperties"):
            out[k] = canonical(v)
        else:
            out[k] = v
    return out


def bfcl(folder, limit):
    for name in sorted(os.listdir(folder)):
        if not (name.startswith("BFCL_v4_") and name.endswith(".json")):
            continue
        with open(os.path.join(folder, name), encoding="utf-8") as f:
            cases = [json.loads(line) for line in f if line.strip()]
        answers = []
        answer_path = os.path.join(folder, "possible_answer", name)
        if os.path.exists(answer_path):
            with open(answer_path, encoding="utf-8") as f:
                answers = [json.loads(line) for line in f if line.strip()]
        for i, case in enumerate(cases[:limit]):
            catalog = []
            for fn in case["function"]:
                tool = re.sub(r"[^A-Za-z0-9_-]", "_", fn["name"])[:64]
                params = canonical(fn.get("parameters", {"type": "object"}))
                catalog.append({"type": "function", "name": tool,
                                "description": fn.get("description", ""), "parameters": params})
                write("schema_views", json.dumps(params))
            write("register_catalog", selected(0, json.dumps(catalog)))
            if i < len(answers):
                for call in answers[i]["ground_truth"]:
                    for _, params in call.items():
                        # the first acceptable value of each parameter ("" means: leave it out)
                        args = {k: v[0] for k, v in params.items() if v and v[0] != ""}
                        text = json.dumps(args)
                        write("hydrate_catalog", selected(3, text))
                        write("repair", text)
                        write("decode_provider", selected(0, json.dumps(
                            {"choices": [{"message": {"role": "assistant", "tool_calls": [
                                {"id": "call_1", "type": "function",
                                 "function": {"name": "get_weather", "arguments": text}}]},
                                "finish_reason": "tool_calls"}]})))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wire")
    parser.add_argument("--bfcl")
    parser.add_argument("--per-source", type=int, default=40)
    args = parser.parse_args()
    if os.path.isdir(ROOT):
        shutil.rmtree(ROOT)
    builtin()
    if args.wire:
        wire(args.wire, args.per_source)
    if args.bfcl:
        bfcl(args.bfcl, args.per_source)
    total = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(ROOT) for f in fs)
    print(f"seeds in {os.path.relpath(ROOT)}: {total} bytes", file=sys.stderr)


if __name__ == "__main__":
    main()
