#!/usr/bin/env python3
"""What MCP servers cost the gateway's own process: its memory with none, with two stdio
servers running idle, and with the two stopped by `idle_stop_mins`.

  scripts/bench-mcp-rss.py [--bin PATH] [--runs N] [--no-idle-stop]

The gateway runs in a temporary home with Telegram off; the servers are the official
Python SDK's (tests/fixtures/mcp/stdio_server.py; `pip install mcp`), `first_use`, which
the gateway starts once at start-up to learn their tools. Five seconds after start-up
(and after both servers listed their tools) it prints the gateway's VmRSS, RssAnon,
VmHWM and threads from /proc/PID/status, and the servers' RSS; then SIGTERM. The idle-stop
case waits 75 s with `idle_stop_mins: 1`. --bin defaults to the release build in
$CARGO_TARGET_DIR or target/. A measurement, not a test.
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURE = os.path.join(ROOT, "tests", "fixtures", "mcp", "stdio_server.py")
PATIENCE = 120


def status(pid):
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, value = line.split(":", 1)
            fields[key] = value.strip()
    return fields


def children(pid):
    out = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == pid:
            out.append(int(p))
    return out


def run(binary, label, servers, wait_for, settle, idle=None):
    home = tempfile.mkdtemp(prefix="yc-mcp-rss-")
    try:
        env = {"PATH": os.environ.get("PATH", ""), "RUST_LOG": "info"}
        subprocess.run([binary, "--home", home, "onboard"], env=env, check=True, capture_output=True)
        cfg = {
            "provider": {"base_url": "http://127.0.0.1:9/v1", "model": "unused"},
            "mcp": {"servers": servers},
        }
        if idle is not None:
            cfg["mcp"]["idle_stop_mins"] = idle
        with open(os.path.join(home, "config.json"), "w") as f:
            json.dump(cfg, f)
        log_path = os.path.join(home, "log.txt")
        with open(log_path, "w") as log:
            g = subprocess.Popen([binary, "--home", home, "gateway"], env=env, stdout=log, stderr=log)
        started = time.time()
        while True:
            with open(log_path) as f:
                text = f.read()
            if all(w in text for w in wait_for):
                break
            if time.time() - started > PATIENCE or g.poll() is not None:
                g.kill()
                sys.exit(f"{label}: the gateway did not get there:\n{text}")
            time.sleep(0.2)
        time.sleep(settle)
        s = status(g.pid)
        threads = sorted(
            open(f"/proc/{g.pid}/task/{t}/comm").read().strip() for t in os.listdir(f"/proc/{g.pid}/task")
        )
        kids = children(g.pid)
        kids_kb = sum(int(status(k)["VmRSS"].split()[0]) for k in kids)
        print(
            f"{label}: VmRSS {s['VmRSS']}, RssAnon {s['RssAnon']}, VmHWM {s['VmHWM']}, "
            f"threads {len(threads)} {threads}; servers {len(kids)}, {kids_kb} kB RSS"
        )
        g.send_signal(signal.SIGTERM)
        g.wait(timeout=30)
    finally:
        shutil.rmtree(home, ignore_errors=True)


def main():
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default=os.path.join(target, "release", "yoctoclaw"))
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--no-idle-stop", action="store_true")
    a = ap.parse_args()
    python = sys.executable
    server = {"command": python, "args": [FIXTURE, os.devnull]}
    both = {"a": server, "b": server}
    learned = ["mcp a: started to learn", "mcp b: started to learn"]
    for _ in range(a.runs):
        run(a.bin, "no MCP server", {}, ["telegram.enabled is false"], 5)
        run(a.bin, "two servers running idle", both, ["telegram.enabled is false"] + learned, 5)
        if not a.no_idle_stop:
            run(a.bin, "two servers stopped by idle_stop_mins 1", both, learned, 75, idle=1)


if __name__ == "__main__":
    main()
