//! The serial console end to end: the real binary on one side of a pseudo-terminal pair,
//! the test on the other, the fake provider behind it. The device is reached through a
//! symlink so the test can pull it away and bring it back like a USB serial adapter.
#![cfg(target_os = "linux")]

mod support;

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};
use support::fake_http::{FakeServer, Response, json_str, openai_text, openai_tool_call};
use support::{TempHome, config_for};

/// Generous: the reconnect waits 1 s, then 2 s, 4 s… and CI machines are slow.
const DEADLINE: Duration = Duration::from_secs(60);

/// The test's end of a pseudo-terminal: everything the program writes is collected.
struct Pty {
    master: Option<File>,
    seen: Arc<Mutex<Vec<u8>>>,
    stop: Arc<AtomicBool>,
    reader: Option<JoinHandle<()>>,
}

impl Pty {
    /// A new pair, or `None` only after `skipped` said why (this system cannot make one;
    /// CI's can, and fails the test instead).
    fn open() -> Option<(Pty, PathBuf)> {
        let (master, slave) = support::testkit::pty("serial over a pseudo-terminal")?;
        // Non-blocking, so the reader thread can notice `stop` and let go of the master.
        let flags = rustix::fs::fcntl_getfl(&master).expect("F_GETFL on the pty master");
        rustix::fs::fcntl_setfl(&master, flags | rustix::fs::OFlags::NONBLOCK)
            .expect("F_SETFL on the pty master");
        let master = File::from(master);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let reader = {
            let mut m = master.try_clone().expect("clone the pty master");
            let seen = seen.clone();
            let stop = stop.clone();
            thread::spawn(move || {
                let mut buf = [0u8; 512];
                while !stop.load(Ordering::SeqCst) {
                    match m.read(&mut buf) {
                        Ok(n) if n > 0 => seen.lock().unwrap().extend_from_slice(&buf[..n]),
                        // EAGAIN: nothing yet; EIO: the other side is not open (yet).
                        _ => thread::sleep(Duration::from_millis(20)),
                    }
                }
            })
        };
        Some((
            Pty {
                master: Some(master),
                seen,
                stop,
                reader: Some(reader),
            },
            slave,
        ))
    }

    fn send(&self, bytes: &[u8]) {
        let mut m = self.master.as_ref().expect("master open");
        let mut rest = bytes;
        while !rest.is_empty() {
            match m.write(rest) {
                Ok(n) => rest = &rest[n..],
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    thread::sleep(Duration::from_millis(10))
                }
                Err(e) => panic!("write to the pty: {e}"),
            }
        }
    }

    fn seen(&self) -> String {
        String::from_utf8_lossy(&self.seen.lock().unwrap()).into_owned()
    }

    /// Wait until the output contains `needle` `times` times; returns the output.
    fn wait_for(&self, needle: &str, times: usize, child: &mut Running) -> String {
        child.wait_until(&format!("{needle:?} on the line"), || {
            let s = self.seen();
            if s.matches(needle).count() >= times {
                Ok(s)
            } else {
                Err(s)
            }
        })
    }

    /// Close the test's side completely: the program's side hangs up.
    fn close(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
        self.master = None;
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        self.close();
    }
}

/// Kills the child when the test ends, whatever happens; its stderr goes to a file.
struct Running(Child, PathBuf);

impl Running {
    fn log(&self) -> String {
        std::fs::read_to_string(&self.1).unwrap_or_default()
    }

    /// Wait until the log (stderr) contains `needle`, the program running all along.
    fn wait_for_log(&mut self, needle: &str) {
        let log = self.1.clone();
        self.wait_until(&format!("{needle:?} in the log"), || {
            let s = std::fs::read_to_string(&log).unwrap_or_default();
            if s.contains(needle) {
                Ok(())
            } else {
                Err(String::new())
            }
        });
    }

