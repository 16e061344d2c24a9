#!/usr/bin/python3
"""A FUSE pass-through layer that models a power cut honestly.

    layer.py BACKING MOUNTPOINT REPORT_DIR [--mode strict|ext4] [--cut-after 'PATHPART|CONTENTPART|K']

Every operation goes straight to BACKING, so fieldlog sees an ordinary filesystem. Beside it the layer keeps
what a power cut would leave:
- a file's data is durable only as of its last fsync/fdatasync;
- a directory's entries (create, rename, unlink, mkdir) only as of the last fsync of that directory
  (`strict`, what POSIX promises), or as of any fsync at all (`ext4`: one metadata journal, committed in
  order with every fsync).

The cut is decided outside: the driver SIGKILLs fieldlog, writes REPORT_DIR/cut (`VARIANT SEED TIME`, TIME
the monotonic clock when it killed fieldlog) and unmounts. Only then does this process reset BACKING to
exactly the durable state, with the variant's tail on each file that had unsynced appends:
- `drop`: nothing unsynced survives;
- `torn`: a random prefix of the unsynced appended bytes survives (`partial`: never none or all of it);
- `zero`: the file keeps a random longer size, a random real prefix, then NUL bytes (ext4 can do this).
It writes REPORT_DIR/report.json (per file: durable and surviving sizes, the unsynced writes with their
times) and, for journals (*.jsonl), REPORT_DIR/precut/ (bytes written before the cut) and
REPORT_DIR/durable/ (bytes fsynced before the cut), both under the name fieldlog used.
With --cut-after, the layer itself cuts right after the K-th write whose path contains PATHPART and whose
data contains CONTENTPART: it SIGKILLs the writing process, touches REPORT_DIR/killed and fails every later
change with EIO, so nothing happens after the cut point.
Without REPORT_DIR/cut an unmount leaves BACKING as it is (a clean shutdown).

Single-threaded on purpose: operations are applied and recorded in the order the kernel delivers them.
"""
import errno
import json
import os
import random
import shutil
import signal
import sys
import time

from fusepy import FUSE, FuseOSError, Operations, fuse_get_context


