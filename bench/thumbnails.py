"""Thumbnail benchmark: fieldlog's thumbnailer against the tools its users would otherwise pick.

Run through bench/thumbnails, which installs the tools, builds fieldlog and the corpus, then calls

    python bench/thumbnails.py --fieldlog BIN --corpus DIR [--reps N] [--size 320] [--results FILE]

What is measured, per tool, over the whole corpus at --size pixels on the long side, JPEG quality 80:
- total CPU: user + sys of the whole process from os.wait4 (so interpreter and runtime start-up count), summed over
  processes for the tools run once per file; median and min-max over the repetitions;
- per image: CPU ms of one image (in-process CPU timers where the tool runs in one process, the whole process's
  user + sys where it runs once per file, start-up included); the median over the images, and two large ones;
- peak RSS: ru_maxrss of the process (the largest of the per-file processes);
- quality: PSNR of the tool's JPEG against an exact area average (float64) of a full-precision Pillow decode to the
  same size, upright.
Every tool does the same job end to end: read the file, decode, reduce, turn upright, encode JPEG q80 and write it;
only `djpeg -scale 1/8` (a lower bound) decodes without resizing or encoding.
"""

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SYSTEM_PYTHON = "/usr/bin/python3"  # Debian's, with python3-pil
QUALITY = 80
# The two images quoted on their own (the notes' columns): the largest baseline photo, 20 MP 4:2:2, and the
# largest progressive 4:4:4, 14.7 MP.
LARGE_BASELINE = "p35_Kleiber"
LARGE_PROGRESSIVE = "p33_Volna"


def run_measured(argv, stdout_path, stderr_path, env=None):
    """Runs argv to completion; its exit status, user + sys CPU seconds and peak RSS from wait4."""
    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        wall = time.perf_counter()
        child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - wall
    return {
        "status": child.returncode,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "user_s": usage.ru_utime,
        "sys_s": usage.ru_stime,
        "maxrss_kb": usage.ru_maxrss,
        "wall_s": wall,
    }


def stem(path):
    return os.path.splitext(os.path.basename(path))[0]


class Tool:
    """A thumbnailer as the benchmark runs it. run() returns total CPU, peak RSS and per-image CPU ms."""

    name = ""
    label = ""
    makes_thumbnails = True  # False: a bound that only decodes, no PSNR
    profile_argv = None  # the one process to count instructions of with --callgrind, if the tool has one

    def __init__(self, args, work):
        self.args = args
        self.outdir = os.path.join(work, "thumbs", self.name)
        self.logs = os.path.join(work, "logs", self.name)
        os.makedirs(self.outdir, exist_ok=True)
        os.makedirs(self.logs, exist_ok=True)

    def output(self, path):
        return os.path.join(self.outdir, stem(path) + ".jpg")

    def clean(self):
        for name in os.listdir(self.outdir):
            os.unlink(os.path.join(self.outdir, name))

    def one_process(self, argv, rep):
        out = os.path.join(self.logs, f"rep{rep}.out")
        err = os.path.join(self.logs, f"rep{rep}.err")
        m = run_measured(argv, out, err)
        if m["status"] != 0:
            raise RuntimeError(f"{self.name}: {' '.join(argv[:4])} ... exited {m['status']}, see {err}")
        return m, out, err

    def per_file(self, files, argv_for, rep):
        """One process per file: the sum of their CPU, the largest RSS, and each one's CPU as its time."""
        total, system, rss, per_image, failures = 0.0, 0.0, 0, {}, []
        for path in files:
            out = os.path.join(self.logs, f"rep{rep}-{stem(path)}.out")
            err = os.path.join(self.logs, f"rep{rep}-{stem(path)}.err")
            m = run_measured(argv_for(path), out, err)
            total += m["cpu_s"]
            system += m["sys_s"]
            rss = max(rss, m["maxrss_kb"])
            if m["status"] == 0:
                per_image[stem(path)] = m["cpu_s"] * 1e3
                os.unlink(out)
                os.unlink(err)
            else:
                failures.append(stem(path))
        return {"cpu_s": total, "sys_s": system, "maxrss_kb": rss, "per_image_ms": per_image, "failures": failures}