    /// Poll `check` (`Ok`: done; `Err`: what was seen so far) until it is done; panic if
    /// the program exits first or after [`DEADLINE`].
    fn wait_until<T>(&mut self, what: &str, mut check: impl FnMut() -> Result<T, String>) -> T {
        let start = Instant::now();
        loop {
            let seen = match check() {
                Ok(done) => return done,
                Err(seen) => seen,
            };
            if let Ok(Some(status)) = self.0.try_wait() {
                panic!(
                    "yoctoclaw exited ({status}) before {what}; saw {seen:?}; log: {}",
                    self.log()
                );
            }
            assert!(
                start.elapsed() < DEADLINE,
                "no {what}; saw {seen:?}; log: {}",
                self.log()
            );
            thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn link(target: &Path, link: &Path) {
    let tmp = link.with_extension("new");
    let _ = std::fs::remove_file(&tmp);
    std::os::unix::fs::symlink(target, &tmp).expect("symlink");
    std::fs::rename(&tmp, link).expect("rename symlink");
}

/// A fake provider answering "reply N" for the Nth request.
fn counting_provider() -> FakeServer {
    let n = Arc::new(AtomicUsize::new(0));
    FakeServer::start(move |req| {
        if !req.path.ends_with("/chat/completions") {
            return Response::json(404, "{}");
        }
        let i = n.fetch_add(1, Ordering::SeqCst) + 1;
        Response::json(200, &openai_text(&format!("reply {i}\nline two of {i}")))
    })
}

fn spawn_serial(home: &TempHome, device: &Path, echo: bool) -> Running {
    let log = home.dir.join("serial-stderr.log");
    let mut args = vec!["serial", "--device", device.to_str().unwrap()];
    if echo {
        args.push("--echo");
    }
    let child = home
        .cmd(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::from(File::create(&log).unwrap()))
        .spawn()
        .expect("spawn yoctoclaw serial");
    Running(child, log)
}

#[test]
fn a_full_turn_and_a_slash_command_over_a_serial_line() {
    let Some((pty, slave)) = Pty::open() else {
        return;
    };
    let fake = counting_provider();
    let home = TempHome::onboarded("serial-turn", &config_for(&fake.url(), ""));
    let dev = home.dir.join("ttyTEST");
    link(&slave, &dev);
    let mut child = spawn_serial(&home, &dev, true);

    pty.wait_for("/help for commands.\r\n> ", 1, &mut child);
    pty.send(b"hellp\x7fo\r\n");
    let out = pty.wait_for("line two of 1\r\n> ", 1, &mut child);
    // Echo as a terminal: the typo erased, CRLF at the end of the line.
    assert!(out.contains("hellp\x08 \x08o\r\n"), "{out:?}");
    // The reply with CRLF line endings, and no bare LF anywhere.
    assert!(out.contains("reply 1\r\nline two of 1\r\n> "), "{out:?}");
    assert!(!out.replace("\r\n", "").contains('\n'), "{out:?}");

    let reqs = fake.requests_to("/chat/completions");
    assert_eq!(reqs.len(), 1, "CRLF is one end of line, not two");
    assert!(
        reqs[0].body.contains("\"content\":\"hello\""),
        "{}",
        reqs[0].body
    );
    assert!(reqs[0].body.contains("Channel: serial"), "{}", reqs[0].body);

    // Slash commands work here too and never reach the model.
    pty.send(b"/help\r");
    let out = pty.wait_for("/status - ", 1, &mut child);
    assert!(out.contains("Commands:\r\n/new"), "{out:?}");
    pty.send(b"/status\r");
    let out = pty.wait_for("session: serial:", 1, &mut child);
    assert!(
        out.contains(&format!("session: serial:{}", dev.display())),
        "{out:?}"
    );
    assert_eq!(fake.requests_to("/chat/completions").len(), 1);
}

#[test]
fn the_console_survives_the_device_going_away_and_coming_back() {
    let Some((mut pty, slave)) = Pty::open() else {
        return;
    };
    let fake = counting_provider();
    let home = TempHome::onboarded("serial-replug", &config_for(&fake.url(), ""));
    let dev = home.dir.join("ttyUSBTEST");
    link(&slave, &dev);
    let mut child = spawn_serial(&home, &dev, false);

    pty.wait_for("/help for commands.\r\n> ", 1, &mut child);
    pty.send(b"first\r");
    pty.wait_for("line two of 1\r\n> ", 1, &mut child);

    // Unplug: the device node goes away and the line hangs up. The loss is noticed
    // (logged, "reopening") and the program carries on without its device.
    std::fs::remove_file(&dev).unwrap();
    pty.close();
    child.wait_for_log("); reopening");
    assert!(
        child.0.try_wait().unwrap().is_none(),
        "yoctoclaw must keep running without its device"
    );

    // Plug back in (a new pseudo-terminal behind the same path).
    let (pty2, slave2) = Pty::open().expect("second pty");
    link(&slave2, &dev);
    pty2.wait_for("/help for commands.\r\n> ", 1, &mut child);
    pty2.send(b"second\n");
    pty2.wait_for("line two of 2\r\n> ", 1, &mut child);

    // Same session: the second request carries the first exchange.
    let reqs = fake.requests_to("/chat/completions");
    assert_eq!(reqs.len(), 2);
    assert!(
        reqs[1].body.contains("\"content\":\"first\""),
        "{}",
        reqs[1].body
    );
    assert!(
        reqs[1].body.contains("\"content\":\"second\""),
        "{}",
        reqs[1].body
    );

    // One warning for the outage, one line when it is back; not one per retry.
    let log = child.log();
    assert_eq!(log.matches("lost (").count(), 1, "{log}");
    assert_eq!(log.matches(": back,").count(), 1, "{log}");
    assert!(
        !log.contains("still cannot open"),
        "retries are debug-level: {log}"
    );
}

#[test]
fn the_gateway_runs_a_serial_console_when_serial_device_is_set() {
    let Some((pty, slave)) = Pty::open() else {
        return;
    };
    let fake = counting_provider();
    let home = TempHome::new("serial-gateway");
    let dev = home.dir.join("ttyGW");
    let out = home.run(&["onboard"]);
    assert!(out.status.success());
    link(&slave, &dev);
    home.write_config(&config_for(
        &fake.url(),
        &format!(
            r#""serial":{{"device":"{}","baud":115200}},"heartbeat":{{"enabled":false}}"#,
            dev.display()
        ),
    ));
    let log = home.dir.join("gateway-stderr.log");
    let child = home
        .cmd(&["gateway"])
        .stdout(Stdio::null())
        .stderr(Stdio::from(File::create(&log).unwrap()))
        .spawn()
        .expect("spawn gateway");
    let mut child = Running(child, log);
    pty.wait_for("> ", 1, &mut child);
    pty.send(b"hi from the uart\r");
    let out = pty.wait_for("line two of 1\r\n", 1, &mut child);
    assert!(out.contains("reply 1\r\n"), "{out:?}");
    let reqs = fake.requests_to("/chat/completions");
    assert_eq!(reqs.len(), 1);
    assert!(reqs[0].body.contains("Channel: serial"), "{}", reqs[0].body);
}

#[test]
fn approvals_are_asked_and_answered_on_the_serial_line() {
    let Some((pty, slave)) = Pty::open() else {
        return;
    };
    let n = Arc::new(AtomicUsize::new(0));
    let fake = FakeServer::start(move |req| {
        if !req.path.ends_with("/chat/completions") {
            return Response::json(404, "{}");
        }
        match n.fetch_add(1, Ordering::SeqCst) {
            0 => Response::json(
                200,
                &openai_tool_call(
                    "c1",
                    "exec",
                    &json_str(r#"{"command":"echo approved-run"}"#),
                ),
            ),
            _ => Response::json(200, &openai_text("all done")),
        }
    });
    let home = TempHome::onboarded("serial-approve", &config_for(&fake.url(), ""));
    let dev = home.dir.join("ttyAPPROVE");
    link(&slave, &dev);
    let mut child = spawn_serial(&home, &dev, false);
    pty.wait_for("> ", 1, &mut child);
    pty.send(b"run it\r");
    pty.wait_for("echo approved-run", 1, &mut child);
    pty.send(b"yes\r");
    pty.wait_for("all done\r\n", 1, &mut child);
    let reqs = fake.requests_to("/chat/completions");
    assert_eq!(reqs.len(), 2);
    assert!(
        reqs[1].body.contains(
            r#""role":"tool","tool_call_id":"c1","content":"exit code: 0\napproved-run\n""#
        ),
        "the command ran after the yes: {}",
        reqs[1].body
    );
}
