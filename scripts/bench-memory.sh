#!/usr/bin/env bash
# memory_search latency (p50/p99) over 1k, 10k and 100k stored memories, and the
# database size on disk (the budget: p99 <= 10 ms at 100k, stretch 3 ms). Builds and runs
# `examples/memory_bench` (release); no network. Extra arguments go to the bench,
# e.g. `scripts/bench-memory.sh --sizes 1000,100000 --queries 500`.
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET_DIR="${CARGO_TARGET_DIR:-target}"
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), kernel $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
nice -n 10 cargo build --quiet --release --example memory_bench
"$TARGET_DIR/release/examples/memory_bench" "$@"
