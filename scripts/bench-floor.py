#!/usr/bin/env python3
"""Memory floor: memory measured the way a board enforces it.

The smallest memory-cgroup limit (cgroup v2 `memory.max` or v1 `memory.limit_in_bytes`,
whichever this machine has; no swap) under which the gateway, started from a cold copy of
the static binary, answers the footprint soak (`examples/soak`: N mixed messages from 8
chats, one turn in flight per chat; default 1,000) with every message answered, no OOM
kill, and a traffic wall time at most --slowdown (2) times the median without a limit.

  scripts/bench-floor.py [options]

Options:
  --bin PATH       the binary (default: the static x86_64 musl build of
                   `scripts/build-boards.sh --path build-std x86_64-unknown-linux-musl`,
                   built first, in $BOARDS_DIST or dist/)
  --soak PATH      the soak driver (default: built, $CARGO_TARGET_DIR/release/examples/soak)
  -n N             messages (default 1000); --chats C (default 8)
  --runs R         bisections (default 3): the floor's spread over them is reported
  --base-runs B    runs without a limit (default 3); their median wall time is the reference
  --step KIB       the search's resolution (default 64)
  --lo KIB         the lower end of the search, tried first (default 1024)
  --slowdown X     the largest slowdown that passes (default 2.0)
  --at KIB         no search: one run without a limit, then one trial at KIB; exit 1
                   unless it passes (the CI guard)
  --json FILE      every trial and figure as JSON (docs/footprint/floor.json joins four)
  --label TEXT     a name for this binary in the report and the JSON

What is in the memory group: the gateway's process tree only, from its first instruction
(the soak writes the forked child into the group's cgroup.procs before exec). Its home
(onboarded and seeded by the soak, 500 memories) and the binary's copy are written to
disk and dropped from the page cache before the gateway starts, so the group is charged
for the code the gateway faults in and for the database and files it reads, as on a
board after a boot. The soak driver and its fakes (Telegram, the model) run outside the
group. The home and the copy live in $TMPDIR (default /tmp), which must be a disk file
system: on a tmpfs every page the gateway writes would be shared memory that cannot be
reclaimed without swap.

Each trial is a fresh group, a fresh cold copy and a fresh home. The group is judged
after the gateway stopped: `oom_kill` in memory.oom_control (v1) or memory.events (v2)
must be 0, the soak must exit 0 (every message answered within its stall limit, the
gateway alive and stopped by SIGTERM with status 0). Reported per trial: the limit, the
traffic's wall time, the group's peak usage (memory.max_usage_in_bytes / memory.peak),
how often the limit was hit (memory.failcnt / memory.events `max`), the gateway's VmHWM
and its sampled RssAnon and PSS peaks.

Needs root and a memory cgroup; the group is made under this process's own memory
cgroup on v1, under $FLOOR_CGROUP_PARENT or the hierarchy's root on v2 (memory is
enabled in its cgroup.subtree_control if it is not). Exit status: 0 when the run was
made (and, with --at, passed), 1 when a trial at --at failed, 2 when the machine cannot
run it (no memory cgroup, not root).
"""

import json
import math
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MUSL = "x86_64-unknown-linux-musl"


def die(msg, code=2):
    print(f"bench-floor: {msg}", file=sys.stderr)
    sys.exit(code)


def say(msg):
    print(f"bench-floor: {msg}", flush=True)


def read(path, default=""):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return default


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


