"""A real browser for the tests: Debian's chromium, headless, driven by the
DevTools protocol over --remote-debugging-pipe (JSON messages ending in a
NUL byte, commands on fd 3, answers and events on fd 4), so nothing beyond
the chromium package is needed: no websocket library, no driver.
"""

import base64
import fcntl
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time

from bed import Fail

CHROMIUM = shutil.which("chromium")


class Browser:
    """One headless chromium with one page (tab) attached."""

    def __init__(self, width=1280, height=900):
        if CHROMIUM is None:
            raise Fail("chromium is not installed (make deps installs it)")
        self.profile = tempfile.mkdtemp(prefix="tandem-chromium-")
        cmd_r, cmd_w = os.pipe()
        ans_r, ans_w = os.pipe()
        # Above 9, so the dup2 onto 3 and 4 in the child never hits one of them.
        hi = [fcntl.fcntl(f, fcntl.F_DUPFD_CLOEXEC, 10) for f in (cmd_r, cmd_w, ans_r, ans_w)]
        for f in (cmd_r, cmd_w, ans_r, ans_w):
            os.close(f)
        cmd_r, self.cmd_w, self.ans_r, ans_w = hi

        def child():
            os.dup2(cmd_r, 3)
            os.dup2(ans_w, 4)

        self.log_path = os.path.join(self.profile, "chromium.log")
        self.log = open(self.log_path, "wb")
        self.t_start = time.monotonic()
        # --no-sandbox: the tests run as root, where chromium's sandbox cannot start.
        self.proc = subprocess.Popen(
            [CHROMIUM, "--headless", "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu",
             "--no-first-run", "--no-default-browser-check", "--disable-extensions",
             "--disable-background-networking", "--disable-sync", "--disable-dev-shm-usage",
             "--mute-audio", "--user-data-dir=" + self.profile,
             "--window-size=%d,%d" % (width, height), "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.log,
            preexec_fn=child, pass_fds=(3, 4))
        os.close(cmd_r)
        os.close(ans_w)
        self.msgs = queue.Queue()
        self.events = []
        self.answers = {}
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()
        self.call("Browser.getVersion", timeout=60)
        self.startup_s = time.monotonic() - self.t_start
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget",
                                 {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.call(domain + ".enable", session=True)
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
                  session=True)

    def _read(self):
        buf = b""
        while True:
            try:
                chunk = os.read(self.ans_r, 65536)
            except OSError:
                chunk = b""
            if not chunk:
                self.msgs.put(None)
                return
            buf += chunk
            while b"\0" in buf:
                msg, buf = buf.split(b"\0", 1)
                self.msgs.put(json.loads(msg))

    def _pump(self, deadline):
        try:
            m = self.msgs.get(timeout=max(0.01, deadline - time.monotonic()))
        except queue.Empty:
            return
        if m is None:
            with open(self.log_path, errors="replace") as f:
                raise Fail("chromium went away: %s" % f.read()[-2000:])
        if "id" in m:
            self.answers[m["id"]] = m
        else:
            self.events.append(m)

    def call(self, method, params=None, session=False, timeout=30):
        self.next_id += 1
        mid = self.next_id
        msg = {"id": mid, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = self.session
        os.write(self.cmd_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while mid not in self.answers:
            if time.monotonic() > deadline:
                raise Fail("chromium: no answer to %s within %ss" % (method, timeout))
            self._pump(deadline)
        a = self.answers.pop(mid)
        if "error" in a:
            raise Fail("chromium: %s: %s" % (method, a["error"]))
        return a["result"]

    def wait_event(self, method, timeout=30, since=0):
        """The first event named method at index >= since in self.events."""
        deadline = time.monotonic() + timeout
        while True:
            for i in range(since, len(self.events)):
                if self.events[i].get("method") == method:
                    return self.events[i]
            if time.monotonic() > deadline:
                raise Fail("chromium: no %s within %ss" % (method, timeout))
            self._pump(deadline)

    def drain(self):
        """Takes in the events that have arrived, without waiting."""
        while not self.msgs.empty():
            self._pump(time.monotonic())

    def navigate(self, url, timeout=30):
        """Loads url and waits for its load event; returns the seconds taken."""
        t0 = time.monotonic()
        mark = len(self.events)
        r = self.call("Page.navigate", {"url": url}, session=True)
        if r.get("errorText"):
            raise Fail("chromium: %s: %s" % (url, r["errorText"]))
        self.wait_event("Page.loadEventFired", timeout, since=mark)
        return time.monotonic() - t0

    def eval(self, expr, timeout=30):
        r = self.call("Runtime.evaluate", {"expression": expr, "returnByValue": True,
                                           "awaitPromise": True}, session=True, timeout=timeout)
        if "exceptionDetails" in r:
            raise Fail("in the page: %s: %s" % (expr[:80], json.dumps(r["exceptionDetails"])[:600]))
        return r["result"].get("value")

    def html(self):
        """The DOM as HTML, read by DevTools (works with scripts disabled)."""
        root = self.call("DOM.getDocument", {"depth": -1}, session=True)["root"]
        return self.call("DOM.getOuterHTML", {"nodeId": root["nodeId"]}, session=True)["outerHTML"]

    def screenshot(self, path):
        """The whole page, however long, as PNG."""
        size = self.call("Page.getLayoutMetrics", session=True)["cssContentSize"]
        png = self.call("Page.captureScreenshot",
                        {"format": "png", "captureBeyondViewport": True,
                         "clip": {"x": 0, "y": 0, "width": size["width"],
                                  "height": size["height"], "scale": 1}}, session=True)
        with open(path, "wb") as f:
            f.write(base64.b64decode(png["data"]))
        return path

    def problems(self):
        """Console errors, CSP reports and uncaught exceptions seen so far."""
        self.drain()
        out = []
        for e in self.events:
            m, p = e.get("method"), e.get("params", {})
            if m == "Log.entryAdded" and p["entry"]["level"] == "error":
                out.append("%s: %s" % (p["entry"].get("source"), p["entry"]["text"]))
            elif m == "Runtime.exceptionThrown":
                out.append("exception: %s" % json.dumps(p["exceptionDetails"])[:400])
            elif m == "Runtime.consoleAPICalled" and p.get("type") == "error":
                out.append("console.error: %s" % json.dumps(p.get("args"))[:400])
        return out

    def close(self):
        try:
            self.call("Browser.close", timeout=5)
        except Fail:
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for f in (self.cmd_w, self.ans_r):
            try:
                os.close(f)
            except OSError:
                pass
        self.log.close()
        shutil.rmtree(self.profile, ignore_errors=True)