class FieldLog(Tool):
    name, label = "fieldlog", "fieldlog thumbnail (one process)"

    def argv(self, files, binary=None):
        return [binary or self.args.fieldlog, "thumbnail", "--size", str(self.args.size), "--timings", "--out",
                self.outdir] + files

    def profile_argv(self, files):
        # valgrind 3.19 cannot read the DWARF 5 of Swift's toolchain: profile a copy without debug info.
        copy = os.path.join(self.logs, "fieldlog-nodebug")
        subprocess.run(["objcopy", "--strip-debug", self.args.fieldlog, copy], check=True)
        return self.argv(files, copy)

    def run(self, files, rep):
        m, out, err = self.one_process(self.argv(files), rep)
        per_image = {}
        with open(err) as lines:
            for line in lines:
                fields = line.rstrip("\n").split("\t")
                if fields[0] == "time":
                    per_image[stem(fields[3])] = float(fields[1])
        failures = [stem(f) for f in files if stem(f) not in per_image]
        return {"cpu_s": m["cpu_s"], "sys_s": m["sys_s"], "maxrss_kb": m["maxrss_kb"], "per_image_ms": per_image,
                "failures": failures}


class PythonWorker(Tool):
    python = SYSTEM_PYTHON
    worker = ""

    def argv(self, files):
        return [self.python, os.path.join(HERE, "thumbnails_worker.py"), self.worker, str(self.args.size),
                str(QUALITY), self.outdir] + files

    profile_argv = argv

    def run(self, files, rep):
        m, out, err = self.one_process(self.argv(files), rep)
        per_image, failures = {}, []
        with open(out) as lines:
            for line in lines:
                record = json.loads(line)
                if "error" in record:
                    failures.append(stem(record["file"]))
                else:
                    per_image[stem(record["file"])] = record["cpu_ms"]
        return {"cpu_s": m["cpu_s"], "sys_s": m["sys_s"], "maxrss_kb": m["maxrss_kb"], "per_image_ms": per_image,
                "failures": failures}


class Pillow(PythonWorker):
    name, label, worker = "pillow", "Pillow draft()+thumbnail() (one process)", "pillow"


class PyVips(PythonWorker):
    name, label, worker = "pyvips", "pyvips thumbnail (one process)", "pyvips"
    python = sys.executable  # the venv's, with pyvips
    profile_argv = None  # libvips' run-time (orc) SIMD code crashes under valgrind 3.19


class VipsThumbnail(Tool):
    name, label = "vipsthumbnail", "vipsthumbnail (one process; per image: one process each)"

    def argv(self, files):
        return ["vipsthumbnail", "--size", str(self.args.size), "-o",
                os.path.join(self.outdir, f"%s.jpg[Q={QUALITY},strip]")] + files

    def run(self, files, rep):
        m, out, err = self.one_process(self.argv(files), rep)
        # vipsthumbnail does not time each file: a second pass, one process per file, gives per-image times.
        single = self.per_file(files, lambda path: self.argv([path]), rep)
        return {"cpu_s": m["cpu_s"], "sys_s": m["sys_s"], "maxrss_kb": m["maxrss_kb"],
                "per_image_ms": single["per_image_ms"], "failures": single["failures"]}


class ImageMagick(Tool):
    name, label = "imagemagick", "ImageMagick convert -thumbnail (one process per image)"
    convert = "/usr/bin/convert-im6.q16"

    def run(self, files, rep):
        hint = f"jpeg:size={2 * self.args.size}x{2 * self.args.size}"
        return self.per_file(
            files,
            lambda path: [self.convert, "-define", hint, path, "-auto-orient", "-thumbnail",
                          f"{self.args.size}x{self.args.size}", "-strip", "-quality", str(QUALITY), self.output(path)],
            rep)


class DJpeg(Tool):
    name, label = "djpeg", "djpeg -scale 1/8 (decode only, one process per image)"
    makes_thumbnails = False

    def run(self, files, rep):
        return self.per_file(files, lambda path: ["djpeg", "-scale", "1/8", "-outfile", "/dev/null", path], rep)


