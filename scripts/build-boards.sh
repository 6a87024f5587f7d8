#!/usr/bin/env bash
# Build release binaries of yoctoclaw for the boards: static musl for aarch64 and riscv64gc
# by default, into dist/<triple>/yoctoclaw, with dist/SHA256SUMS, and print each size.
#
#   scripts/build-boards.sh [options] [BOARD|TRIPLE ...]
#
#   BOARD   a profile name from boards/*.conf (aarch64-generic, milkv-duo-64mb, ...): builds its
#           triple and writes its runtime defaults to dist/<triple>/config-<board>.json
#   TRIPLE  a Rust target triple (aarch64-unknown-linux-musl, riscv64gc-unknown-linux-gnu, ...)
#   none    aarch64-unknown-linux-musl and riscv64gc-unknown-linux-musl, plus the runtime
#           defaults of every profile for them
#
# Options:
#   --path auto|build-std|rustup|cross   toolchain path (default auto: the first that works,
#                                        in this order; env BOARDS_PATH)
#   --gnu        build the boards' glibc triple instead of musl (dynamic, needs the board's
#                glibc >= the cross toolchain's; for when no musl C compiler is at hand)
#   --tiny       build-std only: panic = "immediate-abort" (about -70 KB; a panic then
#                kills the process with no message at all)
#   --list       list the board profiles and exit
#   -h, --help   this text
#
# Toolchain paths:
#   build-std  a rustc that ships its std sources: Debian's rustc-web + rust-web-src
#              (/usr/bin/rustc, /usr/bin/cargo), a rustup nightly with rust-src, or
#              BOARDS_RUSTC/BOARDS_CARGO. Rebuilds std with optimize_for_size: smallest binary.
#   rustup     the default rustup toolchain with the target installed (rustup target add T).
#   cross      cross (cargo install cross) with a running Docker or Podman engine.
# musl targets need zig as C compiler and linker (boards/zig/zcc): `zig` on PATH,
# `pip install ziglang`, or ZIG="..."; the cross path brings its own.
# Environment: BOARDS_TARGET_DIR (default ${CARGO_TARGET_DIR:-target}/boards), BOARDS_DIST
# (default dist), BOARDS_RUSTFLAGS (extra rustc flags), SOURCE_DATE_EPOCH (default: the
# time of the last commit, so two builds of one commit are byte-identical).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

DEFAULT_TRIPLES="aarch64-unknown-linux-musl riscv64gc-unknown-linux-musl"
# The size budget: the stripped release binary, aarch64, every default feature, in bytes
# (1 MB = 10^6 B; docs/DECISIONS.md 46): 3.0 MB, stretch 2.5 MB.
AARCH64_BUDGET_BYTES=3000000
AARCH64_STRETCH_BYTES=2500000

path_choice=${BOARDS_PATH:-auto}
use_gnu=0
tiny=0
args=()

die() { echo "build-boards: $*" >&2; exit 1; }
say() { echo "build-boards: $*" >&2; }

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }

# Read KEY from a boards/*.conf file: plain KEY=value lines, nothing is executed.
conf_get() { # file key
    sed -n "s/^$2=//p" "$1" | head -n 1
}

