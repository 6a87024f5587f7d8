#!/usr/bin/env bash
# The end-to-end suites (the tests that run the binary: agent, gateway, Telegram, tools,
# security, memory, cron, serial, TLS, doctor...) against a given build of yoctoclaw, by
# default the aarch64 board build, under qemu-user: the binary that ships passes the suite
# the host build passes.
#
#   scripts/e2e-board.sh [BIN]      BIN defaults to dist/aarch64-unknown-linux-musl/yoctoclaw
#
# How: the test binaries are the host's (`cargo test`), the fakes run in them on loopback,
# and each run of yoctoclaw goes to BIN (YOCTOCLAW_BIN) through qemu-user when BIN is for
# another machine (YOCTOCLAW_BIN_RUNNER, by default `qemu-ARCH -cpu MODEL` from the first
# boards/*.conf of BIN's architecture; tests/support/binary.rs).
#
# Excluded, each by name (the lists below, each with its reason):
#   - tests that need a test hook (YOCTOCLAW_TEST_*): a shipped binary has none. Such a
#     test that is not listed fails against BIN (support::hook), so the list cannot fall
#     behind; a listed name that no longer exists fails this script.
#   - tests that cannot run under qemu-user, and why.
# Suites left out whole: architecture (reads the sources), idle_wakeups, mcp_client and
# mcp_http (in-process: they drive the library's MCP manager and HTTP transport, not the
# binary; mcp_cli, mcp_gateway and mcp_gateway_edges run those through BIN against the
# same servers), install_sh (install.sh runs the installed binary itself, which needs
# the host's machine or binfmt_misc). metrics runs, its in-process test on the host. The
# MCP servers the suites start (python3, node) are the host's
# programs: qemu-user runs BIN's execve of them natively. http_bad_input's two memory
# checks read the peak RSS of the process the test started, qemu's under qemu-user: they
# bound its growth during an attack, which is the guest's heap growth plus qemu's code
# cache (measured 46 s for the three HTTP suites, all passing).
#
# Environment: E2E_SUITES (space-separated test targets instead of the default list),
# E2E_THREADS (parallel tests per suite; default: cargo's), E2E_LOG_DIR (each suite's whole
# output; default a new temporary folder), YOCTOCLAW_BIN_RUNNER.
# Prints each suite's result and a last line "e2e-board: N suites passed, N failed".
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 1

BIN=${1:-dist/aarch64-unknown-linux-musl/yoctoclaw}
[ -f "$BIN" ] || { echo "e2e-board: $BIN missing (scripts/build-boards.sh builds it)" >&2; exit 2; }
BIN=$(realpath "$BIN")

SUITES=${E2E_SUITES:-"watchdog agent_cli config_cli cron_heartbeat doctor_cli gateway_wiring local_model_fit local_model_formats memory migrate_cli providers security serial_cli service_cli status_cli telegram_gateway telegram_inbox telegram_media tls tool_rules tools mcp_cli mcp_gateway mcp_gateway_edges metrics http_gateway http_bad_input web_search http_ws http_status_page telegram_webhook audit injection workers reload"}

# Tests that need a test hook: "suite test-name  hook". YOCTOCLAW_TEST_NOW puts the binary
# at another time (1970 on a board without an RTC, a job overdue, a day later): the board
# VM (scripts/board-vm.sh --tls) runs the 1970 board for real. YOCTOCLAW_TEST_BACKOFF_SCALE
# shortens Telegram's waits (three 409s are 90 s, a reply is retried for 10 minutes).
# YOCTOCLAW_TEST_WATCHDOG_BLOCK_AFTER blocks the executor on purpose (the stall detector).
NEEDS_HOOK="
cron_heartbeat a_clock_before_the_build_time_holds_the_heartbeat  YOCTOCLAW_TEST_NOW
cron_heartbeat cron_add_list_remove_round_trip  YOCTOCLAW_TEST_NOW
cron_heartbeat cron_add_on_a_1970_clock_waits_for_the_clock  YOCTOCLAW_TEST_NOW
doctor_cli a_clock_before_the_build_is_a_warning  YOCTOCLAW_TEST_NOW
telegram_gateway a_cron_delivery_that_cannot_reach_telegram_names_no_host  YOCTOCLAW_TEST_BACKOFF_SCALE
telegram_gateway poll_errors_are_survived_with_one_conflict_warning_and_the_token_never_logged  YOCTOCLAW_TEST_BACKOFF_SCALE
telegram_inbox a_reply_is_retried_through_a_telegram_outage_and_survives_a_restart  YOCTOCLAW_TEST_BACKOFF_SCALE
telegram_inbox messages_a_day_old_after_a_crash_are_told_in_one_line_never_answered  YOCTOCLAW_TEST_NOW
tls a_heartbeat_from_a_crontab_on_a_1970_board_learns_the_time_over_https  YOCTOCLAW_TEST_NOW
tls the_certificate_clock_follows_the_wall_clock_past_the_build_time  YOCTOCLAW_TEST_NOW
tls with_the_clock_in_1970_a_certificate_valid_at_build_time_is_accepted  YOCTOCLAW_TEST_NOW
tls with_the_clock_in_1970_the_time_comes_from_the_date_of_an_https_answer  YOCTOCLAW_TEST_NOW
watchdog a_blocked_executor_stops_the_pings_and_the_stall_detector_exits  YOCTOCLAW_TEST_WATCHDOG_BLOCK_AFTER
audit retention_deletes_rows_older_than_audit_days  YOCTOCLAW_TEST_NOW
audit a_full_database_while_the_trail_is_written_loses_no_turn  YOCTOCLAW_TEST_AUDIT_FULL
"

