#!/usr/bin/env python3
"""Link yoctoclaw through zig, then again with its functions in a chosen order.

Called by zcc (only for the link of the yoctoclaw binary) as

    relink.py ORDER-LIST ZIG-LAUNCHER... -- cc -target T ARGS...

Why (docs/DECISIONS.md 104): the kernel maps a binary's code in 64 KiB runs around each
page it touches, so which functions sit together decides how much code an idle gateway
keeps resident. ld.lld can place sections in a given order (--symbol-ordering-file), but
zig's cc driver refuses that option; zig prints the ld.lld command it runs
(ZIG_VERBOSE_LINK=1), so this script runs that command again with the ordering added.

ORDER-LIST (boards/link-order.txt) names functions without their per-build parts: Rust's
v0 symbols demangled without their crates' ids, LLVM's `.llvm.N` suffix taken off (see
`keys`), so one list serves every target and survives rebuilds. Names absent from a target
are skipped.

Whatever goes wrong after zig's own link succeeded (no ld.lld line, a failed relink, an
unreadable symbol table), zig's output is kept as it is and one warning line is printed:
the ordering only moves code, it never decides whether the build works. With
ZCC_ORDER_STRICT=1 (scripts/ci-boards.sh) such a failure fails the link instead, so CI
notices when a zig release changes what this relies on.

`relink.py --self-test ZCC` links a small C program through ZCC (a boards/zig symlink)
with a list that reverses its functions and checks their order in the result.
"""
import os
import re
import struct
import subprocess
import sys

STRIP_ARGS = {"-s", "--strip-all", "-S", "--strip-debug"}
LLVM_SUFFIX = re.compile(r"\.llvm\.\d+$")
CRATE_ID = re.compile(r"\[[0-9a-f]+\]")


def keys(names):
    """Each symbol's name without the parts that change between builds and targets.

    Rust's v0 symbols are demangled (`c++filt`, binutils) and their crates' ids taken off:
    `<alloc[24c7c48746ea4456]::vec::Vec<u8>>::push` -> `<alloc::vec::Vec<u8>>::push`. Each
    instance of a generic function keeps its own key, so the list places only the
    instances that run. Other names (C) stay as they are."""
    names = [LLVM_SUFFIX.sub("", n) for n in names]
    rust = [n for n in names if n.startswith("_R")]
    if rust:
        p = subprocess.run(["c++filt"], input="\n".join(rust) + "\n", capture_output=True,
                           text=True, check=True)
        plain = p.stdout.split("\n")[: len(rust)]
        if len(plain) != len(rust):
            raise ValueError("c++filt returned %d names for %d" % (len(plain), len(rust)))
        demangled = dict(zip(rust, (CRATE_ID.sub("", d) for d in plain)))
        names = [demangled.get(n, n) for n in names]
    return names


