//! The status page (`GET /`) and its login through the real gateway over real sockets:
//! raw HTTP (the form without a login, a wrong token, a form from another site, the right
//! token and its cookie's attributes, the board showing a session and a cron job made
//! here, a hostile session name, tool name and cron text shown escaped, the cookie not
//! opening the API, logout, wrong tokens against the rate limit), and headless Chromium
//! logging in through the form as a person would (`fixtures/http/status_page_chromium.py`
//! over the DevTools protocol).
//!
//! The Chromium test skips loudly (`support::skipped`; a failure under
//! `YOCTOCLAW_NO_SKIP=1`) when `chromium` or `python3` is missing; `.ci/run` installs it.

mod support;

use std::path::Path;
use std::process::Command;
use std::time::Duration;
use support::TempHome;
use support::http_client::*;
use yoctoclaw::chat::{Message, Role, ToolCall};

const HOSTILE_SESSION: &str = "<script>alert('session')</script>";
const HOSTILE_TOOL: &str = "<img src=x onerror=alert(1)>";
const HOSTILE_CRON: &str = "<script>alert(\"cron\")</script> water the plants";

/// A home with a cron job and a stored session with a tool call, both hostile text, and
/// the gateway started in it with the API's token.
fn board(
    tag: &str,
    http_extra: &str,
) -> (
    TempHome,
    support::gateway::Gateway,
    u16,
    support::fake_http::FakeServer,
) {
    let llm = echo_model(Duration::ZERO);
    let home = TempHome::onboarded(tag, &http_config(&llm, None, http_extra, ""));
    support::succeeded(&home.run(&["cron", "add", "0 7 * * *", HOSTILE_CRON]));
    {
        let db = yoctoclaw::store::Db::open(&home.dir.join("yoctoclaw.db"), 1024).unwrap();
        let mut call = Message::new(Role::Assistant, "");
        call.tool_calls = vec![ToolCall {
            id: "call_1".into(),
            name: HOSTILE_TOOL.into(),
            arguments: "{}".into(),
        }];
        db.append_message(
            HOSTILE_SESSION,
            &Message::new(Role::User, "hi"),
            1_800_000_000,
        )
        .unwrap();
        db.append_message(HOSTILE_SESSION, &call, 1_800_000_001)
            .unwrap();
    }
    let (g, port) = start(&home, true, false);
    (home, g, port, llm)
}

fn post(port: u16, path: &str, body: &str, extra: &str) -> Reply {
    exchange(
        port,
        &format!(
            "POST {path} HTTP/1.1\r\nHost: board\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n{body}",
            body.len()
        ),
    )
}

fn page(port: u16, cookie: Option<&str>) -> Reply {
    let c = cookie
        .map(|c| format!("Cookie: {c}\r\n"))
        .unwrap_or_default();
    exchange(
        port,
        &format!("GET / HTTP/1.1\r\nHost: board\r\n{c}Connection: close\r\n\r\n"),
    )
}

/// The headers every page and form carries.
fn guarded(r: &Reply) {
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
    assert_eq!(r.header("cache-control"), Some("no-store"));
    assert_eq!(r.header("x-frame-options"), Some("DENY"));
    assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(
        r.header("content-security-policy"),
        Some(
            "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'"
        )
    );
    assert!(!r.body.contains("<script"), "{}", r.body);
}

