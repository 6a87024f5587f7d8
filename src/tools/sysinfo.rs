//! The `system_info` tool: facts about the board the assistant runs on: model, CPU,
//! cores, load, memory, free disk for the workspace, uptime and temperatures.
//!
//! Everything comes from `/proc`, `/sys` and one `statvfs` call; a file that is missing
//! or unreadable is skipped (containers and odd kernels lack some), never an error.
//!
//! # Bounds
//! Each file is read up to `MAX_SYSINFO_FILE_BYTES`; at most `MAX_THERMAL_ZONES` zones are
//! reported. The answer is a few hundred bytes.
//!
//! # Threads
//! Worker threads (the tool hands its report there).
//!
//! # Blocking
//! File reads and `statvfs` (which can hang on a dead network mount): run on a worker.

use super::{ToolError, Tools};
use crate::chat::ToolSpec;
use crate::limits::{MAX_SYSINFO_FILE_BYTES, MAX_THERMAL_ZONES};
use std::borrow::Cow;
use std::io::Read;
use std::path::{Path, PathBuf};

pub const SYSTEM_INFO: ToolSpec = ToolSpec {
    name: Cow::Borrowed("system_info"),
    description: Cow::Borrowed(
        "Report facts about this device: board model, CPU model and cores, load averages, memory, free disk space for the workspace, uptime, and temperatures when sensors exist.",
    ),
    parameters: Cow::Borrowed(r#"{"type":"object","properties":{}}"#),
};

/// Where the facts are read (a seam for tests).
#[derive(Debug, Clone)]
pub struct Sources {
    pub proc_dir: PathBuf,
    pub sys_dir: PathBuf,
    pub device_tree_model: PathBuf,
    pub disk_path: PathBuf,
}

impl Sources {
    pub fn system(workspace: &Path) -> Sources {
        Sources {
            proc_dir: "/proc".into(),
            sys_dir: "/sys".into(),
            device_tree_model: "/proc/device-tree/model".into(),
            disk_path: workspace.to_path_buf(),
        }
    }
}

/// Read at most `MAX_SYSINFO_FILE_BYTES` of a file as text; `None` when unreadable.
fn read_small(p: &Path) -> Option<String> {
    let f = std::fs::File::open(p).ok()?;
    let mut buf = Vec::new();
    f.take(MAX_SYSINFO_FILE_BYTES).read_to_end(&mut buf).ok()?;
    Some(String::from_utf8_lossy(&buf).into_owned())
}

/// `key : value` lines (cpuinfo, meminfo): the first value of `key`.
fn field<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == key).then(|| v.trim())
    })
}

/// `1536000 kB` → bytes.
fn kib_field(text: &str, key: &str) -> Option<u64> {
    let v = field(text, key)?;
    let n: u64 = v.split_whitespace().next()?.parse().ok()?;
    Some(n.saturating_mul(1024))
}

/// `123456789` bytes → `117.7 MiB`.
pub fn human_bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// `90061` seconds → `1 d 1 h 1 min`.
fn human_secs(s: u64) -> String {
    let (d, h, m) = (s / 86_400, s % 86_400 / 3600, s % 3600 / 60);
    match (d, h) {
        (0, 0) => format!("{m} min"),
        (0, _) => format!("{h} h {m} min"),
        _ => format!("{d} d {h} h {m} min"),
    }
}

