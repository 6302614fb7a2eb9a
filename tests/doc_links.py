#!/usr/bin/env python3
"""Every relative link in README.md and docs/*.md resolves: the file exists (relative to the page
that links it), and an anchor names a heading of that page as GitHub makes anchors of headings
(lower case, punctuation dropped, spaces to hyphens, a repeated heading numbered -1, -2, ...).
Links to the web (http, https, mailto) are not followed.

Usage: doc_links.py SOURCE_DIR      (exit 0: all resolve; 1: the broken ones are listed)
"""
import os
import re
import sys


def anchors(path):
    """The anchors of a markdown file's headings (outside fenced code)."""
    seen, out, fenced = {}, set(), False
    for line in open(path, encoding="utf-8"):
        if line.startswith("```"):
            fenced = not fenced
            continue
        m = None if fenced else re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        slug = re.sub(r"[^\w\- ]", "", m.group(2).strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def links(path):
    """(line number, target) of every markdown link and image outside fenced code."""
    fenced = False
    for number, line in enumerate(open(path, encoding="utf-8"), 1):
        if line.startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        for m in re.finditer(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", re.sub(r"`[^`]*`", "", line)):
            yield number, m.group(1)


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    src = sys.argv[1]
    pages = [os.path.join(src, "README.md")] + sorted(
        os.path.join(src, "docs", f) for f in os.listdir(os.path.join(src, "docs")) if f.endswith(".md"))
    broken, count = [], 0
    for page in pages:
        for number, target in links(page):
            if re.match(r"^(https?|mailto):", target):
                continue
            count += 1
            file_part, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(page), file_part)) if file_part else page
            where = f"{os.path.relpath(page, src)}:{number}: {target}"
            if not os.path.exists(dest):
                broken.append(f"{where}: no such file {os.path.relpath(dest, src)}")
            elif anchor and (not dest.endswith(".md") or anchor not in anchors(dest)):
                broken.append(f"{where}: no heading with the anchor #{anchor} in {os.path.relpath(dest, src)}")
    for b in broken:
        print("BROKEN", b)
    print(f"{count} relative links in {len(pages)} pages, {len(broken)} broken")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
