#!/usr/bin/python3
"""Storage faults under a recording walk, with figures.

    reliability/storage.py FIELDLOG [--trials N]

Replays one generated walk (bench/walk.py) through a private gpsd (gpsfake) into `fieldlog run --once`,
first on healthy storage (the control), then N times per fault, each time with the fault switched on at a
random moment and off again some seconds later:

  enospc   every write(2) fails with ENOSPC (libfiu in the running process, switched over its control FIFOs)
  eio      a third of write(2) and fsync(2) calls fail with EIO
  erofs    every write(2) fails with EROFS (a card that turned read-only)
  tmpfs    a real full disk: the state directory on a 1 MiB tmpfs in a private mount namespace, filled by
           another file, which is removed later
  removed  the state directory removed (rm -rf) while recording

After each trial the journal is compared with the control: fixes and milestones lost, duplicated or
corrupt, and whether the process ever exited early. Prints one table row per fault.

A trial whose fieldlog is still running long after its replay (or whose fault libfiu does not switch) is
counted as exiting early: what its threads were waiting in goes to standard error, and it is killed. The
suite ends either way; it never waits for ever.
"""
import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tools"))
from fieldlog_tools import photo_sources, start_gpsfake, stop  # noqa: E402


def fault_fifos(pid):
    """The path, without ".in" or ".out", of the control FIFOs libfiu made for `pid` (as fiu-run names them)."""
    return os.path.join(os.environ.get("TMPDIR", "/tmp"), f"fiu-ctrl-{pid}")


def fault_control(pid, commands, timeout=10.0):
    """Sends libfiu remote-control `commands` to `pid` in one session on its FIFOs (what fiu-ctrl does, but
    fiu-ctrl opens one session per command, back to back, and blocks for ever if a reply never comes).
    Returns whether every command was done ("0" replied) within `timeout` s."""
    base = fault_fifos(pid)
    replies = []

    def session():
        # libfiu's control thread opens .in, then .out, reads commands until .in is closed, one reply each.
        with open(base + ".in", "w") as requests:
            requests.write("".join(command + "\n" for command in commands))
        with open(base + ".out") as answers:
            for _ in commands:
                replies.append(answers.readline().strip())

    thread = threading.Thread(target=session, daemon=True)
    thread.start()
    thread.join(timeout)
    return not thread.is_alive() and replies == ["0"] * len(commands)


def describe_threads(pid):
    """Each thread of `pid`: name, state and the kernel function it waits in (for a trial that hangs)."""
    lines = []
    try:
        for tid in sorted(os.listdir(f"/proc/{pid}/task"), key=int):
            task = f"/proc/{pid}/task/{tid}"
            try:
                name = open(f"{task}/comm").read().strip()
                state = open(f"{task}/stat").read().rsplit(")", 1)[1].split()[0]
                wchan = open(f"{task}/wchan").read().strip() or "-"
            except OSError:
                continue
            lines.append(f"    thread {tid} {name}: state {state}, waiting in {wchan}")
    except OSError as error:
        lines.append(f"    cannot list threads: {error}")
    return "\n".join(lines)


def journal(state):
    """(fix keys, milestone indices, damaged lines, events) of the one walk in `state`."""
    names = [n for n in os.listdir(state) if n.startswith("walk-") and n.endswith(".jsonl")]
    if len(names) != 1:
        raise RuntimeError(f"{len(names)} walks in {state}")
    fixes, milestones, damaged, events = [], [], 0, []
    with open(os.path.join(state, names[0]), "rb") as f:
        for line in f:
            try:
                record = json.loads(line)
            except ValueError:
                damaged += 1
                continue
            kind = record.get("type")
            if kind == "fix":
                fixes.append((record["time"], record["lat"], record["lon"]))
            elif kind == "milestone":
                milestones.append(record["index"])
            elif kind == "event":
                events.append(record.get("event"))
    return fixes, milestones, damaged, events


