#!/usr/bin/env bash
# CI step for the boards: install what the cross builds need (Debian packages, zig from PyPI),
# build the static aarch64, riscv64gc, armv7 and armv6 binaries with scripts/build-boards.sh, and
# smoke-test each one under qemu-user, emulating the boards' own CPU models:
#   1. the binary is static (musl) or asks only for the cross glibc (--gnu); an armv7
#      binary's ELF attributes say ARMv7-A with VFPv3-D16 and no NEON; an armv6 binary's
#      say ARMv6 with VFPv2, ARM code and neither Thumb-2 nor NEON (it runs under
#      qemu-arm -cpu arm1176, the Pi Zero's core, where the armv7 one dies with SIGILL)
#   2. `yoctoclaw --version` prints the crate version
#   3. `yoctoclaw --home TMP onboard` creates the home with config.json
#   4. `yoctoclaw --home TMP agent -m ping` against the test suite's fake provider on
#      http://127.0.0.1:PORT/v1 prints "pong"
#   5. the same turn against http://localhost:PORT/v1: name resolution works in the binary
#   6. each boards/*.conf runtime default config.json is accepted (one agent turn on it)
#   7. a TLS round trip: the fake provider over HTTPS (`fake_provider --tls`, a CA made for
#      the run, a certificate for localhost): `agent -m ping` against
#      https://localhost:PORT/v1 with `tls.ca_file` in config.json prints "pong"; without
#      tls.ca_file the same turn is refused with the sentence naming tls.ca_file
# and print each stripped size against the budget (aarch64 <= 3.0 MB, stretch 2.5 MB).
#
#   scripts/ci-boards.sh [--no-install] [--smoke-only] [--gnu] [TRIPLE ...]
#
#   --no-install   do not apt-get/pip install anything (fail if something is missing)
#   --smoke-only   skip the build: smoke-test what is in dist/ already
#   --gnu          glibc binaries (aarch64, riscv64gc) instead of static musl (what CI falls
#                  back to by itself when zig cannot be installed)
# Environment: BOARDS_FAKE_PROVIDER (an executable to use instead of building
# examples/fake_provider; it must print "PORT <n>" on stdout, and with --tls also
# "CA <path>"), BOARDS_ENFORCE_BUDGET=1 (fail
# when aarch64 is over 3.0 MB), BOARDS_QEMU_TIMEOUT_SECS (per qemu run, default 180), and those
# of scripts/build-boards.sh.
# The last line is "boards: N passed, N failed"; the exit status is 0 only if nothing failed.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 1

DEBIAN_PACKAGES="rustc-web cargo-web rust-web-src gcc-aarch64-linux-gnu gcc-riscv64-linux-gnu libc6-dev-arm64-cross libc6-dev-riscv64-cross qemu-user binutils file"
# The zig that was measured with this setup; zig's cc is a whole clang + musl, in one wheel.
ZIGLANG_PYPI="ziglang==0.17.1"
AARCH64_BUDGET_BYTES=3000000
AARCH64_STRETCH_BYTES=2500000
QEMU_TIMEOUT_SECS=${BOARDS_QEMU_TIMEOUT_SECS:-180}

install=1 build=1 gnu=0
triples=()
while [ $# -gt 0 ]; do
    case $1 in
        --no-install) install=0 ;;
        --smoke-only) build=0; install=0 ;;
        --gnu) gnu=1 ;;
        -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "ci-boards: unknown option $1" >&2; exit 2 ;;
        *) triples+=("$1") ;;
    esac
    shift
done

passed=0 failed=0
summary=()
t0=$(date +%s)
log() { echo "ci-boards: $*"; }
ok() { passed=$((passed + 1)); summary+=("PASS  $*"); echo "ci-boards: PASS $*"; }
bad() { failed=$((failed + 1)); summary+=("FAIL  $*"); echo "ci-boards: FAIL $*"; }
finish() {
    echo
    echo "== boards summary ($(( $(date +%s) - t0 )) s in all) =="
    local s
    for s in "${summary[@]:-}"; do [ -n "$s" ] && echo "$s"; done
    echo "boards: $passed passed, $failed failed"
    [ "$failed" -eq 0 ]
    exit
}

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else "$@"; fi; }

