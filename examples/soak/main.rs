//! The footprint soak: runs the release `yoctoclaw gateway` against a fake Telegram Bot
//! API and an instant fake OpenAI-compatible model (both in this process, on loopback),
//! drives N messages from 8 chats through it, and reports the gateway's memory, CPU and
//! speed as a table and as one `BENCH key=value …` line. No network, no API key.
//!
//! Why it exists: the footprint budgets (README, "Footprint") are measured here, never
//! by timed unit tests. `scripts/bench-footprint.sh` builds and runs it;
//! `scripts/ci-footprint.sh` runs a short soak with `--max-peak-kib` as a regression guard.
//!
//! What a soak does: onboard a temporary home, seed `--seed-memories` memories, start the
//! gateway, wait until it polls, let it sit idle, then send messages (35 % tool turns:
//! read_file, list_dir, memory_store, memory_search; 5 % replies over 4,096 characters;
//! 5 % a provider 500 first, with `Retry-After: 0`, retried at once), one turn in flight per chat.
//! Figures are for the gateway's process tree; the fakes' CPU (this process) is not in
//! them. `YOCTOCLAW_*` variables of the soak's environment reach the gateway (config
//! overrides such as `YOCTOCLAW_MEMORY_CACHE_KIB=64`, for experiments).
//!
//! Usage: `soak --bin PATH [-n N] [--chats C] [--version-runs R] [--seed-memories M]
//! [--idle-secs S] [--quiet-secs Q] [--max-peak-kib K] [--alloc] [--plain] [--burst] [--tls]
//! [--syncs] [--json FILE] [--keep-home] [--phase-cmd CMD] [--heartbeat-mins M] [--cold]
//! [--cgroup DIR] [--deadline-secs S]`
//! (`--plain`: every turn a plain answer, for the cost of the simplest message;
//! `--burst`: all N messages arrive at once, as after a reboot or a Wi-Fi outage, and
//! each chat's waiting messages are answered as collected turns; `--tls`: both fakes serve
//! HTTPS with a CA made for the run, which the gateway trusts through `tls.ca_file`). The
//! report counts the connections each fake accepted (over TLS: the handshakes), during the
//! traffic and in all: kept-alive connections make them few.
//!
//! Storage: bytes the gateway caused to be written (`/proc/PID/io` `write_bytes`: a page
//! counts when it is first dirtied, which is what an SD card ends up writing) and write
//! calls, per message. `--syncs` also counts the disk syncs (`fsync`, `fdatasync`) during
//! the traffic by attaching `strace -c` (slows the gateway: CPU figures of such a run do
//! not count). `--quiet-secs Q`: after the traffic, the gateway sits idle Q seconds with
//! its long poll held; the soak counts writes and wake-ups (context switches of all its
//! threads) from second 2 to second 32 of that, and samples RSS at the end ("idle after
//! traffic"). `--json FILE` writes every figure, with RSS and CPU per 100 messages, as JSON
//! (`scripts/footprint-chart.py` draws them).
//!
//! `--phase-cmd CMD`: run `CMD PHASE PID` (and wait for it) where a phase ends: `start`
//! (start-up and the idle seconds before the traffic), `traffic`, `quiet` (before the
//! gateway is stopped), e.g. to dump a profiler's counters per phase
//! (`callgrind_control --dump`).
//! `--heartbeat-mins M`: the gateway's heartbeat on, every M minutes (at least 5), with a
//! task in HEARTBEAT.md and its check-in delivered to the first chat: a quiet phase longer
//! than M minutes then holds a heartbeat turn.
//!
//! Memory as a board's limit sees it (`scripts/bench-floor.py`): `--cold` starts the
//! gateway from a fresh copy of `--bin` whose pages, and those of the prepared home, were
//! dropped from the page cache (so the gateway is charged for its code and its database
//! as on a board after a boot); `--cgroup DIR` starts it inside that memory cgroup (it
//! joins between fork and exec, so start-up is charged too); `--deadline-secs S` fails the
//! soak when the traffic takes longer than S seconds. Besides VmRSS and VmHWM the soak
//! samples RssAnon (anonymous memory: heap, stacks) and PSS (/proc/PID/smaps_rollup: each
//! page divided by the processes mapping it) during the traffic. Start-up is reported as
//! the time until the first poll (10 ms resolution), with the gateway's major page faults
//! and the bytes it read from storage by then (`start_ms`, `start_majflt`,
//! `start_read_kib`): what a cold binary costs the card.
//!
//! # Bounds
//! A turn that makes no progress for `STALL_SECS` ends the soak with an error (exit 1),
//! printing the gateway log's tail. Exit 1 too when `--max-peak-kib` is exceeded, or when
//! the traffic outlasts `--deadline-secs`.
mod cold;
mod fake_bot;
#[path = "../../tests/support/fake_http.rs"]
mod fake_http;
mod fake_model;
mod plan;
mod procfs;
#[path = "../../tests/support/tls.rs"]
mod tls;

use fake_bot::FakeBot;
use fake_model::FakeModel;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// No reply for this long ends the soak as failed.
const STALL_SECS: u64 = 30;
/// How long to wait for the gateway's first poll.
const START_SECS: u64 = 30;
/// A realistic bot token shape (the fake accepts anything).
const TOKEN: &str = "123456789:AAHdQwErTyUiOpAsDfGhJkLzXcVbNm12345";
/// An API key (an https provider needs one; the fake accepts anything).
const API_KEY: &str = "sk-soak-not-a-real-key";
/// The CA file in the soak's home (`--tls`).
const CA_FILE: &str = "soak-ca.pem";