TOOLS = [FieldLog, Pillow, PyVips, VipsThumbnail, ImageMagick, DJpeg]


def count_instructions(tool, files):
    """Instructions of the tool's whole process over the corpus, from callgrind: reproducible on a busy machine."""
    log = os.path.join(tool.logs, "callgrind.log")
    argv = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", f"--log-file={log}"]
    done = subprocess.run(argv + tool.profile_argv(files), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if done.returncode == 0:
        with open(log) as lines:
            for line in lines:
                if "Collected :" in line:
                    return int(line.split(":")[-1].strip())
    raise RuntimeError(f"callgrind on {tool.name} failed (exit {done.returncode}), see {log}")


# MARK: - Quality


def area_average_axis(a, n_out, axis):
    """Exact area average (box filter with fractional coverage) of a float64 array along one axis."""
    import numpy as np

    a = np.moveaxis(a, axis, 0)
    n = a.shape[0]
    cumulative = np.zeros((n + 1,) + a.shape[1:], dtype=np.float64)
    np.cumsum(a, axis=0, out=cumulative[1:])
    edges = np.arange(n_out + 1, dtype=np.float64) * n / n_out
    index = np.minimum(np.floor(edges).astype(np.int64), n - 1)
    fraction = (edges - index).reshape((-1,) + (1,) * (a.ndim - 1))
    below = cumulative[index]
    integral = below + fraction * (cumulative[index + 1] - below)
    return np.moveaxis((integral[1:] - integral[:-1]) * (n_out / n), 0, axis)


ORIENT = {  # EXIF orientation -> numpy moves that turn a stored image upright
    1: lambda a: a,
    2: lambda a: a[:, ::-1],
    3: lambda a: a[::-1, ::-1],
    4: lambda a: a[::-1],
    5: lambda a: a.swapaxes(0, 1),
    6: lambda a: a.swapaxes(0, 1)[:, ::-1],
    7: lambda a: a.swapaxes(0, 1)[::-1, ::-1],
    8: lambda a: a.swapaxes(0, 1)[::-1],
}


class Reference:
    """Full-precision decodes (Pillow, no draft) area-averaged to whatever size a tool made, upright."""

    def __init__(self):
        self.decoded = {}
        self.cache = {}

    def source(self, path):
        import numpy as np
        from PIL import Image

        if path not in self.decoded:
            with Image.open(path) as im:
                orientation = im.getexif().get(0x0112, 1)
                mode = "L" if im.mode == "L" else "RGB"
                pixels = np.asarray(im.convert(mode), dtype=np.float64)
            self.decoded = {path: (pixels, orientation if orientation in ORIENT else 1, mode)}  # one at a time
        return self.decoded[path]

    def get(self, path, width, height):
        import numpy as np

        key = (path, width, height)
        if key not in self.cache:
            pixels, orientation, mode = self.source(path)
            stored = (height, width) if orientation >= 5 else (width, height)
            small = area_average_axis(area_average_axis(pixels, stored[0], 1), stored[1], 0)
            self.cache[key] = (np.ascontiguousarray(ORIENT[orientation](small)), mode)
        return self.cache[key]


def psnr(path, thumbnail, reference):
    import numpy as np
    from PIL import Image

    with Image.open(thumbnail) as im:
        width, height = im.size
        ref, mode = reference.get(path, width, height)
        got = np.asarray(im.convert(mode), dtype=np.float64)
    want = np.clip(np.rint(ref), 0, 255)
    mse = float(np.mean((got - want) ** 2))
    return (float("inf") if mse == 0 else 10 * np.log10(255 * 255 / mse)), (width, height)


# MARK: - Machine and report


def machine():
    model = "?"
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"cores": os.cpu_count(), "model": model, "kernel": platform.release()}


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def version(argv):
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        text = (done.stdout or done.stderr).strip().splitlines()
        return text[0] if text else "?"
    except (OSError, subprocess.SubprocessError):
        return "?"


