#!/usr/bin/env python3
"""attn run, decode and heads refuse, up front and with exit 2, an input whose memory would pass what the
machine has available (MemAvailable, or the cgroup's limit): the tiny Llama checkpoint on so many tokens
that one layer's [H, T, T] steps alone pass it. Each refusal names the estimate and the machine's
memory, and comes before any layer runs (well under a second's work; a run would take minutes and the
memory). attn heads streams, so it holds no [H, T, T] step: it is refused when --weights asks it to keep
them all (with --max-memory raised past the machine, so that the machine's limit is the one that speaks),
and --rollout, whose maps are L × T² floats, names them in its refusal.

Usage: refuse_up_front.py ATTN SOURCE_DIR
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time

attn, source = sys.argv[1], sys.argv[2]
available = next(int(l.split()[1]) * 1024 for l in open("/proc/meminfo") if l.startswith("MemAvailable:"))
T = 100_000  # one layer's 4 × T² weights alone: 160 GB, 4 steps of them 640 GB
if 4 * 4 * T * T >= 0.9 * (1 << 50):
    sys.exit(0)
failures = []
with tempfile.TemporaryDirectory() as tmp:
    spec = os.path.join(tmp, "long.json")
    json.dump({"checkpoint": {"path": os.path.join(source, "examples", "checkpoints", "tiny-llama"), "layer": 1}, "token_ids": [5] * T},
              open(spec, "w"))
    for cmd in (["run", spec], ["run", spec, "--fused"], ["decode", spec], ["decode", spec, "--tokens", "2"],
                ["heads", spec, "--weights", "--max-memory", "2000T"], ["heads", spec, "--rollout"]):
        t0 = time.perf_counter()
        p = subprocess.run([attn] + cmd, capture_output=True, text=True, timeout=120)
        took = time.perf_counter() - t0
        err = p.stderr
        m = re.search(r"would need about ([\d.]+) (GB|TB) of memory .* more than the ([\d.]+) (GB|MB|TB) this machine has available now", err)
        if p.returncode != 2 or not m or "refused before running" not in err:
            failures.append(f"attn {' '.join(cmd[1:]) or ''} {cmd[0]}: exit {p.returncode}, {err.strip()[:300]!r}")
            continue
        need = float(m.group(1)) * (1e12 if m.group(2) == "TB" else 1e9)
        if need <= available:
            failures.append(f"attn {cmd[0]}: the estimate {need:.3g} B is not more than MemAvailable {available}")
        if f"on {T} tokens" not in err:
            failures.append(f"attn {cmd[0]}: the message does not say the input's length: {err.strip()[:200]!r}")
        if "--rollout" in cmd and "for --rollout's maps" not in err:
            failures.append(f"attn heads --rollout: the message does not name --rollout's maps as what needs the memory: {err.strip()[:300]!r}")
        if took > 10:
            failures.append(f"attn {cmd[0]}: refused after {took:.1f} s, not up front")
for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
