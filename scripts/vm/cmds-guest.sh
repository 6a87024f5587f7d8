# shellcheck shell=sh
# Runs inside a hardware VM (busybox sh, as /test/run.sh; see scripts/hw-vm.sh): reads
# the command list /test/cmds and checks each command's output and exit status.
#
# Command list format, one directive per line (the first two characters say which):
#   "$ COMMAND"    run COMMAND with sh -c (stdout and stderr together, stdin /dev/null,
#                  killed after CMD_TIMEOUT_SECS, default 60); one check each
#   "> TEXT"       the last command's output must contain TEXT (a fixed string)
#   "! TEXT"       the last command's output must not contain TEXT
#   "? N"          the last command's exit status must be N (default 0)
#   "= NAME=VALUE" export NAME=VALUE for the commands after it (VALUE taken literally,
#                  up to the end of the line; `= NAME=` sets it empty)
#   "#..."         a comment; blank lines are ignored
# A check passes when every `>`, `!` and `?` after its `$` holds. Each prints
# `YC-VM-CHECK PASS|FAIL $ COMMAND` and the output (indented) when it failed or when
# VERBOSE=1. Exits with the number of failed checks.

fails=0
cmd="" rc=0 want_rc=0 bad=""
TO=${CMD_TIMEOUT_SECS:-60}

finish_cmd() {
    [ -n "$cmd" ] || return 0
    [ "$rc" = "$want_rc" ] || bad="$bad; exit $rc, expected $want_rc"
    if [ -z "$bad" ]; then
        echo "YC-VM-CHECK PASS \$ $cmd"
        [ "${VERBOSE:-0}" = 1 ] && sed 's/^/    | /' /tmp/cmd.out
    else
        echo "YC-VM-CHECK FAIL \$ $cmd (${bad#; })"
        sed 's/^/    | /' /tmp/cmd.out | head -n 40
        fails=$((fails + 1))
    fi
    cmd="" bad="" want_rc=0
}

while IFS= read -r line || [ -n "$line" ]; do
    case $line in
        '$ '*)
            finish_cmd
            cmd=${line#\$ }
            timeout "$TO" sh -c "$cmd" </dev/null >/tmp/cmd.out 2>&1
            rc=$?
            ;;
        '> '*) grep -qF -- "${line#> }" /tmp/cmd.out || bad="$bad; no '${line#> }' in the output" ;;
        '! '*) grep -qF -- "${line#! }" /tmp/cmd.out && bad="$bad; '${line#! }' in the output" ;;
        '? '*) want_rc=${line#\? } ;;
        '= '*=*)
            finish_cmd
            kv=${line#= }
            export "${kv%%=*}=${kv#*=}"
            ;;
        '#'*|'') ;;
        *) echo "YC-VM-CHECK FAIL bad line in the command list: $line"; fails=$((fails + 1)) ;;
    esac
done </test/cmds
finish_cmd
exit $fails
