# shellcheck shell=bash
# shellcheck disable=SC2034 # VM_* results are read by the scripts that source this file
# scripts/vm/lib.sh: boot a yoctoclaw binary in a small qemu-system VM and run a test
# script inside it. Sourced by scripts/board-vm.sh and scripts/hw-vm.sh; nothing runs on
# its own.
#
# What it does, per VM:
#   1. vm_fetch ARCH          Debian kernel (+ its modules) and busybox-static for ARCH
#                             (arm64, amd64, riscv64; armv6: armel's rpi kernel and
#                             its DTBs), downloaded with apt-get through a private apt
#                             state under the cache (the host's apt setup and dpkg
#                             architectures are not touched), extracted once, cached.
#   2. vm_initramfs ...       a gzip'd cpio: busybox, the kernel modules asked for (and
#                             their dependencies, from modules.dep, loaded in order), the
#                             yoctoclaw binary, extra files, and a generated /init that
#                             mounts /proc /sys /dev /tmp, loads the modules, brings up
#                             user-mode networking, runs /test/run.sh, prints the result
#                             marker and powers off. Rebuilt only when an input changed.
#   3. vm_boot ...            qemu-system-* with a timeout; the serial console goes to a
#                             log; the result is read from the marker line.
#
# Return codes of every vm_* function: 0 done/passed, 1 failed, 2 skipped (the reason in
# VM_SKIP_REASON). Callers print `SKIPPED: <vm name> (<reason>)` for 2: a VM that cannot
# be had (no apt, no network to Debian, a package missing, no qemu) is never a silent pass.
#
# Environment:
#   YC_VM_CACHE       cache dir (default ${XDG_CACHE_HOME:-$HOME/.cache}/yoctoclaw-vm)
#   YC_VM_MIRROR      Debian mirror (default http://deb.debian.org/debian)
#   YC_VM_SUITE       suite for arm64/amd64 (default: the host's codename, else bookworm)
#   YC_VM_SUITE_riscv64  suite for riscv64 (default sid: bookworm has no riscv64 port)
#   YC_VM_KEYRING     archive keyring (default /usr/share/keyrings/debian-archive-keyring.gpg)
#   YC_VM_INSTALL     0: never apt-get install host tools (qemu-system-*, cpio); default 1
#                     when root
#   YC_VM_ACCEL       qemu accelerator for a same-arch guest (default: kvm when usable, else tcg)
#
# Console protocol: /init prints `YC-VM: init` when it starts, `YC-VM-RESULT rc=N` when
# /test/run.sh ended with status N, then powers off. Test scripts print their own
# `YC-VM-METRIC key=value` and `YC-VM-CHECK PASS|FAIL text` lines for the caller to collect.

YC_VM_CACHE=${YC_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/yoctoclaw-vm}
YC_VM_MIRROR=${YC_VM_MIRROR:-http://deb.debian.org/debian}
YC_VM_KEYRING=${YC_VM_KEYRING:-/usr/share/keyrings/debian-archive-keyring.gpg}
YC_VM_SUITE_riscv64=${YC_VM_SUITE_riscv64:-sid}
# Apt lists older than this are refreshed before a download (only when something must be
# downloaded at all: a warm cache never touches the network).
YC_VM_APT_MAX_AGE_MINS=${YC_VM_APT_MAX_AGE_MINS:-1440}

VM_SKIP_REASON=""

vm_say() { echo "vm: $*" >&2; }
vm_skip() { VM_SKIP_REASON=$*; return 2; }
vm_now() { date +%s; }
vm_have() { command -v "$1" >/dev/null 2>&1; }

vm_host_suite() {
    if [ -n "${YC_VM_SUITE:-}" ]; then echo "$YC_VM_SUITE"; return; fi
    local c=""
    [ -r /etc/os-release ] && c=$(sed -n 's/^VERSION_CODENAME=//p' /etc/os-release | tr -d '"')
    case $c in bookworm|trixie|forky|sid) echo "$c" ;; *) echo bookworm ;; esac
}

vm_suite() { # arch
    case $1 in riscv64) echo "$YC_VM_SUITE_riscv64" ;; *) vm_host_suite ;; esac
}

