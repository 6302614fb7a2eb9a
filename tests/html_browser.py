#!/usr/bin/env python3
"""attn run --format html in a real browser: Debian's chromium, headless, driven over the DevTools
protocol. Loads the page with the network watched, then checks, as a student would use it:
  - the page makes no request but its own file (no script, font, image or style from anywhere);
  - the keyboard moves between steps (→, Space, ←, End, Home);
  - the head selector shows one head's blocks;
  - hovering a score, a weight and a context entry shows how it was computed, with this run's
    numbers (checked against the JSON trace of the same run);
  - print styles put every step on the page and hide the controls;
  - with --predict, the questions are answered by keyboard alone (Tab, Enter), the values stay hidden
    until answered or revealed, and the count of right answers is kept.
Screenshots of each state go to OUT_DIR (look at them: they are the test's pictures).
Skips (exit 77, with the reason) only when chromium or python3-websocket is missing.
Usage: html_browser.py ATTN SOURCE_DIR OUT_DIR
"""
import base64
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

attn, src, out_dir = sys.argv[1], sys.argv[2], sys.argv[3]
browser = shutil.which("chromium") or shutil.which("chromium-browser")
try:
    import websocket  # python3-websocket
except ImportError:
    websocket = None
if browser is None or websocket is None:
    print("SKIPPED: " + ("chromium is not installed" if browser is None else "python3-websocket is not installed") +
          " (scripts/setup.sh --tests installs both)")
    sys.exit(77)

os.makedirs(out_dir, exist_ok=True)
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


