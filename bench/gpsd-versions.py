#!/usr/bin/env python3
"""Every bundled capture through Debian 12's gpsd 3.22 and Debian 13's gpsd 3.25 (Raspberry Pi OS's), side by
side: what fieldlog records from each.

    sudo bench/gpsd-versions.py BINARY [--root DIR] [--delay 0.02] [--out bench/results]

For each capture in Tests/Fixtures/captures, gpsfake replays it once into the host's gpsd and once into the gpsd of
the amd64 trixie root (deploy/cross/target-root, chrooted in a private mount namespace on loopback, as
scripts/test-gpsd-trixie runs it), each time to `BINARY run --once` without photos. Printed per capture and gpsd:
fixes journaled, the walk's distance (the last fix's) and its milestones, and the difference 3.25 - 3.22; the same
as a table in OUT/gpsd-versions.md. Root: the chroot needs it.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(HERE), str(REPO / "tools")]
from fieldlog_tools import GPSFAKE, free_port, stop, wait_listening  # noqa: E402

CAPTURES = REPO / "Tests" / "Fixtures" / "captures"


def gpsfake(capture, delay, port, root):
    """gpsfake replaying `capture` once on `port`: the host's, or the one in `root`. In a session of its own."""
    arguments = ["-1", "-p", "-q", "-c", f"{delay:g}", "-P", str(port), str(capture)]
    if root:
        command = ["/bin/bash", "-c", '. "$0" && in_root "$1" --bind "$2" -- /usr/bin/gpsfake "${@:3}"',
                   str(REPO / "deploy" / "cross" / "common.sh"), root, str(CAPTURES)] + arguments
    else:
        command = [GPSFAKE] + arguments
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    if not wait_listening(port):
        stop(proc)
        raise RuntimeError(f"gpsfake's gpsd did not listen on port {port}")
    return proc


def record(binary, capture, delay, root, work):
    """fieldlog's walk of one replay: (fixes, distance m, milestones)."""
    state = Path(tempfile.mkdtemp(dir=work))
    port = free_port()
    proc = gpsfake(capture, delay, port, root)
    try:
        subprocess.run([binary, "run", "--once", "--gpsd", f"127.0.0.1:{port}", "--state-dir", str(state),
                        "--photo-sources", "none"], env=dict(os.environ, FIELDLOG_CONFIG="/dev/null"),
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600, check=False)
        proc.wait(timeout=120)
    finally:
        stop(proc)
    fixes, distance, milestones = 0, 0.0, 0
    for journal in sorted(state.glob("walk-*.jsonl")):
        for line in journal.read_text().splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if record.get("type") == "fix":
                fixes += 1
                distance = record.get("dist", distance)
            elif record.get("type") == "milestone":
                milestones += 1
    return fixes, distance, milestones


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("binary")
    parser.add_argument("--root", default="/var/cache/fieldlog-cross/root-trixie-amd64")
    parser.add_argument("--delay", type=float, default=0.02, help="gpsfake's pause per sentence, seconds")
    parser.add_argument("--out", default=str(HERE / "results"))
    args = parser.parse_args()
    if not (Path(args.root) / "usr/sbin/gpsd").exists():
        sys.exit(f"no trixie root at {args.root}: sudo deploy/cross/target-root --arch amd64 --suite trixie")
    binary = os.path.abspath(args.binary)
    versions = {}
    for root in (None, args.root):
        out = subprocess.run(["/usr/sbin/gpsd", "-V"] if not root else
                             [f"{root}/lib64/ld-linux-x86-64.so.2", "--library-path", f"{root}/usr/lib/x86_64-linux-gnu",
                              f"{root}/usr/sbin/gpsd", "-V"], capture_output=True, text=True).stdout.split()
        versions[root] = out[1] if len(out) > 1 else "?"
    rows = []
    with tempfile.TemporaryDirectory(prefix="fieldlog-gpsd-versions.") as work:
        for capture in sorted(p for p in CAPTURES.iterdir() if p.suffix == ".log"):
            old = record(binary, capture, args.delay, None, work)
            new = record(binary, capture, args.delay, args.root, work)
            rows.append((capture.stem, old, new))
            print(f"{capture.stem:<32} gpsd {versions[None]}: {old[0]:4d} fixes {old[1]:8.1f} m {old[2]:2d} milestones"
                  f"   gpsd {versions[args.root]}: {new[0]:4d} fixes {new[1]:8.1f} m {new[2]:2d} milestones", flush=True)
    head = versions[None], versions[args.root]
    table = [
        f"Made by `bench/gpsd-versions.py {Path(binary).name} --delay {args.delay:g}`: every bundled capture replayed"
        f" by gpsfake ({args.delay * 1000:g} ms a sentence) through the host's gpsd {head[0]} and the amd64 trixie"
        f" root's gpsd {head[1]}, each to `fieldlog run --once` without photos.", "",
        f"| capture | fixes, gpsd {head[0]} | distance m | milestones | fixes, gpsd {head[1]} | distance m | milestones"
        " | distance difference |", "|---|---|---|---|---|---|---|---|",
        *[f"| {name} | {o[0]} | {o[1]:.1f} | {o[2]} | {n[0]} | {n[1]:.1f} | {n[2]} |"
          f" {n[1] - o[1]:+.1f} m{f' ({(n[1] - o[1]) / o[1] * 100:+.1f} %)' if o[1] else ''} |"
          for name, o, n in rows], ""]
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "gpsd-versions.md").write_text("\n".join(table))


if __name__ == "__main__":
    main()
