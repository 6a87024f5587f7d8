//! The watchdogs from outside (`src/watchdog.rs`): a fake systemd `NOTIFY_SOCKET` (a unix
//! datagram socket bound here) receives `READY=1`, regular `WATCHDOG=1` and `STOPPING=1`
//! from the real gateway binary; an executor blocked on purpose (a test hook) stops the
//! pings and the stall detector exits the process with status 70; a `NOTIFY_SOCKET` that
//! is a regular file costs one log line and the gateway runs on.

mod support;

use std::os::unix::net::UnixDatagram;
use std::time::{Duration, Instant};
use support::gateway::{Gateway, PATIENCE};
use support::{TempHome, config_for};

/// The exit status of a stalled gateway (`watchdog::STALL_EXIT`).
const STALL_EXIT: i32 = 70;
/// The hook that blocks the executor after that many ticks.
const BLOCK_AFTER: &str = "YOCTOCLAW_TEST_WATCHDOG_BLOCK_AFTER";

/// A gateway home without Telegram and heartbeat (the gateway is then a cron daemon that
/// serves nothing but its watchdogs), with `watchdog` set to `wd`.
fn home(tag: &str, wd: &str) -> TempHome {
    TempHome::onboarded(
        tag,
        &config_for(
            "http://127.0.0.1:9",
            &format!(
                r#""telegram":{{"enabled":false}},"heartbeat":{{"enabled":false}},"watchdog":{{{wd}}}"#
            ),
        ),
    )
}

/// The next datagram, within [`PATIENCE`].
fn next(sock: &UnixDatagram) -> String {
    sock.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut buf = [0u8; 256];
    let n = sock
        .recv(&mut buf)
        .expect("a datagram from the gateway in time");
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

/// Every datagram already queued (non-blocking).
fn drain(sock: &UnixDatagram) -> Vec<String> {
    sock.set_nonblocking(true).unwrap();
    let mut out = Vec::new();
    let mut buf = [0u8; 256];
    while let Ok(n) = sock.recv(&mut buf) {
        out.push(String::from_utf8_lossy(&buf[..n]).into_owned());
    }
    out
}

#[test]
fn systemd_gets_ready_regular_watchdog_pings_and_stopping() {
    let home = home("wd-notify", r#""stall_secs":0"#);
    let path = home.dir.join("notify.sock");
    let sock = UnixDatagram::bind(&path).unwrap();
    let gw = Gateway::start(
        &home,
        &[
            ("NOTIFY_SOCKET", path.to_str().unwrap()),
            // 0.4 s: a ping every 0.2 s.
            ("WATCHDOG_USEC", "400000"),
        ],
    );
    let first = next(&sock);
    // The first tick may race READY=1 (both on the executor: READY goes first).
    assert_eq!(first, "READY=1", "{}", gw.log());
    let started = Instant::now();
    for _ in 0..5 {
        assert_eq!(next(&sock), "WATCHDOG=1");
    }
    // Five pings at 0.2 s: at least 0.8 s (the first may come at once).
    assert!(started.elapsed() >= Duration::from_millis(700));
    let out = gw.stop_cleanly();
    let rest = drain(&sock);
    assert_eq!(
        rest.last().map(String::as_str),
        Some("STOPPING=1"),
        "{rest:?}\n{out}"
    );
    assert!(
        rest[..rest.len() - 1].iter().all(|m| m == "WATCHDOG=1"),
        "{rest:?}"
    );
}

#[test]
fn an_abstract_notify_socket_gets_ready() {
    use std::os::linux::net::SocketAddrExt;
    let home = home("wd-abstract", r#""stall_secs":0"#);
    let name = format!("yc-test-notify-{}", std::process::id());
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let sock = UnixDatagram::bind_addr(&addr).unwrap();
    let gw = Gateway::start(&home, &[("NOTIFY_SOCKET", &format!("@{name}"))]);
    assert_eq!(next(&sock), "READY=1", "{}", gw.log());
    gw.stop_cleanly();
    // Without WATCHDOG_USEC systemd wants no pings: READY then STOPPING only.
    assert_eq!(drain(&sock), vec!["STOPPING=1".to_string()]);
}

#[test]
fn a_blocked_executor_stops_the_pings_and_the_stall_detector_exits() {
    let home = home("wd-stall", r#""stall_secs":1"#);
    let path = home.dir.join("notify.sock");
    let sock = UnixDatagram::bind(&path).unwrap();
    let mut gw = Gateway::start(
        &home,
        &[
            ("NOTIFY_SOCKET", path.to_str().unwrap()),
            ("WATCHDOG_USEC", "400000"),
            (support::hook(BLOCK_AFTER), "3"),
        ],
    );
    assert_eq!(next(&sock), "READY=1", "{}", gw.log());
    let status = gw.wait_exit(PATIENCE);
    let log = gw.log();
    assert_eq!(status.code(), Some(STALL_EXIT), "{log}");
    assert!(
        log.contains("watchdog: the executor has not turned for"),
        "{log}"
    );
    // The process is gone: every datagram it sent is queued. Exactly the three ticks
    // before the block pinged; none after.
    let rest = drain(&sock);
    assert_eq!(rest, vec!["WATCHDOG=1"; 3], "{log}");
}

#[test]
fn a_notify_socket_that_is_a_regular_file_is_one_line_and_the_gateway_runs_on() {
    let home = home("wd-file", r#""stall_secs":0"#);
    let path = home.dir.join("not-a-socket");
    std::fs::write(&path, "").unwrap();
    let mut gw = Gateway::start(
        &home,
        &[
            ("NOTIFY_SOCKET", path.to_str().unwrap()),
            ("WATCHDOG_USEC", "400000"),
        ],
    );
    gw.wait_for_log("NOTIFY_SOCKET is not a socket");
    let out = gw.stop_cleanly();
    assert_eq!(out.matches("NOTIFY_SOCKET").count(), 1, "{out}");
    assert_eq!(std::fs::read(&path).unwrap(), b"");
}

#[test]
fn a_watchdog_device_that_cannot_be_opened_is_one_line_and_the_gateway_runs_on() {
    let home = home("wd-nodev", r#""device":"/nonexistent/watchdog""#);
    let mut gw = Gateway::start(&home, &[]);
    gw.wait_for_log("hardware watchdog off");
    let out = gw.stop_cleanly();
    assert_eq!(out.matches("/nonexistent/watchdog").count(), 1, "{out}");
}
