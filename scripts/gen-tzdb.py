#!/usr/bin/env python3
"""Generate src/time/tzdb/data.rs: the built-in table of current time zone rules.

    scripts/gen-tzdb.py [--zoneinfo DIR] [--from-year Y] [--until-year Y] [--out FILE]
                        [--offsets FILE]

Boards without tzdata (Buildroot, many vendor images) have no /usr/share/zoneinfo, so
`agent.timezone = "Europe/Berlin"` would fail there. The table maps every name tzdata
knows (tzdata.zi's zones and links: zone1970.tab, zone.tab and the `backward` aliases such
as US/Eastern, Asia/Calcutta, Europe/Kiev, Etc/GMT+5) to the POSIX TZ string that closes
its TZif file (RFC 8536 footer): the rule in force today. Rules are deduplicated.

A few zones have rules no POSIX string can say (Morocco's Ramadan shifts, Palestine's):
their TZif files list the coming transitions one by one. For those, the transitions from
--from-year through --until-year are kept as well, so the table agrees with the TZif file
over those years; after that the footer rule applies (as it does in the TZif file itself
after its last listed transition).

Input: DIR (default $TZDIR or /usr/share/zoneinfo) with tzdata.zi (names and version),
zone.tab and zone1970.tab (checked to be covered), and the compiled TZif files.
Needs only the Python standard library (zoneinfo, to find the zones above).

Also writes the test data the table is checked against on every machine, whatever its
tzdata (src/time/tz.rs, `builtin_table_matches_the_zoneinfo_it_was_made_from`):
tests/fixtures/tzdb-offsets.txt (--offsets), for every name the UTC offset on
2025-01-01 and each change through 2030, as Python's zoneinfo reads them from the same
TZif files (their transitions, then their footer rule): an implementation independent
of ours.
"""

import argparse
import datetime as dt
import io
import os
import re
import struct
import subprocess
import sys
import zoneinfo

EXCLUDED = {"Factory"}  # not a place: "-00", time unknown
MAX_NAME_BYTES = 64  # src/time/tzdb.rs reads no longer name


def read_names(zdir):
    version, names = None, []
    with open(os.path.join(zdir, "tzdata.zi"), encoding="utf-8") as f:
        for line in f:
            m = re.match(r"# version (\S+)", line)
            if m:
                version = m.group(1)
            p = line.split()
            if p and p[0] == "Z":
                names.append(p[1])
            elif p and p[0] == "L":
                names.append(p[2])
    if not version:
        sys.exit("gen-tzdb: no '# version' line in tzdata.zi")
    names = sorted(set(names) - EXCLUDED)
    for tab in ("zone1970.tab", "zone.tab"):
        with open(os.path.join(zdir, tab), encoding="utf-8") as f:
            for line in f:
                if line.startswith("#") or not line.strip():
                    continue
                zone = line.rstrip("\n").split("\t")[2]
                if zone not in names:
                    sys.exit(f"gen-tzdb: {tab} names {zone}, missing from tzdata.zi")
    return version, names


def tzif_parts(data):
    """(transitions [(utc, offset)], footer) of a TZif v2+ file's 64-bit block."""
    if data[:4] != b"TZif" or data[4:5] not in (b"2", b"3", b"4"):
        raise ValueError("not TZif v2+")

    def counts(o):
        return struct.unpack(">6l", data[o + 20 : o + 44])

    isut, isstd, leap, time, typ, char = counts(0)
    o = 44 + time * 5 + typ * 6 + char + leap * 8 + isstd + isut
    isut, isstd, leap, time, typ, char = counts(o)
    o += 44
    times = struct.unpack(f">{time}q", data[o : o + 8 * time])
    o += 8 * time
    idx = data[o : o + time]
    o += time
    offs = [struct.unpack(">l", data[o + 6 * i : o + 6 * i + 4])[0] for i in range(typ)]
    o += 6 * typ + char + leap * 12 + isstd + isut
    footer = data[o:].strip(b"\n").decode("ascii")
    if not footer or "\n" in footer:
        raise ValueError("no single-line footer")
    return [(t, offs[i]) for t, i in zip(times, idx)], footer


