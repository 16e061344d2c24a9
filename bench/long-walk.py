#!/usr/bin/env python3
"""A walk of any length: a journal of a 48-hour walk at 10 Hz (1.7 million fixes, about 290 MB), and what each
command of fieldlog costs on it: wall time and peak resident memory (getrusage of the child, as /usr/bin/time -v
gives it).

    bench/long-walk.py BINARY [--hours 48] [--rate 10] [--before OLDER_BINARY] [--out bench/results]

The journal is written by this script in fieldlog's format (a curvy path at 1.4 m/s, a milestone every 100 m with
its photo outcome, the walk left open as a power cut leaves it). Then, in one run:
  - `walks` and `status` with no index (read whole), then again with the index (read on from where it stopped,
    after 10 s more of the walk were appended);
  - `tail -n 20`;
  - `export` to each format, and gpsbabel converting the GPX export to GeoJSON beside it (the reference tool);
  - the recorder resuming the walk: `run --once` on a real gpsd (gpsfake) replaying 30 s of fixes that continue it;
  - with --before, the same `walks`, `status` and `export` by an older build, for what it said.
Printed as a table, and written to OUT/long-walk.md (BENCHMARKS.md section 10). Goal: each command's peak ≤ 64 MB,
`walks` and `status` well under a second with the index.
"""
import argparse
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "tools")]
from fieldlog_tools import free_port, photo_sources, start_gpsfake, stop  # noqa: E402

START = 1_795_000_000  # 2026-11-18T11:06:40Z, a whole second
WALK = "20261118T110640Z"
LAT0, LON0 = 55.95, -3.2
SPEED = 1.4


class Walker:
    """A curvy walk at 1.4 m/s, stepped in time: the heading turns slowly back and forth."""

    def __init__(self):
        self.t, self.lat, self.lon, self.dist = START, LAT0, LON0, 0.0

    def step(self, dt):
        self.t += dt
        heading = 0.8 * math.sin((self.t - START) / 900) + (self.t - START) / 20000
        self.lat += SPEED * dt * math.cos(heading) / 111_195
        self.lon += SPEED * dt * math.sin(heading) / (111_195 * math.cos(math.radians(self.lat)))
        self.dist += SPEED * dt


def iso(t):
    whole = math.floor(t)
    millis = round((t - whole) * 1000)
    if millis == 1000:
        whole, millis = whole + 1, 0
    text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole))
    return text + (f".{millis:03d}".rstrip("0") if millis else "") + "Z"


def fix_line(walker):
    return (f'{{"alt":40,"dist":{walker.dist:.2f},"eph":4,"lat":{walker.lat:.7f},"lon":{walker.lon:.7f},"mode":3,'
            f'"seg":0,"speed":1.4,"time":"{iso(walker.t)}","track":90,"type":"fix"}}\n')


def write_journal(path, hours, rate, walker):
    """The walk's journal up to `hours`, `walker` left at its last fix; returns the milestones written."""
    count = int(hours * 3600 * rate)
    with open(path, "w") as out:
        out.write(f'{{"every":100,"time":"{iso(START)}","type":"walk_start","walk":"{WALK}"}}\n')
        out.write(f'{{"message":"pid 1","time":"{iso(START)}","type":"event","event":"session_start",'
                  f'"wall":"{iso(START)}"}}\n')
        next_milestone = 0
        for n in range(count):
            if n:
                walker.step(1 / rate)
            out.write(fix_line(walker))
            if walker.dist >= next_milestone * 100:
                index = next_milestone
                out.write(f'{{"dist":{walker.dist:.2f},"index":{index},"lat":{walker.lat:.7f},"lon":{walker.lon:.7f},'
                          f'"time":"{iso(walker.t)}","type":"milestone"}}\n')
                out.write(f'{{"index":{index},"radius":1000,"source":"local","status":"none_nearby","type":"photo"}}\n')
                next_milestone += 1
    return next_milestone


def nmea(sentence):
    checksum = 0
    for ch in sentence:
        checksum ^= ord(ch)
    return f"${sentence}*{checksum:02X}\r\n"


