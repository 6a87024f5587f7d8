# shellcheck shell=sh
# Runs inside the board VM (busybox sh, as /test/run.sh; see scripts/board-vm.sh): the
# board binary on an emulated 64 MB aarch64 board with its clock in 1970, against the
# host's fakes (examples/vm_fakes.rs) at 10.0.2.2.
#
#   1. the clock starts in 1970 (no RTC, no NTP yet)
#   2. yoctoclaw --version
#   3. onboard a home, point its config at the fakes (and at a CA file when given)
#   4. yoctoclaw doctor: no FAIL (the 1970 clock is a WARN)
#   5. yoctoclaw gateway: the fakes send N Telegram messages (tool calls, a long reply,
#      a provider 500 retried); wait until every one is answered, sampling the gateway's
#      VmRSS/VmHWM and the VM's MemAvailable twice a second
#   6. plain HTTP: the clock is set from the host's (as NTP would); `yoctoclaw heartbeat`
#      checks in and its reply reaches Telegram; the gateway's scheduler notices the clock
#      and resumes.
#      HTTPS (TLS=1): the system clock is left in 1970; the gateway takes the time from the
#      Date of its first verified HTTPS answer, resumes cron and heartbeat by itself, and
#      its own heartbeat timer (every HB_MINS minutes) delivers a check-in to Telegram;
#      at the end the system clock still says 1970
#   7. SIGTERM: the gateway exits 0; its log holds no ERROR line
# Prints `YC-VM-CHECK PASS|FAIL text` and `YC-VM-METRIC key=value` lines; exits with the
# number of failed checks.
#
# /test/env (written by board-vm.sh) sets BOT_URL MODEL_URL CTL_URL TOKEN ALLOW N
# WAIT_SECS and optionally CA_FILE (a CA certificate in the guest, for `tls.ca_file`),
# TLS=1 with HB_MINS (the fakes are on HTTPS: step 6 as above) and DISK (an ext4 block
# device mounted at /root, where the home lives, like an SD card).

. /test/env
TLS=${TLS:-0}
HB_MINS=${HB_MINS:-30}
H=/root/.yoctoclaw
fails=0