#[derive(Clone)]
struct Opts {
    bin: PathBuf,
    n: u64,
    chats: usize,
    version_runs: usize,
    seed_memories: u64,
    idle_secs: u64,
    max_peak_kib: Option<u64>,
    alloc: bool,
    keep_home: bool,
    plain: bool,
    tls: bool,
    burst: bool,
    quiet_secs: u64,
    syncs: bool,
    json: Option<PathBuf>,
    phase_cmd: Option<PathBuf>,
    heartbeat_mins: u64,
    cold: bool,
    cgroup: Option<PathBuf>,
    deadline_secs: Option<u64>,
}

fn usage() -> ! {
    eprintln!(
        "usage: soak --bin PATH [-n N] [--chats C] [--version-runs R] [--seed-memories M] [--idle-secs S] [--quiet-secs Q] [--max-peak-kib K] [--alloc] [--plain] [--burst] [--tls] [--syncs] [--json FILE] [--keep-home] [--phase-cmd CMD] [--heartbeat-mins M] [--cold] [--cgroup DIR] [--deadline-secs S]"
    );
    std::process::exit(2)
}

fn opts() -> Opts {
    let mut o = Opts {
        bin: PathBuf::new(),
        n: 1000,
        chats: 8,
        version_runs: 200,
        seed_memories: 500,
        idle_secs: 2,
        max_peak_kib: None,
        alloc: false,
        keep_home: false,
        plain: false,
        tls: false,
        burst: false,
        quiet_secs: 0,
        syncs: false,
        json: None,
        phase_cmd: None,
        heartbeat_mins: 0,
        cold: false,
        cgroup: None,
        deadline_secs: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut num = || -> u64 {
            args.next()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| usage())
        };
        match a.as_str() {
            "-n" => o.n = num().max(1),
            "--chats" => o.chats = num().clamp(1, 64) as usize,
            "--version-runs" => o.version_runs = num() as usize,
            "--seed-memories" => o.seed_memories = num(),
            "--idle-secs" => o.idle_secs = num(),
            "--max-peak-kib" => o.max_peak_kib = Some(num()),
            "--alloc" => o.alloc = true,
            "--keep-home" => o.keep_home = true,
            "--plain" => o.plain = true,
            "--tls" => o.tls = true,
            "--burst" => o.burst = true,
            "--quiet-secs" => o.quiet_secs = num(),
            "--syncs" => o.syncs = true,
            "--heartbeat-mins" => o.heartbeat_mins = num(),
            "--cold" => o.cold = true,
            "--deadline-secs" => o.deadline_secs = Some(num().max(1)),
            "--cgroup" => {
                o.cgroup = Some(args.next().map(PathBuf::from).unwrap_or_else(|| usage()))
            }
            "--json" => o.json = Some(args.next().map(PathBuf::from).unwrap_or_else(|| usage())),
            "--phase-cmd" => {
                o.phase_cmd = Some(args.next().map(PathBuf::from).unwrap_or_else(|| usage()))
            }
            "--bin" => o.bin = args.next().map(PathBuf::from).unwrap_or_else(|| usage()),
            _ => usage(),
        }
    }
    if o.bin.as_os_str().is_empty() {
        usage()
    }
    o
}

fn main() {
    let o = opts();
    match run(&o) {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("soak: {e}");
            std::process::exit(1)
        }
    }
}

/// One memory sample of the gateway's tree.
#[derive(Debug, Clone, Copy, Default)]
struct Mem {
    rss_kib: u64,
    hwm_kib: u64,
    anon_kib: u64,
    threads: u64,
}

fn sample(pid: u32) -> Mem {
    let s = procfs::status(pid).unwrap_or_default();
    let (child_rss, _) = procfs::descendants_usage(pid);
    Mem {
        rss_kib: s.rss_kib + child_rss,
        hwm_kib: s.hwm_kib,
        anon_kib: s.anon_kib,
        threads: s.threads,
    }
}

fn cpu_ticks(pid: u32) -> u64 {
    procfs::cpu_ticks(pid) + procfs::descendants_usage(pid).1
}

/// `allocs bytes live peak` from the bench-alloc stats file.
fn alloc_stats(path: &Path) -> Option<[u64; 4]> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut out = [0u64; 4];
    for (i, k) in ["allocs=", "bytes=", "live=", "peak="].iter().enumerate() {
        let v = text.split_whitespace().find_map(|w| w.strip_prefix(k))?;
        out[i] = v.parse().ok()?;
    }
    Some(out)
}