def write_capture(path, walker, seconds, rate):
    """RMC and GGA at `rate` Hz, `walker` going on from where it is."""
    def coords(lat, lon):
        la, lo = abs(lat), abs(lon)
        return (f"{int(la):02d}{(la - int(la)) * 60:07.4f}", "N" if lat >= 0 else "S",
                f"{int(lo):03d}{(lo - int(lo)) * 60:07.4f}", "E" if lon >= 0 else "W")
    with open(path, "w") as out:
        for _ in range(int(seconds * rate)):
            walker.step(1 / rate)
            la, ns, lo, ew = coords(walker.lat, walker.lon)
            whole = math.floor(walker.t)
            centis = round((walker.t - whole) * 100)
            hms = time.strftime("%H%M%S", time.gmtime(whole)) + f".{centis:02d}"
            dmy = time.strftime("%d%m%y", time.gmtime(whole))
            out.write(nmea(f"GPGGA,{hms},{la},{ns},{lo},{ew},1,09,0.2,40.0,M,50.0,M,,"))
            out.write(nmea(f"GPRMC,{hms},A,{la},{ns},{lo},{ew},2.72,0.0,{dmy},,,A"))


def run_measured(command, **kwargs):
    """Wall seconds, peak resident MB and the process, measured in a child of a fresh interpreter so that the
    peak is this command's own."""
    probe = ("import resource,subprocess,sys,time,json;t=time.monotonic();"
             "p=subprocess.run(sys.argv[2:],capture_output=True);w=time.monotonic()-t;"
             "r=resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss;"
             "sys.stderr.buffer.write(p.stderr);sys.stdout.buffer.write(p.stdout);"
             "open('/dev/fd/'+sys.argv[1],'w').write(json.dumps([w,r,p.returncode]))")
    read, write = os.pipe()
    proc = subprocess.Popen([sys.executable, "-c", probe, str(write), *command], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            pass_fds=(write,), text=True, **kwargs)
    os.close(write)
    out, err = proc.communicate()
    wall, peak_kb, code = json.loads(os.fdopen(read).read())
    return wall, peak_kb / 1024, code, out, err


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("binary")
    parser.add_argument("--hours", type=float, default=48)
    parser.add_argument("--rate", type=float, default=10)
    parser.add_argument("--before", help="an older build, for what it says of the same walk")
    parser.add_argument("--out", default=str(HERE / "results"))
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    args = parser.parse_args()
    binary = os.path.abspath(args.binary)
    work = Path(tempfile.mkdtemp(prefix="fieldlog-long-walk.", dir=os.environ.get("TMPDIR", "/var/tmp")))
    state, cache, photos = work / "state", work / "cache", work / "photos"
    for directory in (state, cache, photos):
        directory.mkdir()
    walk = WALK
    journal = state / f"walk-{walk}.jsonl"
    started = time.monotonic()
    walker = Walker()
    milestones = write_journal(journal, args.hours, args.rate, walker)
    distance = walker.dist
    size = journal.stat().st_size
    print(f"journal: {args.hours:g} h at {args.rate:g} Hz, {int(args.hours * 3600 * args.rate):,} fixes, "
          f"{milestones:,} milestones, {size / 1e6:.0f} MB, {distance / 1000:.1f} km (written in "
          f"{time.monotonic() - started:.0f} s)", flush=True)
    rows = []

    def row(name, command, check=None, env=None):
        wall, peak, code, out, err = run_measured(command, env=env)
        ok = code == 0 and (check is None or check(out, err))
        rows.append((name, wall, peak, "ok" if ok else f"FAILED (exit {code})"))
        print(f"  {name:<44} {wall:8.2f} s {peak:8.1f} MB  {rows[-1][3]}", flush=True)
        if not ok:
            print("    " + (out + err).strip().replace("\n", "\n    ")[:2000], flush=True)
        return out

    base = [binary]
    common = ["--state-dir", str(state)]
    print("fieldlog:", flush=True)
    row("walks (no index: read whole)", base + ["walks", *common], lambda o, e: walk in o)
    (state / "walks.index").unlink(missing_ok=True)
    row("status (no index: read whole)", base + ["status", *common], lambda o, e: walk in o and "open" in o)
    # Ten seconds more of the walk: the index is read on from where it stopped.
    with open(journal, "a") as out:
        for _ in range(int(10 * args.rate)):
            walker.step(1 / args.rate)
            out.write(fix_line(walker))
    row("walks (index, 10 s appended since)", base + ["walks", *common], lambda o, e: walk in o)
    row("status (index)", base + ["status", *common], lambda o, e: "open" in o)
    row("tail -n 20", base + ["tail", "-n", "20", *common], lambda o, e: len(o.splitlines()) == 20)
    for fmt in ["json", "gpx", "geojson", "html"]:
        target = work / f"walk.{fmt}"
        row(f"export {fmt}", base + ["export", *common, "--cache-dir", str(cache), str(target)],
            lambda o, e, t=target: t.exists() and t.stat().st_size > 0)
        if fmt in ("json", "gpx", "geojson"):
            rows[-1] = rows[-1][:3] + (rows[-1][3] + f", {target.stat().st_size / 1e6:.0f} MB",)
    if shutil.which("gpsbabel"):
        print("reference:", flush=True)
        row("gpsbabel GPX to GeoJSON", ["gpsbabel", "-i", "gpx", "-f", str(work / "walk.gpx"),
                                        "-o", "geojson", "-F", str(work / "babel.geojson")])
    print("the recorder resuming the walk:", flush=True)
    # Start-up alone: from the recorder's start until it has read the journal and knows the walk it may resume
    # (its log says so), with no gpsd to talk to.
    started = time.monotonic()
    recorder = subprocess.Popen([binary, "run", *common, "--cache-dir", str(cache), "--gpsd", f"127.0.0.1:{free_port()}",
                                 *photo_sources(binary, "local"), "--photos-dir", str(photos)],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    ready = None
    # A recorder that never says so is stopped after 120 s.
    watchdog = threading.Timer(120, recorder.kill)
    watchdog.start()
    for line in recorder.stdout:
        if "was interrupted" in line:
            ready = time.monotonic() - started
            break
    peak = next((int(l.split()[1]) / 1024 for l in Path(f"/proc/{recorder.pid}/status").read_text().splitlines()
                 if l.startswith("VmHWM:")), 0) if ready else 0
    watchdog.cancel()
    stop(recorder)
    rows.append(("run: start-up, the journal read to resume it", ready or 0, peak, "ok" if ready else "FAILED"))
    print(f"  {rows[-1][0]:<44} {rows[-1][1]:8.2f} s {peak:8.1f} MB  {rows[-1][3]}", flush=True)
    capture = work / "continue.nmea"
    # Paced (about 60 s): gpsfake replays whether or not anyone listens, and the recorder reads the whole journal
    # before it connects.
    walker.step(1)
    write_capture(capture, walker, 30, args.rate)
    gpsfake, port = start_gpsfake(capture, cycle=0.05)
    try:
        out = row("run --once (resume; 30 s of fixes, paced)",
                  base + ["run", "--once", *common, "--cache-dir", str(cache), "--gpsd", f"127.0.0.1:{port}",
                          *photo_sources(binary, "local"), "--photos-dir", str(photos)],
                  lambda o, e: "resuming walk" in (o + e))
    finally:
        stop(gpsfake)
    if args.before:
        print("before (an older build):", flush=True)
        said = {}
        for name, command in [("walks", ["walks"]), ("status", ["status"])]:
            proc = subprocess.run([args.before, *command, *common], capture_output=True, text=True)
            said[name] = (proc.stdout + proc.stderr).strip().splitlines()[0:2]
            print(f"  {name}: {said[name]}", flush=True)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    commit = subprocess.run(["git", "-C", str(HERE), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    lines = [f"Made by `bench/long-walk.py` on {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC at commit {commit}, "
             f"binary `{binary}`.",
             "",
             f"A journal of {args.hours:g} h at {args.rate:g} Hz written in fieldlog's format: "
             f"{int(args.hours * 3600 * args.rate):,} fixes, {milestones:,} milestones with their photo outcomes, "
             f"{size / 1e6:.0f} MB, left open. Each command is run once, on a warm page cache; peak resident is the "
             "child's getrusage maximum (what /usr/bin/time -v reports). `status` and `walks` first without "
             "walks.index (the journal read whole), then with it after 10 s more of the walk were appended (read on "
             "from where the index stopped). The resumption is `run --once` on gpsd fed 30 s of fixes that continue "
             "the walk; its wall time is the paced replay's.",
             "",
             "Goal: a 48-hour walk at 10 Hz listed, resumed, tailed and exported to each format within 64 MB, `walks` "
             "and `status` well under a second.",
             "",
             "| command | wall | peak resident | result |", "|---|---|---|---|"]
    lines += [f"| {name} | {wall:.2f} s | {peak:.1f} MB | {result} |" for name, wall, peak, result in rows]
    if args.before:
        lines += ["", "The same journal to an older build (journals over 64 MiB were skipped):", ""]
        lines += [f"- `{name}`: " + " / ".join(f"`{line}`" for line in said[name]) for name in said]
    (out_dir / "long-walk.md").write_text("\n".join(lines) + "\n")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print("kept", work)
    worst = max(peak for name, _, peak, _ in rows if not name.startswith("gpsbabel"))
    failed = [name for name, _, _, result in rows if not result.startswith("ok")]
    print(f"largest peak: {worst:.1f} MB; failed: {failed or 'none'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
