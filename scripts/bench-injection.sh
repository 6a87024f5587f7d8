#!/bin/sh
# The injection screen's cost (layers 1 and 2) per KiB of content on this machine:
# builds examples/injection_bench in release and runs it three times (take the lowest).
# Usage: scripts/bench-injection.sh [--iters N]
set -eu
cd "$(dirname "$0")/.."
cargo build --release --example injection_bench
bin="${CARGO_TARGET_DIR:-target}/release/examples/injection_bench"
for _ in 1 2 3; do
    "$bin" "$@"
done
