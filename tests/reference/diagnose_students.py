"""The harness the student tests share: each student's tensors saved as <step id>.npy in a directory
of its own, `attn diagnose SPEC DIR` run on it, and the verdict compared with the mistake the student
made (a correct student must be reported correct, exit 0; a mistaken one named, exit 1). Where two
mistakes give the same numbers on the problem, or none is the student's, `expect` gives the verdict
and lines the report must hold instead."""
import os
import subprocess
import tempfile

import numpy as np


def diagnose_students(attn, spec, student, mistakes, label, width=20, expect=None):
    """student(mistake or None) -> {step id: array}; expect: {mistake: (verdict, [text the report must
    contain])} where the verdict is not the mistake's own name. Prints a line per student; returns the
    wrong count."""
    expect = expect or {}
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for mistake in [None] + list(mistakes):
            d = os.path.join(tmp, mistake or "correct")
            os.makedirs(d)
            for step, value in student(mistake).items():
                np.save(os.path.join(d, step + ".npy"), value)
            # (one line a sentence: the expected text is matched unwrapped)
            p = subprocess.run([attn, "diagnose", spec, d, "--width", "1000"], capture_output=True, text=True)
            if mistake is None:
                ok = p.returncode == 0 and "\ncorrect: " in p.stdout
                verdict = "correct" if ok else "?"
            else:
                want, lines = expect.get(mistake, (mistake, []))
                ok = p.returncode == 1 and f"\nverdict: {want}\n" in p.stdout and all(line in p.stdout for line in lines)
                verdict = next((line for line in p.stdout.splitlines() if line.startswith("verdict")), p.stderr.strip())
            print(f"{'ok  ' if ok else 'FAIL'} {mistake or 'correct student':{width}s} -> {verdict}")
            if not ok:
                failures += 1
                print(p.stdout, p.stderr)
    print(f"{label}: {len(mistakes) + 1} diagnosed, {failures} wrong")
    return failures
