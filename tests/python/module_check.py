#!/usr/bin/env python3
"""attn_tracer, the Python module, against the attn command and on its own terms.

    module_check.py ATTN REPO      (PYTHONPATH must reach build/python)

- run() on every example gives the arrays of `attn run --format json`, bit for bit;
- a dict with NumPy arrays (float32, float64, int) or nested lists is the same input as its JSON;
- a complex array, a 3-D weight, NaN in a weight, a missing file raise InputError naming the path,
  and nothing is written to stderr; the interpreter goes on;
- 1000 run() calls do not grow the process's memory; two threads running at once get the right
  results, and the library releases the GIL while it computes;
- check, diff, diagnose and heads return the CLI's fields.
"""
import glob
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time

from checks import check, import_module, outcome

np, attn_tracer = import_module()


def cli_arrays(attn, path, extra=()):
    doc = json.loads(subprocess.run([attn, "run", path, "--format", "json", *extra], capture_output=True, text=True, check=True).stdout)
    conv = lambda v: float(v) if not isinstance(v, str) else float(v.replace("nan", "nan"))  # "inf", "-inf", "nan"
    out = {}
    for s in doc["steps"]:
        out[s["id"]] = np.array(json.loads(json.dumps(s["data"]), parse_constant=float), dtype=object)
    return doc, {k: np.vectorize(conv, otypes=[np.float32])(v) if v.size else v.astype(np.float32) for k, v in out.items()}


