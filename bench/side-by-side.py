#!/usr/bin/env python3
"""Several fieldlog builds and gpxlogger side by side on one 1 Hz replay: CPU, wake-ups and resident memory.

    bench/side-by-side.py BINARY [BINARY ...] [--seconds 300] [--photos]

For a change to the recorder or its link: each BINARY records the same generated walk, all at once with
gpxlogger on one gpsd fed one fix a second, with no photo source (or with --photos, from bench/fake_flickr.py on
loopback). Printed for each: CPU seconds per walked hour after start-up (from the moment every fieldlog has
journaled its first fix to the end, the run time of its threads), wake-ups per fix over the same span
(voluntary context switches), and after --seconds where its resident memory is (walkbench.resident_kb: the
executable's code, its other mappings, libraries, anonymous memory). Copy a binary before rebuilding it: each
path is measured as it is when this runs.
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
sys.path.insert(0, str(HERE))
import walkbench  # noqa: E402
from fake_flickr import API_KEY, FakeFlickr  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("binaries", nargs="+")
    parser.add_argument("--seconds", type=float, default=300)
    parser.add_argument("--photos", action="store_true")
    args = parser.parse_args()
    binaries = [os.path.abspath(b) for b in args.binaries]
    work = Path(tempfile.mkdtemp(prefix="fieldlog-side-by-side."))
    capture = work / "walk.nmea"
    subprocess.run([sys.executable, str(HERE / "walk.py"), str((args.seconds + 60) / 3600), str(capture)], check=True)
    flickr = FakeFlickr(HERE.parent / "demo/photos/Bridge_by_Sander_Klootwijk.jpg") if args.photos else None
    photo_args = ["--flickr-endpoint", flickr.endpoint, "--flickr-rate", "100000000"] if flickr else []
    gpsfake, port = walkbench.start_gpsfake(capture, work, cycle=0.5)
    recorders, journals, processes = [], [], []
    try:
        for index, binary in enumerate(binaries):
            state = work / str(index)
            journals.append(state / "state")
            recorders.append(subprocess.Popen(
                [binary, "run", "--once", "--gpsd", f"127.0.0.1:{port}", "--state-dir", str(state / "state"),
                 "--cache-dir", str(state / "cache"), *photo_args],
                env=dict(os.environ, FIELDLOG_CONFIG="/dev/null", FLICKR_API_KEY=API_KEY if flickr else ""),
                stderr=subprocess.DEVNULL))
            processes.append(recorders[-1])
        gpxlogger = subprocess.Popen(["gpxlogger", "-e", "sockets", "-f", str(work / "gpxlogger.gpx"),
                                      f"127.0.0.1:{port}"], stderr=subprocess.DEVNULL)
        processes.append(gpxlogger)
        started = time.monotonic()
        while not all((found := list(j.glob("*.jsonl"))) and walkbench.last_fix_time(found[0]) for j in journals):
            if time.monotonic() - started > 60:
                sys.exit("no first fix journaled within 60 s")
            time.sleep(0.05)
        first_fix = time.monotonic()
        before = [(walkbench.cpu_seconds(p.pid), walkbench.wakeups(p.pid)) for p in processes]
        time.sleep(max(0.0, args.seconds - (first_fix - started)))
        hours = (time.monotonic() - first_fix) / 3600
        after = [(walkbench.cpu_seconds(p.pid), walkbench.wakeups(p.pid)) for p in processes]
        fixes = hours * 3600
        print(f"{args.seconds:g} s at 1 Hz, {'photos from the fake Flickr' if flickr else 'no photo source'}, all on one gpsd;"
              f" CPU and wake-ups after the first fix ({fixes:.0f} s), memory at the end (MB, /proc/PID/smaps):")
        cpus = [(a[0] - b[0]) / hours for a, b in zip(after, before)]
        for index, (binary, process) in enumerate(zip([*binaries, "gpxlogger"], processes)):
            wakes = (after[index][1] - before[index][1]) / fixes
            parts = walkbench.resident_kb(process.pid, binary if process is not gpxlogger else shutil.which("gpxlogger"))
            total = sum(parts.values()) / 1024 if parts else float("nan")
            line = (f"  {binary}: CPU {cpus[index]:.3f} s per walked hour ({cpus[index] / cpus[-1]:.2f}x gpxlogger),"
                    f" {wakes:.2f} wake-ups per fix; resident {total:.1f} ({walkbench.mb_parts(parts) if parts else 'ended'})")
            if process is not gpxlogger:
                journal = next(journals[index].glob("*.jsonl"), None)
                # Whole lines only: the recorder may be appending one.
                records = [json.loads(text) for text in open(journal) if text.endswith("\n")] if journal else []
                line += f"; photos {sum(r['type'] == 'photo' and r.get('status') == 'found' for r in records)}"
            print(line)
    finally:
        for process in processes:
            process.terminate()
            process.wait()
        walkbench.stop(gpsfake)
        if flickr:
            flickr.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
