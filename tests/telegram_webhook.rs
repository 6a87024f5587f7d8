//! Telegram's webhook mode end to end: the real gateway, the fake Bot API (recording
//! `setWebhook`, `deleteWebhook` and `getWebhookInfo`) and updates POSTed to
//! `/webhook/telegram` over a real socket exactly as Telegram posts them (one JSON
//! `Update`, `Content-Type: application/json`, the secret in
//! `X-Telegram-Bot-Api-Secret-Token`). Answers leave through `sendMessage` as in polling
//! mode. Absence (a refused or repeated update never answered) is shown by a later update
//! being answered first and alone, never by a sleep.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;
use support::TempHome;
use support::fake_http::FakeServer;
use support::fake_telegram::{FakeTelegram, message};
use support::gateway::Gateway;
use support::http_client::*;

const SECRET: &str = "yc-webhook-secret_0123456789abcdef";
const URL: &str = "https://bot.example.org/webhook/telegram";

/// `config.json` with Telegram in `mode` (Alice allowed) and the HTTP server on.
fn config(llm: &FakeServer, tg: &FakeTelegram, mode: &str) -> String {
    format!(
        r#"{{"provider":{{"base_url":"{}/v1","model":"fake-model"}},"telegram":{{"enabled":true,"api_base":"{}","allow_from":["{ALICE}"],"poll_timeout_secs":1,"mode":"{mode}","webhook_url":"{URL}"}},"http":{{"enabled":true,"listen":"127.0.0.1:0","rate_per_minute":100000}}}}"#,
        llm.url(),
        tg.url()
    )
}

/// The gateway in webhook mode with the secret; its HTTP port.
fn start_webhook(home: &TempHome) -> (Gateway, u16) {
    let mut g = Gateway::start(
        home,
        &[
            support::gateway::FAST_BACKOFF,
            ("YOCTOCLAW_HTTP_TOKEN", HTTP_TOKEN),
            ("YOCTOCLAW_TELEGRAM_WEBHOOK_SECRET", SECRET),
        ],
    );
    g.wait_for_log("serving Telegram");
    let log = g.log();
    let key = "http: listening on 127.0.0.1:";
    let at = log.find(key).expect("the listening line") + key.len();
    let port = log[at..]
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|p| p.parse().ok())
        .expect("a port in the log");
    (g, port)
}

/// An Update as Telegram posts it: Alice's private text.
fn update(id: i64, text: &str) -> String {
    format!(
        r#"{{"update_id":{id},"message":{}}}"#,
        message(ALICE, "alice", ALICE, "private", text, None)
    )
}

/// POST `body` to the webhook as Telegram does (`secret`: the header's value, if any).
fn post(port: u16, body: &str, secret: Option<&str>) -> Reply {
    let header = secret
        .map(|s| format!("X-Telegram-Bot-Api-Secret-Token: {s}\r\n"))
        .unwrap_or_default();
    exchange(
        port,
        &format!(
            "POST /webhook/telegram HTTP/1.1\r\nHost: bot.example.org\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{header}Connection: close\r\n\r\n{body}",
            body.len()
        ),
    )
}

fn answers_to_alice(tg: &FakeTelegram) -> Vec<String> {
    tg.sent_to(ALICE).into_iter().map(|s| s.text).collect()
}

fn wait_answer(g: &mut Gateway, tg: &FakeTelegram, text: &str) {
    let want = format!("You said: {text}");
    g.wait_for("the webhook update's answer", || {
        answers_to_alice(tg).contains(&want)
    });
}

