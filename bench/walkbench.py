#!/usr/bin/env python3
"""The daemon over a long walk, export, and start-up: fieldlog side by side with gpxlogger and gpsbabel.

    bench/walkbench.py --fieldlog BIN [--hours 24] [--reps 3] [--paced-minutes 10] [--work DIR] [--out bench/results]

Writes daemon.md, export.md and startup.md into --out and prints them. Everything runs on this machine in
this run; wall times depend on its load, so the load average is recorded, and CPU seconds (user + sys from
wait4) are the figures to compare.
"""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tools")]
from fieldlog_tools import photo_sources, start_fake_flickr, start_gpsfake, stop  # noqa: E402


def memory_kb(pid):
    """(VmRSS, VmHWM, RssAnon) of a running process in KiB: resident now, its peak so far, and the private
    part of what is resident now (heap, stacks: what a leak would grow). A child's ru_maxrss would count the
    Python process it was forked from."""
    values = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(("VmRSS:", "VmHWM:", "RssAnon:")):
                    values[line.split(":")[0]] = int(line.split()[1])
    except OSError:
        return None
    return (values["VmRSS"], values["VmHWM"], values["RssAnon"]) if len(values) == 3 else None


def cpu_seconds(pid):
    """User + sys CPU seconds a running process has used so far, on wait4's clock: the run time of its threads
    (/proc/PID/task/*/schedstat, ns), since /proc/PID/stat counts 10 ms ticks, a tenth of what fieldlog uses in
    ten minutes at 1 Hz. Threads that have ended are only in /proc/PID/stat: the larger of the two."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    ticks = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    threads = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            threads += int(open(f"/proc/{pid}/task/{task}/schedstat").read().split()[0])
        except (OSError, ValueError, IndexError):
            continue
    return max(ticks, threads / 1e9)


def wakeups(pid):
    """Voluntary context switches of all the process's threads so far: each is the process going to sleep to
    wait for something, so each ends in a wake-up."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            for line in (task / "status").read_text().splitlines():
                if line.startswith("voluntary_ctxt_switches:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total


def wait_rusage(proc, block=True):
    """Reaps proc: (exit status, user+sys CPU seconds), or None if it still runs and not `block`.
    (Popen.poll would reap it and lose its resource usage.)"""
    pid, status, usage = os.wait4(proc.pid, 0 if block else os.WNOHANG)
    if pid == 0:
        return None
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_utime + usage.ru_stime


def resident_kb(pid, binary, field="Rss:"):
    """Where a running process's resident memory is, in KiB, from /proc/PID/smaps: the executable's code
    (r-xp), the rest of the executable (read-only data, Swift metadata, relocated data: the other mappings of
    the file), shared libraries and other files, and anonymous memory (heap, stacks). With field="Referenced:",
    only the pages touched since the process's /proc/PID/clear_refs was last written."""
    parts = dict.fromkeys(("code", "binary data", "libraries", "anonymous"), 0)
    part = None
    try:
        with open(f"/proc/{pid}/smaps") as f:
            for line in f:
                fields = line.split()
                if "-" in fields[0] and len(fields) >= 5 and ":" in fields[3]:
                    path = fields[5] if len(fields) >= 6 else ""
                    if path == binary:
                        part = "code" if fields[1] == "r-xp" else "binary data"
                    else:
                        part = "libraries" if path.startswith("/") else "anonymous"
                elif line.startswith(field):
                    parts[part] += int(fields[1])
    except OSError:
        return None
    return parts


def frames(pid):
    """The physical pages a running process has mapped, from /proc/PID/pagemap (root: without CAP_SYS_ADMIN the
    kernel hides the frame numbers), as a set of page frame numbers; pages swapped out are not in it."""
    found = set()
    try:
        with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/pagemap", "rb") as pagemap:
            for line in maps:
                low, high = (int(x, 16) for x in line.split()[0].split("-"))
                if low >= 1 << 47:  # [vsyscall]: pagemap has no entries for it
                    continue
                pagemap.seek(low // 4096 * 8)
                data = pagemap.read((high - low) // 4096 * 8)
                for (entry,) in struct.iter_unpack("<Q", data):
                    if entry >> 63:
                        found.add(entry & ((1 << 55) - 1))
    except OSError:
        return None
    return None if found == {0} else found  # {0}: the frame numbers are hidden


def held_kb(pids):
    """What a set of processes holds in memory, in KiB: every physical page any of them has mapped, counted once
    (a page of the executable, a library or the page cache that two of them map is one page). For one process it
    is its resident memory; for several, unlike the sum of their resident memory, it does not count shared pages
    again for each process. None if a process has gone or the frame numbers are hidden (not root)."""
    union = set()
    for pid in pids:
        pages = frames(pid)
        if not pages:
            return None
        union |= pages
    return len(union) * 4


def mb_parts(parts):
    """resident_kb's parts as text: "code 5.4, binary data 3.2, ..." (MB)."""
    return ", ".join(f"{part} {kb / 1024:.1f}" for part, kb in parts.items())


def swift_floor_kb(work):
    """Where the resident memory of the smallest static Swift program is (it prints, then sleeps), with the
    static Swift runtime, lld and packed relocations as in fieldlog's release link: what any program on that
    runtime starts with. None without swiftc."""
    source, program = work / "floor.swift", work / "floor"
    source.write_text("import Glibc\nprint(\"up\")\nfflush(stdout)\nsleep(30)\n")
    try:
        subprocess.run(["swiftc", "-Osize", "-static-stdlib", "-use-ld=lld", "-Xlinker", "-z", "-Xlinker",
                        "pack-relative-relocs", str(source), "-o", str(program)], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except (OSError, subprocess.CalledProcessError):
        return None
    proc = subprocess.Popen([str(program)], stdout=subprocess.PIPE)
    try:
        proc.stdout.readline()
        return resident_kb(proc.pid, str(program))
    finally:
        proc.kill()
        proc.wait()


def last_fix_time(journal: Path):
    """GPS time (epoch seconds) of the last complete fix line of a journal, read from its tail."""
    try:
        with open(journal, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 4096))
            tail = f.read().split(b"\n")[:-1]
    except OSError:
        return None
    for raw in reversed(tail):
        try:
            line = json.loads(raw)
        except ValueError:
            continue
        if line.get("type") == "fix":
            return parse_time(line["time"])
    return None


def parse_time(text):
    return time.mktime(time.strptime(text[:19], "%Y-%m-%dT%H:%M:%S")) - time.timezone


def machine():
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    return f"{os.cpu_count()} cores ({cpu}), load average {os.getloadavg()[0]:.2f}"


# --- the daemon ------------------------------------------------------------------------------------------

def run_daemon(binary, capture, work, flickr):
    """One replay of the capture through gpsfake into `fieldlog run --once`; returns its figures."""
    run_dir = work / ("daemon-photos" if flickr else "daemon-plain")
    shutil.rmtree(run_dir, ignore_errors=True)
    state, cache = run_dir / "state", run_dir / "cache"
    run_dir.mkdir(parents=True)
    sources = photo_sources(binary, "flickr" if flickr else "none")
    gpsfake, port = start_gpsfake(capture, log=work / "gpsfake.log")
    env = dict(os.environ, FIELDLOG_CONFIG="/dev/null", FLICKR_API_KEY=flickr.api_key if flickr else "")
    args = [binary, "run", "--once", "--gpsd", f"127.0.0.1:{port}", "--state-dir", str(state),
            "--cache-dir", str(cache), "--photo-retry-max", "2", *sources]
    if flickr:
        args += ["--flickr-endpoint", flickr.endpoint, "--flickr-rate", "100000000"]
    started = time.monotonic()
    proc = subprocess.Popen(args, env=env, stderr=open(run_dir / "fieldlog.log", "wb"))
    samples = []  # (walked hours, RSS KiB)
    walk_start = None
    peak = 0
    code_kb = None
    while (result := wait_rusage(proc, block=False)) is None:
        memory = memory_kb(proc.pid)
        if code_kb is None and samples and samples[-1][0] > 0.5:
            code_kb = (resident_kb(proc.pid, binary) or {}).get("code")
        journals = list(state.glob("*.jsonl"))
        walked = last_fix_time(journals[0]) if journals else None
        if memory:
            peak = max(peak, memory[1])
            if walked is not None:
                walk_start = walk_start or walked
                samples.append(((walked - walk_start) / 3600, memory[0], memory[2]))
        time.sleep(0.2)
    status, cpu = result
    wall = time.monotonic() - started
    stop(gpsfake)
    journal = next(state.glob("*.jsonl"))
    lines = journal.read_bytes().splitlines()
    records = [json.loads(l) for l in lines]
    fixes = [r for r in records if r["type"] == "fix"]
    walked_hours = (parse_time(fixes[-1]["time"]) - parse_time(fixes[0]["time"])) / 3600
    photos = [r for r in records if r["type"] == "photo" and r.get("status") == "found"]
    first_hour = [rss for hours, rss, _ in samples if hours <= 1]
    later = [rss for hours, rss, _ in samples if hours > 1]
    anon_first = [anon for hours, _, anon in samples if hours <= 1]
    anon_later = [anon for hours, _, anon in samples if hours > 1]
    return {
        "status": status, "cpu": cpu, "wall": wall, "peak_kb": peak, "walked_hours": walked_hours,
        "fixes": len(fixes), "milestones": sum(r["type"] == "milestone" for r in records), "photos": len(photos),
        "journal_bytes": journal.stat().st_size,
        "rss_hour1_kb": max(first_hour) if first_hour else None,
        "rss_after_kb": max(later) if later else None,
        "rss_final_kb": samples[-1][1] if samples else None,
        "anon_hour1_kb": max(anon_first) if anon_first else None,
        "anon_after_kb": max(anon_later) if anon_later else None,
        "anon_final_kb": samples[-1][2] if samples else None,
        "code_kb": code_kb,
        "rss_by_hour": hourly(samples),
        "journal": journal,
    }


def hourly(samples):
    by_hour = {}
    for hours, rss, _ in samples:
        by_hour[int(hours)] = max(by_hour.get(int(hours), 0), rss)
    return [by_hour[h] for h in sorted(by_hour)]


def run_gpxlogger(capture, work):
    gpsfake, port = start_gpsfake(capture, log=work / "gpsfake.log")
    out = work / "gpxlogger.gpx"
    started = time.monotonic()
    proc = subprocess.Popen(["gpxlogger", "-e", "sockets", "-f", str(out), f"127.0.0.1:{port}"],
                            stderr=subprocess.DEVNULL)
    samples = []
    peak = 0
    while (result := wait_rusage(proc, block=False)) is None:
        memory = memory_kb(proc.pid)
        if memory:
            samples.append(memory[0])
            peak = max(peak, memory[1])
        time.sleep(0.2)
    status, cpu = result
    wall = time.monotonic() - started
    stop(gpsfake)
    return {"status": status, "cpu": cpu, "wall": wall, "peak_kb": peak,
            "rss_final_kb": samples[-1] if samples else None, "points": out.read_bytes().count(b"<trkpt")}


def spread(values, fmt="{:.2f}"):
    return f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}–{fmt.format(max(values))})"


def daemon_section(binary, capture, work, reps, jpeg, fakes):
    flickr = start_fake_flickr(jpeg, fakes)
    photo_runs, plain_runs, gpx_runs = [], [], []
    load_before = os.getloadavg()[0]
    for rep in range(reps):
        photo_runs.append(run_daemon(binary, capture, work, flickr))
        plain_runs.append(run_daemon(binary, capture, work, None))
        gpx_runs.append(run_gpxlogger(capture, work))
        print(f"  daemon rep {rep + 1}/{reps}: fieldlog {photo_runs[-1]['cpu']:.2f} s CPU with photos, "
              f"{plain_runs[-1]['cpu']:.2f} s without; gpxlogger {gpx_runs[-1]['cpu']:.2f} s", file=sys.stderr)
    flickr.stop()
    hours = photo_runs[0]["walked_hours"]
    mb = lambda kb: kb / 1024  # noqa: E731
    rows = [
        ("fieldlog run, photos from the fake Flickr", photo_runs),
        ("fieldlog run, no photo source", plain_runs),
    ]
    text = [f"### The daemon over a {hours:.1f}-hour walk at 1 Hz\n",
            f"Replay: `bench/walk.py` ({photo_runs[0]['fixes']} fixes, {photo_runs[0]['milestones']} milestones), "
            "through gpsfake (`-c 0`, as fast as gpsd takes it) into `fieldlog run --once` (release build), "
            f"{reps} repetitions, medians (min–max). Machine: {machine()}; load average {load_before:.2f} before.\n",
            "| run | CPU s per walked hour | peak RSS MB | RSS MB: hour 1 / after / final | RSS growth after hour 1 MB | "
            "private (anon) MB: hour 1 / after / final | journal KB per hour | photos | photos per s | wall s |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for name, runs in rows:
        r0 = runs[0]
        text.append(
            f"| {name} | {spread([r['cpu'] / r['walked_hours'] for r in runs], '{:.3f}')} "
            f"| {spread([mb(r['peak_kb']) for r in runs], '{:.1f}')} "
            f"| {mb(r0['rss_hour1_kb'] or 0):.1f} / {mb(r0['rss_after_kb'] or 0):.1f} / {mb(r0['rss_final_kb'] or 0):.1f} "
            f"| {spread([mb((r['rss_after_kb'] or 0) - (r['rss_hour1_kb'] or 0)) for r in runs], '{:.2f}')} "
            f"| {mb(r0['anon_hour1_kb'] or 0):.1f} / {mb(r0['anon_after_kb'] or 0):.1f} / {mb(r0['anon_final_kb'] or 0):.1f} "
            f"| {statistics.median([r['journal_bytes'] / r['walked_hours'] / 1024 for r in runs]):.0f} "
            f"| {r0['photos']} "
            f"| {spread([r['photos'] / r['wall'] for r in runs], '{:.1f}')} "
            f"| {spread([r['wall'] for r in runs], '{:.0f}')} |")
    text.append(
        f"| gpxlogger (gpsd's own logger, GPX out) | {spread([r['cpu'] / hours for r in gpx_runs], '{:.3f}')} "
        f"| {spread([mb(r['peak_kb']) for r in gpx_runs], '{:.1f}')} | – / – / {mb(gpx_runs[0]['rss_final_kb'] or 0):.1f} "
        f"| – | – | – | – | – | {spread([r['wall'] for r in gpx_runs], '{:.0f}')} |")
    r0 = photo_runs[0]
    text.append("")
    text.append(
        f"Of fieldlog's {mb(r0['rss_final_kb'] or 0):.1f} MB resident at the end of the photo run, "
        f"{mb(r0['anon_final_kb'] or 0):.1f} MB is private (heap, stacks: what a leak would grow) and the rest is "
        f"file-backed: {mb(r0['code_kb'] or 0):.1f} MB of it the executable's own code pages (`/proc/PID/smaps`, "
        f"r-xp; the static binary has {text_size(binary) / 1e6:.1f} MB of .text), shared with the page cache and "
        "dropped by the kernel under memory pressure, then libc, libstdc++, libjpeg and the rest.")
    ratio = statistics.median([r["cpu"] for r in plain_runs]) / max(1e-9, statistics.median([r["cpu"] for r in gpx_runs]))
    text.append("")
    text.append(f"fieldlog without photos uses {ratio:.1f}× gpxlogger's CPU on the same replay "
                "(gpxlogger only writes GPX; fieldlog also filters, measures, journals with fsync and keeps status.json).")
    text.append("RSS (MB) at the end of each walked hour, first photo run: "
                + ", ".join(f"{mb(kb):.1f}" for kb in photo_runs[0]["rss_by_hour"]) + ".")
    fieldlog_runs = photo_runs + plain_runs
    peak = max(mb(r["peak_kb"]) for r in fieldlog_runs)
    growth = max(mb((r["rss_after_kb"] or 0) - (r["rss_hour1_kb"] or 0)) for r in fieldlog_runs)
    cpu = max(r["cpu"] / r["walked_hours"] for r in fieldlog_runs)
    met = peak < 30 and growth < 1 and cpu < 1
    text.append("")
    text.append(f"Target: resident memory under 30 MB and flat (under 1 MB of growth after the first hour), "
                f"CPU under 1 s per walked hour. Here, the worst of all {len(fieldlog_runs)} fieldlog runs: peak "
                f"{peak:.1f} MB, growth {growth:.2f} MB, {cpu:.3f} CPU s per walked hour (thumbnails included): "
                f"**{'met' if met else 'not met'}**. At a real 1 Hz, see the paced run below.")
    return "\n".join(text) + "\n", photo_runs[0]["journal"]


def thumbnail_cpu_ms(binary, jpeg, work, count=20):
    """Median CPU milliseconds `fieldlog thumbnail` spends on `jpeg` (read, decode, resize, encode), over
    `count` copies in one process: what the daemon spends per photo on top of its own work."""
    folder = work / "thumbnail-cost"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    copies = []
    for index in range(count):
        copies.append(folder / f"copy{index}.jpg")
        shutil.copyfile(jpeg, copies[-1])
    done = subprocess.run([binary, "thumbnail", "--timings", "--out", str(folder / "out"), *map(str, copies)],
                          check=True, capture_output=True, text=True)
    times = [float(line.split("\t")[1]) for line in done.stderr.splitlines() if line.startswith("time\t")]
    return statistics.median(times)


def worker_cpu_ms(binary, jpeg, count=20):
    """Median CPU milliseconds of one `fieldlog photo-worker` on `jpeg`, its start included (user + sys from
    wait4): what `fieldlog run` spends on each photo's thumbnail, which it makes in a child process."""
    times = []
    for _ in range(count):
        with open(jpeg, "rb") as photo:
            proc = subprocess.Popen([binary, "photo-worker", "--size", "320"], stdin=photo,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            status, cpu = wait_rusage(proc)
        if status != 0:
            raise SystemExit(f"fieldlog photo-worker failed on {jpeg} ({status})")
        times.append(cpu * 1000)
    return statistics.median(times)


# Looks (one every 0.5 s, plus the time each takes) in a window of the working-set measure: about a minute.
WINDOW_LOOKS = 120


def paced_section(binary, work, minutes, jpeg, fakes):
    """fieldlog with photos from the fake Flickr, fieldlog with no photo source, and gpxlogger, all on one
    gpsd fed in real time: one fix a second. The fast replay hides what fieldlog does per second of its own
    clock (thread wake-ups, the journal's fsync every 5 s, status.json); this shows it."""
    capture = work / f"walk-{minutes:g}min.nmea"
    if not capture.exists():
        subprocess.run([sys.executable, str(HERE / "walk.py"), str(minutes / 60), str(capture)], check=True)
    flickr = start_fake_flickr(jpeg, fakes)
    run_dir = work / "paced"
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    flickr_only, no_photos = photo_sources(binary, "flickr"), photo_sources(binary, "none")
    # Two sentences (GGA, RMC) per fix: 0.5 s each is 1 Hz.
    gpsfake, port = start_gpsfake(capture, 0.5, log=work / "gpsfake.log")
    procs, states = {}, {}
    # The same as "plain" with its journal in memory: what the journal's writes and fsyncs cost on this disk.
    memory_dir = Path(tempfile.mkdtemp(prefix="fieldlog-bench-", dir="/dev/shm")) if Path("/dev/shm").is_dir() else None
    runs = [("photos", flickr.api_key,
             ["--flickr-endpoint", flickr.endpoint, "--flickr-rate", "100000000", *flickr_only], run_dir),
            ("plain", "", no_photos, run_dir)]  # No API key and no folder: no photo source.
    if memory_dir:
        runs.append(("tmpfs", "", no_photos, memory_dir))
    for name, key, photo_args, root in runs:
        states[name] = root / name / "state"
        procs[name] = subprocess.Popen(
            [binary, "run", "--once", "--gpsd", f"127.0.0.1:{port}", "--state-dir", str(states[name]),
             "--cache-dir", str(root / name / "cache"), "--photo-retry-max", "2", *photo_args],
            env=dict(os.environ, FIELDLOG_CONFIG="/dev/null", FLICKR_API_KEY=key),
            stderr=open(run_dir / f"{name}.log", "wb"))
    procs["gpxlogger"] = subprocess.Popen(["gpxlogger", "-e", "sockets", "-f", str(run_dir / "gpxlogger.gpx"),
                                           f"127.0.0.1:{port}"], stderr=subprocess.DEVNULL)
    peaks = dict.fromkeys(procs, 0)
    # The last look at each process before it ended: resident and private memory, wake-ups so far.
    last = {}
    results = {}
    # CPU and wake-ups when the first fix is journaled, so that start-up can be told from the steady state.
    at_first_fix = None
    # Where the memory is, looked at every 10 s or so (reading smaps is not free): the last look is kept.
    breakdown, looks = {}, 0
    executables = {"photos": binary, "plain": binary, "gpxlogger": shutil.which("gpxlogger")}
    broken_down = ("plain", "gpxlogger")
    # The working set: the pages each process touched in a window of WINDOW_LOOKS looks (the accessed bits,
    # cleared through /proc/PID/clear_refs at the window's start); the last whole window is kept.
    touched, window_start = {}, {}
    while len(results) < len(procs):
        looks += 1
        if looks % 20 == 0:
            for name in broken_down:
                # A process that has just ended (not reaped yet) has an empty smaps: not a look.
                if name not in results and (parts := resident_kb(procs[name].pid, executables[name])) \
                        and sum(parts.values()):
                    breakdown[name] = parts
        if at_first_fix is not None and looks % WINDOW_LOOKS == 0:
            for name in executables:
                if name in results:
                    continue
                if name in window_start and (parts := resident_kb(procs[name].pid, executables[name], "Referenced:")):
                    touched[name] = (parts, time.monotonic() - window_start[name])
                try:
                    Path(f"/proc/{procs[name].pid}/clear_refs").write_text("1")
                    window_start[name] = time.monotonic()
                except OSError:
                    pass
        if at_first_fix is None and all((j := list(states[n].glob("*.jsonl"))) and last_fix_time(j[0])
                                        for n in states):
            at_first_fix = {name: (cpu_seconds(proc.pid), wakeups(proc.pid)) for name, proc in procs.items()}
        for name, proc in procs.items():
            if name in results:
                continue
            memory = memory_kb(proc.pid)
            if memory:
                peaks[name] = max(peaks[name], memory[1])
                last[name] = (memory[0], memory[2], wakeups(proc.pid))
            if (result := wait_rusage(proc, block=False)) is not None:
                results[name] = result
        time.sleep(0.1 if at_first_fix is None else 0.5)
    stop(gpsfake)
    flickr.stop()
    records = {name: [json.loads(l) for l in next(states[name].glob("*.jsonl")).read_bytes().splitlines()]
               for name in states}
    if memory_dir:
        shutil.rmtree(memory_dir, ignore_errors=True)
    fixes = [r for r in records["plain"] if r["type"] == "fix"]
    photos = sum(r["type"] == "photo" and r.get("status") == "found" for r in records["photos"])
    hours = (parse_time(fixes[-1]["time"]) - parse_time(fixes[0]["time"])) / 3600
    per_hour = {name: cpu / hours for name, (_, cpu) in results.items()}
    steady = {name: (cpu - at_first_fix[name][0]) / hours for name, (_, cpu) in results.items()}
    wake = {name: (last[name][2] - at_first_fix[name][1]) / hours for name in procs}
    labels = {"photos": "fieldlog run, photos from the fake Flickr", "plain": "fieldlog run, no photo source",
              "tmpfs": "fieldlog run, no photo source, state directory on tmpfs", "gpxlogger": "gpxlogger"}
    text = [f"### Paced: {minutes:g} minutes at 1 Hz, as a walk really arrives\n",
            "The fast replay above compresses a day into minutes, so what fieldlog does per second of its own "
            "(monotonic) clock barely shows: a thread wake-up for each fix, the journal's fsync every 5 s, "
            "status.json every 30 s. Here gpsfake sends one fix a second (`-c 0.5`, two sentences per fix) to "
            "two fieldlogs (one fetching photos from the fake Flickr, one with none) and gpxlogger, all connected "
            f"to the same gpsd at once; one run, {len(fixes)} fixes. A third fieldlog without photos keeps its state "
            "directory on tmpfs (/dev/shm), where write(2) and fsync only touch memory: the difference to the one "
            f"on disk is what the journal's durability costs on this machine's disk. Machine: {machine()}.\n",
            "| run | CPU s per walked hour, whole run | after the first fix | peak RSS MB | RSS MB at the end "
            "(private) | wake-ups per walked hour after the first fix |", "|---|---|---|---|---|---|"]
    text += [f"| {labels[name]} | {per_hour[name]:.2f} | {steady[name]:.2f} | {peaks[name] / 1024:.1f} | "
             f"{last[name][0] / 1024:.1f} ({last[name][1] / 1024:.1f}) | {wake[name]:,.0f} |" for name in procs]
    text += ["", "CPU is user + sys from wait4 at the end; \"after the first fix\" subtracts what the process had "
             "used when all fieldlogs had journaled their first fix (the run time of its threads), i.e. "
             f"start-up. The photo run fetched and thumbnailed {photos} photos. After start-up, fieldlog without "
             f"photos uses {steady['plain'] / max(1e-9, steady['gpxlogger']):.1f}× gpxlogger's CPU at 1 Hz. "
             "\"At the end\" is the last look (every 0.5 s) before the process ended, some seconds after the last "
             "photo: memory between photos. Wake-ups are voluntary context switches summed over the process's "
             "threads (/proc/PID/task/*/status) between the first fix and that last look."]
    decode_ms = thumbnail_cpu_ms(binary, jpeg, work)
    per_photo_ms = worker_cpu_ms(binary, jpeg)
    without_thumbnails = steady["photos"] - photos * per_photo_ms / 1000 / hours
    worst = max(without_thumbnails, steady["plain"])
    text += ["", f"Target: under 1 CPU s per walked hour, thumbnail decoding excluded. Decoding the photo "
             f"the fake Flickr serves takes {decode_ms:.1f} ms CPU (`fieldlog thumbnail --timings`, median of 20); "
             f"`fieldlog run` does it in a child process started for each photo (`fieldlog photo-worker`), "
             f"which costs {per_photo_ms:.1f} ms CPU with its start (median of 20, wait4). So the photo run's {photos} "
             f"thumbnails took about {photos * per_photo_ms / 1000:.2f} s; after start-up that leaves "
             f"{without_thumbnails:.2f} s per walked hour with photos and {steady['plain']:.2f} s without: "
             f"**{'met' if worst < 1 else 'not met'}**."]
    ratio = steady["plain"] / max(1e-9, steady["gpxlogger"])
    text += ["", f"Targets (lean binary), photos aside: CPU per walked hour at 1 Hz after start-up at most 1.5× "
             f"gpxlogger's: {ratio:.2f}× (the run without photos; with photos, thumbnails excluded: "
             f"{without_thumbnails / max(1e-9, steady['gpxlogger']):.2f}×), "
             f"**{'met' if ratio <= 1.5 else 'not met'}**"
             + (f"; with the journal on tmpfs {steady['tmpfs'] / max(1e-9, steady['gpxlogger']):.2f}×. " if "tmpfs" in steady
                else ". ") + "Resident memory recording without photos at most 10 MB: "
             f"peak {peaks['plain'] / 1024:.1f} MB, **{'met' if peaks['plain'] <= 10 * 1024 else 'not met'}**. With "
             f"photos, back within 2 MB of that between photos: {last['photos'][0] / 1024:.1f} MB at the end against "
             f"{last['plain'][0] / 1024:.1f} MB, **{'met' if last['photos'][0] - last['plain'][0] <= 2048 else 'not met'}**. "
             f"Wake-ups per fix: {wake['plain'] / 3600:.1f} without photos, {wake['photos'] / 3600:.1f} with, "
             f"{wake['gpxlogger'] / 3600:.1f} for gpxlogger."]
    if set(broken_down) <= breakdown.keys():
        text += ["", f"Where the resident memory is (MB, `/proc/PID/smaps`, the last look before the end): fieldlog "
                 f"without photos: {mb_parts(breakdown['plain'])}; gpxlogger: {mb_parts(breakdown['gpxlogger'])}. \"code\" is the executable's "
                 "r-xp mapping, \"binary data\" its other mappings (read-only data, Swift's metadata, data relocated at "
                 "start), \"libraries\" every other file mapped (libc, libstdc++, libgps and what it links), "
                 "\"anonymous\" heap and stacks. Only \"anonymous\" and what was written of \"binary data\" are private; "
                 "the rest is the page cache's, shared and dropped under memory pressure."]
        if floor := swift_floor_kb(work):
            text[-1] += (f" For scale, the smallest static Swift program (it prints a line and sleeps; built and "
                         f"measured here, `swift_floor_kb`): {sum(floor.values()) / 1024:.1f} MB, of it "
                         f"{mb_parts(floor)}.")
    if {"plain", "gpxlogger"} <= touched.keys():
        def used(name):
            parts = touched[name][0]
            return f"{sum(parts.values()) / 1024:.1f} MB ({mb_parts(parts)})"
        seconds = min(seconds for _, seconds in touched.values())
        text += ["", f"What each process touched in {seconds:.0f} s of recording (its working set: the pages "
                 "whose accessed bit was set again after /proc/PID/clear_refs cleared them all; smaps' \"Referenced\", "
                 f"the last whole window before the end): fieldlog without photos {used('plain')}; with photos "
                 f"{used('photos') if 'photos' in touched else '–'}; gpxlogger {used('gpxlogger')}. Resident pages outside it were touched only "
                 "before (start-up, a photo): the kernel keeps them while memory is free and drops the file-backed "
                 "ones first when it is not."]
    return "\n".join(text) + "\n"


def calls(chain, *types):
    """Whether a call chain has a frame in a method of one of fieldlog's `types` (mangled after the module's
    length and name, whichever target holds it now: length and name, then the kind). Frames are preceded by a
    space; types inside other symbols' signatures are not."""
    for frame in MANGLED_FRAME.finditer(chain):
        if chain.startswith(types, frame.end() + int(frame.group(1))):
            return True
    return False


MANGLED_FRAME = re.compile(r" \$s(\d+)")


# Where the paced daemon's CPU goes, by thread and call chain; the first pattern that matches a sample wins.
PROFILE_PARTS = (
    ("the journal's fsync (every 5 s, and for each milestone)", lambda comm, chain: "fsync" in chain),
    ("status.json (rewritten in place every 30 s and on changes)", lambda comm, chain: calls(chain, "10StatusFileC")),
    ("recording each fix: walk logic (epochs, filters, distance), encoding its journal record, write(2)",
     lambda comm, chain: calls(chain, "12WalkRecorderC", "11WalkTrackerV", "14EpochCollapserV", "7GeodesyO",
                               "11JournalFileC", "12JournalCodecO", "11JournalLineV")),
    ("the binary's code paged in on its first use", lambda comm, chain: "filemap_add_folio" in chain),
    ("the rest of the `gpsd-reader` thread: waiting for gpsd in select(2) (a wake-up for each report), libgps "
     "reading and parsing its JSON", lambda comm, chain: comm == "gpsd-reader"),
    ("libdispatch's manager thread: its epoll loop and timers (its worker-pool monitor wakes every second)",
     lambda comm, chain: "_dispatch_mgr_thread" in chain),
    ("the rest, on Swift concurrency's workers: the services' start and shutdown", lambda comm, chain: True),
)


STARTUP_SKIP_S = 2


def profile_counts(data):
    """Samples of a perf.data after start-up, counted by the first of PROFILE_PARTS each matches."""
    script = subprocess.run(["perf", "script", "-i", str(data), "-F", "comm,time,ip,sym"], capture_output=True,
                            text=True).stdout
    counts = dict.fromkeys((label for label, _ in PROFILE_PARTS), 0)
    started = None
    for sample in filter(None, script.strip().split("\n\n")):
        lines = sample.splitlines()
        header = lines[0].split()
        comm, at, chain = header[0], float(header[-1].rstrip(":")), " ".join(lines[1:])
        started = at if started is None else started
        # Start-up is measured in the start-up section; the first fix arrives about 0.8 s after start.
        if at - started >= STARTUP_SKIP_S:
            counts[next(label for label, matches in PROFILE_PARTS if matches(comm, chain))] += 1
    return counts


def profile_section(binary, work, minutes):
    """perf record -g of fieldlog (no photo source) at a paced 1 Hz, its samples sorted into PROFILE_PARTS: why
    it costs more than gpxlogger. A run of its own, so that perf cannot disturb the paced figures."""
    if shutil.which("perf") is None:
        return "### Where the CPU goes at 1 Hz\n\nNot measured: `perf` is not installed (Debian: linux-perf).\n"
    capture = work / f"walk-{minutes:g}min.nmea"
    if not capture.exists():
        subprocess.run([sys.executable, str(HERE / "walk.py"), str(minutes / 60), str(capture)], check=True)
    run_dir = work / "profile"
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    no_photos = photo_sources(binary, "none")
    gpsfake, port = start_gpsfake(capture, 0.5, log=work / "gpsfake.log")
    data = run_dir / "perf.data"
    # Started under perf, so that every thread it creates is followed (attaching with -p misses later ones).
    subprocess.run(
        ["perf", "record", "-q", "-g", "-F", "20000", "-o", str(data), "--",
         binary, "run", "--once", "--gpsd", f"127.0.0.1:{port}", "--state-dir", str(run_dir / "state"),
         "--cache-dir", str(run_dir / "cache"), *no_photos],
        env=dict(os.environ, FIELDLOG_CONFIG="/dev/null", FLICKR_API_KEY=""),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    stop(gpsfake)
    counts = profile_counts(data)
    total = sum(counts.values())
    if total == 0:
        return "### Where the CPU goes at 1 Hz\n\nNot measured: perf recorded no samples (perf_event_paranoid?).\n"
    text = ["### Where the CPU goes at 1 Hz (fieldlog, no photo source)\n",
            f"A {minutes:g}-minute paced run of its own, profiled with `perf record -g -F 20000 -- fieldlog run ...` "
            f"({total} samples, one per 50 µs of CPU, after its first {STARTUP_SKIP_S} s). Samples are sorted by thread and "
            "call chain (`PROFILE_PARTS` in bench/walkbench.py), the first match winning; kernel time (context "
            "switches, syscalls) counts with the code that entered it.\n",
            "| where | share of fieldlog's CPU |", "|---|---|"]
    text += [f"| {label} | {count * 100 / total:.0f} % |" for label, count in counts.items()]
    return "\n".join(text) + "\n"


def text_size(binary):
    out = subprocess.run(["size", "-A", binary], capture_output=True, text=True).stdout
    return next((int(l.split()[1]) for l in out.splitlines() if l.startswith(".text ")), 0)


# --- export ----------------------------------------------------------------------------------------------

def timed(args, reps):
    """Runs a command `reps` times under GNU time: wall and CPU seconds, and its peak RSS in KiB (from time,
    which forks it from a small process, unlike Python)."""
    cpus, walls, peaks = [], [], []
    for _ in range(reps):
        started = time.monotonic()
        proc = subprocess.Popen(["/usr/bin/time", "-f", "%M", "--", *args],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        errors = proc.stderr.read().decode()
        # wait4 on time reports its CPU and that of the command it waited for, to the microsecond.
        status, cpu = wait_rusage(proc)
        walls.append(time.monotonic() - started)
        if status != 0:
            raise SystemExit(f"{args[0]} failed: {errors}")
        cpus.append(cpu)
        peaks.append(int(errors.strip().splitlines()[-1]))
    return {"cpu": cpus, "wall": walls, "peak": peaks}


def export_section(binary, journal, work, reps):
    state = journal.parent
    out = work / "export"
    out.mkdir(exist_ok=True)
    env_args = ["--config", "/dev/null", "--state-dir", str(state)]
    results = {}
    for fmt in ["json", "gpx", "geojson"]:
        results[f"fieldlog export → {fmt} file (fsynced)"] = timed(
            [binary, "export", *env_args, str(out / f"walk.{fmt}")], reps)
    # The page carries every cached thumbnail inline: the daemon run's cache beside its state directory.
    results["fieldlog export → html file, thumbnails inline (fsynced)"] = timed(
        [binary, "export", *env_args, "--cache-dir", str(state.parent / "cache"), str(out / "walk.html")], reps)
    results["fieldlog export → geojson on stdout (not synced, like gpsbabel's file)"] = timed(
        [binary, "export", *env_args, "--format", "geojson", "-"], reps)
    gpx = out / "walk.gpx"
    for fmt, name in [("geojson", "walk-babel.geojson"), ("kml", "walk-babel.kml")]:
        results[f"gpsbabel GPX → {fmt}"] = timed(
            ["gpsbabel", "-i", "gpx", "-f", str(gpx), "-o", fmt, "-F", str(out / name)], reps)
    points = gpx.read_bytes().count(b"<trkpt")
    babel = results["gpsbabel GPX → geojson"]
    text = [f"### Export of the walk ({points} track points, journal {journal.stat().st_size / 1e6:.1f} MB)\n",
            f"Each command {reps} times, medians (min–max); gpsbabel converts fieldlog's own GPX export of the walk. "
            f"Machine: {machine()}.\n",
            "| command | wall s | CPU s | peak RSS MB | gpsbabel → geojson ÷ this: wall, CPU |", "|---|---|---|---|---|"]
    for name, r in results.items():
        text.append(f"| {name} | {spread(r['wall'], '{:.3f}')} | {spread(r['cpu'], '{:.3f}')} "
                    f"| {statistics.median(r['peak']) / 1024:.1f} "
                    f"| {statistics.median(babel['wall']) / statistics.median(r['wall']):.1f}×, "
                    f"{statistics.median(babel['cpu']) / statistics.median(r['cpu']):.1f}× |")
    ours = [r for name, r in results.items() if name.startswith("fieldlog")]
    slowest = max(max(statistics.median(r["wall"]), statistics.median(r["cpu"])) for r in ours)
    ratio = min(statistics.median(babel["wall"]) / statistics.median(r["wall"]) for r in ours)
    met = slowest < 0.5 and ratio >= 3
    text += ["", f"Target: a {points / 3600:.0f}-hour walk exported in under 0.5 s, at least 3× faster than "
             f"gpsbabel on the same track. Here the slowest fieldlog export takes {slowest:.3f} s (the larger of its "
             f"wall and CPU medians) and is {ratio:.1f}× faster than gpsbabel → geojson (wall): "
             f"**{'met' if met else 'not met'}**."]
    return "\n".join(text) + "\n"


# --- start-up --------------------------------------------------------------------------------------------

class FakeGPSD:
    """Just enough of gpsd for a start-up measurement: a VERSION banner, then a fix every 10 ms once the
    client has asked to watch."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self.client, args=(conn,), daemon=True).start()

    def client(self, conn):
        try:
            conn.sendall(b'{"class":"VERSION","release":"3.22","rev":"3.22","proto_major":3,"proto_minor":14}\r\n')
            conn.recv(4096)
            start = time.time()
            for i in range(1000):
                stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(start + i)) + ".000Z"
                tpv = {"class": "TPV", "device": "/dev/ttyFAKE", "mode": 3, "time": stamp,
                       "lat": 55.9486 + i * 1e-5, "lon": -3.1999, "altHAE": 61.0, "eph": 5.0}
                conn.sendall(json.dumps(tpv, separators=(",", ":")).encode() + b"\r\n")
                time.sleep(0.01)
        except OSError:
            pass
        finally:
            conn.close()

    def stop(self):
        self.sock.close()


def startup_section(binary, work, reps, deb=None):
    gpsd = FakeGPSD()
    firsts, helps = [], []
    no_photos = photo_sources(binary, "none")
    for rep in range(reps):
        state = work / f"startup-{rep}"
        shutil.rmtree(state, ignore_errors=True)
        started = time.monotonic()
        proc = subprocess.Popen([binary, "run", "--config", "/dev/null", "--gpsd", f"127.0.0.1:{gpsd.port}",
                                 "--state-dir", str(state), *no_photos], stderr=subprocess.DEVNULL)
        first = None
        while first is None and time.monotonic() - started < 30:
            for journal in state.glob("*.jsonl"):
                if b'"type":"fix"' in journal.read_bytes():
                    first = time.monotonic() - started
            time.sleep(0.001)
        proc.send_signal(signal.SIGTERM)
        proc.wait()
        firsts.append(first)
        helps.append(timed([binary, "--help"], 1)["wall"][0])
    gpsd.stop()
    size = Path(binary).stat().st_size
    if deb:
        # The binary as shipped: deploy/build-deb strips it (and drops its unwind tables).
        unpacked = work / "deb-root"
        shutil.rmtree(unpacked, ignore_errors=True)
        subprocess.run(["dpkg-deb", "-x", str(deb), str(unpacked)], check=True)
        stripped = unpacked / "usr/bin/fieldlog"
    else:
        stripped = work / "fieldlog.stripped"
        subprocess.run(["strip", "-o", str(stripped), binary], check=True)
    text = ["### Start-up and size\n",
            f"{reps} starts against a fake gpsd on loopback that sends a fix every 10 ms; medians (min–max). "
            f"Machine: {machine()}.\n",
            "| measure | value |", "|---|---|",
            f"| `fieldlog run`: process start to the first fix in the journal (fsynced) | {spread([f * 1000 for f in firsts], '{:.0f}')} ms |",
            f"| `fieldlog --help` | {spread([h * 1000 for h in helps], '{:.0f}')} ms |",
            f"| release binary (static Swift runtime), as built / stripped{' as the .deb ships it' if deb else ''} | "
            f"{size / 1e6:.1f} MB / {stripped.stat().st_size / 1e6:.1f} MB |",
            f"| gpxlogger binary, for scale | {Path(shutil.which('gpxlogger')).stat().st_size / 1e3:.0f} KB (+ libgps) |"]
    if deb:
        text.insert(-1, f"| the .deb (`deploy/build-deb` of this binary) | {Path(deb).stat().st_size / 1e6:.1f} MB |")
    verified = subprocess.run([str(HERE.parent / "scripts/verify-foundation"), str(stripped)], capture_output=True,
                              text=True)
    links = "no" if verified.returncode == 0 else "**yes**: " + verified.stderr.strip().replace("\n", "; ")
    text.insert(-1, f"| full Foundation or ICU linked in (`scripts/verify-foundation`) | {links} |")
    first = statistics.median(firsts) * 1000
    stripped_mb = stripped.stat().st_size / 1e6
    targets = [f"start-up under 50 ms: {first:.0f} ms, **{'met' if first < 50 else 'not met'}**",
               f"no ICU and no full Foundation: **{'met' if verified.returncode == 0 else 'not met'}**",
               f"static binary at most 25 MB: {stripped_mb:.1f} MB stripped, "
               f"**{'met' if stripped_mb <= 25 else 'not met'}**"]
    if deb:
        deb_mb = Path(deb).stat().st_size / 1e6
        targets.append(f".deb at most 8 MB: {deb_mb:.1f} MB, **{'met' if deb_mb <= 8 else 'not met'}**")
    text += ["", "Targets (lean binary): " + "; ".join(targets) + "."]
    return "\n".join(text) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fieldlog", required=True)
    parser.add_argument("--hours", type=float, default=24)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--paced-minutes", type=float, default=10)
    parser.add_argument("--work", default=".build-bench/walk")
    parser.add_argument("--out", default=str(HERE / "results"))
    parser.add_argument("--deb", help="the .deb deploy/build-deb made of --fieldlog, for its size")
    parser.add_argument("--jpeg", default=str(HERE.parent / "demo/photos/Bridge_by_Sander_Klootwijk.jpg"))
    parser.add_argument("--fakes", help="a swift build bin directory holding fieldlog-fakes (default: build it)")
    parser.add_argument("--paced-only", action="store_true",
                        help="only the paced 1 Hz run (--paced-minutes long), printed, no files written")
    args = parser.parse_args()
    work, out = Path(args.work).resolve(), Path(args.out)
    work.mkdir(parents=True, exist_ok=True)
    if args.paced_only:
        print(paced_section(str(Path(args.fieldlog).resolve()), work, args.paced_minutes, Path(args.jpeg), args.fakes))
        return
    out.mkdir(parents=True, exist_ok=True)
    capture = work / f"walk-{args.hours:g}h.nmea"
    if not capture.exists():
        subprocess.run([sys.executable, str(HERE / "walk.py"), str(args.hours), str(capture)], check=True)
    binary = str(Path(args.fieldlog).resolve())
    daemon, journal = daemon_section(binary, capture, work, args.reps, Path(args.jpeg), args.fakes)
    if args.paced_minutes > 0:
        daemon += "\n" + paced_section(binary, work, args.paced_minutes, Path(args.jpeg), args.fakes)
        daemon += "\n" + profile_section(binary, work, args.paced_minutes / 2)
    sections = {"daemon.md": daemon, "export.md": export_section(binary, journal, work, max(5, args.reps)),
                "startup.md": startup_section(binary, work, max(5, args.reps), args.deb)}
    for name, text in sections.items():
        (out / name).write_text(text)
        print(text)


if __name__ == "__main__":
    main()
