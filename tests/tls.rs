//! HTTPS end to end through the real binary: the fake Bot API and the fake model serve TLS
//! with a CA made at test time, trusted through `tls.ca_file`; then every TLS failure a
//! board meets (wrong name, expired, unknown CA, plain HTTP on an https:// URL, garbage
//! after the handshake, a cut mid-record, stalls, a TLS 1.0 server) must give one clear
//! sentence naming no host, and the next message must work. The 1970 clock of a board
//! without an RTC is simulated with `YOCTOCLAW_TEST_NOW`.

mod support;

use std::io::Read;
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::binary::TEST_NOW;
use support::fake_http::{FakeServer, Response, http_date, json_str, openai_text};
use support::fake_telegram::FakeTelegram;
use support::gateway::FAST_BACKOFF;
use support::tls::{self, DAY_SECS, Mode, Switch, TestCa, unix_now};
use support::{TempHome, hook, text};

const TOKEN: &str = "123456789:AAHdQwErTyUiOpAsDfGhJkLzXcVbNm12345";
const KEY: &str = "sk-test-not-a-real-key";
/// Longest wait for anything the gateway should do (a hang guard, not a timing check).
const PATIENCE: Duration = Duration::from_secs(60);
const ALICE: i64 = 42;

/// A fake model over TLS answering every chat request with `reply` (or an SSE stream).
fn tls_model(ca: &TestCa, reply: &'static str, stream: bool) -> (FakeServer, Switch) {
    tls::serve(
        move |req| {
            if !req.path.ends_with("/v1/chat/completions") {
                return Response::json(404, r#"{"error":{"message":"no route"}}"#);
            }
            if stream {
                sse(&[reply, " (streamed)"])
            } else {
                Response::json(200, &openai_text(reply))
            }
        },
        false,
        ca,
    )
}

/// An OpenAI-compatible SSE stream of `parts`.
fn sse(parts: &[&str]) -> Response {
    let mut chunks = vec![
        b"data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n".to_vec(),
    ];
    for p in parts {
        chunks.push(
            format!(
                "data: {{\"id\":\"c\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":{}}},\"finish_reason\":null}}]}}\n\n",
                json_str(p)
            )
            .into_bytes(),
        );
    }
    chunks.push(
        b"data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"
            .to_vec(),
    );
    Response::Chunked {
        status: 200,
        content_type: "text/event-stream".into(),
        chunks,
        pause: Duration::from_millis(5),
    }
}