#[test]
fn webhook_mode_sets_the_webhook_answers_posts_and_refuses_the_rest() {
    let llm = echo_model(Duration::ZERO);
    let tg = FakeTelegram::start();
    let home = TempHome::onboarded("tg-webhook", &config(&llm, &tg, "webhook"));
    let (mut g, port) = start_webhook(&home);

    // setWebhook with the URL, the secret, the poll's kinds, one connection at a time.
    g.wait_for("setWebhook", || !tg.calls("setWebhook").is_empty());
    let set = yoctoclaw::json::parse_value(&tg.calls("setWebhook")[0]).unwrap();
    assert_eq!(yoctoclaw::json::str_at(&set, "url"), Some(URL));
    assert_eq!(yoctoclaw::json::str_at(&set, "secret_token"), Some(SECRET));
    assert!(tg.calls("setWebhook")[0].contains(r#""allowed_updates":["message"]"#));
    assert_eq!(tg.webhook(), URL);
    assert_eq!(tg.polls(), 0, "no poller runs in webhook mode");
    // No poll to age: /health leaves Telegram out and stays healthy.
    let h = get(port, "/health", None);
    assert_eq!(h.status, 200, "{}", h.body);

    // A wrong secret and a missing one: 401, nothing taken.
    let r = post(port, &update(100, "from a forger"), Some("not-the-secret"));
    assert_eq!(r.status, 401, "{}", r.body);
    let r = post(port, &update(100, "from a forger"), None);
    assert_eq!(r.status, 401, "{}", r.body);
    // No bearer token instead either.
    let r = exchange(
        port,
        &format!(
            "POST /webhook/telegram HTTP/1.1\r\nHost: b\r\nAuthorization: Bearer {HTTP_TOKEN}\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}"
        ),
    );
    assert_eq!(r.status, 401, "{}", r.body);

    // Garbage with the right secret: 400, one sentence, nothing panics.
    for garbage in [
        "{not json",
        "[]",
        r#"{"message":{}}"#,
        "\u{0}\u{1}",
        r#"{"update_id":"x"}"#,
    ] {
        let r = post(port, garbage, Some(SECRET));
        assert_eq!(r.status, 400, "{garbage:?}: {}", r.body);
        assert!(
            r.error_message().contains("Telegram Update") || r.error_message().contains("UTF-8"),
            "{}",
            r.body
        );
    }

    // The good update (the same id the forger used): 200 once committed, then answered
    // first and alone: the refused posts were never taken.
    let r = post(port, &update(100, "hello by webhook"), Some(SECRET));
    assert_eq!(r.status, 200, "{}", r.body);
    wait_answer(&mut g, &tg, "hello by webhook");
    assert_eq!(answers_to_alice(&tg), vec!["You said: hello by webhook"]);

    // Telegram sends it again (it missed our 200): 200, dropped. The next update is
    // answered, and the repeat never was.
    let r = post(port, &update(100, "hello by webhook"), Some(SECRET));
    assert_eq!(r.status, 200, "{}", r.body);
    let r = post(port, &update(101, "second"), Some(SECRET));
    assert_eq!(r.status, 200, "{}", r.body);
    wait_answer(&mut g, &tg, "second");
    assert_eq!(
        answers_to_alice(&tg),
        vec!["You said: hello by webhook", "You said: second"]
    );

    // A non-message update (an edited message) is taken and dropped as polling drops it.
    let edited = format!(
        r#"{{"update_id":102,"edited_message":{}}}"#,
        message(ALICE, "alice", ALICE, "private", "edited", None)
    );
    assert_eq!(post(port, &edited, Some(SECRET)).status, 200);
    // A stranger is refused (told their id) as in polling mode.
    let stranger = format!(
        r#"{{"update_id":103,"message":{}}}"#,
        message(777, "mallory", 777, "private", "let me in", None)
    );
    assert_eq!(post(port, &stranger, Some(SECRET)).status, 200);
    g.wait_for("the stranger's refusal", || !tg.sent_to(777).is_empty());
    assert!(
        tg.sent_to(777)[0].text.contains("777"),
        "{:?}",
        tg.sent_to(777)
    );

    let out = g.stop_cleanly();
    assert!(!out.contains(SECRET), "the secret leaked:\n{out}");
    assert!(!out.contains("panicked"), "{out}");
}

#[test]
fn an_update_taken_before_a_kill_is_answered_after_the_restart() {
    let llm = echo_model(Duration::from_secs(4));
    let tg = FakeTelegram::start();
    let home = TempHome::onboarded("tg-webhook-kill", &config(&llm, &tg, "webhook"));
    let (mut g, port) = start_webhook(&home);
    let r = post(port, &update(500, "SLOW question"), Some(SECRET));
    assert_eq!(r.status, 200, "{}", r.body);
    // The turn runs (the model was asked), then the power goes.
    g.wait_for("the model's call", || {
        !llm.requests_to("/chat/completions").is_empty()
    });
    let out = g.kill();
    assert!(answers_to_alice(&tg).is_empty(), "{out}");
    // Telegram will not post it again (it had its 200): the inbox has it.
    let (mut g, _port) = start_webhook(&home);
    wait_answer(&mut g, &tg, "SLOW question");
    assert_eq!(answers_to_alice(&tg), vec!["You said: SLOW question"]);
    g.stop_cleanly();
}

#[test]
fn going_back_to_polling_deletes_the_webhook_and_polls() {
    let llm = echo_model(Duration::ZERO);
    let tg = FakeTelegram::start();
    // An earlier run in webhook mode left the webhook set.
    tg.set_webhook(URL);
    let home = TempHome::onboarded("tg-webhook-back", &config(&llm, &tg, "polling"));
    let (mut g, _port) = start(&home, true, true);
    g.wait_for("deleteWebhook", || !tg.calls("deleteWebhook").is_empty());
    assert!(
        tg.calls("deleteWebhook")[0].contains(r#""drop_pending_updates":false"#),
        "{:?}",
        tg.calls("deleteWebhook")
    );
    assert_eq!(tg.webhook(), "");
    telegram_answers(&mut g, &tg, "polled again");
    let out = g.stop_cleanly();
    assert_eq!(out.matches("deleted the webhook").count(), 1, "{out}");
}

#[test]
fn telegram_keeps_answering_while_bad_posts_flood_the_webhook() {
    let llm = echo_model(Duration::ZERO);
    let tg = FakeTelegram::start();
    let home = TempHome::onboarded("tg-webhook-flood", &config(&llm, &tg, "webhook"));
    let (mut g, port) = start_webhook(&home);
    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicUsize::new(0));
    let (stop2, sent2) = (stop.clone(), sent.clone());
    let flood = std::thread::spawn(move || {
        let mut i = 0;
        while !stop2.load(Ordering::Relaxed) {
            let (body, secret) = match i % 3 {
                0 => (update(9000 + i, "forged"), Some("wrong")),
                1 => ("{\"update_id\":".to_string(), Some(SECRET)),
                _ => (format!("[{}]", "1,".repeat(200)), Some(SECRET)),
            };
            let st = post(port, &body, secret).status;
            assert!(st == 401 || st == 400, "status {st}");
            sent2.fetch_add(1, Ordering::Relaxed);
            i += 1;
        }
    });
    // The flood runs before, during and after Alice's messages.
    until("the flood to start", || sent.load(Ordering::Relaxed) >= 20);
    let mut id = 1;
    while id < 5 {
        let text = format!("during the flood {id}");
        assert_eq!(post(port, &update(id, &text), Some(SECRET)).status, 200);
        wait_answer(&mut g, &tg, &text);
        id += 1;
    }
    let during = sent.load(Ordering::Relaxed);
    until("more of the flood", || {
        sent.load(Ordering::Relaxed) > during
    });
    stop.store(true, Ordering::Relaxed);
    flood.join().unwrap();
    let text = "after the flood";
    assert_eq!(post(port, &update(id, text), Some(SECRET)).status, 200);
    wait_answer(&mut g, &tg, text);
    assert!(!answers_to_alice(&tg).iter().any(|a| a.contains("forged")));
    let out = g.stop_cleanly();
    assert!(!out.contains("panicked"), "{out}");
}
