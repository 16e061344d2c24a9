#!/usr/bin/env python3
"""A backlog of about 1,000 messages sent by `fieldlog run --share` to each destination: time and rate.

    bench/share-backlog.py --fieldlog BIN --share URL [--share URL ...] [--password-file FILE]
                           [--rate 5] [--epochs 1000] [--recorder-api http://HOST:PORT] [--work DIR]

For each destination, in a state directory of its own: a walk of EPOCHS fixes (walksim's straight walk, first
EPOCHS epochs) is replayed through gpsfake into `fieldlog run --once --share URL --share-every 1 --share-rate
0.1`, so that the destination takes the first window of messages and the rest waits in the journal; then
`fieldlog run` (no gpsd: nothing new is journaled) sends that backlog at `--share-rate RATE`. The rate is
measured on the destination's durable position (`share-*.state`, moved only by acknowledgements), from its
first move to the last message. With --recorder-api (a real OwnTracks Recorder that stores what the broker or
its /pub receives), the locations it serves for the destination's user and the device are counted too.
Any server works: fieldlog's own position says what was acknowledged.
"""
import argparse
import json
import os
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "tools")]
from fieldlog_tools import free_port, start_gpsfake, stop  # noqa: E402


def capture(walksim, epochs, out):
    """The first `epochs` epochs (GGA and RMC each) of walksim's straight walk."""
    full = out.with_suffix(".full.nmea")
    subprocess.run([walksim, "straight", "--out", str(full)], check=True, stdout=subprocess.DEVNULL)
    lines = full.read_text().splitlines(keepends=True)
    header = [line for line in lines if line.startswith("#")]
    sentences = [line for line in lines if not line.startswith("#")]
    out.write_text("".join(header + sentences[:2 * epochs]))
    return out


def position(state):
    """The destination's acknowledged count in its walk, from its share-*.state."""
    for path in state.glob("share-*.state"):
        try:
            return json.loads(path.read_text()).get("acknowledged", 0)
        except (OSError, ValueError):
            return None
    return None


def share_arguments(args, url, rate):
    out = ["--share", url, "--share-device", "benchdev", "--share-every", "1", "--share-rate", str(rate),
           "--photo-sources", "none"]
    if args.password_file:
        out += ["--share-password-file", str(Path(args.password_file).resolve())]
    return out


def recorder_count(api, url):
    """Locations the Recorder serves for the URL's user (its MQTT topic's or /pub's) and device benchdev."""
    user = urllib.parse.urlsplit(url).username
    query = urllib.parse.urlencode({"user": user, "device": "benchdev", "from": "1970-01-01T00:00:00",
                                    "to": "2100-01-01T00:00:00"})
    with urllib.request.urlopen(f"{api}/api/0/locations?{query}", timeout=30) as answer:
        return json.load(answer).get("count")


def run(args, url, index, walk):
    state = args.work / f"state-{index}"
    log = args.work / f"fieldlog-{index}.log"
    with open(log, "w") as out:
        gpsd, port = start_gpsfake(walk, cycle=0.002)
        subprocess.run([args.fieldlog, "run", "--once", "--gpsd", f"127.0.0.1:{port}", "--state-dir", str(state)]
                       + share_arguments(args, url, 0.1), stdout=out, stderr=out, timeout=600)
        stop(gpsd)
        before = position(state) or 0
        sender = subprocess.Popen(
            [args.fieldlog, "run", "--gpsd", f"127.0.0.1:{free_port()}", "--state-dir", str(state)]
            + share_arguments(args, url, args.rate), stdout=out, stderr=out, start_new_session=True)
        first = last = None
        acknowledged = before
        idle_since = time.monotonic()
        # Until the position has not moved for 10 s (everything sent, or a destination that stopped answering).
        while time.monotonic() - idle_since < 10:
            now_position = position(state) or 0
            now = time.monotonic()
            if now_position != acknowledged:
                first = first or now
                last = now
                acknowledged = now_position
                idle_since = now
            time.sleep(0.02)
        stop(sender)
    sent = acknowledged - before
    seconds = (last - first) if first and last else 0.0
    served = recorder_count(args.recorder_api, url) if args.recorder_api else None
    return {"url": url, "backlog": sent, "seconds": seconds, "rate": sent / seconds if seconds else 0.0,
            "acknowledged": acknowledged, "served": served}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fieldlog", required=True)
    parser.add_argument("--walksim", default=str(HERE.parent / ".build/debug/walksim"))
    parser.add_argument("--share", action="append", required=True)
    parser.add_argument("--password-file")
    parser.add_argument("--rate", type=float, default=5.0)
    parser.add_argument("--epochs", type=int, default=1000)
    parser.add_argument("--recorder-api")
    parser.add_argument("--work", type=Path, default=Path("/tmp/fieldlog-share-backlog"))
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    walk = capture(args.walksim, args.epochs, args.work / "walk.nmea")
    print(f"| destination | backlog sent | seconds | messages/s (--share-rate {args.rate:g}) | acknowledged in all | served by the Recorder |")
    print("|---|---|---|---|---|---|")
    for index, url in enumerate(args.share):
        result = run(args, url, index, walk)
        served = "" if result["served"] is None else str(result["served"])
        print(f"| `{urllib.parse.urlsplit(url)._replace(netloc=urllib.parse.urlsplit(url).hostname or '').geturl()}` "
              f"| {result['backlog']} | {result['seconds']:.1f} | {result['rate']:.2f} | {result['acknowledged']} | {served} |",
              flush=True)


if __name__ == "__main__":
    main()
