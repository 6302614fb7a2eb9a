#!/usr/bin/env python3
"""Every example command in every --help pastes into bash as it is, at any width: attn --help and each
subcommand's, at COLUMNS 30, 40, 60, 80 and 120. Checked: bash -n accepts each example (a transcript's
"$ " prompt set aside), a command broken over lines ends them in a backslash or a pipe, no line starts
with a pipe, and a list of commands holds only commands and "# " comments. Then every example runs
for real, as printed, in order (attn on PATH, in a scratch folder with the examples beside it, and
my_trace.json for attn diff's, a class/ made by attn exercise and a submissions/ folder of its
students' answers for attn grade's): none is a usage error, and the standard-input one prints the cat/sat
weights.

Usage: help_examples.py ATTN SOURCE_DIR
"""
import os
import re
import subprocess
import sys
import tempfile

attn, source = os.path.abspath(sys.argv[1]), sys.argv[2]
SUBCOMMANDS = ["", "run", "backward", "check", "diff", "diagnose", "exercise", "grade", "cost", "decode", "heads", "tokenize"]
WIDTHS = [30, 40, 60, 80, 120]
COMMAND = re.compile(r"^ {2,}(\$ )?(attn|echo) ")
failures = []


def help_text(sub, width):
    env = dict(os.environ, COLUMNS=str(width))
    return subprocess.run([attn] + ([sub] if sub else []) + ["--help"], env=env, capture_output=True, text=True, check=True).stdout


def examples(text, where):
    """The footer's example commands, each as (its lines joined, whether it is a transcript's "$ " line)."""
    lines = text.splitlines()
    start = next((i for i, l in enumerate(lines) if re.match(r"(Worked e|E)xamples?\b", l)), None)
    if start is None:
        failures.append(f"{where}: no example in the help")
        return []
    found, current, listing = [], None, False
    for line in lines[start:]:
        stripped = line.strip()
        if current is not None:  # the shell reads on
            current[0].append(line)
        elif stripped.startswith("|"):
            failures.append(f"{where}: a line starts with a pipe (bash: syntax error): {line!r}")
        elif COMMAND.match(line):
            current = ([line], line.lstrip().startswith("$ "))
        elif listing and stripped and not stripped.startswith("#"):
            failures.append(f"{where}: a line of a list of commands is neither a command nor a # comment: {line!r}")
        if current is not None and not (stripped.endswith("\\") or stripped.endswith("|")):
            found.append(("\n".join(current[0]).replace("$ ", "", 1) if current[1] else "\n".join(current[0]), current[1]))
            listing = not current[1]  # a transcript's output follows a "$ " line; a list has commands only
            current = None
        elif not stripped:
            listing = False
    if current is not None:
        failures.append(f"{where}: the help ends inside a command: {current[0]!r}")
    return found


def run_for_real(command, where, env, folder):
    r = subprocess.run(["bash", "-c", command], cwd=folder, env=env, capture_output=True, text=True, timeout=60,
                       stdin=subprocess.DEVNULL)
    if r.returncode not in (0, 1):  # (attn check exits 1: the document it checks has errors)
        failures.append(f"{where}: exit {r.returncode} from\n{command}\n{r.stderr}")
    return r.stdout


def check_page(sub, width, env, scratch):
    """bash -n, then a real run, of each example of one --help page, in a folder of its own."""
    where = f"attn {sub + ' ' if sub else ''}--help at {width} columns"
    folder = os.path.join(scratch, f"{sub or 'attn'}-{width}")
    os.mkdir(folder)
    os.symlink(os.path.join(os.path.abspath(source), "examples"), os.path.join(folder, "examples"))
    with open(os.path.join(folder, "my_trace.json"), "w") as f:  # the reader's own trace, for attn diff's example
        subprocess.run([attn, "run", os.path.join(source, "examples", "cat_sat.json"), "--format", "json"], stdout=f, check=True)
    if sub == "grade":  # the lecturer's own class and the students' answers (each student's key, as a right answer)
        subprocess.run([attn, "exercise", os.path.join(source, "examples", "exercise_weights.json"), "--students", "3", "--out",
                        os.path.join(folder, "class")], capture_output=True, check=True)
        for sid in sorted(os.listdir(os.path.join(folder, "class"))):
            key = os.path.join(folder, "class", sid, "key.json")
            if os.path.isfile(key):
                os.makedirs(os.path.join(folder, "submissions", sid))
                os.link(key, os.path.join(folder, "submissions", sid, "answers.json"))
    stdin_runs = 0
    for command, _ in examples(help_text(sub, width), where):
        r = subprocess.run(["bash", "-n"], input=command, capture_output=True, text=True)
        if r.returncode != 0:
            failures.append(f"{where}: bash -n refuses\n{command}\n{r.stderr}")
            continue
        out = run_for_real(command, where, env, folder)
        if "attn run -" in command:
            stdin_runs += 1
            if not re.search(r"cat  0\.6405  0\.3595", out):
                failures.append(f"{where}: the standard-input example did not print the weights:\n{command}\n{out}")
    if sub == "" and stdin_runs != 1:
        failures.append(f"{where}: {stdin_runs} standard-input examples ran, expected 1")


with tempfile.TemporaryDirectory() as scratch:
    os.mkdir(os.path.join(scratch, "bin"))
    os.symlink(attn, os.path.join(scratch, "bin", "attn"))
    env = dict(os.environ, PATH=os.path.join(scratch, "bin") + os.pathsep + os.environ["PATH"], COLUMNS="80")
    for sub in SUBCOMMANDS:
        for width in WIDTHS:
            check_page(sub, width, env, scratch)

if failures:
    print("FAIL:\n" + "\n\n".join(failures))
    sys.exit(1)
print(f"ok: every example of attn --help and {len(SUBCOMMANDS) - 1} subcommands' --help, at {WIDTHS} columns, passes bash -n "
      "and runs as printed")
