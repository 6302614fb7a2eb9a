#!/usr/bin/env python3
"""Writes attn's man page, attn.1 (one page: every subcommand a subsection of COMMANDS), from the built
binary's own --help (scripts/cli_help.py reads it), so the page says what the CLI does. Options and
descriptions are filled text; the help's footers (its examples and notes) keep their lines as --help
prints them at 72 columns. Nothing in the page is written by hand but its section names.

Usage: man_page.py ATTN OUT [DOCDIR]   (the build runs it, and the install again with the installed DOCDIR,
the directory of the examples and docs, for the FILES section: CMakeLists.txt)
"""
import itertools
import re
import sys

import cli_help


def escape(text):
    """Plain text as roff: backslashes, option dashes (\\- so that they copy as '-'), non-ASCII
    characters by code point (no input encoding assumed), and a leading '.' or "'" made text."""
    text = text.replace("\\", "\\e")
    text = re.sub(r"(^|[\s(\[{'\"`,|])(-+)", lambda m: m.group(1) + "\\-" * len(m.group(2)), text)
    text = "".join(c if ord(c) < 128 else f"\\[u{ord(c):04X}]" for c in text)
    return "\\&" + text if text[:1] in (".", "'") else text


def entry_head(entry):
    """'\\fB\\-\\-format\\fR \\fITEXT\\fR:{text,json}': names bold (a positional's italic), the value's
    type word italic, the rest as --help prints it. The spec's spaces are unbreakable ("\\ "): a tag
    is filled text, and "INT:INT in [0 - 12]" would otherwise break with its end in the description."""
    font = "B" if entry.is_option else "I"
    names = ", ".join(f"\\f{font}{escape(n)}\\fR" for n in entry.names)
    if not entry.spec:
        return names
    word = entry.placeholder
    rest = escape(entry.spec[len(word):]).replace(" ", "\\ ")
    return f"{names} \\fI{escape(word)}\\fR{rest}"


def usage_line(usage, positionals):
    """'attn run [OPTIONS] file' -> the command bold, its positionals italic."""
    words = usage.split()
    command = list(itertools.takewhile(lambda w: re.fullmatch(r"[a-z][a-z-]*", w) and w not in positionals, words))
    out = [f"\\fB{escape(' '.join(command))}\\fR"]
    for w in words[len(command):]:
        bare = w.strip("[]")
        out.append(w.replace(bare, f"\\fI{escape(bare)}\\fR") if bare in positionals else escape(w))
    return " ".join(out)


def entry_list(entries):
    out = []
    for e in entries:
        out += [".TP", entry_head(e), escape(e.description) if e.description else "\\&"]
    return out


def sections(help_):
    """Each --help section as a labelled list of .TP entries."""
    out = []
    for title, entries in help_.sections:
        out += [".PP", f"\\fB{escape(title)}:\\fR"] + entry_list(entries)
    return out


def verbatim(lines):
    """The footer as --help prints it: no filling, no adjusting, blank lines kept."""
    if not lines:
        return []
    return [".PP", ".nf"] + [escape(l) if l.strip() else "" for l in lines] + [".fi"]


def positional_names(help_):
    return {e.names[0] for e in help_.entries("Positionals")}


def page(cli, docdir=""):
    top, name = cli.top, cli.version.split()[0]
    summary = re.sub(rf"^{re.escape(name)}\s+\S\s+", "", top.description)  # "attn — Attention Tracer: ..."
    out = [
        f'.\\" {name}.1: written from "{name} --help" by scripts/man_page.py when attn is built; do not edit.',
        f'.TH {name.upper()} 1 "" "{escape(cli.version)}" "User Commands"',
        ".nh", ".ad l",  # no hyphenation (it would split option names), ragged right
        ".SH NAME", f"{name} \\- {escape(summary)}",
        ".SH SYNOPSIS", usage_line(top.usage, set()),
    ]
    for sub in cli.subcommands.values():
        out += [".br", usage_line(sub.usage, positional_names(sub))]
    out += [".SH DESCRIPTION", escape(summary) + ".", ".PP",
            f"Each subcommand's section below is what \\fB{name} \\fISUBCOMMAND\\fB \\-\\-help\\fR prints.",
            ".SH OPTIONS"]
    out += entry_list([e for title, entries in top.sections if title != "Subcommands" for e in entries])
    out += [".SH COMMANDS"]
    for sub_name, sub in cli.subcommands.items():
        out += [f'.SS "{name} {sub_name}"', escape(sub.description), ".PP", "Usage: " + usage_line(sub.usage, positional_names(sub))]
        out += sections(sub)
        out += verbatim(sub.footer if sub.footer != top.footer else [])
    out += [".SH EXAMPLES"] + verbatim(top.footer)[1:]
    out += files_section(docdir)
    return "\n".join(out) + "\n"


def files_section(docdir):
    """Where the install put the examples and docs the page names, and what its paths are relative to."""
    where = escape(docdir) if docdir else "\\fIPREFIX\\fR/share/doc/attn"
    return [".SH FILES",
            ".TP", f"{where}/examples",
            "The example inputs and the small checkpoints they read.",
            ".TP", f"{where}/docs",
            "The documentation (docs/input-format.md: the input format).",
            ".PP",
            f"The paths in this page (examples/cat_sat.json, docs/input-format.md) are relative to {where}: "
            f"run the examples there (\\fBcd {where}\\fR first), or give their full path."]


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit("usage: man_page.py ATTN OUT [DOCDIR]")
    text = page(cli_help.read_cli(sys.argv[1]), sys.argv[3] if len(sys.argv) == 4 else "")
    with open(sys.argv[2], "w", encoding="ascii") as f:
        f.write(text)


if __name__ == "__main__":
    main()