zig_ok() {
    if [ -n "${ZIG:-}" ]; then $ZIG version >/dev/null 2>&1; return; fi
    { command -v zig >/dev/null 2>&1 && zig version >/dev/null 2>&1; } || python3 -m ziglang version >/dev/null 2>&1
}

# ---- 1. packages ----
if [ $install = 1 ]; then
    s=$(date +%s)
    missing=""
    for p in $DEBIAN_PACKAGES; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
    done
    if [ -n "$missing" ]; then
        log "installing Debian packages:$missing"
        if as_root apt-get update -qq && DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends $missing >/tmp/ci-boards-apt.log 2>&1; then
            ok "Debian packages installed ($(( $(date +%s) - s )) s):$missing"
        else
            tail -20 /tmp/ci-boards-apt.log
            bad "apt-get install$missing"; finish
        fi
    else
        log "Debian packages already installed"
    fi
    if [ $gnu = 0 ] && ! zig_ok; then
        s=$(date +%s)
        if python3 -m pip install --quiet --disable-pip-version-check "$ZIGLANG_PYPI" >/tmp/ci-boards-pip.log 2>&1 && zig_ok; then
            ok "zig installed from PyPI ($ZIGLANG_PYPI, $(( $(date +%s) - s )) s)"
        else
            tail -5 /tmp/ci-boards-pip.log
            log "WARNING: no zig (pip install $ZIGLANG_PYPI failed): falling back to glibc binaries (--gnu)"
            gnu=1
        fi
    fi
fi
if [ $gnu = 0 ] && [ $build = 1 ] && ! zig_ok; then
    log "no zig for the musl builds: falling back to glibc binaries (--gnu)"
    gnu=1
fi