/// A home whose config points at `model_url` (and Telegram when given), trusting `ca`
/// through `tls.ca_file` when given.
fn home_for(
    tag: &str,
    model_url: &str,
    extra_provider: &str,
    telegram: Option<&str>,
    ca: Option<&TestCa>,
) -> (TempHome, PathBuf) {
    let home = TempHome::onboarded(tag, "{}");
    let ca_path = home.dir.join("private-ca.pem");
    let mut cfg = format!(
        r#"{{"provider":{{"base_url":"{model_url}/v1","model":"fake-model"{extra_provider}}}"#
    );
    if let Some(tg) = telegram {
        cfg.push_str(&format!(
            r#","telegram":{{"enabled":true,"api_base":"{tg}","allow_from":["{ALICE}"],"poll_timeout_secs":1}}"#
        ));
    }
    if let Some(ca) = ca {
        ca.write_pem(&ca_path);
        cfg.push_str(r#","tls":{"ca_file":"private-ca.pem"}"#);
    }
    cfg.push('}');
    home.write_config(&cfg);
    (home, ca_path)
}

fn agent(home: &TempHome, envs: &[(&str, &str)]) -> (Option<i32>, String, String) {
    let mut c = home.cmd(&["agent", "-m", "hello"]);
    c.env("YOCTOCLAW_API_KEY", KEY);
    for (k, v) in envs {
        c.env(k, v);
    }
    let out = c.output().expect("run agent");
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

/// The last stderr line: the `yoctoclaw: …` sentence.
fn sentence(stderr: &str) -> String {
    stderr
        .lines()
        .rev()
        .find(|l| l.starts_with("yoctoclaw: "))
        .unwrap_or("")
        .to_string()
}

fn assert_no_host(s: &str, port: u16) {
    assert!(
        !s.contains("127.0.0.1") && !s.contains(&port.to_string()) && !s.contains(KEY),
        "the sentence names a host, port or key: {s}"
    );
}

// ---- the happy paths ----

#[test]
fn a_streamed_provider_turn_works_over_tls_with_a_private_ca() {
    let ca = TestCa::new("yoctoclaw test CA");
    let (model, _sw) = tls_model(&ca, "pong over TLS", true);
    let (home, _) = home_for(
        "tls-stream",
        &model.url(),
        r#","stream":true"#,
        None,
        Some(&ca),
    );
    let (code, out, err) = agent(&home, &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("pong over TLS (streamed)"), "{out}\n{err}");
    let req = &model.requests()[0];
    assert_eq!(req.header("accept"), Some("text/event-stream"));
    assert_eq!(
        req.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
}

#[test]
fn the_ca_file_can_come_from_the_environment() {
    let ca = TestCa::new("yoctoclaw test CA");
    let (model, _sw) = tls_model(&ca, "pong", false);
    let (home, ca_path) = home_for("tls-env", &model.url(), "", None, None);
    ca.write_pem(&ca_path);
    let (code, _, err) = agent(&home, &[]);
    assert_eq!(code, Some(1), "trusted without the CA file: {err}");
    let (code, out, err) = agent(
        &home,
        &[("YOCTOCLAW_TLS_CA_FILE", ca_path.to_str().unwrap())],
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("pong"), "{out}");
}

#[test]
fn a_private_ca_without_ca_file_says_to_point_ca_file_at_it() {
    let ca = TestCa::new("yoctoclaw test CA");
    let (model, _sw) = tls_model(&ca, "pong", false);
    let (home, _) = home_for("tls-noca", &model.url(), "", None, None);
    let (code, _, err) = agent(&home, &[]);
    assert_eq!(code, Some(1), "{err}");
    let s = sentence(&err);
    assert!(s.contains("not signed by a trusted authority"), "{s}");
    assert!(s.contains("point tls.ca_file at"), "{s}");
    assert_no_host(&s, model.port());
    // The log line before it names the host, for the operator.
    assert!(
        err.contains(&format!("provider at 127.0.0.1:{}", model.port())),
        "{err}"
    );
    // A certificate problem is not retried: one connection.
    assert_eq!(model.connections(), 1);
}

/// A running gateway with its stderr collected.
struct Gateway {
    child: Child,
    log: Arc<Mutex<String>>,
}

impl Gateway {
    fn start(home: &TempHome) -> Gateway {
        let mut child = home
            .cmd(&["gateway"])
            .env("TELEGRAM_BOT_TOKEN", TOKEN)
            .env("YOCTOCLAW_API_KEY", KEY)
            .env(FAST_BACKOFF.0, FAST_BACKOFF.1)
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the gateway");
        let mut r = child.stderr.take().unwrap();
        let log = Arc::new(Mutex::new(String::new()));
        let l = log.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = r.read(&mut buf) {
                if n == 0 {
                    break;
                }
                l.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        Gateway { child, log }
    }

    fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    fn wait_for(&mut self, what: &str, mut cond: impl FnMut() -> bool) {
        let start = Instant::now();
        while !cond() {
            if let Ok(Some(st)) = self.child.try_wait() {
                panic!("gateway exited ({st}) waiting for {what}:\n{}", self.log());
            }
            if start.elapsed() > PATIENCE {
                panic!("timed out waiting for {what}:\n{}", self.log());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Send `msg` as Alice and wait for a reply containing `want`; returns the reply.
    fn ask(&mut self, tg: &FakeTelegram, msg: &str, want: &str) -> String {
        let before = tg.sent_to(ALICE).len();
        tg.push_private(ALICE, "alice", msg);
        let mut reply = String::new();
        self.wait_for(&format!("a reply containing {want:?} to {msg:?}"), || {
            let sent = tg.sent_to(ALICE);
            match sent
                .get(before..)
                .and_then(|s| s.iter().find(|s| s.text.contains(want)))
            {
                Some(s) => {
                    reply = s.text.clone();
                    true
                }
                None => false,
            }
        });
        reply
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_telegram_round_trip_over_tls_reuses_its_connections() {
    let ca = TestCa::new("yoctoclaw test CA");
    let (model, _msw) = tls_model(&ca, "pong over TLS", false);
    let mut tg_switch = None;
    let tg = FakeTelegram::start_with(|h| {
        let (server, sw) = tls::serve(h, true, &ca);
        tg_switch = Some(sw);
        server
    });
    let (home, _) = home_for("tls-tg", &model.url(), "", Some(&tg.url()), Some(&ca));
    let mut g = Gateway::start(&home);
    for i in 0..3 {
        let reply = g.ask(&tg, &format!("ping {i}"), "pong over TLS");
        assert!(reply.contains("pong over TLS"), "{reply}");
    }
    let polls_before = tg.polls();
    g.wait_for("ten more polls", || tg.polls() >= polls_before + 10);
    // Long polls, sends and typing ride on kept-alive connections: a handful of
    // handshakes, not one per request.
    let requests = tg.server.requests().len() as u64;
    let handshakes = tg.server.connections();
    assert!(
        handshakes <= 4 && requests >= 20,
        "{handshakes} TLS handshakes for {requests} Bot API requests"
    );
}

#[test]
fn telegram_over_tls_recovers_once_its_certificate_is_trusted() {
    let ca = TestCa::new("yoctoclaw test CA");
    let (model, _msw) = tls_model(&ca, "pong", false);
    let mut tg_switch = None;
    let tg = FakeTelegram::start_with(|h| {
        let (server, sw) = tls::serve(h, true, &ca);
        sw.set(Mode::UnknownCa);
        tg_switch = Some(sw);
        server
    });
    let sw = tg_switch.unwrap();
    let (home, _) = home_for("tls-tg-ca", &model.url(), "", Some(&tg.url()), Some(&ca));
    let mut g = Gateway::start(&home);
    let log = g.log.clone();
    let has = |s: &str| log.lock().unwrap().contains(s);
    g.wait_for("the unknown-CA sentence in the log", || {
        has("point tls.ca_file at")
    });
    let log = g.log();
    assert!(log.contains("not signed by a trusted authority"), "{log}");
    assert!(
        tg.polls() == 0,
        "a request went through an untrusted certificate"
    );
    sw.set(Mode::WrongName);
    g.wait_for("the wrong-name sentence in the log", || {
        has("certificate is for another host name")
    });
    sw.set(Mode::Good);
    let reply = g.ask(&tg, "ping", "pong");
    assert!(reply.contains("pong"));
}

/// The doctor line of check `name`.
fn doctor_line<'a>(report: &'a str, name: &str) -> &'a str {
    report
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some(name))
        .unwrap_or("")
}

/// For each failure mode of the model's server: the user gets one sentence naming the
/// failure and what to do (no host, port or key), and the next message is answered.
fn failures_then_recovery(tag: &str, cases: &[(Mode, &str)], extra_provider: &str) {
    let ca = TestCa::new("yoctoclaw test CA");
    let (model, sw) = tls_model(&ca, "pong after the failure", false);
    let tg = FakeTelegram::start();
    let (home, _) = home_for(
        tag,
        &model.url(),
        extra_provider,
        Some(&tg.url()),
        Some(&ca),
    );
    let mut g = Gateway::start(&home);
    g.ask(&tg, "warm up", "pong after the failure");
    for (mode, want) in cases {
        sw.set(*mode);
        let reply = g.ask(
            &tg,
            &format!("during {mode:?}"),
            "Sorry, I could not answer that",
        );
        assert!(reply.contains(want), "{mode:?}: {reply}");
        assert_no_host(&reply, model.port());
        assert!(
            !reply.contains('\n') && reply.len() < 300,
            "one sentence: {reply}"
        );
        sw.set(Mode::Good);
        let ok = g.ask(&tg, &format!("after {mode:?}"), "pong after the failure");
        assert!(!ok.contains("Sorry"), "{mode:?}: {ok}");
    }
    let log = g.log();
    assert!(
        log.contains(&format!("provider at 127.0.0.1:{}", model.port())),
        "the log names the host: {log}"
    );
    assert!(!log.contains("panicked"), "{log}");
}

#[test]
fn each_tls_failure_of_the_provider_is_one_clear_sentence_and_the_next_message_works() {
    failures_then_recovery(
        "tls-fail",
        &[
            (
                Mode::WrongName,
                "certificate is for another host name: check the host name in the URL",
            ),
            (
                Mode::Expired,
                "certificate has expired: the server must renew it",
            ),
            (
                Mode::UnknownCa,
                "point tls.ca_file at that CA's certificate",
            ),
            (
                Mode::PlainHttp,
                "did not answer in TLS: if it is a plain HTTP server, use an http:// URL",
            ),
            (
                Mode::GarbageAfterHandshake,
                "received corrupt data: try again",
            ),
            (
                Mode::CutMidRecord,
                "cut in the middle of the answer: try again",
            ),
            (
                Mode::Tls10,
                "only an old TLS version (1.0 or 1.1): it must allow TLS 1.2 or 1.3",
            ),
            (
                Mode::ProtocolVersionAlert,
                "only an old TLS version (1.0 or 1.1)",
            ),
        ],
        "",
    );
}

#[test]
fn a_stalled_tls_server_times_out_with_a_sentence_and_the_next_message_works() {
    failures_then_recovery(
        "tls-stall",
        &[
            (
                Mode::StallHandshake,
                "the provider did not answer in time: try again, or raise provider.timeout_secs",
            ),
            (
                Mode::StallAfterHandshake,
                "the provider did not answer in time",
            ),
        ],
        r#","timeout_secs":5"#,
    );
}

// ---- the 1970 clock ----

#[test]
fn with_the_clock_in_1970_a_certificate_valid_at_build_time_is_accepted() {
    let ca = TestCa::new("yoctoclaw test CA");
    let (model, sw) = tls_model(&ca, "pong in 1970", false);
    let (home, _) = home_for("tls-1970", &model.url(), "", None, Some(&ca));
    let (code, out, err) = agent(&home, &[(hook(TEST_NOW), "0")]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("pong in 1970"), "{out}");
    // One that expired before the build is still refused, with the sentence.
    sw.set(Mode::Expired);
    let (code, _, err) = agent(&home, &[(hook(TEST_NOW), "0")]);
    assert_eq!(code, Some(1), "{err}");
    let s = sentence(&err);
    assert!(s.contains("the server's certificate has expired"), "{s}");
    assert_no_host(&s, model.port());
}

/// Two turns in one `agent` process (two lines on stdin) at the clock `now`.
fn two_turns(home: &TempHome, now: &str) {
    use std::io::Write as _;
    let mut c = home
        .cmd(&["agent"])
        .env("YOCTOCLAW_API_KEY", KEY)
        .env(hook(TEST_NOW), now)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run agent");
    c.stdin
        .take()
        .unwrap()
        .write_all(b"hello\nagain\n")
        .unwrap();
    let out = c.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
}

#[test]
fn with_the_clock_in_1970_the_time_comes_from_the_date_of_an_https_answer() {
    // A board without an RTC or NTP: the first verified HTTPS answer's Date sets the time
    // for everything after it (here: the system prompt of the next turn).
    let ca = TestCa::new("yoctoclaw test CA");
    let dated = |_: &support::fake_http::Request| {
        Response::json(200, &openai_text("ok")).with_header("Date", &http_date(unix_now()))
    };
    let (model, _sw) = tls::serve(dated, false, &ca);
    let (home, _) = home_for("tls-date", &model.url(), "", None, Some(&ca));
    two_turns(&home, "86400");
    let reqs = model.requests_to("/chat/completions");
    assert_eq!(reqs.len(), 2);
    let year = yoctoclaw::time::civil::CivilDateTime::from_unix(unix_now()).year;
    assert!(
        reqs[0].body.contains("Current time: 1970-01-02"),
        "before any answer"
    );
    assert!(
        reqs[1].body.contains(&format!("Current time: {year}-")),
        "after the first answer: its Date"
    );
    // doctor says which clock is in use.
    let out = home
        .cmd(&["doctor"])
        .env("YOCTOCLAW_API_KEY", KEY)
        .env(hook(TEST_NOW), "86400")
        .output()
        .unwrap();
    let report = text(&out.stdout);
    let line = doctor_line(&report, "time");
    assert!(
        line.contains(&format!("{year}-")) && line.contains("HTTPS"),
        "{report}"
    );
    // An answer over plain HTTP (anyone on the LAN could forge it) is not trusted.
    let plain = FakeServer::start(dated);
    let (home, _) = home_for("tls-date-plain", &plain.url(), "", None, None);
    two_turns(&home, "86400");
    let reqs = plain.requests_to("/chat/completions");
    assert_eq!(reqs.len(), 2);
    assert!(
        reqs[1].body.contains("Current time: 1970-01-02"),
        "plain HTTP"
    );
}

#[test]
fn the_fakes_date_every_answer_as_a_real_server_does() {
    // The board VM's 1970 clock is set from these Dates over HTTPS: each answer of the
    // fakes carries one the binary's parser reads back, of the time it was sent.
    for t in (0..4_000_000_000i64)
        .step_by(7_777_777)
        .chain([951_782_400, 4_107_542_399])
    {
        let d = http_date(t);
        assert_eq!(yoctoclaw::time::civil::parse_http_date(&d), Some(t), "{d}");
    }
    assert_eq!(http_date(784_111_777), "Sun, 06 Nov 1994 08:49:37 GMT");
    assert_eq!(http_date(0), "Thu, 01 Jan 1970 00:00:00 GMT");
    let own = FakeServer::start(|r| {
        if r.path == "/own" {
            Response::text(200, "x").with_header("Date", "Sun, 06 Nov 1994 08:49:37 GMT")
        } else {
            Response::text(200, "x")
        }
    });
    let head = |path: &str| {
        use std::io::Write as _;
        let mut c = std::net::TcpStream::connect(("127.0.0.1", own.port())).unwrap();
        write!(c, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut s = String::new();
        c.read_to_string(&mut s).unwrap();
        s.lines()
            .filter_map(|l| l.strip_prefix("Date: "))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let before = unix_now();
    let dates = head("/");
    let after = unix_now();
    assert_eq!(dates.len(), 1, "{dates:?}");
    let t = yoctoclaw::time::civil::parse_http_date(&dates[0]).unwrap();
    assert!(before <= t && t <= after, "{dates:?}");
    assert_eq!(
        head("/own"),
        ["Sun, 06 Nov 1994 08:49:37 GMT"],
        "the handler's own"
    );
}

#[test]
fn a_heartbeat_from_a_crontab_on_a_1970_board_learns_the_time_over_https() {
    // No RTC, no NTP, no gateway running: `yoctoclaw heartbeat` asks the provider for
    // the time (its Date) before judging the clock, instead of holding forever.
    let ca = TestCa::new("yoctoclaw test CA");
    let (model, _sw) = tls::serve(
        |_: &support::fake_http::Request| Response::json(200, &openai_text("HEARTBEAT_OK")),
        false,
        &ca,
    );
    let (home, _) = home_for("tls-hb-1970", &model.url(), "", None, Some(&ca));
    std::fs::write(
        home.workspace().join("HEARTBEAT.md"),
        "# Heartbeat\n- Check the disk.\n",
    )
    .unwrap();
    let out = home
        .cmd(&["heartbeat"])
        .env("YOCTOCLAW_API_KEY", KEY)
        .env(hook(TEST_NOW), "86400")
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(!err.contains("held"), "{err}");
    assert_eq!(model.requests_to("/chat/completions").len(), 1, "{err}");
}

#[test]
fn the_certificate_clock_follows_the_wall_clock_past_the_build_time() {
    // The good certificate ends 30 days from now: 60 days on, it has expired, which
    // shows the certificate check reads the same (hookable) clock as everything else.
    let ca = TestCa::new("yoctoclaw test CA");
    let (model, _sw) = tls_model(&ca, "pong", false);
    let (home, _) = home_for("tls-future", &model.url(), "", None, Some(&ca));
    let later = (unix_now() + 60 * DAY_SECS).to_string();
    let (code, _, err) = agent(&home, &[(hook(TEST_NOW), &later)]);
    assert_eq!(code, Some(1), "{err}");
    assert!(sentence(&err).contains("has expired"), "{err}");
}

// ---- tls.ca_file itself ----

#[test]
fn a_bad_ca_file_is_a_configuration_error_naming_the_key() {
    let ca = TestCa::new("yoctoclaw test CA");
    let key_pem = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n-----END PRIVATE KEY-----\n";
    let cut = &ca.pem()[..ca.pem().len() / 2];
    let bad_der = "-----BEGIN CERTIFICATE-----\nAAECAwQFBgcICQ==\n-----END CERTIFICATE-----\n";
    let cases: &[(Option<&str>, &str)] = &[
        (None, "does not exist"),
        (Some(""), "holds no \"BEGIN CERTIFICATE\" block"),
        (
            Some("just some text\n"),
            "holds no \"BEGIN CERTIFICATE\" block",
        ),
        (Some(key_pem), "holds no \"BEGIN CERTIFICATE\" block"),
        (Some(cut), "is not valid PEM"),
        (Some(bad_der), "certificate 1 in"),
    ];
    for (content, want) in cases {
        let home = TempHome::onboarded("tls-badca", r#"{"tls":{"ca_file":"ca.pem"}}"#);
        if let Some(c) = content {
            std::fs::write(home.dir.join("ca.pem"), c).unwrap();
        }
        for cmd in [&["agent", "-m", "hi"][..], &["status"][..]] {
            let out = home.run(cmd);
            let err = text(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{content:?} {cmd:?}: {err}");
            let s = sentence(&err);
            assert!(s.contains("config key \"tls.ca_file\""), "{s}");
            assert!(s.contains(want), "{content:?}: {s}");
            assert!(
                !s.contains("BEGIN PRIVATE KEY") && !s.contains("MC4C"),
                "{s}"
            );
        }
        // doctor shows it as a failed check and goes on.
        let out = home.run(&["doctor"]);
        let o = text(&out.stdout);
        let line = doctor_line(&o, "tls");
        assert!(line.contains("FAIL") && line.contains(want), "{o}");
    }
    // A directory is unreadable as a file.
    let home = TempHome::onboarded("tls-dirca", r#"{"tls":{"ca_file":"workspace"}}"#);
    let out = home.run(&["agent", "-m", "hi"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        sentence(&text(&out.stderr)).contains("cannot read"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn doctor_shows_the_ca_file_and_reaches_a_server_it_signed() {
    let ca = TestCa::new("yoctoclaw test CA");
    let other = TestCa::new("yoctoclaw second test CA");
    let (model, _sw) = tls_model(&ca, "pong", false);
    let (home, ca_path) = home_for("tls-doctor", &model.url(), "", None, Some(&ca));
    // Two anchors in one file.
    std::fs::write(&ca_path, format!("{}\n{}", other.pem(), ca.pem())).unwrap();
    let out = home
        .cmd(&["doctor"])
        .env("YOCTOCLAW_API_KEY", KEY)
        .output()
        .unwrap();
    let o = text(&out.stdout);
    let tls_line = doctor_line(&o, "tls");
    assert!(
        tls_line.contains("OK")
            && tls_line.contains("2 extra trust anchor(s) from")
            && tls_line.contains("private-ca.pem"),
        "{o}"
    );
    let provider = doctor_line(&o, "provider");
    assert!(provider.contains("TLS handshake ok"), "{o}");
}
