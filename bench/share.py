#!/usr/bin/env python3
"""What sharing the walk (`fieldlog run --share`) costs the recorder, at a real 1 Hz.

    bench/share.py --fieldlog BIN [--minutes 10] [--work DIR] [--out DIR]

One gpsd fed one fix a second (bench/walk.py's walk, gpsfake `-c 0.5`) serves, at once: fieldlog without
sharing; fieldlog sharing to a healthy Mosquitto broker (a private one on a free port, with a subscriber at
QoS 1); fieldlog sharing to a dead broker (a port where nothing listens: every connection refused, reconnection
with backoff for the whole walk); and fieldlog sharing to a black hole (a non-routable address: connections that
never complete). Prints (and writes share.md into --out) CPU seconds per walked hour after the first fix,
instructions (perf stat, when the kernel lets it count), peak RSS, wake-ups per walked hour, fixes journaled and
messages the subscriber received.
"""
import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tools")]
from fieldlog_tools import free_port, photo_sources, start_gpsfake, stop, wait_listening  # noqa: E402
from walkbench import cpu_seconds, last_fix_time, machine, memory_kb, parse_time, wait_rusage, wakeups  # noqa: E402


def perf_counter(pid, out):
    """`perf stat -e instructions` attached to `pid` until it exits, or None when perf cannot count here."""
    if not shutil.which("perf"):
        return None
    return subprocess.Popen(["perf", "stat", "-x", ",", "-e", "instructions:u", "-p", str(pid), "-o", str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def perf_instructions(out):
    try:
        for line in out.read_text().splitlines():
            fields = line.split(",")
            if len(fields) > 2 and "instructions" in fields[2] and fields[0].strip().isdigit():
                return int(fields[0])
    except OSError:
        pass
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fieldlog", required=True)
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--work", type=Path, default=HERE.parent / ".build-bench" / "share")
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

    # The healthy broker: its own configuration, anonymous on loopback, never the system's on 1883.
    broker_port = free_port()
    (run_dir / "mosquitto.conf").write_text(
        f"listener {broker_port} 127.0.0.1\nallow_anonymous true\npersistence false\nlog_dest none\n"
        + ("user root\n" if os.getuid() == 0 else ""))
    broker = subprocess.Popen(["mosquitto", "-c", str(run_dir / "mosquitto.conf")], stderr=subprocess.DEVNULL,
                              start_new_session=True)
    wait_listening(broker_port)
    subscriber_out = open(run_dir / "subscriber.txt", "wb")
    subscriber = subprocess.Popen(["mosquitto_sub", "-p", str(broker_port), "-t", "owntracks/#", "-q", "1", "-c",
                                   "-i", "bench-sub"], stdout=subscriber_out, stderr=subprocess.DEVNULL,
                                  start_new_session=True)
    dead_port = free_port()  # nothing listens there: refused at once, every time

    no_photos = photo_sources(binary, "none")  # before gpsfake starts: asking the binary takes a moment
    gpsfake, gpsd_port = start_gpsfake(capture, 0.5, log=args.work / "gpsfake.log")
    runs = {
        "none": [],
        "healthy": ["--share", f"mqtt://bench@127.0.0.1:{broker_port}/", "--share-device", "healthy"],
        "dead": ["--share", f"mqtt://bench@127.0.0.1:{dead_port}/", "--share-device", "dead"],
        "blackhole": ["--share", "mqtt://bench@10.255.255.1:1883/", "--share-device", "blackhole"],
    }
    procs, states, counters = {}, {}, {}
    for name, extra in runs.items():
        states[name] = run_dir / name / "state"
        procs[name] = subprocess.Popen(
            [binary, "run", "--once", "--gpsd", f"127.0.0.1:{gpsd_port}", "--state-dir", str(states[name]), *no_photos, *extra],
            env=dict(os.environ, FIELDLOG_CONFIG="/dev/null", FLICKR_API_KEY=""),
            stderr=open(run_dir / f"{name}.log", "wb"))
    peaks = dict.fromkeys(procs, 0)
    results, at_first_fix, switches = {}, None, {}
    started = time.monotonic()
    while len(results) < len(procs):
        if at_first_fix is None and all((j := list(states[n].glob("*.jsonl"))) and last_fix_time(j[0]) for n in states):
            at_first_fix = {name: (cpu_seconds(p.pid), wakeups(p.pid)) for name, p in procs.items()}
            counters = {name: perf_counter(p.pid, run_dir / f"{name}.perf") for name, p in procs.items()}
        for name, proc in procs.items():
            if name in results:
                continue
            memory = memory_kb(proc.pid)
            if memory:
                peaks[name] = max(peaks[name], memory[1])
                switches[name] = wakeups(proc.pid)
            if (result := wait_rusage(proc, block=False)) is not None:
                results[name] = result
        time.sleep(0.5 if time.monotonic() - started > 5 else 0.1)
    stop(gpsfake)
    for counter in counters.values():
        if counter:
            counter.wait(timeout=10)
    time.sleep(1)
    stop(subscriber)
    stop(broker)
    received = {name: 0 for name in runs}
    for line in (run_dir / "subscriber.txt").read_bytes().splitlines():
        if b'"_type":"location"' in line:
            received["healthy"] += 1
    fixes = {}
    for name in states:
        journal = next(states[name].glob("*.jsonl"))
        fixes[name] = [line for line in journal.read_bytes().splitlines() if b'"type":"fix"' in line]
    import json
    first, last = json.loads(fixes["none"][0]), json.loads(fixes["none"][-1])
    hours = (parse_time(last["time"]) - parse_time(first["time"])) / 3600
    steady = {name: (cpu - at_first_fix[name][0]) / hours for name, (_, cpu) in results.items()}
    wake = {name: (switches[name] - at_first_fix[name][1]) / hours for name in procs}
    instructions = {name: perf_instructions(run_dir / f"{name}.perf") for name in procs}
    labels = {"none": "fieldlog run, no sharing", "healthy": "--share to a healthy broker",
              "dead": "--share to a dead broker (refused)", "blackhole": "--share to a black hole (no answer)"}
    text = [f"Made by `bench/share.py --minutes {args.minutes:g}`: one gpsd fed one fix a second "
            f"({len(fixes['none'])} fixes) serving all of these at once, no photo source, --share-every 10. "
            f"Machine: {machine()} after the run, {load:.2f} before.", "",
            "| run | CPU s per walked hour after the first fix | vs none | instructions per walked hour "
            "| peak RSS MB | wake-ups per walked hour | fixes journaled | messages received |",
            "|---|---|---|---|---|---|---|---|"]
    for name in procs:
        count = instructions[name]
        text.append(f"| {labels[name]} | {steady[name]:.2f} | {steady[name] / steady['none']:.2f}x "
                    f"| {'–' if count is None else f'{count / hours / 1e6:.0f} M'} | {peaks[name] / 1024:.1f} "
                    f"| {wake[name]:.0f} | {len(fixes[name])} | {received[name] if name == 'healthy' else '–'} |")
    text += ["", "CPU is user + sys from wait4 at the end minus what each process had used when all of them had "
             "journaled their first fix (start-up, the broker connection); instructions are perf stat's user-space "
             "count from then on; wake-ups are voluntary context switches over the process's threads."]
    output = "\n".join(text) + "\n"
    print(output)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "share.md").write_text(output)


if __name__ == "__main__":
    sys.exit(main())
