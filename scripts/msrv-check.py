#!/usr/bin/env python3
"""Fails when a dependency of the published crates needs a newer Rust than they declare.

The declared minimum is the workspace's `rust-version`. What a user's build needs is the highest
`rust-version` among the crates it compiles, which depends on the features the user turns on. So
this script writes a throwaway crate (its own workspace, under target/) that depends on every
published crate by path, as a user would, and asks `cargo metadata` what it resolves to: once with
the default features, once with `default-features = false` and once with every feature. It walks
the normal and build dependencies from that crate (dev-dependencies are not built for users) and
lists every package whose `rust-version` is above the declared one.

    scripts/msrv-check.py            check; exit 1 and name the offenders if any
    scripts/msrv-check.py --report   also print the highest rust-version per feature set

The workspace's Cargo.lock is copied into the throwaway crate, so the versions checked are the ones
the workspace builds and tests; `--offline` is passed when CARGO_NET_OFFLINE is set.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "target" / "msrv-check"


def metadata(cwd, *args):
    out = subprocess.run(
        ["cargo", "metadata", "--format-version", "1", *args],
        cwd=cwd,
        check=True,
        stdout=subprocess.PIPE,
    ).stdout
    return json.loads(out)


def version_key(text):
    """'1.85' and '1.85.0' compare equal; a missing part counts as 0."""
    parts = [int(p) for p in text.split(".")]
    return tuple(parts + [0] * (3 - len(parts)))


def host_triple():
    out = subprocess.run(["rustc", "-vV"], check=True, stdout=subprocess.PIPE, text=True).stdout
    for line in out.splitlines():
        if line.startswith("host: "):
            return line.split(": ", 1)[1]
    sys.exit("msrv-check: `rustc -vV` printed no host triple")


def published_crates(ws):
    """Workspace members that may be published, with the rust-version each declares."""
    members = set(ws["workspace_members"])
    crates = []
    for pkg in ws["packages"]:
        if pkg["id"] in members and pkg.get("publish") != []:
            crates.append(pkg)
    return crates


def manifest(crates, mode):
    lines = [
        "[package]",
        'name = "msrv-check-user"',
        'version = "0.0.0"',
        'edition = "2021"',
        "publish = false",
        "",
        "# Its own workspace: it stands for a user's crate, not a member of this one.",
        "[workspace]",
        "",
        "[dependencies]",
    ]
    for pkg in crates:
        path = Path(pkg["manifest_path"]).parent.as_posix()
        options = [f'path = "{path}"']
        if mode == "no-default-features":
            options.append("default-features = false")
        elif mode == "all-features":
            features = sorted(f for f in pkg["features"] if f != "default")
            options.append("features = [" + ", ".join(f'"{f}"' for f in features) + "]")
        lines.append(f'{pkg["name"]} = {{ {", ".join(options)} }}')
    return "\n".join(lines) + "\n"


def needed(meta):
    """Every registry package the user's crate compiles, with its rust-version (None if undeclared)."""
    nodes = {node["id"]: node for node in meta["resolve"]["nodes"]}
    packages = {pkg["id"]: pkg for pkg in meta["packages"]}
    root = meta["resolve"]["root"]
    seen = {root}
    todo = [root]
    while todo:
        node = nodes[todo.pop()]
        for dep in node["deps"]:
            kinds = {k["kind"] for k in dep["dep_kinds"]}
            # `None` is a normal dependency; dev-dependencies of a dependency are never built.
            if kinds & {None, "build"} and dep["pkg"] not in seen:
                seen.add(dep["pkg"])
                todo.append(dep["pkg"])
    # The published crates themselves are what declares the rust-version (a path source).
    return [packages[i] for i in seen if packages[i]["source"] is not None]


def main():
    report = "--report" in sys.argv[1:]
    ws = metadata(ROOT, "--no-deps")
    crates = published_crates(ws)
    declared = {pkg["name"]: pkg.get("rust_version") for pkg in crates}
    missing = [name for name, v in declared.items() if not v]
    if missing:
        sys.exit(f"msrv-check: no rust-version declared by {', '.join(sorted(missing))}")
    floor = min(declared.values(), key=version_key)

    WORK.mkdir(parents=True, exist_ok=True)
    (WORK / "src").mkdir(exist_ok=True)
    (WORK / "src" / "lib.rs").write_text("")
    extra = ["--filter-platform", host_triple()]
    if os.environ.get("CARGO_NET_OFFLINE"):
        extra.append("--offline")

    failures = []
    for mode in ("default-features", "no-default-features", "all-features"):
        (WORK / "Cargo.toml").write_text(manifest(crates, mode))
        shutil.copyfile(ROOT / "Cargo.lock", WORK / "Cargo.lock")
        pkgs = needed(metadata(WORK, *extra))
        versioned = [p for p in pkgs if p.get("rust_version")]
        top = max(versioned, key=lambda p: version_key(p["rust_version"]))
        over = sorted(
            (p for p in versioned if version_key(p["rust_version"]) > version_key(floor)),
            key=lambda p: (version_key(p["rust_version"]), p["name"]),
            reverse=True,
        )
        if report:
            print(
                f"{mode}: {len(pkgs)} packages, highest rust-version {top['rust_version']} "
                f"({top['name']} {top['version']}); declared {floor}"
            )
        for p in over:
            failures.append(f"  {mode}: {p['name']} {p['version']} needs Rust {p['rust_version']}")

    if failures:
        print(
            f"msrv-check: the published crates declare rust-version {floor}, "
            "but these dependencies need more:",
            file=sys.stderr,
        )
        print("\n".join(failures), file=sys.stderr)
        print(
            "Raise `rust-version` in the workspace Cargo.toml to the highest of these, or keep "
            "the dependency at a version that supports the declared one.",
            file=sys.stderr,
        )
        sys.exit(1)
    print(f"msrv-check: every dependency builds with Rust {floor} (the declared rust-version)")


if __name__ == "__main__":
    main()
