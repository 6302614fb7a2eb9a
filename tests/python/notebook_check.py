#!/usr/bin/env python3
"""examples/notebooks/walkthrough.ipynb runs top to bottom, and what it shows renders.

    notebook_check.py REPO OUT_DIR     (PYTHONPATH must reach build/python)

- the notebook is stored without outputs (no execution counts, no outputs);
- Debian's nbclient executes it with the python3 kernel (ipykernel), every cell, no error;
- nbconvert turns the executed notebook into HTML, which headless chromium opens with the network
  watched: nothing is fetched, and inside the trace's frame the weights step has its table and its
  heatmap, the cell count shown, and two traces' frames do not share one document.
Says SKIPPED (exit 77) when the Jupyter packages or chromium are missing.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

try:
    import nbformat
    from nbclient import NotebookClient
    from nbconvert import HTMLExporter
except ImportError as e:
    print(f"SKIPPED: the Jupyter packages are missing ({e}); install python3-nbclient, python3-nbconvert and python3-ipykernel "
          "(scripts/setup.sh --tests)")
    sys.exit(77)

from checks import check, failures, outcome


def main(argv):
    repo, out = argv[1], argv[2]
    os.makedirs(out, exist_ok=True)
    path = os.path.join(repo, "examples", "notebooks", "walkthrough.ipynb")
    nb = nbformat.read(path, as_version=4)
    stored_clean = all(c.cell_type != "code" or (not c.outputs and c.execution_count is None) for c in nb.cells)
    check(stored_clean, "the notebook is stored without outputs")
    start = time.time()
    try:
        NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": os.path.dirname(path)}}).execute()
        ran = True
    except Exception as e:  # a cell's error: CellExecutionError names the cell
        print(str(e)[:2000])
        ran = False
    code_cells = [c for c in nb.cells if c.cell_type == "code"]
    errors = [o for c in code_cells for o in c.outputs if o.output_type == "error"]
    check(ran and not errors and all(c.execution_count for c in code_cells),
          f"nbclient ran all {len(code_cells)} code cells in {time.time() - start:.1f} s without an error")
    html, _ = HTMLExporter().from_notebook_node(nb)
    page_path = os.path.join(out, "walkthrough.html")
    with open(page_path, "w", encoding="utf-8") as f:
        f.write(html)
    frames = html.count('title="attn trace"')
    check(frames >= 2, f"the executed notebook shows {frames} traces, each in its own frame")

    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    try:
        import websocket
    except ImportError:
        websocket = None
    if browser is None or websocket is None:
        print("SKIPPED: the rendering in a browser: " + ("chromium is not installed" if browser is None else "python3-websocket is missing"))
        return 1 if failures else 77
    profile = tempfile.mkdtemp(prefix="attn-notebook-")
    proc = subprocess.Popen([browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--remote-debugging-port=0", "--disable-site-isolation-trials",
                             "--disable-features=IsolateOrigins,site-per-process",
                             f"--user-data-dir={profile}", "--window-size=1280,2000", "about:blank"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        port, end = None, time.time() + 30
        while port is None and time.time() < end:
            m = re.search(r"DevTools listening on ws://[^:]+:(\d+)/", proc.stderr.readline())
            port = int(m.group(1)) if m else None
        targets = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10).read())
        ws = websocket.create_connection(next(t for t in targets if t["type"] == "page")["webSocketDebuggerUrl"], timeout=30)
        seq, events = [0], []

        def call(method, **params):
            seq[0] += 1
            ws.send(json.dumps({"id": seq[0], "method": method, "params": params}))
            while True:
                msg = json.loads(ws.recv())
                if msg.get("id") == seq[0]:
                    return msg.get("result", {})
                events.append(msg)

        call("Page.enable")
        call("Network.enable")
        call("Runtime.enable")
        call("Page.navigate", url="file://" + os.path.abspath(page_path))
        time.sleep(3)
        call("Runtime.evaluate", expression="1")  # drain the events so far
        fetched = sorted({e["params"]["request"]["url"] for e in events if e.get("method") == "Network.requestWillBeSent"
                          and not e["params"]["request"]["url"].startswith(("file:", "data:", "about:"))})
        check(not fetched, f"nothing fetched from the network{'' if not fetched else ': ' + ', '.join(fetched[:3])}")
        contexts = [e["params"]["context"] for e in events if e.get("method") == "Runtime.executionContextCreated"]
        probe = ("(function(){var w=document.getElementById('step-weights');"
                 "return JSON.stringify({table: !!(w && w.querySelector('table')), heatmap: !!(w && w.querySelector('svg rect, svg path')),"
                 "title: document.title, steps: document.querySelectorAll('section.step').length});})()")
        seen = []
        for ctx in contexts:
            r = call("Runtime.evaluate", expression=probe, contextId=ctx["id"], returnByValue=True)
            v = r.get("result", {}).get("value")
            if v:
                seen.append(json.loads(v))
        traces = [s for s in seen if s["steps"] > 0]
        print(f"     {len(contexts)} execution contexts; " + "; ".join(f"{s['title'][:40]!r}: {s['steps']} steps" for s in seen))
        check(len(traces) >= 2, f"{len(traces)} trace frames rendered, each its own document")
        check(any(s["table"] and s["heatmap"] and "cat sat" in s["title"] for s in traces),
              "the cat/sat trace's frame shows the weights table and the heatmap")
        data = call("Page.captureScreenshot", format="png")["data"]
        import base64
        with open(os.path.join(out, "walkthrough.png"), "wb") as f:
            f.write(base64.b64decode(data))
        print(f"     screenshot {os.path.join(out, 'walkthrough.png')}")
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        shutil.rmtree(profile, ignore_errors=True)
    return outcome()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
