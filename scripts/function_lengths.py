#!/usr/bin/env python3
"""The functions of src/, apps/ and python/ longer than a limit (default 100 lines), longest first.

A function is a definition at namespace scope (or a class's member defined in its body): from the
line that opens its body to the line that closes it, both counted. Comments, strings and character
literals are skipped when braces are matched. Exit 1 when any function is over the limit (the list
names file, line, length and name), 0 otherwise: `ctest -R function_lengths` runs it.
"""
import argparse
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
SOURCES = ("src", "apps", "python")
EXTENSIONS = {".cpp", ".hpp", ".cu", ".cuh", ".h"}


def strip(text):
    """The text with comments, string and character literals blanked (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i)); i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j])); i = j
        elif text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if not m:
                out.append(c); i += 1; continue
            end = ")" + m.group(1) + '"'
            j = text.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
            out.append(re.sub(r"[^\n]", " ", text[i:j])); i = j
        elif c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum():
                out.append(" "); i += 1; continue  # digit separator: 1'000'000
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(" " * (j - i)); i = j
        else:
            out.append(c); i += 1
    return "".join(out)


CONTAINER = re.compile(r"\b(namespace|struct|class|union|enum)\b[^;(){}]*$|extern\s*$")


def functions(text):
    """(name, first line, length) of each function body at namespace or class scope."""
    s = strip(text)
    stack = []  # per open brace: "container", "function" or "other"
    found = []
    line = 1
    last = 0  # where the current declaration's text starts
    for i, c in enumerate(s):
        if c == "\n":
            line += 1
        elif c == "{":
            head = s[last:i]
            outer = all(k[0] == "container" for k in stack)
            flat = " ".join(head.split())
            if outer and CONTAINER.search(flat + " "):
                stack.append(("container", line, ""))
            elif outer and "(" in flat and not re.search(r"=\s*$", flat):
                name = [n for n in re.findall(r"([~\w:]+(?:<[^()]*>)?)\s*\(", flat) if not n.startswith("__")]
                stack.append(("function", line, name[0] if name else flat[:40]))
            else:
                stack.append(("other", line, ""))
            last = i + 1
        elif c == "}":
            if stack:
                kind, start, name = stack.pop()
                if kind == "function":
                    found.append((name, start, line - start + 1))
            last = i + 1
        elif c == ";" and all(k[0] == "container" for k in stack):
            last = i + 1
        elif c == ":" and all(k[0] == "container" for k in stack) and re.search(r"\b(public|private|protected)\s*$", s[last:i]):
            last = i + 1
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=100)
    ap.add_argument("--all", action="store_true", help="list every function over 60 lines, not only the ones over the limit")
    args = ap.parse_args()
    rows = []
    for top in SOURCES:
        for path in sorted((ROOT / top).rglob("*")):
            if path.suffix in EXTENSIONS and path.is_file():
                for name, start, length in functions(path.read_text(encoding="utf-8")):
                    rows.append((length, str(path.relative_to(ROOT)), start, name))
    rows.sort(key=lambda r: (-r[0], r[1], r[2]))
    over = [r for r in rows if r[0] > args.limit]
    for length, path, start, name in (rows if args.all else over):
        if args.all and length <= 60:
            break
        print(f"{path}:{start}: {name}: {length} lines")
    if over:
        print(f"{len(over)} function(s) over {args.limit} lines: split them into named steps", file=sys.stderr)
        return 1
    print(f"no function over {args.limit} lines ({len(rows)} functions in {', '.join(SOURCES)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