class Layer(Operations):
    def __init__(self, backing, report_dir, mode, trigger=None):
        self.trigger = trigger  # [path part, content part, writes left]: cut after that write
        self.frozen = False
        self.killed_at = None  # monotonic time of a --cut-after kill
        self.back = os.path.abspath(backing)
        self.report_dir = report_dir
        self.mode = mode
        self.next_ino = 0
        self.kind = {}  # ino -> "d" or "f"
        self.current = {}  # dir ino -> {name: ino}, as fieldlog sees it now
        self.durable = {}  # dir ino -> {name: ino}, what a cut leaves
        self.data = {}  # file ino -> bytes as of the last fsync
        self.unsynced = {}  # file ino -> [(offset, length, monotonic time)] since the last fsync
        self.fsyncs = []  # (monotonic time, path, size) of every file fsync
        self.open_files = {}  # backing descriptor -> inode
        self.root = self._scan("")
        for d in self.current:
            self.durable[d] = dict(self.current[d])

    # Bookkeeping ------------------------------------------------------------------------------------

    def _new(self, kind):
        self.next_ino += 1
        self.kind[self.next_ino] = kind
        if kind == "d":
            self.current[self.next_ino] = {}
            self.durable[self.next_ino] = {}
        return self.next_ino

    def _scan(self, rel):
        """What is in BACKING at mount time is durable."""
        ino = self._new("d")
        for name in sorted(os.listdir(self.back + rel)):
            path = f"{rel}/{name}"
            if os.path.isdir(self.back + path) and not os.path.islink(self.back + path):
                self.current[ino][name] = self._scan(path)
            else:
                child = self._new("f")
                with open(self.back + path, "rb") as f:
                    self.data[child] = f.read()
                self.current[ino][name] = child
        return ino

    def lookup(self, path):
        ino = self.root
        for part in [p for p in path.split("/") if p]:
            ino = self.current[ino][part]
        return ino

    def parent(self, path):
        head, name = os.path.split(path)
        return self.lookup(head), name

    def commit_all_entries(self):
        for d in self.current:
            self.durable[d] = dict(self.current[d])

    # FUSE operations --------------------------------------------------------------------------------

    def getattr(self, path, fh=None):
        st = os.lstat(self.back + path)
        return {k: getattr(st, k) for k in ("st_mode", "st_nlink", "st_uid", "st_gid", "st_size", "st_blocks",
                                             "st_atime", "st_mtime", "st_ctime")}

    def readdir(self, path, fh):
        return [".", ".."] + os.listdir(self.back + path)

    def access(self, path, mode):
        if not os.access(self.back + path, mode):
            raise FuseOSError(errno.EACCES)

    def statfs(self, path):
        st = os.statvfs(self.back)
        return {k: getattr(st, k) for k in ("f_bsize", "f_frsize", "f_blocks", "f_bfree", "f_bavail", "f_files",
                                             "f_ffree", "f_favail", "f_flag", "f_namemax")}

    def mkdir(self, path, mode):
        self.alive()
        os.mkdir(self.back + path, mode)
        d, name = self.parent(path)
        self.current[d][name] = self._new("d")

    def rmdir(self, path):
        self.alive()
        os.rmdir(self.back + path)
        d, name = self.parent(path)
        del self.current[d][name]

    def unlink(self, path):
        self.alive()
        os.unlink(self.back + path)
        d, name = self.parent(path)
        del self.current[d][name]

    def rename(self, old, new):
        self.alive()
        os.rename(self.back + old, self.back + new)
        d, name = self.parent(old)
        ino = self.current[d].pop(name)
        d2, name2 = self.parent(new)
        self.current[d2][name2] = ino

    def link(self, target, source):
        raise FuseOSError(errno.EPERM)  # fieldlog makes no hard links; the model would need link counts

    def symlink(self, target, source):
        raise FuseOSError(errno.EPERM)

    def readlink(self, path):
        return os.readlink(self.back + path)

    def chmod(self, path, mode):
        self.alive()
        os.chmod(self.back + path, mode)

    def chown(self, path, uid, gid):
        self.alive()
        os.chown(self.back + path, uid, gid)

    def utimens(self, path, times=None):
        self.alive()
        os.utime(self.back + path, times)

    def truncate(self, path, length, fh=None):
        self.alive()
        os.truncate(self.back + path, length)
        self.changed(self.lookup(path), length, 0)

    def changed(self, ino, offset, length):
        self.unsynced.setdefault(ino, []).append((offset, length, time.monotonic()))

    # Open files: the backing descriptor (read-write, so that fsync can read the data back) and the inode,
    # which a rename does not change.

    def create(self, path, mode, fi=None):
        self.alive()
        fd = os.open(self.back + path, os.O_RDWR | os.O_CREAT | os.O_EXCL, mode)
        d, name = self.parent(path)
        ino = self._new("f")
        self.current[d][name] = ino
        self.open_files[fd] = ino
        return fd

    def open(self, path, flags):
        if flags & os.O_TRUNC:
            self.alive()
        fd = os.open(self.back + path, os.O_RDWR | (flags & os.O_TRUNC))
        self.open_files[fd] = self.lookup(path)
        if flags & os.O_TRUNC:
            self.changed(self.open_files[fd], 0, 0)
        return fd

    def read(self, path, size, offset, fh):
        return os.pread(fh, size, offset)

    def write(self, path, data, offset, fh):
        self.alive()
        written = os.pwrite(fh, data, offset)
        self.changed(self.open_files[fh], offset, written)
        if self.trigger and self.trigger[0] in path and self.trigger[1].encode() in data:
            self.trigger[2] -= 1
            if self.trigger[2] == 0:
                self.kill_caller()
        return written

    def alive(self):
        if self.frozen:
            raise FuseOSError(errno.EIO)

    def kill_caller(self):
        """The cut after this write: the writer dies before it can do anything else, and the layer changes
        nothing more."""
        self.frozen = True
        self.killed_at = time.monotonic()
        tid = fuse_get_context()[2]
        with open(f"/proc/{tid}/status") as f:
            tgid = int(next(line for line in f if line.startswith("Tgid:")).split()[1])
        os.kill(tgid, signal.SIGKILL)
        open(os.path.join(self.report_dir, "killed"), "w").close()

    def fsync(self, path, datasync, fh):
        self.alive()
        os.fdatasync(fh) if datasync else os.fsync(fh)
        ino = self.open_files[fh]
        self.data[ino] = os.pread(fh, os.fstat(fh).st_size, 0)
        self.unsynced.pop(ino, None)
        self.fsyncs.append((time.monotonic(), path, len(self.data[ino])))
        if self.mode == "ext4":
            self.commit_all_entries()

    def flush(self, path, fh):
        pass

    def release(self, path, fh):
        del self.open_files[fh]
        os.close(fh)

    def opendir(self, path):
        return 0

    def releasedir(self, path, fh):
        pass

    def fsyncdir(self, path, datasync, fh):
        self.alive()
        d = self.lookup(path)
        self.durable[d] = dict(self.current[d])
        if self.mode == "ext4":
            self.commit_all_entries()

    # Reset ------------------------------------------------------------------------------------------

    def cut(self, variant, seed, cut_time):
        """`cut_time`: when the driver killed fieldlog. A kill of the layer's own comes first. Not the time of
        the unmount: the driver stops gpsfake in between (up to 10 s), and a fix's age at the cut must not
        count that (a trial once blamed 10 s of it on the recorder)."""
        rng = random.Random(seed)
        cut_time = self.killed_at or cut_time
        before = {}  # ino -> (current path, bytes written before the cut)
        for path, ino in self._walk(self.current, self.root, ""):
            if self.kind[ino] == "f":
                with open(self.back + path, "rb") as f:
                    before[ino] = (path, f.read())
        files = {}
        for path, ino in self._walk(self.durable, self.root, ""):
            if self.kind[ino] == "f":
                files[path] = self._survivor(ino, before.get(ino), variant, rng)
        for name in os.listdir(self.back):
            full = os.path.join(self.back, name)
            shutil.rmtree(full) if os.path.isdir(full) and not os.path.islink(full) else os.unlink(full)
        report = {"variant": variant, "mode": self.mode, "cut_time": cut_time, "fsyncs": self.fsyncs, "files": {}}
        for path, ino in self._walk(self.durable, self.root, ""):
            if self.kind[ino] == "d":
                os.makedirs(self.back + path, exist_ok=True)
                continue
            survivor, entry = files[path]
            with open(self.back + path, "wb") as f:
                f.write(survivor)
            report["files"][path] = entry
        for ino, (path, written) in before.items():
            if path.endswith(".jsonl"):
                for sub, content in (("precut", written), ("durable", self.data.get(ino, b""))):
                    target = os.path.join(self.report_dir, sub) + path
                    os.makedirs(os.path.dirname(target), exist_ok=True)
                    with open(target, "wb") as f:
                        f.write(content)
                report["files"].setdefault(path, {})["unsynced"] = self.unsynced.get(ino, [])
        with open(os.path.join(self.report_dir, "report.json"), "w") as f:
            json.dump(report, f)

    def _survivor(self, ino, before, variant, rng):
        durable = self.data.get(ino, b"")
        entry = {"durable": len(durable), "unsynced": self.unsynced.get(ino, [])}
        written = before[1] if before else durable
        entry["written"] = len(written)
        survivor = durable
        if variant != "drop" and ino in self.unsynced and written.startswith(durable) and len(written) > len(durable):
            extra = len(written) - len(durable)
            kept = rng.randint(1, extra - 1) if variant == "partial" and extra > 1 else rng.randint(0, extra)
            survivor = written[: len(durable) + kept]
            if variant == "zero":
                length = rng.randint(len(survivor), len(written))
                survivor += b"\0" * (length - len(survivor))
        entry["survived"] = len(survivor)
        return survivor, entry

    def _walk(self, table, ino, path):
        for name, child in sorted(table[ino].items()):
            yield f"{path}/{name}", child
            if self.kind[child] == "d":
                yield from self._walk(table, child, f"{path}/{name}")


def main():
    args = sys.argv[1:]
    mode = "strict"
    if "--mode" in args:
        i = args.index("--mode")
        mode = args[i + 1]
        del args[i : i + 2]
    trigger = None
    if "--cut-after" in args:
        i = args.index("--cut-after")
        part, content, count = args[i + 1].split("|")
        trigger = [part, content, int(count)]
        del args[i : i + 2]
    backing, mountpoint, report_dir = args
    layer = Layer(backing, report_dir, mode, trigger)
    # hard_remove: an unlink removes the backing file at once (no .fuse_hidden renames to model).
    FUSE(layer, mountpoint, foreground=True, nothreads=True, hard_remove=True, fsname="powercut")
    cut = os.path.join(report_dir, "cut")
    if os.path.exists(cut):
        # "VARIANT SEED [MONOTONIC_TIME]": without a time (PowerCutTests' cut file), the cut is now.
        variant, seed, *cut_time = open(cut).read().split()
        layer.cut(variant, int(seed), float(cut_time[0]) if cut_time else time.monotonic())


if __name__ == "__main__":
    main()
