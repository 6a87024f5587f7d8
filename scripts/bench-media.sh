#!/usr/bin/env bash
# Media benchmark (issue 21): the real `yoctoclaw gateway` handles, one after the other, a
# 20 MB voice note (downloaded to the spool, streamed to a fake speech-to-text server), a
# 10 MB photo (saved, then streamed as base64 to a fake vision model) and a 20 MB document
# (saved to the inbox), against fakes on loopback (tests/telegram_media.rs,
# `media_benchmark_run`). Prints the gateway's peak RSS (VmHWM) after each, and the time
# per MB (download + upload, on loopback: the cost of our own code, not of a network).
#
#   scripts/bench-media.sh
#
# The binary measured: static x86_64 musl built as the boards' binaries are
# (`scripts/build-boards.sh --path build-std`) when that toolchain is installed, else the
# host release build (its RSS then includes the shared C library, about 2 MiB more);
# BENCH_TARGET=host forces the host build. The fakes run in the test process, not in the
# gateway: they do not count.
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET_DIR="${CARGO_TARGET_DIR:-target}"
MUSL=x86_64-unknown-linux-musl
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), load $(cut -d' ' -f1-3 /proc/loadavg)"
BIN="$TARGET_DIR/release/yoctoclaw"
if [ "${BENCH_TARGET:-}" != host ] && [ "$(uname -m)" = x86_64 ] \
  && nice -n 10 scripts/build-boards.sh --path build-std "$MUSL" >"$TARGET_DIR/bench-media-build.log" 2>&1; then
  BIN="${BOARDS_DIST:-dist}/$MUSL/yoctoclaw"
  echo "binary: static $MUSL, board build settings (scripts/build-boards.sh --path build-std), $(stat -c %s "$BIN") bytes"
else
  nice -n 10 cargo build --quiet --release --bin yoctoclaw
  echo "binary: host release build ($(rustc -vV | sed -n 's/^host: //p')); its RSS includes the shared C library"
fi
scripts/check-no-hooks.sh "$BIN"
YOCTOCLAW_BIN="$(realpath "$BIN")" \
  cargo test --quiet --test telegram_media media_benchmark_run -- --ignored --exact --nocapture 2>&1 \
  | grep -E "^(idle|[0-9]+ MB):|SKIPPED|panicked|FAILED"
