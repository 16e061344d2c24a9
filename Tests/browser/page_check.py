#!/usr/bin/env python3
"""Opens a page in Debian's headless chromium and reports what a person would see, as JSON.

    page_check.py URL --view WIDTHxHEIGHT[:SCREENSHOT.png[:ID,ID...]] [--view ...]

Each --view loads the page afresh at that size, clicks the elements with those ids in order (the view and
filter switches), takes the screenshot if one is named, and reports; one browser serves every view, and it
runs at the lowest CPU priority, so that it does not starve the programs other tests time.

Talks the DevTools protocol over chromium's --remote-debugging-pipe (file descriptors 3 and 4, messages
ending in NUL): no browser download, no websocket library. Prints a JSON list, one object per view:
{"milestones": [data-milestone of each visible card, in page order], "images": [naturalWidth of each card
image], "svgs": count, "text": the page's visible text, "gridColumns": the card list's computed
grid-template-columns}.
"""
import argparse
import base64
import fcntl
import json
import os
import subprocess
import sys

PROBE = """(() => {
  const cards = [...document.querySelectorAll('[data-milestone]')].filter(c => c.offsetParent !== null);
  return JSON.stringify({
    milestones: cards.map(c => Number(c.dataset.milestone)),
    images: cards.flatMap(c => [...c.querySelectorAll('img')].map(i => i.complete ? i.naturalWidth : -1)),
    svgs: document.querySelectorAll('svg').length,
    text: document.body.innerText,
    gridColumns: getComputedStyle(document.querySelector('.cards')).gridTemplateColumns,
  });
})()"""


class Browser:
    def __init__(self, width, height):
        commands, self.to_browser = os.pipe()
        self.from_browser, replies = os.pipe()
        # chromium reads commands on fd 3 and writes replies on fd 4: moved there in the child, from
        # numbers that cannot collide with 3 and 4.
        commands_high = fcntl.fcntl(commands, fcntl.F_DUPFD, 10)
        replies_high = fcntl.fcntl(replies, fcntl.F_DUPFD, 10)
        os.close(commands)
        os.close(replies)

        def pipes_at_3_and_4():
            os.dup2(commands_high, 3)
            os.dup2(replies_high, 4)
            os.nice(19)

        self.process = subprocess.Popen(
            ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
             "--remote-debugging-pipe", f"--window-size={width},{height}", "about:blank"],
            preexec_fn=pipes_at_3_and_4, close_fds=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(commands_high)
        os.close(replies_high)
        self.buffer = b""
        self.next_id = 0
        self.events = []

    def send(self, method, params=None, session=None):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.to_browser, json.dumps(message).encode() + b"\0")
        while True:
            reply = self.receive()
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]
            self.events.append(reply)

    def receive(self):
        while b"\0" not in self.buffer:
            chunk = os.read(self.from_browser, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def wait_for(self, method, session):
        while True:
            event = self.events.pop(0) if self.events else self.receive()
            if event.get("method") == method and event.get("sessionId") == session:
                return event

    def close(self):
        try:
            self.send("Browser.close")
        except RuntimeError:
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url")
    parser.add_argument("--view", action="append", required=True)
    args = parser.parse_args()
    browser = Browser(1280, 900)
    reports = []
    try:
        for view in args.view:
            size, screenshot, clicks = (view.split(":") + ["", ""])[:3]
            width, height = (int(v) for v in size.split("x"))
            target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
            session = browser.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
            browser.send("Page.enable", session=session)
            browser.send("Emulation.setDeviceMetricsOverride",
                         {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600},
                         session=session)
            browser.send("Page.navigate", {"url": args.url}, session=session)
            browser.wait_for("Page.loadEventFired", session)
            for element in filter(None, clicks.split(",")):
                browser.send("Runtime.evaluate",
                             {"expression": f"document.getElementById({json.dumps(element)}).click()"},
                             session=session)
            result = browser.send("Runtime.evaluate", {"expression": PROBE, "returnByValue": True}, session=session)
            if screenshot:
                shot = browser.send("Page.captureScreenshot", {"format": "png"}, session=session)
                with open(screenshot, "wb") as out:
                    out.write(base64.b64decode(shot["data"]))
            reports.append(json.loads(result["result"]["value"]))
            browser.send("Target.closeTarget", {"targetId": target})
        print(json.dumps(reports))
    finally:
        browser.close()


if __name__ == "__main__":
    sys.exit(main())