if [ ${#triples[@]} -eq 0 ]; then
    if [ $gnu = 1 ]; then triples=(aarch64-unknown-linux-gnu riscv64gc-unknown-linux-gnu)
    else triples=(aarch64-unknown-linux-musl riscv64gc-unknown-linux-musl armv7-unknown-linux-musleabihf arm-unknown-linux-musleabihf); fi
fi
DIST=${BOARDS_DIST:-$ROOT/dist}

# ---- 2. build ----
if [ $build = 1 ]; then
    for t in "${triples[@]}"; do
        s=$(date +%s)
        if nice -n 10 scripts/build-boards.sh --path build-std "$t"; then
            ok "build $t ($(( $(date +%s) - s )) s)"
        else
            bad "build $t ($(( $(date +%s) - s )) s)"
        fi
    done
fi

# ---- 3. the fake provider on loopback (host binary) ----
fake_pid="" tls_pid="" tls_ca=""
fake_out=$(mktemp)
cleanup() {
    if [ -n "$fake_pid" ]; then kill "$fake_pid" 2>/dev/null; wait "$fake_pid" 2>/dev/null; fi
    if [ -n "$tls_pid" ]; then kill "$tls_pid" 2>/dev/null; wait "$tls_pid" 2>/dev/null; fi
    rm -f "$fake_out" "$fake_out.err" "$fake_out.tls"
    case $tls_ca in "${TMPDIR:-/tmp}"/yc-fake-provider-ca-*.pem) rm -f "$tls_ca" ;; esac
    [ -n "${smoke_tmp:-}" ] && rm -rf "$smoke_tmp"
}
trap cleanup EXIT

port=""
fake_bin=${BOARDS_FAKE_PROVIDER:-}
if [ -z "$fake_bin" ]; then
    if [ -f examples/fake_provider.rs ]; then
        # The host toolchain (rustup's cargo, first on PATH), as the test suite uses it.
        fake_bin=$(cargo build --quiet --example fake_provider --message-format=json 2>"$fake_out.err" \
            | grep -o '"executable":"[^"]*"' | tail -n 1 | sed 's/^"executable":"//; s/"$//')
        [ -n "$fake_bin" ] || { tail -n 20 "$fake_out.err"; bad "cargo build --example fake_provider"; }
    else
        bad "examples/fake_provider.rs is missing: the agent smoke test needs the test suite's fake provider"
    fi
fi
if [ -n "$fake_bin" ]; then
    "$fake_bin" >"$fake_out" 2>/dev/null &
    fake_pid=$!
    for _ in $(seq 1 300); do
        port=$(sed -n 's/^PORT \([0-9][0-9]*\).*/\1/p' "$fake_out" | head -n 1)
        [ -n "$port" ] && break
        kill -0 "$fake_pid" 2>/dev/null || break
        sleep 0.1
    done
    if [ -n "$port" ]; then log "fake provider on 127.0.0.1:$port"; else bad "fake provider printed no 'PORT <n>' line"; fi
    # The same over HTTPS, for the TLS round trip (7).
    "$fake_bin" --tls >"$fake_out.tls" 2>/dev/null &
    tls_pid=$!
    for _ in $(seq 1 300); do
        tls_port=$(sed -n 's/^PORT \([0-9][0-9]*\).*/\1/p' "$fake_out.tls" | head -n 1)
        tls_ca=$(sed -n 's/^CA //p' "$fake_out.tls" | head -n 1)
        [ -n "$tls_port" ] && [ -n "$tls_ca" ] && break
        kill -0 "$tls_pid" 2>/dev/null || break
        sleep 0.1
    done
    if [ -n "${tls_port:-}" ] && [ -f "$tls_ca" ]; then log "fake provider over HTTPS on 127.0.0.1:$tls_port (CA $tls_ca)"
    else bad "fake provider --tls printed no 'PORT <n>' and 'CA <path>' lines"; tls_port=""; fi
fi

# ---- 4. smoke tests under qemu-user ----
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
smoke_tmp=$(mktemp -d)

qemu_for() { # triple -> "qemu-ARCH -cpu MODEL [-L sysroot]", from the first boards/*.conf for it
    local f q=""
    for f in boards/*.conf; do
        if [ "$(sed -n 's/^triple=//p' "$f")" = "$1" ] || [ "$(sed -n 's/^gnu_triple=//p' "$f")" = "$1" ]; then
            q="$(sed -n 's/^qemu=//p' "$f") -cpu $(sed -n 's/^qemu_cpu=//p' "$f")"
            break
        fi
    done
    [ -n "$q" ] || return 1
    case $1 in
        aarch64-*-gnu) q="$q -L /usr/aarch64-linux-gnu" ;;
        riscv64gc-*-gnu) q="$q -L /usr/riscv64-linux-gnu" ;;
        armv7-*-gnueabihf) q="$q -L /usr/arm-linux-gnueabihf" ;;
    esac
    echo "$q"
}

run_board() { # home out-file qemu-words... ; runs with a clean environment
    local home=$1 out=$2; shift 2
    env -i PATH="/usr/bin:/bin" HOME="$home" TZ=UTC LANG=C.UTF-8 NO_PROXY="127.0.0.1,localhost" \
        ${extra_env[@]+"${extra_env[@]}"} timeout "$QEMU_TIMEOUT_SECS" "$@" >"$out" 2>"$out.err" </dev/null
}

sizes=()
for t in "${triples[@]}"; do
    bin="$DIST/$t/yoctoclaw"
    if [ ! -f "$bin" ]; then bad "$t: $bin missing"; continue; fi
    size=$(stat -c %s "$bin")
    sizes+=("$t $size")
    if ! q=$(qemu_for "$t"); then bad "$t: no boards/*.conf names this triple (qemu, qemu_cpu)"; continue; fi
    read -r -a qemu <<<"$q"
    if ! command -v "${qemu[0]}" >/dev/null; then bad "$t: ${qemu[0]} not installed (apt-get install qemu-user)"; continue; fi
    d="$smoke_tmp/$t"; mkdir -p "$d"
    extra_env=()

    # 1. linkage
    hdrs=$(readelf -lW "$bin" 2>&1); dyn=$(readelf -dW "$bin" 2>&1)
    case $t in
        *-musl*)
            if grep -q INTERP <<<"$hdrs" || grep -q NEEDED <<<"$dyn"; then bad "$t: not static: $(grep -E 'interpreter|NEEDED' <<<"$hdrs$dyn" | tr -s ' ' | head -3 | tr '\n' ' ')"
            else ok "$t: static binary, $size bytes (smoke runs under ${qemu[*]})"; fi ;;
        *)
            libs=$(grep -o 'Shared library: \[[^]]*\]' <<<"$dyn" | sed 's/.*\[//; s/\]//' | tr '\n' ' ')
            ok "$t: dynamic binary (glibc: $libs), $size bytes (smoke runs under ${qemu[*]})" ;;
    esac
    # an armv7 binary must really be ARMv7 with VFPv3-D16 and no NEON, not more, not less;
    # an armv6 one ARMv6 (v6, v6K or v6KZ: the ARM1176JZF-S is v6KZ) with VFPv2, ARM code,
    # no Thumb-2 and no NEON
    case $t in
        arm-*)
            attrs=$(readelf -A "$bin" 2>&1)
            if grep -Eq 'Tag_CPU_arch: v6(K|KZ)?$' <<<"$attrs" && grep -q 'Tag_FP_arch: VFPv2' <<<"$attrs" \
                && grep -q 'Tag_ARM_ISA_use: Yes' <<<"$attrs" && ! grep -q 'Thumb-2' <<<"$attrs" \
                && ! grep -q 'Tag_Advanced_SIMD_arch' <<<"$attrs"; then
                ok "$t: ELF attributes say ARMv6 ($(sed -n 's/.*Tag_CPU_arch: //p' <<<"$attrs")), VFPv2, ARM code, no Thumb-2, no NEON"
            else
                bad "$t: ELF attributes: $(grep -E 'CPU_arch|FP_arch|ISA_use|SIMD' <<<"$attrs" | tr -s ' ' | tr '\n' ' ')"
            fi ;;
        armv7-*)
            attrs=$(readelf -A "$bin" 2>&1)
            if grep -q 'Tag_CPU_arch: v7$' <<<"$attrs" && grep -q 'Tag_FP_arch: VFPv3-D16' <<<"$attrs" \
                && ! grep -q 'Tag_Advanced_SIMD_arch' <<<"$attrs"; then
                ok "$t: ELF attributes say ARMv7-A, VFPv3-D16, no NEON"
            else
                bad "$t: ELF attributes: $(grep -E 'CPU_arch|FP_arch|SIMD' <<<"$attrs" | tr -s ' ' | tr '\n' ' ')"
            fi ;;
    esac

    # 2. --version
    if run_board "$d" "$d/version.out" "${qemu[@]}" "$bin" --version && grep -q "$version" "$d/version.out"; then
        ok "$t: --version -> $(head -n 1 "$d/version.out")"
    else
        bad "$t: --version (exit $?): $(head -c 300 "$d/version.out" "$d/version.out.err" 2>/dev/null | tr '\n' ' ')"
    fi

    # 3. onboard into a temp home
    home="$d/home"
    if run_board "$d" "$d/onboard.out" "${qemu[@]}" "$bin" --home "$home" onboard && [ -f "$home/config.json" ]; then
        ok "$t: onboard created $(cd "$home" && find . -type f | wc -l) files in a temp home"
    else
        bad "$t: onboard: $(head -c 300 "$d/onboard.out.err" 2>/dev/null | tr '\n' ' ')"
    fi

    # 4./5. one agent turn against the fake provider, by address and by name
    if [ -n "$port" ]; then
        for host in 127.0.0.1 localhost; do
            extra_env=(YOCTOCLAW_PROVIDER_BASE_URL="http://$host:$port/v1")
            [ $host = localhost ] && extra_env+=(YOCTOCLAW_API_KEY=ci-dummy-key)
            if run_board "$d" "$d/agent-$host.out" "${qemu[@]}" "$bin" --home "$home" agent -m ping \
                && grep -q pong "$d/agent-$host.out"; then
                ok "$t: agent -m ping via http://$host:$port/v1 -> $(head -c 80 "$d/agent-$host.out" | tr '\n' ' ')"
            else
                bad "$t: agent -m ping via http://$host:$port/v1 (exit $?): $(head -c 300 "$d/agent-$host.out" "$d/agent-$host.out.err" 2>/dev/null | tr '\n' ' ')"
            fi
        done
        extra_env=()

        # 6. each board profile's runtime defaults are a config.json the binary accepts
        #    (unknown keys are an error): onboard keeps the file, one agent turn runs on it.
        for f in boards/*.conf; do
            bt=$(sed -n 's/^triple=//p' "$f"); [ $gnu = 1 ] && bt=$(sed -n 's/^gnu_triple=//p' "$f")
            [ "$bt" = "$t" ] || continue
            b=$(sed -n 's/^name=//p' "$f"); bhome="$d/board-$b"
            mkdir -p "$bhome"; sed -n 's/^config=//p' "$f" > "$bhome/config.json"
            extra_env=(YOCTOCLAW_PROVIDER_BASE_URL="http://127.0.0.1:$port/v1")
            if run_board "$d" "$d/board-$b.onboard" "${qemu[@]}" "$bin" --home "$bhome" onboard \
                && run_board "$d" "$d/board-$b.out" "${qemu[@]}" "$bin" --home "$bhome" agent -m ping \
                && grep -q pong "$d/board-$b.out"; then
                ok "$t: board profile $b: its config.json is accepted, agent turn -> pong"
            else
                bad "$t: board profile $b config.json: $(cat "$d/board-$b.onboard.err" "$d/board-$b.out.err" 2>/dev/null | head -c 300 | tr '\n' ' ')"
            fi
            extra_env=()
        done
    fi

    # 7. a TLS round trip: HTTPS to the fake, its certificate checked against tls.ca_file
    if [ -n "${tls_port:-}" ]; then
        thome="$d/tls-home"; mkdir -p "$thome"
        url="https://localhost:$tls_port/v1"
        printf '{ "provider": { "kind": "openai", "base_url": "%s", "model": "fake" }, "tls": { "ca_file": "%s" } }\n' \
            "$url" "$tls_ca" >"$thome/config.json"
        extra_env=(YOCTOCLAW_API_KEY=ci-dummy-key)
        if run_board "$d" "$d/tls.onboard" "${qemu[@]}" "$bin" --home "$thome" onboard \
            && run_board "$d" "$d/tls.out" "${qemu[@]}" "$bin" --home "$thome" agent -m ping \
            && grep -q pong "$d/tls.out"; then
            ok "$t: TLS round trip: agent -m ping via $url with tls.ca_file -> $(head -c 80 "$d/tls.out" | tr '\n' ' ')"
        else
            bad "$t: TLS round trip via $url with tls.ca_file (exit $?): $(head -c 300 "$d/tls.out" "$d/tls.out.err" 2>/dev/null | tr '\n' ' ')"
        fi
        # Without tls.ca_file the run's CA is unknown: refused, with the sentence that says
        # what to do.
        printf '{ "provider": { "kind": "openai", "base_url": "%s", "model": "fake" } }\n' "$url" >"$thome/config.json"
        run_board "$d" "$d/tls-noca.out" "${qemu[@]}" "$bin" --home "$thome" agent -m ping; rc=$?
        if [ $rc != 0 ] && ! grep -q pong "$d/tls-noca.out" && grep -q '^yoctoclaw: .*tls.ca_file' "$d/tls-noca.out.err"; then
            ok "$t: TLS without tls.ca_file refused (exit $rc): $(grep -m1 '^yoctoclaw: .*tls.ca_file' "$d/tls-noca.out.err" | cut -c12-200)"
        else
            bad "$t: TLS without tls.ca_file (exit $rc): $(head -c 300 "$d/tls-noca.out" "$d/tls-noca.out.err" 2>/dev/null | tr '\n' ' ')"
        fi
        extra_env=()
    fi
done

# ---- 5. sizes against the budget ----
echo
echo "== stripped binary sizes (budget: aarch64 <= 3.0 MB = 3000000 B, stretch <= 2.5 MB) =="
for e in "${sizes[@]:-}"; do
    [ -n "$e" ] || continue
    t=${e% *} s=${e#* }
    mib=$(awk -v s="$s" 'BEGIN{printf "%.2f", s/1048576}')
    case $t in
        aarch64-*)
            if [ "$s" -le $AARCH64_STRETCH_BYTES ]; then v="within stretch"
            elif [ "$s" -le $AARCH64_BUDGET_BYTES ]; then v="within budget, over stretch"
            else v="OVER BUDGET"; fi
            printf '%-32s %10d B  %6s MiB  %s (%d%% of budget)\n' "$t" "$s" "$mib" "$v" $(( s * 100 / AARCH64_BUDGET_BYTES ))
            if [ "$v" = "OVER BUDGET" ] && [ "${BOARDS_ENFORCE_BUDGET:-0}" = 1 ]; then bad "$t: $s bytes is over the 3.0 MB budget"; fi
            ;;
        *) printf '%-32s %10d B  %6s MiB  (no budget of its own)\n' "$t" "$s" "$mib" ;;
    esac
done
finish
