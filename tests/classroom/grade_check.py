#!/usr/bin/env python3
"""attn grade on a class of 30 generated submissions with known mistakes: each mistake named, a tie
said, follow-through credited, a missing folder, NaN, a wrong shape, an unknown step, a folder not in
the roster, a .npy and a .csv submission; the JSON, CSV, HTML and Gradescope outputs read for their
values; the exit codes of the instructor's bad inputs.

  grade_check.py ATTN
"""
import csv
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_class import make_class, rounded, trace  # noqa: E402

ATTN = sys.argv[1]
ASK = ["scores", "weights", "context"]
FAILURES = []


def check(ok, what):
    if not ok:
        FAILURES.append(what)
        print("FAIL:", what)


# Each student's submission: the mistake simulated (None: the key's own values), and how it is saved.
PLAN = {
    "s06": ("softmax-wrong-axis", "json"), "s07": ("softmax-wrong-axis", "json"), "s08": ("scale-missing", "json"),
    "s09": ("scale-dk", "json"), "s10": ("mask-after-softmax", "json"), "s11": ("w-transposed", "json"),
    "s12": ("qk-swapped", "json"), "s13": ("heads-interleaved", "json"), "s14": ("scale-missing", "npy"),
    "s15": ("softmax-wrong-axis", "csv"), "s22": ("softmax-wrong-axis", "json"), "s23": ("scale-missing", "json"),
}


def run(*args, check_rc=None):
    p = subprocess.run([ATTN, *args], capture_output=True, text=True)
    if check_rc is not None:
        check(p.returncode == check_rc, "attn {}: exit {} (want {}); {}".format(" ".join(args), p.returncode, check_rc, p.stderr.strip()))
    return p


def save_json(folder, answers):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "answers.json"), "w") as f:
        json.dump(answers, f)  # (Python writes NaN bare, as a notebook would)


def asked(steps):
    return {s: rounded(steps[s], 2) for s in ASK}


def flat(values):
    return [x for v in values for x in flat(v)] if isinstance(values, list) else [values]


def submit_mistake(cls, subs, sid, mistake, form):
    problem = os.path.join(cls, sid, "problem.json")
    folder = os.path.join(subs, sid)
    if form == "json":
        save_json(folder, asked(trace(ATTN, problem, "--mistake", mistake)))
    elif form == "npy":
        dump = os.path.join(subs, "..", "dump-" + sid)
        run("run", problem, "--mistake", mistake, "--dump", dump, "--steps", "weights", check_rc=0)
        os.makedirs(folder)
        for s in ASK:  # only the asked steps, as a notebook would save them
            shutil.copy(os.path.join(dump, s + ".npy"), folder)
    else:
        steps = asked(trace(ATTN, problem, "--mistake", mistake))
        os.makedirs(folder)
        with open(os.path.join(folder, "answers.csv"), "w") as f:
            f.write("step,index,value\n")
            for s in ASK:
                for i, v in enumerate(flat(steps[s])):
                    f.write("{},{},{}\n".format(s, i, v))


def submit_special(cls, subs):
    """The submissions whose fault is not a mistake of the catalogue."""
    key = {sid: json.load(open(os.path.join(cls, sid, "key.json"))) for sid in ("s17", "s18", "s19", "s20", "s21")}
    nan = json.loads(json.dumps(key["s17"]))
    nan["weights"][0][1][0] = float("nan")
    save_json(os.path.join(subs, "s17"), nan)
    shape = json.loads(json.dumps(key["s18"]))
    shape["context"] = [row for head in shape["context"] for row in head]  # [6, 2] for [2, 3, 2]
    save_json(os.path.join(subs, "s18"), shape)
    unknown = json.loads(json.dumps(key["s19"]))
    unknown["scroes"] = unknown.pop("scores")
    save_json(os.path.join(subs, "s19"), unknown)
    # s20 slips once in the scores and goes on correctly from them: the weights and context follow
    problem = json.load(open(os.path.join(cls, "s20", "problem.json")))
    scores = key["s20"]["scores"]
    scores[0][2][1] = round(scores[0][2][1] + 1, 2)
    given = dict(problem, scores=[scores], scale=2 ** -0.5, v=[trace(ATTN, os.path.join(cls, "s20", "problem.json"))["v"]])
    for k in ("embeddings", "weights"):
        given.pop(k)
    with open(os.path.join(subs, "..", "s20-scores.json"), "w") as f:
        json.dump(given, f)
    steps = trace(ATTN, os.path.join(subs, "..", "s20-scores.json"))
    save_json(os.path.join(subs, "s20"), dict(asked(dict(steps, scores=scores))))
    # s21's weights are no mistake attn knows: every row reversed
    odd = json.loads(json.dumps(key["s21"]))
    odd["weights"] = [[row[::-1] for row in head] for head in odd["weights"]]
    save_json(os.path.join(subs, "s21"), odd)


