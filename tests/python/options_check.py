#!/usr/bin/env python3
"""attn_tracer's options refused as the CLI refuses them, and NaN named as NaN.

    options_check.py ATTN REPO      (PYTHONPATH must reach build/python)

- every keyword of every function goes through the library's checks, the CLI's: a head, batch, step,
  precision, width, token count, top, prefill, tile size, mistake, backend, tolerance or memory limit
  out of range raises InputError with the CLI's message, the keyword spelled as in Python
  ("head=2: this trace has H = 2 (heads 0 .. 1)" where attn says "--head 2: ...");
- a value of the wrong type (head='1', head=1.5, head=True, precision='4') and an unknown keyword
  raise TypeError naming it, with "did you mean" where one is close;
- NaN and Infinity are named as such: in JSON text (with the JSON path, and what to write instead) and
  from NumPy arrays; a printed value's exponent beyond an int is read;
- a student's own arrays stay a diagnosis: their NaN or shape is reported, not refused;
- predict=True: the page (trace.html(), and the notebook's view) asks before the spec's
  exercise.predict steps (the weights by default), refused as attn run --predict is.
"""
import json
import math
import os
import subprocess
import sys

from checks import check, import_module, outcome

np, attn_tracer = import_module()


def raised(call):
    """(exception type name, message) of call(), or ("returned", "") when it returns."""
    try:
        call()
    except Exception as e:  # the test is which one
        return type(e).__name__, str(e)
    return "returned", ""


def refuses(call, kind, message, what, exact=True):
    got, text = raised(call)
    ok = got == kind and (text == message if exact else message in text)
    check(ok, f"{what}: {got}: {text[:160]}" + ("" if ok else f"  (expected {kind}: {message[:160]})"))


def cli_error(attn, repo, *args):
    r = subprocess.run([attn, *args], capture_output=True, text=True, cwd=repo)
    return r.returncode, r.stderr


