#!/usr/bin/python3
"""Power-cut trials: the real `fieldlog run --once` records a walk with photos through layer.py, power is cut
at a random moment, the state is reset to what the cut leaves, fieldlog restarts on it and finishes the
walk, and the result is checked. Run through ./run (which installs and builds); see its header."""
import argparse
import calendar
import importlib.util
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
PY = "/usr/bin/python3"
VARIANTS = ["drop", "torn", "zero"]
PROMISE_S = 6.0  # docs/reliability-design.md, Durability: the last ~5 s of fixes, at most ~6 s


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


sys.path.insert(0, str(REPO / "tools"))
from fieldlog_tools import photo_sources, start_fake_flickr, start_gpsfake, stop  # noqa: E402

walkgen = load("walkgen", REPO / "bench/walk.py")


# The walk ------------------------------------------------------------------------------------------------

def make_walk(seconds, start, seed=7):
    """(GPS time, NMEA text) per fix: 1.4 m/s from the start of the demo walk along its line, where the
    demo photos are, with ±1 m of receiver noise."""
    rng = random.Random(seed)
    lat, lon, heading, t = 52.85014, 5.3135817, 233.8, start
    fixes = []
    for second in range(seconds):
        t += 1
        lat, lon = walkgen.destination(lat, lon, heading, 1.4)
        heading += 0.3 * rng.uniform(-1, 1)
        flat, flon = walkgen.destination(lat, lon, rng.uniform(0, 360), rng.uniform(0, 1))
        g = time.gmtime(t)
        clock, date = time.strftime("%H%M%S", g) + ".00", time.strftime("%d%m%y", g)
        la = walkgen.angle(abs(flat), 2) + (",N" if flat >= 0 else ",S")
        lo = walkgen.angle(abs(flon), 3) + (",E" if flon >= 0 else ",W")
        text = walkgen.sentence(f"GPGGA,{clock},{la},{lo},1,09,0.9,1.0,M,45.0,M,,")
        text += walkgen.sentence(f"GPRMC,{clock},A,{la},{lo},2.7,{int(heading) % 360},{date},,,A")
        fixes.append((t, text))
    return fixes


def write_nmea(path, fixes):
    with open(path, "w", newline="") as f:
        f.write("# Name: power-cut trial walk\n")
        for _, text in fixes:
            f.write(text)


def gps_time(stamp):
    return calendar.timegm(time.strptime(stamp[:19], "%Y-%m-%dT%H:%M:%S"))


# Processes -----------------------------------------------------------------------------------------------

def spawn(argv, log, **kw):
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=open(log, "ab"), start_new_session=True, **kw)


class Mount:
    """layer.py over BACKING at MNT; `close` unmounts, after a cut if one is asked for."""

    def __init__(self, backing, mnt, report, mode, log, cut_after=None):
        os.makedirs(mnt, exist_ok=True)
        os.makedirs(report, exist_ok=True)
        self.mnt, self.report = mnt, report
        argv = [PY, str(HERE / "layer.py"), backing, mnt, report, "--mode", mode]
        if cut_after:
            argv += ["--cut-after", cut_after]
        self.proc = spawn(argv, log)
        deadline = time.monotonic() + 10
        while not os.path.ismount(mnt):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"layer did not mount (see {log})")
            time.sleep(0.02)

    def close(self, cut=None):
        """`cut`: (variant, seed, monotonic time of the cut), for the layer's report."""
        if cut:
            Path(self.report, "cut").write_text(" ".join(map(str, cut)) + "\n")
        subprocess.run(["umount", self.mnt], check=True)
        if self.proc.wait(timeout=60) != 0:
            raise RuntimeError(f"layer exited with {self.proc.returncode}")
        return json.loads(Path(self.report, "report.json").read_text()) if cut else None


