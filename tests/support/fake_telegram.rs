//! A fake Telegram Bot API on `fake_http`: scripted answers for the first `getUpdates`,
//! `sendMessage` and `editMessageText` calls, then Telegram-like behaviour (updates from
//! the requested offset, a short hold when there is nothing new), `sendMessageDraft`
//! only when switched on (else 404 like an older server), and a record of every call
//! with its arrival time. `setWebhook`, `deleteWebhook` and `getWebhookInfo` keep one URL;
//! while it is set `getUpdates` answers 409 as Telegram does.
#![allow(dead_code)]

use super::fake_http::{FakeServer, Request, Response, json_str};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The fake bot's identity.
pub const BOT_ID: i64 = 7_000_001;
pub const BOT_USERNAME: &str = "yc_test_bot";

/// The fake's request handler, for [`FakeTelegram::start_with`].
pub type Handler = dyn Fn(&Request) -> Response + Send + Sync + 'static;

/// How long an empty `getUpdates` is held (a real server holds up to the timeout).
const EMPTY_POLL_HOLD_MS: u64 = 50;

#[derive(Default)]
struct State {
    updates: Vec<(i64, String)>,
    next_update_id: i64,
    next_message_id: i64,
    poll_script: VecDeque<Response>,
    send_script: VecDeque<Response>,
    edit_script: VecDeque<Response>,
    /// Answer `sendMessageDraft` (Bot API 9.3+); off: 404 like an older server.
    drafts: bool,
    get_me: Option<Response>,
    /// Serve every update on every poll, whatever the offset (a broken proxy).
    ignore_offset: bool,
    /// Files by `file_id`: `(file_path, bytes, size getFile announces)`.
    files: Vec<FakeFile>,
    /// The URL `setWebhook` set (empty: none); while set, `getUpdates` is 409 as on
    /// Telegram.
    webhook: String,
}

/// `(file_id, file_path, bytes, size getFile announces)`.
type FakeFile = (String, String, Arc<Vec<u8>>, Option<u64>);

/// One `sendMessage` call as the fake saw it.
#[derive(Debug, Clone)]
pub struct Sent {
    pub chat_id: i64,
    pub text: String,
    pub parse_mode: Option<String>,
    pub reply_to: Option<i64>,
}

/// One call that shows text (`sendMessage`, `editMessageText`, `sendMessageDraft`).
#[derive(Debug, Clone)]
pub struct Shown {
    /// The Bot API method.
    pub method: String,
    pub chat_id: i64,
    pub text: String,
    pub parse_mode: Option<String>,
    /// `message_id` of an edit, `draft_id` of a draft.
    pub target: Option<i64>,
    pub at: Instant,
}

pub struct FakeTelegram {
    pub server: FakeServer,
    state: Arc<Mutex<State>>,
}

impl FakeTelegram {
    pub fn start() -> FakeTelegram {
        FakeTelegram::start_with(FakeServer::start)
    }

    /// Like [`FakeTelegram::start`], on the server `serve` starts (`tls::serve`: HTTPS).
    pub fn start_with(serve: impl FnOnce(Box<Handler>) -> FakeServer) -> FakeTelegram {
        let state = Arc::new(Mutex::new(State {
            next_update_id: 1,
            next_message_id: 1000,
            ..State::default()
        }));
        let st = state.clone();
        let server = serve(Box::new(move |req| handle(&st, req)));
        FakeTelegram { server, state }
    }

    pub fn url(&self) -> String {
        self.server.url()
    }