def footer_only(rule):
    """A TZif v2 file with no transitions and only `rule` (for Python's zoneinfo)."""

    def block():
        head = b"TZif2" + b"\0" * 15 + struct.pack(">6l", 0, 0, 0, 0, 1, 4)
        return head + struct.pack(">lBB", 0, 0, 0) + b"XXX\0"

    return block() + block() + b"\n" + rule.encode() + b"\n"


def rule_disagrees(data, rule, start, end):
    """True when the footer alone gives other offsets than the file between start and end."""
    full = zoneinfo.ZoneInfo.from_file(io.BytesIO(data))
    only = zoneinfo.ZoneInfo.from_file(io.BytesIO(footer_only(rule)))
    trans, _ = tzif_parts(data)
    points = [t + d for t, _ in trans if start <= t < end for d in (-1, 0)]
    points += range(start, end, 3600 * 6)
    for p in points:
        at = dt.datetime.fromtimestamp(p, dt.timezone.utc)
        if at.astimezone(full).utcoffset() != at.astimezone(only).utcoffset():
            return True
    return False


def utc(year):
    return int(dt.datetime(year, 1, 1, tzinfo=dt.timezone.utc).timestamp())


OFFSETS_FROM, OFFSETS_UNTIL = 2025, 2030  # the years the offsets fixture covers


def offset_changes(data, start, end):
    """(offset at start, [(instant, offset from then on)] in [start, end)) of a TZif file,
    read by Python's zoneinfo: sampled every 6 hours and at the file's own transitions,
    each change bisected to the second."""
    z = zoneinfo.ZoneInfo.from_file(io.BytesIO(data))

    def off(t):
        at = dt.datetime.fromtimestamp(t, dt.timezone.utc)
        return int(at.astimezone(z).utcoffset().total_seconds())

    trans, _ = tzif_parts(data)
    points = sorted(
        set(range(start, end, 3600 * 6))
        | {t + d for t, _ in trans if start < t < end for d in (-1, 0)}
        | {end - 1}
    )
    first = off(start)
    changes, prev, prev_off = [], start, first
    for p in points[1:]:
        o = off(p)
        if o != prev_off:
            lo, hi = prev, p  # off(lo) == prev_off, off(hi) != prev_off
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if off(mid) == prev_off:
                    lo = mid
                else:
                    hi = mid
            changes.append((hi, off(hi)))
            prev_off = off(hi)
            if prev_off != o:
                sys.exit("gen-tzdb: two offset changes within 6 hours; sample more often")
        prev = p
    return first, changes


