#!/usr/bin/env python3
"""Watches fieldlog's live page in Debian's headless chromium while a walk is recorded, and reports, as JSON.

    live_check.py URL --cards N [--photos N] [--timeout SECONDS] [--page-all] [--ready FILE] [--phone PNG]
                  [--desktop PNG]

Opens URL at phone size, marks the page's window (a reload would lose the mark), creates FILE (--ready: a
browser can take many seconds to start on a busy machine, and a test must not go on before), then looks every half
second until N cards are shown, with --photos photos (default N) decoded, and the status line no longer reports a
failing photo source, or until the timeout. With --page-all it then scrolls to the bottom until the page has
no older milestones to load (reported as "paged": the probe after). Then takes the phone screenshot, switches to the grid at desktop
size and takes the desktop screenshot. Prints {"timeline": [{"t", "milestones", "images", "status"}, ... one
entry per change], "reloaded": whether the mark was lost, "final": page_check's probe of the last look,
"grid": the probe at desktop size in the grid view}.
"""
import argparse
import base64
import json
import sys
import time

from page_check import PROBE, Browser

STATUS = "(() => { const s = document.getElementById('status'); return s ? s.textContent : ''; })()"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url")
    parser.add_argument("--cards", type=int, required=True)
    parser.add_argument("--photos", type=int, help="photos to wait for (default: as many as cards)")
    parser.add_argument("--timeout", type=float, default=120)
    parser.add_argument("--page-all", action="store_true")
    parser.add_argument("--ready")
    parser.add_argument("--phone")
    parser.add_argument("--desktop")
    args = parser.parse_args()
    browser = Browser(412, 915)
    try:
        target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = browser.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]

        def evaluate(expression):
            reply = browser.send("Runtime.evaluate", {"expression": expression, "returnByValue": True},
                                 session=session)
            return reply["result"].get("value")

        def screenshot(path):
            if path:
                shot = browser.send("Page.captureScreenshot", {"format": "png"}, session=session)
                with open(path, "wb") as out:
                    out.write(base64.b64decode(shot["data"]))

        def size(width, height):
            browser.send("Emulation.setDeviceMetricsOverride",
                         {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600},
                         session=session)

        browser.send("Page.enable", session=session)
        size(412, 915)
        browser.send("Page.navigate", {"url": args.url}, session=session)
        browser.wait_for("Page.loadEventFired", session)
        evaluate("window.fieldlogMark = 1")
        if args.ready:
            open(args.ready, "w").close()
        start = time.monotonic()
        timeline = []
        seen = None
        while time.monotonic() - start < args.timeout:
            look = json.loads(evaluate(PROBE))
            status = evaluate(STATUS)
            entry = {"milestones": look["milestones"], "images": look["images"], "status": status}
            if entry != seen:
                timeline.append({"t": round(time.monotonic() - start, 1), **entry})
                seen = entry
            photos = args.cards if args.photos is None else args.photos
            done = (len(look["milestones"]) >= args.cards and len(look["images"]) >= photos
                    and all(width > 0 for width in look["images"]) and "retrying" not in status)
            if done:
                break
            time.sleep(0.5)
        final = json.loads(evaluate(PROBE))
        paged = None
        if args.page_all:
            deadline = time.monotonic() + 60
            while evaluate("!!document.getElementById('older')") and time.monotonic() < deadline:
                evaluate("window.scrollTo(0, document.body.scrollHeight)")
                time.sleep(0.5)
            paged = json.loads(evaluate(PROBE))
            evaluate("window.scrollTo(0, 0)")
        reloaded = evaluate("window.fieldlogMark") != 1
        screenshot(args.phone)
        size(1280, 900)
        evaluate("document.getElementById('view-grid').click()")
        grid = json.loads(evaluate(PROBE))
        screenshot(args.desktop)
        print(json.dumps({"timeline": timeline, "reloaded": reloaded, "final": final, "paged": paged, "grid": grid}))
    finally:
        browser.close()


if __name__ == "__main__":
    sys.exit(main())
