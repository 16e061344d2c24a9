#!/usr/bin/env python3
"""Two fieldlog binaries over the same long walk, interleaved, with gpxlogger beside them: what a change costs.

    bench/daemon-compare.py --before OLD_BINARY --after NEW_BINARY [--hours 4] [--reps 5] [--labels OLD NEW]

Each repetition replays bench/walk.py's walk through gpsfake into `fieldlog run --once` (no photo source) for
each binary, then into gpxlogger, in turn, so that the machine's load falls on all of them alike. Prints a
Markdown table of CPU seconds (user + sys) per walked hour: medians (min-max) and the ratio of the medians.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from walkbench import machine, run_daemon, run_gpxlogger, spread  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True)
    parser.add_argument("--after", required=True)
    parser.add_argument("--labels", nargs=2, default=["before", "after"], help="names for the two binaries")
    parser.add_argument("--hours", type=float, default=4)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--work", type=Path, default=HERE.parent / ".build-bench" / "compare")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    capture = args.work / f"walk-{args.hours:g}h.nmea"
    if not capture.exists():
        subprocess.run([sys.executable, str(HERE / "walk.py"), str(args.hours), str(capture)], check=True)
    binaries = {"before": str(Path(args.before).resolve()), "after": str(Path(args.after).resolve())}
    runs = {"before": [], "after": [], "gpxlogger": []}
    load = os.getloadavg()[0]
    for rep in range(args.reps):
        for name, binary in binaries.items():
            runs[name].append(run_daemon(binary, capture, args.work, None))
        runs["gpxlogger"].append(run_gpxlogger(capture, args.work))
        print(f"  rep {rep + 1}/{args.reps}: " + ", ".join(f"{n} {r[-1]['cpu']:.2f} s" for n, r in runs.items()),
              file=sys.stderr)
    hours = runs["before"][0]["walked_hours"]
    per_hour = {name: [r["cpu"] / hours for r in rs] for name, rs in runs.items()}
    text = [f"Made by `bench/daemon-compare.py --hours {args.hours:g} --reps {args.reps}`: a {hours:.1f}-hour walk "
            f"({runs['before'][0]['fixes']} fixes) through gpsfake `-c 0`, binaries interleaved. Machine: {machine()} "
            f"after the runs, {load:.2f} before.", "",
            "| run | CPU s per walked hour | vs before | distance m | milestones |", "|---|---|---|---|---|"]
    before = statistics.median(per_hour["before"])
    for name in ["before", "after"]:
        r0 = runs[name][0]
        distance = max(line["dist"] for line in _fixes(r0["journal"]))
        label = args.labels[0 if name == "before" else 1]
        text.append(f"| fieldlog {label} | {spread(per_hour[name], '{:.3f}')} "
                    f"| {statistics.median(per_hour[name]) / before:.3f}x | {distance:.0f} | {r0['milestones']} |")
    text.append(f"| gpxlogger | {spread(per_hour['gpxlogger'], '{:.3f}')} "
                f"| {statistics.median(per_hour['gpxlogger']) / before:.3f}x | | |")
    print("\n".join(text))


def _fixes(journal):
    return [json.loads(line) for line in journal.read_bytes().splitlines() if b'"type":"fix"' in line]


if __name__ == "__main__":
    main()
