#!/usr/bin/env bash
# Try the aarch64 board build on an emulated 64 MB board before flashing a real one
# (or the riscv64gc build, --arch riscv64):
# qemu-system-aarch64 -M virt -cpu cortex-a53 -m 64M, a Debian kernel, busybox, the
# static binary, the clock in 1970 (-rtc base=1970-01-02) and user-mode networking, with
# a fake Telegram Bot API and a fake model on the host (examples/vm_fakes.rs).
#
#   scripts/board-vm.sh [options]
#
# Inside the VM (scripts/vm/board-guest.sh): the clock says 1970; `yoctoclaw --version`;
# onboard; `yoctoclaw doctor` (no FAIL); `yoctoclaw gateway` answers N Telegram messages
# (tool calls, a long reply, a provider 500 retried); the clock is set and `yoctoclaw
# heartbeat` delivers a check-in; the gateway resumes its scheduler; SIGTERM ends it with
# exit 0 and no ERROR line in its log. Reported from inside the VM: the gateway's VmHWM and
# VmRSS, MemAvailable (lowest during the run), time per message.
# With --tls nothing sets the guest's clock: the binary takes the time from the Date of
# its first verified HTTPS answer (`doctor` shows it on its `time` line), the gateway
# resumes cron and heartbeat by itself, and its own heartbeat timer (every 5 minutes)
# delivers the check-in; the system clock still says 1970 at the end.
#
# Options:
#   -n N              messages to send (default 100, 200 with --tls; every 20 hold each
#                     kind of turn)
#   --chats C         users sending at once, one turn in flight each (default 2)
#   --arch riscv64    the riscv64gc build instead (Milk-V Duo class): qemu-system-riscv64
#                     -M virt, Debian sid's riscv64 kernel (bookworm has no riscv64 port);
#                     160 MB of RAM, as that kernel alone is a 37 MB image
#   --arch armv6      the arm-unknown-linux-musleabihf build (Raspberry Pi Zero W / Pi 1):
#                     qemu-system-arm -M raspi0 (BCM2835, ARM1176, its fixed 512 MB),
#                     Debian bookworm armel's linux-image-rpi with bcm2835-rpi-zero.dtb,
#                     networking over qemu's usb-net on the DWC2 port (usb0), the home
#                     on the SD card slot; the guest also checks uname -m and /proc/cpuinfo
#   --bin PATH        the binary (default dist/aarch64-unknown-linux-musl/yoctoclaw, or
#                     dist/riscv64gc-unknown-linux-musl/yoctoclaw with --arch riscv64, or
#                     dist/arm-unknown-linux-musleabihf/yoctoclaw with --arch armv6)
#   --no-build        do not build a missing binary (scripts/build-boards.sh) or vm_fakes
#   --no-install      do not apt-get install qemu-system-arm/cpio (skip instead)
#   --disk MB         the home on an ext4 disk of MB (virtio-blk, like the board's SD card;
#                     default 64; 0: on the VM's RAM-backed root instead)
#   --timeout SECS    kill the VM after this long (default 480, 720 with --tls)
#   --tls             HTTPS fakes (vm_fakes --tls, a CA made for the run):
#                     the CA file vm_fakes names (`ca=PATH` on its VMFAKES line) is copied
#                     into the VM as /etc/yc-ca.pem and set as `tls.ca_file`; the guest
#                     reaches the host as `yc-host` (its /etc/hosts: 10.0.2.2), so the fakes'
#                     certificate must name DNS:yc-host (or IP:10.0.2.2, YC_VM_HOST=10.0.2.2);
#                     the heartbeat runs every 5 minutes and the guest's clock is never set
#   --ca-file PATH    that CA file instead of the one vm_fakes names (implies --tls)
#   --keep            keep the work dir (console log, initramfs)
#   -h, --help        this text
# Environment: YC_VM_FAKES (a vm_fakes binary to use instead of building it), YC_VM_CACHE
# and the others of scripts/vm/lib.sh, BOARDS_DIST.
#
# Exit 0 and `SKIPPED: board-vm (<reason>)` when the VM cannot be had here (no apt, no
# qemu, the kernel or busybox cannot be downloaded, no binary with --no-build); set
# YC_VM_SKIP_EXIT=N to exit N instead. The last line is
# `board-vm: N passed, N failed[, 1 skipped]`; the exit status is 0 only if nothing failed.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 1
# shellcheck source=scripts/vm/lib.sh
. "$ROOT/scripts/vm/lib.sh"

