#!/bin/sh
# Install yoctoclaw on this board: pick the static binary that fits the machine, check its
# SHA-256, install it atomically, then run `yoctoclaw onboard`.
#
#   sh install.sh [options] [SOURCE]
#
#   SOURCE   nothing: the binary beside this script (an unpacked release archive) or, in a
#            source tree, dist/<triple>/yoctoclaw as scripts/build-boards.sh leaves it;
#            a path to a binary or to a yoctoclaw-<version>-<board>.tar.gz archive;
#            or an http(s) URL of either (fetched with curl or wget)
#
# Options:
#   --prefix DIR   install into DIR (default /usr/local/bin as root, else ~/.local/bin)
#   --sums FILE    the SHA256SUMS to check against (default: the one beside the binary,
#                  the archive or the URL, or dist/SHA256SUMS)
#   --config FILE  a config.json to start from when the home has none (an archive brings
#                  its board's; yoctoclaw onboard keeps it)
#   --no-onboard   install only
#   --dry-run      check everything, say what would be done, change nothing
#   -h, --help     this text
#
# Machines: aarch64/arm64 (also a 64-bit kernel with a 32-bit userland), armv7l/armv8l
# with a VFPv3 or VFPv4 unit, armv6l with a VFP unit (Raspberry Pi Zero, Zero W, Pi 1: the
# armv6 build, also chosen when an ARMv6 core reports armv7l), riscv64 (RV64GC), x86_64.
# No build for ARMv5 and older or anything else: the script says so and installs nothing.
# POSIX sh; runs under BusyBox (ash, sha256sum, od, tar, gzip, df, mktemp).
#
# Environment, for tests only (nothing else reads them): YC_UNAME_M replaces `uname -m`,
# YC_CPUINFO names a file read instead of /proc/cpuinfo.
set -eu

say() { echo "install: $*"; }
die() { echo "install: $*" >&2; exit 1; }

usage() { sed -n '2,/^set -eu/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }

prefix="" sums="" config="" onboard=1 dry=0 source=""
while [ $# -gt 0 ]; do
    case $1 in
        --prefix) [ $# -ge 2 ] || die "--prefix needs a folder"; prefix=$2; shift 2 ;;
        --sums) [ $# -ge 2 ] || die "--sums needs a file"; sums=$2; shift 2 ;;
        --config) [ $# -ge 2 ] || die "--config needs a file"; config=$2; shift 2 ;;
        --no-onboard) onboard=0; shift ;;
        --dry-run) dry=1; shift ;;
        -h|--help) usage; exit 0 ;;
        -*) die "unknown option $1 (see --help)" ;;
        *) [ -z "$source" ] || die "one SOURCE only (see --help)"; source=$1; shift ;;
    esac
done

