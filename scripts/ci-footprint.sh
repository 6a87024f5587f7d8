#!/usr/bin/env bash
# CI footprint guard: a short soak (100 messages, 8 chats, tools and memory in use) that
# fails when the gateway's peak RSS (VmHWM) is more than 50 % over the 6 MiB budget
# (9 MiB), or when it does not stop cleanly. A guard against regressions, not a timing
# test: no time figure can fail it. Reuses the release build when it is up to date.
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET_DIR="${CARGO_TARGET_DIR:-target}"
MAX_PEAK_KIB=$((9 * 1024))
# Two commands: a build that includes an example turns the test hooks on for the binary
# built with it (Cargo.toml, [features]); the binary measured is the one that ships.
nice -n 10 cargo build --quiet --release --bin yoctoclaw
nice -n 10 cargo build --quiet --release --example soak
scripts/check-no-hooks.sh "$TARGET_DIR/release/yoctoclaw"
"$TARGET_DIR/release/examples/soak" --bin "$TARGET_DIR/release/yoctoclaw" \
  -n 100 --idle-secs 1 --version-runs 20 --max-peak-kib "$MAX_PEAK_KIB"