def build(root):
    cls, subs = os.path.join(root, "class"), os.path.join(root, "subs")
    make_class(ATTN, cls, 30, 7, ASK)
    os.makedirs(subs)
    for i in range(1, 31):
        sid = "s{:02d}".format(i)
        if sid in PLAN:
            submit_mistake(cls, subs, sid, *PLAN[sid])
        elif sid not in ("s16", "s17", "s18", "s19", "s20", "s21"):  # s16 never submits
            save_json(os.path.join(subs, sid), json.load(open(os.path.join(cls, sid, "key.json"))))
    submit_special(cls, subs)
    save_json(os.path.join(subs, "s99"), {"scores": [[0]]})  # not in the roster
    return cls, subs


def step_of(student, step):
    return next(s for s in student["steps"] if s["step"] == step)


def check_students(report):
    by = {s["id"]: s for s in report["students"]}
    for sid in ("s01", "s02", "s03", "s04", "s05"):
        check(by[sid]["score"] == 3 and by[sid]["max_score"] == 3, "{} correct: 3 / 3, got {}".format(sid, by[sid]["score"]))
    for sid, (mistake, form) in PLAN.items():
        named = [s["mistake"] for s in by[sid]["steps"] if s["mistake"]]
        want = "scale-sqrt-c or scale-dk" if mistake == "scale-dk" else mistake
        check(named and named[0] == want, "{} ({} via {}): named {}, want {}".format(sid, mistake, form, named, want))
    s06 = by["s06"]
    check(step_of(s06, "weights")["score"] < 1 and step_of(s06, "context")["follows_from"] == "weights" and step_of(s06, "context")["score"] == 1,
          "s06: the context follows from the wrong weights: {}".format(s06["steps"]))
    check("softmax was taken over the queries" in step_of(s06, "weights")["message"], "s06's sentence: " + step_of(s06, "weights")["message"])
    check("matches two mistakes equally" in step_of(by["s09"], "weights")["message"], "s09's tie: " + step_of(by["s09"], "weights")["message"])
    check(step_of(by["s09"], "weights")["tied"] == ["scale-sqrt-c", "scale-dk"], "s09's tied list")
    check(by["s14"]["source"] == "3 .npy files" and by["s15"]["source"] == "answers.csv", "s14 .npy, s15 .csv read")
    check(not by["s16"]["submitted"] and by["s16"]["score"] == 0 and "nothing submitted" in by["s16"]["problems"][0], "s16 missing: " + str(by["s16"]))
    check(any("1 of 18 values are NaN" in p for p in by["s17"]["problems"]) and step_of(by["s17"], "weights")["right"] == 17, "s17 NaN: " + str(by["s17"]))
    check(any("shape [6, 2] where the question's is [2, 3, 2]" in p for p in by["s18"]["problems"]) and by["s18"]["score"] == 2, "s18 shape: " + str(by["s18"]))
    check(any('"scroes" is not an asked step (did you mean "scores"?)' in p for p in by["s19"]["problems"])
          and step_of(by["s19"], "scores")["message"] == "no answer" and by["s19"]["score"] == 2, "s19 unknown step: " + str(by["s19"]))
    s20 = by["s20"]
    check(step_of(s20, "scores")["right"] == 17 and step_of(s20, "weights")["follows_from"] == "scores"
          and step_of(s20, "context")["follows_from"] in ("weights", "scores") and abs(s20["score"] - (17 / 18 + 2)) < 1e-4, "s20 follows: " + str(s20["steps"]))
    check("no known mistake reproduces it" in step_of(by["s21"], "weights")["message"], "s21 unknown: " + str(by["s21"]["steps"]))


