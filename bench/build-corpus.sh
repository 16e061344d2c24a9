#!/usr/bin/env bash
# Provenance: a byte-for-byte copy of the project's shared reference material, ../shared/photos/build-corpus.sh
# (sha256 7b412c4aeca34c333fb424e5d38c99f1aade225c792924acd20d3311ff649733 before these comment lines were
# added), so that bench/thumbnails works from a clone alone. The script carries no licence line of its own;
# the photos it assembles are not in this repository: they are fetched from Debian 12 packages (and Pillow's
# test images from its PyPI sdist) under those packages' licences (see each package's
# /usr/share/doc/PACKAGE/copyright), and are used here only as benchmark input.
# Builds a corpus of real photos (and adversarial JPEGs) from Debian 12 (bookworm) packages and one PyPI sdist.
# Usage: build-corpus.sh [WORKDIR]   (default ./photo-corpus)
# Needs: apt-get (download only, no install), dpkg-deb, pip, python3, cjpeg (libjpeg-turbo-progs),
#        convert-im6.q16 (imagemagick), exiftool (libimage-exiftool-perl), identify.
# Produces WORKDIR/corpus/*.jpg (real photos), WORKDIR/adv/* (adversarial/edge files),
#          WORKDIR/corpus.tsv, WORKDIR/adv.tsv.
set -euo pipefail
W=$(realpath -m "${1:-photo-corpus}")
rm -rf "$W/corpus" "$W/adv"
mkdir -p "$W/debs" "$W/x" "$W/pypi" "$W/corpus" "$W/adv"
cd "$W/debs"
PKGS="mate-backgrounds lomiri-wallpapers-16.04 lomiri-wallpapers-20.04 plasma-workspace-wallpapers opencv-doc python3-sklearn python3-skimage"
for p in $PKGS; do
  ls ${p}_*.deb >/dev/null 2>&1 || apt-get download "$p"
  mkdir -p "$W/x/$p"; dpkg-deb -x ${p}_*.deb "$W/x/$p"
done
cd "$W/pypi"
[ -f pillow-10.4.0.tar.gz ] || pip download --no-deps --no-binary :all: pillow==10.4.0 -d .
[ -d pillow-10.4.0 ] || tar xzf pillow-10.4.0.tar.gz pillow-10.4.0/Tests/images

# name|package|path inside package (copied byte-for-byte)
SEL='
p01_china|python3-sklearn|/usr/lib/python3/dist-packages/sklearn/datasets/images/china.jpg
p02_flower|python3-sklearn|/usr/lib/python3/dist-packages/sklearn/datasets/images/flower.jpg
p03_rocket|python3-skimage|/usr/lib/python3/dist-packages/skimage/data/rocket.jpg
p04_aero1|opencv-doc|/usr/share/doc/opencv-doc/examples/data/aero1.jpg
p05_left01_gray|opencv-doc|/usr/share/doc/opencv-doc/examples/data/left01.jpg
p06_fruits|opencv-doc|/usr/share/doc/opencv-doc/examples/data/fruits.jpg
p07_leuvenA|opencv-doc|/usr/share/doc/opencv-doc/examples/data/leuvenA.jpg
p08_building|opencv-doc|/usr/share/doc/opencv-doc/examples/data/building.jpg
p09_ela_original|opencv-doc|/usr/share/doc/opencv-doc/examples/data/ela_original.jpg
p10_hubble|python3-skimage|/usr/lib/python3/dist-packages/skimage/data/hubble_deep_field.jpg
p11_scenetext02|opencv-doc|/usr/share/doc/opencv-doc/examples/text/scenetext02.jpg
p12_GreenMeadow|mate-backgrounds|/usr/share/backgrounds/mate/nature/GreenMeadow.jpg
p13_aloeL|opencv-doc|/usr/share/doc/opencv-doc/examples/data/aloeL.jpg
p14_Picture_1A|lomiri-wallpapers-16.04|/usr/share/backgrounds/Picture_1A_by_freespace.jpg
p15_retina|python3-skimage|/usr/lib/python3/dist-packages/skimage/data/retina.jpg
p16_FreshFlower|mate-backgrounds|/usr/share/backgrounds/mate/nature/FreshFlower.jpg
p17_Dune|mate-backgrounds|/usr/share/backgrounds/mate/nature/Dune.jpg
p18_Storm|mate-backgrounds|/usr/share/backgrounds/mate/nature/Storm.jpg
p19_LadyBird|mate-backgrounds|/usr/share/backgrounds/mate/nature/LadyBird.jpg
p20_ColorfulCups|plasma-workspace-wallpapers|/usr/share/wallpapers/ColorfulCups/contents/images/2560x1600.jpg
p21_Grey_gray|plasma-workspace-wallpapers|/usr/share/wallpapers/Grey/contents/images/2560x1600.jpg
p22_Kite|plasma-workspace-wallpapers|/usr/share/wallpapers/Kite/contents/images/2560x1600.jpg
p23_Path|plasma-workspace-wallpapers|/usr/share/wallpapers/Path/contents/images/2560x1600.jpg
p24_summer_1am|plasma-workspace-wallpapers|/usr/share/wallpapers/summer_1am/contents/images/2560x1600.jpg
p25_friends|lomiri-wallpapers-16.04|/usr/share/backgrounds/friends_by_Aitzol_Berasategi.jpg
p26_aitzgorri|lomiri-wallpapers-16.04|/usr/share/backgrounds/aitzgorri_by_Aitzol_Berasategi.jpg
p28_picosdeeuropa|lomiri-wallpapers-16.04|/usr/share/backgrounds/picosdeeuropa_by_Aitzol_Berasategi.jpg
p29_Wine|lomiri-wallpapers-16.04|/usr/share/backgrounds/Wine_by_Jakkub_Mede.jpg
p30_Bridge|lomiri-wallpapers-16.04|/usr/share/backgrounds/Bridge_by_Sander_Klootwijk.jpg
p31_sunset|lomiri-wallpapers-16.04|/usr/share/backgrounds/sunset_by_Aitzol_Berasategi.jpg
p32_Dragonfly|lomiri-wallpapers-16.04|/usr/share/backgrounds/Dragonfly_by_Bolly.jpg
p33_Volna|plasma-workspace-wallpapers|/usr/share/wallpapers/Volna/contents/images/5120x2880.jpg
p34_seeding|lomiri-wallpapers-16.04|/usr/share/backgrounds/seeding_by_Clements_Engelhardt.jpg
p35_Kleiber|lomiri-wallpapers-20.04|/usr/share/backgrounds/Kleiber_by_Lukas_Baubkus.jpg
'
echo "$SEL" | while IFS='|' read -r name pkg path; do
  [ -n "$name" ] || continue
  cp "$W/x/$pkg$path" "$W/corpus/$name.jpg"
