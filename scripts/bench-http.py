#!/usr/bin/env python3
"""What the gateway's HTTP server does and costs: requests per second for GET /health and
for whole (non-streamed) completions against an instant fake model, the idle memory
http.enabled adds, and the peak memory under a connection flood.

  scripts/bench-http.py [--bin PATH] [--secs N] [--clients N]

The gateway runs in a temporary home with Telegram off, the model a fake
OpenAI-compatible server in this script (a fixed answer at once), http.rate_per_minute
raised out of the way. Each client is a thread with one kept-alive connection asking
one request after another. Figures:
- /health and completions: requests answered per second, and the gateway's own CPU time
  per request (utime+stime from /proc/PID/stat: what the board pays, whatever the
  client's speed); completions use one session per client (a session runs one turn at a
  time, the API two turns at once) and each answer is committed to SQLite;
- idle: VmRSS and RssAnon 5 s after start-up, with http.enabled false and true;
- flood: VmHWM before and after 200 connections that send one byte each and wait (the
  header timeout drops them) while one client asks /health as fast as it can for 5 s
  (answered 503 while the slow ones hold every slot).
--bin defaults to the release build in $CARGO_TARGET_DIR or target/. A measurement, not
a test: run it on an idle machine.
"""

import argparse
import http.server
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOKEN = "bench-http-token-0123456789abcdef"
ANSWER = json.dumps({
    "id": "chatcmpl-1", "object": "chat.completion", "created": 1700000000, "model": "fake",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "Fine, thanks."},
                 "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13},
}).encode()


class Model(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(ANSWER)))
        self.end_headers()
        self.wfile.write(ANSWER)

    def log_message(self, *args):
        pass


def status(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, v = line.split(":", 1)
            out[k] = v.strip()
    return out


def kib(pid, key):
    return int(status(pid)[key].split()[0])


def cpu_secs(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Gateway:
    def __init__(self, binary, model_port, http_on, extra=None):
        self.home = tempfile.mkdtemp(prefix="yc-bench-http-")
        env = {"PATH": os.environ.get("PATH", ""), "RUST_LOG": "info", "YOCTOCLAW_HTTP_TOKEN": TOKEN}
        subprocess.run([binary, "--home", self.home, "onboard"], env=env, check=True, capture_output=True)
        http = {"enabled": http_on, "listen": "127.0.0.1:0", "rate_per_minute": 1000000}
        http.update(extra or {})
        cfg = {
            "provider": {"base_url": f"http://127.0.0.1:{model_port}/v1", "model": "fake"},
            "heartbeat": {"enabled": False},
            "http": http,
        }
        with open(os.path.join(self.home, "config.json"), "w") as f:
            json.dump(cfg, f)
        self.log = open(os.path.join(self.home, "gateway.log"), "w+")
        self.proc = subprocess.Popen([binary, "--home", self.home, "gateway"], env=env,
                                     stdout=subprocess.DEVNULL, stderr=self.log)
        self.port = None
        deadline = time.time() + 30
        while time.time() < deadline:
            self.log.seek(0)
            text = self.log.read()
            if not http_on and "gateway:" in text:
                break
            marker = "http: listening on 127.0.0.1:"
            if marker in text:
                self.port = int(text.split(marker, 1)[1].split()[0])
                break
            time.sleep(0.05)
        else:
            raise SystemExit("the gateway did not start:\n" + text)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=30)
        shutil.rmtree(self.home, ignore_errors=True)


def request(sock, raw):
    sock.sendall(raw)
    buf = b""
    while b"\r\n\r\n" not in buf:
        got = sock.recv(65536)
        if not got:
            raise ConnectionError("closed")
        buf += got
    head, rest = buf.split(b"\r\n\r\n", 1)
    status = int(head.split(b" ", 2)[1])
    length = 0
    for line in head.split(b"\r\n")[1:]:
        k, v = line.split(b":", 1)
        if k.strip().lower() == b"content-length":
            length = int(v)
    while len(rest) < length:
        rest += sock.recv(65536)
    return status


def hammer(port, make_request, secs, clients):
    """Answers by `clients` keep-alive connections asking for `secs`: {status: count}."""
    counts = [dict() for _ in range(clients)]
    stop = time.time() + secs

    def client(i):
        sock = None
        while time.time() < stop:
            try:
                if sock is None:
                    sock = socket.create_connection(("127.0.0.1", port))
                st = request(sock, make_request(i))
                counts[i][st] = counts[i].get(st, 0) + 1
            except OSError:
                # The server closes a connection after 100 requests, or after a 503.
                if sock is not None:
                    sock.close()
                sock = None
    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    total = {}
    for c in counts:
        for k, v in c.items():
            total[k] = total.get(k, 0) + v
    return total


def health_request(_):
    return b"GET /health HTTP/1.1\r\nHost: b\r\n\r\n"


def completion_request(i):
    body = json.dumps({"model": "any", "user": f"bench{i}",
                       "messages": [{"role": "user", "content": "How are you?"}]}).encode()
    return (b"POST /v1/chat/completions HTTP/1.1\r\nHost: b\r\nAuthorization: Bearer " + TOKEN.encode()
            + b"\r\nContent-Type: application/json\r\nContent-Length: " + str(len(body)).encode()
            + b"\r\n\r\n" + body)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    p.add_argument("--bin", default=os.path.join(target, "release", "yoctoclaw"))
    p.add_argument("--secs", type=float, default=10)
    p.add_argument("--clients", type=int, default=4)
    a = p.parse_args()
    model = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Model)
    threading.Thread(target=model.serve_forever, daemon=True).start()
    mport = model.server_address[1]
    results = {"bin": a.bin, "bytes": os.path.getsize(a.bin)}

    for on in (False, True):
        g = Gateway(a.bin, mport, on)
        time.sleep(5)
        results[f"idle_http_{'on' if on else 'off'}"] = {
            "VmRSS_kib": kib(g.proc.pid, "VmRSS"), "RssAnon_kib": kib(g.proc.pid, "RssAnon")}
        g.stop()

    g = Gateway(a.bin, mport, True)
    for name, make in (("health", health_request), ("completions", completion_request)):
        cpu0 = cpu_secs(g.proc.pid)
        n = hammer(g.port, make, a.secs, a.clients).get(200, 0)
        cpu = cpu_secs(g.proc.pid) - cpu0
        results[name] = {"requests": n, "per_sec": round(n / a.secs),
                         "gateway_cpu_us_per_request": round(cpu * 1e6 / max(n, 1))}
    g.stop()

    g = Gateway(a.bin, mport, True, {"header_timeout_secs": 10})
    time.sleep(2)
    before = kib(g.proc.pid, "VmHWM")
    slow = []
    for _ in range(200):
        s = socket.create_connection(("127.0.0.1", g.port))
        s.sendall(b"G")
        slow.append(s)
    answers = hammer(g.port, health_request, 5, 1)
    results["flood"] = {"VmHWM_before_kib": before, "VmHWM_after_kib": kib(g.proc.pid, "VmHWM"),
                        "answers_to_a_fast_client_meanwhile": answers}
    for s in slow:
        s.close()
    g.stop()
    model.shutdown()
    json.dump(results, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