n="" chats=2 bin="" build=1 disk_mb=64 timeout="" ca_file="" tls=0 keep=0
arch=arm64
while [ $# -gt 0 ]; do
    case $1 in
        -n) n=$2; shift 2 ;;
        --chats) chats=$2; shift 2 ;;
        --bin) bin=$2; shift 2 ;;
        --arch) arch=$2; shift 2 ;;
        --no-build) build=0; shift ;;
        --no-install) export YC_VM_INSTALL=0; shift ;;
        --disk) disk_mb=$2; shift 2 ;;
        --timeout) timeout=$2; shift 2 ;;
        --ca-file) ca_file=$2; tls=1; shift 2 ;;
        --tls) tls=1; shift ;;
        --keep) keep=1; shift ;;
        -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "board-vm: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done

# Over HTTPS the run also waits for the gateway's own heartbeat (HB_MINS after it starts).
hb_mins=5
[ -n "$n" ] || { n=100; [ $tls = 1 ] && n=200; }
[ -n "$timeout" ] || { timeout=480; [ $tls = 1 ] && timeout=720; }

case $arch in
    arm64|aarch64) arch=arm64 T=aarch64-unknown-linux-musl elf=aarch64 cpu="cortex-a53, 64 MB" ;;
    riscv64|riscv64gc) arch=riscv64 T=riscv64gc-unknown-linux-musl elf=RISC-V cpu="rv64gc, ${YC_VM_RISCV64_MEM:-160M}" ;;
    armv6|arm) arch=armv6 T=arm-unknown-linux-musleabihf elf=ARM cpu="raspi0: ARM1176, 512 MB" ;;
    *) echo "board-vm: --arch must be arm64, riscv64 or armv6" >&2; exit 2 ;;
esac
name=board-vm; [ $arch = arm64 ] || name=board-vm-$arch

t0=$(date +%s)
passed=0 failed=0
say() { echo "board-vm: $*"; }
finish() { # [skipped-reason]
    if [ -n "${1:-}" ]; then
        echo "SKIPPED: $name ($1)"
        say "done in $(( $(date +%s) - t0 )) s"
        echo "board-vm: $passed passed, $failed failed, 1 skipped"
        exit "${YC_VM_SKIP_EXIT:-0}"
    fi
    say "done in $(( $(date +%s) - t0 )) s"
    echo "board-vm: $passed passed, $failed failed"
    [ "$failed" -eq 0 ]
    exit
}