# Debian's architecture and kernel flavour for ARCH: armv6 (BCM2835, ARM1176) is armel's
# rpi flavour (linux-image-rpi); the others are their own architecture's default flavour.
vm_deb_arch() { # arch
    case $1 in armv6) echo armel ;; *) echo "$1" ;; esac
}
vm_kflavour() { # arch
    case $1 in armv6) echo rpi ;; *) echo "$1" ;; esac
}

vm_qemu_bin() { # arch
    case $1 in
        arm64) echo qemu-system-aarch64 ;;
        armv6) echo qemu-system-arm ;;
        amd64) echo qemu-system-x86_64 ;;
        riscv64) echo qemu-system-riscv64 ;;
        *) echo "" ;;
    esac
}

vm_qemu_pkg() { # arch -> the Debian package with its qemu-system binary
    case $1 in
        arm64|armv6) echo qemu-system-arm ;;
        amd64) echo qemu-system-x86 ;;
        riscv64) echo "qemu-system-misc opensbi" ;;
    esac
}

# Host tools: qemu-system for ARCH, cpio, gzip, dpkg-deb, apt-get. Installs the missing
# Debian packages when root (YC_VM_INSTALL=0 to forbid), else returns 2.
vm_host_tools() { # arch
    local arch=$1 q missing="" t
    q=$(vm_qemu_bin "$arch")
    [ -n "$q" ] || vm_skip "no qemu for architecture $arch" || return
    vm_have apt-get && vm_have dpkg-deb || vm_skip "needs a Debian-like host with apt-get and dpkg-deb" || return
    vm_have "$q" || missing="$missing $(vm_qemu_pkg "$arch")"
    vm_have cpio || missing="$missing cpio"
    vm_have gzip || missing="$missing gzip"
    [ -f "$YC_VM_KEYRING" ] || missing="$missing debian-archive-keyring"
    [ -z "$missing" ] && return 0
    local install=${YC_VM_INSTALL:-1}
    if [ "$install" != 1 ] || [ "$(id -u)" -ne 0 ]; then
        vm_skip "missing host packages:$missing (apt-get install$missing)"; return
    fi
    vm_say "installing host packages:$missing"
    local log="$YC_VM_CACHE/apt-install.log"
    mkdir -p "$YC_VM_CACHE"
    # shellcheck disable=SC2086 # word splitting of the package list is intended
    if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
            --no-install-recommends $missing; } >"$log" 2>&1; then
        tail -n 5 "$log" >&2
        vm_skip "apt-get install$missing failed (see $log)"; return
    fi
    for t in "$q" cpio gzip; do vm_have "$t" || { vm_skip "$t still missing after apt-get install"; return; }; done
    [ -f "$YC_VM_KEYRING" ] || { vm_skip "no Debian archive keyring at $YC_VM_KEYRING"; return; }
    return 0
}

# apt-get with a private state for one arch and suite: its own sources, lists and cache
# under the cache dir; the host's sources, pins and dpkg architectures are not used.
vm_apt() { # arch suite apt-get|apt-cache args...
    local arch=$1 suite=$2 tool=$3; shift 3
    local d="$YC_VM_CACHE/apt/$suite-$arch"
    "$tool" -q \
        -o "Dir::Etc::SourceList=$d/sources.list" -o Dir::Etc::SourceParts=/nonexistent \
        -o Dir::Etc::Preferences=/nonexistent -o Dir::Etc::PreferencesParts=/nonexistent \
        -o "Dir::State::Lists=$d/lists" -o "Dir::Cache=$d/cache" -o "Dir::State::status=$d/status" \
        -o "APT::Architecture=$arch" -o "APT::Architectures::=$arch" \
        -o Acquire::Languages=none -o Debug::NoLocking=1 "$@"
}

