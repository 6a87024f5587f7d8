#!/usr/bin/env bash
# The hardware watchdog path (`watchdog.device`) against a real kernel driver: Debian's
# amd64 kernel with its i6300esb module on qemu-system-x86_64's `-device i6300esb`, the
# x86_64 static musl binary's gateway feeding /dev/watchdog with a short
# `watchdog.timeout_secs`. Two runs of one initramfs (scripts/vm/watchdog-guest.sh, the
# phase on the kernel command line); in each, WDIOC_SETTIMEOUT must take (the kernel's
# sysfs says the timeout and "active"):
#   hang   (a) no reset while the gateway runs 4 timeouts; (b) SIGTERM: exit 0, the
#          magic close stopped the timer ("inactive"), no reset 3 timeouts later; (c) a
#          second gateway, fed 2 timeouts, then SIGSTOP (a hung process): the hardware
#          resets the machine
#   kill   (d) SIGKILL (no magic close): the hardware resets the machine
# qemu runs with `-action watchdog=reset,reboot=reset`: the device's expiry resets the
# machine, which boots again; the second boot reads the driver's bootstatus (i6300esb
# keeps its timeout flag across the reset: WDIOF_CARDRESET) and reports the reset. On
# the host, qemu's QMP events (python3) say when the device fired (`WATCHDOG`, with
# qemu's time stamp): exactly once in each run, within the timeout plus 3 s of the
# console's `YC-WD: STOPPED` line (so not during (a) or (b)).
#
#   scripts/watchdog-vm.sh [options]
#
# Options:
#   --bin PATH        the binary (default ${BOARDS_DIST:-dist}/x86_64-unknown-linux-musl/yoctoclaw)
#   --timeout-secs N  watchdog.timeout_secs (default 5)
#   --phases LIST     which runs, comma-separated (default hang,kill)
#   --no-build        do not build a missing binary (skip instead)
#   --no-install      do not apt-get install qemu-system-x86/cpio (skip instead)
#   --keep            keep the work dir (console logs)
# Environment: those of scripts/vm/lib.sh, BOARDS_DIST.
#
# A VM that cannot be had here prints `SKIPPED: watchdog-vm (<reason>)`; with
# YC_VM_SKIP_EXIT=N that run exits N. The last line is `watchdog-vm: N passed, N failed`;
# exit 0 only if nothing failed.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 1
# shellcheck source=scripts/vm/lib.sh
. "$ROOT/scripts/vm/lib.sh"

bin="" T=5 phases=hang,kill build=1 keep=0
while [ $# -gt 0 ]; do
    case $1 in
        --bin) bin=$2; shift 2 ;;
        --timeout-secs) T=$2; shift 2 ;;
        --phases) phases=$2; shift 2 ;;
        --no-build) build=0; shift ;;
        --no-install) export YC_VM_INSTALL=0; shift ;;
        --keep) keep=1; shift ;;
        -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "watchdog-vm: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done

t0=$(date +%s)
passed=0 failed=0
say() { echo "watchdog-vm: $*"; }
ok() { passed=$((passed + 1)); say "PASS $*"; }
bad() { failed=$((failed + 1)); say "FAIL $*"; }
skip() { echo "SKIPPED: watchdog-vm ($*)"; exit "${YC_VM_SKIP_EXIT:-0}"; }

