//! What a request gets: its route by path and method, whether it may have it (the token),
//! and the handlers of `/health`, `/metrics` and `/v1/models` (completions: `complete`).
//!
//! | route | method | token |
//! |---|---|---|
//! | `/health` | GET, HEAD | no |
//! | `/metrics` | GET, HEAD | unless `http.metrics_public` |
//! | `/v1/models` | GET, HEAD | yes |
//! | `/v1/chat/completions` | POST | yes |
//! | `/` (status page) | GET, HEAD | no: its login cookie (`page`), else a login form |
//! | `/login`, `/logout` | POST | no: the token in the form (`page`, `login`) |
//! | `/webhook/telegram` | POST | no: Telegram's secret header instead (webhook mode only) |
//! | `/ws` | GET (WebSocket upgrade) | yes (or as the subprotocol `bearer.<token>`) |
//!
//! Anything else needs the token too, then is 404 (or 405 with `Allow` for a known path):
//! nothing about the server is told to a client without it. No token configured: 503
//! saying how to set one. A missing or wrong token: 401 with `WWW-Authenticate: Bearer`
//! (the token is never logged, and a wrong one is not told apart from a missing one).
//!
//! # Threads
//! Executor thread.

use super::Server;
use super::auth;
use super::complete;
use super::conn::{Body, Conn};
use super::health::{self, Facts};
use super::openai;
use super::page;
use super::parse::{Head, Method};
use super::respond::Response;
use super::webhook;
use super::ws;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    Health,
    Metrics,
    Models,
    Completions,
    /// The status page and its login (`page`): they check the login themselves.
    Page,
    Login,
    Logout,
    /// `POST /webhook/telegram`.
    TelegramWebhook,
    /// `GET /ws`: a WebSocket chat (`ws`).
    Ws,
    NotFound,
    /// A known path asked with another method; the value is its `Allow`.
    Method(&'static str),
}

impl Route {
    /// The handler reads the request's body.
    pub fn takes_body(self) -> bool {
        matches!(
            self,
            Route::Completions | Route::Login | Route::TelegramWebhook
        )
    }
}

/// What a handler did.
pub enum Outcome {
    /// The answer to write.
    Answer(Response),
    /// It wrote a streamed answer itself; `false` when the connection failed.
    Streamed(bool),
}

pub fn route(h: &Head) -> Route {
    let read = matches!(h.method, Method::Get | Method::Head);
    match h.path.as_str() {
        "/health" if read => Route::Health,
        "/metrics" if read => Route::Metrics,
        "/v1/models" if read => Route::Models,
        "/health" | "/metrics" | "/v1/models" => Route::Method("GET, HEAD"),
        "/v1/chat/completions" if h.method == Method::Post => Route::Completions,
        "/v1/chat/completions" => Route::Method("POST"),
        "/" if read => Route::Page,
        "/login" if h.method == Method::Post => Route::Login,
        "/logout" if h.method == Method::Post => Route::Logout,
        "/" => Route::Method("GET, HEAD"),
        "/login" | "/logout" => Route::Method("POST"),
        "/webhook/telegram" if h.method == Method::Post => Route::TelegramWebhook,
        "/ws" if h.method == Method::Get => Route::Ws,
        "/ws" => Route::Method("GET"),
        _ => Route::NotFound,
    }
}

/// Whether the request may have `route`: `Err` is the refusal.
pub fn authorize(srv: &Server, h: &Head, route: Route) -> Result<(), Response> {
    let cfg = &srv.deps.cfg;
    let page = matches!(route, Route::Page | Route::Login | Route::Logout);
    if page || route == Route::Health || route == Route::Metrics && cfg.metrics_public {
        return Ok(());
    }
    // Telegram's posts carry the webhook's secret, never the token. Outside webhook
    // mode the path is unknown: the token, then 404, like any other.
    if route == Route::TelegramWebhook
        && let Some(w) = &srv.deps.webhook
    {
        return webhook::authorize(h, w);
    }
    let Some(token) = &srv.deps.token else {
        return Err(Response::error(
            503,
            &format!(
                "The HTTP API has no token yet: put {}=<a long random string> in secrets.env (or the environment) and restart the gateway.",
                cfg.token_env
            ),
        ));
    };
    if auth::authorized(h.authorization.as_deref(), token) {
        return Ok(());
    }
    // A browser cannot set Authorization on a WebSocket: the token as a subprotocol.
    if route == Route::Ws
        && h.authorization.is_none()
        && ws::protocol_token(h.ws.protocols.as_deref())
            .is_some_and(|t| auth::ct_eq(t.as_bytes(), token.as_bytes()))
    {
        return Ok(());
    }
    Err(Response::error(
        401,
        &format!(
            "A valid token is needed: send Authorization: Bearer <the token in {}>.",
            cfg.token_env
        ),
    )
    .with_header("WWW-Authenticate", "Bearer realm=\"yoctoclaw\""))
}

/// Run the handler of `route` (authorized, its body read). `keep`: the connection may
/// stay open after a streamed answer.
pub async fn handle(
    c: &mut Conn<'_>,
    h: &Head,
    route: Route,
    body: Option<Body<'_>>,
    keep: bool,
) -> Outcome {
    let srv = c.srv;
    Outcome::Answer(match route {
        Route::Health => {
            let (status, json) = health_report(srv);
            Response::json(status, json)
        }
        Route::Metrics => match &srv.deps.metrics {
            Some(render) => Response {
                content_type: "text/plain; version=0.0.4; charset=utf-8",
                ..Response::json(200, render(srv.gate.running(), srv.gate.waiting()))
            },
            None => Response::error(404, "No metrics are served by this build."),
        },
        Route::Models => Response::json(200, openai::models()),
        // A trait object: its state machine is compiled on its own, not into the
        // connection's.
        Route::Completions => match body {
            Some(body) => {
                let turn: std::pin::Pin<Box<dyn Future<Output = Outcome> + '_>> =
                    Box::pin(complete::completions(c, h, body, keep));
                return turn.await;
            }
            None => Response::error(400, "The request has no body."),
        },
        Route::Page => page::get(srv, h),
        Route::Login => page::login(srv, h, body.as_ref().map_or(&[][..], |b| &b.data), c.ip),
        Route::Logout => page::logout(srv, h),
        Route::TelegramWebhook => match (body, &srv.deps.webhook) {
            (Some(body), Some(w)) => webhook::post(srv, w, &body.data).await,
            _ => not_found(),
        },
        Route::Ws => {
            let chat: std::pin::Pin<Box<dyn Future<Output = Outcome> + '_>> =
                Box::pin(ws::serve(c, h));
            return chat.await;
        }
        Route::NotFound => not_found(),
        Route::Method(allow) => Response::error(405, &format!("This route takes {allow} only."))
            .with_header("Allow", allow),
    })
}

fn not_found() -> Response {
    Response::error(
        404,
        "No such route: the API is POST /v1/chat/completions and GET /v1/models.",
    )
}

fn health_report(srv: &Server) -> (u16, String) {
    let d = &srv.deps;
    let facts = Facts {
        uptime: srv.started.elapsed(),
        telegram: d.telegram.as_ref().map(|(b, stale)| (&**b, *stale)),
        provider: d
            .agent
            .last_provider_result()
            .map(|(at, ok)| (at.elapsed(), ok)),
        database_ok: d.db.get_state(crate::status::GATEWAY_STATUS_KEY).is_ok(),
        disk_free: health::disk_free(&d.home),
    };
    health::report(&facts)
}