work=$(mktemp -d "${TMPDIR:-/tmp}/yc-board-vm.XXXXXX")
fakes_pid=""
cleanup() {
    if [ -n "$fakes_pid" ] && kill -0 "$fakes_pid" 2>/dev/null; then kill "$fakes_pid" 2>/dev/null; wait "$fakes_pid" 2>/dev/null; fi
    if [ $keep = 1 ]; then say "work dir kept: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

# ---- host tools, kernel, busybox ----
s=$(date +%s)
vm_host_tools $arch; rc=$?
[ $rc = 0 ] || finish "${VM_SKIP_REASON:-host tools missing}"
vm_fetch $arch; rc=$?
[ $rc = 0 ] || finish "${VM_SKIP_REASON:-kernel download failed}"
say "kernel $VM_KPKG, busybox-static ($arch): ready in $(( $(date +%s) - s )) s (cache $YC_VM_CACHE)"

# ---- the binary ----
[ -n "$bin" ] || bin="${BOARDS_DIST:-$ROOT/dist}/$T/yoctoclaw"
if [ ! -f "$bin" ]; then
    [ $build = 1 ] || finish "no $T binary at $bin (scripts/build-boards.sh $T)"
    s=$(date +%s)
    say "building $T (scripts/build-boards.sh, several minutes)"
    if ! nice -n 10 scripts/build-boards.sh "$T" >"$work/build.log" 2>&1 || [ ! -f "$bin" ]; then
        tail -n 20 "$work/build.log"
        if grep -q 'no way to build' "$work/build.log"; then finish "no toolchain for $T (see scripts/build-boards.sh --help)"; fi
        failed=$((failed + 1)); say "FAIL: scripts/build-boards.sh $T"; finish
    fi
    say "built $bin in $(( $(date +%s) - s )) s"
fi
case $(file -b "$bin" 2>/dev/null) in
    *"$elf"*|"") ;;
    *) failed=$((failed + 1)); say "FAIL: $bin is not a $T binary: $(file -b "$bin")"; finish ;;
esac

# ---- the host fakes ----
fakes=${YC_VM_FAKES:-}
if [ -z "$fakes" ]; then
    s=$(date +%s)
    fakes=$(nice -n 10 cargo build --quiet --example vm_fakes --message-format=json 2>"$work/fakes-build.err" \
        | grep -o '"executable":"[^"]*"' | tail -n 1 | sed 's/^"executable":"//; s/"$//')
    if [ -z "$fakes" ]; then
        tail -n 20 "$work/fakes-build.err"
        failed=$((failed + 1)); say "FAIL: cargo build --example vm_fakes"; finish
    fi
    say "vm_fakes ready in $(( $(date +%s) - s )) s"
fi
fakes_args=(-n "$n" --chats "$chats" --heartbeats 1 --timeout-secs "$timeout")
[ $tls = 1 ] && fakes_args+=(--tls)
"$fakes" "${fakes_args[@]}" >"$work/fakes.out" 2>"$work/fakes.err" &
fakes_pid=$!
line=""
for _ in $(seq 1 100); do
    line=$(grep -m1 '^VMFAKES ' "$work/fakes.out" || true)
    [ -n "$line" ] && break
    kill -0 "$fakes_pid" 2>/dev/null || break
    sleep 0.1
done
if [ -z "$line" ]; then
    cat "$work/fakes.err"
    failed=$((failed + 1)); say "FAIL: vm_fakes printed no VMFAKES line"; finish
