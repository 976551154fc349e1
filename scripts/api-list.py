#!/usr/bin/env python3
"""Reduces rustdoc's JSON output for one crate to its public API: one line per item, sorted.

    scripts/api-list.py target/doc/tool_runtime.json > api/tool-runtime.txt

Each line is an item reachable from the crate root under the path a user writes (re-exports
followed, private modules not), with its kind and, for functions and methods, its parameters and
return type: `fn tool_runtime::ToolSet::with<T>(self) -> Result<Self, RegistrationError>`. Struct
fields, enum variants, trait items, inherent methods and the traits a type implements (auto traits
included, blanket impls not) are listed under their type. Items hidden from the docs
(`#[doc(hidden)]`) are not part of the API and are left out.

scripts/api-snapshot.sh runs rustdoc and compares these lists with the committed ones.
"""

import json
import sys

data = json.load(open(sys.argv[1]))
index = data["index"]
paths = data["paths"]
lines = set()


def item(id_):
    return index.get(str(id_)) if id_ is not None else None


def kind_of(it):
    return next(iter(it["inner"])) if isinstance(it["inner"], dict) else it["inner"]


def hidden(it):
    for attr in it.get("attrs", []):
        text = attr if isinstance(attr, str) else json.dumps(attr)
        if "hidden" in text and "doc" in text:
            return True
    return False


canonical = {}


def path_name(p):
    """A resolved path's name: where a user reaches a local item (its definition may sit in a
    private module), the path as written otherwise."""
    summary = paths.get(str(p.get("id")))
    name = p.get("path") or p.get("name") or "?"
    if p.get("id") in canonical:
        name = canonical[p["id"]]
    elif summary and summary.get("crate_id") == 0:
        name = "::".join(summary["path"])
    return name + generic_args(p.get("args"))


def generic_args(args):
    if not args:
        return ""
    if "angle_bracketed" in args:
        ab = args["angle_bracketed"]
        parts = []
        for a in ab.get("args", []):
            if "type" in a:
                parts.append(ty(a["type"]))
            elif "lifetime" in a:
                parts.append(a["lifetime"])
            elif "const" in a:
                parts.append(a["const"].get("expr", "_"))
            else:
                parts.append("_")
        for c in ab.get("constraints", ab.get("bindings", [])):
            parts.append(c["name"] + "=..")
        return "<" + ", ".join(parts) + ">" if parts else ""
    if "parenthesized" in args:
        pa = args["parenthesized"]
        out = "(" + ", ".join(ty(t) for t in pa.get("inputs", [])) + ")"
        if pa.get("output"):
            out += " -> " + ty(pa["output"])
        return out
    return ""


def bounds(bs):
    out = []
    for b in bs or []:
        if "trait_bound" in b:
            out.append(path_name(b["trait_bound"]["trait"]))
        elif "outlives" in b:
            out.append(b["outlives"])
        else:
            out.append("?")
    return " + ".join(out)


def ty(t):
    if t is None:
        return "()"
    (k, v), = t.items()
    if k == "resolved_path":
        return path_name(v)
    if k in ("primitive", "generic"):
        return v
    if k == "borrowed_ref":
        life = (v.get("lifetime") + " ") if v.get("lifetime") else ""
        return "&" + life + ("mut " if v.get("is_mutable") else "") + ty(v["type"])
    if k == "raw_pointer":
        return ("*mut " if v.get("is_mutable") else "*const ") + ty(v["type"])
    if k == "slice":
        return "[" + ty(v) + "]"
    if k == "array":
        return "[" + ty(v["type"]) + "; " + str(v.get("len")) + "]"
    if k == "tuple":
        return "(" + ", ".join(ty(x) for x in v) + ")"
    if k == "impl_trait":
        return "impl " + bounds(v)
    if k == "dyn_trait":
        return "dyn " + " + ".join(path_name(p["trait"]) for p in v.get("traits", []))
    if k == "qualified_path":
        return "<" + ty(v["self_type"]) + ">::" + v["name"]
    if k == "function_pointer":
        return "fn(" + ", ".join(ty(x[1]) for x in v["sig"]["inputs"]) + ")"
    return k


def generics(g):
    names = [
        p["name"]
        for p in (g or {}).get("params", [])
        # lifetimes and the parameters `impl Trait` arguments stand for are not written
        if not p["name"].startswith("'") and not p.get("kind", {}).get("type", {}).get("is_synthetic")
    ]
    return "<" + ", ".join(names) + ">" if names else ""


def self_param(t):
    """`self`, `&self`, `&mut self`, or `self: Type` as written."""
    if t == {"generic": "Self"}:
        return "self"
    ref = t.get("borrowed_ref")
    if ref and ref.get("type") == {"generic": "Self"}:
        return "&mut self" if ref.get("is_mutable") else "&self"
    return "self: " + ty(t)


def signature(fn):
    sig = fn["sig"]
    params = []
    for name, t in sig["inputs"]:
        params.append(self_param(t) if name == "self" else ty(t))
    out = "(" + ", ".join(params) + ")"
    if sig.get("output") is not None:
        out += " -> " + ty(sig["output"])
    header = fn.get("header", {})
    prefix = ("async " if header.get("is_async") else "") + ("unsafe " if header.get("is_unsafe") else "")
    return prefix, generics(fn.get("generics")) + out


