//! `GET /`: the status page, one server-rendered HTML page (no script, no outside asset,
//! a small inline style) with what `yoctoclaw status` shows and more, read live: uptime
//! and version, model and the last provider result, process RSS, MemAvailable and free
//! disk, the sessions with their last activity, the cron jobs with their next run, the
//! last tool calls, and the tokens used against the budget. Without a login (`login`) it
//! is a form asking for the API token, and nothing else. `POST /login` and
//! `POST /logout` start and end a login.
//!
//! Every stored or configured text is cut and scrubbed (`status::cut`) and HTML-escaped.
//!
//! # Bounds
//! `HTTP_PAGE_MAX_ROWS` rows per table; stored texts cut to `status::MAX_SHOWN_TEXT_BYTES`.
//!
//! # Threads
//! Executor thread.
//!
//! # Blocking
//! A few small SQLite reads, one `statvfs` of the home, `/proc/self/status` and
//! `/proc/meminfo`: as `/health` does.

use super::Server;
use super::login;
use super::parse::Head;
use super::respond::Response;
use crate::config::BudgetConfig;
use crate::limits::{HTTP_LOGIN_FAILURE_WEIGHT, HTTP_PAGE_MAX_ROWS};
use crate::status::cut;
use crate::time::clock::format_at;
use std::fmt::Write as _;
use std::net::IpAddr;
use std::time::Instant;

/// What the page says about the configuration (given by the gateway).
#[derive(Debug, Clone, Default)]
pub struct Board {
    /// `openai` or `anthropic`, and the model.
    pub provider: String,
    pub model: String,
    /// Fallback providers configured.
    pub fallbacks: usize,
    pub timezone: String,
    pub budget: BudgetConfig,
}

