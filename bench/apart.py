#!/usr/bin/env python3
"""The recorder apart from the live page and sharing: each process's resident memory and CPU, beside the single
process of an older build and gpxlogger, on one 1 Hz replay.

    bench/apart.py SINGLE_PROCESS_BINARY BINARY [--seconds 300] [--out bench/results]

On one gpsd fed one fix a second (a generated walk, no photo source), all at once:
  - SINGLE_PROCESS_BINARY `run --http … --share mqtt://…`: a build from before the split, everything in one process;
  - BINARY `run --http … --share mqtt://…`: the recorder, and its children `live-page` and `live-share`;
  - BINARY `run`: the recorder alone (no page, no sharing);
  - gpxlogger.
Sharing goes to a Mosquitto broker on loopback started for the run; nobody opens the pages. Printed for each
process: CPU seconds per walked hour after the first fix, and at the end (MB) its resident memory
(/proc/PID/smaps, as bench/side-by-side.py measures it), the part of it no other process maps, and the part it
used in the second half of the run; for BINARY's three processes, the memory they hold together (each physical
page once, /proc/PID/pagemap: run as root) against the single process; the same as a table in OUT/apart.md
(section 8 of BENCHMARKS.md). Copy the older binary before rebuilding: each path is measured as it is.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tools")]
import walkbench  # noqa: E402
from fieldlog_tools import free_port, start_gpsfake, stop, wait_listening  # noqa: E402


def start_broker(work):
    port = free_port()
    conf = work / "mosquitto.conf"
    conf.write_text(f"listener {port} 127.0.0.1\nallow_anonymous true\npersistence false\n")
    broker = subprocess.Popen(["mosquitto", "-c", str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_listening(port)
    return broker, port


def helpers(state):
    """The pids of the recorder's children, from its status.json."""
    try:
        status = json.loads((state / "status.json").read_text())
    except (OSError, ValueError):
        return {}
    return {h["name"]: h["pid"] for h in status.get("helpers") or [] if h.get("running") and h.get("pid")}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("single")
    parser.add_argument("binary")
    parser.add_argument("--seconds", type=float, default=300)
    parser.add_argument("--out", default=str(HERE / "results"), help="directory for apart.md")
    args = parser.parse_args()
    single, binary = os.path.abspath(args.single), os.path.abspath(args.binary)
    work = Path(tempfile.mkdtemp(prefix="fieldlog-apart."))
    capture = work / "walk.nmea"
    subprocess.run([sys.executable, str(HERE / "walk.py"), str((args.seconds + 60) / 3600), str(capture)], check=True)
    broker, mqtt = start_broker(work)
    gpsfake, port = start_gpsfake(capture, 0.5, log=work / "gpsfake.log")
    gpxlogger_path = shutil.which("gpxlogger")
    share = ["--share", f"mqtt://127.0.0.1:{mqtt}/", "--share-device", "bench"]
    runs = [
        ("single process, page and sharing", single, ["--http", f"127.0.0.1:{free_port()}", *share]),
        ("recorder, page and sharing apart", binary, ["--http", f"127.0.0.1:{free_port()}", *share]),
        ("recorder alone", binary, []),
    ]
    processes, states = [], []
    try:
        for path in [single, binary, gpxlogger_path]:
            Path(path).read_bytes()
        for index, (_, path, extra) in enumerate(runs):
            state = work / str(index) / "state"
            states.append(state)
            processes.append(subprocess.Popen(
                [path, "run", "--once", "--gpsd", f"127.0.0.1:{port}", "--state-dir", str(state),
                 "--cache-dir", str(work / str(index) / "cache"), "--photo-sources", "none", *extra],
                env=dict(os.environ, FIELDLOG_CONFIG="/dev/null"), stderr=subprocess.DEVNULL))
        gpxlogger = subprocess.Popen([gpxlogger_path, "-e", "sockets", "-f", str(work / "gpxlogger.gpx"),
                                      f"127.0.0.1:{port}"], stderr=subprocess.DEVNULL)
        processes.append(gpxlogger)
        started = time.monotonic()
        while not all((found := list(s.glob("*.jsonl"))) and walkbench.last_fix_time(found[0]) for s in states) \
                or len(helpers(states[1])) < 2:
            if time.monotonic() - started > 60:
                sys.exit("no first fix journaled (or no helper processes) within 60 s")
            time.sleep(0.05)
        first_fix = time.monotonic()
        children = helpers(states[1])
        # (label, pid, binary) for every process measured, in the order printed.
        measured = [(runs[0][0], processes[0].pid, single),
                    ("  the recorder", processes[1].pid, binary),
                    ("  live-page", children["live-page"], binary),
                    ("  live-share", children["live-share"], binary),
                    (runs[2][0], processes[2].pid, binary),
                    ("gpxlogger", gpxlogger.pid, gpxlogger_path)]
        before = [walkbench.cpu_seconds(pid) for _, pid, _ in measured]
        # Halfway, every page's accessed bit cleared: what is referenced at the end is what recording uses now,
        # not what start-up touched once.
        time.sleep(max(0.0, args.seconds / 2 - (first_fix - started)))
        for _, pid, _ in measured:
            Path(f"/proc/{pid}/clear_refs").write_text("1")
        time.sleep(max(0.0, args.seconds - (time.monotonic() - started)))
        hours = (time.monotonic() - first_fix) / 3600
        cpu = [(walkbench.cpu_seconds(pid) - b) / hours for (_, pid, _), b in zip(measured, before)]

        def mb(pid, path, field):
            parts = walkbench.resident_kb(pid, path, field)
            return sum(parts.values()) / 1024 if parts else float("nan")
        resident = [mb(pid, path, "Rss:") for _, pid, path in measured]
        alone_parts = walkbench.mb_parts(walkbench.resident_kb(measured[4][1], measured[4][2]) or {})
        gpxlogger_parts = walkbench.mb_parts(walkbench.resident_kb(measured[5][1], measured[5][2]) or {})
        private = [mb(pid, path, "Private_Dirty:") + mb(pid, path, "Private_Clean:") for _, pid, path in measured]
        referenced = [mb(pid, path, "Referenced:") for _, pid, path in measured]
        held_single = walkbench.held_kb([measured[0][1]])
        held_apart = walkbench.held_kb([pid for _, pid, _ in measured[1:4]])
        held = [x / 1024 if x else float("nan") for x in (held_single, held_apart)]
        print(f"{args.seconds:g} s at 1 Hz on one gpsd, no photos, sharing to Mosquitto on loopback, no page open;"
              f" CPU after the first fix, memory at the end (MB):")
        print(f"  {'process':<36} {'resident':>9} {'private':>8} {'used lately':>12} {'CPU s per walked hour':>22}")
        for index, (label, _, _) in enumerate(measured):
            if index == 1:
                print(f"  {runs[1][0]}:")
            print(f"  {label:<36} {resident[index]:>9.1f} {private[index]:>8.1f} {referenced[index]:>12.1f}"
                  f" {cpu[index]:>22.3f}")
        total_resident, total_cpu = sum(resident[1:4]), sum(cpu[1:4])
        print(f"  {'  the three together':<36} {total_resident:>9.1f} {sum(private[1:4]):>8.1f}"
              f" {sum(referenced[1:4]):>12.1f} {total_cpu:>22.3f}")
        print(f"  held by the single process {held[0]:.1f} MB, by the three together {held[1]:.1f} MB"
              " (each physical page once)")
        summary = (f"apart / single process: memory held {held[1] / held[0]:.2f}x (goal <= 1.5; the sum of the three's"
                   f" resident memory {total_resident / resident[0]:.2f}x), CPU {total_cpu / cpu[0]:.2f}x;"
                   f" the recorder alone {resident[4]:.1f} MB resident (goal <= 10), {private[4]:.1f} MB of it its own,"
                   f" {referenced[4]:.1f} MB used in the last {args.seconds / 2:g} s; gpxlogger {resident[5]:.1f} MB")
        where = (f"Where the resident memory is (MB): the recorder alone {alone_parts}; gpxlogger {gpxlogger_parts}"
                 " (code: the executable's r-xp mapping; binary data: its other mappings; libraries: every other file;"
                 " anonymous: heap and stacks).")
        print(summary)
        print(where)
        rows = [(runs[0][0], 0), (runs[1][0] + ": the recorder", 1), ("  its live-page", 2), ("  its live-share", 3),
                (runs[2][0], 4), ("gpxlogger", 5)]
        table = [
            f"Made by `bench/apart.py {Path(single).name} {Path(binary).name} --seconds {args.seconds:g}`: one gpsd fed one"
            f" fix a second ({hours * 3600:.0f} s after the first fix) serving all of these at once, no photo source;"
            " sharing to Mosquitto on loopback, nobody opening the pages. The first binary is a build from before the"
            f" live page and sharing left the recorder's process. Machine: {walkbench.machine()}.", "",
            "| process | resident MB at the end | of it its own (private) | used in the second half | CPU s per walked hour after the first fix |",
            "|---|---|---|---|---|",
            *[f"| {label.strip()} | {resident[i]:.1f} | {private[i]:.1f} | {referenced[i]:.1f} | {cpu[i]:.3f} |"
              for label, i in rows[:4]],
            f"| the three together: resident summed | {total_resident:.1f} | {sum(private[1:4]):.1f} |"
            f" {sum(referenced[1:4]):.1f} | {total_cpu:.3f} |",
            f"| the three together: memory held, each page once | {held[1]:.1f} | | | |",
            *[f"| {label.strip()} | {resident[i]:.1f} | {private[i]:.1f} | {referenced[i]:.1f} | {cpu[i]:.3f} |"
              for label, i in rows[4:]], "",
            summary + ".", "", where, "",
            "How to read it: resident memory is /proc/PID/smaps's Rss over the executable, its data, the libraries and"
            " anonymous memory, with the executables read into the page cache first (as bench/side-by-side.py): it"
            " counts every page of the executable and the libraries a process has mapped, which the kernel maps 64 KiB"
            " at a time around each page touched, and shares with the page cache and every process mapping the same"
            " file. \"Its own\" is Private_Clean + Private_Dirty: pages no other process maps (its heap, stacks, the"
            " data relocated at start). \"Used in the second half\" is smaps' Referenced after /proc/PID/clear_refs"
            " cleared every accessed bit halfway: what recording uses, as against what start-up touched once and the"
            " kernel may reclaim. \"Memory held, each page once\" is the number of distinct physical pages the"
            " processes map (/proc/PID/pagemap): the fair sum for processes that share one executable.", ""]
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "apart.md").write_text("\n".join(table))
    finally:
        for process in processes:
            process.terminate()
            process.wait()
        stop(gpsfake)
        broker.terminate()
        broker.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
