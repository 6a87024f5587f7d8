#!/usr/bin/env bash
# Regenerate boards/link-order.txt: the functions of the board binaries in the order the
# linker should place them (boards/zig/relink.py, DECISIONS 104).
#
#   scripts/link-order.sh [N]      N messages per soak (default 200)
#
# Builds the static x86_64 musl binary as the boards' are, with its symbol table
# (scripts/build-boards.sh --path build-std, CARGO_PROFILE_RELEASE_STRIP=false; zig strips
# everything for "debuginfo"; valgrind 3.19 cannot read the DWARF 5 left, so objcopy
# --strip-debug takes it off), then runs the footprint
# soak (examples/soak) on it under valgrind's callgrind, plain HTTP and TLS, and dumps the
# executed functions at each phase (soak --phase-cmd): start-up, traffic, quiet. The list
# is, in this order:
#   1. what the idle gateway runs (the quiet phase: long polls returning empty, the status
#      record every minute, the timers), plain and TLS;
#   2. what a message runs (the traffic: mixed turns, tools, long replies, retries);
#   3. what a heartbeat runs beyond that (a third soak: 5 messages, then a quiet of 6
#      minutes with the heartbeat every 5; its turn comes long after the idle releases, and
#      its code out of the list would map 64 KiB runs of its own all over the binary);
#   4. what start-up runs (it is handed back a minute later, but packed it maps back less);
#   then nothing else: the commands used by hand keep zig's order after them.
# Names are Rust's demangled without their crates' ids, and C names (SQLite, musl): one list
# for every target (a name a target lacks is skipped). Needs valgrind, c++filt and the build-std
# toolchain of build-boards.sh. Takes about 12 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-200}"
command -v valgrind >/dev/null && command -v callgrind_control >/dev/null \
    || { echo "link-order.sh: needs valgrind (apt-get install valgrind)" >&2; exit 1; }
TD="${CARGO_TARGET_DIR:-target}"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/yc-link-order.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
T=x86_64-unknown-linux-musl

BOARDS_TARGET_DIR="$TD/link-order" BOARDS_DIST="$WORK/dist" CARGO_PROFILE_RELEASE_STRIP=false \
    scripts/build-boards.sh --path build-std "$T" >"$WORK/build.log" 2>&1 \
    || { tail -20 "$WORK/build.log"; exit 1; }
BIN="$WORK/yoctoclaw"
objcopy --strip-debug "$WORK/dist/$T/yoctoclaw" "$BIN"
cargo build --quiet --release --example soak

cat >"$WORK/bin" <<EOF
#!/bin/sh
exec valgrind --tool=callgrind --demangle=no --callgrind-out-file="$WORK/cg.%p" "$BIN" "\$@"
EOF
cat >"$WORK/phase" <<EOF
#!/bin/sh
# PHASE PID: dump the counters (and zero them); name the dump after the phase.
callgrind_control -d "\$2" >/dev/null
for f in "$WORK"/cg."\$2".*; do mv "\$f" "$WORK/\$RUN.\$1"; done
EOF
chmod +x "$WORK/bin" "$WORK/phase"

for run in plain tls; do
    flags=(); [ $run = tls ] && flags=(--tls)
    echo "link-order.sh: callgrind soak ($run, $N messages, 70 s quiet)"
    RUN=$run target/release/examples/soak --bin "$WORK/bin" "${flags[@]}" -n "$N" --version-runs 0 \
        --idle-secs 5 --quiet-secs 70 --phase-cmd "$WORK/phase" >"$WORK/soak-$run.log" 2>&1 \
        || { grep -v '^==' "$WORK/soak-$run.log" | tail -20; exit 1; }
done
echo "link-order.sh: callgrind soak (heartbeat: 5 messages, 360 s quiet, a heartbeat every 5 min)"
RUN=heartbeat target/release/examples/soak --bin "$WORK/bin" -n 5 --chats 1 --version-runs 0 \
    --idle-secs 5 --quiet-secs 360 --heartbeat-mins 5 --phase-cmd "$WORK/phase" \
    >"$WORK/soak-heartbeat.log" 2>&1 \
    || { grep -v '^==' "$WORK/soak-heartbeat.log" | tail -20; exit 1; }
# The heartbeat's turn (scheduler::heartbeat::run_claimed) must be in the dump.
grep -q 'run_claimed' "$WORK/heartbeat.quiet" \
    || { echo "link-order.sh: the heartbeat soak ran no heartbeat turn" >&2; exit 1; }

python3 - "$WORK" >boards/link-order.txt <<'EOF'
import re, sys
sys.path.insert(0, "boards/zig")
from relink import keys
work = sys.argv[1]

def executed(path):
    """Names of the functions with a cost in one callgrind dump."""
    names, out = {}, []
    for line in open(path, encoding="utf-8", errors="replace"):
        m = re.match(r"c?fn=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
        if not m:
            continue
        if m.group(2):
            names[m.group(1)] = m.group(2)
        if line.startswith("fn="):
            out.append(names.get(m.group(1), ""))
    return out

def usable(name):
    # "(below main)" and addresses without a symbol are not functions of ours.
    return " " not in name and "(" not in name and not name.startswith("0x")

seen, groups = set(), []
for title, dumps in (("idle: the quiet phase, plain and TLS", ["plain.quiet", "tls.quiet"]),
                     ("a message: the traffic, plain and TLS", ["plain.traffic", "tls.traffic"]),
                     ("a heartbeat: its soak's quiet phase, beyond the above",
                      ["heartbeat.quiet", "heartbeat.traffic"]),
                     ("start-up, plain and TLS", ["plain.start", "tls.start"])):
    names = [re.sub(r"'\d+$", "", n)             # callgrind's recursion levels
             for d in dumps for n in executed(f"{work}/{d}")]
    group = []
    for k in keys([n for n in names if usable(n)]):
        if k not in seen:
            seen.add(k)
            group.append(k)
    groups.append((title, sorted(group)))
print("# Functions of yoctoclaw in the order the linker places them (boards/zig/relink.py,")
print("# docs/DECISIONS.md 104). Generated by scripts/link-order.sh from callgrind runs of")
print("# the footprint soak; do not edit by hand. Rust names demangled without crate ids, C names.")
for title, keys in groups:
    print(f"# {len(keys)} functions, {title}")
    for k in keys:
        print(k)
EOF
grep '^# [0-9]' boards/link-order.txt