vm_apt_update() { # arch suite [force]
    local arch=$1 suite=$2 force=${3:-0}
    local d="$YC_VM_CACHE/apt/$suite-$arch"
    mkdir -p "$d/lists/partial" "$d/cache/archives/partial"
    [ -f "$d/status" ] || : >"$d/status"
    {
        echo "deb [signed-by=$YC_VM_KEYRING] $YC_VM_MIRROR $suite main"
        # A stable release's newest kernel ABI is in -updates and -security.
        case $suite in
            sid|unstable|experimental) ;;
            *) echo "deb [signed-by=$YC_VM_KEYRING] $YC_VM_MIRROR $suite-updates main"
               echo "deb [signed-by=$YC_VM_KEYRING] ${YC_VM_SECURITY_MIRROR:-${YC_VM_MIRROR}-security} $suite-security main" ;;
        esac
    } >"$d/sources.list.new"
    cmp -s "$d/sources.list.new" "$d/sources.list" || rm -f "$d/updated"
    mv "$d/sources.list.new" "$d/sources.list"
    if [ "$force" = 0 ] && [ -f "$d/updated" ] \
        && [ -z "$(find "$d/updated" -mmin +"$YC_VM_APT_MAX_AGE_MINS" 2>/dev/null)" ]; then
        return 0
    fi
    vm_say "apt-get update ($suite, $arch)"
    if ! vm_apt "$arch" "$suite" apt-get update >"$d/update.log" 2>&1 \
        || grep -q '^E: \|^W: Failed' "$d/update.log"; then
        sed -n 's/^\(E\|W\): //p' "$d/update.log" | head -n 3 >&2
        vm_skip "apt-get update for $suite/$arch failed: $(grep -m1 '^E: \|^W: ' "$d/update.log" | cut -c1-160)"
        return
    fi
    touch "$d/updated"
}

# The kernel package of a flavour's metapackage (linux-image-FLAVOUR ->
# linux-image-<abi>-FLAVOUR; the flavour is the architecture but for armel's rpi), its
# -unsigned twin when there is one (the same kernel without the EFI signature).
vm_kernel_pkg() { # debian-arch suite [flavour]
    local arch=$1 suite=$2 fl=${3:-$1} dep
    dep=$(vm_apt "$arch" "$suite" apt-cache depends "linux-image-$fl" 2>/dev/null \
        | sed -n "s/^ *Depends: \(linux-image-[^ ]*-$fl\)\$/\1/p" | head -n 1)
    [ -n "$dep" ] || return 1
    if vm_apt "$arch" "$suite" apt-cache show "$dep-unsigned" >/dev/null 2>&1; then
        echo "$dep-unsigned"
    else
        echo "$dep"
    fi
}

vm_download() { # arch suite pkg destdir -> prints the .deb path
    local arch=$1 suite=$2 pkg=$3 dest=$4
    mkdir -p "$dest"
    if ! ( cd "$dest" && vm_apt "$arch" "$suite" apt-get download "$pkg" ) >"$dest/download.log" 2>&1; then
        # Lists a day old may name a file the mirror no longer has: refresh once, retry.
        vm_apt_update "$arch" "$suite" 1 >/dev/null 2>&1 || return 1
        ( cd "$dest" && vm_apt "$arch" "$suite" apt-get download "$pkg" ) >"$dest/download.log" 2>&1 || return 1
    fi
    ls -t "$dest"/"${pkg}"_*.deb 2>/dev/null | head -n 1
}