done
# Derived (documented) photos:
# p27: real camera photo with EXIF Orientation=6 added by exiftool (bitstream untouched).
cp "$W/x/lomiri-wallpapers-16.04/usr/share/backgrounds/life_by_Aitzol_Berasategi.jpg" "$W/corpus/p27_life_orient6.jpg"
exiftool -q -overwrite_original -n -Orientation=6 "$W/corpus/p27_life_orient6.jpg"
# p36: the largest real photo re-encoded as baseline 4:2:0 q90 (typical camera/Flickr 'original' layout).
djpeg "$W/corpus/p35_Kleiber.jpg" | cjpeg -quality 90 -sample 2x2 -optimize > "$W/corpus/p36_Kleiber_base420.jpg"

# ---------------- adversarial / edge cases ----------------
A="$W/adv"; P="$W/pypi/pillow-10.4.0/Tests/images"
: > "$A/a01_empty.jpg"
convert-im6.q16 "$W/corpus/p01_china.jpg" "png:$A/a02_png_renamed.jpg"
python3 - "$W" <<'PY'
import sys, os, random, struct
W = sys.argv[1]; A = W + "/adv"
def cut(src, dst, frac):
    b = open(src, "rb").read(); open(dst, "wb").write(b[:int(len(b) * frac)])