def versions(args):
    import PIL
    import numpy

    try:
        import pyvips

        vips = f"pyvips {pyvips.__version__}, libvips {pyvips.version(0)}.{pyvips.version(1)}.{pyvips.version(2)}"
    except Exception as error:  # reported, not fatal: the pyvips row then fails
        vips = f"pyvips unavailable ({error})"
    libjpeg = version(["dpkg-query", "-W", "-f", "${Version}", "libjpeg62-turbo"])
    return {
        "fieldlog": version(["git", "-C", os.path.dirname(HERE), "log", "-1", "--format=%h %cs"]) +
        (" with local changes" if subprocess.run(["git", "-C", os.path.dirname(HERE), "diff", "--quiet", "HEAD", "--",
                                                  "Sources"]).returncode else ""),
        "swift": version(["swift", "--version"]),
        "libjpeg-turbo": libjpeg,
        "Pillow": f"{PIL.__version__} (numpy {numpy.__version__}, {version([SYSTEM_PYTHON, '--version'])})",
        "vips": vips,
        "ImageMagick": version([ImageMagick.convert, "-version"]),
    }


def spread(values, digits=2, scale=1.0):
    values = [v * scale for v in values]
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def ratio(value, base):
    return f"{value / base:.2f}x" if base else "-"


def report(args, tools, results, quality, info, files):
    corpus_mp = sum(info["pixels"].values()) / 1e6
    lines = []
    add = lines.append

    def ir_cells(name):
        if not info["instructions"]:
            return ""
        count = info["instructions"].get(name)
        if count is None:
            return " - | - |"
        return f" {count / 1e9:.2f} G | {ratio(count, info['instructions'].get('fieldlog'))} |"

    add(f"Made by `{args.command}` on {info['date']}.")
    add("")
    add(f"Corpus: {len(files)} real photos ({corpus_mp:.0f} MP in all, 0.3-20 MP; baseline and progressive; 4:4:4, "
        "4:2:2, 4:2:0 and grayscale; one with EXIF orientation 6) from `bench/build-corpus.sh`. "
        f"Target: {args.size} px long side, upright, JPEG q{QUALITY}. {args.reps} repetitions, tools interleaved.")
    add("")
    m = info["machine"]
    add(f"Machine: {m['cores']} cores, {m['model']}, Linux {m['kernel']}; load average (1, 5, 15 min) "
        f"{info['load_before']} before, {info['load_after']} after. Other work shares this machine: CPU seconds "
        "are steadier than wall time, but still move with cache and memory contention.")
    add("")
    base = results["fieldlog"]
    base_cpu = statistics.median(base["cpu_s"])
    base_ms = statistics.median(base["median_ms"])
    base_rss = max(base["maxrss_kb"])
    add(f"| tool | total CPU s, median (min-max) | of which sys | vs fieldlog | median ms/image | vs fieldlog | "
        f"{LARGE_BASELINE} 20 MP baseline ms | {LARGE_PROGRESSIVE} 14.7 MP progressive ms | peak RSS MB | "
        "vs fieldlog | PSNR dB median | PSNR dB worst |" + (" instructions (callgrind) | vs fieldlog |" if
                                                            info["instructions"] else ""))
    add("|---|---|---|---|---|---|---|---|---|---|---|---|" + ("---|---|" if info["instructions"] else ""))
    for tool in tools:
        r = results[tool.name]
        if not r["cpu_s"]:
            add(f"| {tool.label} | failed: {r.get('error', '?')} |" + " |" * (10 + 2 * bool(info["instructions"])))
            continue
        cpu = statistics.median(r["cpu_s"])
        ms = statistics.median(r["median_ms"])
        rss = max(r["maxrss_kb"])
        q = quality.get(tool.name)
        if q:
            values = [v for v, _ in q.values()]
            worst = min(q.items(), key=lambda item: item[1][0])
            q_median, q_worst = f"{statistics.median(values):.2f}", f"{worst[1][0]:.2f} ({worst[0]})"
        else:
            q_median = q_worst = "n/a"
        add(f"| {tool.label} | {spread(r['cpu_s'])} | {statistics.median(r['sys_s']):.2f} | {ratio(cpu, base_cpu)} | "
            f"{spread(r['median_ms'], 1)} | {ratio(ms, base_ms)} | {spread(r['large_baseline_ms'], 0)} | "
            f"{spread(r['large_progressive_ms'], 0)} | "
            f"{rss / 1024:.0f} | {ratio(rss, base_rss)} | {q_median} | {q_worst} |" + ir_cells(tool.name))
    add("")
    pillow = results.get("pillow")
    if info["instructions"]:
        add("Instructions: the whole process over the corpus, counted once by `valgrind --tool=callgrind` "
            "(`bench/thumbnails --callgrind`); unlike CPU seconds they do not move with the machine's load. Only "
            "for the tools that run in one process, and not for libvips, whose run-time (orc) SIMD code crashes "
            "under valgrind 3.19.")
        add("")
    if pillow and pillow["cpu_s"] and base["cpu_s"]:
        cpu_ratio = base_cpu / statistics.median(pillow["cpu_s"])
        qf = [v for v, _ in quality.get("fieldlog", {}).values()]
        qp = [v for v, _ in quality.get("pillow", {}).values()]
        delta = statistics.median(qf) - statistics.median(qp) if qf and qp else float("nan")
        met = cpu_ratio <= 0.6 and delta >= -1
        add(f"Target: fieldlog's total CPU at most 0.6x Pillow's, median PSNR within 1 dB of Pillow's or "
            f"better. Here: {cpu_ratio:.2f}x Pillow's CPU, median PSNR {delta:+.2f} dB against Pillow's: "
            f"**{'met' if met else 'not met'}**.")
        add("")
    wrong = {}
    for name, q in quality.items():
        for image, (_, (w, h)) in q.items():
            if max(w, h) != min(args.size, info["long_side"][image]):
                wrong.setdefault(name, []).append(f"{image} {w}x{h}")
    if wrong:
        add("Thumbnails of the wrong size (long side not " + str(args.size) + "): " +
            "; ".join(f"{k}: {', '.join(v)}" for k, v in wrong.items()) + ".")
        add("")
    failures = {name: sorted(set(f for rep in r["failures"] for f in rep)) for name, r in results.items()}
    failures = {k: v for k, v in failures.items() if v}
    if failures:
        add("Files a tool failed on (left out of its per-image figures): " +
            "; ".join(f"{k}: {', '.join(v)}" for k, v in failures.items()) + ".")
        add("")
    for note in NOTES:
        add(note)
    add("")
    per_image(add, tools, results, quality, info)
    add("Versions: " + "; ".join(f"{k} {v}" for k, v in info["versions"].items()) + ".")
    add("")
    return "\n".join(lines)