def impl_items(owner, impl_ids):
    for iid in impl_ids or []:
        imp = item(iid)
        if imp is None or hidden(imp):
            continue
        body = imp["inner"]["impl"]
        if body.get("blanket_impl") is not None:
            continue
        if body.get("trait") is None:
            for mid in body.get("items", []):
                member(owner, item(mid))
        else:
            neg = "!" if body.get("is_negative") else ""
            lines.add(f"impl {neg}{path_name(body['trait'])} for {owner}")


def member(owner, it):
    if it is None or hidden(it) or it.get("visibility") not in ("public", "default"):
        return
    k = kind_of(it)
    name = f"{owner}::{it['name']}"
    if k == "function":
        prefix, sig = signature(it["inner"]["function"])
        lines.add(f"{prefix}fn {name}{sig}")
    elif k == "assoc_const":
        lines.add(f"const {name}: {ty(it['inner'][k].get('type'))}")
    elif k == "assoc_type":
        lines.add(f"type {name}")
    else:
        lines.add(f"{k} {name}")


reached = {}
pending = []


def visit(id_, path, seen):
    it = item(id_)
    if it is None or hidden(it) or id_ in seen:
        return
    k = kind_of(it)
    inner = it["inner"][k] if isinstance(it["inner"], dict) else None
    if k == "use":
        # Re-exports are resolved once the module tree is walked: an item reachable at its own
        # path is listed once, and the re-export as one line pointing at it. `path` is the
        # module's path here (a `use` item has no name of its own).
        pending.append((inner, path, seen))
        return
    if id_ in reached:
        lines.add(f"use {path} = {reached[id_]}")
        return
    reached[id_] = path
    seen = seen | {id_}
    if k == "module":
        if not inner.get("is_crate"):
            lines.add(f"mod {path}")
        for child in inner["items"]:
            child_item = item(child)
            name = child_item.get("name") if child_item else None
            if child_item is not None and kind_of(child_item) == "use":
                name = None
            visit(child, f"{path}::{name}" if name else path, seen)
    elif k == "struct":
        lines.add(f"struct {path}{generics(inner.get('generics'))}")
        kind = inner.get("kind")
        fields = []
        if isinstance(kind, dict):
            fields = kind.get("plain", {}).get("fields", []) or kind.get("tuple", []) or []
        for i, fid in enumerate(fields):
            f = item(fid)
            if f is not None and not hidden(f):
                lines.add(f"field {path}::{f['name']}: {ty(f['inner']['struct_field'])}")
        impl_items(path, inner.get("impls"))
    elif k == "enum":
        lines.add(f"enum {path}{generics(inner.get('generics'))}")
        for vid in inner.get("variants", []):
            v = item(vid)
            if v is not None and not hidden(v):
                lines.add(f"variant {path}::{v['name']}")
                vk = v["inner"]["variant"].get("kind")
                if isinstance(vk, dict) and "struct" in vk:
                    for fid in vk["struct"].get("fields", []):
                        f = item(fid)
                        if f is not None:
                            lines.add(f"field {path}::{v['name']}::{f['name']}")
        impl_items(path, inner.get("impls"))
    elif k == "union":
        lines.add(f"union {path}")
        impl_items(path, inner.get("impls"))
    elif k == "trait":
        unsafe = "unsafe " if inner.get("is_unsafe") else ""
        lines.add(f"{unsafe}trait {path}{generics(inner.get('generics'))}")
        for mid in inner.get("items", []):
            member(path, item(mid))
    elif k == "function":
        prefix, sig = signature(inner)
        lines.add(f"{prefix}fn {path}{sig}")
    elif k == "type_alias":
        lines.add(f"type {path} = {ty(inner.get('type'))}")
    elif k in ("constant", "static"):
        t = inner.get("type") if k == "static" else inner.get("type")
        lines.add(f"{'const' if k == 'constant' else 'static'} {path}: {ty(t)}")
    elif k == "proc_macro":
        lines.add(f"proc_macro {path} ({inner.get('kind')})")
    else:
        lines.add(f"{k} {path}")


def resolve_uses():
    while pending:
        use, parent, seen = pending.pop(0)
        target = item(use.get("id"))
        if use.get("is_glob"):
            if target is not None and kind_of(target) == "module":
                for child in target["inner"]["module"]["items"]:
                    child_item = item(child)
                    name = child_item.get("name") if child_item else None
                    if child_item is not None and kind_of(child_item) == "use":
                        name = None
                    visit(child, f"{parent}::{name}" if name else parent, seen)
            else:
                lines.add(f"use {parent}::* = {use['source']}::*")
        elif target is None:
            lines.add(f"use {parent}::{use['name']} = {use['source']}")
        else:
            visit(use["id"], f"{parent}::{use['name']}", seen)


root = item(data["root"])
# Twice: the first walk learns the path each item is reached at, the second writes the lines with
# every type named by that path.
visit(data["root"], root["name"], frozenset())
resolve_uses()
canonical = dict(reached)
lines.clear()
reached.clear()
visit(data["root"], root["name"], frozenset())
resolve_uses()
sys.stdout.write("".join(line + "\n" for line in sorted(lines)))