def ranges(attn, repo, two_heads, batched, gpt2):
    print("== out of range: InputError, the CLI's message with the keyword's spelling")
    cat = os.path.join(repo, "examples", "cat_sat.json")
    refuses(lambda: attn_tracer.run(two_heads, head=2), "InputError", "head=2: this trace has H = 2 (heads 0 .. 1)", "run(head=2) on two heads")
    refuses(lambda: attn_tracer.run(two_heads, head=100000), "InputError", "head=100000: this trace has H = 2 (heads 0 .. 1)", "run(head=100000)")
    refuses(lambda: attn_tracer.run(two_heads, head=-1), "InputError", "head=-1: this trace has H = 2 (heads 0 .. 1)", "run(head=-1)")
    refuses(lambda: attn_tracer.run(batched, batch=7), "InputError", "batch=7: this trace has B = 2 (batch rows 0 .. 1)", "run(padding_batch2, batch=7)")
    refuses(lambda: attn_tracer.run(batched, batch=-2), "InputError", "batch=-2: this trace has B = 2 (batch rows 0 .. 1)", "run(batch=-2)")
    refuses(lambda: attn_tracer.run(two_heads, batch=3), "InputError",
            "batch=3: this trace has B = 1 (batch rows 0 .. 0; the input has no batch dimension)", "run(batch=3) on an unbatched input")
    refuses(lambda: attn_tracer.backward(two_heads, head=5), "InputError", "head=5: this trace has H = 2 (heads 0 .. 1)", "backward(head=5)")
    refuses(lambda: attn_tracer.run(cat, head=2**64), "InputError", f"head: {2**64} is beyond a 64-bit integer", "run(head=2**64)")
    refuses(lambda: attn_tracer.run(cat, head=-10**5000), "InputError", "head: an integer of 16610 bits is beyond a 64-bit integer", "run(head=-10**5000)")
    refuses(lambda: attn_tracer.diff({}, {}, atol=10**400), "InputError", "atol: expected a finite number, 0 or more, got inf", "diff(atol=10**400)")
    refuses(lambda: attn_tracer.run({"heads": 10**400}), "InputError", "heads: an integer of 1329 bits is out of range (a JSON number is at most about 1.8e308)",
            "run({'heads': 10**400})")
    refuses(lambda: attn_tracer.run(cat, precision=99), "InputError", "precision: expected 0 .. 12, got 99", "run(precision=99)")
    refuses(lambda: attn_tracer.backward(cat, precision=-1), "InputError", "precision: expected 0 .. 12, got -1", "backward(precision=-1)")
    refuses(lambda: attn_tracer.run(cat).text(width=3), "InputError", "width: expected 20 .. 1000, got 3", "Trace.text(width=3)")
    refuses(lambda: attn_tracer.run(cat).steps["weights"].text(5000), "InputError", "width: expected 20 .. 1000, got 5000", "Step.text(5000)")
    refuses(lambda: attn_tracer.run(cat, steps=["wieghts"]), "InputError", 'steps="wieghts": this trace has no step "wieghts" (did you mean "weights"?)',
            "run(steps=['wieghts'])", exact=False)
    refuses(lambda: attn_tracer.run(cat).svg(step="score"), "InputError", 'step="score": this trace has no step "score" (did you mean "scores"?)',
            "Trace.svg(step='score')", exact=False)
    refuses(lambda: attn_tracer.run(cat, flash="2x"), "InputError", 'flash="2x": expected BQxBK, two positive tile sizes such as 2x3 (queries × keys per tile)',
            "run(flash='2x')")
    refuses(lambda: attn_tracer.run(cat, flash="2x2", fused=True), "InputError",
            "flash: the tiled pass draws the scores and weights, which the fused pass never keeps; run without fused=True", "run(flash=, fused=True)")
    refuses(lambda: attn_tracer.run(cat, backend="gpu"), "InputError", 'backend="gpu": expected cpu or cuda', "run(backend='gpu')")
    refuses(lambda: attn_tracer.run(cat, mistake="scale-misssing"), "InputError", 'mistake="scale-misssing": no such mistake (did you mean "scale-missing"?)',
            "run(mistake='scale-misssing')", exact=False)
    refuses(lambda: attn_tracer.run(cat, mistake="backward-dx-one-path"), "InputError",
            'mistake="backward-dx-one-path": a mistake of the backward pass, which attn_tracer.backward simulates; attn_tracer.run simulates the forward',
            "run(mistake=<a backward mistake>)", exact=False)
    refuses(lambda: attn_tracer.run(cat, max_memory=0), "InputError", "max_memory: expected 1 or more, got 0", "run(max_memory=0)")
    refuses(lambda: attn_tracer.check(cat, max_memory="8X"), "InputError", 'max_memory="8X": expected a size such as 512M, 8G or 1000000 (bytes)',
            "check(max_memory='8X')")
    refuses(lambda: attn_tracer.run(cat, max_memory=100), "InputError", "this trace would keep", "run(max_memory=100): the trace's size refused",
            exact=False)
    refuses(lambda: attn_tracer.diff(attn_tracer.run(cat), attn_tracer.run(cat), atol=-1), "InputError", "atol: expected a finite number, 0 or more, got -1",
            "diff(atol=-1)")
    refuses(lambda: attn_tracer.diagnose(cat, attn_tracer.run(cat), rtol=math.nan), "InputError", "rtol: expected a finite number, 0 or more, got nan",
            "diagnose(rtol=nan)")
    refuses(lambda: attn_tracer.decode(gpt2, tokens=-1), "InputError", "tokens: expected 1 .. 4096, got -1", "decode(tokens=-1)")
    refuses(lambda: attn_tracer.decode(gpt2, tokens=0), "InputError", "tokens: expected 1 .. 4096, got 0", "decode(tokens=0)")
    refuses(lambda: attn_tracer.decode(gpt2, tokens=2, top=101), "InputError", "top: expected 1 .. 100, got 101", "decode(top=101)")
    refuses(lambda: attn_tracer.decode(gpt2, top=3), "InputError", "top: goes with tokens=N (the whole model writing N tokens)", "decode(top=3) without tokens")
    refuses(lambda: attn_tracer.decode(gpt2, tokens=2, prefill=2), "InputError", "prefill: with tokens the whole sentence is the prefill", "decode(tokens=, prefill=)",
            exact=False)
    refuses(lambda: attn_tracer.decode(gpt2, prefill=-1), "InputError", "prefill=-1: expected 1 ≤ P < T = 6 (P tokens in one causal pass, then T − P decoded one by one)",
            "decode(prefill=-1)")
    refuses(lambda: attn_tracer.heads(gpt2, max_memory=-5), "InputError", "max_memory: expected 1 or more, got -5", "heads(max_memory=-5)")

    print("== the same check through both doors: attn's message is Python's with the flag's spelling")
    for args, message in [(["run", "examples/cat_sat.json", "--precision", "99"], "--precision: expected 0 .. 12, got 99"),
                          (["run", "examples/cat_sat.json", "--width", "3"], "--width: expected 20 .. 1000, got 3"),
                          (["decode", "examples/tiny_gpt2.json", "--tokens", "-1"], "--tokens: expected 1 .. 4096, got -1"),
                          (["decode", "examples/tiny_gpt2.json", "--top", "3"], "--top: goes with --tokens N (the whole model writing N tokens)"),
                          (["decode", "examples/tiny_gpt2.json", "--prefill", "-1"], "--prefill -1: expected 1 ≤ P < T = 6"),
                          (["diff", "examples/cat_sat.json", "examples/cat_sat.json", "--atol", "-1"], "--atol: expected a finite number, 0 or more, got -1"),
                          (["run", "examples/diagnose_causal_2heads.json", "--head", "2"], "--head 2: this trace has H = 2 (heads 0 .. 1)"),
                          (["run", "examples/cat_sat.json", "--mistake", "backward-dx-one-path"],
                           "--mistake backward-dx-one-path: a mistake of the backward pass, which attn backward simulates")]:
        rc, err = cli_error(attn, repo, *args)
        check(rc == 2 and message in err, f"attn {' '.join(args[:1] + args[2:])}: exit {rc}, {err.strip().splitlines()[0][:110]}")


