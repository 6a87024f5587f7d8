//! The host side of the board VM test (`scripts/board-vm.sh`): the soak's fake Telegram
//! Bot API and fake OpenAI-compatible model on 127.0.0.1 ports (a qemu guest reaches them
//! as 10.0.2.2 through user-mode networking), plus a small control server the guest's
//! test script talks to with busybox `wget`.
//!
//! Why it exists: the VM runs the real board binary on an emulated 64 MB board; the fakes
//! must live outside it (they would take the guest's memory) and must tell the guest when
//! every message has been answered.
//!
//! What it does: once the gateway's first `getUpdates` arrives, it sends `-n` messages
//! from `--chats` users (the soak's mix: tool calls, a long reply, a provider 500 retried),
//! one turn in flight per chat, and counts the answers (`done #i` markers). The model
//! answers a heartbeat check-in with `fake_model::HEARTBEAT_REPLY`, which is delivered to
//! Telegram; that delivery is counted as `heartbeats`.
//!
//! Output (stdout): first `VMFAKES bot=URL model=URL ctl=URL token=T allow=ID,ID` (URLs on
//! 127.0.0.1; the caller rewrites the host for the guest), at the end one
//! `VMFAKES-RESULT key=value …` line. Exit 0 when every message was answered and, with
//! `--heartbeats H`, at least H heartbeat check-ins were delivered; 1 otherwise; 2 on bad
//! usage.
//!
//! Control server (`ctl`), plain text answers:
//! - `GET /status`: `polls=P issued=I done=D total=N heartbeats=H now=UNIX` (`now` is
//!   the host's clock: the guest sets its 1970 clock from it, as NTP would)
//! - `GET /stop`: releases held polls, prints the result, and the process exits
//!   `LINGER_SECS` later (so the guest's last requests still get answers).
//!
//! Usage: `vm_fakes [-n N] [--chats C] [--heartbeats H] [--timeout-secs T] [--tls]`.
//! `--tls` is the switch for HTTPS fakes: the Bot API and model URLs become `https://`
//! and the VMFAKES line gains `ca=PATH`, the CA certificate that `scripts/board-vm.sh
//! --tls` copies into the guest for `tls.ca_file` (the certificate must name `yc-host`,
//! the guest's name for the host). The control server stays plain HTTP. Every answer
//! carries a `Date` of the host's clock (`fake_http`), from which a guest whose clock says
//! 1970 takes its time over HTTPS.
//!
//! # Bounds
//! Everything ends after `--timeout-secs` (default 540) with exit 1 when `/stop` never came.
//! At most 64 chats; requests are kept in memory (a VM run sends a few hundred).
#[allow(dead_code)]
#[path = "soak/fake_bot.rs"]
mod fake_bot;
#[path = "../tests/support/fake_http.rs"]
mod fake_http;
#[allow(dead_code)]
#[path = "soak/fake_model.rs"]
mod fake_model;
#[allow(dead_code)]
#[path = "soak/plan.rs"]
mod plan;
#[path = "../tests/support/tls.rs"]
mod tls;

use fake_bot::FakeBot;
use fake_http::{FakeServer, Response};
use fake_model::FakeModel;
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A realistic bot token shape (the fake accepts anything; it is no secret).
const TOKEN: &str = "123456789:AAHdQwErTyUiOpAsDfGhJkLzXcVbNm12345";
/// After `/stop`, answer for this long before exiting.
const LINGER_SECS: u64 = 3;

struct Opts {
    n: u64,
    chats: usize,
    heartbeats: u64,
    timeout_secs: u64,
    tls: bool,
}

fn usage() -> ! {
    eprintln!("usage: vm_fakes [-n N] [--chats C] [--heartbeats H] [--timeout-secs T] [--tls]");
    std::process::exit(2)
}

fn opts() -> Opts {
    let mut o = Opts {
        n: 20,
        chats: 2,
        heartbeats: 0,
        timeout_secs: 540,
        tls: false,
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
            "--heartbeats" => o.heartbeats = num(),
            "--timeout-secs" => o.timeout_secs = num().max(1),
            "--tls" => o.tls = true,
            _ => usage(),
        }
    }
    o
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Heartbeat replies delivered to the Bot API so far.
fn heartbeats_delivered(bot: &FakeBot) -> u64 {
    bot.server
        .requests_to("/sendMessage")
        .iter()
        .filter(|r| r.body.contains(fake_model::HEARTBEAT_REPLY))
        .count() as u64
}

fn status_line(bot: &FakeBot) -> String {
    let (polls, issued, done, total) = bot.with(|s| (s.polls, s.issued, s.done, s.total));
    format!(
        "polls={polls} issued={issued} done={done} total={total} heartbeats={} now={}\n",
        heartbeats_delivered(bot),
        unix_now()
    )
}