const STYLE: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:1em auto;max-width:60em;padding:0 1em;color:#222}\
h1{font-size:1.3em}h2{font-size:1.05em;margin:1.2em 0 .3em}table{border-collapse:collapse;width:100%}\
td,th{text-align:left;padding:2px 8px 2px 0;border-bottom:1px solid #ddd;vertical-align:top}\
.bad{color:#b00}.ok{color:#070}form{margin:1em 0}";

/// The page's start: title and style.
fn open(title: &str) -> String {
    let mut s = String::with_capacity(4096);
    let _ = write!(
        s,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width\"><title>{title}</title>\
<style>{STYLE}</style></head><body>"
    );
    s
}

/// The login form, with one sentence above it when there is something to say.
pub fn login_form(status: u16, note: Option<&str>) -> Response {
    let mut s = open("yoctoclaw: log in");
    s.push_str("<h1>yoctoclaw</h1>");
    if let Some(n) = note {
        let _ = write!(s, "<p class=\"bad\">{}</p>", esc(n));
    }
    s.push_str(
        "<form method=\"post\" action=\"/login\"><label>API token \
<input type=\"password\" name=\"token\" autocomplete=\"current-password\" required autofocus></label> \
<button type=\"submit\">Log in</button></form></body></html>",
    );
    Response::html(status, s)
}

/// `GET /`: the board with a valid login, else the form.
pub fn get(srv: &Server, h: &Head) -> Response {
    if srv.deps.token.is_none() {
        return no_token(srv);
    }
    let cookie = h.page.cookie.as_deref();
    if !srv.logins.borrow_mut().valid(cookie, Instant::now()) {
        return login_form(200, None);
    }
    Response::html(200, render(srv))
}

/// `POST /login`: the token from the form.
pub fn login(srv: &Server, h: &Head, body: &[u8], ip: IpAddr) -> Response {
    let Some(token) = &srv.deps.token else {
        return no_token(srv);
    };
    if !login::same_origin(&h.page) {
        return login_form(
            403,
            Some("This form was sent from another site: open this page itself and log in there."),
        );
    }
    let given = login::form_token(body).unwrap_or_default();
    if !super::auth::ct_eq(given.trim().as_bytes(), token.as_bytes()) {
        // A wrong token counts as several requests against the address's rate limit.
        let mut limiter = srv.limiter.borrow_mut();
        for _ in 1..HTTP_LOGIN_FAILURE_WEIGHT {
            let _ = limiter.check(ip, srv.now_ms());
        }
        log::info!("http: a wrong token was given to the status page's login from {ip}");
        return login_form(
            401,
            Some("That is not the token: give the value of the API's token."),
        );
    }
    let Some(id) = srv.logins.borrow_mut().start(Instant::now()) else {
        return login_form(
            503,
            Some("The system has no randomness to make a login with: try again."),
        );
    };
    let mut r = see_other();
    r.more
        .push(("Set-Cookie", login::set_cookie(&id, h.page.forwarded_https)));
    r
}

/// `POST /logout`: ends the login (from this origin only) and goes back to the form.
pub fn logout(srv: &Server, h: &Head) -> Response {
    if !login::same_origin(&h.page) {
        return login_form(
            403,
            Some("This form was sent from another site: open this page itself."),
        );
    }
    srv.logins.borrow_mut().end(h.page.cookie.as_deref());
    let mut r = see_other();
    r.more
        .push(("Set-Cookie", login::clear_cookie(h.page.forwarded_https)));
    r
}

fn see_other() -> Response {
    let mut r = Response::html(303, String::new());
    r.more.push(("Location", "/".to_string()));
    r
}

fn no_token(srv: &Server) -> Response {
    let mut s = open("yoctoclaw");
    let _ = write!(
        s,
        "<h1>yoctoclaw</h1><p>The HTTP API has no token yet: put {}=&lt;a long random string&gt; in secrets.env (or the environment) and restart the gateway.</p></body></html>",
        esc(&srv.deps.cfg.token_env)
    );
    Response::html(503, s)
}

/// HTML-escaped text.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `3 d 4 h`, `5 h 2 min`, `42 s`.
fn span(secs: u64) -> String {
    match secs {
        0..=119 => format!("{secs} s"),
        120..=7199 => format!("{} min", secs / 60),
        7200..=172_799 => format!("{} h {} min", secs / 3600, secs / 60 % 60),
        _ => format!("{} d {} h", secs / 86_400, secs / 3600 % 24),
    }
}

fn kib(k: Option<u64>) -> String {
    k.map_or_else(|| "unknown".into(), |k| format!("{} MiB", k.div_ceil(1024)))
}

/// The board.
fn render(srv: &Server) -> String {
    let d = &srv.deps;
    let b = &(d.board)();
    let tz = b.timezone.as_str();
    let now = crate::time::clock::now();
    let at = |t: i64| esc(&format_at(t, tz));
    let mut s = open("yoctoclaw status");
    let _ = write!(
        s,
        "<h1>{}</h1><form method=\"post\" action=\"/logout\"><button type=\"submit\">Log out</button></form><table>",
        esc(&crate::runtime::version_text())
    );
    let mut row = |k: &str, v: &str| {
        let _ = write!(s, "<tr><th>{k}</th><td>{v}</td></tr>");
    };
    row("uptime", &span(srv.started.elapsed().as_secs()));
    let fallbacks = match b.fallbacks {
        0 => String::new(),
        n => format!(", {n} fallback(s)"),
    };
    row(
        "model",
        &format!("{} {}{fallbacks}", esc(&b.provider), esc(&cut(&b.model))),
    );
    let provider = match d.agent.last_provider_result() {
        None => "no request yet".to_string(),
        Some((t, ok)) => format!(
            "<span class=\"{}\">{}</span>, {} ago",
            if ok { "ok" } else { "bad" },
            if ok { "answered" } else { "failed" },
            span(t.elapsed().as_secs())
        ),
    };
    row("last model request", &provider);
    let rss = crate::status::self_rss_kib();
    row(
        "memory",
        &format!(
            "RSS {} (peak {}), available {}",
            kib(rss.map(|r| r.rss_kib)),
            kib(rss.map(|r| r.hwm_kib)),
            kib(crate::status::mem_available_now())
        ),
    );
    row(
        "disk free",
        &kib(super::health::disk_free(&d.home).map(|b| b / 1024)),
    );
    let t = crate::status::token_use(&d.db, now);
    let of = |used: (u64, u64), limit: Option<u64>| {
        let n = used.0.saturating_add(used.1);
        match limit {
            Some(l) => format!("{n} of {l} ({} in, {} out)", used.0, used.1),
            None => format!("{n} ({} in, {} out), no budget", used.0, used.1),
        }
    };
    row("tokens today", &of(t.day, b.budget.daily_tokens));
    row("tokens this month", &of(t.month, b.budget.monthly_tokens));
    s.push_str("</table>");

    let sessions = d.db.recent_sessions(HTTP_PAGE_MAX_ROWS).unwrap_or_default();
    let stored = d.db.session_count().unwrap_or(0);
    let _ = write!(
        s,
        "<h2>Sessions ({stored} stored; the {} most recent)</h2><table><tr><th>session</th><th>last activity</th></tr>",
        sessions.len()
    );
    for (id, updated) in &sessions {
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{}</td></tr>",
            esc(&cut(id)),
            at(*updated)
        );
    }
    s.push_str("</table>");

    let jobs = d.db.list_cron_jobs().unwrap_or_default();
    let _ = write!(
        s,
        "<h2>Cron jobs ({})</h2><table><tr><th>id</th><th>schedule</th><th>job</th><th>next run</th><th>last result</th></tr>",
        jobs.len()
    );
    for j in jobs.iter().take(HTTP_PAGE_MAX_ROWS) {
        let next = match (j.enabled, j.next_run) {
            (false, _) => "disabled".to_string(),
            (true, Some(n)) => at(n),
            (true, None) => "not planned yet".to_string(),
        };
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{next}</td><td>{}</td></tr>",
            j.id,
            esc(&cut(&j.schedule)),
            esc(&cut(&j.prompt)),
            esc(&cut(j.last_result.as_deref().unwrap_or("")))
        );
    }
    s.push_str("</table>");

    let calls =
        d.db.recent_tool_calls(HTTP_PAGE_MAX_ROWS)
            .unwrap_or_default();
    let _ = write!(
        s,
        "<h2>Last tool calls ({})</h2><table><tr><th>tool</th><th>session</th><th>at</th></tr>",
        calls.len()
    );
    for (session, tool, t) in &calls {
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&cut(tool)),
            esc(&cut(session)),
            at(*t)
        );
    }
    s.push_str("</table></body></html>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_and_spans_read_well() {
        assert_eq!(
            esc("<script>alert('x')&\"</script>"),
            "&lt;script&gt;alert(&#39;x&#39;)&amp;&quot;&lt;/script&gt;"
        );
        assert_eq!(span(5), "5 s");
        assert_eq!(span(600), "10 min");
        assert_eq!(span(3 * 3600 + 120), "3 h 2 min");
        assert_eq!(span(2 * 86_400 + 3600), "2 d 1 h");
        let r = login_form(401, Some("<b>"));
        assert!(r.body.contains("&lt;b&gt;") && !r.body.contains("<b>"));
        assert!(r.body.contains("type=\"password\"") && !r.body.contains("<script"));
        assert!(
            r.head(true)
                .contains("Content-Security-Policy: default-src 'none'")
        );
    }
}