# Tests that cannot run under qemu-user (7.2, Debian 12's): "suite test-name  reason".
# - /proc/PID/environ of an emulated process is qemu's own environment block, which the
#   guest cannot reach: the binary wipes the block it was given (its copy), the check reads
#   qemu's. On a board the two are one block.
# - qemu-user answers the TCGETS2 ioctl (termios) with ENOSYS; rustix falls back to TCGETS
#   only on ENOTTY or EACCES, so the serial line cannot be opened. Every aarch64 kernel
#   has TCGETS2.
NOT_UNDER_QEMU="
security exec_children_cannot_read_the_secrets_however_the_path_is_built  environ-is-qemus
security the_gateway_environment_block_holds_no_secret  environ-is-qemus
security the_keys_still_work_after_the_environment_is_cleared  environ-is-qemus
serial_cli a_full_turn_and_a_slash_command_over_a_serial_line  no-TCGETS2-in-qemu
serial_cli approvals_are_asked_and_answered_on_the_serial_line  no-TCGETS2-in-qemu
serial_cli the_console_survives_the_device_going_away_and_coming_back  no-TCGETS2-in-qemu
serial_cli the_gateway_runs_a_serial_console_when_serial_device_is_set  no-TCGETS2-in-qemu
"

# Tests that cannot run under qemu-arm (32-bit ARM guests: the armv6 and armv7 builds),
# "suite test-name  reason":
# - qemu-user 7.2 mis-handles mremap that shrinks a mapping in place on a 32-bit guest
#   (whose address space it reserves up front): after it, touching another, unrelated
#   mapping faults or hangs qemu. A 15-line C program shows it (mmap 2.25 MiB among eight
#   mappings, mremap it to 64 KiB, touch the others: fine under qemu-aarch64 and without
#   the mremap, stuck under qemu-arm). dlmalloc shrinks its large blocks that way when the
#   1,024 waiting messages' batch is freed, a 4 MiB MEMORY.md is read by migrate, or an
#   oversized local-model answer is refused (qemu's -strace shows each time: an mremap that
#   shrinks, then SIGSEGV on a page qemu left mis-protected). A real kernel (the board VMs)
#   is not affected.
NOT_UNDER_QEMU_ARM="
telegram_gateway past_the_inbox_bound_a_message_gets_the_polite_busy_reply  qemu-arm-mremap
migrate_cli broken_inputs_are_reported_item_by_item  qemu-arm-mremap
local_model_formats bad_inputs_get_one_clear_result  qemu-arm-mremap
"

# ---- the runner for a foreign binary ----
elf_machine() { # ELF e_machine of $1, as a number (little-endian headers)
    od -An -tu2 -j18 -N2 "$1" | tr -d ' '
}
arch=""
case $(elf_machine "$BIN") in
    183) arch=aarch64 ;;
    243) arch=riscv64 ;;
    40) arch=arm ;;
    62) arch=x86_64 ;;