class Cgroup:
    """The memory cgroup hierarchy: v2 (`memory.max`) or v1 (`memory.limit_in_bytes`)."""

    def __init__(self):
        v1 = v2 = None
        for line in read("/proc/mounts").splitlines():
            f = line.split()
            if len(f) < 4:
                continue
            if f[2] == "cgroup2" and "memory" in read(f[1] + "/cgroup.controllers").split():
                v2 = v2 or f[1]
            elif f[2] == "cgroup" and "memory" in f[3].split(","):
                v1 = v1 or f[1]
        own = {}
        for line in read("/proc/self/cgroup").splitlines():
            ident, _, rest = line.partition(":")
            ctrls, _, path = rest.partition(":")
            own[ctrls] = path
        if v2:
            self.version = 2
            self.parent = os.environ.get("FLOOR_CGROUP_PARENT", v2)
            ctl = self.parent + "/cgroup.subtree_control"
            if "memory" not in read(ctl).split():
                try:
                    write(ctl, "+memory")
                except OSError as e:
                    die(f"cannot enable the memory controller in {ctl}: {e}")
        elif v1:
            self.version = 1
            mine = next((p for c, p in own.items() if "memory" in c.split(",")), "/")
            self.parent = os.environ.get("FLOOR_CGROUP_PARENT", v1 + mine.rstrip("/"))
        else:
            die("no memory cgroup on this machine (neither a cgroup2 mount with the memory "
                "controller nor a cgroup v1 memory hierarchy)")
        self.swap = any(l.strip() for l in read("/proc/swaps").splitlines()[1:])
        self.made = 0

    def make(self, limit_kib):
        """A new group with `limit_kib` (None: no limit) and swap kept out."""
        self.made += 1
        path = f"{self.parent}/yc-floor-{os.getpid()}-{self.made}"
        os.mkdir(path)
        b = None if limit_kib is None else str(limit_kib * 1024)
        if self.version == 2:
            if b:
                write(path + "/memory.max", b)
            if os.path.exists(path + "/memory.swap.max"):
                write(path + "/memory.swap.max", "0")
        else:
            if b:
                write(path + "/memory.limit_in_bytes", b)
                if self.swap and os.path.exists(path + "/memory.memsw.limit_in_bytes"):
                    write(path + "/memory.memsw.limit_in_bytes", b)
        return path

    def figures(self, path):
        """Peak usage (KiB), times the limit was hit, OOM kills, of a group."""
        if self.version == 2:
            ev = dict(l.split() for l in read(path + "/memory.events").splitlines() if l)
            peak = read(path + "/memory.peak").strip()
            return {
                "cg_peak_kib": int(peak) // 1024 if peak.isdigit() else None,
                "limit_hits": int(ev.get("max", 0)),
                "oom_kills": int(ev.get("oom_kill", 0)),
            }
        oc = dict(l.split() for l in read(path + "/memory.oom_control").splitlines() if l)
        return {
            "cg_peak_kib": int(read(path + "/memory.max_usage_in_bytes", "0")) // 1024,
            "limit_hits": int(read(path + "/memory.failcnt", "0")),
            "oom_kills": int(oc.get("oom_kill", 0)),
        }

    def remove(self, path):
        for _ in range(50):
            try:
                os.rmdir(path)
                return
            except OSError:
                time.sleep(0.1)
        print(f"bench-floor: could not remove {path}", file=sys.stderr)


def bench_line(out):
    for line in out.splitlines():
        if line.startswith("BENCH "):
            return {k: v for k, _, v in (w.partition("=") for w in line.split()[1:])}
    return None


