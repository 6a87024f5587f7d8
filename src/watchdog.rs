//! The gateway's watchdogs: systemd's (`sd_notify`'s datagrams to `NOTIFY_SOCKET`, written
//! in a few lines, no libsystemd), a kernel watchdog device (`watchdog.device`), and the
//! stall detector (`watchdog.stall_secs`). All three are fed by one task on the executor
//! ([`Watchdog::run`]): it ticks on a timer, so the pings stop when the executor stops
//! turning (a blocking call on it, a deadlock), and not when it is merely idle. Blocking
//! I/O on the worker threads never delays it.
//!
//! - systemd: `READY=1` once the gateway serves, `WATCHDOG=1` at half of `WATCHDOG_USEC`
//!   (only when `WATCHDOG_PID` is unset or ours), `STOPPING=1` on shutdown. Abstract
//!   socket names (`@…`) are supported. Children never see `NOTIFY_SOCKET`: their
//!   environment is an allowlist (`security::child_env`).
//! - device: opened write-only with `O_CLOEXEC` (no child inherits it), its timeout set by
//!   `WDIOC_SETTIMEOUT` when `watchdog.timeout_secs` is given, fed one byte a tick, and
//!   closed with the magic `V` on a clean exit so a stop is not a reboot.
//! - stall detector: the `yc-watchdog` thread exits the process with status 70 when the
//!   last tick is older than `watchdog.stall_secs`, after one log line saying how old.
//!
//! A `NOTIFY_SOCKET` that is not a socket or a device that cannot be opened: one line,
//! the gateway runs on without it.
//!
//! # Bounds
//! One socket, one device and one thread per process; one datagram of at most 12 bytes a
//! tick.
//!
//! # Threads
//! [`Watchdog::run`] on the executor thread; the detector on `yc-watchdog`.
//!
//! # Test hook
//! In `test-hooks` builds only: `YOCTOCLAW_TEST_WATCHDOG_BLOCK_AFTER` (a number of ticks)
//! blocks the executor thread for good after that many ticks, so the tests see the pings
//! stop and the detector exit (logged when set).

use std::fs::File;
use std::io::Write;
use std::os::unix::net::UnixDatagram;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The exit status when the executor stalled (`EX_SOFTWARE`).
pub const STALL_EXIT: i32 = 70;
/// The longest tick: the executor turns at least this often while a watchdog is on.
const MAX_TICK: Duration = Duration::from_secs(10);
/// The shortest tick, whatever the intervals asked.
const MIN_TICK: Duration = Duration::from_millis(100);
/// Feed interval for a device whose timeout is unknown (drivers' defaults are >= 30 s).
const DEVICE_TICK: Duration = Duration::from_secs(5);

/// What the watchdogs were configured with (`config::WatchdogConfig`, by value so this
/// module stays below config).
pub struct Settings<'a> {
    pub device: &'a str,
    pub timeout_secs: Option<u64>,
    pub stall_secs: u64,
}

/// The gateway's watchdogs, as started by [`Watchdog::start`].
pub struct Watchdog {
    notify: Option<(UnixDatagram, NotifyAddr)>,
    /// Send `WATCHDOG=1` every tick (systemd asked for a watchdog for this process).
    systemd_pings: bool,
    device: Option<File>,
    /// A feed already failed (logged once).
    feed_failed: std::cell::Cell<bool>,
    tick: Duration,
    beat: Arc<Beat>,
}

/// The last tick, read by the detector thread.
struct Beat {
    start: Instant,
    /// Milliseconds since `start` at the last tick.
    last_ms: AtomicU64,
    ticks: AtomicU64,
}

impl Beat {
    fn mark(&self) {
        let ms = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_ms.store(ms, Ordering::Relaxed);
        self.ticks.fetch_add(1, Ordering::Relaxed);
    }
}

enum NotifyAddr {
    Path(String),
    Abstract(Vec<u8>),
}

/// A one-line summary for `doctor`: which watchdogs this configuration and environment
/// turn on.
pub fn describe(s: &Settings<'_>, under_systemd: bool) -> String {
    let mut on = Vec::new();
    if under_systemd {
        on.push("systemd".to_string());
    }
    if !s.device.is_empty() {
        on.push(format!("device {}", s.device));
    }
    if s.stall_secs > 0 {
        on.push(format!("stall detector {} s", s.stall_secs));
    }
    if on.is_empty() {
        "off".into()
    } else {
        on.join(", ")
    }
}

