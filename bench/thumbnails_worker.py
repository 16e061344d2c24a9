"""One in-process thumbnailer over many files, for bench/thumbnails.py: the process it runs in is what is measured.

    python3 bench/thumbnails_worker.py pillow|pyvips SIZE QUALITY OUTDIR FILE...

Each FILE becomes OUTDIR/NAME.jpg (upright, at most SIZE pixels on its long side, JPEG quality QUALITY). One JSON
line per FILE on standard output: {"file", "cpu_ms", "wall_ms"} (process CPU time, so the worker threads libvips
starts are counted) or {"file", "error"}. Imports only what the tool needs, so the measured start-up is the
interpreter's and the tool's own.
"""

import json
import os
import sys
import time


def pillow(size, quality):
    from PIL import Image, ImageOps

    def make(path, out):
        with Image.open(path) as im:
            # The box thumbnail() aims at, and the draft() it would ask for itself (reducing_gap=2.0): the
            # largest of libjpeg's 1/1, 1/2, 1/4, 1/8 scales that stays at least twice the thumbnail.
            w, h = im.size
            if w >= h:
                box = (size, max(1, round(h * size / w)))
            else:
                box = (max(1, round(w * size / h)), size)
            im.draft(None, (2 * box[0], 2 * box[1]))
            im.thumbnail((size, size))  # BICUBIC after reduce(), Pillow's defaults
            im = ImageOps.exif_transpose(im)
            im.save(out, "JPEG", quality=quality)

    return make


def pyvips_tool(size, quality):
    import pyvips

    pyvips.cache_set_max(0)  # one pass over distinct files: nothing to reuse, as in vipsthumbnail

    def make(path, out):
        image = pyvips.Image.thumbnail(path, size)  # shrink-on-load, then a Lanczos3 reduce; auto-rotates
        image.jpegsave(out, Q=quality, strip=True)

    return make


def main():
    tool, size, quality, outdir = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    make = {"pillow": pillow, "pyvips": pyvips_tool}[tool](size, quality)
    for path in sys.argv[5:]:
        name = os.path.splitext(os.path.basename(path))[0]
        cpu, wall = time.process_time(), time.perf_counter()
        try:
            make(path, os.path.join(outdir, name + ".jpg"))
        except Exception as error:  # a benchmark reports what failed and goes on
            print(json.dumps({"file": path, "error": str(error)}), flush=False)
            continue
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        print(json.dumps({"file": path, "cpu_ms": cpu * 1e3, "wall_ms": wall * 1e3}))


if __name__ == "__main__":
    main()
