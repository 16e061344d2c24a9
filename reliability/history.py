#!/usr/bin/python3
"""Start-up cost against the number of walks stored: a year of walks.

    reliability/history.py FIELDLOG [--walks N] [--hours H] [--baseline OLD_FIELDLOG]

Writes N walks of H hours each (1 Hz fixes, a milestone every 100 m, every milestone still waiting for a
photo, as after a season without network) into a state directory, then measures with the real binary:
  - `fieldlog walks`: wall time and peak memory, first run (builds walks.index) and second run;
  - `fieldlog run --photos-dir demo/photos` against a private gpsd (gpsfake, bundg_zeus_9): wall time from
    exec to "connected to gpsd" (everything before recording: repairing, reading, queueing), peak memory
    over the whole run, and whether the live walk's milestones got their photos before any older walk's.
With --baseline, the same with another fieldlog binary (e.g. one built from an older commit), side by side.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tools"))
from fieldlog_tools import start_gpsfake, stop  # noqa: E402


def stamp(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def write_walks(state, walks, hours):
    """Journals of `walks` walks, one a day, `hours` long, in fieldlog's own line format."""
    os.makedirs(state, exist_ok=True)
    start = 1_483_257_600  # 2017-01-01T08:00:00Z: before the capture the live walk is replayed from
    total = 0
    for day in range(walks):
        t0 = start + day * 86_400
        wid = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(t0))
        path = os.path.join(state, f"walk-{wid}.jsonl")
        lines = [json.dumps({"every": 100, "time": stamp(t0), "type": "walk_start", "walk": wid},
                            sort_keys=True, separators=(",", ":"))]
        lat, lon = 55.95 + (day % 50) * 0.01, -3.19
        dist = 0.0
        for second in range(int(hours * 3600)):
            lat += 1.4 / 111_320
            dist += 1.4
            lines.append(
                f'{{"alt":42.1,"dist":{dist:.1f},"eph":4.2,"lat":{lat:.7f},"lon":{lon:.7f},"mode":3,"seg":0,'
                f'"time":"{stamp(t0 + second)}","type":"fix"}}')
            if second % 72 == 0:
                lines.append(json.dumps({"dist": round(dist, 1), "index": second // 72, "lat": round(lat, 7),
                                         "lon": lon, "time": stamp(t0 + second), "type": "milestone"},
                                        sort_keys=True, separators=(",", ":")))
        lines.append(json.dumps({"dist": round(dist, 1), "time": stamp(t0 + int(hours * 3600)), "type": "walk_end"},
                                sort_keys=True, separators=(",", ":")))
        data = "\n".join(lines) + "\n"
        total += len(data)
        with open(path, "w") as f:
            f.write(data)
    return total


def peak_of(command, env=None):
    """Peak RSS (MB) of one command, via /usr/bin/time."""
    result = subprocess.run(["/usr/bin/time", "-f", "%M"] + command, capture_output=True, env=env)
    return int(result.stderr.decode().strip().splitlines()[-1]) / 1024


def run_walk(fieldlog, state, work):
    """Seconds to 'connected to gpsd', peak RSS MB, and the order in which walks got photos."""
    gpsd, port = start_gpsfake(os.path.join(REPO, "Tests/Fixtures/captures/bundg_zeus_9.log"), 0.01, wait=False)
    env = dict(os.environ, FIELDLOG_CONFIG="/dev/null")
    command = ["/usr/bin/time", "-f", "peak %M", fieldlog, "run", "--gpsd", f"127.0.0.1:{port}", "--state-dir", state,
               "--photos-dir", os.path.join(REPO, "demo/photos"), "--cache-dir", os.path.join(work, "cache")]
    started = time.monotonic()
    # A session of its own: SIGINT goes to fieldlog too, not only to /usr/bin/time (which ignores it).
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, start_new_session=True)
    # A binary that serves the backlog first may never get to the live walk: give up after the replay and a
    # margin.
    timer = threading.Timer(150, lambda: os.killpg(process.pid, signal.SIGINT))
    timer.start()
    ready = served = None
    log = []
    for raw in process.stderr:
        line = raw.decode(errors="replace")
        log.append(line)
        if ready is None and "connected to gpsd" in line:
            ready = time.monotonic() - started
        # The live walk (bundg_zeus_9, from 2018: newer than every stored walk) is done when its five
        # milestones have photos, which must come before the backlog's.
        if "milestone 4: photo" in line:
            served = time.monotonic() - started
            os.killpg(process.pid, signal.SIGINT)
    process.wait()
    timer.cancel()
    stop(gpsd)  # with its gpsd: gpsd.kill() ended gpsfake only and left its gpsd running
    peak = next((int(l.split()[1]) / 1024 for l in log if l.startswith("peak ")), float("nan"))
    return ready, served, peak, "".join(log)


def seconds(value):
    return "never" if value is None else f"{value:.2f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("fieldlog")
    parser.add_argument("--walks", type=int, default=365)
    parser.add_argument("--hours", type=float, default=6)
    parser.add_argument("--baseline", help="another fieldlog binary to measure side by side")
    arguments = parser.parse_args()
    work = tempfile.mkdtemp(prefix="fieldlog-history-")
    template = os.path.join(work, "template")
    size = write_walks(template, arguments.walks, arguments.hours)
    print(f"{arguments.walks} walks of {arguments.hours} h: {size / 1e6:.0f} MB of journals")
    print()
    print("| binary | walks, 1st run (s / MB) | walks, 2nd run (s / MB) | run: start-up to gpsd (s) | run: live walk's 5 photos (s) | run: peak MB |")
    print("|---|---|---|---|---|---|")
    binaries = [("this", arguments.fieldlog)] + ([("baseline", arguments.baseline)] if arguments.baseline else [])
    env = dict(os.environ, FIELDLOG_CONFIG="/dev/null")
    for name, binary in binaries:
        state = os.path.join(work, name)
        shutil.copytree(template, state)
        cells = []
        for _ in range(2):
            started = time.monotonic()
            peak = peak_of([binary, "walks", "--state-dir", state], env=env)
            cells.append(f"{time.monotonic() - started:.2f} / {peak:.0f}")
        ready, served, peak, log = run_walk(binary, state, work)
        if ready is None or served is None:
            print(log[-3000:], file=sys.stderr)
        print(f"| {name} | {cells[0]} | {cells[1]} | {seconds(ready)} | {seconds(served)} | {peak:.0f} |")
        shutil.rmtree(state)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