here=$(cd "$(dirname "$0")" && pwd -P)
work=""
tmp=""
cleanup() {
    [ -z "$tmp" ] || rm -f "$tmp"
    [ -z "$work" ] || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# ---- which machine is this? ----
machine=${YC_UNAME_M:-$(uname -m)}
cpuinfo=${YC_CPUINFO:-/proc/cpuinfo}
cpu_field() { # the value of the first "NAME : value" line of /proc/cpuinfo
    [ -r "$cpuinfo" ] || return 0
    sed -n "s/^$1[[:space:]]*:[[:space:]]*//p" "$cpuinfo" | head -n 1
}
armv6() { # the armv6 build (ARM1176: ARMv6 + VFPv2), if this CPU has a VFP unit
    triple=arm-unknown-linux-musleabihf elf="01 28"
    if [ -r "$cpuinfo" ]; then
        case " $(cpu_field Features) " in
            *" vfp"*) ;;
            *) die "this ARMv6 CPU has no VFP floating-point unit (Features: $(cpu_field Features)): the armv6 build needs one, so it cannot run here" ;;
        esac
    fi
}
case $machine in
    aarch64|arm64) triple=aarch64-unknown-linux-musl elf="02 b7" ;;
    armv7*|armv8l)
        triple=armv7-unknown-linux-musleabihf elf="01 28"
        arch=$(cpu_field "CPU architecture")
        feats=" $(cpu_field Features) "
        # An ARM1176 (Pi 1, Zero) may say "CPU architecture: 7"; its model name says v6l.
        case "$arch $(cpu_field 'model name')" in
            [1-6]" "*|[1-6][A-Z]*|*v6l*|*ARMv6*) armv6 ;;
            *)
                if [ -r "$cpuinfo" ]; then
                    case $feats in
                        *" vfpv3"*|*" vfpv4"*) ;;
                        *) die "this ARM CPU has no VFPv3 or VFPv4 floating-point unit (Features:$feats): the armv7 build needs one, so it cannot run here" ;;
                    esac
                fi
                ;;
        esac
        ;;
    armv6*) armv6 ;;
    armv5*|armv4*) die "this is an ARMv5 or older machine (uname -m: $machine): yoctoclaw has no build for it; the oldest ARM it runs on is ARMv6 with a VFP unit (Raspberry Pi Zero, Pi 1)" ;;
    riscv64)
        triple=riscv64gc-unknown-linux-musl elf="02 f3"
        isa=$(cpu_field isa)
        # The single-letter extensions come before the first "_" (rv64imafdc_zicsr_...).
        case ${isa%%_*} in
            "") ;;
            rv64*i*m*a*f*d*c*|rv64g*c*) ;;
            *) die "this RISC-V CPU ($isa) lacks part of RV64GC (I, M, A, F, D, C): the riscv64gc build cannot run here" ;;
        esac
        ;;
    x86_64|amd64) triple=x86_64-unknown-linux-musl elf="02 3e" ;;
    *) die "there is no yoctoclaw build for this machine (uname -m: $machine): builds exist for aarch64, armv7l, armv6l, riscv64 and x86_64" ;;
esac

# ---- helpers ----
sha_of() {
    command -v sha256sum >/dev/null 2>&1 || die "sha256sum is missing: install coreutils or a BusyBox with sha256sum"
    sha256sum "$1" | cut -d' ' -f1
}
abs() { (cd "$(dirname "$1")" && printf '%s/%s\n' "$(pwd -P)" "$(basename "$1")"); }
fetch() { # url file
    if command -v curl >/dev/null 2>&1; then curl -fsSL --retry 2 -o "$2" "$1"
    elif command -v wget >/dev/null 2>&1; then wget -q -O "$2" "$1"
    else die "neither curl nor wget is installed: download $1 by hand and pass the file"
    fi
}
need_work() { [ -n "$work" ] || work=$(mktemp -d "${TMPDIR:-/tmp}/yoctoclaw-install.XXXXXX") || die "cannot make a temporary folder in ${TMPDIR:-/tmp}"; }
conf_get() { sed -n "s/^$2=//p" "$1" | head -n 1; }
# The checksum SHA256SUMS gives for NAME (either sha256sum output format).
sum_for() { awk -v n="$2" '$2 == n || $2 == "*" n { print $1; exit }' "$1"; }

# ---- where is the binary? ----
archive="" bin="" sums_name=""
case $source in
    http://*|https://*)
        need_work
        base=${source##*/}
        case $base in *.tar.gz|*.tgz) got=$work/$base ;; *) got=$work/yoctoclaw ;; esac
        say "downloading $source"
        if ! fetch "$source" "$got" 2>"$work/fetch.err"; then
            die "could not download $source ($(tail -n 1 "$work/fetch.err")): check the address and the network"
        fi
        # Its SHA256SUMS: beside it (a release folder), or one folder up (dist/<triple>/).
        d=${source%/*}
        if [ -z "$sums" ] && fetch "$d/SHA256SUMS" "$work/SHA256SUMS.outer" 2>/dev/null; then
            sums=$work/SHA256SUMS.outer sums_name=$base
        elif [ -z "$sums" ] && fetch "${d%/*}/SHA256SUMS" "$work/SHA256SUMS.outer" 2>/dev/null; then
            sums=$work/SHA256SUMS.outer sums_name=${d##*/}/$base
        fi
        case $base in *.tar.gz|*.tgz) archive=$got ;; *) bin=$got ;; esac
        ;;
    *.tar.gz|*.tgz)
        [ -f "$source" ] || die "no such archive: $source"
        archive=$(abs "$source")
        ;;
    "")
        if [ -f "$here/yoctoclaw" ]; then bin=$here/yoctoclaw
        elif [ -f "$here/../dist/$triple/yoctoclaw" ]; then bin=$(abs "$here/../dist/$triple/yoctoclaw")
        elif [ -f "dist/$triple/yoctoclaw" ]; then bin=$(abs "dist/$triple/yoctoclaw")
        else die "no yoctoclaw binary for this machine ($machine: $triple) here: pass a release archive, a binary or a URL (see --help)"
        fi
        ;;
    *)
        [ -f "$source" ] || die "no such file: $source"
        bin=$(abs "$source")
        ;;