/// Collect the report (blocking; see the module documentation).
pub fn report(src: &Sources) -> String {
    let mut lines = Vec::new();
    if let Some(model) = read_small(&src.device_tree_model) {
        let model = model.trim_matches(['\0', ' ', '\n']);
        if !model.is_empty() {
            lines.push(format!("board: {model}"));
        }
    }
    lines.push(format!(
        "system: {} {}",
        std::env::consts::OS,
        std::env::consts::ARCH
    ));
    if let Some(release) = read_small(&src.proc_dir.join("sys/kernel/osrelease")) {
        lines.push(format!("kernel: {}", release.trim()));
    }
    let cpuinfo = read_small(&src.proc_dir.join("cpuinfo"));
    if let Some(cpu) = &cpuinfo {
        let model = [
            "model name",
            "Model",
            "Hardware",
            "cpu model",
            "uarch",
            "isa",
            "cpu",
        ]
        .iter()
        .find_map(|k| field(cpu, k).filter(|v| !v.is_empty()));
        if let Some(m) = model {
            lines.push(format!("cpu: {m}"));
        }
    }
    // Counted from the kernel's files: std's available_parallelism parses cgroups (and
    // costs kilobytes of code) to answer a different question.
    let online = read_small(&src.sys_dir.join("devices/system/cpu/online"))
        .and_then(|s| count_cpu_list(s.trim()));
    let listed = cpuinfo.as_deref().map(|c| {
        c.lines()
            .filter(|l| l.split(':').next().map(str::trim) == Some("processor"))
            .count() as u64
    });
    if let Some(n) = online.or(listed).filter(|n| *n > 0) {
        lines.push(format!("cores: {n}"));
    }
    if let Some(load) = read_small(&src.proc_dir.join("loadavg")) {
        let parts: Vec<&str> = load.split_whitespace().take(3).collect();
        if parts.len() == 3 {
            lines.push(format!(
                "load (1, 5, 15 min): {} {} {}",
                parts[0], parts[1], parts[2]
            ));
        }
    }
    if let Some(mem) = read_small(&src.proc_dir.join("meminfo")) {
        if let Some(total) = kib_field(&mem, "MemTotal") {
            let avail = kib_field(&mem, "MemAvailable").or_else(|| kib_field(&mem, "MemFree"));
            match avail {
                Some(a) => lines.push(format!(
                    "memory: {} available of {}",
                    human_bytes(a),
                    human_bytes(total)
                )),
                None => lines.push(format!("memory: {} total", human_bytes(total))),
            }
        }
        if let (Some(st), Some(sf)) = (kib_field(&mem, "SwapTotal"), kib_field(&mem, "SwapFree"))
            && st > 0
        {
            lines.push(format!(
                "swap: {} free of {}",
                human_bytes(sf),
                human_bytes(st)
            ));
        }
    }
    if let Ok(v) = rustix::fs::statvfs(&src.disk_path) {
        let free = v.f_bavail.saturating_mul(v.f_frsize);
        let total = v.f_blocks.saturating_mul(v.f_frsize);
        lines.push(format!(
            "disk (workspace): {} free of {}",
            human_bytes(free),
            human_bytes(total)
        ));
    }
    if let Some(up) = read_small(&src.proc_dir.join("uptime"))
        && let Some(secs) = up
            .split_whitespace()
            .next()
            .and_then(|s| s.split('.').next())
            .and_then(|s| s.parse::<u64>().ok())
    {
        lines.push(format!("uptime: {}", human_secs(secs)));
    }
    lines.extend(temperatures(&src.sys_dir.join("class/thermal")));
    lines.join("\n")
}

/// `0-3,5` (the kernel's CPU list) → 5; `None` when malformed.
fn count_cpu_list(s: &str) -> Option<u64> {
    let mut n = 0u64;
    for part in s.split(',') {
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a.trim().parse::<u64>().ok()?, b.trim().parse::<u64>().ok()?),
            None => {
                let a = part.trim().parse::<u64>().ok()?;
                (a, a)
            }
        };
        n = n.checked_add(b.checked_sub(a)?.checked_add(1)?)?;
    }
    Some(n)
}

/// `thermal_zoneN/temp` (millidegrees) with its `type`, in zone order.
fn temperatures(dir: &Path) -> Vec<String> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut zones: Vec<(u32, PathBuf)> = rd
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let n = name.strip_prefix("thermal_zone")?.parse().ok()?;
            Some((n, e.path()))
        })
        .take(256)
        .collect();
    zones.sort();
    zones
        .into_iter()
        .filter_map(|(n, p)| {
            let milli: i64 = read_small(&p.join("temp"))?.trim().parse().ok()?;
            let kind = read_small(&p.join("type"))
                .map(|t| t.trim().to_string())
                .filter(|t| !t.is_empty())
                .unwrap_or_else(|| format!("zone {n}"));
            Some(format!(
                "temperature ({kind}): {:.1} °C",
                milli as f64 / 1000.0
            ))
        })
        .take(MAX_THERMAL_ZONES)
        .collect()
}