def symbols(path):
    """(name, address) of each FUNC symbol in an ELF file's .symtab (32/64-bit, little-endian)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[5] != 1:
        raise ValueError("not a little-endian ELF file")
    wide = data[4] == 2
    shoff, = struct.unpack_from("<Q" if wide else "<I", data, 0x28 if wide else 0x20)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A if wide else 0x2E)
    fmt = "<IIQQQQIIQQ" if wide else "<IIIIIIIIII"
    # Each section: (name, type, flags, addr, offset, size, link, info, align, entsize).
    secs = [struct.unpack_from(fmt, data, shoff + i * shentsize) for i in range(shnum)]
    out = []
    for sec in secs:
        if sec[1] != 2 or sec[9] == 0:  # SHT_SYMTAB
            continue
        stroff, strsize = secs[sec[6]][4], secs[sec[6]][5]
        for at in range(sec[4], sec[4] + sec[5], sec[9]):
            if wide:
                st_name, st_info, _, _, value = struct.unpack_from("<IBBHQ", data, at)
            else:
                st_name, value, _, st_info = struct.unpack_from("<IIIB", data, at)
            if st_info & 0xF != 2 or st_name == 0 or st_name >= strsize:  # STT_FUNC
                continue
            end = data.index(b"\0", stroff + st_name)
            out.append((data[stroff + st_name:end].decode("utf-8", "replace"), value))
    return out


def ordering(order_list, symbols):
    """The binary's symbols in the list's order, then nothing else."""
    by_key = {}
    for s, k in zip(symbols, keys(symbols)):
        by_key.setdefault(k, []).append(s)
    out, seen = [], set()
    with open(order_list, encoding="utf-8") as f:
        for line in f:
            k = line.strip()
            if not k or k.startswith("#") or k in seen:
                continue
            seen.add(k)
            out.extend(sorted(by_key.get(k, ())))
    return out


def relink(order_list, zig, ld_args):
    if "-o" not in ld_args:
        raise ValueError("no -o in zig's ld.lld command")
    at = ld_args.index("-o") + 1
    out = ld_args[at]
    full, ordered, order_file = out + ".syms", out + ".ordered", out + ".order"
    try:
        # Once without stripping, for the names of the functions this build holds.
        args = [a for a in ld_args if a not in STRIP_ARGS]
        args[args.index("-o") + 1] = full
        subprocess.run(zig + ["ld.lld"] + args, check=True)
        names = ordering(order_list, [n for n, _ in symbols(full)])
        with open(order_file, "w", encoding="utf-8") as f:
            f.write("".join(n + "\n" for n in names))
        args = list(ld_args)
        args[at] = ordered
        args += ["--symbol-ordering-file=" + order_file, "--no-warn-symbol-ordering"]
        subprocess.run(zig + ["ld.lld"] + args, check=True)
        os.replace(ordered, out)
    finally:
        for p in (full, ordered, order_file):
            if os.path.exists(p):
                os.remove(p)


def main(argv):
    sep = argv.index("--")
    order_list, zig, cc = argv[0], argv[1:sep], argv[sep + 1:]
    env = dict(os.environ, ZIG_VERBOSE_LINK="1")
    p = subprocess.run(zig + cc, env=env, stderr=subprocess.PIPE)
    ld_line = None
    for line in p.stderr.decode("utf-8", "replace").splitlines(keepends=True):
        # Verbose zig also prints the commands of a first build of its libc (`ar rcs`,
        # `ld.lld -r`); the link of the binary is the last ld.lld command.
        at = line.find("ld.lld ")
        if at >= 0 and not line[at:].startswith("ld.lld -r "):
            ld_line, line = line[at:], line[:at]
        if line.strip() and not line.startswith(("ar rcs ", "ld.lld -r ")):
            sys.stderr.write(line)
    if p.returncode != 0:
        return p.returncode
    try:
        if ld_line is None:
            raise ValueError("zig printed no ld.lld command")
        relink(order_list, zig, ld_line.split()[1:])
    except (OSError, ValueError, IndexError, struct.error, subprocess.CalledProcessError) as e:
        if os.environ.get("ZCC_ORDER_STRICT") == "1":
            sys.stderr.write("relink.py: error: the ordered relink failed (%s)\n" % e)
            return 1
        sys.stderr.write("relink.py: warning: functions left in zig's order (%s)\n" % e)
    return 0


def self_test(zcc):
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        src, order, out = os.path.join(d, "t.c"), os.path.join(d, "order.txt"), os.path.join(d, "yoctoclaw-selftest")
        names = ["yc_first", "yc_second", "yc_third"]
        with open(src, "w") as f:
            for i, n in enumerate(names):
                f.write("__attribute__((noinline)) int %s(int x) { return x * %d + %d; }\n" % (n, i + 3, i))
            f.write("int main(int c, char **v) { (void)v; return %s; }\n" % " + ".join(n + "(c)" for n in names))
        with open(order, "w") as f:
            f.write("# test\n" + "".join(n + "\n" for n in reversed(names)))
        v0 = "_RNvMst_NtCs4yAG18Rosij_4core4cellINtB5_7RefCellINtNtCs39MpMoJ93Ks_5alloc3vec3VecNtNtNtCsbt6nHkH9HDV_9yoctoclaw5agent8approval7PendingEE10borrow_mutB1m_.llvm.42"
        want = "<core::cell::RefCell<alloc::vec::Vec<yoctoclaw::agent::approval::Pending>>>::borrow_mut"
        if keys([v0, "sqlite3VdbeExec"]) != [want, "sqlite3VdbeExec"]:
            print("relink.py self-test: FAIL: keys() gave %s" % keys([v0, "sqlite3VdbeExec"]))
            return 1
        env = dict(os.environ, YOCTO_LINK_ORDER=order, ZCC_ORDER_STRICT="1")
        subprocess.run([zcc, "-O2", "-ffunction-sections", src, "-o", out], env=env, check=True)
        got = dict(symbols(out))
        where = [got.get(n) for n in reversed(names)]
        if None in where or where != sorted(where):
            print("relink.py self-test: FAIL: functions at %s, expected in the list's order" % where)
            return 1
        print("relink.py self-test: ok (%s placed in the list's order)" % ", ".join(reversed(names)))
        return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--self-test"] and len(sys.argv) == 3:
        sys.exit(self_test(sys.argv[2]))
    sys.exit(main(sys.argv[1:]))