esac

if [ -n "$archive" ]; then
    # The archive itself, against the SHA256SUMS beside it when there is one.
    if [ -z "$sums" ] && [ -f "$(dirname "$archive")/SHA256SUMS" ]; then
        sums=$(dirname "$archive")/SHA256SUMS sums_name=$(basename "$archive")
    fi
    if [ -n "$sums" ]; then
        want=$(sum_for "$sums" "${sums_name:-$(basename "$archive")}")
        [ -n "$want" ] || die "$sums has no line for $(basename "$archive"): use the SHA256SUMS that came with it"
        [ "$(sha_of "$archive")" = "$want" ] || die "the checksum of $(basename "$archive") does not match SHA256SUMS: the download is damaged or altered; fetch it again"
        say "checked $(basename "$archive") against SHA256SUMS"
    fi
    need_work
    mkdir "$work/x"
    gzip -dc "$archive" | (cd "$work/x" && tar -xf -) || die "cannot unpack $archive: it is damaged; fetch it again"
    top=""
    for d in "$work"/x/*/; do
        if [ -f "$d/yoctoclaw" ]; then top=${d%/}; fi
    done
    [ -n "$top" ] || die "$(basename "$archive") holds no yoctoclaw binary: is it a yoctoclaw release archive?"
    if [ -f "$top/board.conf" ]; then
        a_triple=$(conf_get "$top/board.conf" triple)
        [ "$a_triple" = "$triple" ] || die "this archive is for $(conf_get "$top/board.conf" title) ($a_triple), but this machine is $machine ($triple): download the archive for $triple instead"
    fi
    bin=$top/yoctoclaw sums=$top/SHA256SUMS sums_name=yoctoclaw
    if [ -z "$config" ]; then
        for c in "$top"/config-*.json; do
            if [ -f "$c" ]; then config=$c; fi
        done
    fi
fi

# ---- is it the right binary, and intact? ----
# ELF header: magic, class (01 32-bit, 02 64-bit) at byte 4, machine at byte 18.
# shellcheck disable=SC2046 # one word per byte, on purpose
set -- $(od -An -tx1 -N20 "$bin" 2>/dev/null)
[ $# -eq 20 ] && [ "$1$2$3$4" = 7f454c46 ] || die "$bin is not a Linux program (no ELF header): is it the yoctoclaw binary?"
[ "$5 ${19}" = "$elf" ] || die "$bin is built for another CPU than this $machine machine: use the build for $triple"

if [ -z "$sums" ]; then
    d=$(dirname "$bin")
    if [ -f "$d/SHA256SUMS" ]; then sums=$d/SHA256SUMS
    elif [ -f "$d/../SHA256SUMS" ]; then sums=$(abs "$d/../SHA256SUMS")
    else die "no SHA256SUMS beside $bin to check it against: pass one with --sums FILE"
    fi
fi
if [ -z "$sums_name" ]; then
    # The binary's path relative to the SHA256SUMS folder (yoctoclaw, or <triple>/yoctoclaw).
    sd=$(cd "$(dirname "$sums")" && pwd -P)
    case $bin in "$sd"/*) sums_name=${bin#"$sd"/} ;; *) sums_name=$(basename "$bin") ;; esac
fi
want=$(sum_for "$sums" "$sums_name")
[ -n "$want" ] || want=$(sum_for "$sums" "$triple/yoctoclaw")
[ -n "$want" ] || die "$sums has no line for $sums_name: use the SHA256SUMS that came with the binary"
[ "$(sha_of "$bin")" = "$want" ] || die "the checksum of $bin does not match SHA256SUMS: the file is damaged or altered; fetch it again (nothing was installed)"
say "checked the $triple binary against $(basename "$sums")"

# ---- install: a temporary name in the target folder, then one rename ----
uid=$(id -u)
if [ -z "$prefix" ]; then
    if [ "$uid" = 0 ]; then prefix=/usr/local/bin; else prefix=${HOME:?HOME is not set: pass --prefix}/.local/bin; fi
fi
target=$prefix/yoctoclaw
size_kib=$(( ($(wc -c < "$bin") + 1023) / 1024 ))
if [ $dry = 1 ]; then
    say "would install $bin ($size_kib KiB) as $target"
else
    if [ ! -d "$prefix" ]; then
        mkdir -p "$prefix" 2>/dev/null || die "cannot create $prefix: run as root (sudo sh install.sh) or choose a folder with --prefix"
    fi
    [ -w "$prefix" ] || die "cannot write to $prefix: run as root (sudo sh install.sh) or choose a folder with --prefix"
    free_kib=$(df -Pk "$prefix" 2>/dev/null | awk 'NR == 2 { print $4 }')
    case $free_kib in
        ''|*[!0-9]*) ;;
        *) [ "$free_kib" -gt "$size_kib" ] || die "not enough space in $prefix: $free_kib KiB free, $size_kib KiB needed; free some space and run this again (nothing was installed)" ;;
    esac
    tmp=$prefix/.yoctoclaw.new.$$
    if ! cp "$bin" "$tmp" 2>/dev/null || [ "$(sha_of "$tmp")" != "$want" ]; then
        rm -f "$tmp"
        die "could not copy the binary to $prefix (is the disk full?): nothing was installed"
    fi
    chmod 0755 "$tmp" || die "cannot make $tmp executable: nothing was installed"
    mv -f "$tmp" "$target" || die "cannot move the binary into place as $target: nothing was installed"
    tmp=""
    say "installed $target ($size_kib KiB)"
fi
case ":${PATH:-}:" in
    *":$prefix:"*) ;;
    *) say "note: $prefix is not on your PATH: add it (export PATH=\"$prefix:\$PATH\") or call $target" ;;
esac

# ---- onboard, as the user who will run it ----
[ $onboard = 1 ] || exit 0
as_user() {
    if [ "$uid" = 0 ] && [ -n "${SUDO_USER:-}" ] && [ "$SUDO_USER" != root ]; then
        sudo -H -u "$SUDO_USER" "$@"
    else
        "$@"
    fi
}
# shellcheck disable=SC2016 # expands in the user's shell
yc_home=$(as_user sh -c 'printf %s "${YOCTOCLAW_HOME:-$HOME/.yoctoclaw}"')
if [ -n "$config" ] && [ ! -f "$yc_home/config.json" ]; then
    [ -f "$config" ] || die "no such config file: $config"
    if [ $dry = 1 ]; then
        say "would copy $(basename "$config") to $yc_home/config.json"
    else
        # shellcheck disable=SC2016 # expands in the user's shell
        as_user sh -c 'umask 077; mkdir -p "$1" && cat > "$1/config.json"' sh "$yc_home" < "$config" \
            || die "cannot write $yc_home/config.json: the binary is installed; run $target onboard by hand"
        say "board defaults: $(basename "$config") -> $yc_home/config.json"
    fi
fi
if [ $dry = 1 ]; then
    say "would run: $target onboard"
    exit 0
fi
as_user "$target" onboard || die "$target is installed, but onboard failed: run $target onboard and read what it says"
say "next: put your API key in $yc_home/secrets.env, then run: yoctoclaw doctor; yoctoclaw service install"
