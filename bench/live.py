#!/usr/bin/env python3
"""What the live page (`fieldlog run --http`) costs the recorder, at a real 1 Hz, beside gpxlogger.

    bench/live.py --fieldlog BIN [--minutes 10] [--pages 30] [--wrk-seconds 60] [--work DIR] [--out DIR]

One gpsd fed one fix a second (bench/walk.py's walk, gpsfake `-c 0.5`) serves, at once: fieldlog without
the page; fieldlog with the page and nobody looking; fieldlog with --pages pages following its event stream
(plain sockets that read everything); fieldlog with the page under wrk (32 connections on `/` and as many on
`/walk.geojson`, for --wrk-seconds in the middle of the walk); and gpxlogger. Prints (and writes live.md into
--out) a table of CPU seconds per walked hour after the first fix, peak RSS, voluntary context switches (the
process's wake-ups) per walked hour and fixes journaled, and wrk's figures.
"""
import argparse
import json
import os
import re
import selectors
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tools")]
from fieldlog_tools import free_port, photo_sources, start_gpsfake, stop  # noqa: E402
from walkbench import cpu_seconds, last_fix_time, machine, memory_kb, parse_time, wait_rusage, wakeups  # noqa: E402


class Followers:
    """`count` pages following /events: each a socket whose every byte is read, counted by event."""

    def __init__(self, port, count):
        self.events = 0
        self.refused = 0
        self.selector = selectors.DefaultSelector()
        for _ in range(count):
            conn = socket.create_connection(("127.0.0.1", port))
            conn.sendall(b"GET /events HTTP/1.1\r\nHost: bench\r\nAccept: text/event-stream\r\n\r\n")
            conn.setblocking(False)
            self.selector.register(conn, selectors.EVENT_READ)
        self.running = True
        self.thread = threading.Thread(target=self.read, daemon=True)
        self.thread.start()

    def read(self):
        while self.running:
            for key, _ in self.selector.select(timeout=0.5):
                try:
                    data = key.fileobj.recv(65536)
                except BlockingIOError:
                    continue
                if not data:
                    self.selector.unregister(key.fileobj)
                    continue
                self.events += data.count(b"\nevent: ") + data.startswith(b"event: ")
                self.refused += data.count(b" 503 ")

    def close(self):
        self.running = False
        self.thread.join()
        for key in list(self.selector.get_map().values()):
            key.fileobj.close()


def wrk(port, path, seconds):
    return subprocess.Popen(["wrk", "-t1", "-c32", f"-d{seconds}s", "--latency", f"http://127.0.0.1:{port}{path}"],
                            stdout=subprocess.PIPE, text=True)


