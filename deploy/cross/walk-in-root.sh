#!/bin/bash
# Runs inside a target root (deploy/cross/check-aarch64): a real gpsd, started by gpsfake, replays the
# bundled capture into `fieldlog run --once` with photos from demo/photos and the live page on; the page is
# read while the walk is recorded, then the walk is exported in all four formats. Prints PASS/FAIL lines and
# the recorder's peak resident memory; exits 1 if any check failed.
#
#   walk-in-root.sh FIELDLOG REPO OUT
set -uo pipefail
FIELDLOG=$1
REPO=$2
OUT=$3
export FIELDLOG_CONFIG=/dev/null
rm -rf "$OUT" && mkdir -p "$OUT/state"
failed=0
pass() { printf '    PASS %s\n' "$*"; }
fail() { printf '    FAIL %s\n' "$*"; failed=1; }
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

echo "    machine: $(uname -m); fieldlog: $(head -c 20 "$FIELDLOG" | od -An -tx1 -j18 -N2 | tr -d ' ') (e_machine, b700 = aarch64); $("$FIELDLOG" --version)"
GPSD_PORT=$(free_port)
HTTP_PORT=$(free_port)
# The recorder first (it retries gpsd every 2 s at most), then gpsfake, which waits for a client before it
# replays: the whole capture reaches the recorder however slowly it starts, so every run records the same walk.
"$FIELDLOG" run --once --gpsd "127.0.0.1:$GPSD_PORT" --state-dir "$OUT/state" --cache-dir "$OUT/cache" \
    --photos-dir "$REPO/demo/photos" --http "127.0.0.1:$HTTP_PORT" 2>"$OUT/fieldlog.log" &
recorder=$!
# 3 ms between sentences: under emulation gpsd and fieldlog keep up.
gpsfake -1 -q -c 0.003 -P "$GPSD_PORT" "$REPO/Tests/Fixtures/captures/bundg_zeus_9.log" >/dev/null 2>"$OUT/gpsfake.log" &
gpsfake_pid=$!

# The live page, read while the walk is recorded; the recorder's resident memory sampled meanwhile.
peak=0
page=0
while kill -0 "$recorder" 2>/dev/null; do
    rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$recorder/status" 2>/dev/null || echo 0)
    [ "${rss:-0}" -gt "$peak" ] && peak=$rss
    if [ "$page" = 0 ] && python3 - "$HTTP_PORT" >"$OUT/page.check" 2>&1 <<'EOF'
import sys, urllib.request
port = sys.argv[1]
page = urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10)
body = page.read().decode()
assert page.status == 200 and "data-milestone=" in body, "no milestone on the page yet"
csp = page.headers.get("Content-Security-Policy", "")
walk = urllib.request.urlopen(f"http://127.0.0.1:{port}/walk.json", timeout=10).read().decode()
print(f"GET / {page.status}, {len(body)} bytes, {body.count('data-milestone=')} milestones, CSP {'set' if csp else 'missing'}; /walk.json {len(walk)} bytes")
EOF
    then
        page=1
        pass "live page served while recording: $(cat "$OUT/page.check")"
    fi
    sleep 0.5
done
wait "$recorder"; rc=$?
wait "$gpsfake_pid" 2>/dev/null
[ "$page" = 1 ] || fail "live page: $(tail -n 1 "$OUT/page.check")"
[ "$rc" = 0 ] && pass "fieldlog run --once ended cleanly (exit 0)" || { fail "fieldlog run exited $rc"; tail -n 20 "$OUT/fieldlog.log"; }
echo "    recorder peak VmRSS under qemu-user: $peak kB"

for format in json gpx geojson html; do
    if "$FIELDLOG" export --state-dir "$OUT/state" --cache-dir "$OUT/cache" "$OUT/walk.$format" 2>"$OUT/export.err"; then
        pass "export walk.$format ($(stat -c %s "$OUT/walk.$format") bytes)"
    else
        fail "export walk.$format: $(cat "$OUT/export.err")"
    fi
done
python3 - "$OUT" <<'EOF' && pass "$(cat "$OUT/walk.check")" || fail "walk: $(cat "$OUT/walk.check")"
import json, sys
out = sys.argv[1]
walk = json.load(open(f"{out}/walk.json"))
milestones = walk["milestones"]
found = [m for m in milestones if m.get("photo_status") == "found" and m["photo"] and m["photo"].get("cached")]
message = (f"{walk['walk']['distance_m']:.0f} m, {len(walk['track'])} fixes, {len(milestones)} milestones, "
           f"{len(found)} with a photo made into a thumbnail by the aarch64 photo worker")
open(f"{out}/walk.check", "w").write(message)
sys.exit(0 if len(milestones) >= 3 and len(found) == len(milestones) else 1)
EOF
if xmllint --noout --schema "$REPO/Tests/Fixtures/gpx-1.1.xsd" "$OUT/walk.gpx" 2>"$OUT/xmllint.log"; then
    pass "walk.gpx valid against the GPX 1.1 schema"
else
    fail "walk.gpx: $(tail -n 2 "$OUT/xmllint.log")"
fi
grep -q '<svg' "$OUT/walk.html" && [ "$(grep -o 'data-milestone=' "$OUT/walk.html" | wc -l)" -ge 3 ] \
    && pass "walk.html: the track and $(grep -o 'data-milestone=' "$OUT/walk.html" | wc -l) milestones" \
    || fail "walk.html has no track or milestones"
exit "$failed"
