#!/bin/sh
# Check that binaries carry no test hook: a byte search for `YOCTOCLAW_TEST_` (the prefix of
# every hook's variable, whose name is in any binary that reads it). Hooks exist only in
# builds with the `test-hooks` feature (`cargo test`, or a cargo command that also builds a
# test, example or bench target); a shipped or measured binary must not have them.
#
#   scripts/check-no-hooks.sh BIN...
#
# Prints one line per binary; exit status 1 when any has a hook (its names are listed) or
# is missing.
set -u
[ $# -gt 0 ] || { echo "usage: scripts/check-no-hooks.sh BIN..." >&2; exit 2; }
status=0
for b in "$@"; do
    if [ ! -f "$b" ]; then
        echo "check-no-hooks: FAIL $b: no such file"; status=1; continue
    fi
    names=$(LC_ALL=C grep -aoE 'YOCTOCLAW_TEST_[A-Z_]*' "$b" | LC_ALL=C sort -u | tr '\n' ' ')
    if [ -n "$names" ]; then
        echo "check-no-hooks: FAIL $b has test hooks: $names(they belong in `cargo test` builds only)"
        status=1
    else
        echo "check-no-hooks: ok $b ($(wc -c <"$b") bytes): no YOCTOCLAW_TEST_"
    fi
done
exit $status