class Trial:
    def __init__(self, fieldlog, capture, work, delay, deadline):
        self.fieldlog, self.capture, self.work, self.delay = fieldlog, capture, work, delay
        self.deadline = deadline
        self.no_photos = photo_sources(fieldlog, "none")

    def run(self, state, fault=None, on_at=0.0, off_at=0.0):
        """Records the walk into `state` with `fault` switched on `on_at` s and off `off_at` s after start.
        Returns the process's exit status."""
        gpsd, port = start_gpsfake(self.capture, self.delay, wait=False)
        command = [self.fieldlog, "run", "--once", "--gpsd", f"127.0.0.1:{port}", "--state-dir", state,
                   *self.no_photos]
        env = dict(os.environ, FIELDLOG_CONFIG="/dev/null")
        log = open(os.path.join(self.work, "fieldlog.log"), "ab")
        if fault in ("enospc", "eio", "erofs"):
            command = ["fiu-run", "-x"] + command
        if fault == "tmpfs":
            os.makedirs(state, exist_ok=True)
            script = (
                f"mount -t tmpfs -o size=1m tmpfs {state} && "
                f"head -c 1048576 /dev/zero > {state}/.filler 2>/dev/null; "
                f'"$@" & pid=$!; while ! ls {state}/walk-* >/dev/null 2>&1 && kill -0 $pid 2>/dev/null; '
                f"do sleep 0.05; done; sleep {off_at}; rm -f {state}/.filler; wait $pid; status=$?; "
                f"cp -a {state} {state}.out; exit $status")
            command = ["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh"] + command
        # A session of its own, so that a trial that hangs is killed whole (unshare's sh and its fieldlog).
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log, env=env, start_new_session=True)
        points = {
            "enospc": ["name=posix/io/rw/write,failinfo=28"],
            "erofs": ["name=posix/io/rw/write,failinfo=30"],
            "eio": ["name=posix/io/rw/write,probability=0.3,failinfo=5", "name=posix/io/sync/fsync,probability=0.3,failinfo=5"],
        }.get(fault, [])
        start = None
        state_on = False
        switched = False
        began = time.monotonic()
        while process.poll() is None:
            if time.monotonic() - began > self.deadline:
                return self.abandon(process, gpsd, f"fieldlog still running {self.deadline:.0f} s after it started")
            # Times count from the walk's journal appearing: gpsd is connected then, and libgps writes to its
            # socket only while connecting.
            if start is None:
                if fault != "tmpfs" and os.path.isdir(state) and any(n.startswith("walk-") for n in os.listdir(state)):
                    start = time.monotonic()
                time.sleep(0.02)
                if start is None and fault != "tmpfs":
                    continue
                start = start or time.monotonic()
            now = time.monotonic() - start
            if points and not state_on and not switched and now >= on_at:
                commands = [("enable_random " if "probability" in point else "enable ") + point for point in points]
                if not fault_control(process.pid, commands):
                    return self.abandon(process, gpsd, "libfiu did not switch the fault on")
                state_on = True
            if points and state_on and now >= off_at:
                if not fault_control(process.pid, ["disable " + point.split(",")[0] for point in points]):
                    return self.abandon(process, gpsd, "libfiu did not switch the fault off")
                state_on, switched = False, True
            if fault == "removed" and not switched and now >= on_at and os.path.isdir(state):
                shutil.rmtree(state, ignore_errors=True)
                switched = True
            time.sleep(0.05)
        try:
            gpsd.wait(timeout=self.deadline)
        except subprocess.TimeoutExpired:
            stop(gpsd, signal.SIGKILL)
        if fault == "tmpfs" and os.path.isdir(state + ".out"):
            shutil.rmtree(state)
            os.rename(state + ".out", state)
        return process.returncode, switched or fault == "tmpfs"

    def abandon(self, process, gpsd, why):
        """Reports a trial that cannot go on (with where fieldlog's threads wait), ends it, and counts it as
        exiting early."""
        print(f"  trial abandoned: {why}; fieldlog's threads:\n{describe_threads(process.pid)}", file=sys.stderr)
        stop(process, signal.SIGKILL)
        stop(gpsd, signal.SIGKILL)
        for suffix in (".in", ".out"):  # libfiu's FIFOs, which its atexit would have removed
            try:
                os.unlink(fault_fifos(process.pid) + suffix)
            except OSError:
                pass
        return -1, False


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("fieldlog")
    parser.add_argument("--trials", type=int, default=5, help="trials per fault (default 5)")
    parser.add_argument("--minutes", type=float, default=10, help="length of the generated walk (default 10)")
    parser.add_argument("--faults", default="enospc,eio,erofs,tmpfs,removed")
    parser.add_argument("--deadline", type=float, default=300,
                        help="seconds a trial may run before it counts as hung (default 300; a replay takes ~15)")
    arguments = parser.parse_args()
    random.seed(7)
    work = tempfile.mkdtemp(prefix="fieldlog-storage-")
    capture = os.path.join(work, "walk.nmea")
    subprocess.run([sys.executable, os.path.join(REPO, "bench/walk.py"), str(arguments.minutes / 60), capture], check=True)
    delay = 0.01
    trial = Trial(os.path.abspath(arguments.fieldlog), capture, work, delay, arguments.deadline)
    control_state = os.path.join(work, "control")
    started = time.monotonic()
    status, _ = trial.run(control_state)
    replay = time.monotonic() - started
    control_fixes, control_milestones, _, _ = journal(control_state)
    print(f"control: {len(control_fixes)} fixes, {len(control_milestones)} milestones, replay {replay:.1f} s")
    print()
    print("| fault | trials | fault on (s, of the replay) | exits early | fixes lost | fixes twice | milestones lost | milestones twice | corrupt lines | storage_failed/recovered journaled | fixes before fieldlog connected (not counted) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    failures = 0
    for fault in arguments.faults.split(","):
        totals = dict(early=0, lost=0, twice=0, mlost=0, mtwice=0, corrupt=0, noted=0, late=0)
        spans = []
        for number in range(arguments.trials):
            on_at = random.uniform(0.5, replay * 0.5)
            off_at = on_at + random.uniform(1, replay * 0.3)
            if fault == "tmpfs":
                on_at, off_at = 0, random.uniform(1, replay * 0.5)
            state = os.path.join(work, f"{fault}-{number}")
            status, happened = trial.run(state, fault, on_at, off_at)
            spans.append(off_at - on_at)
            if status != 0 or not happened:
                totals["early"] += 1
            try:
                fixes, milestones, damaged, events = journal(state)
            except (OSError, RuntimeError) as error:
                print(f"  {fault} trial {number}: {error}", file=sys.stderr)
                totals["early"] += 1
                continue
            # fieldlog may connect to gpsfake a moment into the replay: what came before is not the fault's.
            first = min(fixes)[0] if fixes else ""
            late = sum(1 for fix in control_fixes if fix[0] < first)
            totals["late"] = max(totals["late"], late)
            totals["lost"] += len(set(fix for fix in control_fixes if fix[0] >= first) - set(fixes))
            totals["twice"] += len(fixes) - len(set(fixes))
            # Milestones are numbered from the walk's start: a late start may shift the last one.
            totals["mlost"] += max(0, len(control_milestones) - len(milestones) - (1 if late else 0))
            totals["mtwice"] += len(milestones) - len(set(milestones))
            totals["corrupt"] += damaged
            if fault == "removed" or ("storage_failed" in events and "storage_recovered" in events):
                totals["noted"] += 1
        bad = totals["early"] + totals["lost"] + totals["twice"] + totals["mlost"] + totals["mtwice"] + totals["corrupt"]
        failures += bad
        span = f"{min(spans):.1f}-{max(spans):.1f}" if spans else "-"
        print(f"| {fault} | {arguments.trials} | {span} | {totals['early']} | {totals['lost']} | {totals['twice']} | "
              f"{totals['mlost']} | {totals['mtwice']} | {totals['corrupt']} | {totals['noted']}/{arguments.trials} | "
              f"{totals['late']} at most |")
    shutil.rmtree(work, ignore_errors=True)
    print()
    print("storage faults: " + ("all survived" if failures == 0 else f"{failures} failures"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
