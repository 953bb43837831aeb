#!/usr/bin/env python3
"""The translate page of tfm serve in a real browser (run by serve_test.sh, which trains the
models): Debian's chromium, headless, driven over the Chrome DevTools protocol through a pipe
(--remote-debugging-pipe: NUL-separated JSON on fds 3 and 4, so no websocket library is needed).

    serve_page_test.py TFM MODEL_DIR SENTENCES_FILE TMP_DIR LM_DIR

On a server with an API key: the page asks for the key; once it is typed, a sentence typed into
the source box (key events, one character at a time) is translated as it is typed; the
translation shown must equal `tfm translate --beam-size 4`'s (the page's default beam), the
alternatives the n-best of `tfm translate --beam-size 4 --n-best 3` with their scores, and the
heat map must have one row per target token of the chosen alternative (the labels spelling the
translation) and one column per source token; choosing another alternative redraws it. A
decoder-only model's server shows the prompt box instead, and its continuation equals
`tfm generate`'s. Screenshots of both go to $TFM_SCREENSHOT_DIR (default: the working
directory, build/tests under ctest). Exit 77 (skipped) without chromium.
"""
from __future__ import annotations

import base64
import json
import os
import queue
import shutil
import subprocess
import sys
import threading
import time

import serve_lib as sl
from serve_lib import check

TFM, MODEL, SENTENCES, TMP, LM = sys.argv[1:6]
KEY = "page-key"
SHOTS = os.environ.get("TFM_SCREENSHOT_DIR", os.getcwd())


