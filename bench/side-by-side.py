#!/usr/bin/env python3
"""Where the resident memory of `fieldlog run` is, for several builds side by side on one 1 Hz replay.

    bench/resident.py BINARY [BINARY ...] [--seconds 100] [--photos]

For a link change (scripts/build-release, deploy/fieldlog.order): each BINARY records the same generated walk,
all at once on one gpsd fed one fix a second, with no photo source (or with --photos, from bench/fake_flickr.py
on loopback); after --seconds each one's /proc/PID/smaps is read (walkbench.resident_kb: the executable's code,
its other mappings, libraries, anonymous memory) and the processes are stopped. Copy a binary before
rebuilding it: each path is measured as it is when this runs.
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
    parser.add_argument("--seconds", type=float, default=100)
    parser.add_argument("--photos", action="store_true")
    args = parser.parse_args()
    binaries = [os.path.abspath(b) for b in args.binaries]
    work = Path(tempfile.mkdtemp(prefix="fieldlog-resident."))
    capture = work / "walk.nmea"
    subprocess.run([sys.executable, str(HERE / "walk.py"), str((args.seconds + 60) / 3600), str(capture)], check=True)
    flickr = FakeFlickr(HERE.parent / "demo/photos/Bridge_by_Sander_Klootwijk.jpg") if args.photos else None
    photo_args = ["--flickr-endpoint", flickr.endpoint, "--flickr-rate", "100000000"] if flickr else []
    gpsfake, port = walkbench.start_gpsfake(capture, work, cycle=0.5)
    recorders = []
    try:
        for index, binary in enumerate(binaries):
            state = work / str(index)
            recorders.append(subprocess.Popen(
                [binary, "run", "--once", "--gpsd", f"127.0.0.1:{port}", "--state-dir", str(state / "state"),
                 "--cache-dir", str(state / "cache"), *photo_args],
                env=dict(os.environ, FIELDLOG_CONFIG="/dev/null", FLICKR_API_KEY=API_KEY if flickr else ""),
                stderr=subprocess.DEVNULL))
        time.sleep(args.seconds)
        print(f"`fieldlog run` after {args.seconds:g} s at 1 Hz, {'photos from the fake Flickr' if flickr else 'no photo source'}"
              f" (MB, /proc/PID/smaps):")
        for index, (binary, recorder) in enumerate(zip(binaries, recorders)):
            parts = walkbench.resident_kb(recorder.pid, binary)
            journal = next((work / str(index) / "state").glob("*.jsonl"), None)
            # Whole lines only: the recorder may be appending one.
            records = [json.loads(line) for line in open(journal) if line.endswith("\n")] if journal else []
            photos = sum(r["type"] == "photo" and r.get("status") == "found" for r in records)
            total = sum(parts.values()) / 1024 if parts else float("nan")
            print(f"  {binary}: resident {total:.1f} ({walkbench.mb_parts(parts) if parts else 'ended'}); "
                  f"photos {photos}")
    finally:
        for recorder in recorders:
            recorder.terminate()
            recorder.wait()
        walkbench.stop(gpsfake)
        if flickr:
            flickr.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