class Recorder:
    """gpsfake replaying FIXES and `fieldlog run --once` on the mount."""

    def __init__(self, t, fixes, pace, log, photos=True):
        self.nmea = t.dir / f"walk-{time.monotonic_ns()}.nmea"
        write_nmea(self.nmea, fixes)
        self.log, self.cut_at = log, None
        sources = photo_sources(t.args.fieldlog, t.source if photos else "none")
        self.pace, self.started = pace, time.monotonic()
        self.gpsfake, port = start_gpsfake(self.nmea, pace, log=log, wait=False)
        self.port = port
        argv = [t.args.fieldlog, "run", "--once", "--gpsd", f"127.0.0.1:{port}", "--state-dir", f"{t.mnt}/state",
                "--every", str(t.every), "--log-level", "info", *sources]
        if photos:
            argv += ["--cache-dir", f"{t.mnt}/cache", "--cache-max", str(t.cache_max), "--photo-retry-max", "2"]
            if t.source == "local":
                argv += ["--photos-dir", str(REPO / "demo/photos")]
            else:
                argv += ["--flickr-endpoint", t.flickr.endpoint, "--flickr-rate", "1000000",
                         "--api-key-file", str(t.keyfile)]
        self.fieldlog = spawn(argv, log)

    def finish(self, timeout):
        deadline = time.monotonic() + timeout
        code = "timeout"
        while time.monotonic() < deadline:
            try:
                code = self.fieldlog.wait(timeout=0.2)
                break
            except subprocess.TimeoutExpired:
                self.restart_failed_gpsfake()
        self.cut()
        return code

    def restart_failed_gpsfake(self):
        """On a loaded machine gpsfake sometimes fails before it replays anything ("socket error [Errno 111]":
        its gpsd was not up yet) and exits 1, and fieldlog then waits for gpsd for ever, as it should. That is
        the harness failing, not fieldlog: start gpsfake again on the same port, where fieldlog keeps trying."""
        if self.gpsfake.poll() in (None, 0) or time.monotonic() - self.started > 10:
            return
        with open(self.log, "a") as log:
            log.write(f"harness: gpsfake exited {self.gpsfake.returncode} before replaying; started again\n")
        self.started = time.monotonic()
        self.gpsfake, _ = start_gpsfake(self.nmea, self.pace, port=self.port, log=self.log, wait=False)

    def cut(self):
        """Kills fieldlog with everything it started: the power cut, at `cut_at` (monotonic). Then stops
        gpsfake, which can take up to its 10 s grace: that is after the cut, and must not count as before it."""
        self.cut_at = time.monotonic()
        stop(self.fieldlog, signal.SIGKILL)
        status = stop(self.gpsfake)
        with open(self.log, "a") as f:
            f.write(f"harness: gpsfake stopped {time.monotonic() - self.cut_at:.2f} s after the cut, status {status}\n")


# Reading journals ----------------------------------------------------------------------------------------

def parse_journal(data):
    """(records, corrupt line count); a last line without its newline counts as torn, not corrupt."""
    records, corrupt = [], 0
    lines = data.split(b"\n")
    for n, line in enumerate(lines):
        if not line or (n == len(lines) - 1):
            continue
        try:
            records.append(json.loads(line))
        except ValueError:
            corrupt += 1
    return records, corrupt


def journals(directory):
    d = Path(directory)
    return {p.name: p.read_bytes() for p in sorted(d.glob("walk-*.jsonl"))} if d.is_dir() else {}


def fix_lines(data):
    """(byte offset, GPS time) of each whole fix line."""
    out, offset = [], 0
    for line in data.split(b"\n")[:-1]:
        if b'"type":"fix"' in line:
            try:
                out.append((offset, gps_time(json.loads(line)["time"])))
            except ValueError:
                pass
        offset += len(line) + 1
    return out


# One trial -----------------------------------------------------------------------------------------------