def main(argv):
    attn, repo = argv[1], argv[2]
    examples = sorted(glob.glob(os.path.join(repo, "examples", "*.json")))
    print(f"== run() against attn run --format json: {len(examples)} examples")
    same = 0
    for path in examples:
        doc, want = cli_arrays(attn, path)
        t = attn_tracer.run(path)
        bad = [sid for sid, w in want.items()
               if sid not in t.steps or t.steps[sid].array.shape != w.shape or t.steps[sid].array.dtype != np.float32
               or not np.array_equal(t.steps[sid].array, w, equal_nan=True)]
        if list(t.steps) != [s["id"] for s in doc["steps"]]:
            bad.append("the step order")
        if bad:
            check(False, f"{os.path.relpath(path, repo)}: {bad[:4]} differ from the CLI's")
        same += not bad
    check(same == len(examples), f"{same} of {len(examples)} examples bit-identical to the CLI's JSON trace, every step")

    print("== dicts, NumPy arrays and nested lists")
    x = [[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]]
    base = {"sentence": "cat sat", "mode": "self", "embeddings": x, "weights": {"W_q": "identity", "W_k": "identity", "W_v": "identity"}}
    ref = attn_tracer.run(json.dumps(base)).steps["weights"].array
    for name, emb in (("float32", np.array(x, dtype=np.float32)), ("float64", np.array(x)), ("int", np.array(x, dtype=np.int64)),
                      ("nested lists", x)):
        got = attn_tracer.run(dict(base, embeddings=emb)).steps["weights"].array
        check(np.array_equal(got, ref), f"embeddings as {name}: the same weights as the JSON string's")
    w = {"W_q": np.eye(3), "W_k": np.eye(3, dtype=np.float32), "W_v": [[1, 0, 0], [0, 1, 0], [0, 0, 1]]}
    check(np.array_equal(attn_tracer.run(dict(base, weights=w)).steps["weights"].array, ref), "weights given as arrays and lists")
    arr = attn_tracer.run(base).steps["weights"].array
    arr[0, 0] = 42
    check(attn_tracer.run(base).steps["weights"].array[0, 0] != 42, "a step's array is the caller's own copy")

    print("== a misspelt step id: KeyError naming it and the nearest id; str(trace) is the walkthrough")
    t = attn_tracer.run(base)
    for name, lookup in (("trace.steps['weigths']", lambda: t.steps["weigths"]), ("trace['weigths']", lambda: t["weigths"])):
        try:
            lookup()
            check(False, f"{name} raises KeyError")
        except KeyError as e:
            check("no step 'weigths' in this trace; did you mean 'weights'? (the steps: x, q, k, v" in str(e), f"{name}: {e}")
    check(t.steps.get("weigths") is None and "weights" in t.steps, "steps is still a mapping: get() and in")
    check(str(t) == t.text() and str(t).startswith(t.text()[:20]) and "Attention weights" in str(t), "str(trace) is trace.text()")

    print("== bad input: InputError naming the path, nothing on stderr")
    cases = [
        ("a complex array", dict(base, embeddings=np.array(x, dtype=np.complex64)), "embeddings: expected real numbers"),
        # (a 3-D weight is per-head [H, C, h]: one whose C is not the embeddings' 3 is refused)
        ("a 3-D weight of the wrong width", dict(base, weights={"W_q": np.zeros((2, 4, 3)), "W_k": "identity", "W_v": "identity"}), "weights.W_q"),
        ("NaN in a weight", dict(base, weights={"W_q": [[1, 0, 0], [0, float("nan"), 0], [0, 0, 1]], "W_k": "identity", "W_v": "identity"}),
         "weights.W_q[1][1]"),
        ("a missing file", "no/such/input.json", "no/such/input.json"),
        ("a mistake that does not exist", None, "mistake=\"sign-flip-everything\": no such mistake"),
    ]
    for what, spec, needle in cases:
        r, w = os.pipe()
        saved = os.dup(2)
        os.dup2(w, 2)
        try:
            if spec is None:
                attn_tracer.run(base, mistake="sign-flip-everything")
            else:
                attn_tracer.run(spec)
            err = None
        except attn_tracer.InputError as e:
            err = e
        finally:
            os.dup2(saved, 2)
            os.close(w)
        stderr = os.read(r, 10000).decode()
        os.close(r)
        ok = err is not None and isinstance(err, ValueError) and needle in str(err) and stderr == ""
        check(ok, f"{what}: {type(err).__name__ if err else 'no error'}: {str(err)[:120]}" + (f" (stderr: {stderr!r})" if stderr else ""))

    print("== 1000 runs, two threads")
    for _ in range(50):
        attn_tracer.run(base)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for _ in range(1000):
        t = attn_tracer.run(base)
        t.text()
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    check(grown < 4096, f"1000 run() and text() calls: peak memory grew by {grown} KB (< 4 MB)")
    big = os.path.join(repo, "examples", "shape_flow_2x4x512.json")
    want = attn_tracer.run(big).steps["output"].array
    results = []
    threads = [threading.Thread(target=lambda: results.append(attn_tracer.run(big).steps["output"].array)) for _ in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    check(len(results) == 2 and all(np.array_equal(r, want) for r in results), "two threads at once: each gets the single thread's output")
    # while a run computes in a thread, this thread keeps running Python: the GIL is released
    done, ticks = [], 0
    th = threading.Thread(target=lambda: done.append([attn_tracer.run(big) for _ in range(5)]))
    start = time.perf_counter()
    th.start()
    while not done:
        ticks += 1
    th.join()
    check(ticks > 1000, f"the main thread ran {ticks} loop iterations during {time.perf_counter() - start:.2f} s of runs (the GIL released)")

    t = attn_tracer.run(os.path.join(repo, "examples", "window_3.json"), flash="2x3")
    cli = subprocess.run([attn, "run", os.path.join(repo, "examples", "window_3.json"), "--flash", "2x3", "--width", "80"],
                         capture_output=True, text=True, env=dict(os.environ, COLUMNS="80")).stdout
    check(t.flash_max_diff is not None and t.flash_max_diff <= 1e-5 and t.text(80) == cli, "flash=\"2x3\": the tiled pass, as attn run --flash 2x3 prints it")

    print("== check, diff, diagnose, heads")
    # backward: the same trace as attn backward --format json, every step bit for bit
    path = os.path.join(repo, "examples", "cat_sat_backward.json")
    b = attn_tracer.backward(path)
    doc = json.loads(subprocess.run([attn, "backward", path, "--format", "json"], capture_output=True, text=True, check=True).stdout)
    same = all(np.array_equal(b.steps[s["id"]].array, np.array(s["data"], dtype=np.float32)) for s in doc["steps"])
    check(same and len(b.steps) == len(doc["steps"]) and "grad.x" in b.steps, "backward(): the same steps as attn backward, bit for bit")
    m = attn_tracer.backward(path, mistake="backward-dx-one-path")
    check(not np.array_equal(m.steps["grad.x"].array, b.steps["grad.x"].array), "backward(mistake=...): the student's grad.x")
    c = attn_tracer.check(os.path.join(repo, "examples", "masked_4x4.json"))
    check(c.ok is False and c.differences == 9 and c.checked == 48 and "differ" in str(c), f"check masked_4x4: {c!r}")
    c = attn_tracer.check(os.path.join(repo, "examples", "cat_sat.json"))
    check(c.ok is True, f"check cat_sat: {c!r}")
    a = attn_tracer.run(os.path.join(repo, "examples", "cat_sat.json"))
    b = {sid: s.array.copy() for sid, s in a.steps.items()}
    d = attn_tracer.diff(a, b)
    check(d.ok and d.first_diverging is None, f"diff of a trace and a dict of its arrays: {d!r}")
    b["scaled"] = b["scaled"] + 0.5
    d = attn_tracer.diff(a, b)
    check(not d.ok and d.first_diverging == "scaled" and "scaled" in str(d), f"diff with scaled changed: {d!r}")
    spec = os.path.join(repo, "examples", "diagnose_causal_2heads.json")
    student = attn_tracer.run(spec, mistake="scale-missing")
    g = attn_tracer.diagnose(spec, {sid: s.array for sid, s in student.steps.items() if sid in ("scores", "weights", "output")})
    check(g.correct is False and g.mistake == "scale-missing", f"diagnose a student who skipped the scale: {g!r}")
    g = attn_tracer.diagnose(spec, attn_tracer.run(spec))
    check(g.correct is True and g.mistake is None, f"diagnose a correct student: {g!r}")
    h = attn_tracer.heads(os.path.join(repo, "examples", "tiny_gpt2.json"))
    with tempfile.TemporaryDirectory():
        cli = json.loads(subprocess.run([attn, "heads", os.path.join(repo, "examples", "tiny_gpt2.json"), "--format", "json"],
                                        capture_output=True, text=True, check=True).stdout)
    check(h.layers == cli["layers"] and h.summaries == cli["summaries"] and h.weights == cli["weights"], f"heads tiny_gpt2: the CLI's JSON, {h!r}")
    g = attn_tracer.decode(os.path.join(repo, "examples", "tiny_gpt2.json"), tokens=3, top=3)
    cli = json.loads(subprocess.run([attn, "decode", os.path.join(repo, "examples", "tiny_gpt2.json"), "--tokens", "3", "--top", "3",
                                     "--format", "json"], capture_output=True, text=True, check=True).stdout)
    check(g.agrees and g.generated == cli["generated"] and g.steps == cli["steps"], f"decode tokens=3: the CLI's JSON, {g!r}")
    g = attn_tracer.decode(os.path.join(repo, "examples", "llama_like.json"), prefill=3)
    check(g.agrees and g.prefill == 3 and len(g.rows) > 3 and "first decoded" in str(g), f"decode with a prefill of 3: {g!r}")
    html = attn_tracer.run(os.path.join(repo, "examples", "cat_sat.json"))._repr_html_()
    check(html.startswith("<iframe") and "sandbox=\"allow-scripts\"" in html and "http" not in html.split("srcdoc")[0],
          "a trace's notebook view: the self-contained page in a sandboxed frame")

    return outcome()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