list_boards() {
    local f
    for f in boards/*.conf; do
        printf '%-18s %-30s %5s MB  %s\n' "$(conf_get "$f" name)" "$(conf_get "$f" triple)" \
            "$(conf_get "$f" ram_mb)" "$(conf_get "$f" title)"
    done
}

while [ $# -gt 0 ]; do
    case $1 in
        --path) [ $# -ge 2 ] || die "--path needs a value"; path_choice=$2; shift 2 ;;
        --path=*) path_choice=${1#--path=}; shift ;;
        --gnu) use_gnu=1; shift ;;
        --tiny) tiny=1; shift ;;
        --list) list_boards; exit 0 ;;
        -h|--help) usage; exit 0 ;;
        -*) die "unknown option $1 (see --help)" ;;
        *) args+=("$1"); shift ;;
    esac
done
case $path_choice in auto|build-std|rustup|cross) ;; *) die "--path must be auto, build-std, rustup or cross" ;; esac

# ---- what to build: triples, and which board configs go with them ----
triples=()
boards=() # "triple board-conf-file" pairs whose runtime defaults are written
add_triple() {
    local t
    for t in "${triples[@]:-}"; do [ "$t" = "$1" ] && return 0; done
    triples+=("$1")
}
to_gnu() { # musl triple -> glibc triple
    case $1 in *-linux-musl) echo "${1%-musl}-gnu" ;; *-linux-musleabihf) echo "${1%-musleabihf}-gnueabihf" ;; *) echo "$1" ;; esac
}
if [ ${#args[@]} -eq 0 ]; then
    for t in $DEFAULT_TRIPLES; do
        [ $use_gnu = 1 ] && t=$(to_gnu "$t")
        add_triple "$t"
    done
    for f in boards/*.conf; do
        t=$(conf_get "$f" triple); [ $use_gnu = 1 ] && t=$(conf_get "$f" gnu_triple)
        case " ${triples[*]} " in *" $t "*) boards+=("$t $f") ;; esac
    done
else
    for a in "${args[@]}"; do
        if [ -f "boards/$a.conf" ]; then
            t=$(conf_get "boards/$a.conf" triple)
            [ $use_gnu = 1 ] && t=$(conf_get "boards/$a.conf" gnu_triple)
            add_triple "$t"; boards+=("$t boards/$a.conf")
        elif [[ $a == *-linux-* ]]; then
            add_triple "$a"
        else
            echo "build-boards: '$a' is neither a board profile nor a target triple. Boards:" >&2
            list_boards >&2; exit 2
        fi
    done
fi

# ---- toolchain detection ----
have() { command -v "$1" >/dev/null 2>&1; }

zig_ok() { # zig usable as the musl C compiler?
    if [ -n "${ZIG:-}" ]; then $ZIG version >/dev/null 2>&1; return; fi
    have zig && zig version >/dev/null 2>&1 && return 0
    python3 -m ziglang version >/dev/null 2>&1
}

gnu_cc() { # glibc cross gcc for a triple
    case $1 in
        aarch64-*) echo aarch64-linux-gnu-gcc ;;
        riscv64*) echo riscv64-linux-gnu-gcc ;;
        armv7-*gnueabihf) echo arm-linux-gnueabihf-gcc ;;
        *) echo "" ;;
    esac
}

c_toolchain_ok() { # triple: can the host path (build-std/rustup) compile C and link for it?
    case $1 in
        *-musl*) zig_ok && [ -x "boards/zig/$(zig_name "$1")-cc" ] ;;
        *-gnu*) local cc; cc=$(gnu_cc "$1"); [ -n "$cc" ] && have "$cc" ;;
        *) return 1 ;;
    esac
}

zig_name() { # rust triple -> zig target (the name of the boards/zig symlink)
    case $1 in
        aarch64-unknown-linux-musl) echo aarch64-linux-musl ;;
        riscv64gc-unknown-linux-musl) echo riscv64-linux-musl ;;
        armv7-unknown-linux-musleabihf) echo armv7-linux-musleabihf ;;
        arm-unknown-linux-musleabihf) echo arm-linux-musleabihf ;;
        x86_64-unknown-linux-musl) echo x86_64-linux-musl ;;
        *) echo unknown ;;
    esac
}

# build-std toolchain: sets BS_CARGO, BS_RUSTC (and BS_TOOLCHAIN for rustup nightly)
find_build_std() {
    BS_CARGO="" BS_RUSTC="" BS_TOOLCHAIN=""
    local rustc cargo sysroot
    for pair in "${BOARDS_RUSTC:-} ${BOARDS_CARGO:-}" "/usr/bin/rustc /usr/bin/cargo"; do
        rustc=${pair% *} cargo=${pair#* }
        [ -n "$rustc" ] && [ -x "$rustc" ] && [ -x "$cargo" ] || continue
        sysroot=$("$rustc" --print sysroot 2>/dev/null) || continue
        if [ -f "$sysroot/lib/rustlib/src/rust/library/Cargo.lock" ]; then
            BS_RUSTC=$rustc BS_CARGO=$cargo; return 0
        fi
    done
    if have rustup && rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
        sysroot=$(rustup run nightly rustc --print sysroot 2>/dev/null) || return 1
        if [ -f "$sysroot/lib/rustlib/src/rust/library/Cargo.lock" ]; then
            BS_RUSTC=$(rustup which --toolchain nightly rustc) BS_CARGO=$(rustup which --toolchain nightly cargo)
            BS_TOOLCHAIN=nightly; return 0
        fi
    fi
    return 1
}

rustup_has_target() { have rustup && rustup target list --installed 2>/dev/null | grep -qx "$1"; }

cross_ok() {
    have cross || return 1
    { have docker && docker info >/dev/null 2>&1; } || { have podman && podman info >/dev/null 2>&1; }
}

how_to_install() { # triple
    local t=$1 bs cc rt cr ccname
    yes_no() { if "$@"; then echo yes; else echo no; fi; }
    bs=$(yes_no find_build_std); cc=$(yes_no c_toolchain_ok "$t")
    rt=$(yes_no rustup_has_target "$t"); cr=$(yes_no cross_ok)
    case $t in *-musl*) ccname="zig (musl C compiler)" ;; *) ccname="$(gnu_cc "$t")" ;; esac
    echo >&2
    echo "build-boards: found: rustc with std sources: $bs; $ccname: $cc; rustup target $t: $rt; cross + container engine: $cr" >&2
    cat >&2 <<EOF

build-boards: no way to build $t on this machine. Install one of:
  1. Debian/Ubuntu packages (what CI uses; no rustup target needed):
       apt-get install rustc-web cargo-web rust-web-src \\
         gcc-aarch64-linux-gnu gcc-riscv64-linux-gnu libc6-dev-arm64-cross libc6-dev-riscv64-cross qemu-user
     and for the static musl build a C compiler for musl:  pip install ziglang   (or zig on PATH)
  2. rustup:  rustup target add $t
     plus zig (pip install ziglang) for *-musl, or the cross gcc above for *-gnu
  3. cross (needs a running Docker or Podman engine):  cargo install cross
Then run this script again; --path build-std|rustup|cross picks one explicitly.
EOF
}

# ---- build one triple ----
TARGET_DIR=${BOARDS_TARGET_DIR:-${CARGO_TARGET_DIR:-$ROOT/target}/boards}
DIST=${BOARDS_DIST:-$ROOT/dist}
mkdir -p "$DIST"

if [ -z "${SOURCE_DATE_EPOCH:-}" ] && git -C "$ROOT" rev-parse HEAD >/dev/null 2>&1; then
    SOURCE_DATE_EPOCH=$(git -C "$ROOT" log -1 --format=%ct)
    export SOURCE_DATE_EPOCH
fi
if [ -n "${RUSTFLAGS:-}${CARGO_ENCODED_RUSTFLAGS:-}" ]; then
    say "ignoring RUSTFLAGS: it would replace the per-target flags of .cargo/config.toml (use BOARDS_RUSTFLAGS)"
fi
unset RUSTFLAGS CARGO_ENCODED_RUSTFLAGS

toml_flags() { # words -> TOML array body: "a", "b"
    local out="" w
    for w in "$@"; do out="$out${out:+, }\"$w\""; done
    echo "$out"
}

results=()
build_one() {
    local t=$1 path=$path_choice
    if [ "$path" = auto ]; then
        if find_build_std && c_toolchain_ok "$t"; then path=build-std
        elif rustup_has_target "$t" && c_toolchain_ok "$t"; then path=rustup
        elif cross_ok; then path=cross
        else how_to_install "$t"; return 1
        fi
    fi
    local extra=() cargo=() envs=()
    # shellcheck disable=SC2206
    local user_flags=(${BOARDS_RUSTFLAGS:-})
    case $path in
        build-std)
            find_build_std || { say "no rustc with std sources found (Debian: apt-get install rustc-web cargo-web rust-web-src)"; how_to_install "$t"; return 1; }
            c_toolchain_ok "$t" || { say "no C compiler/linker for $t"; how_to_install "$t"; return 1; }
            cargo=("$BS_CARGO")
            envs=(RUSTC="$BS_RUSTC" RUSTC_BOOTSTRAP=1)
            [ -n "$BS_TOOLCHAIN" ] && envs+=(RUSTUP_TOOLCHAIN="$BS_TOOLCHAIN")
            local rdoc; rdoc="$(dirname "$BS_RUSTC")/rustdoc"; [ -x "$rdoc" ] && envs+=(RUSTDOC="$rdoc")
            # std rebuilt for size; no panic location strings; no unwind tables (panic=abort);
            # derived Debug prints the type's name only (log lines of {:?} on our own types;
            # strings, numbers and collections print in full): -25 KB, DECISIONS 96.
            # shellcheck disable=SC2054 # the comma is part of one argument
            extra=(-Zbuild-std=std,panic_abort -Zbuild-std-features=optimize_for_size)
            user_flags=(-Zlocation-detail=none -Zfmt-debug=shallow -Cforce-unwind-tables=no "${user_flags[@]}")
            if [ $tiny = 1 ]; then
                extra+=(-Zpanic-immediate-abort --config 'profile.release.panic="immediate-abort"')
            fi
            ;;
        rustup)
            rustup_has_target "$t" || { say "rustup has no $t: rustup target add $t"; return 1; }
            c_toolchain_ok "$t" || { say "no C compiler/linker for $t"; how_to_install "$t"; return 1; }
            cargo=(cargo)
            [ $tiny = 1 ] && say "--tiny needs the build-std path; ignored"
            ;;
        cross)
            cross_ok || { say "cross needs 'cargo install cross' and a running Docker or Podman engine"; return 1; }
            cargo=(cross)
            [ $tiny = 1 ] && say "--tiny needs the build-std path; ignored"
            ;;
    esac
    if [ ${#user_flags[@]} -gt 0 ]; then
        extra+=(--config "target.$t.rustflags=[$(toml_flags "${user_flags[@]}")]")
    fi
    say "building $t via $path: ${cargo[*]} build --release --target $t ${extra[*]}"
    local start end
    start=$(date +%s)
    if ! env "${envs[@]}" "${cargo[@]}" build --release --locked --target "$t" --target-dir "$TARGET_DIR" "${extra[@]}" --bin yoctoclaw; then
        say "cargo build failed for $t (via $path)"; return 1
    fi
    end=$(date +%s)
    local bin="$TARGET_DIR/$t/release/yoctoclaw"
    [ -f "$bin" ] || { say "cargo finished but $bin is missing"; return 1; }
    mkdir -p "$DIST/$t"
    cp -f "$bin" "$DIST/$t/yoctoclaw.tmp" && mv -f "$DIST/$t/yoctoclaw.tmp" "$DIST/$t/yoctoclaw"
    local size; size=$(stat -c %s "$DIST/$t/yoctoclaw")
    results+=("$t|$path|$size|$((end - start))")
}

failed=0
for t in "${triples[@]}"; do
    build_one "$t" || { failed=1; say "FAILED: $t"; }
done

# Runtime defaults of the requested boards.
for pair in "${boards[@]:-}"; do
    [ -n "$pair" ] || continue
    t=${pair%% *} f=${pair#* }
    [ -f "$DIST/$t/yoctoclaw" ] || continue
    conf_get "$f" config > "$DIST/$t/config-$(conf_get "$f" name).json"
done

# Checksums over every binary and config in dist/.
( cd "$DIST" && find . -mindepth 2 -maxdepth 2 -type f \( -name yoctoclaw -o -name 'config-*.json' \) \
      | sed 's|^\./||' | LC_ALL=C sort | xargs -r sha256sum > SHA256SUMS )

echo
echo "== yoctoclaw board binaries (stripped; budget for aarch64: <= 3.0 MB, stretch <= 2.5 MB) =="
printf '%-32s %-9s %10s %8s %6s  %s\n' triple path bytes MiB secs verdict
for r in "${results[@]:-}"; do
    [ -n "$r" ] || continue
    IFS='|' read -r t p s secs <<<"$r"
    verdict="-"
    if [[ $t == aarch64-* ]]; then
        if [ "$s" -le $AARCH64_STRETCH_BYTES ]; then verdict="within stretch (<= 2.5 MB)"
        elif [ "$s" -le $AARCH64_BUDGET_BYTES ]; then verdict="within budget (<= 3.0 MB), over stretch"
        else verdict="OVER BUDGET (> 3.0 MB)"; fi
    fi
    printf '%-32s %-9s %10d %8s %6d  %s\n' "$t" "$p" "$s" "$(awk -v s="$s" 'BEGIN{printf "%.2f", s/1048576}')" "$secs" "$verdict"
    echo "  $DIST/$t/yoctoclaw: $(file -b "$DIST/$t/yoctoclaw" 2>/dev/null | cut -d, -f1-2,4-6 || true)"
done
echo "checksums: $DIST/SHA256SUMS"
exit $failed