class Chrome:
    """Headless chromium and one page, over the DevTools protocol on a pipe."""

    def __init__(self, binary: str):
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def child_fds():  # chromium reads commands on fd 3 and writes answers on fd 4
            a, b = os.dup(to_chrome_r), os.dup(from_chrome_w)  # off 3 and 4 first
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            [binary, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--no-default-browser-check", "--remote-debugging-pipe",
             f"--user-data-dir={TMP}/chrome-profile", "--window-size=1200,1100", "about:blank"],
            preexec_fn=child_fds, close_fds=False, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._next = 0
        self._answers: dict[int, queue.Queue] = {}
        self._lock = threading.Lock()
        self.events: list[dict] = []
        threading.Thread(target=self._read, daemon=True).start()
        targets = self.call("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self.session = self.call("Target.attachToTarget", targetId=page["targetId"],
                                 flatten=True)["sessionId"]
        self.call("Page.enable", session=True)
        self.call("Runtime.enable", session=True)

    def _read(self):
        buf = b""
        while True:
            chunk = os.read(self._from_chrome, 1 << 16)
            if not chunk:
                return
            buf += chunk
            while b"\0" in buf:
                raw, buf = buf.split(b"\0", 1)
                msg = json.loads(raw)
                if "id" in msg:
                    with self._lock:
                        q = self._answers.get(msg["id"])
                    if q:
                        q.put(msg)
                else:
                    self.events.append(msg)

    def call(self, method: str, session: bool = False, timeout: float = 30, **params):
        with self._lock:
            self._next += 1
            mid = self._next
            q = self._answers[mid] = queue.Queue()
        msg = {"id": mid, "method": method, "params": params}
        if session:
            msg["sessionId"] = self.session
        os.write(self._to_chrome, json.dumps(msg).encode() + b"\0")
        answer = q.get(timeout=timeout)
        if "error" in answer:
            raise RuntimeError(f"{method}: {answer['error']}")
        return answer["result"]

    def js(self, expression: str):
        r = self.call("Runtime.evaluate", session=True, expression=expression,
                      returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expression}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def wait(self, expression: str, timeout: float = 20) -> bool:
        end = time.time() + timeout
        while time.time() < end:
            if self.js(expression):
                return True
            time.sleep(0.05)
        return False

    def open(self, url: str):
        self.call("Page.navigate", session=True, url=url)
        return self.wait("document.readyState === 'complete' && "
                         "document.body.dataset.state !== 'loading'")

    def type(self, selector: str, text: str):
        """Key events into the element, one character at a time, as a person types."""
        self.js(f"document.querySelector({json.dumps(selector)}).focus()")
        for ch in text:
            self.call("Input.dispatchKeyEvent", session=True, type="char", text=ch)
            time.sleep(0.02)

    def screenshot(self, path: str):
        data = self.call("Page.captureScreenshot", session=True, format="png",
                         captureBeyondViewport=True)["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def close(self):
        try:
            self.call("Browser.close", timeout=5)
        except (RuntimeError, queue.Empty, OSError):
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def nbest_reference(model: str, line: str, *flags: str, command: str = "translate"):
    out = subprocess.run([TFM, command, "--model", model, "--threads", "1", *flags],
                         input=line + "\n", capture_output=True, text=True, timeout=60,
                         check=True).stdout
    if "--n-best" not in flags:
        return [(l, None) for l in out.splitlines()]
    return [(l.split(" ||| ")[1], float(l.split(" ||| ")[2])) for l in out.splitlines()]


def translation_page(chrome: Chrome, sentence: str) -> None:
    s = sl.Server(TFM, MODEL, "--api-key", KEY, "--source-lang", "de", "--target-lang", "en")
    try:
        check(chrome.open(s.url("/")), "the page did not load")
        # Without the key the page cannot describe the model: it asks for the key.
        check(chrome.wait("!document.getElementById('key-box').hidden && "
                          "document.body.dataset.state === 'error'"),
              "the page did not ask for the API key")
        chrome.type("#key", KEY)
        chrome.js("document.getElementById('key').dispatchEvent(new Event('change'))")
        status_js = "document.getElementById('status').textContent"
        check(chrome.wait("document.body.dataset.state === 'idle'"),
              f"the key was not taken: {chrome.js(status_js)}")
        check("de → en" in chrome.js("document.getElementById('model').textContent"),
              "the model line lacks the languages")
        # The page waits after a key as long as the server's settings say.
        status, _, body = sl.request(s.url("/frontend/settings"))
        wait = json.loads(body).get("frontendTimeout") if status == 200 else None
        check(wait is not None and chrome.js("state.wait") == wait,
              f"the page waits {chrome.js('state.wait')} ms, /frontend/settings says {wait}")

        chrome.type("#source", sentence)
        done = chrome.wait("document.body.dataset.state === 'idle' && "
                           "document.getElementById('translation').textContent !== ''", 30)
        check(done, "no translation appeared")
        shown = chrome.js("document.getElementById('translation').textContent")
        best = nbest_reference(MODEL, sentence, "--beam-size", "4")
        check([shown] == [t for t, _ in best] if best else False,
              f"the page shows {shown!r}, tfm translate --beam-size 4 {best}")
        nbest = nbest_reference(MODEL, sentence, "--beam-size", "4", "--n-best", "3")
        alternatives = chrome.js("[...document.querySelectorAll('#alternatives li')].map("
                                 "li => [li.firstChild.textContent, "
                                 "parseFloat(li.querySelector('.score').textContent)])")
        check(len(alternatives) == 3 and [a for a, _ in alternatives] == [t for t, _ in nbest] and
              all(abs(a - b) < 2e-3 for (_, a), (_, b) in zip(alternatives, nbest)),
              f"alternatives {alternatives} != tfm translate --n-best 3 {nbest}")

        # The heat map: a row per target token of the chosen alternative, a column per source
        # token (and EOS); the API's tokens for the same request are the reference.
        status, _, body = sl.request(s.url("/v1/translate"), {
            "text": [sentence], "beam_size": 4, "n_best": 3, "return_attention": True},
            {"Authorization": "Bearer " + KEY})
        api = json.loads(body)["attention"][0] if status == 200 else []
        for k in range(min(3, len(api))):
            chrome.js(f"document.querySelectorAll('#alternatives li')[{k}].click()")
            rows = chrome.js("[...document.querySelectorAll('#heatmap tbody tr')].map("
                             "tr => tr.querySelector('th').textContent)")
            columns = chrome.js("document.querySelectorAll('#heatmap thead th').length - 1")
            cells = chrome.js("document.querySelectorAll('#heatmap tbody td').length")
            want = api[k]["target_tokens"]
            spelled = "".join(rows).replace("\u2581", " ").strip()
            check(rows == want and len(rows) > 0 and spelled == nbest[k][0] and
                  columns == len(api[k]["source_tokens"]) == len(sentence.split()) + 1 and
                  cells == len(rows) * columns,
                  f"heat map of alternative {k + 1}: rows {rows} (want {want}, spelling "
                  f"{nbest[k][0]!r}), {columns} columns, {cells} cells")
        chrome.js("document.querySelectorAll('#alternatives li')[0].click()")
        chrome.screenshot(os.path.join(SHOTS, "serve_page.png"))
    finally:
        check(s.stop() == 0, "page server: SIGTERM exit status")


def prompt_page(chrome: Chrome, prompt: str) -> None:
    s = sl.Server(TFM, LM)
    try:
        check(chrome.open(s.url("/")), "the page did not load (decoder-only model)")
        check(chrome.wait("document.body.classList.contains('decoder-only') && "
                          "document.body.dataset.state === 'idle'"),
              "the page did not switch to the prompt box")
        visible = chrome.js("[...document.querySelectorAll('label[for=source]')].filter("
                            "l => l.offsetParent !== null).map(l => l.textContent)")
        check(visible == ["Prompt"], f"the decoder-only page's labels: {visible}")
        chrome.type("#source", prompt)
        chrome.js("document.getElementById('run').click()")
        check(chrome.wait("document.body.dataset.state === 'idle' && "
                          "document.getElementById('translation').textContent !== ''", 30),
              "no continuation appeared")
        shown = chrome.js("document.getElementById('translation').textContent")
        want = nbest_reference(LM, prompt, "--beam-size", "4", "--n-best", "3", "--max-length",
                               "64", command="generate")
        alternatives = chrome.js("[...document.querySelectorAll('#alternatives li')].map("
                                 "li => li.firstChild.textContent)")
        check(want and shown == want[0][0] and alternatives == [t for t, _ in want],
              f"the page continues {prompt!r} as {shown!r} / {alternatives}, tfm generate {want}")
        chrome.screenshot(os.path.join(SHOTS, "serve_page_prompt.png"))
    finally:
        check(s.stop() == 0, "prompt server: SIGTERM exit status")


def main() -> int:
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if not binary:
        print("serve_page_test.py: skipped: no chromium (scripts/setup.sh installs Debian's)")
        return 77
    with open(SENTENCES, encoding="utf-8") as f:
        sentence = next(l.strip() for l in f if len(l.split()) >= 4)
    chrome = Chrome(binary)
    try:
        translation_page(chrome, sentence)
        prompt_page(chrome, " ".join(nbest_reference(MODEL, sentence)[0][0].split()[:2]))
    finally:
        chrome.close()
    print(f"serve_page_test.py: screenshots in {SHOTS}/serve_page.png, serve_page_prompt.png")
    return sl.summary("serve_page_test.py")


if __name__ == "__main__":
    sl.main_guard(main)
