"""attn's own --help, read from the built binary into its subcommands and each one's positionals,
options and footer: what scripts/man_page.py and scripts/completions.py write from, so that neither
can drift from the CLI. Not a general CLI11 parser: it knows the layout attn's help formatter prints
(a description, "Usage:", sections of two-space-indented entries whose descriptions share one
column, then a free-form footer), and stops with a message when the help does not look like that.
"""
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field

WIDE = 1000   # every description on one line: the entries are read from this rendering
NARROW = 72   # the footers as --help wraps them, to fit an 80-column man page's 7-column indent


@dataclass
class Entry:
    names: list        # ["-h", "--help"], ["--format"], ["file"], ["run"]
    spec: str          # what follows the names: "TEXT:{text,json}", "TEXT REQUIRED", "INT:INT in [0 - 12]", ""
    description: str

    @property
    def is_option(self):
        return self.names[0].startswith("-")

    @property
    def placeholder(self):
        """The value's type word (TEXT, INT, FLOAT, NAME), or "" for a flag."""
        return re.split(r"[\s:]", self.spec, maxsplit=1)[0] if self.spec else ""

    @property
    def choices(self):
        """The values --help lists: {a,b,c} in the spec, or a description ending in ': a, b, c'."""
        m = re.search(r"\{([^}]*)\}", self.spec)
        if m:
            return m.group(1).split(",")
        m = re.search(r": ([a-z0-9][a-z0-9-]*(?:, [a-z0-9][a-z0-9-]*){2,})$", self.description)
        return m.group(1).split(", ") if m and self.spec else []

    @property
    def takes_path(self):
        """A value that names a file or directory: the help says so (DIR/<step id>.npy, "a directory")."""
        return bool(self.spec) and re.search(r"\b(DIR|FILE|file|directory|path)\b", self.description) is not None


@dataclass
class Help:
    description: str
    usage: str                                    # "attn run [OPTIONS] file"
    sections: list = field(default_factory=list)  # [(title, [Entry])]
    footer: list = field(default_factory=list)    # the NARROW rendering's lines

    def entries(self, title):
        return next((e for t, e in self.sections if t == title), [])


@dataclass
class Cli:
    version: str      # "attn 0.1.0"
    top: Help
    subcommands: dict  # name -> Help, in --help's order


def fail(message):
    sys.exit(f"cli_help: {message}")


def help_text(attn, args, columns):
    env = dict(os.environ, COLUMNS=str(columns), LC_ALL="C.UTF-8")
    r = subprocess.run([attn, *args, "--help"], env=env, capture_output=True, text=True, encoding="utf-8")
    if r.returncode != 0:
        fail(f"{attn} {' '.join(args)} --help: exit code {r.returncode}: {r.stderr.strip()}")
    return r.stdout


def chunks(lines):
    """Blank-line separated groups of lines."""
    out, cur = [], []
    for line in lines:
        if line.strip():
            cur.append(line)
        elif cur:
            out.append(cur)
            cur = []
    if cur:
        out.append(cur)
    return out


def description_column(lines):
    """Where entry descriptions start: -h,--help's "Print this help..." is in every help."""
    for line in lines:
        if line.startswith("  -h,--help "):
            return len(line) - len(line[len("  -h,--help"):].lstrip())
    fail("no '-h,--help' entry in the help")


def section_entries(chunk, col):
    """The entries of a chunk that is a section (a "Title:" line, then entries in the description
    column), or None where the chunk is not one (the footer's examples look alike at a glance)."""
    if not re.fullmatch(r"[A-Z][\w ]*:", chunk[0]) or len(chunk) < 2:
        return None
    entries, pending = [], None
    for i, line in enumerate(chunk[1:], start=1):
        nxt = chunk[i + 1] if i + 1 < len(chunk) else ""
        if line.startswith(" " * col):  # a description goes on (choices' lines hang two further in)
            if pending is None:
                return None
            pending.description = (pending.description + " " + line.strip()).strip()
            continue
        if not (line.startswith("  ") and line[2:3].strip()):
            return None
        # a head too long for the column ("--precision INT:INT in [0 - 12]"): its description is the next
        # line, in the column (a description does not wrap at WIDE columns; choices' lines hang further in)
        if len(line) > col and nxt[:col].strip() == "" and nxt[col:col + 1].strip():
            head, desc = line[2:].rstrip(), ""
        # (a long name and spec, "text TEXT Excludes: --texts", may fill the column up to its one space)
        elif len(line) > col and line[col - 1] == " " and line[col].strip():
            head, desc = line[2:col].rstrip(), line[col:].strip()
        elif nxt.startswith(" " * col) or len(line) < col:
            head, desc = line[2:].rstrip(), ""
        else:
            return None
        if "  " in head:  # names and spec are one-space separated; an example's comment column is not
            return None
        names, _, spec = head.partition(" ")
        pending = Entry(names.split(","), spec.strip(), desc)
        entries.append(pending)
    return entries


def split_help(text, section_count=None):
    """(description, usage, sections, footer lines) of one rendering. With section_count (how many
    sections the WIDE rendering has), the groups after that many are the footer, unread: at NARROW
    width an entry's long head ("--texts TEXT Excludes: text") runs into its description, so that
    rendering's sections cannot be told from a footer by their look."""
    lines = text.rstrip("\n").split("\n")
    usage_at = next((i for i, l in enumerate(lines) if l.startswith("Usage: ")), None)
    if usage_at is None:
        fail("no 'Usage:' line in the help")
    description = " ".join(l.strip() for l in lines[:usage_at])
    col = description_column(lines)
    sections, groups = [], chunks(lines[usage_at + 1:])
    footer_at = len(groups) if section_count is None else section_count
    for n, group in enumerate(groups[:footer_at]):
        entries = section_entries(group, col) if section_count is None else []
        if entries is None:
            footer_at = n
            break
        sections.append((group[0][:-1], entries))
    footer = [l for g in groups[footer_at:] for l in g + [""]][:-1]
    return description, lines[usage_at][len("Usage: "):], sections, footer


def read_help(attn, args):
    description, usage, sections, _ = split_help(help_text(attn, args, WIDE))
    if not sections:
        fail(f"attn {' '.join(args)} --help: no section of options read (has its layout changed?)")
    narrow_sections = split_help(help_text(attn, args, NARROW), len(sections))[2]
    if [t for t, _ in narrow_sections] != [t for t, _ in sections]:
        fail(f"attn {' '.join(args)} --help: its sections at {NARROW} columns are not those at {WIDE}: "
             f"{[t for t, _ in narrow_sections]} against {[t for t, _ in sections]}")
    footer = split_help(help_text(attn, args, NARROW), len(sections))[3]
    return Help(description, usage, sections, footer)


def read_cli(attn):
    r = subprocess.run([attn, "--version"], capture_output=True, text=True)
    if r.returncode != 0 or not r.stdout.strip():
        fail(f"{attn} --version: exit code {r.returncode}")
    top = read_help(attn, [])
    names = [e.names[0] for e in top.entries("Subcommands")]
    if not names:
        fail("no 'Subcommands:' section in attn --help")
    return Cli(r.stdout.strip(), top, {name: read_help(attn, [name]) for name in names})
