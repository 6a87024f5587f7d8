#!/usr/bin/env bash
# Hardware test VMs: real kernel GPIO and I2C devices for yoctoclaw's hardware tools,
# without hardware.
#   arm64  qemu-system-aarch64 -M virt -cpu cortex-a53 -m 64M: /dev/gpiochip0 is the
#          board's PL061 GPIO controller (8 lines); runs the aarch64 static binary
#          (gpio_keys loaded: line 3, the power button, is held by the kernel)
#   amd64  qemu-system-x86_64 -m 128M with i2c-dev and i2c-stub (chip_addr=0x48):
#          /dev/i2c-0 with a chip at 0x48 that reads back what is written; runs the
#          x86_64 static musl binary. User-mode networking, and on the host a fake model
#          (examples/fake_provider.rs --tool i2c …: an `i2c` read_reg call of register
#          0x00 at 0x48, then a sentence judging the result against 30 °C), reached from
#          the guest as $MODEL_URL (http://10.0.2.2:PORT/v1), for a scheduled job that
#          reads the sensor (`cron add` + `cron run`); afterwards the host checks the
#          model saw the call's result
# In each, a command list runs (scripts/vm/cmds-guest.sh: `$ command`, `> expected
# text`, `! unexpected text`, `? exit status`, `= NAME=VALUE`); the defaults are
# scripts/vm/hw-arm64.cmds and scripts/vm/hw-amd64.cmds, which run the binary's own
# tools through `yoctoclaw hw TOOL JSON [--yes]`. The binary is /usr/bin/yoctoclaw in
# the VM; more files go in with --file.
#
#   scripts/hw-vm.sh [options] [arm64|amd64 ...]     (default: both)
#
# Options:
#   --commands-arm64 FILE, --commands-amd64 FILE   command lists instead of the defaults
#   --bin-arm64 PATH     (default dist/aarch64-unknown-linux-musl/yoctoclaw)
#   --bin-amd64 PATH     (default dist/x86_64-unknown-linux-musl/yoctoclaw)
#   --file SRC:DEST      an extra file in both VMs (repeatable)
#   --no-build           do not build a missing binary (skip that VM instead)
#   --no-install         do not apt-get install qemu-system-*/cpio (skip instead)
#   --timeout SECS       per VM (default 300)
#   --verbose            print every command's output, not only failed ones
#   --keep               keep the console logs
# Environment: those of scripts/vm/lib.sh, BOARDS_DIST, YC_HW_FAKE_PROVIDER (a
# fake_provider binary to use instead of building examples/fake_provider).
#
# A VM that cannot be had here prints `SKIPPED: hw-vm-<arch> (<reason>)` and counts as
# skipped, never passed; with YC_VM_SKIP_EXIT=N a run with a skip exits N. The last line
# is `hw-vm: N passed, N failed[, N skipped]`; exit 0 only if nothing failed.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 1
# shellcheck source=scripts/vm/lib.sh
. "$ROOT/scripts/vm/lib.sh"

declare -A cmds=([arm64]="$ROOT/scripts/vm/hw-arm64.cmds" [amd64]="$ROOT/scripts/vm/hw-amd64.cmds")
declare -A bins=([arm64]="" [amd64]="")
declare -A triple=([arm64]=aarch64-unknown-linux-musl [amd64]=x86_64-unknown-linux-musl)
extra=() archs=() build=1 timeout=300 verbose=0 keep=0
while [ $# -gt 0 ]; do
    case $1 in
        --commands-arm64) cmds[arm64]=$2; shift 2 ;;
        --commands-amd64) cmds[amd64]=$2; shift 2 ;;
        --bin-arm64) bins[arm64]=$2; shift 2 ;;
        --bin-amd64) bins[amd64]=$2; shift 2 ;;
        --file) extra+=(--file "$2"); shift 2 ;;
        --no-build) build=0; shift ;;
        --no-install) export YC_VM_INSTALL=0; shift ;;
        --timeout) timeout=$2; shift 2 ;;
        --verbose) verbose=1; shift ;;
        --keep) keep=1; shift ;;
        arm64|amd64) archs+=("$1"); shift ;;
        -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "hw-vm: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
