#!/usr/bin/python3
"""A GPS receiver on a pseudo-terminal, for GPSDFaultTests: nmea_pty.py CAPTURE DELAY NAME_FILE writes the
terminal's path to NAME_FILE, then CAPTURE's sentences to it at DELAY seconds per sentence, whether or not
anyone reads (a receiver does not wait for gpsd). Exits when the capture ends, or when killed."""
import os
import sys
import time
import tty

path, delay, name_file = sys.argv[1], float(sys.argv[2]), sys.argv[3]
master, slave = os.openpty()
os.set_blocking(master, False)
tty.setraw(slave)
# gpsd opens receivers added through its control socket after dropping root.
os.chmod(os.ttyname(slave), 0o666)
with open(name_file + ".tmp", "w") as name:
    name.write(os.ttyname(slave))
os.rename(name_file + ".tmp", name_file)
with open(path, "rb") as capture:
    lines = [line for line in capture if not line.startswith(b"#")]
for line in lines:
    try:
        os.write(master, line)
    except BlockingIOError:
        pass
    time.sleep(delay)
time.sleep(1)