cut(W + "/corpus/p35_Kleiber.jpg", A + "/a03_truncated_baseline.jpg", 0.40)
cut(W + "/corpus/p34_seeding.jpg", A + "/a04_truncated_progressive.jpg", 0.40)
# random bytes over the middle of the entropy-coded data
b = bytearray(open(W + "/corpus/p13_aloeL.jpg", "rb").read())
rnd = random.Random(1234); mid = len(b) // 2
for i in range(mid, mid + 256): b[i] = rnd.randrange(256)
open(A + "/a05_corrupt_middle.jpg", "wb").write(b)
# corrupt header: zero the Huffman table (DHT) class/id bytes and counts
b = bytearray(open(W + "/corpus/p08_building.jpg", "rb").read())
i = b.find(b"\xff\xc4"); b[i+4:i+4+17] = b"\x00" * 17
open(A + "/a06_corrupt_dht.jpg", "wb").write(b)
# header bomb: a 64x64 JPEG whose SOF0 claims 65000x65000 (data ends after 64x64 worth)
PY
# tiny real JPEG, then patch SOF dimensions
convert-im6.q16 "$W/corpus/p01_china.jpg" -resize 64x64 -quality 80 -interlace none "$A/_tiny.jpg"
python3 - "$A" <<'PY'
import sys, struct
A = sys.argv[1]
b = bytearray(open(A + "/_tiny.jpg", "rb").read())
i = b.find(b"\xff\xc0"); assert i > 0
struct.pack_into(">HH", b, i + 5, 65000, 65000)   # height, width
open(A + "/a07_bomb_header_65000.jpg", "wb").write(b)
PY
rm -f "$A/_tiny.jpg"
# real-data bombs: 30000x30000 mostly-uniform (a few gradient rows), streamed into cjpeg
gen_pgm() { python3 -c '
import sys
w = h = 30000
o = sys.stdout.buffer
o.write(b"P5\n%d %d\n255\n" % (w, h))
flat = bytes([128]) * w
grad = bytes((x * 255 // w) for x in range(w))
for y in range(h):
    o.write(grad if y < 64 else flat)
'; }
gen_pgm | cjpeg -grayscale -quality 75 -optimize > "$A/a08_bomb_30000_huffman.jpg"
gen_pgm | cjpeg -grayscale -quality 75 -arithmetic > "$A/a09_bomb_30000_arith.jpg"
# CMYK JPEGs
convert-im6.q16 "$W/corpus/p01_china.jpg" -colorspace CMYK -quality 90 "$A/a10_cmyk_im.jpg"
cp "$P/pil_sample_cmyk.jpg" "$A/a11_cmyk_pillow.jpg"
# smaller than the target, with EXIF orientation 6 (must not upscale; must rotate)
cp "$P/hopper_orientation_6.jpg" "$A/a12_small_orient6.jpg"
cp "$P/multiple_exif.jpg" "$A/a13_1x1.jpg"
# arithmetic-coded ordinary photo (legal JPEG, some decoders lack support)
djpeg "$W/corpus/p01_china.jpg" | cjpeg -arithmetic -quality 85 > "$A/a14_arith_photo.jpg"
# progressive 'scan bomb': one AC scan of a uniform 8000x8000 progressive JPEG repeated 5000 times
python3 -c '
import sys
w=h=8000; o=sys.stdout.buffer; o.write(b"P5\n%d %d\n255\n"%(w,h)); row=bytes([100])*w
for y in range(h): o.write(row)' | cjpeg -grayscale -progressive -quality 75 > "$A/_prog.jpg"
python3 - "$A" <<'PY'
import sys
A = sys.argv[1]
b = open(A + "/_prog.jpg", "rb").read()
# split into segments; find SOS segments with their entropy-coded data
i = 2; segs = []
while i < len(b):
    assert b[i] == 0xFF
    m = b[i+1]
    if m == 0xD9: segs.append(("EOI", i, i+2)); break
    L = (b[i+2] << 8) | b[i+3]; j = i + 2 + L
    if m == 0xDA:
        while True:
            if b[j] == 0xFF and b[j+1] != 0 and not (0xD0 <= b[j+1] <= 0xD7): break
            j += 1
    segs.append((m, i, j)); i = j
sos = [s for s in segs if s[0] == 0xDA]
last = sos[-1]                       # final AC refinement scan (tiny for a flat image)
scan = b[last[1]:last[2]]
out = b[:last[2]] + scan * 5000 + b[last[2]:]
open(A + "/a15_scan_bomb_5000.jpg", "wb").write(out)
PY
rm -f "$A/_prog.jpg"

# ---------------- metadata tables ----------------
meta() {  # file -> tab-separated metadata (exiftool reads headers only, so bombs are described too)
  local f=$1 q
  q=$(identify -format '%Q' "$f" 2>/dev/null | head -1 || true)
  local ex; ex=$(exiftool -s3 -f -ImageWidth -ImageHeight -EncodingProcess -YCbCrSubSampling -ColorComponents -Orientation# "$f" 2>/dev/null | tr '\n' '\t' || true)
  printf '%s\t%s\t%s\t%s' "$(basename "$f")" "$(stat -c %s "$f")" "${q:--}" "$ex"
}
{ printf 'file\tbytes\tquality_est\twidth\theight\tencoding_process\tsubsampling\tcomponents\torientation\tsource\n'
  echo "$SEL" | while IFS='|' read -r name pkg path; do
    [ -n "$name" ] || continue; printf '%s%s:%s\n' "$(meta "$W/corpus/$name.jpg")" "$pkg" "$path"; done
  printf '%s%s\n' "$(meta "$W/corpus/p27_life_orient6.jpg")" "lomiri-wallpapers-16.04:/usr/share/backgrounds/life_by_Aitzol_Berasategi.jpg + exiftool -Orientation=6"
  printf '%s%s\n' "$(meta "$W/corpus/p36_Kleiber_base420.jpg")" "derived: p35 via djpeg|cjpeg -quality 90 -sample 2x2 -optimize"
} | sort > "$W/corpus.tsv"
{ printf 'file\tbytes\tquality_est\twidth\theight\tencoding_process\tsubsampling\tcomponents\torientation\n'
  for f in "$A"/*; do meta "$f"; echo; done; } > "$W/adv.tsv"
echo "corpus: $(ls "$W/corpus" | wc -l) files, $(du -sh "$W/corpus" | cut -f1); adv: $(ls "$A" | wc -l) files, $(du -sh "$A" | cut -f1)"