fn main() {
    let o = opts();
    // Over TLS: a CA made for this run, its certificate written for the VM's tls.ca_file;
    // the servers' certificates name yc-host (the VM's name for the host) and are valid
    // from before the build, so a board clock stuck in 1970 (floored at the build time)
    // accepts them.
    let ca = o
        .tls
        .then(|| tls::TestCa::new("yoctoclaw board VM test CA"));
    let ca_path = std::env::temp_dir().join(format!("yc-vm-ca-{}.pem", std::process::id()));
    if let Some(ca) = &ca {
        ca.write_pem(&ca_path);
    }
    let model = FakeModel::start(false, ca.as_ref());
    let bot = Arc::new(FakeBot::start(o.chats, o.n, false, ca.as_ref()));
    let stop = Arc::new(AtomicBool::new(false));
    let ctl = {
        let bot = bot.clone();
        let stop = stop.clone();
        FakeServer::start(move |req| match req.path.as_str() {
            "/status" => Response::text(200, &status_line(&bot)),
            "/stop" => {
                bot.stop();
                stop.store(true, Ordering::SeqCst);
                Response::text(200, "stopping\n")
            }
            _ => Response::text(404, "not found\n"),
        })
    };
    let allow: Vec<String> = bot.user_ids().iter().map(|i| i.to_string()).collect();
    let ca_field = if ca.is_some() {
        format!(" ca={}", ca_path.display())
    } else {
        String::new()
    };
    println!(
        "VMFAKES bot={} model={} ctl={} token={TOKEN} allow={}{ca_field}",
        bot.server.url(),
        model.base_url(),
        ctl.url(),
        allow.join(",")
    );
    let _ = std::io::stdout().flush();

    let t_start = Instant::now();
    let deadline = t_start + Duration::from_secs(o.timeout_secs);
    let mut traffic_at: Option<Instant> = None;
    let mut traffic_s: Option<f64> = None;
    while Instant::now() < deadline && !stop.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(20));
        let (polls, done) = bot.with(|s| (s.polls, s.done));
        if traffic_at.is_none() && polls > 0 {
            bot.start_traffic();
            traffic_at = Some(Instant::now());
            eprintln!(
                "vm_fakes: first poll after {:.1} s: sending {} messages",
                t_start.elapsed().as_secs_f64(),
                o.n
            );
        }
        if let (Some(t), None) = (traffic_at, traffic_s)
            && done >= o.n
        {
            traffic_s = Some(t.elapsed().as_secs_f64());
            eprintln!(
                "vm_fakes: all {} messages answered in {:.1} s",
                o.n,
                t.elapsed().as_secs_f64()
            );
        }
    }
    let stopped = stop.load(Ordering::SeqCst);
    bot.stop();
    let code = report(&o, &bot, &model, traffic_s, stopped);
    if stopped {
        std::thread::sleep(Duration::from_secs(LINGER_SECS));
    }
    std::process::exit(code)
}

fn report(
    o: &Opts,
    bot: &FakeBot,
    model: &FakeModel,
    traffic_s: Option<f64>,
    stopped: bool,
) -> i32 {
    let ms = &model.stats;
    let (done, sends, unmarked, typing, polls, mut lat) = bot.with(|s| {
        (
            s.done,
            s.sends,
            s.unmarked_sends,
            s.typing,
            s.polls,
            s.latencies.clone(),
        )
    });
    lat.sort();
    let pct = |p: f64| -> f64 {
        if lat.is_empty() {
            return 0.0;
        }
        let i = ((lat.len() as f64 - 1.0) * p).round() as usize;
        lat.get(i.min(lat.len() - 1))
            .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
    };
    let mean_ms = if lat.is_empty() {
        0.0
    } else {
        lat.iter().map(|d| d.as_secs_f64()).sum::<f64>() * 1000.0 / lat.len() as f64
    };
    let heartbeats = heartbeats_delivered(bot);
    let per_msg_ms = traffic_s.map_or(0.0, |t| t * 1000.0 / o.n as f64);
    println!(
        "VMFAKES-RESULT answered={done}/{} chats={} traffic_s={} per_msg_ms={per_msg_ms:.0} lat_mean_ms={mean_ms:.0} lat_p50_ms={:.0} lat_p90_ms={:.0} lat_max_ms={:.0} model_requests={} tool_calls={} errors_500={} heartbeat_requests={} heartbeats_delivered={heartbeats} send_message={sends} unmarked_sends={unmarked} typing={typing} polls={polls} stopped={}",
        o.n,
        o.chats,
        traffic_s.map_or("na".to_string(), |t| format!("{t:.1}")),
        pct(0.5),
        pct(0.9),
        pct(1.0),
        ms.requests.load(Ordering::Relaxed),
        ms.tool_calls.load(Ordering::Relaxed),
        ms.errors.load(Ordering::Relaxed),
        ms.heartbeats.load(Ordering::Relaxed),
        if stopped { "yes" } else { "no (timeout)" },
    );
    let _ = std::io::stdout().flush();
    let mut code = 0;
    if done < o.n {
        eprintln!("vm_fakes: FAIL: {done} of {} messages answered", o.n);
        code = 1;
    }
    if heartbeats < o.heartbeats {
        eprintln!(
            "vm_fakes: FAIL: {heartbeats} heartbeat check-ins delivered, expected {}",
            o.heartbeats
        );
        code = 1;
    }
    if !stopped {
        eprintln!("vm_fakes: FAIL: the guest never asked to /stop");
        code = 1;
    }
    code
}