    fn with<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        f(&mut self.state.lock().unwrap())
    }

    /// Answers for the next `getUpdates` calls, in order (before any update is served).
    pub fn script_polls(&self, responses: Vec<Response>) {
        self.with(|s| s.poll_script.extend(responses));
    }

    /// Answers for the next `sendMessage` calls, in order.
    pub fn script_sends(&self, responses: Vec<Response>) {
        self.with(|s| s.send_script.extend(responses));
    }

    /// Forget the scripted `sendMessage` answers not used yet (sends work again).
    pub fn clear_send_script(&self) {
        self.with(|s| s.send_script.clear());
    }

    /// Answers for the next `editMessageText` calls, in order.
    pub fn script_edits(&self, responses: Vec<Response>) {
        self.with(|s| s.edit_script.extend(responses));
    }

    /// Accept `sendMessageDraft` (off by default: 404).
    pub fn set_drafts(&self, on: bool) {
        self.with(|s| s.drafts = on);
    }

    /// Every text-showing call to `chat_id` in arrival order (including refused ones).
    pub fn shown_to(&self, chat_id: i64) -> Vec<Shown> {
        let mut out: Vec<Shown> = self
            .server
            .requests()
            .iter()
            .filter_map(parse_shown)
            .filter(|s| s.chat_id == chat_id)
            .collect();
        out.sort_by_key(|s| s.at);
        out
    }

    pub fn set_get_me(&self, r: Response) {
        self.with(|s| s.get_me = Some(r));
    }

    pub fn set_ignore_offset(&self, on: bool) {
        self.with(|s| s.ignore_offset = on);
    }

    /// A file `getFile` knows as `file_id`, served at `/file/bot<token>/<file_path>`;
    /// `announced`: the `file_size` getFile says (`None`: the real size).
    pub fn add_file(&self, file_id: &str, file_path: &str, bytes: Vec<u8>, announced: Option<u64>) {
        let size = announced.unwrap_or(bytes.len() as u64);
        self.with(|s| {
            s.files.push((
                file_id.into(),
                file_path.into(),
                Arc::new(bytes),
                Some(size),
            ))
        });
    }

    /// Every multipart upload (`sendDocument`, `sendPhoto`, `sendVoice`).
    pub fn uploads(&self) -> Vec<Request> {
        self.server
            .requests()
            .into_iter()
            .filter(|r| {
                ["/sendDocument", "/sendPhoto", "/sendVoice"]
                    .iter()
                    .any(|m| r.path.ends_with(m))
            })
            .collect()
    }

    /// Queue an update whose `message` is `message_json`; returns its update_id.
    pub fn push_message(&self, message_json: &str) -> i64 {
        self.with(|s| {
            let id = s.next_update_id;
            s.next_update_id += 1;
            s.updates.push((
                id,
                format!(r#"{{"update_id":{id},"message":{message_json}}}"#),
            ));
            id
        })
    }

    /// A private text message from `user`.
    pub fn push_private(&self, user: i64, username: &str, text: &str) -> i64 {
        self.push_message(&message(user, username, user, "private", text, None))
    }

    /// Every `sendMessage` call so far, in arrival order.
    pub fn sent(&self) -> Vec<Sent> {
        self.server
            .requests_to("/sendMessage")
            .iter()
            .filter_map(parse_sent)
            .collect()
    }

    pub fn sent_to(&self, chat_id: i64) -> Vec<Sent> {
        self.sent()
            .into_iter()
            .filter(|s| s.chat_id == chat_id)
            .collect()
    }

    /// Chat ids of every `sendChatAction` call.
    pub fn typing_chats(&self) -> Vec<i64> {
        self.server
            .requests_to("/sendChatAction")
            .iter()
            .filter_map(|r| {
                let v = yoctoclaw::json::parse_value(&r.body).ok()?;
                yoctoclaw::json::get(&v, "chat_id").and_then(yoctoclaw::json::as_i64)
            })
            .collect()
    }

    /// The webhook URL set now (empty: none).
    pub fn webhook(&self) -> String {
        self.with(|s| s.webhook.clone())
    }

    /// Set a webhook as an earlier run would have.
    pub fn set_webhook(&self, url: &str) {
        self.with(|s| s.webhook = url.to_string());
    }

    /// The JSON bodies of every call to `method` so far.
    pub fn calls(&self, method: &str) -> Vec<String> {
        self.server
            .requests_to(&format!("/{method}"))
            .into_iter()
            .map(|r| r.body)
            .collect()
    }

    pub fn polls(&self) -> usize {
        self.server.requests_to("/getUpdates").len()
    }
}