fi
get() { echo "$line" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
# The guest reaches the host's loopback as 10.0.2.2 (qemu user-mode networking).
# Over TLS by a name the fakes' certificate holds (yc-host: see --tls).
vm_host=${YC_VM_HOST:-10.0.2.2}; [ $tls = 1 ] && vm_host=${YC_VM_HOST:-yc-host}
guest() { echo "$1" | sed "s#//\(127\.0\.0\.1\|localhost\):#//$vm_host:#"; }
if [ $tls = 1 ] && [ -z "$ca_file" ]; then
    ca_file=$(get ca)
    [ -n "$ca_file" ] && [ -f "$ca_file" ] || { failed=$((failed + 1)); say "FAIL: --tls: vm_fakes named no CA file (ca=PATH)"; finish; }
fi
{
    echo "BOT_URL=$(guest "$(get bot)")"
    echo "MODEL_URL=$(guest "$(get model)")"
    # The control server stays plain HTTP on the address (busybox wget, no name lookup).
    echo "CTL_URL=$(get ctl | sed 's#//127\.0\.0\.1:#//10.0.2.2:#')"
    echo "TOKEN=$(get token)"
    echo "ALLOW=$(get allow)"
    echo "N=$n"
    echo "WAIT_SECS=$(( timeout - 120 > 60 ? timeout - 120 : 60 ))"
    [ -n "$ca_file" ] && echo "CA_FILE=/etc/yc-ca.pem"
    [ $tls = 1 ] && echo "TLS=1" && echo "HB_MINS=$hb_mins"
} >"$work/env"

# ---- the disk: ext4 on virtio-blk, mounted at /root in the guest ----
disk_args=() disk_mods=()
if [ "$disk_mb" -gt 0 ]; then
    if command -v mkfs.ext4 >/dev/null 2>&1 || [ -x /usr/sbin/mkfs.ext4 ] || [ -x /sbin/mkfs.ext4 ]; then
        mkfs=$(command -v mkfs.ext4 || ls /usr/sbin/mkfs.ext4 /sbin/mkfs.ext4 2>/dev/null | head -n 1)
        truncate -s "${disk_mb}M" "$work/disk.img" && "$mkfs" -q -F -L yc-home "$work/disk.img" \
            || { failed=$((failed + 1)); say "FAIL: mkfs.ext4 on a $disk_mb MB image"; finish; }
        # shellcheck disable=SC2054 # qemu's -drive value holds commas
        if [ $arch = armv6 ]; then
            # The Pi's own SD card slot (BCM2835 SDHOST; the driver is built in).
            disk_args=(-drive "file=$work/disk.img,if=sd,format=raw")
            disk_mods=(--module ext4 --module crc32c_generic)
            echo "DISK=/dev/mmcblk0" >>"$work/env"
        else
            disk_args=(-drive "file=$work/disk.img,if=none,format=raw,id=d0" -device virtio-blk-pci,drive=d0)
            disk_mods=(--module virtio_blk --module ext4 --module crc32c_generic)
            echo "DISK=/dev/vda" >>"$work/env"
        fi
    else
        say "no mkfs.ext4 (e2fsprogs): the home stays on the VM's RAM-backed root"
    fi
fi

# ---- initramfs and boot ----
files=(--file "$work/env:/test/env")
[ -n "$ca_file" ] && files+=(--file "$ca_file:/etc/yc-ca.pem")
s=$(date +%s)
net_mods=(--module virtio_net --module virtio_pci)
# raspi0 has no NIC: qemu's usb-net (CDC Ethernet) on the SoC's DWC2 USB port is usb0.
[ $arch = armv6 ] && net_mods=(--module cdc_ether)
[ $arch = armv6 ] && printf 'EXPECT_MACHINE=armv6l\nEXPECT_CPU=ARMv6\n' >>"$work/env"
if ! vm_initramfs --out "$work/initrd.gz" --bin "$bin" --script "$ROOT/scripts/vm/board-guest.sh" \
    --net "${net_mods[@]}" "${disk_mods[@]}" "${files[@]}"; then
    failed=$((failed + 1)); say "FAIL: building the initramfs"; finish
fi
say "initramfs ready in $(( $(date +%s) - s )) s; booting (timeout $timeout s)"
log="$work/console.log"
# shellcheck disable=SC2054 # qemu's -device values hold commas
net_dev=(-device virtio-net-pci,netdev=n0,romfile=)
# shellcheck disable=SC2054
[ $arch = armv6 ] && net_dev=(-device usb-net,netdev=n0)
vm_boot $arch "$work/initrd.gz" "$log" "$timeout" "cma=0" -- \
    -rtc base=1970-01-02 -netdev user,id=n0 "${net_dev[@]}" "${disk_args[@]}"
boot_rc=$?
say "VM ran $VM_SECS s, test script status $VM_RC"

# ---- results ----
# The guest asks the fakes to /stop at its end; if it never did (a crash, a timeout), ask
# here so they print their figures.
if kill -0 "$fakes_pid" 2>/dev/null && ! grep -q '^VMFAKES-RESULT ' "$work/fakes.out"; then
    ctl_port=$(get ctl | sed 's/.*://')
    { exec 3<>"/dev/tcp/127.0.0.1/$ctl_port" && printf 'GET /stop HTTP/1.0\r\n\r\n' >&3 && cat <&3 >/dev/null; exec 3<&-; } 2>/dev/null
fi
for _ in $(seq 1 100); do kill -0 "$fakes_pid" 2>/dev/null || break; sleep 0.1; done
sed -n 's/\r$//; /^doctor| /p' "$log"
# A gateway that died: the guest's lines about it, and the kernel's own (an OOM kill is
# printed at loglevel 3, which the console shows).
sed -n 's/\r$//; /^\(gw\.log\|dmesg\)| /p; /Out of memory\|Killed process\|oom-kill\|segfault\|Kernel panic/p' "$log"
while IFS= read -r c; do
    case $c in
        PASS*) passed=$((passed + 1)); say "PASS ${c#PASS }" ;;
        FAIL*) failed=$((failed + 1)); say "FAIL ${c#FAIL }" ;;
    esac