class Trial:
    def __init__(self, args, number, flickr, keyfile, walk):
        self.args, self.number, self.flickr, self.keyfile, self.walk = args, number, flickr, keyfile, walk
        rng = self.rng = random.Random(args.seed * 100_003 + number)
        self.variant = VARIANTS[number % 3]
        self.mode = "ext4" if (number // 3) % 2 else "strict"
        self.source = "local" if number % 5 == 4 else "flickr"
        self.slow = number % 6 == 5  # 1 Hz before the cut, so the 5 s sync timer is what bounds the loss
        self.cut_kind = "write" if number % 2 else "delay"
        self.cut_after_writes = rng.randint(3, 40 if self.slow else 480)
        self.delay = rng.uniform(1.5, 12 if self.slow else 7)
        self.cache_max = rng.choice([16 << 20, 70_000])
        self.every = 10 if self.slow else 25
        self.dir = Path(args.work) / f"trial-{number}"
        shutil.rmtree(self.dir, ignore_errors=True)
        self.back, self.mnt = self.dir / "back", str(self.dir / "mnt")
        (self.back / "state").mkdir(parents=True)
        (self.back / "cache").mkdir()
        self.log = self.dir / "log"
        self.result = {"trial": number, "variant": self.variant, "mode": self.mode, "source": self.source,
                       "slow": self.slow, "cut": self.cut_kind, "failures": []}

    def fail(self, what):
        self.result["failures"].append(what)

    def describe(self):
        return (f"trial {self.number}: {self.variant}, {self.mode}, {self.source}, "
                f"{'1 Hz' if self.slow else 'fast'}, cut after "
                + (f"{self.cut_after_writes} journal writes" if self.cut_kind == "write" else f"{self.delay:.2f} s")
                + f", --cache-max {self.cache_max}")

    def run(self):
        # 1. Record until the cut.
        pace = 0.5 if self.slow else self.args.pace
        trigger = f"/state/walk-||{self.cut_after_writes}" if self.cut_kind == "write" else None
        mount = Mount(str(self.back), self.mnt, str(self.dir / "cut"), self.mode, self.log, trigger)
        rec = Recorder(self, self.walk, pace, self.log)
        started = time.monotonic()
        if self.cut_kind == "write":
            code = rec.finish(timeout=40 if self.slow else 60)
            self.result["before_cut"] = "cut" if (self.dir / "cut/killed").exists() else f"ended ({code})"
        else:
            try:
                code = rec.fieldlog.wait(timeout=self.delay)
                self.result["before_cut"] = f"ended ({code})"
            except subprocess.TimeoutExpired:
                self.result["before_cut"] = "cut"
            rec.cut()
        report = mount.close(cut=(self.variant, self.rng.randint(0, 2**31), rec.cut_at))
        self.result["cut_at_s"] = round(report["cut_time"] - started, 2)
        self.check_cache(self.back / "cache", after_restart=False)
        precut, durable = journals(self.dir / "cut/precut/state"), journals(self.dir / "cut/durable/state")

        # 2. Restart on what the cut left and walk on from the first fix not yet written before it.
        written = [t for data in precut.values() for _, t in fix_lines(data)]
        last = max(written, default=0)
        # A cut after the walk's end still restarts fieldlog: on one more fix, a second later.
        rest = [f for f in self.walk if f[0] > last] or [(last + 1, _retime(self.walk[-1][1], last + 1))]
        mount = Mount(str(self.back), self.mnt, str(self.dir / "restart"), self.mode, self.log)
        rec = Recorder(self, rest, self.args.pace, self.log)
        code = rec.finish(timeout=90)
        mount.close()
        if code != 0:
            self.fail(f"fieldlog run after the cut exited with {code}")

        # 3. Check.
        self.check_journals(precut, durable, report)
        self.check_cache(self.back / "cache", after_restart=True)
        return self.result

    def check_journals(self, precut, durable, report):
        final = journals(self.back / "state")
        r = self.result
        # Temporary files a cut made durable (status.json is replaced without a sync) and nobody removes.
        r["stray_state_files"] = sorted(p.name for p in (self.back / "state").iterdir()
                                        if p.name not in ("status.json", "walks.index") and not p.name.endswith(".jsonl"))
        r.update(corrupt=0, milestones_lost=0, milestones_duplicated=0, photos_duplicated=0, photos_lost=0,
                 fixes_lost=0, worst_loss_wall_s=0.0, worst_loss_gps_s=0.0, milestones=0, pending=0, thumbs_missing=0)
        finals = {}
        for name, data in final.items():
            records, corrupt = parse_journal(data)
            if not data.endswith(b"\n") and data:
                corrupt += 1  # fieldlog ended cleanly: no torn line may remain
            if b"\0" in data:
                self.fail(f"{name}: NUL bytes")
            r["corrupt"] += corrupt
            if corrupt:
                self.fail(f"{name}: {corrupt} corrupt lines")
            finals[name] = records
            indices = [x["index"] for x in records if x["type"] == "milestone"]
            r["milestones"] += len(indices)
            if indices != list(range(len(indices))):
                dup = len(indices) - len(set(indices))
                r["milestones_duplicated"] += dup
                self.fail(f"{name}: milestone indices {indices}")
            photos = [x for x in records if x["type"] == "photo"]
            ids = [x["photo"] for x in photos if x.get("status") == "found"]
            per_milestone = [x["index"] for x in photos]
            if len(ids) != len(set(ids)) or len(per_milestone) != len(set(per_milestone)):
                r["photos_duplicated"] += len(ids) - len(set(ids)) + len(per_milestone) - len(set(per_milestone))
                self.fail(f"{name}: photos used or recorded twice: ids {ids}, milestones {per_milestone}")
            r["pending"] += len(set(indices) - set(per_milestone))
            if self.cache_max > 1 << 20:  # nothing evicted: every journaled photo's thumbnail should be there
                r["thumbs_missing"] += sum(not (self.back / "cache" / f"{x['cache']}.jpg").exists()
                                           for x in photos if x.get("cache"))
            out = self.dir / "export.json"
            walk_id = name[len("walk-"):-len(".jsonl")]
            proc = subprocess.run([self.args.fieldlog, "export", "--state-dir", str(self.back / "state"), "--walk",
                                   walk_id, str(out)], capture_output=True, text=True)
            if proc.returncode != 0 or "damaged" in proc.stderr:
                self.fail(f"export {walk_id}: {proc.returncode} {proc.stderr.strip()}")
        # What was fsynced before the cut is all still there.
        for name, data in durable.items():
            records, _ = parse_journal(data)
            have = finals.get(name, [])
            keys = {(x["type"], x.get("index"), x.get("time"), x.get("photo")) for x in have}
            for x in records:
                if x["type"] in ("milestone", "photo", "walk_start", "walk_end"):
                    if (x["type"], x.get("index"), x.get("time"), x.get("photo")) not in keys:
                        r["milestones_lost" if x["type"] == "milestone" else "photos_lost"] += 1
                        self.fail(f"{name}: synced {x['type']} {x.get('index')} lost")
        # Fixes written before the cut but gone: how long before the cut were they written?
        for name, data in precut.items():
            kept = {t for x in finals.get(name, []) if x["type"] == "fix" for t in [gps_time(x["time"])]}
            writes = report["files"].get(f"/state/{name}", {}).get("unsynced", [])
            lines = fix_lines(data)
            last = max((t for _, t in lines), default=0)
            for offset, t in lines:
                if t in kept:
                    continue
                r["fixes_lost"] += 1
                when = [w[2] for w in writes if w[0] <= offset < w[0] + w[1]]
                age = report["cut_time"] - when[0] if when else float("inf")
                r["worst_loss_wall_s"] = max(r["worst_loss_wall_s"], round(age, 3))
                r["worst_loss_gps_s"] = max(r["worst_loss_gps_s"], last - t + 1)
                if age > PROMISE_S:
                    self.fail(f"{name}: fix at {t} lost, written {age:.2f} s before the cut")

    def check_cache(self, cache, after_restart):
        files = [p for p in cache.iterdir()] if cache.is_dir() else []
        total = 0
        for p in files:
            if p.name == ".fieldlog-thumbnails":
                continue
            if p.suffix != ".jpg":
                if after_restart:
                    self.fail(f"cache: stray file {p.name} after restart")
                continue
            data = p.read_bytes()
            total += len(data)
            if not (data.startswith(b"\xff\xd8") and data.rstrip(b"\0").endswith(b"\xff\xd9")) or b"\0" * 64 in data[-64:]:
                self.fail(f"cache: half or zero-filled thumbnail {p.name} ({len(data)} bytes)"
                          + (" after restart" if after_restart else " after the cut"))
        if total > self.cache_max:
            self.fail(f"cache: {total} bytes > --cache-max {self.cache_max}" + (" after restart" if after_restart else ""))
        key = "thumbnails_after_restart" if after_restart else "thumbnails_after_cut"
        self.result[key] = len([p for p in files if p.suffix == ".jpg"])


# Older walk: a late photo lands in a journal that is not the newest ------------------------------------------

def older_walk_trial(args, number, flickr, keyfile, walk):
    """Walk A is recorded without a photo source (its milestones stay pending), walk B starts two hours later
    (GPS time), then fieldlog runs with photos: A's backlog is appended to A while B is the newest journal.
    The cut comes right after the K-th photo line written to A, before its fsync, and leaves a torn line
    there. After the restart A's later photos must not land behind that torn line."""
    t = Trial(args, number, flickr, keyfile, walk)
    t.variant, t.mode, t.source, t.slow, t.cut_kind, t.every, t.cache_max = "torn", "strict", "flickr", False, "photo", 25, 16 << 20
    t.result.update(variant="torn", mode="strict", source="flickr", slow=False, cut="older-walk photo", scenario="older")
    a = walk[:200]
    b = [(tt + 7200, _retime(text, tt + 7200)) for tt, text in walk[200:]]
    k = t.rng.randint(1, 5)
    mount = Mount(str(t.back), t.mnt, str(t.dir / "a"), t.mode, t.log)
    Recorder(t, a, args.pace, t.log, photos=False).finish(60)
    Recorder(t, b[:40], args.pace, t.log, photos=False).finish(60)
    mount.close()
    walk_a = sorted((t.back / "state").glob("walk-*.jsonl"))[0].name
    mount = Mount(str(t.back), t.mnt, str(t.dir / "cut"), t.mode, t.log, f"/state/{walk_a}|\"type\":\"photo\"|{k}")
    rec = Recorder(t, b[40:120], args.pace, t.log)
    code = rec.finish(60)
    killed = (t.dir / "cut/killed").exists()
    report = mount.close(cut=("partial", t.rng.randint(0, 2**31), rec.cut_at))
    data = (t.back / "state" / walk_a).read_bytes()
    t.result["before_cut"] = "cut" if killed else f"ended ({code})"
    t.result["older_torn_line"] = bool(data) and not data.endswith(b"\n")
    precut, durable = journals(t.dir / "cut/precut/state"), journals(t.dir / "cut/durable/state")
    mount = Mount(str(t.back), t.mnt, str(t.dir / "restart"), t.mode, t.log)
    code = Recorder(t, b[120:], args.pace, t.log).finish(90)
    mount.close()
    if code != 0:
        t.fail(f"fieldlog run after the cut exited with {code}")
    t.check_journals(precut, durable, report)
    t.check_cache(t.back / "cache", after_restart=True)
    t.describe = lambda: f"trial {number}: older walk, cut after photo line {k} to {walk_a}, torn"
    return t


def _retime(text, t):
    """The same fix, moved to GPS time t."""
    g = time.gmtime(t)
    out = []
    for line in text.strip().split("\r\n"):
        fields = line[1:line.index("*")].split(",")
        fields[1] = time.strftime("%H%M%S", g) + ".00"
        if fields[0] == "GPRMC":
            fields[9] = time.strftime("%d%m%y", g)
        out.append(walkgen.sentence(",".join(fields)))
    return "".join(out)


# Main ----------------------------------------------------------------------------------------------------

def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--trials", type=int, default=300)
    p.add_argument("--short", action="store_true",
                   help="8 trials (about 2 min), for CI: each variant, mode and kind of cut, 1 Hz, local photos "
                        "and the older walk at least once")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--only", type=int, help="run only this trial number (to reproduce one)")
    p.add_argument("--fieldlog", default=str(REPO / ".build/debug/fieldlog"))
    p.add_argument("--fakes", help="a swift build bin directory holding fieldlog-fakes (default: build it)")
    p.add_argument("--work", default="/tmp/fieldlog-powercut")
    p.add_argument("--pace", type=float, default=0.005, help="gpsfake's pause per sentence (2 per fix)")
    p.add_argument("--older-every", type=int, default=8, help="every Nth trial is the older-walk scenario")
    p.add_argument("--keep", action="store_true", help="keep every trial's directory, not only failing ones")
    args = p.parse_args()
    if args.short:
        args.trials = 8
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    flickr = start_fake_flickr(REPO / "demo/photos/Bridge_by_Sander_Klootwijk.jpg", args.fakes)
    keyfile = Path(args.work) / "flickr-api-key"
    keyfile.write_text(flickr.api_key)
    walk = make_walk(400, 1_716_019_200)  # 2024-05-18 08:00 UTC, 400 s, 560 m
    numbers = [args.only] if args.only is not None else range(args.trials)
    results, started = [], time.monotonic()
    for n in numbers:
        t0 = time.monotonic()
        older = args.older_every and n % args.older_every == args.older_every - 1
        try:
            if older:
                t = older_walk_trial(args, n, flickr, keyfile, walk)
            else:
                t = Trial(args, n, flickr, keyfile, walk)
                t.run()
        except Exception as error:  # a harness failure is reported as the trial's failure
            t = locals().get("t") or Trial(args, n, flickr, keyfile, walk)
            t.fail(f"harness: {type(error).__name__}: {error}")
        r = t.result
        r["seconds"] = round(time.monotonic() - t0, 1)
        results.append(r)
        status = "FAIL " + "; ".join(r["failures"]) if r["failures"] else "ok"
        print(f"{t.describe()} -> {r.get('before_cut')} at {r.get('cut_at_s', '-')} s; "
              f"lost {r.get('fixes_lost', 0)} fixes (worst {r.get('worst_loss_wall_s', 0)} s before the cut, "
              f"{r.get('worst_loss_gps_s', 0):g} s GPS); {status}", flush=True)
        if not r["failures"] and not args.keep:
            shutil.rmtree(t.dir, ignore_errors=True)
    flickr.stop()
    summary(results, time.monotonic() - started, args)
    Path(args.work, "results.json").write_text(json.dumps(results, indent=1))
    sys.exit(1 if any(r["failures"] for r in results) else 0)


def summary(results, elapsed, args):
    def total(key, rs):
        return sum(r.get(key, 0) for r in rs)

    print(f"\npower-cut trials: {len(results)} in {elapsed / 60:.1f} min (seed {args.seed})")
    groups = [("all", results)]
    groups += [(f"variant {v}", [r for r in results if r["variant"] == v]) for v in VARIANTS]
    groups += [(f"mode {m}", [r for r in results if r["mode"] == m]) for m in ("strict", "ext4")]
    groups += [("cut by delay", [r for r in results if r["cut"] == "delay"]),
               ("cut after K writes", [r for r in results if r["cut"] == "write"]),
               ("older walk", [r for r in results if r.get("scenario") == "older"])]
    print(f"{'':22} {'trials':>6} {'cut':>5} {'failed':>6} {'corrupt':>7} {'ms lost':>7} {'ms dup':>6} "
          f"{'ph dup':>6} {'ph lost':>7} {'fixes lost':>10} {'worst s':>7} {'worst GPS s':>11}")
    for name, rs in groups:
        if not rs:
            continue
        print(f"{name:22} {len(rs):6} {sum(r.get('before_cut') == 'cut' for r in rs):5} "
              f"{sum(bool(r['failures']) for r in rs):6} {total('corrupt', rs):7} {total('milestones_lost', rs):7} "
              f"{total('milestones_duplicated', rs):6} {total('photos_duplicated', rs):6} {total('photos_lost', rs):7} "
              f"{total('fixes_lost', rs):10} {max((r.get('worst_loss_wall_s', 0) for r in rs), default=0):7.2f} "
              f"{max((r.get('worst_loss_gps_s', 0) for r in rs), default=0):11g}")
    older = [r for r in results if r.get("scenario") == "older"]
    if older:
        print(f"older walk: {sum(r.get('older_torn_line', False) for r in older)} of {len(older)} cuts left a torn "
              f"line in the older journal; {sum(bool(r['failures']) for r in older)} ended with a failure")
    stray = [name for r in results for name in r.get("stray_state_files", [])]
    print(f"stray files left in the state directory: {len(stray)} {sorted(set(stray))[:3]}")
    print(f"thumbnails present after the cut: {total('thumbnails_after_cut', results)}, after the restart: "
          f"{total('thumbnails_after_restart', results)}; journaled photos without their thumbnail (no eviction): "
          f"{total('thumbs_missing', results)}; milestones recorded {total('milestones', results)}, "
          f"still pending {total('pending', results)}")


if __name__ == "__main__":
    main()
