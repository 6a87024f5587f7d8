//! What the soak reads about the gateway from /proc: resident memory (now and peak),
//! CPU time, threads, descendants (so figures cover the whole process tree), and a
//! /proc/PID/smaps breakdown by kind of mapping.
//!
//! # Bounds
//! Reads a handful of small files per sample; smaps is read once per report. Every
//! read failure is "no figure" (zero or `None`), never a panic: the process may exit
//! between two reads.

use std::path::Path;

/// Figures from /proc/PID/status, in KiB.
#[derive(Debug, Clone, Copy, Default)]
pub struct Status {
    pub rss_kib: u64,
    pub hwm_kib: u64,
    /// `RssAnon`: resident anonymous memory (heap, stacks), what no page cache backs.
    pub anon_kib: u64,
    pub threads: u64,
}

/// Resident memory now and at peak, and the thread count, of one process.
pub fn status(pid: u32) -> Option<Status> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let mut s = Status::default();
    for line in text.lines() {
        let mut it = line.split_whitespace();
        let (Some(k), Some(v)) = (it.next(), it.next()) else {
            continue;
        };
        let v: u64 = v.parse().unwrap_or(0);
        match k {
            "VmRSS:" => s.rss_kib = v,
            "VmHWM:" => s.hwm_kib = v,
            "RssAnon:" => s.anon_kib = v,
            "Threads:" => s.threads = v,
            _ => {}
        }
    }
    Some(s)
}

/// Proportional set size (/proc/PID/smaps_rollup `Pss:`), in KiB: each resident page
/// divided by the number of processes that map it.
pub fn pss_kib(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("Pss:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

/// The numeric fields of /proc/PID/stat after the command name.
fn stat_fields(pid: u32) -> Option<Vec<u64>> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = text.rsplit_once(')')?.1;
    Some(
        after
            .split_whitespace()
            .skip(1) // state letter
            .map(|f| f.parse::<i64>().unwrap_or(0).max(0) as u64)
            .collect(),
    )
}

/// CPU ticks (user + system) of `pid` and of its children it has waited for.
pub fn cpu_ticks(pid: u32) -> u64 {
    // After the state: ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
    // utime(10) stime(11) cutime(12) cstime(13).
    stat_fields(pid)
        .map(|f| f.get(10..14).map_or(0, |x| x.iter().sum()))
        .unwrap_or(0)
}

/// Major page faults of `pid` (pages it had to wait for the storage to read).
pub fn majflt(pid: u32) -> u64 {
    // After the state: ppid pgrp session tty tpgid flags minflt cminflt majflt(8).
    stat_fields(pid)
        .and_then(|f| f.get(8).copied())
        .unwrap_or(0)
}

/// Live descendants of `pid` (children, grandchildren …), bounded to 1,000.
pub fn descendants(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let mut todo = vec![pid];
    while let Some(p) = todo.pop() {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{p}/task")) else {
            continue;
        };
        for t in tasks.flatten() {
            let Ok(list) = std::fs::read_to_string(t.path().join("children")) else {
                continue;
            };
            for c in list
                .split_whitespace()
                .filter_map(|c| c.parse::<u32>().ok())
            {
                if out.len() < 1000 {
                    out.push(c);
                    todo.push(c);
                }
            }
        }
    }
    out
}

/// Resident KiB and CPU ticks of the live descendants of `pid`.
pub fn descendants_usage(pid: u32) -> (u64, u64) {
    descendants(pid).into_iter().fold((0, 0), |(r, c), d| {
        (r + status(d).map_or(0, |s| s.rss_kib), c + cpu_ticks(d))
    })
}

/// Clock ticks per second (`getconf CLK_TCK`, else the usual 100).
pub fn clk_tck() -> u64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
        .filter(|&n: &u64| n > 0)
        .unwrap_or(100)
}

/// Resident memory by kind of mapping, in KiB (from /proc/PID/smaps).
#[derive(Debug, Clone, Default)]
pub struct Breakdown {
    /// The binary's code (r-x) pages.
    pub exe_text: u64,
    /// The binary's read-only data (headers, relocations, .rodata, .eh_frame, relro).
    pub exe_ro: u64,
    /// The binary's writable data (.data, .bss, the GOT before relro).
    pub exe_rw: u64,
    /// Shared libraries (libc, ld.so …), code and data.
    pub libs: u64,
    /// The brk heap (`[heap]`).
    pub heap: u64,
    /// Anonymous read-write mappings: thread stacks, malloc arenas, large allocations.
    pub anon: u64,
    /// The main thread's stack.
    pub stack: u64,
    /// Everything else (vdso, vvar, other files).
    pub other: u64,
    /// Anonymous mappings with their size and resident KiB, biggest resident first.
    pub anon_maps: Vec<(u64, u64)>,
}