/// Only the login form: nothing about the board.
fn just_the_form(r: &Reply) {
    guarded(r);
    assert!(
        r.body.contains(r#"<input type="password" name="token""#),
        "{}",
        r.body
    );
    for secret in [
        "kitchen",
        "fake-model",
        "water the plants",
        "Sessions",
        "alert",
    ] {
        assert!(
            !r.body.contains(secret),
            "{secret} shown without a login: {}",
            r.body
        );
    }
}

#[test]
fn the_status_page_logs_in_with_the_token_and_shows_the_board_escaped() {
    let (_home, _g, port, _llm) = board("http-page", "");
    // A real session of the API.
    let r = complete(port, &ask("hello", ""), "X-Session-Id: kitchen\r\n");
    assert_eq!(answer_of(&r), "You said: hello");

    // No login: the form, whatever else is sent (the API's bearer token, a made-up cookie).
    let r = page(port, None);
    assert_eq!(r.status, 200);
    just_the_form(&r);
    let r = get(port, "/", Some(HTTP_TOKEN));
    just_the_form(&r);
    just_the_form(&page(
        port,
        Some("yc_session=0123456789abcdef0123456789abcdef"),
    ));

    // A wrong token: the form again with one sentence, 401, no cookie.
    let r = post(
        port,
        "/login",
        "token=not-the-token",
        "Origin: http://board\r\n",
    );
    assert_eq!(r.status, 401, "{}", r.body);
    just_the_form(&r);
    assert!(r.body.contains("That is not the token"), "{}", r.body);
    assert_eq!(r.header("set-cookie"), None);
    // The right token posted from another site: refused, no cookie.
    for from in [
        "Origin: http://evil.example\r\n",
        "Origin: null\r\n",
        "Referer: http://evil.example/board\r\n",
    ] {
        let r = post(port, "/login", &format!("token={HTTP_TOKEN}"), from);
        assert_eq!(r.status, 403, "{from}: {}", r.body);
        assert_eq!(r.header("set-cookie"), None, "{from}");
    }

    // The right token: 303 to / with the cookie, which is not the token.
    let r = post(
        port,
        "/login",
        &format!("token={HTTP_TOKEN}"),
        "Origin: http://board\r\n",
    );
    assert_eq!(r.status, 303, "{}", r.body);
    guarded(&r);
    assert_eq!(r.header("location"), Some("/"));
    let set = r.header("set-cookie").expect("a cookie").to_string();
    let attrs: Vec<&str> = set.split("; ").collect();
    let id = attrs[0].strip_prefix("yc_session=").expect(&set);
    assert!(
        id.len() >= 32 && id.bytes().all(|b| b.is_ascii_hexdigit()),
        "{set}"
    );
    assert!(!set.contains(HTTP_TOKEN));
    for a in ["HttpOnly", "SameSite=Strict", "Path=/", "Max-Age=43200"] {
        assert!(attrs.contains(&a), "{a} in {set}");
    }
    assert!(!set.contains("Secure"), "plain HTTP: {set}");
    let cookie = attrs[0].to_string();
    // Behind a TLS proxy that says so, the cookie is Secure; each login has its own id.
    let r = post(
        port,
        "/login",
        &format!("token={HTTP_TOKEN}"),
        "X-Forwarded-Proto: https\r\n",
    );
    let set2 = r.header("set-cookie").unwrap();
    assert!(set2.ends_with("; Secure"), "{set2}");
    assert!(!set2.starts_with(&cookie));

    // The board.
    let r = page(port, Some(&format!("theme=dark; {cookie}")));
    assert_eq!(r.status, 200);
    guarded(&r);
    let b = &r.body;
    eprintln!("status page: {} bytes", b.len());
    for shown in [
        "http:kitchen",
        "fake-model",
        "last model request",
        "answered",
        "0 7 * * *",
        "&lt;script&gt;alert(&#39;session&#39;)&lt;/script&gt;",
        "&lt;script&gt;alert(&quot;cron&quot;)&lt;/script&gt; water the plants",
        "&lt;img src=x onerror=alert(1)&gt;",
        "tokens today",
        "RSS ",
        "disk free",
        "uptime",
        "action=\"/logout\"",
    ] {
        assert!(b.contains(shown), "{shown} not in {b}");
    }
    assert!(!b.contains("<img") && !b.contains(HTTP_TOKEN), "{b}");

    // The cookie opens the page only, not the API.
    let r = exchange(
        port,
        &format!(
            "GET /v1/models HTTP/1.1\r\nHost: board\r\nCookie: {cookie}\r\nConnection: close\r\n\r\n"
        ),
    );
    assert_eq!(r.status, 401, "{}", r.body);

    // Logout from another site does nothing; from the page it ends the login.
    let r = post(
        port,
        "/logout",
        "",
        &format!("Cookie: {cookie}\r\nOrigin: http://evil.example\r\n"),
    );
    assert_eq!(r.status, 403);
    assert!(page(port, Some(&cookie)).body.contains("http:kitchen"));
    let r = post(
        port,
        "/logout",
        "",
        &format!("Cookie: {cookie}\r\nOrigin: http://board\r\n"),
    );
    assert_eq!(r.status, 303);
    assert!(r.header("set-cookie").unwrap().contains("Max-Age=0"));
    just_the_form(&page(port, Some(&cookie)));
}

#[test]
fn wrong_tokens_count_against_the_rate_limit() {
    // 30 requests a minute; a wrong token counts as 10 (HTTP_LOGIN_FAILURE_WEIGHT).
    let (_home, _g, port, _llm) = board("http-page-rate", r#""rate_per_minute":30"#);
    for i in 0..3 {
        let r = post(port, "/login", "token=guess", "");
        assert_eq!(r.status, 401, "guess {i}: {}", r.body);
    }
    let r = post(port, "/login", &format!("token={HTTP_TOKEN}"), "");
    assert_eq!(r.status, 429, "{}", r.body);
    assert!(r.header("retry-after").is_some());
    assert_eq!(r.header("set-cookie"), None);
}

/// `chromium` and `python3`, or a loud skip.
fn chromium() -> Option<String> {
    let what = "headless Chromium logging in to the status page";
    let Some(path) = ["chromium", "chromium-browser"].into_iter().find(|c| {
        Command::new(c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    }) else {
        support::skipped(what, "no chromium (apt-get install chromium)");
        return None;
    };
    if Command::new("python3").arg("--version").output().is_err() {
        support::skipped(what, "no python3");
        return None;
    }
    Some(path.to_string())
}

#[test]
fn headless_chromium_logs_in_through_the_form_and_sees_the_board() {
    let Some(chromium) = chromium() else {
        return;
    };
    let (_home, _g, port, _llm) = board("http-page-chromium", "");
    let r = complete(port, &ask("hello", ""), "X-Session-Id: kitchen\r\n");
    assert_eq!(answer_of(&r), "You said: hello");
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/http/status_page_chromium.py");
    let run = |token: &str| {
        Command::new("python3")
            .arg(&script)
            .arg(&chromium)
            .arg(format!("http://127.0.0.1:{port}/"))
            .arg(token)
            .output()
            .expect("run python3")
    };
    let out = run(HTTP_TOKEN);
    let html = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for shown in [
        "http:kitchen",
        "water the plants",
        "0 7 * * *",
        "&lt;script&gt;alert('session')&lt;/script&gt;",
        "fake-model",
    ] {
        assert!(
            html.contains(shown),
            "{shown} not in what Chromium shows: {html}"
        );
    }
    assert!(
        !html.contains("<img") && !html.contains("<script>alert"),
        "{html}"
    );
    // A wrong token typed: Chromium is shown the form again, with the sentence.
    let out = run("not-the-token");
    let html = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        html.contains("That is not the token") && !html.contains("kitchen"),
        "{html}"
    );
}