def types(repo):
    print("== wrong types and unknown keywords: TypeError naming the keyword")
    cat = {"sentence": "cat sat", "mode": "self", "embeddings": [[1, 0, 1], [0, 1, 1]], "weights": {"W_q": "identity", "W_k": "identity", "W_v": "identity"}}
    refuses(lambda: attn_tracer.run(cat, head="1"), "TypeError", "head: expected an int, got str '1'", "run(head='1')")
    refuses(lambda: attn_tracer.run(cat, head=1.5), "TypeError", "head: expected an int, got float 1.5", "run(head=1.5)")
    refuses(lambda: attn_tracer.run(cat, head=True), "TypeError", "head: expected an int, got bool True", "run(head=True)")
    refuses(lambda: attn_tracer.run(cat, precision="4"), "TypeError", "precision: expected an int, got str '4'", "run(precision='4')")
    refuses(lambda: attn_tracer.run(cat, fused=1), "TypeError", "fused: expected True or False, got int 1", "run(fused=1)")
    refuses(lambda: attn_tracer.run(cat, steps=[1]), "TypeError", "steps: expected a step id or a list of step ids (str), got list [1]", "run(steps=[1])")
    refuses(lambda: attn_tracer.run(cat).text(width="80"), "TypeError", "width: expected an int, got str '80'", "Trace.text(width='80')")
    refuses(lambda: attn_tracer.decode(cat, tokens="3"), "TypeError", "tokens: expected an int, got str '3'", "decode(tokens='3')")
    refuses(lambda: attn_tracer.diff({1: np.zeros(2)}, {}), "TypeError", "a: expected step ids (str) as keys, got int 1", "diff(a dict keyed by int)")
    refuses(lambda: attn_tracer.diff({}, {}, atol="0.1"), "TypeError", "atol: expected a number, got str '0.1'", "diff(atol='0.1')")
    refuses(lambda: attn_tracer.heads(cat, max_memory=1.5), "TypeError", "max_memory: expected an int, got float 1.5", "heads(max_memory=1.5)")
    refuses(lambda: attn_tracer.run(5), "TypeError", "spec: expected a path, a JSON string or a dict, got int 5", "run(5)")
    refuses(lambda: attn_tracer.run(cat, haed=1), "TypeError", "run() got an unexpected keyword argument 'haed' (did you mean 'head'?)", "run(haed=1)",
            exact=False)
    refuses(lambda: attn_tracer.decode(cat, token=3), "TypeError", "decode() got an unexpected keyword argument 'token' (did you mean 'tokens'?)",
            "decode(token=3)", exact=False)
    refuses(lambda: attn_tracer.run(cat).text(widht=90), "TypeError", "Trace.text() got an unexpected keyword argument 'widht' (did you mean 'width'?)",
            "Trace.text(widht=90)", exact=False)
    t = attn_tracer.run(cat, head=np.int64(0), precision=np.int32(3), steps="weights", fused=np.bool_(False))
    check("0.640  0.360" in t.text() and "[8] weights" in t.text() and "scores" not in t.text(),
          "NumPy integers and bools are ints and bools; one step id is a list of one")
    check(attn_tracer.run(cat, head=None).text() == attn_tracer.run(cat).text(), "None is the default where the default is None")
    # a summarised step's note names the keyword that shows it whole: that keyword exists and does so
    long_input = os.path.join(repo, "examples", "induction.json")
    note = attn_tracer.run(long_input, steps="weights").text(width=200)
    check("summary_threshold=1024 shows every value" in note, "the summary note names summary_threshold=1024")
    whole = attn_tracer.run(long_input, steps="weights", summary_threshold=1024).text(width=200)
    check("summarised" not in whole and "milk₂" in whole, "summary_threshold=1024 shows the weights whole")
    refuses(lambda: attn_tracer.run(cat, summary_threshold=0), "InputError", "summary_threshold: expected 1 or more, got 0", "run(summary_threshold=0)")


