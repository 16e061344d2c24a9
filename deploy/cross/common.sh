# Shared by deploy/cross/*: where the roots live, how to run a command inside one, and one-line failures.
# Sourced, not run. Every root is a directory under $CROSS_CACHE, made whole in a temporary directory and
# renamed into place, so an interrupted run leaves nothing half-made behind.

CROSS_CACHE=${FIELDLOG_CROSS_CACHE:-/var/cache/fieldlog-cross}
# Debian's archive: sid for the Swift toolchain, bookworm and trixie for the targets.
DEBIAN_MIRROR=${MIRROR:-http://deb.debian.org/debian}
# The Swift sid ships, which this build was checked with. Another version is refused (one line naming it)
# unless FIELDLOG_SID_SWIFT names it: a new compiler may need new flags, which a person should look at.
SID_SWIFT=${FIELDLOG_SID_SWIFT:-6.2.3}

say() { printf '==> %s\n' "$*" >&2; }
die() { printf '%s: %s\n' "${0##*/}" "$*" >&2; exit 1; }

need_root() {
    [ "$(id -u)" = 0 ] || die "needs root (mmdebstrap, chroot, mount and binfmt_misc do); run it with sudo"
}

# Debian packages this host needs, installed when missing.
host_packages() {
    local missing=() p
    for p in "$@"; do
        dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q ' installed$' || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    say "apt-get install ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 \
        || die "apt-get update failed: is Debian's archive reachable?"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
        || die "cannot install ${missing[*]} from Debian's archive"
}

# The suite's codename as Debian's version suffix: ~deb12 for bookworm, ~deb13 for trixie.
suite_number() {
    case "$1" in
        bookworm) echo 12 ;;
        trixie) echo 13 ;;
        *) die "unknown suite '$1' (bookworm or trixie)" ;;
    esac
}

# Swift's name for a Debian architecture.
swift_arch() {
    case "$1" in
        amd64) echo x86_64 ;;
        arm64) echo aarch64 ;;
        *) die "unknown architecture '$1' (amd64 or arm64)" ;;
    esac
}

# mmdebstrap into $1 (a directory), atomically: built as $1.new, renamed when complete; 1 on failure, with
# the log's tail on stderr and the log in $1.log.
make_root() {
    local dir=$1; shift
    rm -rf --one-file-system "$dir.new"
    mkdir -p "$(dirname "$dir")"
    local log=$dir.log
    if ! mmdebstrap --quiet --skip=cleanup/reproducible "$@" "$dir.new" "$DEBIAN_MIRROR" >"$log" 2>&1; then
        rm -rf --one-file-system "$dir.new"
        tail -n 5 "$log" >&2
        return 1
    fi
    rm -rf --one-file-system "$dir"
    mv "$dir.new" "$dir"
}

# in_root ROOT [--bind SRC [DST]]... -- COMMAND...: COMMAND inside ROOT with /proc, /dev and /sys, the given
# directories bound at the same (or the given) path, and the host's resolver, in a private mount namespace
# (nothing stays mounted after it).
in_root() {
    local root=$1; shift
    local binds=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do
        [ "$1" = --bind ] || die "in_root: expected --bind or --"
        if [ $# -ge 3 ] && [ "${3:0:1}" = / ]; then binds+=("$2" "$3"); shift 3; else binds+=("$2" "$2"); shift 2; fi
    done
    shift
    unshare --mount --propagation private -- /bin/bash -s -- "$root" "${binds[@]}" -- "$@" <<'EOF'
set -e
root=$1; shift
mount -t proc proc "$root/proc"
mount --rbind /dev "$root/dev"
mount --rbind /sys "$root/sys"
mount -t tmpfs tmpfs "$root/tmp"
cp -L /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
while [ "$1" != -- ]; do
    if [ -d "$1" ]; then mkdir -p "$root$2"; else mkdir -p "$(dirname "$root$2")"; touch "$root$2"; fi
    mount --bind "$1" "$root$2"
    shift 2
done
shift
exec chroot "$root" /usr/bin/env -u LD_LIBRARY_PATH PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"
EOF
}