[ ${#archs[@]} -gt 0 ] || archs=(arm64 amd64)

t0=$(date +%s)
passed=0 failed=0 skipped=0
summary=()
say() { echo "hw-vm: $*"; }
ok() { passed=$((passed + 1)); summary+=("PASS  $*"); say "PASS $*"; }
bad() { failed=$((failed + 1)); summary+=("FAIL  $*"); say "FAIL $*"; }
skip() { skipped=$((skipped + 1)); summary+=("SKIP  $*"); echo "SKIPPED: $*"; }

work=$(mktemp -d "${TMPDIR:-/tmp}/yc-hw-vm.XXXXXX")
model_pid=""
cleanup() {
    if [ -n "$model_pid" ] && kill -0 "$model_pid" 2>/dev/null; then kill "$model_pid" 2>/dev/null; wait "$model_pid" 2>/dev/null; fi
    if [ $keep = 1 ]; then say "work dir kept: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

# The scheduled sensor job's model (amd64): one native i2c call, then a sentence.
SENSOR_CALL='{"action":"read_reg","bus":"i2c-0","address":"0x48","register":"0x00"}'
start_model() { # -> MODEL_PORT, or returns 1
    local fake=${YC_HW_FAKE_PROVIDER:-}
    if [ -z "$fake" ]; then
        fake=$(nice -n 10 cargo build --quiet --example fake_provider --message-format=json 2>"$work/fake-build.err" \
            | grep -o '"executable":"[^"]*"' | tail -n 1 | sed 's/^"executable":"//; s/"$//')
        [ -n "$fake" ] || { tail -n 20 "$work/fake-build.err"; return 1; }
    fi
    "$fake" --tool i2c "$SENSOR_CALL" >"$work/model.out" 2>"$work/model.err" &
    model_pid=$!
    MODEL_PORT=""
    for _ in $(seq 1 100); do
        MODEL_PORT=$(sed -n 's/^PORT \([0-9][0-9]*\).*/\1/p' "$work/model.out" | head -n 1)
        [ -n "$MODEL_PORT" ] && return 0
        kill -0 "$model_pid" 2>/dev/null || break
        sleep 0.1
    done
    return 1
}

run_vm() { # arch
    local a=$1 s rc bin t=${triple[$1]}
    s=$(date +%s)
    vm_host_tools "$a"; rc=$?
    [ $rc = 0 ] || { skip "hw-vm-$a ($VM_SKIP_REASON)"; return; }
    vm_fetch "$a"; rc=$?
    [ $rc = 0 ] || { skip "hw-vm-$a (${VM_SKIP_REASON:-kernel download failed})"; return; }
    bin=${bins[$a]:-${BOARDS_DIST:-$ROOT/dist}/$t/yoctoclaw}
    if [ ! -f "$bin" ]; then
        [ $build = 1 ] || { skip "hw-vm-$a (no binary at $bin: scripts/build-boards.sh $t)"; return; }
        say "building $t (scripts/build-boards.sh, several minutes)"
        if ! nice -n 10 scripts/build-boards.sh "$t" >"$work/build-$a.log" 2>&1 || [ ! -f "$bin" ]; then
            tail -n 20 "$work/build-$a.log"
            if grep -q 'no way to build' "$work/build-$a.log"; then skip "hw-vm-$a (no toolchain for $t)"
            else bad "hw-vm-$a: scripts/build-boards.sh $t"; fi
            return
        fi
    fi
    [ -f "${cmds[$a]}" ] || { bad "hw-vm-$a: no command list ${cmds[$a]}"; return; }
    local mods=() qargs=() net=()
    echo "VERBOSE=$verbose" >"$work/env-$a"
    case $a in
        arm64) mods=(--module gpio_keys); qargs=(-rtc base=1970-01-02 -nic none) ;;
        amd64)
            mods=(--module i2c-dev --module "i2c-stub chip_addr=0x48" --module virtio_net --module virtio_pci)
            net=(--net)
            qargs=(-rtc base=1970-01-02 -netdev user,id=n0 -device virtio-net-pci,netdev=n0,romfile=)
            if start_model; then
                echo "export MODEL_URL=http://10.0.2.2:$MODEL_PORT/v1" >>"$work/env-$a"
            else
                bad "hw-vm-$a: the fake model (examples/fake_provider --tool) did not start: $(head -c 300 "$work/model.err" 2>/dev/null)"
            fi ;;
    esac
    local initrd="$work/initrd-$a.gz"
    # The command list and settings go in as /test/cmds and /test/env, sourced first.
    printf '. /test/env\n' >"$work/run-$a.sh"
    cat "$ROOT/scripts/vm/cmds-guest.sh" >>"$work/run-$a.sh"
    if ! vm_initramfs --out "$initrd" --bin "$bin" --script "$work/run-$a.sh" "${mods[@]}" "${net[@]}" \
        --file "${cmds[$a]}:/test/cmds" --file "$work/env-$a:/test/env" "${extra[@]}"; then
        bad "hw-vm-$a: building the initramfs"; return
    fi
    local log="$work/console-$a.log"
    vm_boot "$a" "$initrd" "$log" "$timeout" "" -- "${qargs[@]}"
    local boot_rc=$?
    sed -n 's/\r$//; /^    | /p; /YC-VM-CHECK/s/.*YC-VM-CHECK /  /p' "$log"
    local np nf
    np=$(grep -c 'YC-VM-CHECK PASS' "$log"); nf=$(grep -c 'YC-VM-CHECK FAIL' "$log")
    if [ $boot_rc = 0 ] && [ "$nf" = 0 ] && [ "$np" -gt 0 ]; then
        ok "hw-vm-$a: $np commands as expected ($VM_KPKG, $(( $(date +%s) - s )) s, VM $VM_SECS s)"
    elif [ "$VM_RC" = none ]; then
        bad "hw-vm-$a: the VM gave no result (timeout or crash, $VM_SECS s); console tail:"
        tail -n 30 "$log"
    else
        bad "hw-vm-$a: $nf of $((np + nf)) commands failed (VM $VM_SECS s)"
    fi
    # The scheduled job's model: asked once (it called i2c), then shown the read's result.
    # (A list of your own that never asks it is not judged.)
    if [ -n "$model_pid" ]; then
        kill "$model_pid" 2>/dev/null; wait "$model_pid" 2>/dev/null; model_pid=""
    fi
    if [ -f "$work/model.out" ] && { grep -q '^REQUEST' "$work/model.out" || [ "${cmds[$a]}" = "$ROOT/scripts/vm/hw-amd64.cmds" ]; }; then
        sed 's/^/    model| /' "$work/model.out"
        if grep -q '^REQUEST 1 tool-call$' "$work/model.out" \
            && grep -q '^REQUEST 2 tool-result .*I2C read /dev/i2c-0 address 0x48 register 0x00, 1 bytes -> 0x' "$work/model.out"; then
            ok "hw-vm-$a: the host's fake model got the job's i2c call result: $(sed -n 's/^REQUEST 2 tool-result //p' "$work/model.out" | cut -c1-100)"
        else
            bad "hw-vm-$a: the host's fake model did not see an i2c read_reg result (requests above)"
        fi
    fi
}

for a in "${archs[@]}"; do run_vm "$a"; done

echo
echo "== hw-vm summary ($(( $(date +%s) - t0 )) s in all) =="
for s in "${summary[@]:-}"; do [ -n "$s" ] && echo "$s"; done
if [ $skipped -gt 0 ]; then
    echo "hw-vm: $passed passed, $failed failed, $skipped skipped"
    [ $failed -eq 0 ] || exit 1
    exit "${YC_VM_SKIP_EXIT:-0}"
fi
echo "hw-vm: $passed passed, $failed failed"
[ $failed -eq 0 ]