fn temp_home() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("yc-soak-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Onboard, write the config, a notes file for read_file, and seed memories.
fn prepare_home(
    o: &Opts,
    home: &Path,
    model: &FakeModel,
    bot: &FakeBot,
    ca: Option<&tls::TestCa>,
) -> Result<(), String> {
    let out = Command::new(&o.bin)
        .arg("--home")
        .arg(home)
        .arg("onboard")
        .env_clear()
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", o.bin.display()))?;
    if !out.status.success() {
        return Err(format!(
            "onboard failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let allow: Vec<String> = bot.user_ids().iter().map(|i| format!("\"{i}\"")).collect();
    let tls_key = match ca {
        Some(ca) => {
            ca.write_pem(&home.join(CA_FILE));
            format!(r#"  "tls": {{ "ca_file": "{CA_FILE}" }},"#)
        }
        None => String::new(),
    };
    let heartbeat = match bot.user_ids().first() {
        Some(first) if o.heartbeat_mins > 0 => format!(
            r#"  "heartbeat": {{ "enabled": true, "interval_mins": {}, "deliver_to": "telegram:{first}" }},"#,
            o.heartbeat_mins
        ),
        _ => String::new(),
    };
    let config = format!(
        r#"{{
  "provider": {{ "kind": "openai", "base_url": "{}", "model": "fake-model", "stream": false }},
  "telegram": {{ "enabled": true, "api_base": "{}", "allow_from": [{}], "poll_timeout_secs": 50 }},
{tls_key}
{heartbeat}
  "log_level": "info"
}}
"#,
        model.base_url(),
        bot.server.url(),
        allow.join(",")
    );
    std::fs::write(home.join("config.json"), config).map_err(|e| e.to_string())?;
    let notes = home.join("workspace").join("notes");
    std::fs::create_dir_all(&notes).map_err(|e| e.to_string())?;
    let today: String = (0..40)
        .map(|i| format!("- {i}: water the tomatoes, check the soil, note the weather\n"))
        .collect();
    std::fs::write(notes.join("today.md"), today).map_err(|e| e.to_string())?;
    if o.heartbeat_mins > 0 {
        let tasks = "# Heartbeat\n- Check the notes folder and tell me what is new.\n";
        std::fs::write(home.join("workspace").join("HEARTBEAT.md"), tasks)
            .map_err(|e| e.to_string())?;
    }
    if o.seed_memories > 0 {
        seed_memories(&home.join("yoctoclaw.db"), o.seed_memories)?;
    }
    Ok(())
}

/// Store `n` memories the way a long-used assistant would have them: varied facts, one
/// in ten `core`, some sharing words with the soak's messages.
fn seed_memories(db: &Path, n: u64) -> Result<(), String> {
    use yoctoclaw::store::Db;
    use yoctoclaw::store::memory::Category;
    const WHO: &[&str] = &[
        "Anna",
        "the owner",
        "Dad",
        "Mum",
        "the neighbour",
        "Tom",
        "the landlord",
        "Sara",
    ];
    const DOES: &[&str] = &[
        "prefers",
        "asked about",
        "booked",
        "forgot",
        "paid for",
        "wants to try",
        "recommended",
        "is allergic to",
        "bought",
        "cancelled",
        "moved",
        "likes",
    ];
    const WHAT: &[&str] = &[
        "oat milk in coffee",
        "the blue bicycle",
        "a table at the Italian place",
        "the gym membership",
        "the electricity bill",
        "a trip to Porto",
        "the new router",
        "peanuts",
        "green tea",
        "the piano lessons",
        "the car service",
        "a standing desk",
        "the dentist",
        "the garden hose",
        "running shoes",
        "the library books",
        "the heating repair",
        "a birthday cake",
    ];
    const WHEN: &[&str] = &[
        "last Monday",
        "in March",
        "every Friday",
        "before the holidays",
        "this morning",
        "next week",
        "twice a month",
        "on weekends",
    ];
    let db = Db::open(db, 256).map_err(|e| e.to_string())?;
    let _ = db.conn.execute_batch("BEGIN");
    let pick = |list: &[&'static str], x: u64| list[(x % list.len() as u64) as usize];
    for i in 0..n {
        let cat = match i % 10 {
            0 => Category::Core,
            1..=4 => Category::Daily,
            5..=7 => Category::Conversation,
            _ => Category::Custom,
        };
        let h = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 16;
        let text = format!(
            "{} {} {} {}",
            pick(WHO, h),
            pick(DOES, h >> 8),
            pick(WHAT, h >> 16),
            pick(WHEN, h >> 24)
        );
        db.memory_store(&format!("seed-{i}"), &text, cat, 1_700_000_000)
            .map_err(|e| e.to_string())?;
    }
    let _ = db.conn.execute_batch("COMMIT");
    Ok(())
}

fn start_gateway(o: &Opts, home: &Path, log: &Path, stats: &Path) -> Result<Child, String> {
    let log_file = std::fs::File::create(log).map_err(|e| e.to_string())?;
    let mut c = Command::new(&o.bin);
    c.arg("--home")
        .arg(home)
        .arg("gateway")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("TELEGRAM_BOT_TOKEN", TOKEN)
        .env("YOCTOCLAW_API_KEY", API_KEY)
        // Config overrides for experiments (YOCTOCLAW_MEMORY_CACHE_KIB=64 …) pass through.
        .envs(std::env::vars_os().filter(|(k, _)| {
            k.to_str()
                .is_some_and(|k| k.starts_with("YOCTOCLAW_") && k != "YOCTOCLAW_HOME")
        }))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log_file);
    if o.alloc {
        c.env("YOCTOCLAW_ALLOC_STATS", stats);
    }
    if let Some(dir) = &o.cgroup {
        cold::join_cgroup(&mut c, dir)?;
    }
    c.spawn()
        .map_err(|e| format!("cannot start the gateway: {e}"))
}

/// A file removed when this goes out of scope (the cold copy of the binary).
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn log_tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

/// Everything the report prints.
#[derive(Default)]
struct Report {
    n: u64,
    chats: usize,
    idle: Mem,
    after100: Mem,
    checkpoints: Vec<(u64, u64)>,
    end: Mem,
    peak_kib: u64,
    peak_sampled_kib: u64,
    /// Sampled during the traffic: RssAnon and PSS peaks; PSS after start and at the end.
    anon_peak_kib: u64,
    pss_peak_kib: u64,
    pss_idle_kib: u64,
    pss_end_kib: u64,
    /// `--cold`: KiB of the binary's copy in the page cache just before the gateway started.
    bin_cached_kib: Option<u64>,
    /// Start-up, from the start until the first poll: its time (10 ms resolution), the
    /// gateway's major page faults (each a read of the storage) and the bytes it read.
    start_ms: u64,
    start_majflt: u64,
    start_read_kib: u64,
    cpu_idle_s: f64,
    cpu_s: f64,
    idle_secs: u64,
    traffic_s: f64,
    t200_s: Option<f64>,
    lat_p50_ms: f64,
    lat_p99_ms: f64,
    version_med_ms: f64,
    version_p90_ms: f64,
    bin_bytes: u64,
    smaps: procfs::Breakdown,
    idle_smaps: procfs::Breakdown,
    alloc: Option<([u64; 4], [u64; 4])>,
    exit_ok: bool,
    exit_ms: u128,
    log_warn: usize,
    log_error: usize,
    /// Connections the fakes accepted (bot, model): before the traffic, at its end.
    conns_start: (u64, u64),
    conns_end: (u64, u64),
    /// Per 100 messages answered: (messages, RSS KiB, gateway CPU ns since the traffic began).
    series: Vec<(u64, u64, u64)>,
    /// Storage during the traffic: bytes written, write calls.
    io_traffic: (u64, u64),
    /// Disk syncs during the traffic (`--syncs`).
    syncs: Option<u64>,
    quiet: Option<Quiet>,
}

/// The quiet period after the traffic (`--quiet-secs`).
#[derive(Default)]
struct Quiet {
    secs: u64,
    /// The measured window (seconds) and what happened in it.
    window_secs: u64,
    write_bytes: u64,
    syscw: u64,
    wakeups: u64,
    polls: u64,
    /// At the end of the quiet period.
    mem: Mem,
    smaps: procfs::Breakdown,
}

fn run(o: &Opts) -> Result<i32, String> {
    let ca = o.tls.then(|| tls::TestCa::new("yoctoclaw soak CA"));
    let model = FakeModel::start(o.plain, ca.as_ref());
    let bot = FakeBot::start(o.chats, o.n, o.burst, ca.as_ref());
    let home = temp_home();
    prepare_home(o, &home, &model, &bot, ca.as_ref())?;
    // `--cold`: the gateway runs a fresh copy of the binary (beside the home, on the same
    // file system), and neither it nor the home is in the page cache when it starts.
    let copy = o.cold.then(|| RemoveOnDrop(home.with_extension("bin")));
    let mut gw = o.clone();
    let mut bin_cached_kib = None;
    if let Some(RemoveOnDrop(copy)) = &copy {
        cold::copy_cold(&o.bin, copy)?;
        cold::drop_cached(&home)?;
        bin_cached_kib = cold::resident_kib(copy);
        gw.bin = copy.clone();
    }
    let o = &gw;
    let log = home.join("gateway.log");
    let stats = home.join("alloc.stats");
    let tck = procfs::clk_tck() as f64;
    let mut child = start_gateway(o, &home, &log, &stats)?;
    let pid = child.id();
    let result = soak(o, &bot, &model, &mut child, pid, tck, &stats);
    let mut r = match result {
        Ok(r) => Report {
            bin_cached_kib,
            ..r
        },
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            let tail = log_tail(&log);
            if !o.keep_home {
                let _ = std::fs::remove_dir_all(&home);
            }
            return Err(format!("{e}\n--- gateway log (tail) ---\n{tail}"));
        }
    };
    // Stop: SIGTERM, as a service manager would.
    bot.stop();
    let t = Instant::now();
    let _ = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status();
    let status = loop {
        if let Ok(Some(st)) = child.try_wait() {
            break Some(st);
        }
        if t.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    r.exit_ms = t.elapsed().as_millis();
    r.exit_ok = status.is_some_and(|s| s.success());
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    r.log_warn = text.lines().filter(|l| l.contains(" WARN ")).count();
    r.log_error = text.lines().filter(|l| l.contains(" ERROR ")).count();
    if !o.alloc {
        version_times(o, &mut r);
    }
    r.bin_bytes = std::fs::metadata(&o.bin).map(|m| m.len()).unwrap_or(0);
    print_report(o, &r, &model, &bot);
    if o.keep_home {
        eprintln!("soak: home kept at {}", home.display());
    } else {
        let _ = std::fs::remove_dir_all(&home);
    }
    let mut code = 0;
    if let Some(max) = o.max_peak_kib
        && r.peak_kib > max
    {
        eprintln!(
            "soak: FAIL: peak RSS {} KiB is over the limit of {max} KiB",
            r.peak_kib
        );
        code = 1;
    }
    if !r.exit_ok {
        eprintln!("soak: FAIL: the gateway did not stop cleanly on SIGTERM");
        code = 1;
    }
    Ok(code)
}

/// Idle, traffic, end samples; returns the report without the stop and version parts.
fn soak(
    o: &Opts,
    bot: &FakeBot,
    model: &FakeModel,
    child: &mut Child,
    pid: u32,
    tck: f64,
    stats: &Path,
) -> Result<Report, String> {
    let mut r = Report {
        n: o.n,
        chats: o.chats,
        idle_secs: o.idle_secs,
        ..Report::default()
    };
    let alive = |child: &mut Child| -> Result<(), String> {
        match child.try_wait() {
            Ok(Some(st)) => Err(format!("the gateway exited ({st})")),
            _ => Ok(()),
        }
    };
    // Started: the first poll arrived.
    let t = Instant::now();
    while bot.with(|s| s.polls) == 0 {
        alive(child)?;
        if t.elapsed() > Duration::from_secs(START_SECS) {
            return Err("the gateway never polled Telegram".into());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    r.start_ms = t.elapsed().as_millis() as u64;
    r.start_majflt = procfs::majflt(pid);
    r.start_read_kib = procfs::io(pid).unwrap_or_default().read_bytes / 1024;
    let cpu0 = cpu_ticks(pid);
    std::thread::sleep(Duration::from_secs(o.idle_secs));
    r.idle = sample(pid);
    r.pss_idle_kib = procfs::pss_kib(pid).unwrap_or(0);
    r.idle_smaps = procfs::smaps(pid, &o.bin).unwrap_or_default();
    let cpu1 = cpu_ticks(pid);
    r.cpu_idle_s = (cpu1 - cpu0) as f64 / tck;
    phase(o, "start", pid);
    let alloc0 = if o.alloc {
        std::thread::sleep(Duration::from_millis(250));
        alloc_stats(stats)
    } else {
        None
    };

    // Traffic.
    let conns = || (bot.server.connections(), model.server.connections());
    r.conns_start = conns();
    let mut strace = if o.syncs { start_strace(pid) } else { None };
    let io0 = procfs::io(pid).unwrap_or_default();
    let ns0 = procfs::cpu_ns(pid);
    let t0 = Instant::now();
    bot.start_traffic();
    let mut last_done = 0;
    let mut last_progress = Instant::now();
    let mut next_mark = 100u64.min(o.n);
    for i in 0u64.. {
        std::thread::sleep(Duration::from_millis(5));
        let done = bot.with(|s| s.done);
        let m = sample(pid);
        r.peak_sampled_kib = r.peak_sampled_kib.max(m.rss_kib);
        r.anon_peak_kib = r.anon_peak_kib.max(m.anon_kib);
        // smaps_rollup walks the page tables: every 10th sample (about 20 a second).
        if i % 10 == 0 {
            r.pss_peak_kib = r.pss_peak_kib.max(procfs::pss_kib(pid).unwrap_or(0));
        }
        if r.t200_s.is_none() && done >= 200 {
            r.t200_s = Some(t0.elapsed().as_secs_f64());
        }
        while done >= next_mark && next_mark <= o.n {
            if next_mark == 100.min(o.n) {
                r.after100 = m;
            }
            r.checkpoints.push((next_mark, m.rss_kib));
            r.series.push((
                next_mark,
                m.rss_kib,
                procfs::cpu_ns(pid).saturating_sub(ns0),
            ));
            next_mark += 100;
        }
        if done >= o.n {
            break;
        }
        if done != last_done {
            last_done = done;
            last_progress = Instant::now();
        }
        alive(child)?;
        if let Some(max) = o.deadline_secs
            && t0.elapsed() > Duration::from_secs(max)
        {
            return Err(format!(
                "past the deadline of {max} s with {done} of {} messages answered",
                o.n
            ));
        }
        if last_progress.elapsed() > Duration::from_secs(STALL_SECS) {
            return Err(format!(
                "no reply for {STALL_SECS} s after {done} of {} messages",
                o.n
            ));
        }
    }
    r.traffic_s = t0.elapsed().as_secs_f64();
    r.conns_end = conns();
    let cpu2 = cpu_ticks(pid);
    let io1 = procfs::io(pid).unwrap_or_default();
    r.io_traffic = (
        io1.write_bytes.saturating_sub(io0.write_bytes),
        io1.syscw.saturating_sub(io0.syscw),
    );
    if let Some((child, out)) = strace.take() {
        r.syncs = stop_strace(child, &out);
    }
    r.cpu_s = (cpu2 - cpu1) as f64 / tck;
    std::thread::sleep(Duration::from_millis(500));
    r.end = sample(pid);
    r.pss_end_kib = procfs::pss_kib(pid).unwrap_or(0);
    r.peak_kib = r.end.hwm_kib.max(r.peak_sampled_kib);
    r.smaps = procfs::smaps(pid, &o.bin).unwrap_or_default();
    if o.alloc {
        std::thread::sleep(Duration::from_millis(250));
        r.alloc = alloc0.zip(alloc_stats(stats));
    }
    let mut lat: Vec<Duration> = bot.with(|s| s.latencies.clone());
    lat.sort();
    let pct = |p: f64| -> f64 {
        if lat.is_empty() {
            return 0.0;
        }
        let i = ((lat.len() as f64 - 1.0) * p).round() as usize;
        lat[i.min(lat.len() - 1)].as_secs_f64() * 1000.0
    };
    r.lat_p50_ms = pct(0.5);
    r.lat_p99_ms = pct(0.99);
    phase(o, "traffic", pid);
    if o.quiet_secs > 0 {
        r.quiet = Some(quiet(o, bot, pid));
        alive(child)?;
    }
    phase(o, "quiet", pid);
    Ok(r)
}

/// `--phase-cmd CMD PHASE PID`, waited for; a command that fails is reported, not fatal.
fn phase(o: &Opts, name: &str, pid: u32) {
    if let Some(cmd) = &o.phase_cmd {
        match Command::new(cmd).arg(name).arg(pid.to_string()).status() {
            Ok(st) if st.success() => {}
            other => eprintln!("soak: --phase-cmd at {name}: {other:?}"),
        }
    }
}

/// Sit out `--quiet-secs` after the traffic: writes and wake-ups from second 2 to 32
/// (the long poll is held for 50 s), RSS at the end.
fn quiet(o: &Opts, bot: &FakeBot, pid: u32) -> Quiet {
    let t = Instant::now();
    let settle = Duration::from_secs(2.min(o.quiet_secs));
    std::thread::sleep(settle);
    let window = o.quiet_secs.saturating_sub(2).min(30);
    let io0 = procfs::io(pid).unwrap_or_default();
    let ctx0 = procfs::ctx_switches(pid);
    let polls0 = bot.with(|s| s.polls);
    std::thread::sleep(Duration::from_secs(window));
    let io1 = procfs::io(pid).unwrap_or_default();
    let ctx1 = procfs::ctx_switches(pid);
    let polls1 = bot.with(|s| s.polls);
    let rest = Duration::from_secs(o.quiet_secs).saturating_sub(t.elapsed());
    std::thread::sleep(rest);
    Quiet {
        secs: o.quiet_secs,
        window_secs: window,
        write_bytes: io1.write_bytes.saturating_sub(io0.write_bytes),
        syscw: io1.syscw.saturating_sub(io0.syscw),
        wakeups: ctx1.saturating_sub(ctx0),
        polls: polls1.saturating_sub(polls0),
        mem: sample(pid),
        smaps: procfs::smaps(pid, &o.bin).unwrap_or_default(),
    }
}

/// `strace -c` on every thread of the gateway, counting sync calls; `None` when strace
/// is not installed or cannot attach (the report then says so).
fn start_strace(pid: u32) -> Option<(Child, PathBuf)> {
    let out = std::env::temp_dir().join(format!("yc-soak-strace-{}", std::process::id()));
    let child = Command::new("strace")
        .args([
            "-f",
            "-c",
            "-e",
            "trace=fsync,fdatasync,sync_file_range,syncfs,msync",
            "-o",
        ])
        .arg(&out)
        .args(["-p", &pid.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    // strace attaches to each thread in turn; give it time before the traffic starts.
    std::thread::sleep(Duration::from_millis(500));
    Some((child, out))
}

/// Detach strace (SIGINT) and read the total of its summary's `calls` column.
fn stop_strace(mut child: Child, out: &Path) -> Option<u64> {
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let st = child.wait().ok()?;
    let text = std::fs::read_to_string(out).ok();
    let _ = std::fs::remove_file(out);
    if !st.success() && text.is_none() {
        return None;
    }
    let text = text?;
    // "% time seconds usecs/call calls [errors] syscall"; no line at all: no sync calls.
    let mut n = 0;
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() >= 5
            && f.last().is_some_and(|s| s.contains("sync"))
            && f[0].parse::<f64>().is_ok()
        {
            n += f[3].parse::<u64>().unwrap_or(0);
        }
    }
    Some(n)
}

/// Median and p90 wall time of `yoctoclaw --version` (spawn to exit, as a shell sees it).
fn version_times(o: &Opts, r: &mut Report) {
    if o.version_runs == 0 {
        return;
    }
    let mut times = Vec::with_capacity(o.version_runs);
    for _ in 0..o.version_runs {
        let t = Instant::now();
        let ok = Command::new(&o.bin)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            times.push(t.elapsed());
        }
    }
    times.sort();
    if let Some(m) = times.get(times.len() / 2) {
        r.version_med_ms = m.as_secs_f64() * 1000.0;
    }
    if let Some(m) = times.get(times.len() * 9 / 10) {
        r.version_p90_ms = m.as_secs_f64() * 1000.0;
    }
}

fn mib(kib: u64) -> String {
    format!("{:.2} MiB", kib as f64 / 1024.0)
}

fn print_report(o: &Opts, r: &Report, model: &FakeModel, bot: &FakeBot) {
    let ms = &model.stats;
    let (sends, unmarked, typing, polls, empty) =
        bot.with(|s| (s.sends, s.unmarked_sends, s.typing, s.polls, s.empty_polls));
    let growth_pct = if r.after100.rss_kib > 0 {
        (r.end.rss_kib as f64 / r.after100.rss_kib as f64 - 1.0) * 100.0
    } else {
        0.0
    };
    let cpu_ms = r.cpu_s * 1000.0 / r.n as f64;
    let rate = r.n as f64 / r.traffic_s.max(1e-9);
    let b = &r.smaps;
    println!(
        "yoctoclaw footprint soak: {} messages, {} chats, {}, binary {}",
        r.n,
        r.chats,
        if o.tls {
            "HTTPS (test CA via tls.ca_file)"
        } else {
            "plain HTTP"
        },
        o.bin.display()
    );
    println!("  {:<44} {:>14}   budget", "figure", "value");
    let row = |k: &str, v: String, budget: &str| println!("  {k:<44} {v:>14}   {budget}");
    row(
        "idle RSS after start",
        mib(r.idle.rss_kib),
        "<= 3 MiB (stretch 2)",
    );
    row(
        "RSS after the first 100 messages",
        mib(r.after100.rss_kib),
        "",
    );
    row("peak RSS (VmHWM)", mib(r.peak_kib), "<= 6 MiB (stretch 4)");
    row(
        "peak anonymous memory (RssAnon, sampled)",
        mib(r.anon_peak_kib),
        "<= 1.5 MiB (stretch 1)",
    );
    row(
        "PSS after start / peak (sampled) / end",
        format!(
            "{:.2} / {:.2} / {:.2} MiB",
            r.pss_idle_kib as f64 / 1024.0,
            r.pss_peak_kib as f64 / 1024.0,
            r.pss_end_kib as f64 / 1024.0
        ),
        "",
    );
    row(
        "start-up to the first poll: time / major faults / read",
        format!(
            "{} ms / {} / {} KiB",
            r.start_ms, r.start_majflt, r.start_read_kib
        ),
        "",
    );
    if let Some(kib) = r.bin_cached_kib {
        row(
            "binary in the page cache at start (--cold)",
            format!("{kib} KiB"),
            "0",
        );
    }
    row("RSS at the end", mib(r.end.rss_kib), "");
    row(
        "growth, end vs after 100",
        format!("{growth_pct:+.1} %"),
        "<= +10 %",
    );
    row("threads", r.end.threads.to_string(), "");
    row(
        "CPU per message (gateway only)",
        format!("{cpu_ms:.3} ms"),
        "<= 1 ms (stretch 0.3)",
    );
    row(
        "CPU while idle",
        format!("{:.2} s in {} s", r.cpu_idle_s, r.idle_secs),
        "",
    );
    row("messages per second", format!("{rate:.0}"), "");
    row("traffic wall time", format!("{:.2} s", r.traffic_s), "");
    if let Some(t) = r.t200_s {
        row(
            "first 200 messages answered",
            format!("{t:.2} s"),
            "<= 2 s (stretch 1)",
        );
    }
    row(
        "turn latency p50 / p99",
        format!("{:.1} / {:.1} ms", r.lat_p50_ms, r.lat_p99_ms),
        "",
    );
    if !o.alloc {
        row(
            "--version wall time, median (p90)",
            format!("{:.2} ({:.2}) ms", r.version_med_ms, r.version_p90_ms),
            "<= 5 ms (stretch 2)",
        );
    }
    let ((b0, m0), (b1, m1)) = (r.conns_start, r.conns_end);
    let during = (b1 - b0) + (m1 - m0);
    let per_1000 = during as f64 * 1000.0 / r.n as f64;
    row(
        if o.tls {
            "TLS handshakes during traffic (bot + model)"
        } else {
            "TCP connects during traffic (bot + model)"
        },
        format!("{} + {} = {during}", b1 - b0, m1 - m0),
        if o.tls { "<= 3 per 1,000 messages" } else { "" },
    );
    row(
        "  per 1,000 messages; before traffic",
        format!("{per_1000:.1}; {}", b0 + m0),
        "",
    );
    row(
        "binary size (stripped)",
        format!("{} bytes", r.bin_bytes),
        "aarch64 <= 2.5 MB",
    );
    let n = r.n as f64;
    row(
        "bytes written to storage per message",
        format!("{:.0} B", r.io_traffic.0 as f64 / n),
        "<= 16 KB",
    );
    row(
        "  write calls per message",
        format!("{:.1}", r.io_traffic.1 as f64 / n),
        "",
    );
    if o.syncs {
        row(
            "disk syncs per message (strace)",
            r.syncs
                .map_or("no strace".to_string(), |s| format!("{:.2}", s as f64 / n)),
            "<= 1 per turn",
        );
    }
    if let Some(q) = &r.quiet {
        row(
            &format!("idle RSS after the traffic and {} s quiet", q.secs),
            mib(q.mem.rss_kib),
            "<= 2 MiB",
        );
        row(
            &format!("quiet {} s (poll held): written, wake-ups", q.window_secs),
            format!("{} B, {}", q.write_bytes, q.wakeups),
            "0, 0",
        );
        row(
            "  write calls, getUpdates in that window",
            format!("{}, {}", q.syscw, q.polls),
            "",
        );
    }
    if let Some((a, z)) = r.alloc {
        row(
            "heap allocations per message",
            format!("{:.0}", (z[0] - a[0]) as f64 / n),
            "reported",
        );
        row(
            "heap bytes allocated per message",
            format!("{:.0}", (z[1] - a[1]) as f64 / n),
            "reported",
        );
        row(
            "live heap idle / end / peak",
            format!("{} / {} / {} KiB", a[2] / 1024, z[2] / 1024, z[3] / 1024),
            "",
        );
    }
    let quiet_smaps = r.quiet.as_ref().map(|q| ("quiet", &q.smaps));
    for (when, b) in [("idle", &r.idle_smaps), ("end", b)]
        .into_iter()
        .chain(quiet_smaps)
    {
        println!(
            "  smaps {when:<5} (resident KiB): exe text {} + exe ro {} + exe rw {} + libs {} + heap {} + anon {} + stack {} + other {} = {}",
            b.exe_text,
            b.exe_ro,
            b.exe_rw,
            b.libs,
            b.heap,
            b.anon,
            b.stack,
            b.other,
            b.total()
        );
    }
    let top: Vec<String> = b
        .anon_maps
        .iter()
        .take(8)
        .map(|(size, rss)| format!("{rss}/{size}"))
        .collect();
    println!(
        "  biggest anonymous mappings (resident/size KiB): {}",
        top.join(" ")
    );
    println!(
        "  traffic: {} model requests ({} tool calls, {} 500s, {} summaries, {} untagged, {} KiB sent to the model); {} sendMessage ({} without marker), {} typing, {} polls ({} empty); log: {} warn, {} error; SIGTERM exit {} in {} ms",
        ms.requests.load(Ordering::Relaxed),
        ms.tool_calls.load(Ordering::Relaxed),
        ms.errors.load(Ordering::Relaxed),
        ms.summaries.load(Ordering::Relaxed),
        ms.untagged.load(Ordering::Relaxed),
        ms.request_bytes.load(Ordering::Relaxed) / 1024,
        sends,
        unmarked,
        typing,
        polls,
        empty,
        r.log_warn,
        r.log_error,
        if r.exit_ok { "ok" } else { "FAILED" },
        r.exit_ms
    );
    let cps: Vec<String> = r
        .checkpoints
        .iter()
        .map(|(n, k)| format!("{n}:{k}"))
        .collect();
    println!("  RSS KiB by messages answered: {}", cps.join(" "));
    let mut line = format!(
        "BENCH n={} mix={} tls={} chats={} handshakes={during} handshakes_before={} idle_rss_kib={} rss100_kib={} peak_kib={} end_rss_kib={} growth_pct={growth_pct:.1} threads={} cpu_ms_per_msg={cpu_ms:.3} msgs_per_s={rate:.0} t200_s={} lat_p50_ms={:.1} lat_p99_ms={:.1} bin_bytes={} smaps_exe_text_kib={} smaps_exe_ro_kib={} smaps_exe_rw_kib={} smaps_libs_kib={} smaps_heap_kib={} smaps_anon_kib={} smaps_stack_kib={}",
        r.n,
        match (o.burst, o.plain) {
            (true, _) => "burst",
            (_, true) => "plain",
            _ => "mixed",
        },
        u8::from(o.tls),
        r.chats,
        b0 + m0,
        r.idle.rss_kib,
        r.after100.rss_kib,
        r.peak_kib,
        r.end.rss_kib,
        r.end.threads,
        r.t200_s.map_or("na".to_string(), |t| format!("{t:.3}")),
        r.lat_p50_ms,
        r.lat_p99_ms,
        r.bin_bytes,
        b.exe_text,
        b.exe_ro,
        b.exe_rw,
        b.libs,
        b.heap,
        b.anon,
        b.stack
    );
    if !o.alloc {
        line.push_str(&format!(" version_ms={:.2}", r.version_med_ms));
    }
    line.push_str(&format!(
        " traffic_s={:.3} rss_anon_peak_kib={} pss_idle_kib={} pss_peak_kib={} pss_end_kib={}",
        r.traffic_s, r.anon_peak_kib, r.pss_idle_kib, r.pss_peak_kib, r.pss_end_kib
    ));
    if let Some(kib) = r.bin_cached_kib {
        line.push_str(&format!(" cold_bin_cached_kib={kib}"));
    }
    line.push_str(&format!(
        " start_ms={} start_majflt={} start_read_kib={}",
        r.start_ms, r.start_majflt, r.start_read_kib
    ));
    line.push_str(&format!(
        " write_bytes_per_msg={:.0} write_calls_per_msg={:.1}",
        r.io_traffic.0 as f64 / r.n as f64,
        r.io_traffic.1 as f64 / r.n as f64
    ));
    if let Some(s) = r.syncs {
        line.push_str(&format!(" syncs_per_msg={:.2}", s as f64 / r.n as f64));
    }
    if let Some(q) = &r.quiet {
        line.push_str(&format!(
            " quiet_secs={} quiet_rss_kib={} quiet_window_secs={} quiet_write_bytes={} quiet_write_calls={} quiet_wakeups={} quiet_polls={} quiet_smaps_exe_text_kib={}",
            q.secs, q.mem.rss_kib, q.window_secs, q.write_bytes, q.syscw, q.wakeups, q.polls, q.smaps.exe_text
        ));
    }
    if let Some((a, z)) = r.alloc {
        let n = r.n as f64;
        line.push_str(&format!(
            " allocs_per_msg={:.0} alloc_bytes_per_msg={:.0} heap_live_idle={} heap_live_end={} heap_peak={}",
            (z[0] - a[0]) as f64 / n,
            (z[1] - a[1]) as f64 / n,
            a[2],
            z[2],
            z[3]
        ));
    }
    println!("{line}");
    if let Some(path) = &o.json {
        let json = to_json(&line, r);
        if let Err(e) = std::fs::write(path, json) {
            eprintln!("soak: cannot write {}: {e}", path.display());
        }
    }
}

/// The BENCH line's figures as one JSON object (numbers as numbers, `na` as null), with
/// the per-100-messages series (RSS KiB, CPU ms per message in that stretch).
fn to_json(bench_line: &str, r: &Report) -> String {
    let mut out = String::from("{\n  \"figures\": {");
    let mut first = true;
    for kv in bench_line.split_whitespace().skip(1) {
        let Some((k, v)) = kv.split_once('=') else {
            continue;
        };
        let v = if v == "na" {
            "null".to_string()
        } else if v.parse::<f64>().is_ok() {
            v.to_string()
        } else {
            format!("\"{v}\"")
        };
        out.push_str(if first { "\n    " } else { ",\n    " });
        out.push_str(&format!("\"{k}\": {v}"));
        first = false;
    }
    out.push_str("\n  },\n  \"series\": [");
    let mut prev = (0u64, 0u64);
    for (i, (n, rss, ns)) in r.series.iter().enumerate() {
        let per = (ns - prev.1.min(*ns)) as f64 / 1e6 / (n - prev.0).max(1) as f64;
        out.push_str(if i == 0 { "\n    " } else { ",\n    " });
        out.push_str(&format!(
            "{{\"messages\": {n}, \"rss_kib\": {rss}, \"cpu_ms_per_msg\": {per:.3}}}"
        ));
        prev = (*n, *ns);
    }
    out.push_str("\n  ]\n}\n");
    out
}