# Fetch and cache the kernel, modules and busybox for ARCH. Sets VM_KERNEL (the image),
# VM_MODDIR (lib/modules/<version>), VM_KVER, VM_BUSYBOX, VM_KPKG, VM_DTBS (the kernel's
# device trees, when its package ships them: armv6's rpi kernel).
vm_fetch() { # arch
    local arch=$1 suite dir kpkg deb tmp darch fl
    suite=$(vm_suite "$arch")
    darch=$(vm_deb_arch "$arch") fl=$(vm_kflavour "$arch")
    dir="$YC_VM_CACHE/$arch"
    mkdir -p "$dir" || { vm_skip "cannot create $dir"; return; }
    if [ ! -f "$dir/ready" ]; then
        vm_apt_update "$darch" "$suite" || return
        kpkg=$(vm_kernel_pkg "$darch" "$suite" "$fl")
        if [ -z "$kpkg" ]; then
            vm_apt_update "$darch" "$suite" 1 || return
            kpkg=$(vm_kernel_pkg "$darch" "$suite" "$fl") \
                || { vm_skip "no linux-image-$fl in Debian $suite ($darch): apt-cache depends linux-image-$fl found nothing"; return; }
        fi
        vm_say "downloading $kpkg and busybox-static ($suite, $darch)"
        tmp="$dir/tmp"; rm -rf "$tmp"; mkdir -p "$tmp"
        deb=$(vm_download "$darch" "$suite" "$kpkg" "$tmp") && [ -n "$deb" ] \
            || { vm_skip "apt-get download $kpkg:$darch failed: $(grep -m1 '^E: ' "$tmp/download.log" | cut -c1-160)"; return; }
        dpkg-deb -x "$deb" "$tmp/k" || { vm_skip "dpkg-deb -x $deb failed"; return; }
        # Newer Debian kernels (sid) split the image package into linux-binary-ABI (the
        # kernel) and linux-modules-ABI (the modules), which it depends on.
        local part
        for part in $(dpkg-deb -f "$deb" Depends | tr ',' '\n' | sed -n 's/^ *\(linux-\(binary\|modules\)-[^ ]*\).*/\1/p'); do
            deb=$(vm_download "$darch" "$suite" "$part" "$tmp") && [ -n "$deb" ] \
                || { vm_skip "apt-get download $part:$darch failed: $(grep -m1 '^E: ' "$tmp/download.log" | cut -c1-160)"; return; }
            dpkg-deb -x "$deb" "$tmp/k" || { vm_skip "dpkg-deb -x $deb failed"; return; }
        done
        deb=$(vm_download "$darch" "$suite" busybox-static "$tmp") && [ -n "$deb" ] \
            || { vm_skip "apt-get download busybox-static:$darch failed: $(grep -m1 '^E: ' "$tmp/download.log" | cut -c1-160)"; return; }
        dpkg-deb -x "$deb" "$tmp/b" || { vm_skip "dpkg-deb -x $deb failed"; return; }
        local img mods bb
        img=$(ls "$tmp"/k/boot/vmlinu[xz]-* "$tmp"/k/usr/lib/modules/*/vmlinu[xz] "$tmp"/k/lib/modules/*/vmlinu[xz] 2>/dev/null | head -n 1)
        mods=$(ls -d "$tmp"/k/lib/modules/* "$tmp"/k/usr/lib/modules/* 2>/dev/null | head -n 1)
        bb=$(ls "$tmp"/b/bin/busybox "$tmp"/b/usr/bin/busybox 2>/dev/null | head -n 1)
        [ -n "$img" ] && [ -n "$mods" ] && [ -n "$bb" ] \
            || { vm_skip "unexpected package layout in $kpkg or busybox-static (kernel image, modules or busybox missing)"; return; }
        rm -rf "${dir:?}/boot" "${dir:?}/modules" "${dir:?}/busybox" "${dir:?}/dtbs"
        mkdir -p "$dir/boot"
        mv "$img" "$dir/boot/vmlinuz" && mv "$mods" "$dir/modules" && mv "$bb" "$dir/busybox" \
            || { vm_skip "cannot move the extracted files into $dir"; return; }
        # The device trees an ARM board's kernel ships (usr/lib/linux-image-<version>/).
        local dtbs
        dtbs=$(ls -d "$tmp"/k/usr/lib/linux-image-* 2>/dev/null | head -n 1)
        [ -z "$dtbs" ] || mv "$dtbs" "$dir/dtbs" || { vm_skip "cannot move the device trees into $dir"; return; }
        basename "$mods" >"$dir/kver"
        echo "$kpkg" >"$dir/kpkg"
        rm -rf "$tmp"
        touch "$dir/ready"
    fi
    VM_KERNEL="$dir/boot/vmlinuz"
    VM_MODDIR="$dir/modules"
    VM_KVER=$(cat "$dir/kver")
    VM_KPKG=$(cat "$dir/kpkg")
    VM_BUSYBOX="$dir/busybox"
    VM_DTBS="$dir/dtbs"
    return 0
}

# Module paths (relative to VM_MODDIR) for NAME and its dependencies, dependencies first;
# a module built into the kernel (modules.builtin) is left out.
# Debian ships no modules.dep (depmod runs at install): each module's own `depends=`
# (its .modinfo section, written by the kernel build) is read instead.
vm_mod_order() { # name...
    local list="$VM_MODDIR/yc-modules.list"
    if [ ! -s "$list" ]; then
        ( cd "$VM_MODDIR" && find . -name '*.ko' -o -name '*.ko.xz' -o -name '*.ko.zst' -o -name '*.ko.gz' ) \
            | sed 's|^\./||' >"$list.tmp" && mv "$list.tmp" "$list"
    fi
    local seen=" " order_out=() missing=""
    _vm_mod_visit() {
        local n=${1//-/_} p deps d
        case $seen in *" $n "*) return 0 ;; esac
        seen="$seen$n "
        p=$(awk -v n="$n" '{ b = $0; sub(/.*\//, "", b); sub(/\.ko(\.(xz|zst|gz))?$/, "", b); gsub(/-/, "_", b); if (b == n) { print; exit } }' "$list")
        if [ -z "$p" ]; then
            # Built into this kernel: nothing to load. Without modules.builtin (sid's split
            # packages ship none) a module that is not in the tree is taken as built in;
            # if it is not, its device is missing in the VM and the test says so.
            if [ ! -f "$VM_MODDIR/modules.builtin" ]; then
                vm_say "kernel module $n: not in $VM_KVER's tree, taken as built in"
            elif ! sed 's|.*/||; s|\.ko$||; s|-|_|g' "$VM_MODDIR/modules.builtin" | grep -qx "$n"; then
                missing="$missing $n"
            fi
            return 0
        fi
        case $p in
            *.xz) deps=$(xz -dc "$VM_MODDIR/$p" | tr '\0' '\n' | sed -n 's/^depends=//p') ;;
            *.zst) deps=$(zstd -qdc "$VM_MODDIR/$p" | tr '\0' '\n' | sed -n 's/^depends=//p') ;;
            *.gz) deps=$(gzip -dc "$VM_MODDIR/$p" | tr '\0' '\n' | sed -n 's/^depends=//p') ;;
            *) deps=$(tr '\0' '\n' <"$VM_MODDIR/$p" | sed -n 's/^depends=//p') ;;
        esac
        for d in ${deps//,/ }; do _vm_mod_visit "$d"; done
        order_out+=("$p")
    }
    local x
    for x in "$@"; do _vm_mod_visit "$x"; done
    if [ -n "$missing" ]; then vm_say "no such kernel module in $VM_KVER:$missing"; return 1; fi
    printf "%s\n" "${order_out[@]}"
}

