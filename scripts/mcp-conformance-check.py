#!/usr/bin/env python3
"""Reads the MCP conformance suite's results (one `<prefix>-<scenario>-<time>/checks.json` per
server scenario that ran, `<scenario>-<time>/checks.json` per client scenario, the auth ones under
`auth/`) and compares the scenarios that pass with the list of those expected to.

A scenario passes when a check of it succeeded, none failed or warned, and no tool call in it was answered
with an error result (`details.result.isError`), except `tools-call-error`, whose error must be
the fixture tool's own: an "unknown tool" error never counts. Exits 1 when a listed scenario does
not pass; with `--update`, writes the passing scenarios to the list instead.

Usage: mcp-conformance-check.py RESULTS_DIR EXPECTED_FILE [--update] [--client]
"""

import json
import pathlib
import re
import sys

ERROR_SCENARIO = "tools-call-error"


def error_result(result):
    """Why `result` (a CallToolResult) does not count, or None."""
    if not isinstance(result, dict) or result.get("isError") is not True:
        return None
    text = "".join(
        c.get("text", "") for c in result.get("content", []) if isinstance(c, dict)
    )
    try:
        code = json.loads(text).get("error", {}).get("code")
    except (ValueError, AttributeError):
        code = None
    return f"an error result ({code or text[:80]!r})"


def verdict(scenario, checks):
    """None when the scenario passes, else why not."""
    # INFO and SKIPPED checks report what was seen; a WARNING counts as a failure here
    failed = [c for c in checks if c.get("status") in ("FAILURE", "WARNING")]
    if failed:
        c = failed[0]
        return f"{c.get('status')}: {c.get('id')}: {c.get('errorMessage') or c.get('name')}"
    if not any(c.get("status") == "SUCCESS" for c in checks):
        return "no check succeeded"
    for c in checks:
        why = error_result((c.get("details") or {}).get("result"))
        if why is None:
            continue
        if scenario != ERROR_SCENARIO or "UNKNOWN_TOOL" in why:
            return f"passed only on {why}"
    return None


def main():
    results, expected_file = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    update = "--update" in sys.argv[3:]
    kind = "client" if "--client" in sys.argv[3:] else "server"
    prefix = "" if kind == "client" else "server-"
    outcome = {}
    for checks_file in sorted(results.glob("**/checks.json")):
        # [server-]<scenario>-<ISO time with - for : and .>, under auth/ for the auth scenarios
        name = checks_file.parent.relative_to(results).as_posix()
        m = re.fullmatch(prefix + r"(.+)-\d{4}-\d{2}-\d{2}T[-\dZ]+", name)
        if not m:
            continue
        outcome[m.group(1)] = verdict(m.group(1), json.loads(checks_file.read_text()))
    passing = sorted(s for s, why in outcome.items() if why is None)
    print(f"MCP conformance: {len(passing)} of {len(outcome)} {kind} scenarios pass")
    for scenario in sorted(outcome):
        why = outcome[scenario]
        print(f"  {'pass' if why is None else 'FAIL'}  {scenario}" + (f"  ({why})" if why else ""))
    if update:
        header = [
            line
            for line in expected_file.read_text().splitlines()
            if line.startswith("#")
        ] if expected_file.exists() else []
        expected_file.write_text("\n".join(header + passing) + "\n")
        print(f"wrote {len(passing)} scenarios to {expected_file}")
        return 0
    expected = [
        line.strip()
        for line in expected_file.read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    regressed = [s for s in expected if outcome.get(s, "did not run") is not None]
    new = [s for s in passing if s not in expected]
    if new:
        print(f"passing now but not listed (add them to {expected_file}): {', '.join(new)}")
    if regressed:
        for s in regressed:
            print(f"REGRESSED: {s}: {outcome.get(s, 'did not run')}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