/// A message object.
pub fn message(
    chat_id: i64,
    username: &str,
    from: i64,
    chat_type: &str,
    text: &str,
    reply_to_from: Option<i64>,
) -> String {
    let reply = match reply_to_from {
        Some(id) => format!(
            r#","reply_to_message":{{"message_id":1,"from":{{"id":{id},"is_bot":true,"first_name":"X"}},"chat":{{"id":{chat_id},"type":"{chat_type}"}},"date":1,"text":"earlier"}}"#
        ),
        None => String::new(),
    };
    format!(
        r#"{{"message_id":{},"from":{{"id":{from},"is_bot":false,"first_name":"U","username":"{username}"}},"chat":{{"id":{chat_id},"type":"{chat_type}"}},"date":1700000000,"text":{}{reply}}}"#,
        50 + from.rem_euclid(1000),
        json_str(text)
    )
}

fn parse_sent(r: &Request) -> Option<Sent> {
    use yoctoclaw::json::{as_i64, as_str, get, path};
    let v = yoctoclaw::json::parse_value(&r.body).ok()?;
    Some(Sent {
        chat_id: get(&v, "chat_id").and_then(as_i64)?,
        text: get(&v, "text").and_then(as_str)?.to_string(),
        parse_mode: get(&v, "parse_mode").and_then(as_str).map(str::to_string),
        reply_to: path(&v, &["reply_parameters", "message_id"]).and_then(as_i64),
    })
}

fn parse_shown(r: &Request) -> Option<Shown> {
    use yoctoclaw::json::{as_i64, as_str, get};
    let method = r.path.rsplit('/').next()?;
    let target = match method {
        "sendMessage" => None,
        "editMessageText" => Some("message_id"),
        "sendMessageDraft" => Some("draft_id"),
        _ => return None,
    };
    let v = yoctoclaw::json::parse_value(&r.body).ok()?;
    Some(Shown {
        method: method.to_string(),
        chat_id: get(&v, "chat_id").and_then(as_i64)?,
        text: get(&v, "text").and_then(as_str)?.to_string(),
        parse_mode: get(&v, "parse_mode").and_then(as_str).map(str::to_string),
        target: target.and_then(|k| get(&v, k).and_then(as_i64)),
        at: r.at,
    })
}