class Page:
    def __init__(self, ws_url):
        self.ws = websocket.create_connection(ws_url, timeout=20)
        self.next_id = 0
        self.events = []

    def call(self, method, **params):
        self.next_id += 1
        my_id = self.next_id
        self.ws.send(json.dumps({"id": my_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == my_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self.events.append(msg)

    def wait_event(self, name, timeout=20):
        end = time.time() + timeout
        while time.time() < end:
            for i, e in enumerate(self.events):
                if e.get("method") == name:
                    return self.events.pop(i)
            self.ws.settimeout(max(0.1, end - time.time()))
            try:
                self.events.append(json.loads(self.ws.recv()))
            except websocket.WebSocketTimeoutException:
                break
        raise RuntimeError(f"no {name} within {timeout} s")

    def js(self, expression):
        r = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expression}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def key(self, key, code, vk):
        for t in ("keyDown", "keyUp"):
            self.call("Input.dispatchKeyEvent", type=t, key=key, code=code, windowsVirtualKeyCode=vk)
        time.sleep(0.05)

    def hover(self, selector):
        rect = self.js(f"(function(){{var r=document.querySelector({json.dumps(selector)}).getBoundingClientRect();"
                       f"return [r.left + r.width / 2, r.top + r.height / 2];}})()")
        self.call("Input.dispatchMouseEvent", type="mouseMoved", x=rect[0], y=rect[1])
        time.sleep(0.1)
        return self.js("document.getElementById('tip').style.display === 'block' ? document.getElementById('tip').textContent : ''")

    def screenshot(self, name):
        data = self.call("Page.captureScreenshot", format="png")["data"]
        path = os.path.join(out_dir, name)
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
        print(f"     screenshot {path}")


def page_for(example, extra=()):
    """Writes the example's HTML and JSON trace; returns (html path, trace)."""
    name = os.path.splitext(os.path.basename(example))[0]
    html = os.path.join(out_dir, name + ".html")
    with open(html, "w") as f:
        subprocess.run([attn, "run", example, "--format", "html", *extra], stdout=f, check=True, cwd=src)
    trace = json.loads(subprocess.run([attn, "run", example, "--format", "json"], capture_output=True, check=True, cwd=src).stdout)
    return html, trace


def step_value(trace, step_id):
    return next(s for s in trace["steps"] if s["id"] == step_id)["data"]


profile = tempfile.mkdtemp(prefix="attn-chromium-")
proc = subprocess.Popen([browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
                         "--remote-debugging-port=0", f"--user-data-dir={profile}", "--window-size=1280,900", "about:blank"],
                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
try:
    port = None
    end = time.time() + 30
    while port is None and time.time() < end:
        line = proc.stderr.readline()
        m = re.search(r"DevTools listening on ws://[^:]+:(\d+)/", line)
        if m:
            port = int(m.group(1))
    if port is None:
        print("FAIL: chromium did not start its DevTools endpoint")
        sys.exit(1)
    targets = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10).read())
    page = Page(next(t for t in targets if t["type"] == "page")["webSocketDebuggerUrl"])
    page.call("Page.enable")
    page.call("Network.enable")

    # ---- a two-head causal example: load, with the network watched ----
    html, trace = page_for("examples/diagnose_causal_2heads.json", ["--explain"])
    page.events.clear()
    page.call("Page.navigate", url="file://" + os.path.abspath(html))
    page.wait_event("Page.loadEventFired")
    time.sleep(0.3)
    requests = [e["params"]["request"]["url"] for e in page.events if e.get("method") == "Network.requestWillBeSent"]
    check(len(requests) == 1 and requests[0].startswith("file://") and requests[0].endswith(".html"),
          f"the page requests nothing but itself ({len(requests)} request(s): {requests[:3]})")
    failed = [e for e in page.events if e.get("method") == "Network.loadingFailed"]
    check(not failed, "nothing failed to load")
    steps = page.js("Array.prototype.map.call(document.querySelectorAll('section.step'), function (s) { return s.id; })")
    check(steps == ["step-" + s["id"] for s in trace["steps"]], f"one section per step, in order ({len(steps)})")
    current = lambda: page.js("document.querySelector('section.step.current').id")
    visible = lambda: page.js("Array.prototype.filter.call(document.querySelectorAll('section.step'), function (s) "
                              "{ return getComputedStyle(s).display !== 'none'; }).length")
    check(current() == "step-x" and visible() == 1, "it opens on step 1, alone")
    check(page.js("window.scrollY") == 0 and page.js("document.querySelector('h1').getBoundingClientRect().top") >= 0,
          f"it opens at the top, its title in view (scrollY {page.js('window.scrollY')})")
    page.screenshot("html_step1.png")

    # ---- the keyboard ----
    page.key("ArrowRight", "ArrowRight", 39)
    check(current() == "step-" + trace["steps"][1]["id"], "→ shows step 2")
    page.key(" ", "Space", 32)
    check(current() == "step-" + trace["steps"][2]["id"], "Space shows step 3")
    page.key("ArrowLeft", "ArrowLeft", 37)
    check(current() == "step-" + trace["steps"][1]["id"], "← goes back to step 2")
    page.key("End", "End", 35)
    check(current() == "step-" + trace["steps"][-1]["id"], "End shows the last step")
    page.key("Home", "Home", 36)
    check(current() == "step-x", "Home shows step 1")
    check(page.js("location.hash") == "#step-x", "the address names the step shown")

    # ---- the head selector, on the weights step ----
    page.js("location.hash = '#step-weights'; document.querySelectorAll('nav.steps a')["
            + str([s["id"] for s in trace["steps"]].index("weights")) + "].click()")
    check(current() == "step-weights", "the step list opens the weights step")
    shown_heads = lambda: page.js("Array.prototype.filter.call(document.querySelectorAll('#step-weights .block'), function (b) "
                                  "{ return !b.hidden; }).map(function (b) { return b.dataset.head; })")
    check(shown_heads() == ["0", "1"], "both heads are shown at first")
    page.js("var h = document.getElementById('head'); h.value = '1'; h.dispatchEvent(new Event('change'))")
    check(shown_heads() == ["1"], "the head selector shows head 1 alone")
    check(page.js("getComputedStyle(document.querySelector('#step-weights .explain-which')).display") != "none",
          "with head 1 chosen, the explanation says its numbers are head 0's")
    page.screenshot("html_weights_head1.png")
    page.js("var h = document.getElementById('head'); h.value = 'all'; h.dispatchEvent(new Event('change'))")

    # ---- hover: each number's computation, with this run's numbers ----
    w = step_value(trace, "weights")  # [H, T, T]
    tip = page.hover("#step-weights .block[data-head='0'] tbody tr:nth-child(2) td:nth-of-type(1)")
    check(tip.startswith("weights[0, 1, 0] = " + f"{w[0][1][0]:.4f}") and "exp(" in tip and "Σ exp(row − max)" in tip
          and "(2 blocked keys add 0)" in tip,
          f"hovering weights[0, 1, 0] shows exp(·)/Σexp(·): {tip!r}")
    page.screenshot("html_hover_weight.png")
    tip = page.hover("#step-weights .block[data-head='0'] tbody tr:nth-child(1) td:nth-of-type(2)")
    check("blocked" in tip, f"hovering a blocked weight says it is blocked: {tip!r}")
    idx = [s["id"] for s in trace["steps"]]
    page.js(f"document.querySelectorAll('nav.steps a')[{idx.index('scores')}].click()")
    sc, qh, kh = step_value(trace, "scores"), step_value(trace, "q.heads"), step_value(trace, "k.heads")
    tip = page.hover("#step-scores .block[data-head='1'] tbody tr:nth-child(3) td:nth-of-type(2)")
    first_term = f"{qh[1][2][0]:.4f}×{kh[1][1][0]:.4f}"
    check(tip.startswith(f"scores[1, 2, 1] = {sc[1][2][1]:.4f}") and "q.heads[1, 2] · k.heads[1, 1]" in tip and first_term in tip,
          f"hovering scores[1, 2, 1] shows q·k term by term (first term {first_term}): {tip!r}")
    page.screenshot("html_hover_score.png")
    page.js(f"document.querySelectorAll('nav.steps a')[{idx.index('context')}].click()")
    ctx = step_value(trace, "context")
    tip = page.hover("#step-context .block[data-head='0'] tbody tr:nth-child(3) td:nth-of-type(1)")
    check(tip.startswith(f"context[0, 2, 0] = {ctx[0][2][0]:.4f}") and "Σ over keys j of weights[0, 2, j] × v.heads[0, j, 0]" in tip,
          f"hovering context[0, 2, 0] shows the weighted sum: {tip!r}")

    # ---- print: every step, no controls ----
    page.call("Emulation.setEmulatedMedia", media="print")
    check(visible() == len(trace["steps"]), f"print shows every step ({visible()} of {len(trace['steps'])})")
    check(page.js("getComputedStyle(document.querySelector('nav.steps')).display") == "none"
          and page.js("getComputedStyle(document.querySelector('.controls')).display") == "none", "print hides the step list and controls")
    pdf = page.call("Page.printToPDF")
    check(len(base64.b64decode(pdf["data"])) > 10000, "the page prints to PDF")
    page.call("Emulation.setEmulatedMedia", media="")

    # ---- a bigger, summarised trace still loads whole, offline ----
    html, trace = page_for("examples/shape_flow_2x4x512.json")
    page.events.clear()
    page.call("Page.navigate", url="file://" + os.path.abspath(html) + "#step-weights")
    page.wait_event("Page.loadEventFired")
    time.sleep(0.3)
    requests = [e["params"]["request"]["url"] for e in page.events if e.get("method") == "Network.requestWillBeSent"]
    check(len(requests) == 1, f"shape_flow's page requests nothing but itself ({len(requests)})")
    check(current() == "step-weights", "an address with #step-weights opens that step")
    page.screenshot("html_shape_flow_weights.png")

    # ---- --predict: the questions before scores and weights, by keyboard alone; the values hidden until answered ----
    html, trace = page_for("tests/data/predict_cross.json", ["--predict"])
    page.call("Page.navigate", url="file://" + os.path.abspath(html) + "#step-scores")
    page.wait_event("Page.loadEventFired")
    time.sleep(0.3)
    shown = lambda sel: page.js(f"(function(){{var e=document.querySelector({json.dumps(sel)}); return !!e && e.getClientRects().length > 0;}})()")
    tally = lambda: page.js("document.getElementById('tally').textContent")
    check(current() == "step-scores" and not shown("#step-scores table.tensor") and not shown("#step-scores p.shape"),
          "the scores' shape and values are hidden before an answer")
    check(tally() == "0 of 0 predictions right · 6 still to answer", f"the count starts at none of 6 ({tally()!r})")

    def type_text(text):
        for ch in text:
            page.call("Input.dispatchKeyEvent", type="char", text=ch)
        time.sleep(0.05)

    def tab():
        page.key("Tab", "Tab", 9)

    def enter():  # with its text, as a keyboard sends it: what submits a form or presses a button
        for kind in ("keyDown", "keyUp"):
            page.call("Input.dispatchKeyEvent", type=kind, key="Enter", code="Enter", windowsVirtualKeyCode=13, **({"text": "\r"} if kind == "keyDown" else {}))
        time.sleep(0.1)

    def focused():
        return page.js("document.activeElement.id || document.activeElement.className || document.activeElement.tagName")

    page.js("document.getElementById('predict-scores-1').focus()")
    type_text("[3, 3]")
    tab()
    type_text("dog")
    tab()
    type_text("1")
    enter()
    replies = lambda step: page.js(f"Array.prototype.map.call(document.querySelectorAll('#step-{step} .reply'), function (p) {{ return p.textContent; }})")
    check(replies("scores")[1] == 'There is no key "dog": the keys are le₁, chat, le₂, tapis. Type one of them.' and replies("scores")[0] == ""
          and not shown("#step-scores table.tensor"), f"Enter with an unknown key says so and reveals nothing ({replies('scores')})")
    check(focused() == "predict-scores-2", f"the unread answer gets the focus ({focused()})")
    page.js("document.getElementById('predict-scores-2').select()")
    type_text("chat")
    enter()
    check(shown("#step-scores table.tensor") and shown("#step-scores p.shape"), "answered: the scores are shown")
    r = replies("scores")
    check(r[0] == "Not quite: you said [3, 3]; scores is [3, 4]: T = 3 queries, S = 4 keys (S, the keys, is 4, not 3)."
          and r[1] == 'Right: "sat"\'s row of scores is largest at "chat".' and r[2].startswith("Right: scores[2, 0]"), f"each answer is answered: {r}")
    check(tally() == "2 of 3 predictions right · 3 still to answer", f"the count after scores ({tally()!r})")
    page.screenshot("html_predict_scores.png")
    page.js(f"document.querySelectorAll('nav.steps a')[{[s['id'] for s in trace['steps']].index('weights')}].click()")
    check(not shown("#step-weights table.tensor") and not shown("#step-weights svg"), "the weights and their heatmap are hidden before an answer")
    page.js("document.getElementById('predict-weights-1').focus()")
    type_text("3x4")
    for _ in range(4):  # past the two other fields and "check", onto "reveal"
        tab()
    check(page.js("document.activeElement.className") == "reveal", f"Tab reaches reveal ({focused()})")
    enter()
    check(shown("#step-weights table.tensor"), "reveal shows the weights")
    r = replies("weights")
    check(r[0].startswith("Right: weights is [3, 4]") and r[1] == 'No prediction: "sat" attends most to "chat".', f"reveal answers the blank questions: {r}")
    check(tally() == "3 of 6 predictions right", f"the count at the end ({tally()!r})")
    requests = [e["params"]["request"]["url"] for e in page.events if e.get("method") == "Network.requestWillBeSent"]
    check(all(u.startswith("file://") for u in requests), f"the --predict page fetches nothing ({requests[:3]})")
    page.screenshot("html_predict_weights.png")
finally:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
    shutil.rmtree(profile, ignore_errors=True)

if failures:
    print(f"html_browser: {len(failures)} check(s) failed")
    sys.exit(1)
print("html_browser: the HTML walkthrough works offline in chromium: keys, head selector, hover, print, --predict")
