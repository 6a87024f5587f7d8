#!/usr/bin/env bash
# Footprint benchmark (the budgets: README, "Footprint"): builds the release binary and the soak driver,
# then runs `examples/soak`: the real `yoctoclaw gateway` against a fake Telegram Bot API
# and an instant fake OpenAI-compatible model on loopback (no network, no API key).
#
#   scripts/bench-footprint.sh [--tls] [N]     N messages from 8 chats (default 1000)
#
# --tls: both fakes serve HTTPS with a CA made for the run, trusted by the gateway through
# `tls.ca_file`; the tables then count TLS handshakes (connections are kept alive: one
# long-poll connection, one for sends, one to the model).
#
# The binary measured is the one that ships: static x86_64 musl built exactly as the
# boards' binaries are (`scripts/build-boards.sh --path build-std`: std rebuilt for size,
# no unwind tables, zig as C compiler and linker) when that toolchain is installed
# (Debian's rustc-web, cargo-web, rust-web-src; `pip install ziglang`); else the rustup
# musl target (`rustup target add x86_64-unknown-linux-musl`, with zig or musl-gcc);
# else the host build, whose RSS then includes the shared C library (about 2 MiB more;
# the table's smaps line shows it as "libs"). BENCH_TARGET=host forces the host build,
# BENCH_TARGET=rustup the rustup musl build.
#
# Five runs: the mixed soak (35 % tool turns, 5 % long replies, 5 % provider 500s;
# RSS, CPU, speed, --version time, binary size; then 60 s quiet: idle RSS after the
# traffic, and writes and wake-ups over 30 s with the long poll held), a plain-answer
# soak (the cheapest message), a burst (all N messages arrive at once, as after a reboot
# or a Wi-Fi outage, and are answered as collected turns: peak RSS), the SD-card run (200
# plain messages: bytes written and disk syncs per message, syncs counted by `strace -c`
# when strace is installed), and the mixed soak on a `bench-alloc` host build (heap
# allocations and bytes per message; set BENCH_ALLOC=0 to skip its extra release build).
# Each prints a table and one `BENCH key=value ...` line, and writes its figures as JSON
# to $BENCH_OUT (default docs/footprint/: mixed.json, plain.json, burst.json, sd.json,
# alloc.json); scripts/footprint-chart.py then draws $BENCH_OUT/footprint.svg (RSS over
# messages and CPU per message, per run). BENCH_QUIET_SECS (default 60) sets the quiet.
# Memory as a board's limit sees it (the smallest memory-cgroup limit the gateway keeps up
# under) is scripts/bench-floor.py's: it needs root and runs minutes of trials.
set -euo pipefail
cd "$(dirname "$0")/.."
TLS_FLAG=()
if [ "${1:-}" = --tls ]; then TLS_FLAG=(--tls); shift; fi
N="${1:-1000}"
TARGET_DIR="${CARGO_TARGET_DIR:-target}"
OUT="${BENCH_OUT:-docs/footprint}"
QUIET="${BENCH_QUIET_SECS:-60}"
mkdir -p "$OUT"
SUFFIX=""
if [ ${#TLS_FLAG[@]} -gt 0 ]; then SUFFIX="-tls"; fi
MUSL=x86_64-unknown-linux-musl

echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), kernel $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
# Two commands: a build that includes an example turns the test hooks on for the binary
# built with it (Cargo.toml, [features]); the binary measured is the one that ships.
nice -n 10 cargo build --quiet --release --bin yoctoclaw
nice -n 10 cargo build --quiet --release --example soak
SOAK="$TARGET_DIR/release/examples/soak"
BIN="$TARGET_DIR/release/yoctoclaw"
if [ "${BENCH_TARGET:-}" != host ] && [ "${BENCH_TARGET:-}" != rustup ] && [ "$(uname -m)" = x86_64 ] \
  && nice -n 10 scripts/build-boards.sh --path build-std "$MUSL" >"$TARGET_DIR/bench-build.log" 2>&1; then
  BIN="${BOARDS_DIST:-dist}/$MUSL/yoctoclaw"
  echo "binary: static $MUSL, board build settings (scripts/build-boards.sh --path build-std)"
elif [ "${BENCH_TARGET:-}" != host ] && [ "$(uname -m)" = x86_64 ] \
  && rustup target list --installed 2>/dev/null | grep -qx "$MUSL"; then
  if ! nice -n 10 cargo build --quiet --release --bin yoctoclaw --target "$MUSL"; then
    CC_x86_64_unknown_linux_musl=musl-gcc nice -n 10 \
      cargo build --quiet --release --bin yoctoclaw --target "$MUSL" \
      --config "target.$MUSL.linker=\"musl-gcc\"" --config "target.$MUSL.rustflags=[]"
  fi
  BIN="$TARGET_DIR/$MUSL/release/yoctoclaw"
  echo "binary: static $MUSL (rustup target, prebuilt std)"
else
  echo "binary: host build ($(rustc -vV | sed -n 's/^host: //p')); its RSS includes the shared C library"
fi

echo
scripts/check-no-hooks.sh "$BIN"
"$SOAK" --bin "$BIN" -n "$N" --quiet-secs "$QUIET" --json "$OUT/mixed$SUFFIX.json" "${TLS_FLAG[@]}"
echo
"$SOAK" --bin "$BIN" -n "$N" --plain --version-runs 0 --json "$OUT/plain$SUFFIX.json" "${TLS_FLAG[@]}"
echo
"$SOAK" --bin "$BIN" -n "$N" --burst --version-runs 0 --json "$OUT/burst$SUFFIX.json" "${TLS_FLAG[@]}"
echo
"$SOAK" --bin "$BIN" -n 200 --plain --version-runs 0 --syncs --json "$OUT/sd$SUFFIX.json" "${TLS_FLAG[@]}"

if [ "${BENCH_ALLOC:-1}" != 0 ]; then
  # A separate target dir, so the normal release binary is not rebuilt afterwards.
  # Counts cover every heap allocation, SQLite's included (store::sqlite_alloc).
  CARGO_TARGET_DIR="$TARGET_DIR/bench-alloc" nice -n 10 \
    cargo build --quiet --release --features bench-alloc --bin yoctoclaw
  echo
  "$SOAK" --bin "$TARGET_DIR/bench-alloc/release/yoctoclaw" -n "$N" --alloc --version-runs 0 \
    --json "$OUT/alloc$SUFFIX.json" "${TLS_FLAG[@]}"
fi
echo
python3 scripts/footprint-chart.py "$OUT/footprint$SUFFIX.svg" \
  "$OUT/mixed$SUFFIX.json" "$OUT/plain$SUFFIX.json" "$OUT/burst$SUFFIX.json" || true