def non_finite(repo):
    print("== NaN and Infinity named as such")
    base = {"sentence": "cat sat", "mode": "self", "embeddings": [[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]],
            "weights": {"W_q": "identity", "W_k": "identity", "W_v": "identity"}}
    refuses(lambda: attn_tracer.run('{"embeddings": [[1, NaN, 0]], "weights": {}}'), "InputError",
            "<string>:1:21: embeddings[0][1]: NaN is not a JSON number (JSON has no NaN or Infinity); write a finite number", "NaN in a JSON string")
    text = json.dumps(dict(base, expect={"weights": [[0.5, "NAN"]]})).replace('"NAN"', "NaN")
    refuses(lambda: attn_tracer.check(text), "InputError",
            'expect.weights[0][1]: NaN is not a JSON number (JSON has no NaN or Infinity); write it as the string "nan", which expect takes',
            "NaN in a JSON expect block", exact=False)
    refuses(lambda: attn_tracer.run(dict(base, embeddings=np.array([[1, np.nan, 1], [0, 1, 1]]))), "InputError",
            "embeddings[0][1]: NaN is not allowed here (expected a finite number)", "a NumPy NaN in the embeddings")
    refuses(lambda: attn_tracer.run(dict(base, embeddings=np.array([[1, -np.inf, 1], [0, 1, 1]], dtype=np.float32))), "InputError",
            "embeddings[0][1]: -infinity is not allowed here (expected a finite number)", "a NumPy -inf in the embeddings")
    c = attn_tracer.check(dict(base, title="t", expect={"weights": np.array([[0.6405, np.nan], [0.3595, 0.6405]])}))
    check(c.checked == 4 and c.matches == 3 and c.differences == 1, f"a NumPy NaN in expect is a printed nan, the one difference: {c!r}")
    text = json.dumps(dict(base, expect={"weights": [[0.6405, "TINY"], [0.3595, 0.6405]]})).replace('"TINY"', "1e-99999999999")
    c = raised(lambda: attn_tracer.check(text))
    check(c == ("returned", ""), f"an expect value printed as 1e-99999999999 (an exponent beyond int) is checked: {c}")
    spec = os.path.join(repo, "examples", "diagnose_causal_2heads.json")
    right = attn_tracer.run(spec)
    student = {sid: right.steps[sid].array.copy() for sid in ("scores", "weights", "output")}
    student["weights"][0, 1, 0] = np.nan
    g = attn_tracer.diagnose(spec, student)
    check(g.correct is False and g.first is not None and g.first["id"] == "weights", f"a student's NaN is a diagnosis, not a refusal: {g!r}")
    g = attn_tracer.diagnose(spec, {"weights": np.zeros((3, 3))})
    check(g.correct is False and "weights" in str(g), f"a student's wrong shape is a diagnosis: {g!r}")


def predict(repo):
    cross = os.path.join(repo, "tests", "data", "predict_cross.json")
    page = attn_tracer.run(cross, predict=True).html()
    check(page.count('<form class="predict"') == 2 and 'data-total="6"' in page
          and page.index('id="step-scores"') < page.index('<form class="predict"') < page.index('<div class="revealed" hidden>'),
          "predict=True: the page asks before scores and weights (the spec's exercise.predict), six questions, the values hidden")
    view = attn_tracer.run(cross, predict=True)._repr_html_()
    check("form class=&quot;predict&quot;" in view and "srcdoc=" in view, "predict=True: the notebook's view is that page")
    check('<form class="predict"' not in attn_tracer.run(cross).html(), "without predict the page asks nothing")
    cat = os.path.join(repo, "examples", "cat_sat.json")
    page = attn_tracer.run(cat, predict=True).html()
    check(page.count('<form class="predict"') == 1 and page.index('id="step-weights"') < page.index('<form class="predict"'),
          "predict=True without an exercise block asks before the weights")
    refuses(lambda: attn_tracer.run(cat, predict=True, steps=["q"]), "InputError",
            "predict=True: none of the steps to predict (weights) is shown; show them too (steps=)", "predict=True with the weights not shown")
    refuses(lambda: attn_tracer.run(cat, predict=True, fused=True), "InputError",
            "predict=True: this trace has no weights step to ask about (a fused run keeps none)", "predict=True, fused=True", exact=False)
    spec = json.loads(open(cross).read())
    spec["exercise"]["predict"] = ["weight"]
    refuses(lambda: attn_tracer.run(spec, predict=True), "InputError",
            'exercise.predict[0]: expected a step id, got "weight" (did you mean "weights"?)', "an unknown step in exercise.predict", exact=False)
    refuses(lambda: attn_tracer.run(cat, predict="yes"), "TypeError", "predict", "predict='yes'", exact=False)


def main(argv):
    attn, repo = argv[1], argv[2]
    ex = lambda name: os.path.join(repo, "examples", name)
    ranges(attn, repo, ex("diagnose_causal_2heads.json"), ex("padding_batch2.json"), ex("tiny_gpt2.json"))
    types(repo)
    non_finite(repo)
    predict(repo)
    return outcome()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