class Bench:
    def __init__(self, args, cg):
        self.a = args
        self.cg = cg
        self.base_s = None
        self.trials = []

    def trial(self, limit_kib):
        """One soak in a fresh group, judged; a trial that failed on its time alone while
        the group hit its limit is made once more (the machine's noise is of that order),
        and one whose group never reached its limit is not judged on its time (the limit
        did nothing to it)."""
        r = self.run(limit_kib)
        if r["why"] and r["soak_exit"] == 0 and not r["oom_kills"]:
            if r["limit_hits"] == 0:
                r["pass"], r["why"] = True, None
            else:
                say("  slower than allowed only: once more")
                r = self.run(limit_kib)
        return r

    def run(self, limit_kib):
        """One soak in a fresh group: a dict of figures, `pass` set when base_s is known."""
        a = self.a
        path = self.cg.make(limit_kib)
        cmd = [a.soak, "--bin", a.bin, "-n", str(a.n), "--chats", str(a.chats),
               "--version-runs", "0", "--cold", "--cgroup", path]
        if limit_kib is not None and self.base_s:
            cmd += ["--deadline-secs", str(math.ceil(self.base_s * a.slowdown) + 1)]
        t = time.monotonic()
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
            rc, out, err = p.returncode, p.stdout, p.stderr
        except subprocess.TimeoutExpired as e:
            rc, out, err = -1, e.stdout or "", "timeout"
        took = time.monotonic() - t
        figs = self.cg.figures(path)
        self.cg.remove(path)
        b = bench_line(out) or {}

        def num(k):
            try:
                return float(b[k])
            except (KeyError, ValueError):
                return None

        r = {
            "limit_kib": limit_kib,
            "soak_exit": rc,
            "traffic_s": num("traffic_s"),
            "vmhwm_kib": num("peak_kib"),
            "rss_anon_peak_kib": num("rss_anon_peak_kib"),
            "pss_peak_kib": num("pss_peak_kib"),
            "pss_idle_kib": num("pss_idle_kib"),
            "idle_rss_kib": num("idle_rss_kib"),
            "bin_cached_kib_at_start": num("cold_bin_cached_kib"),
            "trial_s": round(took, 1),
            **figs,
        }
        why = None
        if rc != 0:
            last = [l for l in (err or "").splitlines() if l.startswith("soak:")]
            why = last[0][6:] if last else f"soak exit {rc}"
        elif figs["oom_kills"]:
            why = f"{figs['oom_kills']} OOM kill(s)"
        elif self.base_s and r["traffic_s"] and r["traffic_s"] > a.slowdown * self.base_s:
            why = f"{r['traffic_s'] / self.base_s:.2f}x slower"
        r["pass"] = why is None
        r["why"] = why
        if self.base_s and r["traffic_s"]:
            r["slowdown"] = round(r["traffic_s"] / self.base_s, 3)
        self.trials.append(r)
        lim = "none" if limit_kib is None else f"{limit_kib} KiB"
        fig = lambda k: "-" if r.get(k) is None else f"{r[k]:.0f}"
        say(f"limit {lim:>10}: {'pass' if r['pass'] else 'FAIL'}"
            f"{'' if r['pass'] else ' (' + why + ')'}; traffic "
            f"{'-' if r['traffic_s'] is None else format(r['traffic_s'], '.2f')} s, "
            f"group peak {fig('cg_peak_kib')} KiB, limit hit {r['limit_hits']}x, "
            f"VmHWM {fig('vmhwm_kib')}, RssAnon peak {fig('rss_anon_peak_kib')}, "
            f"PSS peak {fig('pss_peak_kib')} KiB")
        return r

    def baseline(self):
        runs = [self.trial(None) for _ in range(self.a.base_runs)]
        bad = [r for r in runs if r["soak_exit"] != 0 or r["traffic_s"] is None]
        if bad:
            die(f"a run without a limit failed: {bad[0]['why']}", 1)
        times = [r["traffic_s"] for r in runs]
        self.base_s = statistics.median(times)
        for r in runs:
            r["slowdown"] = round(r["traffic_s"] / self.base_s, 3)
        return runs

    def bisect(self):
        """One search: the smallest passing limit, to --step KiB."""
        a = self.a
        step = a.step
        lo = a.lo // step * step
        r = self.trial(lo)
        if r["pass"]:
            return lo, r
        # Start above the group's peak without a limit (it passed there).
        peaks = [t["cg_peak_kib"] for t in self.trials
                 if t["limit_kib"] is None and t["cg_peak_kib"]]
        hi = math.ceil(max(peaks + [lo + step]) / step) * step
        best = self.trial(hi)
        while not best["pass"]:
            lo, hi = hi, hi * 2
            if hi > 256 * 1024:
                die("no limit up to 256 MiB passed", 1)
            best = self.trial(hi)
        while hi - lo > step:
            mid = (lo + hi) // 2 // step * step
            r = self.trial(mid)
            if r["pass"]:
                hi, best = mid, r
            else:
                lo = mid
        return hi, best


def build(args):
    env = dict(os.environ)
    target = env.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    if not args.soak:
        say("building the soak driver (cargo build --release --example soak)")
        subprocess.run(["nice", "-n", "10", "cargo", "build", "--quiet", "--release",
                        "--example", "soak"], cwd=ROOT, check=True)
        args.soak = os.path.join(target, "release", "examples", "soak")
    if not args.bin:
        say(f"building the static {MUSL} binary (scripts/build-boards.sh --path build-std)")
        log = os.path.join(target, "bench-floor-build.log")
        os.makedirs(target, exist_ok=True)
        with open(log, "w") as f:
            p = subprocess.run(["nice", "-n", "10", "scripts/build-boards.sh", "--path",
                                "build-std", MUSL], cwd=ROOT, stdout=f, stderr=f)
        if p.returncode != 0:
            die(f"the {MUSL} build failed (log: {log}); --bin PATH measures another binary")
        args.bin = os.path.join(env.get("BOARDS_DIST", os.path.join(ROOT, "dist")), MUSL,
                                "yoctoclaw")


