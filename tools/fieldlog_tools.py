"""What bench/, reliability/ and deploy/order-symbols all need around a replay: a free port, gpsfake in a
session of its own, waiting for it to listen, stopping a process with everything it started, and the photo
sources of a `fieldlog run` pinned.

Scripts import it with `sys.path.insert(0, str(REPO / "tools"))`.
"""
import functools
import os
import signal
import socket
import subprocess
import time

GPSFAKE = "/usr/bin/gpsfake"


def photo_sources(binary, sources):
    """The arguments that pin `binary run` to `sources` ("none", "flickr", "local"): what a replay meant
    before fieldlog had Wikimedia Commons (issue 29). Left to its default, a run with no key and no folder now
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
