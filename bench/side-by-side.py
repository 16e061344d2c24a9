#!/usr/bin/env python3
"""Several fieldlog builds and gpxlogger side by side on one 1 Hz replay: CPU, wake-ups and resident memory.

    bench/side-by-side.py BINARY [BINARY ...] [--seconds 300] [--photos | --both] [--fakes DIR] [--cold]

For a change to the recorder or its link: each BINARY records the same generated walk, all at once with
gpxlogger on one gpsd fed one fix a second, with no photo source (or with --photos, from the fake Flickr on
loopback: `fieldlog-fakes flickr`, from --fakes or built; with --both, each BINARY twice, without photos and
with them). Printed for each: CPU seconds per walked hour after start-up (from the moment every fieldlog has
journaled its first fix to the end, the run time of its threads), wake-ups per fix over the same span
(voluntary context switches), and after --seconds where its resident memory is (walkbench.resident_kb: the
executable's code, its other mappings, libraries, anonymous memory). Copy a binary before rebuilding it: each
path is measured as it is when this runs.

Resident memory depends on the page cache: the kernel's fault-around maps the cached pages within 64 KB of
each page a process touches. So each executable (gpxlogger's too) is read whole into the page cache first, as
right after it was installed. With --cold (root), each is dropped from the page cache instead, and readahead
on the disk it lives on is off for the run (restored after): then only the pages a process touches are read
and mapped, and its resident memory is what it touched. Shared libraries stay cached, as on any running system.
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
from fieldlog_tools import photo_sources, start_fake_flickr, start_gpsfake, stop  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("binaries", nargs="+")
    parser.add_argument("--seconds", type=float, default=300)
    photos = parser.add_mutually_exclusive_group()
    photos.add_argument("--photos", action="store_true", help="each binary fetches photos from the fake Flickr")
    photos.add_argument("--both", action="store_true", help="each binary twice: without photos, then with them")
    parser.add_argument("--fakes", help="a swift build bin directory holding fieldlog-fakes (default: build it)")
    parser.add_argument("--cold", action="store_true", help="executables out of the page cache, readahead off")
    args = parser.parse_args()
    binaries = [os.path.abspath(b) for b in args.binaries]
    work = Path(tempfile.mkdtemp(prefix="fieldlog-side-by-side."))
    capture = work / "walk.nmea"
    subprocess.run([sys.executable, str(HERE / "walk.py"), str((args.seconds + 60) / 3600), str(capture)], check=True)
    # (binary, fetches photos), in the order printed.
    runs = [(b, p) for b in binaries for p in ((False, True) if args.both else (args.photos,))]
    flickr = (start_fake_flickr(HERE.parent / "demo/photos/Bridge_by_Sander_Klootwijk.jpg", args.fakes)
              if args.photos or args.both else None)
    photo_args = ["--flickr-endpoint", flickr.endpoint, "--flickr-rate", "100000000"] if flickr else []
    # Each build's photo source as before Commons (an older build cannot be given --photo-sources).
    sources = [photo_sources(binary, "flickr" if with_photos else "none") for binary, with_photos in runs]
    gpsfake, port = start_gpsfake(capture, 0.5, log=work / "gpsfake.log")
    gpxlogger_path = shutil.which("gpxlogger")
    journals, processes = [], []
    readahead = None
    try:
        executables = [*binaries, gpxlogger_path]
        if args.cold:
            readahead = without_readahead(executables)
        else:
            for path in executables:
                Path(path).read_bytes()
        for index, (binary, with_photos) in enumerate(runs):
            state = work / str(index)
            journals.append(state / "state")
            processes.append(subprocess.Popen(
                [binary, "run", "--once", "--gpsd", f"127.0.0.1:{port}", "--state-dir", str(state / "state"),
                 "--cache-dir", str(state / "cache"), *(photo_args if with_photos else []), *sources[index]],
                env=dict(os.environ, FIELDLOG_CONFIG="/dev/null", FLICKR_API_KEY=flickr.api_key if with_photos else ""),
                stderr=subprocess.DEVNULL))
        gpxlogger = subprocess.Popen([gpxlogger_path, "-e", "sockets", "-f", str(work / "gpxlogger.gpx"),
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
        print(f"{args.seconds:g} s at 1 Hz, all on one gpsd; photos from the fake Flickr where marked;"
              f" CPU and wake-ups after the first fix ({fixes:.0f} s), memory at the end (MB, /proc/PID/smaps):")
        cpus = [(a[0] - b[0]) / hours for a, b in zip(after, before)]
        shown = [(f"{binary}{' (photos)' if with_photos else ''}", binary) for binary, with_photos in runs]
        for index, ((label, binary), process) in enumerate(zip([*shown, ("gpxlogger", gpxlogger_path)], processes)):
            wakes = (after[index][1] - before[index][1]) / fixes
            parts = walkbench.resident_kb(process.pid, binary)
            total = sum(parts.values()) / 1024 if parts else float("nan")
            line = (f"  {label}: CPU {cpus[index]:.3f} s per walked hour ({cpus[index] / cpus[-1]:.2f}x gpxlogger),"
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
        if readahead:
            path, value = readahead
            path.write_text(value)
        stop(gpsfake)
        if flickr:
            flickr.stop()
        shutil.rmtree(work, ignore_errors=True)


def without_readahead(executables):
    """Drops `executables` from the page cache and turns readahead off on the disk the first one is on (all
    must share it). Returns (the sysfs file, its old value) to restore."""
    devices = {os.stat(path).st_dev for path in executables}
    if len(devices) != 1:
        sys.exit("--cold: the executables must be on one disk (copy them next to each other)")
    device = devices.pop()
    block = Path(f"/sys/dev/block/{os.major(device)}:{os.minor(device)}").resolve()
    queue = next((d / "queue/read_ahead_kb" for d in (block, block.parent) if (d / "queue/read_ahead_kb").exists()), None)
    if queue is None:
        sys.exit(f"--cold: no readahead setting for the disk of {executables[0]} ({block})")
    old = queue.read_text()
    queue.write_text("0")
    for path in executables:
        descriptor = os.open(path, os.O_RDONLY)
        os.posix_fadvise(descriptor, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(descriptor)
    return queue, old


if __name__ == "__main__":
    main()
