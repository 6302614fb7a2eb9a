#!/usr/bin/env python3
"""docs/explanations.md, the claims register, lists every general claim the explainers can print.

Each general claim in src/attn/tools/explain*.cpp carries a tag on the line above the code that prints
it, "// claim: ID" (ID: lowercase letters, digits and hyphens), and the line after the tag must hold a
string literal (the claim's words), so a tag cannot drift away from what it names. The register lists
each ID once, as the first cell of a table row, "| `ID` | ...". The check fails when a tagged ID is
not in the register, when the register lists an ID no code tags, when an ID is listed twice, or when a
tag is not followed by a string literal. One ID may tag several places that print the same claim.

Usage: claims_register.py SOURCE_DIR     (exit 0 pass, 1 fail)
"""
import re
import sys
from collections import Counter
from pathlib import Path

TAG = re.compile(r"^\s*// claim: (\S+)\s*$")
ID = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
ROW = re.compile(r"^\|\s*`([^`]+)`\s*\|")


def tagged(source):
    """{id: [file:line, ...]} of the tags in the explainers, and the problems with their form."""
    ids, problems = {}, []
    files = sorted((source / "src" / "attn" / "tools").glob("explain*.cpp"))
    if not files:
        problems.append("no src/attn/tools/explain*.cpp")
    for f in files:
        lines = f.read_text(encoding="utf-8").splitlines()
        for n, line in enumerate(lines):
            m = TAG.match(line)
            if m is None:
                if "// claim:" in line:
                    problems.append(f"{f.name}:{n + 1}: a claim tag is a line of its own, \"// claim: ID\": {line.strip()}")
                continue
            where = f"{f.name}:{n + 1}"
            if not ID.match(m.group(1)):
                problems.append(f"{where}: \"{m.group(1)}\" is not an ID (lowercase letters, digits, hyphens)")
            if n + 1 >= len(lines) or '"' not in lines[n + 1]:
                problems.append(f"{where}: the line after \"// claim: {m.group(1)}\" prints no string literal")
            ids.setdefault(m.group(1), []).append(where)
    return ids, problems


def registered(register):
    """The IDs the register's table rows list, with how often each is listed."""
    return Counter(m.group(1) for line in register.read_text(encoding="utf-8").splitlines() if (m := ROW.match(line)))


def main():
    source = Path(sys.argv[1])
    ids, failures = tagged(source)
    register = source / "docs" / "explanations.md"
    if not register.is_file():
        print(f"FAIL: {register}: the claims register is missing")
        return 1
    listed = registered(register)
    for i in sorted(set(ids) - set(listed)):
        failures.append(f"claim \"{i}\" ({', '.join(ids[i])}) is not in docs/explanations.md: add its row (what it says, when attn prints it)")
    for i in sorted(set(listed) - set(ids)):
        failures.append(f"docs/explanations.md lists claim \"{i}\", but no explainer tags it (// claim: {i}): remove the row or tag the code")
    for i, n in sorted(listed.items()):
        if n > 1:
            failures.append(f"docs/explanations.md lists claim \"{i}\" {n} times")
    for f in failures:
        print("FAIL:", f)
    print(f"claims register: {len(ids)} claims tagged, {len(listed)} listed" + ("" if not failures else f", {len(failures)} failures"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
