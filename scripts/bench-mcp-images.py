#!/usr/bin/env python3
"""What an MCP tool result's images cost the process that shows them to a model: the peak
memory (VmHWM) of `yoctoclaw agent -m` through one turn whose tool returns 4 images of
700 KiB (2.8 MiB decoded, a 3.7 MB JSON-RPC message: about the most one message holds),
with `provider.vision` on (the images are decoded, written to the spool and streamed to
the model from there) and off (placeholders only), and the size of the request that
carried them.

  scripts/bench-mcp-images.py [--bin PATH] [--runs N]

The model is a fake OpenAI-compatible server in this script: its first answer calls
`cams__big`, and when the request with the results arrives it reads the agent's VmHWM
from /proc (the images were decoded, written and sent by then) and answers. The server is
tests/fixtures/mcp/image_server.py on the official Python SDK (`pip install mcp`).
--bin defaults to the release build in $CARGO_TARGET_DIR or target/. A measurement, not
a test.
"""

import argparse
import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURE = os.path.join(ROOT, "tests", "fixtures", "mcp", "image_server.py")


def vm(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return line.split(":", 1)[1].strip()
    return "?"


class Model(http.server.BaseHTTPRequestHandler):
    agent_pid = None
    seen = []

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        msgs = json.loads(body)["messages"]
        if msgs[-1]["role"] == "user" and isinstance(msgs[-1]["content"], str):
            call = {"id": "call_1", "type": "function",
                    "function": {"name": "cams__big", "arguments": '{"n":4,"kb":700}'}}
            msg = {"role": "assistant", "content": None, "tool_calls": [call]}
        else:
            Model.seen.append((len(body), vm(Model.agent_pid, "VmHWM"), vm(Model.agent_pid, "VmRSS")))
            msg = {"role": "assistant", "content": "seen."}
        out = json.dumps({"id": "c", "object": "chat.completion", "created": 1, "model": "fake",
                          "choices": [{"index": 0, "message": msg, "finish_reason": "stop"}],
                          "usage": {"prompt_tokens": 10, "completion_tokens": 2}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


def run(binary, vision, port):
    home = tempfile.mkdtemp(prefix="yc-mcp-img-")
    try:
        env = {"PATH": os.environ.get("PATH", "")}
        subprocess.run([binary, "--home", home, "onboard"], env=env, check=True, capture_output=True)
        cfg = {
            "provider": {"base_url": f"http://127.0.0.1:{port}/v1", "model": "fake", "vision": vision},
            "agent": {"autonomy": "full"},
            "mcp": {"servers": {"cams": {"command": sys.executable, "args": [FIXTURE]}}},
        }
        with open(os.path.join(home, "config.json"), "w") as f:
            json.dump(cfg, f)
        Model.seen = []
        p = subprocess.Popen([binary, "--home", home, "agent", "-m", "look"], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        Model.agent_pid = p.pid
        out, err = p.communicate(timeout=120)
        if p.returncode != 0 or b"seen." not in out or not Model.seen:
            sys.exit(f"the turn failed:\n{out.decode()}\n{err.decode()}")
        size, hwm, rss = Model.seen[-1]
        print(f"vision {'on ' if vision else 'off'}: request with the results {size:>9,} B; "
              f"agent VmHWM {hwm}, VmRSS {rss}")
    finally:
        shutil.rmtree(home, ignore_errors=True)


def main():
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default=os.path.join(target, "release", "yoctoclaw"))
    ap.add_argument("--runs", type=int, default=1)
    a = ap.parse_args()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Model)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    for _ in range(a.runs):
        run(a.bin, False, server.server_port)
        run(a.bin, True, server.server_port)
    server.shutdown()


if __name__ == "__main__":
    main()