# Build a gzip'd cpio initramfs. Options:
#   --out FILE           the initramfs (rebuilt only when its inputs changed)
#   --bin FILE           the yoctoclaw binary (/usr/bin/yoctoclaw)
#   --script FILE        the test script (/test/run.sh)
#   --module "NAME [k=v ...]"  a kernel module with parameters (repeatable)
#   --file SRC:DEST      an extra file (repeatable; DEST absolute)
#   --net                bring up eth0 as 10.0.2.15/24 (qemu user-mode networking)
# Needs vm_fetch first (VM_BUSYBOX, VM_MODDIR).
vm_initramfs() {
    local out="" bin="" script="" net=0 mods=() files=()
    while [ $# -gt 0 ]; do
        case $1 in
            --out) out=$2; shift 2 ;;
            --bin) bin=$2; shift 2 ;;
            --script) script=$2; shift 2 ;;
            --module) mods+=("$2"); shift 2 ;;
            --file) files+=("$2"); shift 2 ;;
            --net) net=1; shift ;;
            *) vm_say "vm_initramfs: unknown option $1"; return 1 ;;
        esac
    done
    [ -n "$out" ] && [ -n "$script" ] || { vm_say "vm_initramfs: --out and --script are required"; return 1; }
    local names=() m
    for m in "${mods[@]:-}"; do [ -n "$m" ] && names+=("${m%% *}"); done
    local order=""
    if [ ${#names[@]} -gt 0 ]; then
        order=$(vm_mod_order "${names[@]}") || { vm_say "kernel modules not found in $VM_KVER"; return 1; }
    fi
    # Inputs' fingerprint: rebuild only when one changed.
    local f sum
    sum=$( {
        echo "v3 net=$net bin=$bin script=$script"; printf '%s\n' "${mods[@]:-}" "${files[@]:-}" "$order"
        for f in "$bin" "$script" "$VM_BUSYBOX" "${BASH_SOURCE[0]}"; do [ -n "$f" ] && stat -c '%n %s %Y' "$f"; done
        for f in "${files[@]:-}"; do [ -n "$f" ] && stat -c '%n %s %Y' "${f%%:*}"; done
    } | sha256sum | cut -c1-16)
    if [ -f "$out" ] && [ "$(cat "$out.sum" 2>/dev/null)" = "$sum" ]; then return 0; fi
    local root; root=$(mktemp -d)
    mkdir -p "$root"/{bin,dev,proc,sys,tmp,run,root,etc,test,usr/bin,lib/modules}
    cp "$VM_BUSYBOX" "$root/bin/busybox"
    [ -n "$bin" ] && cp "$bin" "$root/usr/bin/yoctoclaw" && chmod 755 "$root/usr/bin/yoctoclaw"
    cp "$script" "$root/test/run.sh"
    local p n
    : >"$root/lib/modules/load"
    while IFS= read -r p; do
        [ -n "$p" ] || continue
        n=$(basename "$p"); n=${n%.xz}; n=${n%.zst}; n=${n%.gz}
        case $p in
            *.xz) xz -dc "$VM_MODDIR/$p" >"$root/lib/modules/$n" ;;
            *.zst) zstd -qdc "$VM_MODDIR/$p" >"$root/lib/modules/$n" ;;
            *.gz) gzip -dc "$VM_MODDIR/$p" >"$root/lib/modules/$n" ;;
            *) cp "$VM_MODDIR/$p" "$root/lib/modules/$n" ;;
        esac || { vm_say "cannot copy module $p"; rm -rf "$root"; return 1; }
        # Parameters of a module asked for by name.
        local params="" k
        for m in "${mods[@]:-}"; do
            k=${m%% *}; k=${k//-/_}
            if [ "${n%.ko}" = "$k" ] || [ "$(echo "${n%.ko}" | tr - _)" = "$k" ]; then
                [ "$m" != "${m#* }" ] && params=${m#* }
            fi
        done
        echo "$n $params" >>"$root/lib/modules/load"
    done <<<"$order"
    for f in "${files[@]:-}"; do
        [ -n "$f" ] || continue
        mkdir -p "$root$(dirname "${f#*:}")"
        cp "${f%%:*}" "$root${f#*:}" || { vm_say "cannot copy ${f%%:*}"; rm -rf "$root"; return 1; }
    done
    printf '127.0.0.1 localhost\n10.0.2.2 yc-host\n' >"$root/etc/hosts"
    echo "nameserver 10.0.2.3" >"$root/etc/resolv.conf"
    echo "root:x:0:0:root:/root:/bin/sh" >"$root/etc/passwd"
    cat >"$root/init" <<EOF
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/usr/bin:/bin HOME=/root TZ=UTC
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t tmpfs -o size=16m tmpfs /tmp
echo "YC-VM: init (\$(uname -m), kernel \$(uname -r))"
while read -r m p; do
    [ -n "\$m" ] || continue
    insmod /lib/modules/\$m \$p || echo "YC-VM: insmod \$m failed"
done < /lib/modules/load
ip link set lo up
if [ $net = 1 ]; then
    # eth0 (virtio-net), or usb0 (a USB network device, which enumerates seconds later).
    i=0 nif=""
    while [ -z "\$nif" ] && [ \$i -lt 60 ]; do
        for d in eth0 usb0; do [ -e /sys/class/net/\$d ] && nif=\$d && break; done
        [ -n "\$nif" ] || sleep 0.5
        i=\$((i + 1))
    done
    ip link set "\${nif:-eth0}" up && ip addr add 10.0.2.15/24 dev "\${nif:-eth0}" && ip route add default via 10.0.2.2 \
        || echo "YC-VM: network setup failed"
fi
cd /root
sh /test/run.sh < /dev/null > /dev/console 2>&1
rc=\$?
echo "YC-VM-RESULT rc=\$rc"
sync
poweroff -f
EOF
    chmod 755 "$root/init" "$root/test/run.sh"
    ( cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet | gzip -6 >"$out.tmp" ) \
        && mv "$out.tmp" "$out" && echo "$sum" >"$out.sum"
    local rc=$?
    rm -rf "$root"
    return $rc
}

# Boot ARCH's kernel with INITRD, console to LOG, killed after TIMEOUT seconds.
# Extra words after -- go to qemu. Sets VM_RC (the test script's status, or "none") and
# VM_SECS. Returns 0 when the script exited 0, 1 otherwise.
vm_boot() { # arch initrd log timeout [append-extra] [-- qemu args...]
    local arch=$1 initrd=$2 log=$3 timeout=$4 append=${5:-}
    shift 5 2>/dev/null || shift $#
    [ "${1:-}" = -- ] && shift
    local q; q=$(vm_qemu_bin "$arch")
    local args=()
    case $arch in
        arm64) args=(-M virt -cpu cortex-a53 -m 64M); append="console=ttyAMA0 $append" ;;
        amd64) args=(-m 128M); append="console=ttyS0 $append"
               if [ "$(uname -m)" = x86_64 ] && [ "${YC_VM_ACCEL:-auto}" != tcg ] && [ -w /dev/kvm ] \
                   && grep -qw -e vmx -e svm /proc/cpuinfo; then args+=(-accel kvm); fi ;;
        # Debian's riscv64 kernel is a 37 MB image: 64M leaves no room for the initramfs.
        riscv64) args=(-M virt -m "${YC_VM_RISCV64_MEM:-160M}"); append="console=ttyS0 $append" ;;
        # Raspberry Pi Zero (BCM2835, ARM1176): its RAM is fixed at 512 MB. QEMU has no
        # BCM2835 ASB block (bcm2835-power faults on it: left out) and no PM watchdog, so
        # poweroff only halts the CPU: the run ends when the console says YC-VM-RESULT.
        # The PL011 console comes up only with earlycon on it. With tickless idle and
        # high-resolution timers on the BCM2835 system timer the guest froze at random
        # points of a run. The cause (DECISIONS 156): qemu 7.2 schedules a compare value
        # the guest set a moment too late (qemu descheduled by the host) 2^32 us away, and
        # the guest's only timer is gone. With -icount the guest's clock follows its own
        # instructions, so a compare is never set in its past.
        armv6) args=(-M raspi0 -dtb "$VM_DTBS/bcm2835-rpi-zero.dtb" -icount shift=4)
               append="console=ttyAMA0 earlycon=pl011,0x20201000 initcall_blacklist=bcm2835_power_driver_init nohz=off highres=off $append" ;;
    esac
    local t0 t1; t0=$(date +%s.%N)
    : >"$log"
    timeout --kill-after=5 "$timeout" "$q" "${args[@]}" -display none -monitor none -no-reboot \
        -serial "file:$log" -kernel "$VM_KERNEL" -initrd "$initrd" \
        -append "$append loglevel=4 panic=1" "$@" </dev/null >"$log.qemu" 2>&1 &
    local qpid=$! qrc
    if [ "$arch" = armv6 ]; then
        # The machine cannot power off: stop qemu once the result line is out (and the
        # guest's sync has had a moment), or when the timeout ends it.
        while kill -0 "$qpid" 2>/dev/null; do
            if grep -q 'YC-VM-RESULT rc=' "$log" 2>/dev/null; then sleep 2; kill "$qpid" 2>/dev/null; break; fi
            sleep 1
        done
        wait "$qpid"; qrc=$?
        grep -q 'YC-VM-RESULT rc=' "$log" && qrc=0
    else
        wait "$qpid"; qrc=$?
    fi
    t1=$(date +%s.%N)
    VM_SECS=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}')
    VM_RC=$(sed -n 's/.*YC-VM-RESULT rc=\([0-9]*\).*/\1/p' "$log" | tail -n 1)
    [ -n "$VM_RC" ] || VM_RC=none
    if [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
        vm_say "VM timed out after $timeout s (console: $log)"
    elif [ "$qrc" != 0 ]; then
        vm_say "qemu exited with $qrc: $(head -c 300 "$log.qemu" | tr '\n' ' ')"
    fi
    [ "$VM_RC" = 0 ]
}

# Lines `YC-VM-METRIC key=value` from a console log, as "key=value" (CRs removed).
vm_metrics() { sed -n 's/\r$//; s/.*YC-VM-METRIC //p' "$1"; }
vm_metric() { vm_metrics "$1" | sed -n "s/^$2=//p" | tail -n 1; }
