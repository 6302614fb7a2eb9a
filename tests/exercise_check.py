#!/usr/bin/env python3
"""attn exercise end to end, as a lecturer runs it: a template for N = 30 and for a roster CSV.
Checked: every key.json equals `attn run problem.json --format json` rounded to the decimals (within
half a unit: a float32 value and its printed shortest form may round apart at a half); no two
students share a variant, and no asked row of weights ties; a rerun writes byte-identical files; the
variant code regenerates a student's problem.json byte for byte; moodle.xml parses with one numerical
question per asked value and its tolerance, class.gift holds the same answers; key.csv and class.json
follow the contract attn grade reads; the pages are offline and class.html prints a page per student
(headless Chromium, where installed);
a folder that is not empty is refused without --force, and --force leaves other files alone.

Usage: exercise_check.py ATTN SOURCE_DIR
"""
import csv
import filecmp
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

attn, source = os.path.abspath(sys.argv[1]), sys.argv[2]
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)


def attn_run(*args, cwd=None):
    return subprocess.run([attn, *args], capture_output=True, text=True, cwd=cwd)


def flatten(x):
    return [v for e in x for v in flatten(e)] if isinstance(x, list) else [x]


def number(v):
    return float(v) if not isinstance(v, str) else {"-inf": float("-inf"), "inf": float("inf")}.get(v, float("nan"))


def rounds_to(exact, answer, decimals):
    """Whether answer is exact rounded to the decimals; at a half (within float32's error of the printed
    shortest form) either neighbour."""
    scaled = exact * 10 ** decimals
    if abs(abs(scaled - math.floor(scaled)) - 0.5) < 1e-4:
        return abs(answer - exact) <= 0.5 * 10 ** -decimals + 1e-7
    return abs(answer - float(f"{exact:.{decimals}f}")) < 1e-9


def check_keys(out, manifest):
    """Each key.json against the student's own problem traced by attn run, rounded."""
    half = 0.5 * 10 ** -manifest["decimals"]
    for s in manifest["students"]:
        folder = os.path.join(out, s["id"])
        raw = open(os.path.join(folder, "key.json")).read()
        printed = re.findall(r"(?<![\w.])-?\d+(?:\.(\d+))?(?![\w.])", raw)
        check(all(len(p) == manifest["decimals"] for p in printed), f"{s['id']}/key.json: a number not to {manifest['decimals']} decimals")
        key = json.loads(raw)
        check(list(key) == manifest["ask"], f"{s['id']}: key.json's steps {list(key)}")
        trace = json.loads(attn_run("run", os.path.join(folder, "problem.json"), "--format", "json").stdout)
        steps = {st["id"]: st for st in trace["steps"]}
        for step, answers in key.items():
            exact = flatten(steps[step]["data"])
            shape = steps[step]["shape"]
            check(len(flatten(answers)) == len(exact) and len(answers) == shape[0], f"{s['id']} {step}: the key's shape is not {shape}")
            for a, e in zip(flatten(answers), exact):
                a, e = number(a), number(e)
                check(a == e if a in (float("inf"), float("-inf")) else rounds_to(e, a, manifest["decimals"]), f"{s['id']} {step}: key {a} for the computed {e}")
            if step == "weights":
                for row in (r for r in (exact if len(shape) == 1 else [exact[i:i + shape[-1]] for i in range(0, len(exact), shape[-1])])):
                    top = sorted((number(v) for v in row), reverse=True)
                    check(len(top) < 2 or top[0] - top[1] > half, f"{s['id']}: a tie in a row of weights {row}")


def check_quizzes(out, manifest):
    values = [v for s in manifest["students"] for step in manifest["ask"]
              for v in flatten(json.load(open(os.path.join(out, s["id"], "key.json")))[step])]
    blocked = sum(isinstance(v, str) for v in values)  # -inf: a short answer, not a number
    n_values = len(values) - blocked
    quiz = ET.parse(os.path.join(out, "moodle.xml")).getroot()
    numerical = quiz.findall("question[@type='numerical']")
    check(len(numerical) == n_values, f"moodle.xml: {len(numerical)} numerical questions for {n_values} asked values")
    check(len(quiz.findall("question[@type='shortanswer']")) == blocked, f"moodle.xml: not a short answer per blocked value ({blocked})")
    tolerances = {q.find("answer/tolerance").text for q in numerical}
    check(tolerances == {str(manifest["tolerance"])}, f"moodle.xml: tolerances {tolerances}")
    gift = open(os.path.join(out, "class.gift"), encoding="utf-8").read()
    answers = re.findall(r"\{#(-?[0-9.]+):([0-9.]+)\}", gift)
    check(len(answers) == n_values, f"class.gift: {len(answers)} numerical answers for {n_values}")
    rows = [r for r in csv.DictReader(open(os.path.join(out, "key.csv"), newline="")) if r["value"] != "-inf"]
    check(len(rows) == n_values, f"key.csv: {len(rows)} finite rows for {n_values}")
    check([a[0] for a in answers] == [r["value"] for r in rows], "class.gift's answers are not key.csv's values, in order")
    check([q.find("answer/text").text for q in numerical] == [r["value"] for r in rows], "moodle.xml's answers are not key.csv's")


