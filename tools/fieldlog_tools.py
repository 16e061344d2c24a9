"""What bench/, reliability/ and deploy/order-symbols all need around a replay: a free port, gpsfake in a
session of its own, waiting for it to listen, stopping a process with everything it started, the photo
sources of a `fieldlog run` pinned, and the fake Flickr (`fieldlog-fakes flickr`, the tests' FakeFlickr).

Scripts import it with `sys.path.insert(0, str(REPO / "tools"))`.
"""
import ctypes
import functools
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

GPSFAKE = "/usr/bin/gpsfake"
REPO = Path(__file__).resolve().parent.parent


def photo_sources(binary, sources):
    """The arguments that pin `binary run` to `sources` ("none", "flickr", "local"): what a replay meant
    before fieldlog had Wikimedia Commons. Left to its default, a run with no key and no folder now
    asks the real Commons over the internet (and a `--once` replay ends only when its photos are served), and
    one with the fake Flickr's key falls through to the real Commons when the fake finds nothing.
    Empty for a build from before `--photo-sources` (it would refuse the option): its sources were those.
    The first call for a binary runs `BINARY run --help`: make it before gpsfake starts its replay."""
    return ["--photo-sources", sources] if _knows_photo_sources(binary) else []


@functools.lru_cache(maxsize=None)
def _knows_photo_sources(binary):
    help_text = subprocess.run([str(binary), "run", "--help"], capture_output=True, text=True, timeout=300,
                               env=dict(os.environ, FIELDLOG_CONFIG="/dev/null"))
    if help_text.returncode != 0:
        raise RuntimeError(f"{binary} run --help exited {help_text.returncode}: {help_text.stderr.strip()[:200]}")
    return "--photo-sources" in help_text.stdout


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port, seconds=30.0):
    """True once something accepts on 127.0.0.1:port, False after `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return True
        except OSError:
            time.sleep(0.02)
    return False


def start_gpsfake(capture, cycle=0.0, port=None, log=None, wait=True):
    """gpsfake replaying `capture` once into a private gpsd on `port` (a free one if None), `cycle` seconds per
    sentence (0: as fast as gpsd takes them), its messages appended to `log` (a path) or dropped (its standard
    output, gpsd's reports in pipe mode, is dropped). In a session of its own, so that `stop` ends its gpsd
    with it.
    With `wait`, returns once gpsd listens (within about 0.65 s; gpsfake starts replaying 1.4 s after it
    starts, whether anyone is connected or not), and raises RuntimeError if it does not within 30 s.
    Returns (process, port)."""
    port = port or free_port()
    errors = open(log, "ab") if log else subprocess.DEVNULL
    proc = subprocess.Popen([GPSFAKE, "-1", "-p", "-q", "-c", f"{cycle:g}", "-P", str(port), str(capture)],
                            stdout=subprocess.DEVNULL, stderr=errors, start_new_session=True)
    if log:
        errors.close()  # the child has its own copy
    if wait and not wait_listening(port):
        stop(proc)
        raise RuntimeError(f"gpsfake's gpsd did not listen on port {port} within 30 s")
    return proc, port


def stop(proc, sig=signal.SIGTERM, grace=10.0):
    """Sends `sig` to the process group `proc` leads (it was started with start_new_session=True), SIGKILL
    after `grace` seconds if it has not ended, and reaps it. Returns its exit status. The group is signalled
    even if its leader has ended: gpsfake's gpsd may outlive it."""
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass
    try:
        return proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        return proc.wait()


class FakeFlickr:
    """A running `fieldlog-fakes flickr`: `endpoint` for --flickr-endpoint, `api_key` for FLICKR_API_KEY."""

    def __init__(self, proc, endpoint, api_key):
        self.proc, self.endpoint, self.api_key = proc, endpoint, api_key

    def stop(self):
        self.proc.stdout.close()
        stop(self.proc)


def start_fake_flickr(jpeg, build_dir=None):
    """The tests' fake Flickr (Sources/FieldLogFakes) on a free port of 127.0.0.1, in the mode where every search
    finds one photo 20 m north-east of its point, taken ten minutes after the one before, and every download
    gets `jpeg`. Runs `fieldlog-fakes` from `build_dir` (a `swift build` bin directory that holds it); without
    one, builds it first (`swift build -c release --product fieldlog-fakes`, messages to stderr).
    Returns a FakeFlickr; call its stop()."""
    if build_dir is None:
        swift = shutil.which("swift") or "/opt/swift/usr/bin/swift"
        release = [swift, "build", "-c", "release", "--product", "fieldlog-fakes"]
        subprocess.run(release, cwd=REPO, check=True, stdout=sys.stderr)
        build_dir = subprocess.run([*release, "--show-bin-path"], cwd=REPO, check=True, capture_output=True,
                                   text=True).stdout.strip()
    proc = subprocess.Popen([str(Path(build_dir) / "fieldlog-fakes"), "flickr", "--jpeg", str(jpeg)],
                            stdout=subprocess.PIPE, text=True, start_new_session=True, preexec_fn=_die_with_parent)
    endpoint, api_key = proc.stdout.readline().strip(), proc.stdout.readline().strip()
    if not api_key:
        proc.stdout.close()
        raise RuntimeError(f"fieldlog-fakes flickr exited {stop(proc)} before it served")
    return FakeFlickr(proc, endpoint, api_key)


_prctl = ctypes.CDLL(None).prctl  # looked up here, not in the forked child


def _die_with_parent():
    """In the child before exec: SIGTERM when the script that started it dies, however it dies, so that no fake
    outlives a benchmark killed mid-run (prctl PR_SET_PDEATHSIG)."""
    _prctl(1, signal.SIGTERM)
