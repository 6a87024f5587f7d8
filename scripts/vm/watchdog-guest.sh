# shellcheck shell=sh
# Runs inside the watchdog VM (busybox sh, as /test/run.sh; see scripts/watchdog-vm.sh):
# the gateway feeds the i6300esb hardware watchdog through /dev/watchdog. The phase comes
# from the kernel command line (`yc.wd=hang|kill`); /test/env sets WD_TIMEOUT.
#
#   hang   (a) the gateway runs 4 timeouts and the machine is not reset; (b) SIGTERM: the
#          gateway writes the magic `V` before it closes, the kernel stops the timer
#          (sysfs state "inactive", no "did not stop"), and 3 timeouts later the machine
#          still runs; (c) a second gateway is stopped with SIGSTOP (a hung process: its
#          descriptor stays open, nothing feeds it): the hardware must reset the machine
#   kill   the gateway is killed with SIGKILL (no magic close; the kernel's release says
#          "watchdog did not stop!"): the hardware must reset the machine
#
# The reset is observed by the next boot: i6300esb keeps its timeout flag across a reset
# and the driver reports it as bootstatus WDIOF_CARDRESET (32), which this script prints
# as `YC-WD: reset by the watchdog` and counts as the phase's pass. A boot that is not
# after a reset prints `YC-WD: STOPPED` at the moment the feeding ends, then fails after
# 4 timeouts without a reset. Lines: `YC-VM-CHECK PASS|FAIL text`; exits with the number
# of failures.

. /test/env
T=${WD_TIMEOUT:-5}
W=/sys/class/watchdog/watchdog0
fails=0
pass() { echo "YC-VM-CHECK PASS $*"; }
fail() { echo "YC-VM-CHECK FAIL $*"; fails=$((fails + 1)); }
up() { cut -d' ' -f1 /proc/uptime; }

phase=$(sed -n 's/.*yc\.wd=\([a-z]*\).*/\1/p' /proc/cmdline)
bs=$(cat $W/bootstatus 2>/dev/null)
echo "YC-WD: phase ${phase:-none}, uptime $(up), $(cat $W/identity 2>/dev/null), bootstatus ${bs:-none}, nowayout $(cat $W/nowayout 2>/dev/null)"
[ -c /dev/watchdog ] || { fail "no /dev/watchdog (i6300esb not loaded?)"; dmesg | tail -n 20; exit 1; }

if [ "$bs" = 32 ]; then
    echo "YC-WD: reset by the watchdog (bootstatus 32, WDIOF_CARDRESET)"
    case $phase in
        hang|kill) pass "$phase: the hardware watchdog reset the machine" ;;
        *) fail "${phase:-none}: the machine was reset by the watchdog" ;;
    esac
    exit $fails
fi

export YOCTOCLAW_HOME=/tmp/h YOCTOCLAW_API_KEY=vm-dummy-key RUST_LOG=info
yoctoclaw onboard >/dev/null 2>&1 || { fail "yoctoclaw onboard"; exit 1; }
# No Telegram, no heartbeat: the gateway serves nothing but its watchdogs (and cron).
cat >"$YOCTOCLAW_HOME/config.json" <<EOF
{"provider":{"base_url":"http://127.0.0.1:9/v1","model":"fake-model"},
 "telegram":{"enabled":false},"heartbeat":{"enabled":false},
 "watchdog":{"device":"/dev/watchdog","timeout_secs":$T,"stall_secs":0}}
EOF

# Start a gateway ($gw) and wait until it feeds the device; one check that the kernel took
# the timeout.
start_gateway() {
    yoctoclaw gateway >/tmp/gw.log 2>&1 &
    gw=$!
    i=0
    until grep -q 'watchdog: feeding /dev/watchdog' /tmp/gw.log; do
        i=$((i + 1))
        if [ $i -gt 300 ] || ! kill -0 $gw 2>/dev/null; then
            fail "$phase: the gateway did not start feeding /dev/watchdog in 30 s"
            sed 's/^/    | /' /tmp/gw.log
            exit 1
        fi
        sleep 0.1
    done
    line=$(grep 'watchdog: feeding' /tmp/gw.log | sed 's/.*watchdog: //')
    state=$(cat $W/state 2>/dev/null) timeout=$(cat $W/timeout 2>/dev/null)
    echo "YC-WD: gateway $gw: $line; kernel: state $state, timeout $timeout s"
    if [ "$state" = active ] && [ "$timeout" = "$T" ] && echo "$line" | grep -q "(timeout $T s)"; then
        pass "$phase: the gateway opened /dev/watchdog and WDIOC_SETTIMEOUT set $T s (the kernel says timeout $timeout, $state)"
    else
        fail "$phase: after open and WDIOC_SETTIMEOUT $T the kernel says state '$state', timeout '$timeout' (gateway: $line)"
    fi
}

start_gateway
case $phase in
hang)
    sleep $((4 * T))
    if kill -0 $gw 2>/dev/null; then
        pass "hang: (a) fed by the running gateway, no reset in $((4 * T)) s (4 timeouts)"
    else
        fail "hang: (a) the gateway died"; sed 's/^/    | /' /tmp/gw.log
    fi
    kill -TERM $gw
    wait $gw
    rc=$?
    state=$(cat $W/state 2>/dev/null)
    echo "YC-WD: gateway exited $rc at uptime $(up); kernel: state $state"
    if [ $rc = 0 ] && [ "$state" = inactive ] && ! dmesg | grep -q 'did not stop' \
        && ! grep -q 'magic close failed' /tmp/gw.log; then
        pass "hang: (b) SIGTERM: exit 0, magic close: the kernel stopped the timer (state inactive)"
    else
        fail "hang: (b) after SIGTERM: exit $rc, state '$state'"
        dmesg | grep -i watchdog | sed 's/^/    dmesg| /'
        sed 's/^/    | /' /tmp/gw.log
    fi
    sleep $((3 * T))
    pass "hang: (b) no reset $((3 * T)) s (3 timeouts) after the clean stop"
    start_gateway
    ;;
esac
case $phase in
hang|kill)
    # Fed for 2 timeouts first, so the feeding is what kept it alive until now.
    sleep $((2 * T))
    kill -0 $gw 2>/dev/null || { fail "$phase: the gateway died"; sed 's/^/    | /' /tmp/gw.log; exit 1; }
    if [ "$phase" = hang ]; then kill -STOP $gw; else kill -KILL $gw; fi
    echo "YC-WD: STOPPED the gateway ($phase) at uptime $(up); the watchdog must reset within $T s"
    sleep $((4 * T))
    fail "$phase: no reset $((4 * T)) s after the feeding stopped (state $(cat $W/state 2>/dev/null))"
    dmesg | grep -i watchdog | sed 's/^/    dmesg| /'
    ;;
*) fail "no phase on the kernel command line (yc.wd=hang|kill)" ;;
esac
exit $fails