def check_pages(out, manifest):
    page = open(os.path.join(out, "class.html"), encoding="utf-8").read()
    check(page.count('<section class="handout">') == len(manifest["students"]), "class.html: not a section per student")
    check("break-after: page" in page and "page-break-after: always" in page, "class.html: no page break between handouts")
    for s in manifest["students"][:3]:
        html = open(os.path.join(out, s["id"], "handout.html"), encoding="utf-8").read()
        check(not re.search(r"(src|href)\s*=|https?:|@import|<script", html), f"{s['id']}/handout.html reaches out of the page")
        check(s["variant"] in html and (s["name"] or s["id"]) in html, f"{s['id']}/handout.html: no name or variant code")
        md = open(os.path.join(out, s["id"], "handout.md"), encoding="utf-8").read()
        check(all(f"{step}:" in md for step in manifest["ask"]), f"{s['id']}/handout.md: an asked step missing")


def check_printed_pages(out, manifest):
    """class.html printed by headless Chromium: a page per student (skipped, saying so, without it)."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        print("SKIPPED the printed pages: chromium is not installed")
        return
    pdf = os.path.join(out, "..", "class.pdf")
    with tempfile.TemporaryDirectory(prefix="attn-chromium-") as profile:
        subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}", f"--print-to-pdf={pdf}",
                        "file://" + os.path.abspath(os.path.join(out, "class.html"))], capture_output=True, timeout=120)
    pages = len(re.findall(rb"/Type\s*/Page[^s]", open(pdf, "rb").read())) if os.path.exists(pdf) else 0
    check(pages == len(manifest["students"]), f"class.html prints as {pages} pages for {len(manifest['students'])} students")


def make_class(template, students, out, seed="2026"):
    r = attn_run("exercise", template, "--students", students, "--out", out, "--seed", seed)
    check(r.returncode == 0, f"attn exercise {students}: exit {r.returncode}: {r.stderr}")
    manifest = json.load(open(os.path.join(out, "class.json")))
    check(manifest["attn_exercise"] == 1 and manifest["seed"] == int(seed) and manifest["template"] == template,
          f"class.json's header: {manifest}")
    variants = [s["variant"] for s in manifest["students"]]
    check(len(set(variants)) == len(variants), "two students share a variant code")
    problems = [open(os.path.join(out, s["id"], "problem.json")).read() for s in manifest["students"]]
    drawn = [json.dumps({k: v for k, v in json.loads(p).items() if k != "exercise"}) for p in problems]
    check(len(set(drawn)) == len(drawn), "two students share a variant's numbers")
    return manifest


def main():
    template = os.path.join(source, "examples", "exercise_weights.json")
    with tempfile.TemporaryDirectory() as tmp:
        out30, again = os.path.join(tmp, "class30"), os.path.join(tmp, "again")
        manifest = make_class(template, "30", out30)
        check([s["id"] for s in manifest["students"]] == [f"{i:02}" for i in range(1, 31)], "N = 30: ids 01 … 30")
        check_keys(out30, manifest)
        check_quizzes(out30, manifest)
        check_pages(out30, manifest)
        make_class(template, "30", again)
        cmp = filecmp.dircmp(out30, again)
        diffs = cmp.diff_files + [f for sub in cmp.subdirs.values() for f in sub.diff_files] + cmp.left_only + cmp.right_only
        check(not diffs, f"a rerun differs: {diffs}")
        for s in (manifest["students"][0], manifest["students"][17]):
            r = attn_run("exercise", template, "--variant", s["variant"].lower())
            check(r.stdout == open(os.path.join(out30, s["id"], "problem.json")).read(), f"--variant {s['variant']} is not {s['id']}'s problem")
        # a roster: names and ids as given, in its order
        roster = os.path.join(tmp, "roster.csv")
        open(roster, "w").write('id,name\nada,"Lovelace, Ada"\nalan,Alan Turing\ngrace,Grace Hopper\n')
        out_roster = os.path.join(tmp, "roster_class")
        m = make_class(template, roster, out_roster, seed="7")
        check([(s["id"], s["name"]) for s in m["students"]] == [("ada", "Lovelace, Ada"), ("alan", "Alan Turing"), ("grace", "Grace Hopper")],
              f"roster order and names: {m['students']}")
        check_keys(out_roster, m)
        check_quizzes(out_roster, m)
        check_pages(out_roster, m)
        # a handout far shorter than a page still prints on a page of its own
        tiny = os.path.join(tmp, "tiny.json")
        open(tiny, "w").write('{"tokens": ["a", "b"], "scores": [[1, 0], [0, 1]], "exercise": {"ask": ["weights"]}}')
        out_tiny = os.path.join(tmp, "tiny")
        check_printed_pages(out_tiny, make_class(tiny, "3", out_tiny))
        # a causal template: blocked scores are -inf in the key, short answers in Moodle
        causal = os.path.join(source, "examples", "exercise_causal.json")
        out_causal = os.path.join(tmp, "causal")
        mc = make_class(causal, "5", out_causal)
        check_keys(out_causal, mc)
        check_quizzes(out_causal, mc)
        check('"-inf"' in open(os.path.join(out_causal, "01" if len(mc["students"]) > 9 else "1", "key.json")).read(), "causal: no -inf in the key")
        # a folder that is not empty: refused, then --force writes beside the lecturer's own file
        r = attn_run("exercise", template, "--students", "3", "--out", out_roster)
        check(r.returncode == 2 and "--force" in r.stderr, f"a non-empty --out: exit {r.returncode} {r.stderr}")
        open(os.path.join(out_roster, "notes.txt"), "w").write("mine")
        r = attn_run("exercise", template, "--students", roster, "--out", out_roster, "--seed", "7", "--force")
        check(r.returncode == 0 and open(os.path.join(out_roster, "notes.txt")).read() == "mine", "--force touched another file")
    for f in failures:
        print("FAIL", f)
    print(f"{len(failures)} failure(s)" if failures else "ok: attn exercise for 30 students and a roster; keys, quizzes, pages, reruns, --variant")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
