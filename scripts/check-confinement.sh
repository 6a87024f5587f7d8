#!/bin/sh
# Check that `exec` commands cannot reach the secrets on this machine's kernel: a plain
# command sequence for boards and VMs without a Rust toolchain (tests/security.rs checks
# the same under `cargo test`).
#
#   scripts/check-confinement.sh [BIN]      BIN defaults to `yoctoclaw` on PATH
#
# Needs /bin/sh and python3 (a fake model on 127.0.0.1 that asks for the commands below).
# Prints one PASS/FAIL line per check and `SKIPPED: landlock (reason)` when the kernel
# has no Landlock (then only the environment check runs). Exit status 1 on any FAIL.
set -eu
BIN=${1:-yoctoclaw}
H=$(mktemp -d "${TMPDIR:-/tmp}/yc-confine.XXXXXX")
OUT=$(mktemp -d "${HOME:-/root}/yc-confine-out.XXXXXX")
trap 'kill "$MODEL" 2>/dev/null; rm -rf "$H" "$OUT"' EXIT
KEY=plain-api-key-value-0123456789
FILE_SECRET=correct-horse-battery-staple-42

"$BIN" --home "$H" onboard >/dev/null
printf 'MY_SERVICE_PASSWORD=%s\n' "$FILE_SECRET" >"$H/secrets.env"
chmod 600 "$H/secrets.env"

# The commands, one per tool call (JSON-escaped by python below).
cat >"$H/cmds.txt" <<EOF
cat "\$(printf /proc/%s/%s \$PPID environ)" > leak-environ.txt 2>&1; true
cat "\$(printf %s/../secr%s \$PWD ets.env)" > leak-secrets.txt 2>&1; true
head -c 64 "\$(printf /proc/%s/%s \$PPID mem)" > leak-mem.txt 2>&1; true
echo x > "\$PWD/../evil.txt"; true
echo ok > $OUT/allowed.txt; true
echo no > /etc/yc-confine-test; true
EOF

PORT_FILE="$H/port"
python3 - "$H/cmds.txt" "$PORT_FILE" <<'EOF' &
import json, sys, http.server
cmds = [l.rstrip("\n") for l in open(sys.argv[1]) if l.strip()]
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if body["messages"][-1]["role"] == "tool":
            msg = {"role": "assistant", "content": "done"}
        else:
            calls = [{"id": f"c{i}", "type": "function", "function": {"name": "exec",
                      "arguments": json.dumps({"command": c})}} for i, c in enumerate(cmds)]
            msg = {"role": "assistant", "content": None, "tool_calls": calls}
        out = json.dumps({"id": "c", "object": "chat.completion", "created": 1, "model": "f",
                          "choices": [{"index": 0, "message": msg, "finish_reason": "stop"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)
s = http.server.HTTPServer(("127.0.0.1", 0), H)
open(sys.argv[2], "w").write(str(s.server_port))
s.serve_forever()
EOF
MODEL=$!
i=0
while [ ! -s "$PORT_FILE" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
PORT=$(cat "$PORT_FILE")
cat >"$H/config.json" <<EOF
{"provider":{"base_url":"http://127.0.0.1:$PORT/v1","model":"f"},"agent":{"autonomy":"full"},
 "tools":{"exec":{"write_paths":["$OUT"]}}}
EOF
LOG=$(YOCTOCLAW_API_KEY=$KEY "$BIN" --home "$H" agent -m go 2>&1 >/dev/null || true)

FAILED=0
check() { # name, condition (0 = pass)
  if [ "$2" -eq 0 ]; then echo "PASS $1"; else echo "FAIL $1"; FAILED=1; fi
}
has() { grep -q -- "$2" "$1" 2>/dev/null; }
W="$H/workspace"
! has "$W/leak-environ.txt" "$KEY"; check "the gateway's environment block holds no key" $?
case "$LOG" in
  *"Landlock is not available"*)
    echo "SKIPPED: landlock ($(echo "$LOG" | grep -o 'Landlock is not available ([^)]*)' | head -1))"
    exit $FAILED ;;
esac
! has "$W/leak-secrets.txt" "$FILE_SECRET"; check "secrets.env by a path built at run time" $?
has "$W/leak-mem.txt" "denied"; check "/proc/<parent>/mem cannot be opened" $?
[ ! -e "$H/evil.txt" ]; check "no write next to secrets.env" $?
has "$OUT/allowed.txt" ok; check "tools.exec.write_paths is writable" $?
[ ! -e /etc/yc-confine-test ]; check "no write in /etc" $?
exit $FAILED
