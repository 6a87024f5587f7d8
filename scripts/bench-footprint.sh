#!/usr/bin/env bash
# Footprint benchmark (SPEC.md "Budgets"): builds the release binary and the soak driver,
# then runs `examples/soak`: the real `yoctoclaw gateway` against a fake Telegram Bot API
# and an instant fake OpenAI-compatible model on loopback (no network, no API key).
#
#   scripts/bench-footprint.sh [N]     N messages from 8 chats (default 1000)
#
# Three runs: the mixed soak (35 % tool turns, 5 % long replies, 5 % provider 500s;
# RSS, CPU, speed, --version time, binary size), a plain-answer soak (the cheapest
# message), and the mixed soak again on a `bench-alloc` build (heap allocations and
# bytes per message; set BENCH_ALLOC=0 to skip its extra release build).
# Each prints a table and one `BENCH key=value ...` line.
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-1000}"
TARGET_DIR="${CARGO_TARGET_DIR:-target}"

echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), kernel $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
nice -n 10 cargo build --quiet --release --bin yoctoclaw --example soak
SOAK="$TARGET_DIR/release/examples/soak"
BIN="$TARGET_DIR/release/yoctoclaw"

echo
"$SOAK" --bin "$BIN" -n "$N"
echo
"$SOAK" --bin "$BIN" -n "$N" --plain --version-runs 0

if [ "${BENCH_ALLOC:-1}" != 0 ]; then
  # A separate target dir, so the normal release binary is not rebuilt afterwards.
  CARGO_TARGET_DIR="$TARGET_DIR/bench-alloc" nice -n 10 \
    cargo build --quiet --release --features bench-alloc --bin yoctoclaw
  echo
  "$SOAK" --bin "$TARGET_DIR/bench-alloc/release/yoctoclaw" -n "$N" --alloc --version-runs 0
fi