def write_offsets(path, zdir, version, names):
    start, end = utc(OFFSETS_FROM), utc(OFFSETS_UNTIL + 1)
    lines = [
        "# Generated by scripts/gen-tzdb.py: do not edit, run the script again.",
        f"# For every name of src/time/tzdb/data.rs: the UTC offset in seconds at {start}",
        f"# ({OFFSETS_FROM}-01-01 00:00 UTC), then each change before {end}"
        f" ({OFFSETS_UNTIL + 1}-01-01) as",
        "# UNIX_SECONDS=OFFSET_FROM_THEN_ON; `= NAME`: the same as the line of NAME above. Read",
        "# by Python's zoneinfo from the TZif files the table was made from.",
        f"version {version}",
        f"range {start} {end}",
    ]
    seen = {}  # the line of a zone -> its first name
    for n in names:
        with open(os.path.join(zdir, n), "rb") as f:
            first, changes = offset_changes(f.read(), start, end)
        line = " ".join([str(first)] + [f"{t}={o}" for t, o in changes])
        if line in seen:
            lines.append(f"{n} = {seen[line]}")
        else:
            seen[line] = n
            lines.append(f"{n} {line}")
    text = "\n".join(lines) + "\n"
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"gen-tzdb: wrote {path}: {len(names)} names, {len(seen)} distinct, {len(text)} bytes")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--zoneinfo", default=os.environ.get("TZDIR") or "/usr/share/zoneinfo")
    ap.add_argument("--from-year", type=int, default=2025)
    ap.add_argument("--until-year", type=int, default=2040)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--out", default=os.path.join(root, "src/time/tzdb/data.rs"))
    ap.add_argument("--offsets", default=os.path.join(root, "tests/fixtures/tzdb-offsets.txt"))
    a = ap.parse_args()
    zdir = a.zoneinfo
    version, names = read_names(zdir)
    start, end = utc(a.from_year), utc(a.until_year + 1)

    rules, lists = {}, []  # name -> rule; distinct transition lists
    special = {}  # name -> index into lists
    for n in names:
        with open(os.path.join(zdir, n), "rb") as f:
            data = f.read()
        trans, rule = tzif_parts(data)
        rules[n] = rule
        if rule_disagrees(data, rule, start, end):
            before = [off for t, off in trans if t < start]
            if not before:
                sys.exit(f"gen-tzdb: {n}: no transition before {a.from_year}")
            keep = [(start, before[-1])] + [(t, off) for t, off in trans if start <= t < end]
            for t, off in keep:
                if t % 60 or off % 60:
                    sys.exit(f"gen-tzdb: {n}: transition or offset not in whole minutes")
            keep = [(t // 60, off // 60) for t, off in keep]
            if keep not in lists:
                lists.append(keep)
            special[n] = lists.index(keep)
        if len(n.encode()) > MAX_NAME_BYTES or " " in n:
            sys.exit(f"gen-tzdb: odd name {n!r}")

    distinct = sorted(set(rules.values()))
    index = {r: i for i, r in enumerate(distinct)}
    groups = {}
    for n in names:
        region, _, leaf = n.rpartition("/")
        groups.setdefault(region + "/" if region else "", []).append(leaf)
    lines = []
    for region in sorted(groups):
        if region:
            lines.append(region)
        for leaf in sorted(groups[region]):
            full = region + leaf
            entry = f"{leaf} {index[rules[full]]}"
            if full in special:
                entry += f" {special[full]}"
            lines.append(entry)

    pkg = ""
    try:
        pkg = subprocess.run(
            ["dpkg-query", "-W", "-f=${Version}", "tzdata"],
            capture_output=True, text=True, check=False,
        ).stdout.strip()
    except OSError:
        pass
    users = {i: sorted(n for n, j in special.items() if j == i) for i in range(len(lists))}

    out = []
    w = out.append
    w("//! Generated by scripts/gen-tzdb.py: do not edit, run the script again.")
    w("//!")
    w(f"//! tzdata {version}" + (f" (Debian package tzdata {pkg})" if pkg else "")
      + f", from {zdir}: {len(names)} names,")
    w(f"//! {len(distinct)} distinct rules, {len(lists)} transition lists"
      f" ({a.from_year} through {a.until_year}).")
    w("//!")
    w("//! # Threads")
    w("//! Constant data.")
    w("")
    w("/// The tzdata release the table was made from.")
    w(f'pub const VERSION: &str = "{version}";')
    w("")
    w("/// Distinct POSIX TZ rules, one a line; [`NAMES`] refers to them by line number.")
    w('pub const RULES: &str = "\\')
    for r in distinct:
        assert '"' not in r and "\\" not in r
        w(r)
    w('";')
    w("")
    w("/// Zone names, one a line: a line ending in `/` starts a region (the names before")
    w("/// the first one have none); other lines are `LEAF RULE [LIST]`, the name's last")
    w("/// part, its line in [`RULES`] and, for the few zones whose coming transitions no")
    w("/// rule can say, its index in [`TRANSITIONS`].")
    w('pub const NAMES: &str = "\\')
    for line in lines:
        w(line)
    w('";')
    w("")
    w("/// Transitions the rules cannot say, as (minutes since 1970 UTC, offset in minutes")
    w(f"/// east of UTC from then on), ascending; the first is the offset on {a.from_year}-01-01.")
    w(f"pub static TRANSITIONS: [&[(u32, i16)]; {len(lists)}] = [")
    for i, lst in enumerate(lists):
        w(f"    // {', '.join(users[i])}")
        w("    &[")
        for t, off in lst:
            w(f"        ({t}, {off}),")
        w("    ],")
    w("];")
    text = "\n".join(out) + "\n"
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w", encoding="utf-8") as f:
        f.write(text)
    size = len("\n".join(distinct)) + len("\n".join(lines)) + 6 * sum(len(x) for x in lists)
    print(f"gen-tzdb: wrote {a.out}: tzdata {version}, {len(names)} names, "
          f"{len(distinct)} rules, {len(lists)} transition lists "
          f"({', '.join(sorted(special))}), about {size} bytes of data")
    write_offsets(a.offsets, zdir, version, names)


if __name__ == "__main__":
    main()
