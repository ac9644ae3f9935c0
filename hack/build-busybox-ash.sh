#!/usr/bin/env bash
# Builds upstream busybox 1.37.0's ash alone, static, and prints its path:
# the conformance busybox and agnhost images' /bin/sh.
#
#   hack/build-busybox-ash.sh     # prints the path; builds only when missing
#
# Why not Debian's busybox: Debian patches ash to drop environment entries
# whose names are not shell identifiers (data-1), which upstream's busybox
# image, the one the conformance tests were written against, passes on to
# its commands; and Debian's ash runs its own applets ahead of PATH. Why
# not bash: its error messages are worded otherwise than ash's, which the
# read-only root filesystem test compares. The source is upstream's tarball
# as Debian's package registry serves it (the orig tarball of Debian's
# busybox 1.37.0 source package), checked against its SHA-256. The
# configuration is upstream's defconfig for the shell and nothing else: no
# other applet, so every other command comes from PATH (the image's busybox
# links and tools). The result is cached under the user's cache directory,
# keyed by version and configuration, so a fresh clone does not build it again.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

BUSYBOX_VERSION=1.37.0
BUSYBOX_SHA256=3311dff32e746499f4df0d5df04d7eb396382d7e108bb9250e7b519b837043a4
BUSYBOX_URL=http://deb.debian.org/debian/pool/main/b/busybox/busybox_$BUSYBOX_VERSION.orig.tar.bz2

# Every option of upstream's defconfig that shapes ash (its own builtins,
# its editing, its bash compatibility); the rest of the tree stays off.
shell_options() {
  grep -E '^(# )?CONFIG_(ASH|SH_IS|SHELL_ASH|FEATURE_SH_|FEATURE_EDITING|FEATURE_TAB)' "$1"
}

cache=${XDG_CACHE_HOME:-$HOME/.cache}/berth
key=$(printf '%s\n' "$BUSYBOX_SHA256" "$(sed -n '/^shell_options()/,/^}/p' "$0")" | sha256sum | cut -c1-12)
out=$cache/busybox-ash-$BUSYBOX_VERSION-$key/sh
if [[ -x "$out" ]]; then
  echo "$out"
  exit 0
fi

work=$(mktemp -d /tmp/berth-busybox.XXXXXX)
trap 'rm -rf "$work"' EXIT
tarball=$cache/busybox_$BUSYBOX_VERSION.orig.tar.bz2
mkdir -p "$cache"
if ! echo "$BUSYBOX_SHA256  $tarball" | sha256sum -c --status 2>/dev/null; then
  log "downloading busybox $BUSYBOX_VERSION's source from Debian's package registry" >&2
  curl -fsSL --retry 3 -o "$work/src.tar.bz2" "$BUSYBOX_URL"
  echo "$BUSYBOX_SHA256  $work/src.tar.bz2" | sha256sum -c --status ||
    { echo "build-busybox-ash.sh: $BUSYBOX_URL does not have SHA-256 $BUSYBOX_SHA256" >&2; exit 1; }
  mv "$work/src.tar.bz2" "$tarball"
fi
log "building busybox $BUSYBOX_VERSION's ash, static (about a minute on 2 cores)" >&2
tar -xjf "$tarball" -C "$work"
src=$work/busybox-$BUSYBOX_VERSION
make -C "$src" -s defconfig >/dev/null
shell_options "$src/.config" >"$work/shell.cfg"
make -C "$src" -s allnoconfig >/dev/null
# allnoconfig, then the shell's options as defconfig has them, and static.
echo CONFIG_STATIC=y >>"$work/shell.cfg"
awk '
  function name(l) {
    if (l ~ /^# CONFIG_[A-Za-z0-9_]+ is not set$/) { split(l, w, " "); return w[2] }
    if (l ~ /^CONFIG_[A-Za-z0-9_]+=/) return substr(l, 1, index(l, "=") - 1)
    return ""
  }
  NR == FNR { want[name($0)] = $0; next }
  { n = name($0); if (n != "" && n in want) { print want[n]; delete want[n] } else print }
  END { for (n in want) print want[n] }
' "$work/shell.cfg" "$src/.config" >"$work/config" && mv "$work/config" "$src/.config"
{ yes "" || :; } | make -C "$src" -s oldconfig >/dev/null # yes ends on SIGPIPE
make -C "$src" -s -j"$(nproc)" busybox >"$work/build.log" 2>&1 || { tail -n 30 "$work/build.log" >&2; exit 1; }
mkdir -p "$(dirname "$out")"
install -m 0755 "$src/busybox" "$out.tmp" && mv "$out.tmp" "$out"
echo "$out"