check() { # PASS|FAIL text
    echo "YC-VM-CHECK $1 $2"
    [ "$1" = PASS ] || fails=$((fails + 1))
}
metric() { echo "YC-VM-METRIC $1"; }
# (busybox-static 1.35 wget crashes on -T: the timeout comes from timeout(1))
ctl() { timeout 15 wget -q -O - "$CTL_URL/$1" 2>/dev/null; }
field() { echo "$2" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
ms() { awk '{ printf "%d", $1 * 1000 }' /proc/uptime; }
meminfo() { sed -n "s/^$1: *\([0-9]*\) kB/\1/p" /proc/meminfo; }
procstat() { sed -n "s/^$2:[^0-9]*\([0-9]*\) kB/\1/p" "/proc/$1/status" 2>/dev/null; }

# ---- 0. the home's disk ----
if [ -n "${DISK:-}" ]; then
    if mount -t ext4 "$DISK" /root; then check PASS "home on ext4 $DISK ($(df -k /root | awk 'NR==2 { printf "%d MiB free", $4 / 1024 }'))"
    else check FAIL "mount -t ext4 $DISK /root"; fi
fi

# ---- (armv6) the machine is the one asked for ----
if [ -n "${EXPECT_MACHINE:-}" ]; then
    m=$(uname -m); cpu=$(sed -n 's/^model name[^:]*: *//p; s/^Processor[^:]*: *//p' /proc/cpuinfo | head -n 1)
    part=$(sed -n 's/^CPU part[^:]*: *//p' /proc/cpuinfo | head -n 1)
    if [ "$m" = "$EXPECT_MACHINE" ] && echo "$cpu" | grep -q "${EXPECT_CPU:-.}"; then
        check PASS "uname -m: $m; /proc/cpuinfo: $cpu, CPU part $part"
    else
        check FAIL "uname -m: $m (expected $EXPECT_MACHINE); /proc/cpuinfo: $cpu (expected ${EXPECT_CPU:-})"
    fi
fi

# ---- 1. clock ----
if [ "$(date +%Y)" = 1970 ]; then check PASS "clock starts in 1970 ($(date))"
else check FAIL "clock is $(date), expected 1970 (-rtc base=1970-01-02)"; fi

# ---- 2. version ----
v=$(yoctoclaw --version 2>&1); rc=$?
if [ $rc = 0 ]; then check PASS "yoctoclaw --version: $v"; else check FAIL "yoctoclaw --version exit $rc: $v"; fi
t0=$(ms); i=0
while [ $i -lt 10 ]; do yoctoclaw --version >/dev/null 2>&1; i=$((i + 1)); done
metric "version_ms=$(( ($(ms) - t0) / 10 ))"
metric "binary_bytes=$(wc -c < /usr/bin/yoctoclaw)"

# ---- 3. home ----
export TELEGRAM_BOT_TOKEN="$TOKEN" YOCTOCLAW_API_KEY=vm-dummy-key
if yoctoclaw --home "$H" onboard >/tmp/onboard.out 2>&1 && [ -f "$H/config.json" ]; then
    check PASS "onboard created $H"
else
    check FAIL "onboard: $(head -c 300 /tmp/onboard.out)"
fi
allow_json=$(echo "$ALLOW" | sed 's/[0-9][0-9]*/"&"/g')
first_chat=${ALLOW%%,*}
tls_json=""
[ -n "${CA_FILE:-}" ] && tls_json="\"tls\": { \"ca_file\": \"$CA_FILE\" },"
cat >"$H/config.json" <<EOF
{
  "provider": { "kind": "openai", "base_url": "$MODEL_URL", "model": "fake-model", "stream": false },
  "telegram": { "enabled": true, "api_base": "$BOT_URL", "allow_from": [$allow_json], "poll_timeout_secs": 25 },
  "heartbeat": { "enabled": true, "interval_mins": $HB_MINS, "deliver_to": "telegram:$first_chat" },
  $tls_json
  "log_level": "info"
}
EOF
mkdir -p "$H/workspace/notes"
i=0
while [ $i -lt 40 ]; do echo "- $i: water the tomatoes, check the soil, note the weather"; i=$((i + 1)); done \
    >"$H/workspace/notes/today.md"
printf '# Heartbeat\n- Check the disk and tell me how full it is.\n' >"$H/workspace/HEARTBEAT.md"

# ---- 4. doctor ----
yoctoclaw --home "$H" doctor >/tmp/doctor.out 2>&1; rc=$?
sed 's/^/doctor| /' /tmp/doctor.out
summary=$(grep 'checks:' /tmp/doctor.out | tail -n 1)
if [ $rc = 0 ] && ! grep -q '^FAIL' /tmp/doctor.out; then check PASS "doctor exit 0: $summary"
else check FAIL "doctor exit $rc: $summary $(grep '^FAIL' /tmp/doctor.out | head -n 3 | tr '\n' ' ')"; fi
if grep -q '^WARN *clock' /tmp/doctor.out; then check PASS "doctor warns that the 1970 clock is before the build"
else check FAIL "doctor did not warn about the 1970 clock"; fi
if [ "$TLS" = 1 ]; then
    # Its HTTPS checks brought the Date of a verified answer: the time line names it.
    tl=$(grep '^OK *time ' /tmp/doctor.out | sed 's/^OK *time *//')
    if [ -n "$tl" ] && echo "$tl" | grep -q HTTPS && ! echo "$tl" | grep -q '^1970'; then
        check PASS "doctor: the time comes from HTTPS: $tl"
    else
        check FAIL "doctor has no OK time line from HTTPS: $(grep ' time ' /tmp/doctor.out)"
    fi
fi

# ---- 5. gateway and N messages ----
metric "memtotal_kib=$(meminfo MemTotal)"
metric "memavailable_before_kib=$(meminfo MemAvailable)"
yoctoclaw --home "$H" gateway 2>/tmp/gw.log &
gw=$!
# Sampler: lowest MemAvailable, highest VmRSS while the gateway runs.
(
    min=999999999 max=0
    while kill -0 $gw 2>/dev/null; do
        a=$(meminfo MemAvailable); r=$(procstat $gw VmRSS)
        [ -n "$a" ] && [ "$a" -lt "$min" ] && min=$a
        [ -n "$r" ] && [ "$r" -gt "$max" ] && max=$r
        echo "$min $max" >/tmp/samples.new && mv /tmp/samples.new /tmp/samples
        sleep 0.5
    done
) &
sampler=$!
t_begin=$(ms); t_first=""; done_n=0
while :; do
    s=$(ctl status)
    issued=$(field issued "$s"); d=$(field "done" "$s")
    [ -n "$d" ] && done_n=$d
    [ -z "$t_first" ] && [ "${issued:-0}" -gt 0 ] && t_first=$(ms)
    [ "$done_n" -ge "$N" ] && break
    if ! kill -0 $gw 2>/dev/null; then
        wait $gw; gw_rc=$?
        check FAIL "the gateway exited during the run (status $gw_rc)"
        # What it said last and what the kernel said (an OOM kill shows only there).
        tail -n 15 /tmp/gw.log | sed 's/^/gw.log| /'
        dmesg 2>/dev/null | grep -i -A3 'oom\|killed process\|segfault' | tail -n 20 | sed 's/^/dmesg| /'
        break
    fi
    if [ $(( $(ms) - t_begin )) -gt $((WAIT_SECS * 1000)) ]; then
        check FAIL "only $done_n of $N messages answered after $WAIT_SECS s"; break
    fi
    sleep 0.5
done
t_end=$(ms)
if [ "$done_n" -ge "$N" ]; then
    check PASS "all $N Telegram messages answered (tool calls, a long reply, a retried 500)"
    traffic=$((t_end - ${t_first:-$t_begin}))
    metric "traffic_ms=$traffic"
    metric "per_msg_ms=$((traffic / N))"
fi
metric "gateway_start_to_first_message_ms=$(( ${t_first:-$t_end} - t_begin ))"
# Peak so far: start-up and the traffic (the final VmHWM below also covers the heartbeat).
metric "gateway_vmhwm_after_traffic_kib=$(procstat $gw VmHWM)"

# ---- 6. (HTTPS) the time from the Date of an HTTPS answer; the gateway's own heartbeat ----
if [ "$TLS" = 1 ]; then
    if grep -q 'using the time of an HTTPS answer' /tmp/gw.log; then
        check PASS "the gateway took the time from an HTTPS answer: $(grep -m1 'using the time of an HTTPS answer' /tmp/gw.log | sed 's/.*: using/using/')"
    else
        check FAIL "the gateway never logged 'using the time of an HTTPS answer'"
    fi
    # The scheduler re-checks a held clock every 30 s, then the heartbeat is due HB_MINS
    # after it resumed.
    t0=$(ms)
    while ! grep -q 'cron and heartbeat resume' /tmp/gw.log && [ $(( $(ms) - t0 )) -lt 45000 ]; do sleep 1; done
    if grep -q 'cron and heartbeat resume' /tmp/gw.log; then
        check PASS "the gateway resumed cron and heartbeat with the system clock in 1970 ($(( ($(ms) - t_begin) / 1000 )) s after it started)"
    else
        check FAIL "the gateway did not log 'cron and heartbeat resume' within 45 s of the run's end"
    fi
    hb_wait_ms=$(( (HB_MINS * 60 + 75) * 1000 ))
    hb=0
    while [ $(( $(ms) - t_begin )) -lt $hb_wait_ms ]; do
        hb=$(field heartbeats "$(ctl status)")
        [ "${hb:-0}" -ge 1 ] && break
        kill -0 $gw 2>/dev/null || break
        sleep 2
    done
    if [ "${hb:-0}" -ge 1 ]; then
        check PASS "the gateway's heartbeat timer ran and delivered its check-in to Telegram ($(( ($(ms) - t_begin) / 1000 )) s after the gateway started, every $HB_MINS min)"
        metric "heartbeat_after_start_s=$(( ($(ms) - t_begin) / 1000 ))"
    else
        check FAIL "no heartbeat delivered within $((hb_wait_ms / 1000)) s of the gateway's start: $(grep 'heartbeat' /tmp/gw.log | tail -n 3 | tr '\n' ' ')"
    fi
    if [ "$(date +%Y)" = 1970 ]; then check PASS "the system clock still says 1970 ($(date)): nothing set it"
    else check FAIL "the system clock was set: $(date)"; fi
fi

# ---- 6. (plain HTTP) clock set (as NTP would), heartbeat ----
if [ "$TLS" != 1 ]; then
    now=$(field now "$(ctl status)")
    if [ -n "$now" ] && date -s "@$now" >/dev/null 2>&1 && [ "$(date +%Y)" != 1970 ]; then
        check PASS "clock set from the host: $(date)"
    else
        check FAIL "could not set the clock (host said now=$now)"
    fi
    yoctoclaw --home "$H" heartbeat >/tmp/hb.out 2>&1; rc=$?
    hb=$(field heartbeats "$(ctl status)")
    if [ $rc = 0 ] && [ "${hb:-0}" -ge 1 ]; then
        check PASS "yoctoclaw heartbeat (beside the running gateway) delivered its check-in to Telegram"
    else
        check FAIL "heartbeat exit $rc, $hb deliveries: $(head -c 300 /tmp/hb.out)"
    fi
    # The gateway's scheduler re-checks a held clock every 30 s.
    t0=$(ms)
    while ! grep -q 'cron and heartbeat resume' /tmp/gw.log && [ $(( $(ms) - t0 )) -lt 45000 ]; do sleep 1; done
    if grep -q 'cron and heartbeat resume' /tmp/gw.log; then
        check PASS "the gateway saw the clock set and resumed cron and heartbeat ($(( ($(ms) - t0) / 1000 )) s)"
    else
        check FAIL "the gateway did not log 'cron and heartbeat resume' within 45 s of the clock being set"
    fi
fi

# ---- memory figures while still running ----
metric "gateway_vmhwm_kib=$(procstat $gw VmHWM)"
metric "gateway_vmrss_kib=$(procstat $gw VmRSS)"
read -r min max </tmp/samples 2>/dev/null
metric "memavailable_min_kib=${min:-na}"
metric "gateway_vmrss_max_sampled_kib=${max:-na}"
metric "memavailable_end_kib=$(meminfo MemAvailable)"

# ---- 7. stop ----
ctl stop >/dev/null
t0=$(ms)
kill -TERM $gw
wait $gw; rc=${gw_rc:-$?}
metric "sigterm_exit_ms=$(( $(ms) - t0 ))"
kill $sampler 2>/dev/null
if [ $rc = 0 ]; then check PASS "SIGTERM: the gateway exited 0"; else check FAIL "SIGTERM: the gateway exited $rc"; fi
errors=$(grep -c ' ERROR ' /tmp/gw.log)
warns=$(grep -c ' WARN ' /tmp/gw.log)
metric "log_errors=$errors"
metric "log_warnings=$warns"
if [ "$errors" = 0 ]; then check PASS "gateway log: no ERROR line ($warns WARN)"
else check FAIL "gateway log: $errors ERROR lines"; fi
if grep -qs "$TOKEN" /tmp/gw.log /tmp/doctor.out /tmp/hb.out; then check FAIL "the bot token appears in a log"
else check PASS "the bot token appears in no log"; fi
echo "--- gateway log (WARN/ERROR lines and the last 10) ---"
grep ' WARN \| ERROR ' /tmp/gw.log | head -n 20
tail -n 10 /tmp/gw.log
cd /
[ -n "${DISK:-}" ] && { sync; umount /root || echo "umount /root failed"; }
exit $fails