done < <(sed -n 's/\r$//; s/.*YC-VM-CHECK //p' "$log")
if [ $boot_rc != 0 ] && [ "$VM_RC" = none ]; then
    failed=$((failed + 1)); say "FAIL: the VM gave no result (timeout or crash); console tail:"
    tail -n 30 "$log"
fi
result=$(grep -m1 '^VMFAKES-RESULT ' "$work/fakes.out" | sed 's/^VMFAKES-RESULT //')
if [ -z "$result" ]; then
    failed=$((failed + 1)); say "FAIL: vm_fakes gave no result"; cat "$work/fakes.err"
elif ! grep -q "answered=$n/$n" <<<"$result" || ! grep -q 'heartbeats_delivered=[1-9]' <<<"$result"; then
    failed=$((failed + 1)); say "FAIL: host fakes: $result"
else
    passed=$((passed + 1)); say "PASS host fakes: every message answered, heartbeat delivered"
fi
m() { vm_metric "$log" "$1"; }
kib_mib() { awk -v k="$1" 'BEGIN { if (k == "" || k == "na") print "na"; else printf "%.2f MiB", k / 1024 }'; }
echo
proto="plain HTTP, the clock set from the host"; [ $tls = 1 ] && proto="HTTPS with tls.ca_file, the clock left in 1970"
echo "== board VM figures ($T, $cpu, under TCG; kernel $VM_KVER; $proto) =="
printf '  %-46s %s\n' \
    "gateway VmHWM (peak RSS)" "$(kib_mib "$(m gateway_vmhwm_kib)")" \
    "gateway VmRSS at the end of the run" "$(kib_mib "$(m gateway_vmrss_kib)")" \
    "VM MemTotal" "$(kib_mib "$(m memtotal_kib)")" \
    "MemAvailable before the gateway started" "$(kib_mib "$(m memavailable_before_kib)")" \
    "MemAvailable, lowest during the run" "$(kib_mib "$(m memavailable_min_kib)")" \
    "time per message in the VM (wall, $n msgs, $chats chats)" "$(m per_msg_ms) ms" \
    "host view: mean / p50 / p90 / max turn latency" "$(sed -n 's/.*lat_mean_ms=\([0-9]*\).*lat_p50_ms=\([0-9]*\).*lat_p90_ms=\([0-9]*\).*lat_max_ms=\([0-9]*\).*/\1 \/ \2 \/ \3 \/ \4 ms/p' <<<"$result")" \
    "yoctoclaw --version in the VM" "$(m version_ms) ms" \
    "SIGTERM to exit" "$(m sigterm_exit_ms) ms" \
    "heartbeat" "$(if [ $tls = 1 ]; then echo "the gateway's own timer, delivered $(m heartbeat_after_start_s) s after it started (every $hb_mins min)"; else echo "yoctoclaw heartbeat, after the clock was set"; fi)" \
    "gateway log WARN / ERROR lines" "$(m log_warnings) / $(m log_errors)" \
    "binary" "$(m binary_bytes) bytes"
echo "  host: $result"
echo "  BENCH-VM $(vm_metrics "$log" | tr '\n' ' ')vm_secs=$VM_SECS"
finish