def wrk_figures(output):
    def find(pattern):
        match = re.search(pattern, output, re.MULTILINE)
        return match.group(1) if match else "?"
    return {"rps": find(r"Requests/sec:\s+([\d.]+)"), "p50": find(r"^\s+50%\s+(\S+)"), "p99": find(r"^\s+99%\s+(\S+)"),
            "requests": find(r"(\d+) requests in"), "errors": find(r"Non-2xx or 3xx responses: (\d+)") if
            "Non-2xx" in output else "0"}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fieldlog", required=True)
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--pages", type=int, default=30)
    parser.add_argument("--wrk-seconds", type=int, default=60)
    parser.add_argument("--work", type=Path, default=HERE.parent / ".build-bench" / "live")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    binary = str(Path(args.fieldlog).resolve())
    args.work.mkdir(parents=True, exist_ok=True)
    capture = args.work / f"walk-{args.minutes:g}min.nmea"
    if not capture.exists():
        subprocess.run([sys.executable, str(HERE / "walk.py"), str(args.minutes / 60), str(capture)], check=True)
    run_dir = args.work / "run"
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    load = os.getloadavg()[0]
    no_photos = photo_sources(binary, "none")
    gpsfake, gpsd_port = start_gpsfake(capture, 0.5, log=args.work / "gpsfake.log")
    ports = {name: free_port() for name in ("idle", "pages", "wrk")}
    runs = {"plain": [], "idle": ["--http", f"127.0.0.1:{ports['idle']}"],
            "pages": ["--http", f"127.0.0.1:{ports['pages']}"], "wrk": ["--http", f"127.0.0.1:{ports['wrk']}"]}
    procs, states = {}, {}
    for name, extra in runs.items():
        states[name] = run_dir / name / "state"
        procs[name] = subprocess.Popen(
            [binary, "run", "--once", "--gpsd", f"127.0.0.1:{gpsd_port}", "--state-dir", str(states[name]), *extra,
             *no_photos],
            env=dict(os.environ, FIELDLOG_CONFIG="/dev/null", FLICKR_API_KEY=""),
            stderr=open(run_dir / f"{name}.log", "wb"))
    procs["gpxlogger"] = subprocess.Popen(["gpxlogger", "-e", "sockets", "-f", str(run_dir / "gpxlogger.gpx"),
                                           f"127.0.0.1:{gpsd_port}"], stderr=subprocess.DEVNULL)
    peaks = dict.fromkeys(procs, 0)
    results, at_first_fix, switches = {}, None, {}
    followers, hammers, wrk_out = None, None, {}
    started = time.monotonic()
    while len(results) < len(procs):
        if at_first_fix is None and all((j := list(states[n].glob("*.jsonl"))) and last_fix_time(j[0])
                                        for n in states):
            at_first_fix = {name: (cpu_seconds(p.pid), wakeups(p.pid)) for name, p in procs.items()}
            followers = Followers(ports["pages"], args.pages)
            first_fix_at = time.monotonic()
        elapsed = time.monotonic() - started
        if at_first_fix and hammers is None and time.monotonic() - first_fix_at > args.minutes * 60 / 3:
            hammers = {path: wrk(ports["wrk"], path, args.wrk_seconds) for path in ("/", "/walk.geojson")}
        for name, proc in procs.items():
            if name in results:
                continue
            memory = memory_kb(proc.pid)
            if memory:
                peaks[name] = max(peaks[name], memory[1])
                switches[name] = wakeups(proc.pid)
            if (result := wait_rusage(proc, block=False)) is not None:
                results[name] = result
        time.sleep(0.5 if elapsed > 5 else 0.1)
    stop(gpsfake)
    events = followers.events if followers else 0
    if followers:
        followers.close()
    for path, proc in (hammers or {}).items():
        wrk_out[path] = wrk_figures(proc.communicate()[0])
    fixes = {}
    for name in states:
        records = [json.loads(l) for l in next(states[name].glob("*.jsonl")).read_bytes().splitlines()]
        fixes[name] = [r for r in records if r["type"] == "fix"]
    hours = (parse_time(fixes["plain"][-1]["time"]) - parse_time(fixes["plain"][0]["time"])) / 3600
    steady = {name: (cpu - at_first_fix[name][0]) / hours for name, (_, cpu) in results.items()}
    wake = {name: (switches[name] - at_first_fix[name][1]) / hours for name in procs}
    labels = {"plain": "fieldlog run, no page", "idle": "fieldlog run --http, nobody looking",
              "pages": f"fieldlog run --http, {args.pages} pages following", "wrk": "fieldlog run --http, under wrk",
              "gpxlogger": "gpxlogger"}
    text = [f"Made by `bench/live.py --minutes {args.minutes:g} --pages {args.pages} --wrk-seconds {args.wrk_seconds}`: "
            f"one gpsd fed one fix a second ({len(fixes['plain'])} fixes) serving all of these at once, no photo "
            f"source. Machine: {machine()} after the run, {load:.2f} before.", "",
            "| run | CPU s per walked hour after the first fix | vs no page | peak RSS MB | wake-ups per walked hour "
            "| fixes journaled |", "|---|---|---|---|---|---|"]
    for name in procs:
        journaled = len(fixes[name]) if name in fixes else "–"
        text.append(f"| {labels[name]} | {steady[name]:.2f} | {steady[name] / steady['plain']:.2f}x "
                    f"| {peaks[name] / 1024:.1f} | {wake[name]:.0f} | {journaled} |")
    text += ["", f"The {args.pages} pages received {events} events in all (status every 5 s, one per milestone). "
             f"wrk ran for {args.wrk_seconds} s a third of the way into the walk, 32 connections on each path, "
             "against the fourth fieldlog:", "", "| path | requests/s | latency p50 | p99 | non-2xx |",
             "|---|---|---|---|---|"]
    text += [f"| `{path}` | {f['rps']} | {f['p50']} | {f['p99']} | {f['errors']} |" for path, f in wrk_out.items()]
    text += ["", "CPU is user + sys from wait4 at the end minus what each process had used when all fieldlogs had "
             "journaled their first fix (start-up); wake-ups are voluntary context switches summed over the "
             "process's threads (/proc/PID/task/*/status), counted the same way."]
    output = "\n".join(text) + "\n"
    print(output)
    if args.out:
        (args.out / "live.md").write_text(output)


if __name__ == "__main__":
    sys.exit(main())