def per_image(add, tools, results, quality, info):
    """A table of every image: CPU ms (median over the repetitions) and PSNR per tool."""
    shown = [t for t in tools if results[t.name]["per_image_ms"]]
    add("<details><summary>Per image: CPU ms (median of the repetitions) / PSNR dB</summary>")
    add("")
    add("| image | " + " | ".join(t.name for t in shown) + " |")
    add("|---|" + "---|" * len(shown))
    for image in sorted(info["kind"]):
        cells = []
        for t in shown:
            times = results[t.name]["per_image_ms"].get(image)
            ms = f"{statistics.median(times):.1f}" if times else "-"
            q = quality.get(t.name, {}).get(image)
            cells.append(f"{ms} / {q[0]:.2f}" if q else ms)
        add(f"| {image} ({info['kind'][image]}) | " + " | ".join(cells) + " |")
    add("")
    add("</details>")
    add("")


NOTES = [
    "How to read it:",
    "- Every tool does the whole job: read the file, decode (with libjpeg's DCT scaling where the tool uses it), "
    "reduce, turn upright by the EXIF orientation, encode JPEG q80 (4:2:0, each tool's encoder defaults otherwise) "
    "and write it. The encode is in every figure; `djpeg -scale 1/8` only decodes at 1/8 and writes nothing: a "
    "lower bound for what libjpeg-turbo costs without stopping early, not a thumbnailer (no PSNR).",
    "- Total CPU is user + sys of the whole process (`os.wait4`), start-up included: the Swift runtime for "
    "fieldlog, the Python interpreter and the imports for Pillow and pyvips, libvips' and ImageMagick's "
    "initialisation once per process; for the tools run once per image, the sum over the 36 processes. Worker "
    "threads (libvips, ImageMagick's OpenMP) count too.",
    "- ms per image is CPU time for one image: in-process timers (process CPU clock) for fieldlog (`--timings`), "
    "Pillow and pyvips; the whole process's CPU for the tools run once per image (vipsthumbnail's per-image "
    "figures come from a second pass, one process per file, so they include its start-up). The medians are over "
    "the images of each repetition, then over the repetitions.",
    "- Peak RSS is ru_maxrss of the process: the interpreter and its imports for Pillow and pyvips; the largest "
    "of the per-image processes for ImageMagick and djpeg.",
    "- PSNR compares each thumbnail, decoded, with the exact area average (float64, fractional coverage) of a "
    "full-precision decode (Pillow, no draft, libjpeg-turbo's accurate IDCT and fancy upsampling) to the "
    "thumbnail's own size, upright, rounded to 8 bits; it includes the q80 encode's loss for every tool.",
    "- Pillow: `draft()` with twice the thumbnail's box (what `thumbnail()` asks for itself with reducing_gap=2: "
    "a 1/1, 1/2, 1/4 or 1/8 decode), `thumbnail((s, s))` (BICUBIC), `ImageOps.exif_transpose`, `save(quality=80)`. "
    "pyvips: `Image.thumbnail(path, s)` then `jpegsave(Q=80, strip=True)`, cache off. vipsthumbnail: "
    "`--size s -o DIR/%s.jpg[Q=80,strip]` with all files on one command line. ImageMagick: "
    "`convert-im6.q16 -define jpeg:size=2sx2s FILE -auto-orient -thumbnail sxs -strip -quality 80 OUT`. fieldlog: "
    "`fieldlog thumbnail --size s --timings --out DIR FILE...` (release build, static Swift standard library, as "
    "deploy/build-deb ships it; q80 with optimised Huffman tables, the others with their encoders' defaults).",
    "- What fieldlog does differently (Sources/CJPEG/shim.c): the same libjpeg-turbo DCT scaling as Pillow (1/8, "
    "2/8, 4/8 or 8/8, at least twice the thumbnail) and an exact area average; but at 1/8 and 2/8 it reads a "
    "progressive file only until the coefficients that scale uses have arrived (usually its first scan at 1/8, "
    "the first four of ten at 2/8, to within their last bit or two), where the others decode every scan. Baseline "
    "files have to be entropy-decoded whole by everyone. `fieldlog thumbnail` also keeps freed decoder memory for "
    "the next file (glibc mallopt); the daemon gives it back after each large progressive photo instead. Most "
    "of the sys time above is page faults of libjpeg's whole-image buffers for progressive files.",
]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fieldlog", required=True)
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--work", required=True, help="scratch directory for thumbnails and logs")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--size", type=int, default=320)
    parser.add_argument("--tools", default=",".join(t.name for t in TOOLS))
    parser.add_argument("--results", help="where to write the Markdown section")
    parser.add_argument("--json", help="where to write the raw figures")
    parser.add_argument("--command", default="bench/thumbnails")
    parser.add_argument("--callgrind", action="store_true",
                        help="also count each one-process tool's instructions with valgrind (a few minutes)")
    args = parser.parse_args()

    args.work = os.path.abspath(args.work)  # vipsthumbnail takes a relative -o as relative to each input
    args.corpus = os.path.abspath(args.corpus)
    files = sorted(os.path.join(args.corpus, f) for f in os.listdir(args.corpus) if f.endswith(".jpg"))
    if not files:
        sys.exit(f"no JPEG files in {args.corpus}")
    wanted = args.tools.split(",")
    tools = [t(args, args.work) for t in TOOLS if t.name in wanted]
    names = {stem(f) for f in files}
    for name in (LARGE_BASELINE, LARGE_PROGRESSIVE):
        if name not in names:
            sys.exit(f"the corpus has no {name}.jpg: rebuild it with bench/build-corpus.sh")

    info = {"machine": machine(), "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "versions": versions(args), "pixels": {}, "long_side": {}, "kind": {}}
    from PIL import Image

    for f in files:
        with Image.open(f) as im:
            info["pixels"][stem(f)] = im.size[0] * im.size[1]
            info["long_side"][stem(f)] = max(im.size)
            info["kind"][stem(f)] = (f"{im.size[0]}x{im.size[1]} "
                                     f"{'progressive' if im.info.get('progressive') else 'baseline'} {im.mode}")

    results = {t.name: {"cpu_s": [], "sys_s": [], "maxrss_kb": [], "median_ms": [], "large_baseline_ms": [],
                        "large_progressive_ms": [], "per_image_ms": {}, "failures": []} for t in tools}
    info["load_before"] = loadavg()
    for rep in range(args.reps):
        for tool in tools:
            r = results[tool.name]
            if rep > 0 and not r["cpu_s"]:
                continue  # failed in the first repetition
            print(f"rep {rep + 1}/{args.reps}: {tool.name} ...", file=sys.stderr, flush=True)
            tool.clean()
            try:
                got = tool.run(files, rep)
            except Exception as error:
                r["error"] = str(error)
                print(f"  {error}", file=sys.stderr)
                continue
            times = got["per_image_ms"]
            r["cpu_s"].append(got["cpu_s"])
            r["sys_s"].append(got["sys_s"])
            r["maxrss_kb"].append(got["maxrss_kb"])
            r["median_ms"].append(statistics.median(times.values()) if times else float("nan"))
            r["large_baseline_ms"].append(times.get(LARGE_BASELINE, float("nan")))
            r["large_progressive_ms"].append(times.get(LARGE_PROGRESSIVE, float("nan")))
            r["failures"].append(got["failures"])
            for k, v in times.items():
                r["per_image_ms"].setdefault(k, []).append(v)
            print(f"  {got['cpu_s']:.2f} s CPU, {got['maxrss_kb'] / 1024:.0f} MB", file=sys.stderr, flush=True)
    info["load_after"] = loadavg()

    print("quality ...", file=sys.stderr, flush=True)
    reference = Reference()
    quality = {t.name: {} for t in tools if t.makes_thumbnails and results[t.name]["cpu_s"]}
    for f in files:  # file by file: one full decode in memory at a time
        for tool in tools:
            if tool.name in quality and os.path.exists(tool.output(f)):
                try:
                    quality[tool.name][stem(f)] = psnr(f, tool.output(f), reference)
                except Exception as error:  # an unreadable thumbnail: reported, not fatal
                    results[tool.name]["failures"].append([stem(f)])
                    print(f"  {tool.name} {stem(f)}: {error}", file=sys.stderr)

    instructions = {}
    if args.callgrind:
        for tool in tools:
            if tool.profile_argv is not None and results[tool.name]["cpu_s"]:
                print(f"callgrind: {tool.name} ...", file=sys.stderr, flush=True)
                tool.outdir = os.path.join(args.work, "callgrind", tool.name)  # the measured thumbnails stay
                os.makedirs(tool.outdir, exist_ok=True)
                try:
                    instructions[tool.name] = count_instructions(tool, files)
                except (OSError, RuntimeError, subprocess.SubprocessError) as error:
                    print(f"  {error}", file=sys.stderr)
    info["instructions"] = instructions

    text = report(args, tools, results, quality, info, files)
    print(text)
    if args.results:
        with open(args.results, "w") as out:
            out.write(text)
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"info": info, "results": results,
                       "quality": {k: {n: [v, list(s)] for n, (v, s) in q.items()} for k, q in quality.items()}},
                      out, indent=1, default=str)


if __name__ == "__main__":
    main()