impl Watchdog {
    /// Open what is configured and start the detector thread. Every failure is one log
    /// line and leaves that watchdog off.
    pub fn start(s: &Settings<'_>) -> Watchdog {
        let notify = notify_socket();
        let systemd = notify.is_some().then(systemd_interval).flatten();
        let device = open_device(s);
        let mut tick = MAX_TICK;
        if let Some(i) = systemd {
            tick = tick.min(i / 2);
        }
        if let Some((_, t)) = &device {
            tick = tick.min(t.map_or(DEVICE_TICK, |t| Duration::from_secs(t) / 2));
        }
        if s.stall_secs > 0 {
            tick = tick.min(Duration::from_secs(s.stall_secs) / 4);
        }
        let beat = Arc::new(Beat {
            start: Instant::now(),
            last_ms: AtomicU64::new(0),
            ticks: AtomicU64::new(0),
        });
        if s.stall_secs > 0 {
            let (b, limit) = (beat.clone(), Duration::from_secs(s.stall_secs));
            if let Err(e) = crate::runtime::spawn_thread("yc-watchdog", move || detect(&b, limit)) {
                log::warn!("watchdog: stall detector not started: {e}");
            }
        }
        Watchdog {
            notify,
            systemd_pings: systemd.is_some(),
            device: device.map(|(f, _)| f),
            feed_failed: std::cell::Cell::new(false),
            tick: tick.max(MIN_TICK),
            beat,
        }
    }

    /// Tell systemd the gateway serves (`READY=1`).
    pub fn ready(&self) {
        self.send(b"READY=1");
    }

    /// Tell systemd the gateway stops (`STOPPING=1`) and close the device with the magic
    /// character so the kernel does not reset the board.
    pub fn stopping(&mut self) {
        self.send(b"STOPPING=1");
        if let Some(mut f) = self.device.take()
            && let Err(e) = f.write_all(b"V")
        {
            log::warn!("watchdog: magic close failed ({e}): the board may reset");
        }
    }

    /// The executor's tick: forever, feed every watchdog once a tick (never returns; `T`
    /// lets it race the gateway's own future).
    pub async fn run<T>(&self) -> T {
        let block_after = test_block_after();
        loop {
            self.beat.mark();
            if self.systemd_pings {
                self.send(b"WATCHDOG=1");
            }
            if let Some(mut f) = self.device.as_ref()
                && let Err(e) = f.write_all(b"\0")
                && !self.feed_failed.replace(true)
            {
                // Once: a device that fails keeps failing, and the log is bounded.
                log::warn!("watchdog: cannot feed the device: {e}");
            }
            if block_after.is_some_and(|n| self.beat.ticks.load(Ordering::Relaxed) >= n) {
                log::warn!("watchdog: test hook: blocking the executor");
                loop {
                    std::thread::sleep(Duration::from_secs(3600));
                }
            }
            smol::Timer::after(self.tick).await;
        }
    }