impl Breakdown {
    pub fn total(&self) -> u64 {
        self.exe_text
            + self.exe_ro
            + self.exe_rw
            + self.libs
            + self.heap
            + self.anon
            + self.stack
            + self.other
    }
}

/// Read /proc/PID/smaps and sum `Rss:` per kind; `exe` is the binary's path.
pub fn smaps(pid: u32, exe: &Path) -> Option<Breakdown> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/smaps")).ok()?;
    let exe = std::fs::canonicalize(exe).unwrap_or_else(|_| exe.to_path_buf());
    let exe = exe.to_string_lossy().into_owned();
    let mut b = Breakdown::default();
    // The mapping being read: (kind, size KiB).
    let mut cur: Option<(&str, u64)> = None;
    for line in text.lines() {
        let first = line.split_whitespace().next().unwrap_or("");
        if first.contains('-') && !first.ends_with(':') {
            // A mapping header: "start-end perms offset dev inode [path]".
            let parts: Vec<&str> = line.split_whitespace().collect();
            let perms = parts.get(1).copied().unwrap_or("");
            let path = parts.get(5).copied().unwrap_or("");
            let size = parts
                .first()
                .and_then(|r| r.split_once('-'))
                .and_then(|(a, z)| {
                    Some(
                        (u64::from_str_radix(z, 16).ok()? - u64::from_str_radix(a, 16).ok()?)
                            / 1024,
                    )
                })
                .unwrap_or(0);
            let kind = if path == exe {
                if perms.contains('x') {
                    "exe_text"
                } else if perms.contains('w') {
                    "exe_rw"
                } else {
                    "exe_ro"
                }
            } else if path.contains(".so") {
                "libs"
            } else if path == "[heap]" {
                "heap"
            } else if path == "[stack]" {
                "stack"
            } else if path.is_empty() {
                "anon"
            } else {
                "other"
            };
            cur = Some((kind, size));
        } else if first == "Rss:" {
            let kib: u64 = line
                .split_whitespace()
                .nth(1)
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            let Some((kind, size)) = cur else { continue };
            match kind {
                "exe_text" => b.exe_text += kib,
                "exe_ro" => b.exe_ro += kib,
                "exe_rw" => b.exe_rw += kib,
                "libs" => b.libs += kib,
                "heap" => b.heap += kib,
                "stack" => b.stack += kib,
                "anon" => {
                    b.anon += kib;
                    if kib > 0 {
                        b.anon_maps.push((size, kib));
                    }
                }
                _ => b.other += kib,
            }
        }
    }
    b.anon_maps.sort_by_key(|m| std::cmp::Reverse(m.1));
    Some(b)
}

/// Storage figures from /proc/PID/io: bytes the process caused to be written to storage
/// (counted when a page-cache page is first dirtied, so rewriting a page before it is
/// written back costs nothing more) and its write-type system calls.
#[derive(Debug, Clone, Copy, Default)]
pub struct Io {
    pub write_bytes: u64,
    /// Bytes the process caused to be read from storage (page-cache misses, read-ahead
    /// included).
    pub read_bytes: u64,
    pub syscw: u64,
}

/// /proc/PID/io of one process (all its threads).
pub fn io(pid: u32) -> Option<Io> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/io")).ok()?;
    let mut io = Io::default();
    for line in text.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let v: u64 = v.trim().parse().unwrap_or(0);
        match k {
            "write_bytes" => io.write_bytes = v,
            "read_bytes" => io.read_bytes = v,
            "syscw" => io.syscw = v,
            _ => {}
        }
    }
    Some(io)
}

/// Context switches (voluntary + involuntary) of every thread of `pid`: each is a
/// wake-up, so an idle process whose count does not move never woke.
pub fn ctx_switches(pid: u32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    let mut n = 0;
    for t in tasks.flatten() {
        let Ok(text) = std::fs::read_to_string(t.path().join("status")) else {
            continue;
        };
        for line in text.lines() {
            if let Some(v) = line
                .strip_prefix("voluntary_ctxt_switches:")
                .or_else(|| line.strip_prefix("nonvoluntary_ctxt_switches:"))
            {
                n += v.trim().parse::<u64>().unwrap_or(0);
            }
        }
    }
    n
}

/// CPU time in nanoseconds of every live thread of `pid` (/proc/PID/task/*/schedstat):
/// finer than clock ticks, for the per-100-messages curve.
pub fn cpu_ns(pid: u32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}
