#!/usr/bin/env python3
"""Draw the footprint soak's figures as one SVG: RSS over messages answered, and CPU per
message for each stretch of 100 messages, one line per run (mixed, plain, burst ...).

    scripts/footprint-chart.py OUT.svg RUN.json [RUN.json ...]

Each RUN.json is what `soak --json` writes (scripts/bench-footprint.sh keeps them in
docs/footprint/). Python standard library only; no fonts or browsers needed to make it.
"""
import json
import os
import sys

W, H = 820, 560
LEFT, RIGHT = 70, 200
PANEL_H = 200
TOP1, TOP2 = 50, 310
COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]


def esc(s):
    return str(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def nice_max(v):
    """A round upper bound for an axis (its quarters are round too)."""
    v = max(v, 1e-9) * 1.05
    e = 1e-3
    while True:
        for k in (1, 2, 4, 5, 8):
            if k * e >= v:
                return k * e
        e *= 10


def panel(out, top, title, unit, runs, key, ymax, xmax, budgets=()):
    x0, x1 = LEFT, W - RIGHT
    y0, y1 = top + PANEL_H, top
    out.append(f'<text x="{x0}" y="{top - 12}" font-size="14" font-weight="bold">{esc(title)}</text>')
    for i in range(5):
        v = ymax * i / 4
        y = y0 - (y0 - y1) * i / 4
        out.append(f'<line x1="{x0}" y1="{y:.1f}" x2="{x1}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{x0 - 6}" y="{y + 4:.1f}" font-size="11" text-anchor="end">{v:g}</text>')
    for i in range(6):
        v = xmax * i / 5
        x = x0 + (x1 - x0) * i / 5
        out.append(f'<text x="{x:.1f}" y="{y0 + 16}" font-size="11" text-anchor="middle">{int(v)}</text>')
    out.append(f'<line x1="{x0}" y1="{y0}" x2="{x1}" y2="{y0}" stroke="#333"/>')
    out.append(f'<line x1="{x0}" y1="{y0}" x2="{x0}" y2="{y1}" stroke="#333"/>')
    out.append(f'<text x="{x1}" y="{y0 + 32}" font-size="11" text-anchor="end">messages answered</text>')
    out.append(f'<text x="{x0 - 50}" y="{(y0 + y1) / 2:.1f}" font-size="11" '
               f'transform="rotate(-90 {x0 - 50} {(y0 + y1) / 2:.1f})" text-anchor="middle">{esc(unit)}</text>')
    for budget, label in budgets:
        if budget > ymax:
            continue
        y = y0 - (y0 - y1) * budget / ymax
        out.append(f'<line x1="{x0}" y1="{y:.1f}" x2="{x1}" y2="{y:.1f}" stroke="#999" stroke-dasharray="5,4"/>')
        out.append(f'<text x="{x0 + 6}" y="{y - 4:.1f}" font-size="10" fill="#666">{esc(label)}</text>')
    for idx, (name, run) in enumerate(runs):
        pts = [(p["messages"], p[key]) for p in run.get("series", []) if p.get(key) is not None]
        fig = run.get("figures", {})
        if key == "rss_mib" and fig.get("idle_rss_kib"):
            # Idle after start, before the first message.
            pts.insert(0, (0, fig["idle_rss_kib"] / 1024.0))
        if not pts:
            continue
        color = COLORS[idx % len(COLORS)]
        path = " ".join(
            f"{x0 + (x1 - x0) * m / xmax:.1f},{y0 - (y0 - y1) * min(v, ymax) / ymax:.1f}" for m, v in pts
        )
        out.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{path}"/>')
        for m, v in pts:
            out.append(f'<circle cx="{x0 + (x1 - x0) * m / xmax:.1f}" '
                       f'cy="{y0 - (y0 - y1) * min(v, ymax) / ymax:.1f}" r="2.5" fill="{color}"/>')
        if key == "rss_mib" and fig.get("quiet_rss_kib"):
            # Idle again after the traffic and the quiet period: a hollow marker past the end.
            v = fig["quiet_rss_kib"] / 1024.0
            y = y0 - (y0 - y1) * min(v, ymax) / ymax
            out.append(f'<circle cx="{x1 + 8}" cy="{y:.1f}" r="4" fill="none" stroke="{color}" stroke-width="2"/>')
            out.append(f'<text x="{x1 + 16}" y="{y + 4:.1f}" font-size="10" fill="{color}">'
                       f'{v:.2f} after {fig.get("quiet_secs", 0)} s quiet</text>')


def main(argv):
    if len(argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    out_path, files = argv[1], argv[2:]
    runs = []
    for f in files:
        try:
            with open(f, encoding="utf-8") as fh:
                run = json.load(fh)
        except (OSError, ValueError) as e:
            sys.stderr.write(f"footprint-chart: skipping {f}: {e}\n")
            continue
        fig = run.get("figures", {})
        name = fig.get("mix") or os.path.splitext(os.path.basename(f))[0]
        if fig.get("tls"):
            name += " tls"
        for p in run.get("series", []):
            p["rss_mib"] = p["rss_kib"] / 1024.0
        runs.append((name, run))
    if not runs:
        sys.stderr.write("footprint-chart: no run to draw\n")
        return 1
    xmax = max([p["messages"] for _, r in runs for p in r.get("series", [])] + [100])
    rss_max = nice_max(max([p["rss_mib"] for _, r in runs for p in r.get("series", [])] + [3.0]))
    cpu_max = nice_max(max([p["cpu_ms_per_msg"] for _, r in runs for p in r.get("series", [])] + [0.5]))
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'viewBox="0 0 {W} {H}" font-family="sans-serif">',
           f'<rect width="{W}" height="{H}" fill="white"/>']
    panel(out, TOP1, "Gateway RSS while answering (whole process tree)", "MiB", runs, "rss_mib",
          rss_max, xmax, budgets=((3.0, "peak target 3 MiB"), (2.0, "idle target 2 MiB")))
    panel(out, TOP2, "Gateway CPU per message, per 100 messages (model excluded)", "ms / message",
          runs, "cpu_ms_per_msg", cpu_max, xmax, budgets=((0.5, "target 0.5 ms"),))
    for idx, (name, run) in enumerate(runs):
        fig = run.get("figures", {})
        y = TOP2 + 10 + idx * 36
        color = COLORS[idx % len(COLORS)]
        out.append(f'<rect x="{W - RIGHT + 20}" y="{y}" width="12" height="12" fill="{color}"/>')
        out.append(f'<text x="{W - RIGHT + 38}" y="{y + 10}" font-size="12">{esc(name)}</text>')
        cpu = fig.get("cpu_ms_per_msg")
        peak = fig.get("peak_kib")
        if cpu is not None and peak is not None:
            out.append(f'<text x="{W - RIGHT + 38}" y="{y + 24}" font-size="10" fill="#555">'
                       f'peak {peak / 1024:.2f} MiB, {cpu:.2f} ms</text>')
    out.append("</svg>\n")
    with open(out_path, "w", encoding="utf-8") as fh:
        fh.write("\n".join(out))
    print(f"footprint-chart: wrote {out_path} ({len(runs)} runs)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