pub async fn system_info(tools: &Tools) -> Result<String, ToolError> {
    let src = Sources::system(&tools.workspace);
    tools
        .workers
        .run(move || report(&src))
        .await
        .map_err(|_| ToolError::Failed("yoctoclaw is shutting down".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_root(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("yc-sysinfo-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("proc/sys/kernel")).unwrap();
        std::fs::create_dir_all(d.join("sys/class/thermal/thermal_zone0")).unwrap();
        std::fs::create_dir_all(d.join("sys/class/thermal/thermal_zone1")).unwrap();
        d
    }

    #[test]
    fn a_board_is_described_from_its_files() {
        let d = fake_root("full");
        let w = |p: &str, s: &str| std::fs::write(d.join(p), s).unwrap();
        w("model", "Raspberry Pi Zero 2 W Rev 1.0\0");
        w(
            "proc/cpuinfo",
            "processor\t: 0\nBogoMIPS\t: 38.40\nHardware\t: BCM2835\nModel\t\t: Raspberry Pi Zero 2 W\n",
        );
        w("proc/loadavg", "0.15 0.10 0.05 1/123 4567\n");
        w(
            "proc/meminfo",
            "MemTotal:         437924 kB\nMemFree:          100000 kB\nMemAvailable:     300000 kB\nSwapTotal:        102396 kB\nSwapFree:         102396 kB\n",
        );
        w("proc/uptime", "90061.52 170000.00\n");
        w("proc/sys/kernel/osrelease", "6.6.31+rpt-rpi-v8\n");
        w("sys/class/thermal/thermal_zone0/temp", "48312\n");
        w("sys/class/thermal/thermal_zone0/type", "cpu-thermal\n");
        w("sys/class/thermal/thermal_zone1/temp", "garbage\n");
        let src = Sources {
            proc_dir: d.join("proc"),
            sys_dir: d.join("sys"),
            device_tree_model: d.join("model"),
            disk_path: d.clone(),
        };
        let r = report(&src);
        assert!(r.contains("board: Raspberry Pi Zero 2 W Rev 1.0\n"), "{r}");
        assert!(r.contains("cpu: Raspberry Pi Zero 2 W"), "{r}");
        assert!(r.contains("load (1, 5, 15 min): 0.15 0.10 0.05"), "{r}");
        assert!(
            r.contains("memory: 293.0 MiB available of 427.7 MiB"),
            "{r}"
        );
        assert!(r.contains("uptime: 1 d 1 h 1 min"), "{r}");
        assert!(r.contains("kernel: 6.6.31+rpt-rpi-v8"), "{r}");
        assert!(r.contains("cores: 1\n"), "counted from cpuinfo: {r}");
        assert!(r.contains("temperature (cpu-thermal): 48.3 °C"), "{r}");
        assert!(r.contains("disk (workspace): "), "{r}");
        assert!(!r.contains("zone 1"), "an unreadable zone is skipped: {r}");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn missing_files_are_skipped() {
        let src = Sources {
            proc_dir: "/nonexistent/proc".into(),
            sys_dir: "/nonexistent/sys".into(),
            device_tree_model: "/nonexistent/model".into(),
            disk_path: "/nonexistent/ws".into(),
        };
        let r = report(&src);
        assert!(r.starts_with("system: "), "{r}");
        assert!(!r.contains("memory"));
    }

    #[test]
    fn the_real_system_answers_something() {
        let r = report(&Sources::system(&std::env::temp_dir()));
        assert!(r.contains("cores: "), "{r}");
    }

    #[test]
    fn sizes_and_durations_read_well() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_secs(59), "0 min");
        assert_eq!(human_secs(3660), "1 h 1 min");
        assert_eq!(count_cpu_list("0-3"), Some(4));
        assert_eq!(count_cpu_list("0-3,5,7-8"), Some(7));
        assert_eq!(count_cpu_list("3-1"), None);
        assert_eq!(count_cpu_list("x"), None);
    }
}
