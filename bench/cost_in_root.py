#!/usr/bin/env python3
"""What fieldlog costs, measured inside one target root (bench/arm64 runs it in the arm64 and amd64 roots).

    cost_in_root.py FIELDLOG WORK WALK_SHORT WALK_LONG PHOTOS_DIR

Prints one JSON object:
- instructions per fix: callgrind's count of the whole `fieldlog run --once` over two replays of the same
  walk, one longer than the other; the difference divided by the difference in fixes journaled (start-up and
  shutdown cancel out);
- instructions per thumbnail: `fieldlog thumbnail` over all the photos against over one, likewise (the photo
  worker is a child process: --trace-children);
- resident memory at 1 Hz: the recorder's VmRSS sampled every second while gpsfake replays the walk at one
  epoch a second, and, for scale, that of a process that only sleeps (under qemu-user both include the
  emulator's own memory).
Instructions are guest instructions: under qemu-user, valgrind itself runs as aarch64 code.
"""
import glob
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools"))
from fieldlog_tools import free_port, photo_sources  # noqa: E402


def callgrind(argv, log, timeout):
    """Instructions of `argv` and its children, or None when it takes longer than `timeout` seconds (seen under
    qemu-user with the photo worker, whose self-imposed address-space limit valgrind does not fit in)."""
    try:
        done = subprocess.run(["valgrind", "--tool=callgrind", "--trace-children=yes", "--callgrind-out-file=/dev/null",
                               f"--log-file={log}.%p"] + argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              env=dict(os.environ, FIELDLOG_CONFIG="/dev/null"), timeout=timeout)
    except subprocess.TimeoutExpired:
        for path in glob.glob(f"{log}.*"):
            os.remove(path)
        return None
    if done.returncode != 0:
        raise RuntimeError(f"callgrind {argv[:2]} failed (exit {done.returncode})")
    return collected(log)


def collected(log):
    """Instructions callgrind counted in every process it followed (their logs are log.PID)."""
    total = 0
    for path in glob.glob(f"{log}.*"):
        match = re.search(r"Collected : (\d+)", open(path).read())
        total += int(match.group(1)) if match else 0
        os.remove(path)
    if total == 0:
        raise RuntimeError(f"callgrind counted nothing ({log}.*)")
    return total


def journaled_fixes(state):
    return sum(line.count('"type":"fix"') for path in glob.glob(f"{state}/walk-*.jsonl") for line in open(path))


def replay(fieldlog, walk, work, cycle, under_callgrind=False, sample=False):
    """Replays `walk` through gpsfake into `fieldlog run --once`; (instructions or None, fixes, RSS samples kB)."""
    state, port = f"{work}/state", free_port()
    subprocess.run(["rm", "-rf", state, f"{work}/cache"])
    argv = [fieldlog, "run", "--once", "--gpsd", f"127.0.0.1:{port}", "--state-dir", state,
            "--cache-dir", f"{work}/cache", *photo_sources(fieldlog, "none")]
    # The recorder first (it retries gpsd), then gpsfake, which waits for a client before it replays: the whole
    # walk reaches the recorder however slowly it starts under valgrind.
    if under_callgrind:
        argv = ["valgrind", "--tool=callgrind", "--trace-children=yes", "--callgrind-out-file=/dev/null",
                f"--log-file={work}/callgrind.%p"] + argv
    recorder = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                env=dict(os.environ, FIELDLOG_CONFIG="/dev/null"))
    gpsfake = subprocess.Popen(["gpsfake", "-1", "-q", "-c", str(cycle), "-P", str(port), walk],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    samples, deadline = [], time.monotonic() + 240
    while recorder.poll() is None:
        if time.monotonic() > deadline:
            # Seen with callgrind under qemu-user: the recorder stops running once gpsd has gone (no CPU time).
            recorder.kill()
            gpsfake.kill()
            for path in glob.glob(f"{work}/callgrind.*"):
                os.remove(path)
            return None, journaled_fixes(state), []
        if sample:
            samples.append(vmrss(recorder.pid))
        time.sleep(1)
    instructions = collected(f"{work}/callgrind") if under_callgrind else None
    gpsfake.wait(timeout=600)
    return instructions, journaled_fixes(state), [s for s in samples if s]


def vmrss(pid):
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def main():
    fieldlog, work, walk_short, walk_long, photos = sys.argv[1:6]
    os.makedirs(work, exist_ok=True)
    result = {"machine": os.uname().machine}

    # 5 sentences a second: a recorder slowed by callgrind (and qemu) still keeps up with gpsd.
    short_ir, short_fixes, _ = replay(fieldlog, walk_short, work, 0.2, under_callgrind=True)
    long_ir, long_fixes, _ = replay(fieldlog, walk_long, work, 0.2, under_callgrind=True)
    result["fixes"] = [short_fixes, long_fixes]
    if short_ir and long_ir:
        result["instructions_per_fix"] = (long_ir - short_ir) / max(1, long_fixes - short_fixes)
        result["instructions_startup_and_short_walk"] = short_ir

    files = sorted(glob.glob(f"{photos}/*.jpg"))
    one = callgrind([fieldlog, "thumbnail", "--out", f"{work}/thumbs1", files[0]], f"{work}/callgrind", 180)
    every = one and callgrind([fieldlog, "thumbnail", "--out", f"{work}/thumbs", *files], f"{work}/callgrind", 900)
    result["photos"] = len(files)
    if one and every:
        result["instructions_per_thumbnail"] = (every - one) / (len(files) - 1)

    # 1 Hz: walk.py writes GGA and RMC each second, so gpsfake sends a sentence every 0.5 s.
    _, fixes, samples = replay(fieldlog, walk_long, work, 0.5, sample=True)
    sleeper = subprocess.Popen(["sleep", "3"])
    time.sleep(2)
    result["memory_1hz_kb"] = {"fixes": fixes, "samples": len(samples), "median": sorted(samples)[len(samples) // 2],
                               "max": max(samples), "sleep_process": vmrss(sleeper.pid)}
    sleeper.wait()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