fn ok(result: &str) -> Response {
    Response::json(200, &format!(r#"{{"ok":true,"result":{result}}}"#))
}

fn handle(state: &Mutex<State>, req: &Request) -> Response {
    let method = req.path.rsplit('/').next().unwrap_or("");
    let mut s = state.lock().unwrap();
    if let Some(rest) = req.path.strip_prefix("/file/bot") {
        // `/file/bot<token>/<file_path>`
        let file_path = rest.split_once('/').map(|(_, p)| p).unwrap_or("");
        return match s.files.iter().find(|f| f.1 == file_path) {
            // Announced larger than it is: the connection ends early (a cut download).
            Some(f) if f.3.is_some_and(|n| n > f.2.len() as u64) => {
                let mut raw = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    f.3.unwrap_or(0)
                )
                .into_bytes();
                raw.extend_from_slice(&f.2);
                Response::Raw(raw)
            }
            Some(f) => Response::Full {
                status: 200,
                headers: vec![("Content-Type".into(), "application/octet-stream".into())],
                body: f.2.to_vec(),
            },
            None => Response::json(
                404,
                r#"{"ok":false,"error_code":404,"description":"Not Found"}"#,
            ),
        };
    }
    match method {
        "getFile" => {
            let id = yoctoclaw::json::parse_value(&req.body)
                .ok()
                .and_then(|v| yoctoclaw::json::str_at(&v, "file_id").map(str::to_string))
                .unwrap_or_default();
            match s.files.iter().find(|f| f.0 == id) {
                Some((id, path, _, size)) => ok(&format!(
                    r#"{{"file_id":"{id}","file_unique_id":"u{id}","file_size":{},"file_path":"{path}"}}"#,
                    size.unwrap_or(0)
                )),
                None => Response::json(
                    400,
                    r#"{"ok":false,"error_code":400,"description":"Bad Request: invalid file_id"}"#,
                ),
            }
        }
        "sendDocument" | "sendPhoto" | "sendVoice" => {
            s.next_message_id += 1;
            ok(&format!(
                r#"{{"message_id":{},"chat":{{"id":1,"type":"private"}},"date":1}}"#,
                s.next_message_id
            ))
        }
        "getMe" => s.get_me.clone().unwrap_or_else(|| {
            ok(&format!(
                r#"{{"id":{BOT_ID},"is_bot":true,"first_name":"YC","username":"{BOT_USERNAME}"}}"#
            ))
        }),
        "getUpdates" if !s.webhook.is_empty() => Response::json(
            409,
            r#"{"ok":false,"error_code":409,"description":"Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first"}"#,
        ),
        "getUpdates" => {
            if let Some(r) = s.poll_script.pop_front() {
                return r;
            }
            let offset = yoctoclaw::json::parse_value(&req.body)
                .ok()
                .and_then(|v| yoctoclaw::json::get(&v, "offset").and_then(yoctoclaw::json::as_i64))
                .unwrap_or(0);
            let fresh: Vec<&str> = s
                .updates
                .iter()
                .filter(|(id, _)| s.ignore_offset || *id >= offset)
                .map(|(_, u)| u.as_str())
                .collect();
            if fresh.is_empty() {
                Response::Delay(
                    Duration::from_millis(EMPTY_POLL_HOLD_MS),
                    Box::new(ok("[]")),
                )
            } else {
                ok(&format!("[{}]", fresh.join(",")))
            }
        }
        "sendMessage" => {
            if let Some(r) = s.send_script.pop_front() {
                return r;
            }
            s.next_message_id += 1;
            ok(&format!(
                r#"{{"message_id":{},"chat":{{"id":1,"type":"private"}},"date":1}}"#,
                s.next_message_id
            ))
        }
        "editMessageText" => {
            if let Some(r) = s.edit_script.pop_front() {
                return r;
            }
            ok(r#"{"message_id":1,"chat":{"id":1,"type":"private"},"date":1,"edit_date":2}"#)
        }
        "setWebhook" => {
            let v = yoctoclaw::json::parse_value(&req.body).ok();
            match v.as_ref().and_then(|v| yoctoclaw::json::str_at(v, "url")) {
                Some(u) if u.starts_with("https://") => {
                    s.webhook = u.to_string();
                    Response::json(
                        200,
                        r#"{"ok":true,"result":true,"description":"Webhook was set"}"#,
                    )
                }
                _ => Response::json(
                    400,
                    r#"{"ok":false,"error_code":400,"description":"Bad Request: bad webhook: An HTTPS URL must be provided for webhook"}"#,
                ),
            }
        }
        "deleteWebhook" => {
            let was = std::mem::take(&mut s.webhook);
            let d = if was.is_empty() {
                "Webhook is already deleted"
            } else {
                "Webhook was deleted"
            };
            Response::json(
                200,
                &format!(r#"{{"ok":true,"result":true,"description":"{d}"}}"#),
            )
        }
        "getWebhookInfo" => ok(&format!(
            r#"{{"url":{},"has_custom_certificate":false,"pending_update_count":0,"max_connections":1}}"#,
            json_str(&s.webhook)
        )),
        "sendMessageDraft" if s.drafts => ok("true"),
        "sendChatAction" => ok("true"),
        _ => Response::json(
            404,
            r#"{"ok":false,"error_code":404,"description":"Not Found"}"#,
        ),
    }
}
