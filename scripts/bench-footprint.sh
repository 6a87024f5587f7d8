#!/usr/bin/env bash
# Footprint benchmark (SPEC.md "Budgets"): builds the release binary and the soak driver,
# then runs `examples/soak`: the real `yoctoclaw gateway` against a fake Telegram Bot API
# and an instant fake OpenAI-compatible model on loopback (no network, no API key).
#
#   scripts/bench-footprint.sh [N]     N messages from 8 chats (default 1000)
#
# The binary measured is the one that ships: static, for x86_64-unknown-linux-musl, when
# that Rust target and a musl C compiler (musl-gcc) are installed
# (`rustup target add x86_64-unknown-linux-musl`, `apt-get install musl-tools`);
# otherwise the host build, whose RSS then includes the shared C library (about 2 MiB
# more; the table's smaps line shows it as "libs"). BENCH_TARGET=host forces the host build.
#
# Three runs: the mixed soak (35 % tool turns, 5 % long replies, 5 % provider 500s;
# RSS, CPU, speed, --version time, binary size), a plain-answer soak (the cheapest
# message), and the mixed soak on a `bench-alloc` host build (heap allocations and bytes
# per message; set BENCH_ALLOC=0 to skip its extra release build). Each prints a table
# and one `BENCH key=value ...` line.
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-1000}"
TARGET_DIR="${CARGO_TARGET_DIR:-target}"
MUSL=x86_64-unknown-linux-musl

echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), kernel $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
nice -n 10 cargo build --quiet --release --bin yoctoclaw --example soak
SOAK="$TARGET_DIR/release/examples/soak"
BIN="$TARGET_DIR/release/yoctoclaw"
if [ "${BENCH_TARGET:-}" != host ] && [ "$(uname -m)" = x86_64 ] \
  && rustup target list --installed 2>/dev/null | grep -qx "$MUSL" \
  && command -v musl-gcc >/dev/null 2>&1; then
  CC_x86_64_unknown_linux_musl=musl-gcc nice -n 10 \
    cargo build --quiet --release --bin yoctoclaw --target "$MUSL"
  BIN="$TARGET_DIR/$MUSL/release/yoctoclaw"
  echo "binary: static $MUSL"
else
  echo "binary: host build ($(rustc -vV | sed -n 's/^host: //p')); its RSS includes the shared C library"
fi

echo
"$SOAK" --bin "$BIN" -n "$N"
echo
"$SOAK" --bin "$BIN" -n "$N" --plain --version-runs 0

if [ "${BENCH_ALLOC:-1}" != 0 ]; then
  # A separate target dir, so the normal release binary is not rebuilt afterwards.
  # Counts cover Rust's allocations; SQLite calls the C allocator directly.
  CARGO_TARGET_DIR="$TARGET_DIR/bench-alloc" nice -n 10 \
    cargo build --quiet --release --features bench-alloc --bin yoctoclaw
  echo
  "$SOAK" --bin "$TARGET_DIR/bench-alloc/release/yoctoclaw" -n "$N" --alloc --version-runs 0
fi