esac
if [ -z "${YOCTOCLAW_BIN_RUNNER+x}" ] && [ -n "$arch" ] && [ "$arch" != "$(uname -m)" ]; then
    runner=""
    # Two builds share qemu-arm: the armv6 one (ELF attribute Tag_CPU_arch v6*) runs on
    # the Pi Zero's core, the armv7 one on a Cortex-A7.
    want_triple=""
    if [ "$arch" = arm ]; then
        if readelf -A "$BIN" 2>/dev/null | grep -q 'Tag_CPU_arch: v6'; then
            want_triple=arm-unknown-linux-musleabihf
        else
            want_triple=armv7-unknown-linux-musleabihf
        fi
    fi
    for f in boards/*.conf; do
        # the conf's qemu-user program names its architecture: qemu-aarch64, qemu-arm...
        [ "$(sed -n 's/^qemu=//p' "$f")" = "qemu-$arch" ] || continue
        [ -z "$want_triple" ] || [ "$(sed -n 's/^triple=//p' "$f")" = "$want_triple" ] || continue
        runner="qemu-$arch -cpu $(sed -n 's/^qemu_cpu=//p' "$f")"
        break
    done
    [ -n "$runner" ] || runner="qemu-$arch"
    export YOCTOCLAW_BIN_RUNNER="$runner"
fi
export YOCTOCLAW_BIN="$BIN"
command -v "${YOCTOCLAW_BIN_RUNNER%% *}" >/dev/null 2>&1 || [ -z "${YOCTOCLAW_BIN_RUNNER:-}" ] \
    || { echo "e2e-board: ${YOCTOCLAW_BIN_RUNNER%% *} not installed (apt-get install qemu-user)" >&2; exit 2; }
echo "e2e-board: $BIN ($(stat -c %s "$BIN") bytes) under ${YOCTOCLAW_BIN_RUNNER:-no runner}"
EXCLUDED=$NEEDS_HOOK
[ -n "${YOCTOCLAW_BIN_RUNNER:-}" ] && EXCLUDED="$EXCLUDED$NOT_UNDER_QEMU"
case ${YOCTOCLAW_BIN_RUNNER:-} in qemu-arm\ *|qemu-arm) EXCLUDED="$EXCLUDED$NOT_UNDER_QEMU_ARM" ;; esac

LOGS=${E2E_LOG_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/e2e-board.XXXXXX")}
mkdir -p "$LOGS"

# ---- build the test binaries (the host's; nothing of BIN is rebuilt) ----
targets=()
for s in $SUITES; do targets+=(--test "$s"); done
if ! cargo test --quiet --no-run "${targets[@]}" 2>"$LOGS/build.log"; then
    tail -20 "$LOGS/build.log"; echo "e2e-board: cargo test --no-run failed"; exit 1
fi
passed=0 failed=0
summary=()
t0=$(date +%s)
for s in $SUITES; do
    list=$(cargo test --quiet --test "$s" -- --list 2>/dev/null | sed -n 's/: test$//p')
    skips=() n_skip=0
    while read -r suite name why; do
        [ "$suite" = "$s" ] || continue
        if ! grep -qx "$name" <<<"$list"; then
            echo "e2e-board: $s has no test $name (listed as excluded: $why): update the list"
            failed=$((failed + 1)); summary+=("FAIL  $s: stale exclusion $name"); continue
        fi
        skips+=(--skip "$name"); n_skip=$((n_skip + 1))
    done <<<"$EXCLUDED"
    st=$(date +%s)
    threads=()
    [ -n "${E2E_THREADS:-}" ] && threads=(--test-threads "$E2E_THREADS")
    cargo test --quiet --test "$s" -- --exact "${skips[@]}" "${threads[@]}" >"$LOGS/$s.log" 2>&1
    rc=$?
    res=$(grep -aE '^test result:' "$LOGS/$s.log" | tail -1 | sed 's/^test result: //; s/; finished in.*//')
    if [ $rc = 0 ]; then
        passed=$((passed + 1)); summary+=("PASS  $s: $res, $n_skip excluded ($(( $(date +%s) - st )) s)")
    else
        failed=$((failed + 1)); summary+=("FAIL  $s: ${res:-exit $rc} ($(( $(date +%s) - st )) s)")
        # Each failing test's name and the first lines of its panic; the whole output is in the log.
        awk '/^---- .* stdout ----$/ { name = $2; n = 0; print; next }
             name != "" && /^stack backtrace:/ { name = ""; next }
             name != "" && n < 12 { print; n++ }' "$LOGS/$s.log" | cut -c1-400
        echo "e2e-board: the whole output: $LOGS/$s.log"
    fi
    echo "e2e-board: ${summary[-1]}"
done

echo
echo "== e2e against $BIN ($(( $(date +%s) - t0 )) s) =="
for l in "${summary[@]}"; do echo "$l"; done
echo "e2e-board: $passed suites passed, $failed failed"
[ $failed = 0 ]