    fn send(&self, msg: &[u8]) {
        let Some((sock, addr)) = &self.notify else {
            return;
        };
        let sent = match addr {
            NotifyAddr::Path(p) => sock.send_to(msg, p),
            NotifyAddr::Abstract(name) => abstract_send(sock, msg, name),
        };
        if let Err(e) = sent {
            log::debug!("watchdog: NOTIFY_SOCKET: {e}");
        }
    }
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn abstract_send(sock: &UnixDatagram, msg: &[u8], name: &[u8]) -> std::io::Result<usize> {
    use std::os::linux::net::SocketAddrExt;
    let a = std::os::unix::net::SocketAddr::from_abstract_name(name)?;
    sock.send_to_addr(msg, &a)
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn abstract_send(_: &UnixDatagram, _: &[u8], _: &[u8]) -> std::io::Result<usize> {
    Err(std::io::ErrorKind::Unsupported.into())
}

/// `NOTIFY_SOCKET` as a datagram socket and its address, or `None` (unset, or not a
/// socket: one line).
fn notify_socket() -> Option<(UnixDatagram, NotifyAddr)> {
    let v = std::env::var_os("NOTIFY_SOCKET")?;
    let v = v.to_str()?.to_string();
    let addr = match v.strip_prefix('@') {
        Some(name) => NotifyAddr::Abstract(name.as_bytes().to_vec()),
        None => {
            use std::os::unix::fs::FileTypeExt;
            match std::fs::metadata(&v) {
                Ok(m) if m.file_type().is_socket() => NotifyAddr::Path(v),
                _ => {
                    log::warn!(
                        "watchdog: NOTIFY_SOCKET is not a socket; systemd notifications off"
                    );
                    return None;
                }
            }
        }
    };
    match UnixDatagram::unbound() {
        Ok(s) => Some((s, addr)),
        Err(e) => {
            log::warn!("watchdog: no socket for NOTIFY_SOCKET ({e}); systemd notifications off");
            None
        }
    }
}

/// systemd's watchdog interval for this process, when it asked for pings.
fn systemd_interval() -> Option<Duration> {
    if let Ok(pid) = std::env::var("WATCHDOG_PID")
        && pid.trim().parse::<u32>().ok() != Some(std::process::id())
    {
        return None;
    }
    let usec: u64 = std::env::var("WATCHDOG_USEC").ok()?.trim().parse().ok()?;
    (usec > 0).then(|| Duration::from_micros(usec))
}

/// The device, opened write-only and close-on-exec, with its timeout (set, or read back).
fn open_device(s: &Settings<'_>) -> Option<(File, Option<u64>)> {
    if s.device.is_empty() {
        return None;
    }
    // std opens with O_CLOEXEC: no child inherits the device.
    let f = match std::fs::OpenOptions::new().write(true).open(s.device) {
        Ok(f) => f,
        Err(e) => {
            log::warn!(
                "watchdog: cannot open {} ({e}); hardware watchdog off",
                s.device
            );
            return None;
        }
    };
    let timeout = match s.timeout_secs {
        Some(t) => match set_timeout(&f, t) {
            Ok(got) => Some(got),
            Err(e) => {
                log::warn!("watchdog: {} refused a {t} s timeout ({e})", s.device);
                get_timeout(&f)
            }
        },
        None => get_timeout(&f),
    };
    log::info!(
        "watchdog: feeding {} (timeout {})",
        s.device,
        timeout.map_or("unknown".into(), |t| format!("{t} s"))
    );
    Some((f, timeout))
}

const WDIOC_SETTIMEOUT: rustix::ioctl::Opcode =
    rustix::ioctl::opcode::read_write::<std::os::raw::c_int>(b'W', 6);
const WDIOC_GETTIMEOUT: rustix::ioctl::Opcode =
    rustix::ioctl::opcode::read::<std::os::raw::c_int>(b'W', 7);

fn set_timeout(f: &File, secs: u64) -> rustix::io::Result<u64> {
    let mut v = std::os::raw::c_int::try_from(secs).unwrap_or(std::os::raw::c_int::MAX);
    // SAFETY: WDIOC_SETTIMEOUT reads and writes one int (linux/watchdog.h).
    let ioc = unsafe { rustix::ioctl::Updater::<WDIOC_SETTIMEOUT, _>::new(&mut v) };
    // SAFETY: the opcode and the argument's type match.
    unsafe { rustix::ioctl::ioctl(f, ioc) }?;
    Ok(u64::try_from(v).unwrap_or(secs))
}

fn get_timeout(f: &File) -> Option<u64> {
    // SAFETY: WDIOC_GETTIMEOUT writes one int (linux/watchdog.h).
    let ioc = unsafe { rustix::ioctl::Getter::<WDIOC_GETTIMEOUT, std::os::raw::c_int>::new() };
    // SAFETY: the opcode and the argument's type match.
    let v = unsafe { rustix::ioctl::ioctl(f, ioc) }.ok()?;
    u64::try_from(v).ok().filter(|&t| t > 0)
}

/// The `yc-watchdog` thread: exit the process when the executor has not ticked for
/// `limit`.
fn detect(beat: &Beat, limit: Duration) {
    let check = (limit / 8).clamp(MIN_TICK, Duration::from_secs(5));
    loop {
        std::thread::sleep(check);
        let now = u64::try_from(beat.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        let age = now.saturating_sub(beat.last_ms.load(Ordering::Relaxed));
        if u128::from(age) > limit.as_millis() {
            log::error!(
                "watchdog: the executor has not turned for {} ms (limit {} s, {} ticks so far); exiting so the service restarts the gateway",
                age,
                limit.as_secs(),
                beat.ticks.load(Ordering::Relaxed)
            );
            log::logger().flush();
            std::process::exit(STALL_EXIT);
        }
    }
}

#[cfg(not(feature = "test-hooks"))]
fn test_block_after() -> Option<u64> {
    None
}

#[cfg(feature = "test-hooks")]
fn test_block_after() -> Option<u64> {
    let v = std::env::var("YOCTOCLAW_TEST_WATCHDOG_BLOCK_AFTER").ok()?;
    let n = v.trim().parse().ok();
    log::warn!("watchdog: YOCTOCLAW_TEST_WATCHDOG_BLOCK_AFTER={v} (tests only)");
    n
}