def check_summary(report):
    s = report["summary"]
    check(s["students"] == 30 and s["submitted"] == 29 and s["missing"] == ["s16"] and s["not_in_roster"] == ["s99"], "summary counts: " + str(s)[:300])
    top = s["mistakes"][0]
    check(top["mistake"] == "softmax-wrong-axis" and top["count"] == 4 and top["students"] == ["s06", "s07", "s15", "s22"], "top mistake: " + str(top))
    check(sum(b["count"] for b in s["histogram"]) == 30 and s["histogram"][-1]["to"] == 3, "histogram: " + str(s["histogram"]))
    rates = {r["step"]: r["success_rate"] for r in s["steps"]}
    check(0 < rates["weights"] < rates["scores"] <= 1, "step rates: " + str(rates))


def check_outputs(cls, subs, report, root):
    gb = list(csv.DictReader(io.StringIO(run("grade", cls, subs, "--format", "csv", check_rc=0).stdout)))
    check([r["id"] for r in gb] == ["s{:02d}".format(i) for i in range(1, 31)] and list(gb[0].keys())[4:7] == ASK, "gradebook rows and columns")
    row = next(r for r in gb if r["id"] == "s06")
    check(row["score"] == "2.33" and row["weights"] == "0.33" and row["context"] == "1" and "weights: softmax-wrong-axis" in row["mistakes"], "gradebook s06: " + str(row))
    html = run("grade", cls, subs, "--format", "html", check_rc=0).stdout
    check(html.count("<svg") == 2 and html.count('class="bin"') == 10 and "softmax-wrong-axis" in html and 'id="student-s30"' in html, "html charts and reports")
    check("http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "") and "https://" not in html and "<script" not in html, "html offline")
    out = os.path.join(root, "gs")
    run("grade", cls, subs, "--gradescope", out, "--format", "json", check_rc=0)
    r = json.load(open(os.path.join(out, "s06", "results.json")))
    check(r["score"] == 2.3333 and r["max_score"] == 3 and [t["name"] for t in r["tests"]] == ASK, "gradescope s06: " + str(r)[:200])
    check(all(set(t) == {"name", "score", "max_score", "output"} for t in r["tests"]) and "softmax-wrong-axis" in r["tests"][1]["output"], "gradescope tests")
    check("nothing submitted" in json.load(open(os.path.join(out, "s16", "results.json")))["output"], "gradescope s16 output")
    run("grade", cls, subs, "--gradescope", out, check_rc=0)  # attn's own earlier output is replaced
    mine = os.path.join(root, "mine")
    os.makedirs(mine)
    open(os.path.join(mine, "notes.txt"), "w").write("mine")
    check("--gradescope" in run("grade", cls, subs, "--gradescope", mine, check_rc=2).stderr, "--gradescope refuses a folder of the user's")
    check(open(os.path.join(mine, "notes.txt")).read() == "mine", "the user's file is left alone")


def check_bad_inputs(cls, subs, root):
    check("class.json: no such file" in run("grade", subs, subs, check_rc=2).stderr, "no class.json")
    broken = os.path.join(root, "broken")
    shutil.copytree(cls, broken)
    manifest = json.load(open(os.path.join(broken, "class.json")))
    manifest["ask"] = ["scores", "weigths"]
    json.dump(manifest, open(os.path.join(broken, "class.json"), "w"))
    err = run("grade", broken, subs, check_rc=2).stderr
    check("class.json: ask[1]" in err and 'did you mean "weights"' in err, "broken class.json: " + err)
    manifest["ask"] = ASK
    json.dump(manifest, open(os.path.join(broken, "class.json"), "w"))
    json.dump({"scores": [[1]]}, open(os.path.join(broken, "s03", "key.json"), "w"))
    err = run("grade", broken, subs, check_rc=2).stderr
    check("s03/key.json: scores: shape [1, 1]" in err, "broken key.json: " + err)
    check("class.json" in run("grade", "--help", check_rc=0).stdout, "--help")
    check("no such directory" in run("grade", cls, os.path.join(root, "nowhere"), check_rc=2).stderr, "no SUBMISSIONS")


def main():
    root = tempfile.mkdtemp(prefix="attn-grade-")
    try:
        cls, subs = build(root)
        p = run("grade", cls, subs, "--format", "json", check_rc=0)
        report = json.loads(p.stdout)
        check_students(report)
        check_summary(report)
        check_outputs(cls, subs, report, root)
        check_bad_inputs(cls, subs, root)
        text = run("grade", cls, subs, "--threads", "1", "--format", "json", check_rc=0).stdout
        check(text == p.stdout, "one thread gives the same report as two")
    finally:
        shutil.rmtree(root)
    if FAILURES:
        print("{} failures".format(len(FAILURES)))
        sys.exit(1)
    print("attn grade: 30 students graded, every mistake named")


main()