def parse():
    import argparse
    p = argparse.ArgumentParser(usage="scripts/bench-floor.py [options]", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin")
    p.add_argument("--soak")
    p.add_argument("-n", type=int, default=1000)
    p.add_argument("--chats", type=int, default=8)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--base-runs", type=int, default=3)
    p.add_argument("--step", type=int, default=64)
    p.add_argument("--lo", type=int, default=1024)
    p.add_argument("--slowdown", type=float, default=2.0)
    p.add_argument("--at", type=int)
    p.add_argument("--json")
    p.add_argument("--label", default="")
    return p.parse_args()


def spread(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return "-"
    m = statistics.median(xs)
    return f"{m:.0f} ({min(xs):.0f}-{max(xs):.0f})"


def main():
    args = parse()
    if os.geteuid() != 0:
        die("needs root (it makes memory cgroups)")
    cg = Cgroup()
    build(args)
    for what in (args.bin, args.soak):
        if not os.access(what, os.X_OK):
            die(f"{what} is not an executable")
    tmp = os.environ.get("TMPDIR", "/tmp")
    fs = subprocess.run(["stat", "-f", "-c", "%T", tmp], capture_output=True, text=True)
    if fs.stdout.strip() in ("tmpfs", "ramfs"):
        die(f"{tmp} is a {fs.stdout.strip()}: set TMPDIR to a folder on a disk file system")
    load0 = read("/proc/loadavg").split()[:3]
    say(f"cgroup v{cg.version} under {cg.parent}; swap {'on (kept out of the group)' if cg.swap else 'off'}; "
        f"binary {args.bin} ({os.path.getsize(args.bin)} B); {args.n} messages from "
        f"{args.chats} chats; load {' '.join(load0)}")
    b = Bench(args, cg)
    base = b.baseline()
    times = [r["traffic_s"] for r in base]
    say(f"without a limit: traffic {b.base_s:.2f} s median ({min(times):.2f}-{max(times):.2f}, "
        f"{len(times)} runs)")
    out = {
        "label": args.label,
        "binary": args.bin,
        "bin_bytes": os.path.getsize(args.bin),
        "machine": f"{os.cpu_count()} CPUs, kernel {os.uname().release}",
        "cgroup": f"v{cg.version}",
        "n": args.n,
        "chats": args.chats,
        "slowdown_limit": args.slowdown,
        "step_kib": args.step,
        "load_start": load0,
        "base_traffic_s": times,
        "base_median_s": b.base_s,
    }
    code = 0
    if args.at is not None:
        r = b.trial(args.at)
        out["at_kib"] = args.at
        out["at_pass"] = r["pass"]
        if r["pass"]:
            say(f"PASS: answered all {args.n} under {args.at} KiB, "
                f"{r['slowdown']:.2f}x the time without a limit")
        else:
            say(f"FAIL: under {args.at} KiB: {r['why']}")
            code = 1
    else:
        floors = []
        for i in range(args.runs):
            say(f"search {i + 1} of {args.runs}")
            kib, r = b.bisect()
            floors.append({"floor_kib": kib, "slowdown": r.get("slowdown"),
                           "vmhwm_kib": r["vmhwm_kib"],
                           "rss_anon_peak_kib": r["rss_anon_peak_kib"],
                           "pss_peak_kib": r["pss_peak_kib"]})
            say(f"floor {kib} KiB ({kib / 1024:.2f} MiB), {r.get('slowdown', 0):.2f}x slower there")
        out["floors"] = floors
        fk = [f["floor_kib"] for f in floors]
        out["floor_kib_median"] = statistics.median(fk)
        print()
        print(f"memory floor ({args.label or os.path.basename(args.bin)}): "
              f"{statistics.median(fk) / 1024:.2f} MiB median of {len(fk)} searches "
              f"({min(fk)}-{max(fk)} KiB, step {args.step} KiB)")
        print("  slowdown at the floor: "
              + ", ".join(f"{f['slowdown']:.2f}x" for f in floors)
              + f" (limit {args.slowdown}x); without a limit the traffic takes "
              f"{b.base_s:.2f} s ({min(times):.2f}-{max(times):.2f})")
    ok = [r for r in b.trials if r["soak_exit"] == 0]
    print(f"  without a limit: group peak {spread([r['cg_peak_kib'] for r in base])} KiB, "
          f"VmHWM {spread([r['vmhwm_kib'] for r in base])}, RssAnon peak "
          f"{spread([r['rss_anon_peak_kib'] for r in base])}, PSS peak "
          f"{spread([r['pss_peak_kib'] for r in base])} KiB (median, range)")
    print(f"  every answered trial: VmHWM {spread([r['vmhwm_kib'] for r in ok])}, RssAnon peak "
          f"{spread([r['rss_anon_peak_kib'] for r in ok])}, PSS peak "
          f"{spread([r['pss_peak_kib'] for r in ok])} KiB; binary cached at start "
          f"{spread([r['bin_cached_kib_at_start'] for r in b.trials])} KiB")
    out["load_end"] = read("/proc/loadavg").split()[:3]
    out["trials"] = b.trials
    print(f"  {len(b.trials)} trials; load {' '.join(load0)} -> {' '.join(out['load_end'])}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
            f.write("\n")
    sys.exit(code)


if __name__ == "__main__":
    main()