work=$(mktemp -d "${TMPDIR:-/tmp}/yc-watchdog-vm.XXXXXX")
watcher="" qmp=""
cleanup() {
    [ -n "$watcher" ] && kill "$watcher" 2>/dev/null
    [ -n "$qmp" ] && kill "$qmp" 2>/dev/null
    if [ $keep = 1 ]; then say "work dir kept: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

vm_host_tools amd64 || skip "$VM_SKIP_REASON"
vm_have python3 || skip "needs python3 to read qemu's QMP events"
vm_fetch amd64 || skip "${VM_SKIP_REASON:-kernel download failed}"
t=x86_64-unknown-linux-musl
bin=${bin:-${BOARDS_DIST:-$ROOT/dist}/$t/yoctoclaw}
if [ ! -f "$bin" ]; then
    [ $build = 1 ] || skip "no binary at $bin: scripts/build-boards.sh $t"
    say "building $t (scripts/build-boards.sh, several minutes)"
    if ! nice -n 10 scripts/build-boards.sh "$t" >"$work/build.log" 2>&1 || [ ! -f "$bin" ]; then
        tail -n 20 "$work/build.log"
        grep -q 'no way to build' "$work/build.log" && skip "no toolchain for $t"
        bad "scripts/build-boards.sh $t"; exit 1
    fi
fi

echo "WD_TIMEOUT=$T" >"$work/env"
initrd="$work/initrd.gz"
vm_initramfs --out "$initrd" --bin "$bin" --script "$ROOT/scripts/vm/watchdog-guest.sh" \
    --module i6300esb --file "$work/env:/test/env" || { bad "building the initramfs"; exit 1; }

# qemu's own QMP events (WATCHDOG: the device fired; RESET), each with qemu's time stamp,
# one a line "SECONDS EVENT ACTION" in OUT, until qemu exits.
qmp_events() { # socket out
    python3 - "$1" "$2" <<'PY'
import json, socket, sys, time
path, out = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX)
for _ in range(600):
    try:
        s.connect(path)
        break
    except OSError:
        time.sleep(0.1)
else:
    sys.exit(1)
f = s.makefile("rw")
f.readline()
f.write('{"execute":"qmp_capabilities"}\n')
f.flush()
with open(out, "a") as o:
    for line in f:
        m = json.loads(line)
        if "event" in m:
            t = m["timestamp"]
            o.write("%d.%06d %s %s\n" % (t["seconds"], t["microseconds"], m["event"], m.get("data", {}).get("action", "")))
            o.flush()
PY
}

# The host's time when the console shows `YC-WD: STOPPED` (the feeding ended).
watch_stop() { # log out
    until grep -q 'YC-WD: STOPPED' "$1" 2>/dev/null; do sleep 0.05; done
    date +%s.%N >"$2"
}

for phase in ${phases//,/ }; do
    log="$work/console-$phase.log" stopped="$work/stopped-$phase" events="$work/qmp-$phase"
    : >"$log"; : >"$stopped"; : >"$events"
    watch_stop "$log" "$stopped" & watcher=$!
    qmp_events "$work/qmp-$phase.sock" "$events" & qmp=$!
    s=$(date +%s)
    vm_boot amd64 "$initrd" "$log" $((12 * T + 180)) "yc.wd=$phase" -- \
        -device i6300esb -action watchdog=reset,reboot=reset -nic none \
        -qmp "unix:$work/qmp-$phase.sock,server=on,wait=off"
    kill "$watcher" 2>/dev/null; wait "$watcher" 2>/dev/null; watcher=""
    wait "$qmp"
    sed 's/^/  qmp| /' "$events"
    fired=$(grep -c ' WATCHDOG reset' "$events")
    sed -n 's/\r$//; /^    /p; /YC-WD: /s/.*YC-WD: /  /p; /\] watchdog/s/^/  kernel| /p; /YC-VM-CHECK/s/.*YC-VM-CHECK /  /p' "$log"
    boots=$(grep -c 'YC-VM: init' "$log")
    np=$(grep -c 'YC-VM-CHECK PASS' "$log"); nf=$(grep -c 'YC-VM-CHECK FAIL' "$log")
    what="$phase ($VM_KPKG, $(( $(date +%s) - s )) s, VM $VM_SECS s, $boots boots)"
    want=2; [ "$phase" = hang ] && want=6
    a=$(cat "$stopped") b=$(sed -n 's/ WATCHDOG reset$//p' "$events" | head -n 1)
    secs=""
    [ -n "$a" ] && [ -n "$b" ] && secs=$(awk -v a="$a" -v b="$b" 'BEGIN{printf "%.1f", b-a}')
    if [ "$VM_RC" = 0 ] && [ "$nf" = 0 ] && [ "$np" = "$want" ] && [ "$boots" = 2 ] && [ "$fired" = 1 ] && [ -n "$secs" ] \
        && awk -v s="$secs" -v t="$T" 'BEGIN{exit !(s > 0 && s <= t + 3)}'; then
        ok "$what: reset by the hardware watchdog ${secs} s after the feeding stopped (timeout $T s)"
    else
        bad "$what: $np passed, $nf failed, result ${VM_RC}, watchdog fired $fired times, ${secs:-no} s after the stop"; tail -n 30 "$log"
    fi
done

echo "watchdog-vm: $passed passed, $failed failed ($(( $(date +%s) - t0 )) s in all)"
[ $failed -eq 0 ]
