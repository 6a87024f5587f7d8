//! Typed Telegram Bot API calls (`getMe`, `getUpdates`, `sendMessage`,
//! `editMessageText`, `sendMessageDraft`, `sendChatAction`), the parsing of their answers, and one error type that says what
//! the caller should do (wait `retry_after`, wait out a 409, give up on a bad token).
//!
//! Why it exists: the poller, the sender and the start-up check share the envelope
//! rules (`{"ok":…,"result":…,"error_code":…,"description":…,"parameters":…}`) and
//! the secret rule: the bot token is part of every URL, so it lives only inside
//! [`Api`]'s URL prefix; no error, `Debug` or `Display` ever formats a URL (only its
//! host), and Telegram's own descriptions pass through the scrubber.
//!
//! # Bounds
//! - Answers are read up to `MAX_BOT_API_RESPONSE_BYTES`; a larger one is an error.
//! - Every request has the agent's overall timeout (the poller's agent allows the long
//!   poll plus a margin; see `poller`).
//! - Text taken from an update is cut to `MAX_USER_MESSAGE_BYTES`, usernames to
//!   `MAX_USERNAME_BYTES`, Telegram's error descriptions to `MAX_DESCRIPTION_CHARS`.
//!
//! # Threads
//! The thread that calls a method: the poller (`yc-tg-poll`), the sender (`yc-tg-send`) or
//! a worker thread (`getMe`, media, uploads, deliveries outside the gateway); never the
//! executor. Parsing is pure.
//!
//! # Blocking
//! Every method on [`Api`] blocks until Telegram answers or the timeout ends: call
//! them on the poller or sender thread, or through `Workers`.

use crate::json::{self, as_array, as_bool, as_i64, as_object, get, path, str_at};
use crate::limits::MAX_USER_MESSAGE_BYTES;
use crate::provider::http::{self, HttpError};
use crate::security::scrub::scrub;
use miniserde::json::{Number, Value};
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Largest Bot API answer read into memory.
pub const MAX_BOT_API_RESPONSE_BYTES: u64 = 1024 * 1024;
/// Longest Telegram error description kept for logs.
pub const MAX_DESCRIPTION_CHARS: usize = 200;
/// Longest username kept from an update (Telegram's own limit is 32).
pub const MAX_USERNAME_BYTES: usize = 64;
/// `retry_after` assumed for a 429 that does not say.
pub const DEFAULT_RETRY_AFTER_SECS: u64 = 5;
/// The only update kind requested: edits, channel posts, callbacks… are never handled.
pub const ALLOWED_UPDATES: &[&str] = &["message"];
/// Message fields that make a message "not text" (worth a "text only" reply); any other
/// text-less message (members joining, pins, title changes…) is a service message and
/// is ignored.
const MEDIA_KEYS: &[&str] = &[
    "photo",
    "document",
    "sticker",
    "voice",
    "video",
    "video_note",
    "audio",
    "animation",
    "contact",
    "location",
    "venue",
    "poll",
    "dice",
    "story",
];

/// What went wrong with a Bot API call.
#[derive(Debug, Clone, PartialEq)]
pub enum ApiError {
    /// HTTP 401: the token is wrong or was revoked.
    Unauthorized,
    /// HTTP 404: the token is malformed or `telegram.api_base` is wrong.
    NotFound,
    /// HTTP 409: another `getUpdates` is running with this token, or a webhook is set.
    Conflict { description: String },
    /// HTTP 429: try again after this many seconds.
    RateLimited { retry_after_secs: u64 },
    /// Another 4xx, with Telegram's description (400 bad request, 403 blocked by user…).
    Rejected { status: u16, description: String },
    /// HTTP 5xx or another unexpected status.
    Server { status: u16 },
    /// No HTTP answer: DNS, connect, TLS, reset, timeout.
    Transport { host: String, error: HttpError },
    /// The body is not the Bot API's JSON envelope.
    BadResponse { detail: &'static str },
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApiError::Unauthorized => f.write_str("telegram refused the bot token (http 401)"),
            ApiError::NotFound => f.write_str(
                "telegram answered http 404: the bot token is malformed or telegram.api_base is wrong",
            ),
            ApiError::Conflict { description } => write!(f, "http 409 conflict: {description}"),
            ApiError::RateLimited { retry_after_secs } => {
                write!(f, "rate limited (http 429): retry after {retry_after_secs} s")
            }
            ApiError::Rejected {
                status,
                description,
            } => write!(f, "telegram rejected the request (http {status}: {description})"),
            ApiError::Server { status } => write!(f, "telegram server error (http {status})"),
            // No host: this text can reach a user (a cron result, a tool result); the
            // gateway logs the Bot API host once at start.
            ApiError::Transport { error, .. } => write!(f, "cannot reach Telegram ({error})"),
            ApiError::BadResponse { detail } => {
                write!(f, "telegram sent an unexpected answer ({detail})")
            }
        }
    }
}

impl std::error::Error for ApiError {}

impl ApiError {
    /// Telegram refused our HTML (`Bad Request: can't parse entities: …`).
    pub fn is_parse_entities(&self) -> bool {
        match self {
            ApiError::Rejected {
                status: 400,
                description,
            } => {
                let d = description.to_ascii_lowercase();
                d.contains("parse entities") || d.contains("can't find end of")
            }
            _ => false,
        }
    }

    /// An edit that would not change the message (`Bad Request: message is not
    /// modified`): the message already shows the text, so the edit counts as done.
    pub fn is_not_modified(&self) -> bool {
        matches!(self, ApiError::Rejected { status: 400, description }
            if description.to_ascii_lowercase().contains("message is not modified"))
    }

    /// Worth trying the same call again later (after a wait).
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            ApiError::Conflict { .. }
                | ApiError::RateLimited { .. }
                | ApiError::Server { .. }
                | ApiError::Transport { .. }
                | ApiError::BadResponse { .. }
        )
    }
}

/// Who the bot is (from `getMe`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BotIdentity {
    pub id: i64,
    /// Without the `@`.
    pub username: String,
}

/// The kind of chat a message came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChatKind {
    Private,
    /// A group or a supergroup.
    Group,
    /// A channel (never requested; ignored if it arrives).
    Channel,
}

/// One incoming message, reduced to what the gateway uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Incoming {
    pub message_id: i64,
    pub chat_id: i64,
    pub chat: ChatKind,
    /// The sender; `None` for anonymous admins and channel posts.
    pub from_id: Option<i64>,
    pub from_username: Option<String>,
    pub from_is_bot: bool,
    pub text: Option<String>,
    pub caption: Option<String>,
    /// A photo, file, sticker, voice note… (content we cannot read).
    pub has_media: bool,
    /// Sender of the message this one replies to.
    pub reply_to_from_id: Option<i64>,
    /// A voice note, audio, video note, photo or document we can fetch.
    pub media: Option<MediaRef>,
}

/// The kinds of media yoctoclaw takes in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MediaKind {
    Voice,
    Audio,
    VideoNote,
    Photo,
    Document,
}

/// A file attached to a message, as the update describes it (nothing downloaded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MediaRef {
    pub kind: MediaKind,
    /// `(file_id, announced size)`: a photo's sizes as Telegram lists them (smallest
    /// first); one entry otherwise.
    pub files: Vec<(String, Option<u64>)>,
    pub mime: Option<String>,
    /// The sender's file name (a document's): never used as a path.
    pub name: Option<String>,
    /// Seconds, for voice, audio and video notes.
    pub duration: Option<u64>,
}

/// Most photo sizes kept from one message (Telegram sends 3 or 4).
const MAX_PHOTO_SIZES: usize = 8;
/// Longest file id or name kept from an update.
const MAX_FILE_FIELD_BYTES: usize = 256;

/// The media of a message, if it has a kind we take.
fn parse_media(m: &Value) -> Option<MediaRef> {
    let field = |v: &Value, k| str_at(v, k).map(|s| cut(s, MAX_FILE_FIELD_BYTES));
    let size = |v: &Value| {
        get(v, "file_size")
            .and_then(as_i64)
            .and_then(|n| u64::try_from(n).ok())
    };
    let one = |kind, v: &Value| {
        Some(MediaRef {
            kind,
            files: vec![(field(v, "file_id")?, size(v))],
            mime: field(v, "mime_type"),
            name: field(v, "file_name"),
            duration: get(v, "duration")
                .and_then(as_i64)
                .and_then(|n| u64::try_from(n).ok()),
        })
    };
    for (key, kind) in [
        ("voice", MediaKind::Voice),
        ("audio", MediaKind::Audio),
        ("video_note", MediaKind::VideoNote),
        ("document", MediaKind::Document),
    ] {
        if let Some(v) = get(m, key) {
            return one(kind, v);
        }
    }
    let sizes = get(m, "photo").and_then(as_array)?;
    let files: Vec<(String, Option<u64>)> = sizes
        .iter()
        .take(MAX_PHOTO_SIZES)
        .filter_map(|p| Some((field(p, "file_id")?, size(p))))
        .collect();
    (!files.is_empty()).then_some(MediaRef {
        kind: MediaKind::Photo,
        files,
        mime: None,
        name: None,
        duration: None,
    })
}

/// Why a file could not be fetched from Telegram.
#[derive(Debug)]
pub enum FetchError {
    Api(ApiError),
    /// Larger than the cap (announced, or found while downloading).
    TooLarge,
    /// Fewer or more bytes than `getFile` announced.
    SizeMismatch,
    /// Writing the spool file failed (full disk…).
    Disk(std::io::Error),
}

/// An update Telegram posted to the webhook, and where to say it was handled (committed
/// to the inbox, or dropped as a repeat or as polling drops it): the HTTP answer waits
/// for that, so Telegram hears 200 only after the commit.
pub struct Posted {
    pub update: Update,
    pub done: async_channel::Sender<()>,
}

/// What `getWebhookInfo` says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookInfo {
    /// The webhook's URL; empty when none is set (polling works).
    pub url: String,
    /// Telegram's last error delivering an update there.
    pub last_error: Option<String>,
    pub pending: i64,
}

/// Longest URL or error text kept from `getWebhookInfo`.
const MAX_WEBHOOK_TEXT_BYTES: usize = 512;

/// One update; `message` is `None` for kinds we do not handle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Update {
    pub update_id: i64,
    pub message: Option<Incoming>,
}

/// A text to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutText<'a> {
    pub chat_id: i64,
    pub text: &'a str,
    /// `parse_mode=HTML` when true, plain text otherwise.
    pub html: bool,
    /// Answer as a reply to this message (groups).
    pub reply_to: Option<i64>,
}

/// A Bot API client for one token. Cheap to clone (the HTTP agent is shared).
#[derive(Clone)]
pub struct Api {
    /// `{api_base}/bot{token}/`: the only place the token lives (with `file_prefix`).
    prefix: String,
    /// `{api_base}/file/bot{token}/`: where `getFile`'s `file_path` is downloaded.
    file_prefix: String,
    host: String,
    agent: ureq::Agent,
    /// The last call failed on the network, with a 5xx or a 429 (shared by clones).
    down: Arc<AtomicBool>,
}

impl fmt::Debug for Api {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Api").field("host", &self.host).finish()
    }
}

impl Api {
    /// A client whose every request may take up to `timeout_secs` in total.
    pub fn new(api_base: &str, token: &str, timeout_secs: u64) -> Api {
        Api::with_agent(api_base, token, http::agent(timeout_secs))
    }

    fn with_agent(api_base: &str, token: &str, agent: ureq::Agent) -> Api {
        let base = api_base.trim_end_matches('/');
        Api {
            prefix: format!("{base}/bot{token}/"),
            file_prefix: format!("{base}/file/bot{token}/"),
            host: http::host_of(base),
            agent,
            down: Arc::default(),
        }
    }

    /// Set while the last call failed on the network, with a 5xx or a 429; cleared by
    /// the next call that gets another answer (the sender holds back "typing…" then).
    pub fn down_flag(&self) -> Arc<AtomicBool> {
        self.down.clone()
    }

    /// `host:port` of the Bot API server (safe to log).
    pub fn host(&self) -> &str {
        &self.host
    }

    /// Who the bot is.
    pub fn get_me(&self) -> Result<BotIdentity, ApiError> {
        let r = self.call("getMe", "{}")?;
        let id = get(&r, "id")
            .and_then(as_i64)
            .ok_or(ApiError::BadResponse {
                detail: "getMe without an id",
            })?;
        let username = str_at(&r, "username").unwrap_or("");
        Ok(BotIdentity {
            id,
            username: cut(username, MAX_USERNAME_BYTES),
        })
    }

    /// Updates from `offset` on, holding the request up to `timeout_secs`.
    pub fn get_updates(
        &self,
        offset: i64,
        timeout_secs: u64,
        limit: u64,
    ) -> Result<Vec<Update>, ApiError> {
        let body = updates_request(offset, timeout_secs, limit);
        let (status, text, retry_after) = self.call_raw("getUpdates", &body)?;
        updates_from_body(status, &text, retry_after)
    }

    /// `setWebhook`: Telegram posts updates to `url` with `secret` in the
    /// `X-Telegram-Bot-Api-Secret-Token` header, one at a time (`max_connections` 1: the
    /// order the bot's offset check relies on), the same kinds the poll asks for.
    pub fn set_webhook(&self, url: &str, secret: &str) -> Result<(), ApiError> {
        self.call("setWebhook", &webhook_request(url, secret))
            .map(|_| ())
    }

    /// `deleteWebhook`, keeping the updates that wait (the poll gets them next).
    pub fn delete_webhook(&self) -> Result<(), ApiError> {
        self.call("deleteWebhook", r#"{"drop_pending_updates":false}"#)
            .map(|_| ())
    }

    /// `getWebhookInfo`: the URL set (empty: none) and the last delivery error.
    pub fn webhook_info(&self) -> Result<WebhookInfo, ApiError> {
        let r = self.call("getWebhookInfo", "{}")?;
        Ok(WebhookInfo {
            url: cut(str_at(&r, "url").unwrap_or(""), MAX_WEBHOOK_TEXT_BYTES),
            last_error: str_at(&r, "last_error_message").map(|e| cut(e, MAX_WEBHOOK_TEXT_BYTES)),
            pending: get(&r, "pending_update_count")
                .and_then(as_i64)
                .unwrap_or(0),
        })
    }

    /// Send one message (at most 4096 UTF-16 units: split before calling). Returns the
    /// new message's id (`None` when the answer does not say).
    pub fn send_message(&self, m: &OutText<'_>) -> Result<Option<i64>, ApiError> {
        let r = self.call("sendMessage", &message_request(m))?;
        Ok(get(&r, "message_id").and_then(as_i64))
    }

    /// Replace the text of message `message_id` in `m.chat_id` (`m.reply_to` is unused).
    pub fn edit_message_text(&self, message_id: i64, m: &OutText<'_>) -> Result<(), ApiError> {
        self.call("editMessageText", &edit_request(message_id, m))
            .map(|_| ())
    }

    /// Show (or update) the animated draft `draft_id` in a private chat: Bot API 9.3+,
    /// for streaming a reply while it is written. Servers without it answer 404.
    pub fn send_message_draft(&self, draft_id: i64, m: &OutText<'_>) -> Result<(), ApiError> {
        self.call("sendMessageDraft", &draft_request(draft_id, m))
            .map(|_| ())
    }

    /// Show "typing…" in a chat (Telegram clears it after ~5 s or at the next message).
    pub fn send_chat_action(&self, chat_id: i64) -> Result<(), ApiError> {
        self.send_action(chat_id, "typing")
    }

    /// Show a chat action (`typing`, `upload_document`, `record_voice`…).
    pub fn send_action(&self, chat_id: i64, action: &str) -> Result<(), ApiError> {
        let body = json::to_string(&json::object([
            ("chat_id", int(chat_id)),
            ("action", json::string(action)),
        ]));
        self.call("sendChatAction", &body).map(|_| ())
    }

    /// Download file `file_id` into `dest` (created, never into RAM): `getFile`, then
    /// `{api_base}/file/bot{token}/{file_path}`. At most `cap` bytes; exactly the size
    /// `getFile` announced when it announced one. Returns the size. `dest` is left for
    /// the caller to remove on error.
    pub fn download(
        &self,
        file_id: &str,
        dest: &std::path::Path,
        cap: u64,
    ) -> Result<u64, FetchError> {
        let body = json::to_string(&json::object([("file_id", json::string(file_id))]));
        let r = self.call("getFile", &body).map_err(FetchError::Api)?;
        let announced = get(&r, "file_size")
            .and_then(as_i64)
            .and_then(|n| u64::try_from(n).ok());
        if announced.is_some_and(|n| n > cap) {
            return Err(FetchError::TooLarge);
        }
        let file_path = str_at(&r, "file_path").ok_or(FetchError::Api(ApiError::BadResponse {
            detail: "getFile without a file_path",
        }))?;
        if file_path.contains("..") || file_path.starts_with('/') {
            return Err(FetchError::Api(ApiError::BadResponse {
                detail: "getFile with an odd file_path",
            }));
        }
        let transport = |error| {
            FetchError::Api(ApiError::Transport {
                host: self.host.clone(),
                error,
            })
        };
        // The URL carries the token: built here, used once, never formatted.
        let url = format!("{}{file_path}", self.file_prefix);
        let resp = self
            .agent
            .get(&url)
            .call()
            .map_err(|e| transport(http::map_error(e)))?;
        let status = resp.status().as_u16();
        if !(200..300).contains(&status) {
            return Err(FetchError::Api(by_status(status, String::new(), None)));
        }
        // Never more than announced (a file larger than said is cut off at once).
        let limit = announced.map_or(cap, |a| a.min(cap));
        let over = || match announced {
            Some(_) => FetchError::SizeMismatch,
            None => FetchError::TooLarge,
        };
        let mut reader = resp
            .into_body()
            .into_with_config()
            .limit(limit + 1)
            .reader();
        let mut out = std::fs::File::create(dest).map_err(FetchError::Disk)?;
        let mut buf = vec![0u8; crate::limits::HTTP_INPUT_BUFFER_BYTES];
        let mut got = 0u64;
        loop {
            use std::io::{Read, Write};
            let n = match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) => {
                    let e = http::map_io_error(e);
                    return Err(if e == HttpError::TooLarge {
                        over()
                    } else {
                        transport(e)
                    });
                }
            };
            got += n as u64;
            if got > limit {
                return Err(over());
            }
            out.write_all(&buf[..n]).map_err(FetchError::Disk)?;
        }
        out.sync_all().map_err(FetchError::Disk)?;
        if announced.is_some_and(|n| n != got) {
            return Err(FetchError::SizeMismatch);
        }
        Ok(got)
    }

    /// Send the file at `path` to a chat with `method` (`sendDocument`, `sendPhoto`,
    /// `sendVoice`), its bytes streamed from disk as the multipart field `field`.
    /// `(method, field)`, `(name, mime)`: as `deliver::upload_kind` chose.
    pub fn send_file(
        &self,
        chat_id: i64,
        (method, field): (&str, &str),
        path: &std::path::Path,
        (name, mime): (&str, &str),
    ) -> Result<(), ApiError> {
        use crate::provider::upload;
        let chat = chat_id.to_string();
        let (body, content_type) =
            upload::multipart(&[("chat_id", &chat)], field, name, mime, path).map_err(|_| {
                ApiError::BadResponse {
                    detail: "the file cannot be read",
                }
            })?;
        let url = format!("{}{method}", self.prefix);
        let (status, text, retry_after) = upload::post_body(
            &self.agent,
            &url,
            &[("Content-Type", content_type)],
            body,
            MAX_BOT_API_RESPONSE_BYTES,
        )
        .map_err(|error| ApiError::Transport {
            host: self.host.clone(),
            error,
        })?;
        parse_envelope(status, &text, retry_after).map(|_| ())
    }

    fn call(&self, method: &str, body: &str) -> Result<Value, ApiError> {
        let (status, text, retry_after) = self.call_raw(method, body)?;
        parse_envelope(status, &text, retry_after)
    }

    /// The status, body and `Retry-After` of one call.
    fn call_raw(&self, method: &str, body: &str) -> Result<(u16, String, Option<u64>), ApiError> {
        let transport = |error| ApiError::Transport {
            host: self.host.clone(),
            error,
        };
        // The URL carries the token: it is built here, used once, and never formatted.
        let url = format!("{}{method}", self.prefix);
        let r = self
            .agent
            .post(&url)
            .header("Content-Type", "application/json")
            .send(body)
            .map_err(|e| transport(http::map_error(e)))
            .and_then(|resp| {
                http::note_date(&resp, &url);
                http::read_reply(resp, MAX_BOT_API_RESPONSE_BYTES).map_err(transport)
            });
        let down = r
            .as_ref()
            .map_or(true, |(status, ..)| *status >= 500 || *status == 429);
        self.down.store(down, Ordering::Relaxed);
        r
    }
}

fn int(n: i64) -> Value {
    Value::Number(Number::I64(n))
}

/// The `setWebhook` request body.
pub fn webhook_request(url: &str, secret: &str) -> String {
    let allowed = ALLOWED_UPDATES.iter().map(|s| json::string(*s)).collect();
    json::to_string(&json::object([
        ("url", json::string(url)),
        ("secret_token", json::string(secret)),
        ("allowed_updates", json::array(allowed)),
        ("max_connections", json::number(1)),
    ]))
}

/// One update as Telegram posts it to a webhook (a JSON `Update` object), read exactly
/// as an element of a `getUpdates` result. `None`: not JSON, or no `update_id`.
pub fn webhook_update(body: &str) -> Option<Update> {
    let v = json::parse_value(body).ok()?;
    as_object(&v)?;
    parse_updates(&Value::Array(vec![v].into_iter().collect()))
        .ok()?
        .pop()
}

/// The `getUpdates` request body.
pub fn updates_request(offset: i64, timeout_secs: u64, limit: u64) -> String {
    let allowed = ALLOWED_UPDATES.iter().map(|s| json::string(*s)).collect();
    let mut pairs = vec![
        ("timeout", json::number(timeout_secs)),
        ("limit", json::number(limit.clamp(1, 100))),
        ("allowed_updates", json::array(allowed)),
    ];
    if offset > 0 {
        pairs.push(("offset", int(offset)));
    }
    json::to_string(&json::object(pairs))
}

/// The `sendMessage` request body.
pub fn message_request(m: &OutText<'_>) -> String {
    let mut pairs = vec![("chat_id", int(m.chat_id)), ("text", json::string(m.text))];
    if m.html {
        pairs.push(("parse_mode", json::string("HTML")));
    }
    if let Some(id) = m.reply_to {
        pairs.push((
            "reply_parameters",
            json::object([
                ("message_id", int(id)),
                ("allow_sending_without_reply", Value::Bool(true)),
            ]),
        ));
    }
    json::to_string(&json::object(pairs))
}

/// The `editMessageText` request body.
pub fn edit_request(message_id: i64, m: &OutText<'_>) -> String {
    let mut pairs = vec![
        ("chat_id", int(m.chat_id)),
        ("message_id", int(message_id)),
        ("text", json::string(m.text)),
    ];
    if m.html {
        pairs.push(("parse_mode", json::string("HTML")));
    }
    json::to_string(&json::object(pairs))
}

/// The `sendMessageDraft` request body.
pub fn draft_request(draft_id: i64, m: &OutText<'_>) -> String {
    let mut pairs = vec![
        ("chat_id", int(m.chat_id)),
        ("draft_id", int(draft_id)),
        ("text", json::string(m.text)),
    ];
    if m.html {
        pairs.push(("parse_mode", json::string("HTML")));
    }
    json::to_string(&json::object(pairs))
}

/// Classify an answer: the `result` on success, else the error that says what to do.
pub fn parse_envelope(
    status: u16,
    body: &str,
    retry_after_header: Option<u64>,
) -> Result<Value, ApiError> {
    let v = match json::parse_value(body) {
        Ok(v) => Some(v),
        Err(e) => {
            if (200..300).contains(&status) {
                log::warn!(
                    "telegram: an answer is not JSON ({})",
                    json::AtByte(&e, body.len())
                );
            }
            None
        }
    };
    let v = v.filter(|v| matches!(v, Value::Object(_)));
    let ok = v.as_ref().and_then(|v| get(v, "ok")).and_then(as_bool);
    if (200..300).contains(&status) && ok == Some(true) {
        let result = v.and_then(|v| match v {
            Value::Object(mut o) => o.remove("result"),
            _ => None,
        });
        return result.ok_or(ApiError::BadResponse {
            detail: "no result",
        });
    }
    let Some(v) = v else {
        return Err(match status {
            200..=299 => ApiError::BadResponse { detail: "not JSON" },
            _ => by_status(status, String::new(), retry_after_header),
        });
    };
    if ok.is_none() {
        return Err(if (200..300).contains(&status) {
            ApiError::BadResponse {
                detail: "no ok field",
            }
        } else {
            by_status(status, String::new(), retry_after_header)
        });
    }
    // ok == false (or a non-2xx status): Telegram's error_code wins over a 200 status.
    let code = get(&v, "error_code")
        .and_then(as_i64)
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| (400..600).contains(c))
        .unwrap_or(if (200..300).contains(&status) {
            500
        } else {
            status
        });
    let description = description(str_at(&v, "description").unwrap_or(""));
    let retry_after = path(&v, &["parameters", "retry_after"])
        .and_then(as_i64)
        .and_then(|n| u64::try_from(n).ok())
        .or(retry_after_header);
    Err(by_status(code, description, retry_after))
}

fn by_status(status: u16, description: String, retry_after: Option<u64>) -> ApiError {
    match status {
        401 => ApiError::Unauthorized,
        404 => ApiError::NotFound,
        409 => ApiError::Conflict { description },
        429 => ApiError::RateLimited {
            retry_after_secs: retry_after.unwrap_or(DEFAULT_RETRY_AFTER_SECS),
        },
        400..=499 => ApiError::Rejected {
            status,
            description,
        },
        _ => ApiError::Server { status },
    }
}

/// Telegram's description made safe for a log line: scrubbed, one line, cut.
fn description(d: &str) -> String {
    let clean: String = scrub(d)
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(MAX_DESCRIPTION_CHARS)
        .collect();
    clean.trim().to_string()
}

fn cut(s: &str, max_bytes: usize) -> String {
    let mut end = s.len().min(max_bytes);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

/// The updates of a `getUpdates` answer; entries without an `update_id` are skipped.
/// Never stuck on one bad update: the reader turns a lone surrogate escape into U+FFFD
/// (`json::parse_value`); when the body still cannot be read, each element of its
/// `result` array is read on its own, and one that cannot be is logged with its
/// `update_id` and kept as an update without a message, so the offset moves past it and
/// the updates after it are answered.
pub fn updates_from_body(
    status: u16,
    body: &str,
    retry_after: Option<u64>,
) -> Result<Vec<Update>, ApiError> {
    match parse_envelope(status, body, retry_after) {
        Ok(result) => parse_updates(&result),
        Err(e @ ApiError::BadResponse { .. }) => salvage_updates(body).ok_or(e),
        Err(e) => Err(e),
    }
}

/// The elements of the first `"result":[…]` array of `body`, each read on its own.
/// `None` when there is no such array or no element names an `update_id`.
fn salvage_updates(body: &str) -> Option<Vec<Update>> {
    let b = body.as_bytes();
    // A raw (unescaped) `"result"` can only be a key: quotes inside strings are escaped.
    let key = body.find("\"result\"")?;
    let mut i = key + 8;
    while b
        .get(i)
        .is_some_and(|c| c.is_ascii_whitespace() || *c == b':')
    {
        i += 1;
    }
    if b.get(i) != Some(&b'[') {
        return None;
    }
    let mut out = Vec::new();
    let (mut depth, mut in_str, mut esc, mut start) = (0usize, false, false, None);
    for (j, &c) in b.iter().enumerate().skip(i + 1) {
        if in_str {
            match (esc, c) {
                (true, _) => esc = false,
                (false, b'\\') => esc = true,
                (false, b'"') => in_str = false,
                _ => {}
            }
            continue;
        }
        match c {
            b'"' => in_str = true,
            b'{' | b'[' => {
                if depth == 0 {
                    start = Some(j);
                }
                depth += 1;
            }
            b'}' | b']' if depth > 0 => {
                depth -= 1;
                if depth == 0
                    && let Some(s) = start.take()
                {
                    out.extend(salvage_one(body.get(s..=j).unwrap_or("")));
                }
            }
            b']' => break, // the end of the result array
            _ => {}
        }
        if out.len() >= MAX_SALVAGED_UPDATES {
            break;
        }
    }
    // A byte that broke the structure (an unescaped quote or backslash) hides the
    // elements after it from the scan: their ids are still in the text. Only ids close
    // to the first one count (Telegram numbers updates one after another), so an id
    // spelled inside a broken text cannot move the offset far ahead.
    let ids = raw_update_ids(body);
    if let Some(&first) = ids.first() {
        for id in ids {
            let near = (first..first.saturating_add(MAX_SALVAGED_UPDATES as i64)).contains(&id);
            if near && !out.iter().any(|u| u.update_id == id) {
                log::warn!("telegram: update {id} could not be read (invalid JSON); skipped");
                out.push(Update {
                    update_id: id,
                    message: None,
                });
            }
        }
    }
    out.sort_by_key(|u| u.update_id);
    out.dedup_by_key(|u| u.update_id);
    out.truncate(MAX_SALVAGED_UPDATES);
    (!out.is_empty()).then_some(out)
}

/// Every `"update_id": N` of `body`, in order of appearance (at most
/// `MAX_SALVAGED_UPDATES`).
fn raw_update_ids(body: &str) -> Vec<i64> {
    let mut ids = Vec::new();
    for (at, _) in body.match_indices("\"update_id\"") {
        let digits: String = body
            .get(at + 11..)
            .unwrap_or("")
            .trim_start_matches(|c: char| c.is_ascii_whitespace() || c == ':')
            .chars()
            .take_while(|c| c.is_ascii_digit())
            .collect();
        if let Ok(id) = digits.parse::<i64>() {
            ids.push(id);
        }
        if ids.len() >= MAX_SALVAGED_UPDATES {
            break;
        }
    }
    ids
}

/// Updates read from one broken `getUpdates` answer at most (Telegram sends at most the
/// `limit` asked for).
const MAX_SALVAGED_UPDATES: usize = 100;

/// One element of a `result` array: the update if it reads, else its `update_id` alone.
fn salvage_one(element: &str) -> Option<Update> {
    if let Ok(v) = json::parse_value(element)
        && let Ok(mut list) = parse_updates(&Value::Array(vec![v].into_iter().collect()))
    {
        return list.pop();
    }
    let update_id = *raw_update_ids(element).first()?;
    log::warn!("telegram: update {update_id} could not be read (invalid JSON); skipped");
    Some(Update {
        update_id,
        message: None,
    })
}

pub fn parse_updates(result: &Value) -> Result<Vec<Update>, ApiError> {
    let list = as_array(result).ok_or(ApiError::BadResponse {
        detail: "getUpdates result is not a list",
    })?;
    let mut out = Vec::with_capacity(list.len());
    for u in list.iter() {
        let Some(update_id) = get(u, "update_id").and_then(as_i64) else {
            log::debug!("telegram: skipped an update without an update_id");
            continue;
        };
        let message = get(u, "message").and_then(parse_message);
        out.push(Update { update_id, message });
    }
    Ok(out)
}

fn parse_message(m: &Value) -> Option<Incoming> {
    let message_id = get(m, "message_id").and_then(as_i64)?;
    let chat_id = path(m, &["chat", "id"]).and_then(as_i64)?;
    let chat = match path(m, &["chat", "type"]).and_then(json::as_str)? {
        "private" => ChatKind::Private,
        "group" | "supergroup" => ChatKind::Group,
        _ => ChatKind::Channel,
    };
    let from = get(m, "from");
    let text_of = |key| str_at(m, key).map(|t| crate::text::cap_text(t, MAX_USER_MESSAGE_BYTES));
    Some(Incoming {
        message_id,
        chat_id,
        chat,
        from_id: from.and_then(|f| get(f, "id")).and_then(as_i64),
        from_username: from
            .and_then(|f| str_at(f, "username"))
            .map(|u| cut(u, MAX_USERNAME_BYTES)),
        from_is_bot: from
            .and_then(|f| get(f, "is_bot"))
            .and_then(as_bool)
            .unwrap_or(false),
        text: text_of("text"),
        caption: text_of("caption"),
        has_media: MEDIA_KEYS.iter().any(|k| get(m, k).is_some()),
        reply_to_from_id: path(m, &["reply_to_message", "from", "id"]).and_then(as_i64),
        media: parse_media(m),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::XorShift;

    #[test]
    fn success_returns_the_result() {
        let r = parse_envelope(200, r#"{"ok":true,"result":{"id":7}}"#, None).unwrap();
        assert_eq!(get(&r, "id").and_then(as_i64), Some(7));
    }

    #[test]
    fn errors_are_classified() {
        let e = |s, b: &str| parse_envelope(s, b, None).unwrap_err();
        assert_eq!(
            e(
                401,
                r#"{"ok":false,"error_code":401,"description":"Unauthorized"}"#
            ),
            ApiError::Unauthorized
        );
        assert_eq!(
            e(404, r#"{"ok":false,"error_code":404}"#),
            ApiError::NotFound
        );
        assert_eq!(
            e(
                409,
                r#"{"ok":false,"error_code":409,"description":"Conflict: terminated by other getUpdates request"}"#
            ),
            ApiError::Conflict {
                description: "Conflict: terminated by other getUpdates request".into()
            }
        );
        assert_eq!(
            e(
                429,
                r#"{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 17","parameters":{"retry_after":17}}"#
            ),
            ApiError::RateLimited {
                retry_after_secs: 17
            }
        );
        let parse = e(
            400,
            r#"{"ok":false,"error_code":400,"description":"Bad Request: can't parse entities: Unsupported start tag \"x\" at byte offset 0"}"#,
        );
        assert!(parse.is_parse_entities() && !parse.is_transient());
        assert!(
            !e(
                400,
                r#"{"ok":false,"error_code":400,"description":"Bad Request: chat not found"}"#
            )
            .is_parse_entities()
        );
        assert_eq!(
            e(502, "<html>bad gateway</html>"),
            ApiError::Server { status: 502 }
        );
        assert!(e(502, "").is_transient());
    }

    #[test]
    fn garbage_and_odd_envelopes_are_bad_responses() {
        for body in [
            "",
            "garbage",
            "<html>",
            "[1,2]",
            "{\"result\":[]}",
            "{\"ok\":true}",
        ] {
            let err = parse_envelope(200, body, None).unwrap_err();
            assert!(matches!(err, ApiError::BadResponse { .. }), "{body}: {err}");
            assert!(err.is_transient());
        }
        // ok:false with a 200 status is still an error.
        assert!(parse_envelope(200, r#"{"ok":false,"error_code":429}"#, Some(3)).is_err());
        assert_eq!(
            parse_envelope(200, r#"{"ok":false,"error_code":429}"#, Some(3)).err(),
            Some(ApiError::RateLimited {
                retry_after_secs: 3
            })
        );
        assert_eq!(
            parse_envelope(429, "not json", Some(9)).err(),
            Some(ApiError::RateLimited {
                retry_after_secs: 9
            })
        );
    }

    #[test]
    fn updates_parse_with_every_field() {
        let body = r#"{"ok":true,"result":[
            {"update_id":10,"message":{"message_id":5,"from":{"id":42,"is_bot":false,"first_name":"A","username":"Alice"},
              "chat":{"id":-100123,"type":"supergroup"},"date":1,"text":"hi @yc_bot",
              "reply_to_message":{"message_id":4,"from":{"id":999,"is_bot":true},"chat":{"id":-100123,"type":"supergroup"},"date":1}}},
            {"update_id":11,"edited_message":{"message_id":5}},
            {"no_id":true},
            {"update_id":12,"message":{"message_id":6,"from":{"id":42},"chat":{"id":42,"type":"private"},"photo":[{}],"caption":"look"}}
        ]}"#;
        let r = parse_envelope(200, body, None).unwrap();
        let u = parse_updates(&r).unwrap();
        assert_eq!(u.len(), 3);
        let m = u[0].message.as_ref().unwrap();
        assert_eq!(m.chat, ChatKind::Group);
        assert_eq!(m.chat_id, -100123);
        assert_eq!(m.from_id, Some(42));
        assert_eq!(m.from_username.as_deref(), Some("Alice"));
        assert_eq!(m.text.as_deref(), Some("hi @yc_bot"));
        assert_eq!(m.reply_to_from_id, Some(999));
        assert!(!m.has_media);
        assert_eq!(u[1].message, None);
        let p = u[2].message.as_ref().unwrap();
        assert!(p.has_media);
        assert_eq!(p.caption.as_deref(), Some("look"));
        assert_eq!(p.text, None);
        assert!(parse_updates(&json::string("x")).is_err());
    }

    fn three_updates(middle_text: &str) -> String {
        let m = |id: i64, text: &str| {
            format!(
                r#"{{"update_id":{id},"message":{{"message_id":{id},"from":{{"id":42,"is_bot":false,"first_name":"A"}},"chat":{{"id":42,"type":"private"}},"date":1,"text":"{text}"}}}}"#
            )
        };
        format!(
            r#"{{"ok":true,"result":[{},{},{}]}}"#,
            m(20, "first"),
            m(21, middle_text),
            m(22, "third")
        )
    }

    #[test]
    fn a_lone_surrogate_in_one_update_is_repaired_and_nothing_is_lost() {
        let u = updates_from_body(200, &three_updates(r"hi \ud800 there"), None).unwrap();
        let ids: Vec<i64> = u.iter().map(|u| u.update_id).collect();
        assert_eq!(ids, [20, 21, 22]);
        let text = u[1].message.as_ref().and_then(|m| m.text.clone());
        assert_eq!(text.as_deref(), Some("hi \u{fffd} there"));
    }

    #[test]
    fn any_corruption_inside_one_update_still_moves_past_it() {
        let junk = [
            r"\ud800", r"\udc00", r"\q", r"\u12", "\u{1}", "\t", "é", r"\", "{", "}", "[", "]",
            ",", ":", r#"\""#, "ok", "\u{7f}",
        ];
        let mut x = crate::testkit::XorShift(0xBAD_0FF5E7);
        for _ in 0..3000 {
            let mut text = String::new();
            for _ in 0..1 + x.below(8) {
                text.push_str(junk[x.index(junk.len())]);
            }
            // Property: whatever is inside the middle update's text, the answer gives
            // update ids 20..=22 in order (so the offset moves past all three), and the
            // update before it is read. (The one after it is read too unless the junk
            // broke the JSON structure itself: an unescaped quote or backslash.)
            let body = three_updates(&text);
            let u = updates_from_body(200, &body, None).unwrap_or_else(|e| panic!("{body}: {e}"));
            let ids: Vec<i64> = u.iter().map(|u| u.update_id).collect();
            assert_eq!(ids, [20, 21, 22], "{body}");
            assert!(u[0].message.is_some(), "{body}");
            if !text.contains('\\') && !text.contains('"') {
                assert!(u[2].message.is_some(), "{body}");
            }
        }
    }

    #[test]
    fn an_update_id_inside_a_broken_text_cannot_move_the_offset_far_ahead() {
        let body = three_updates(r#"x\" "update_id":999999999, "#);
        let ids: Vec<i64> = updates_from_body(200, &body, None)
            .unwrap()
            .iter()
            .map(|u| u.update_id)
            .collect();
        assert_eq!(ids, [20, 21, 22], "{body}");
        // A body with no update at all is still an error (the poller backs off).
        assert!(updates_from_body(200, "<html>bad gateway</html>", None).is_err());
    }

    #[test]
    fn request_bodies() {
        let b = updates_request(0, 50, 16);
        assert!(!b.contains("offset"), "{b}");
        assert!(b.contains(r#""allowed_updates":["message"]"#), "{b}");
        assert!(updates_request(77, 1, 1000).contains(r#""offset":77"#));
        assert!(updates_request(77, 1, 1000).contains(r#""limit":100"#));
        let m = message_request(&OutText {
            chat_id: -5,
            text: "a\"b",
            html: true,
            reply_to: Some(3),
        });
        assert!(m.contains(r#""chat_id":-5"#), "{m}");
        assert!(m.contains(r#""parse_mode":"HTML""#), "{m}");
        assert!(m.contains(r#""text":"a\"b""#), "{m}");
        assert!(m.contains(r#""message_id":3"#), "{m}");
        let p = message_request(&OutText {
            chat_id: 1,
            text: "x",
            html: false,
            reply_to: None,
        });
        assert!(
            !p.contains("parse_mode") && !p.contains("reply_parameters"),
            "{p}"
        );
        let html = OutText {
            chat_id: 5,
            text: "<b>x</b>",
            html: true,
            reply_to: Some(1),
        };
        let e = edit_request(77, &html);
        assert!(e.contains(r#""message_id":77"#), "{e}");
        assert!(e.contains(r#""parse_mode":"HTML""#), "{e}");
        assert!(!e.contains("reply_parameters"), "{e}");
        let d = draft_request(3, &html);
        assert!(
            d.contains(r#""draft_id":3"#) && d.contains(r#""chat_id":5"#),
            "{d}"
        );
    }

    #[test]
    fn not_modified_is_recognised() {
        let e = parse_envelope(
            400,
            r#"{"ok":false,"error_code":400,"description":"Bad Request: message is not modified: specified new message content and reply markup are exactly the same"}"#,
            None,
        )
        .unwrap_err();
        assert!(e.is_not_modified() && !e.is_parse_entities());
        assert!(!ApiError::NotFound.is_not_modified());
    }

    #[test]
    fn the_token_is_never_in_debug_or_errors() {
        let token = "123456789:AAHsecretsecretsecretsecretsecret12";
        let api = Api::new("http://127.0.0.1:9/", token, 5);
        assert!(!format!("{api:?}").contains("AAH"));
        assert_eq!(api.host(), "127.0.0.1:9");
        // Port 9 (discard) is closed on test machines: a transport error naming the host.
        if let Err(e) = api.get_me() {
            let s = e.to_string();
            assert!(!s.contains("AAH") && !s.contains("/bot"), "{s}");
        }
    }

    /// What every error from `parse_envelope` must look like, whatever the body.
    fn assert_well_formed(e: &ApiError) {
        if let ApiError::Rejected { description, .. } | ApiError::Conflict { description } = e {
            assert!(
                description.chars().count() <= MAX_DESCRIPTION_CHARS,
                "{e:?}"
            );
            assert!(!description.chars().any(char::is_control), "{e:?}");
            assert_eq!(description.trim(), description, "{e:?}");
        }
        assert!(!e.to_string().contains('\n'), "{e}");
        assert!(!matches!(e, ApiError::Transport { .. }), "{e:?}");
    }

    /// The error an answer with no usable envelope gets: decided by the status alone.
    fn by_status_alone(status: u16) -> ApiError {
        by_status(status, String::new(), None)
    }

    const STATUSES: [u16; 6] = [200, 400, 401, 409, 429, 500];

    #[test]
    fn random_bodies_give_a_result_only_on_success_and_errors_by_status() {
        let alphabet = br#"{}[]":,0123456789-oktruefalsresultupdate_idmessagechatid "#;
        let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
        for _ in 0..5_000 {
            let mut s = String::new();
            for _ in 0..rng.below(64) {
                s.push(alphabet[rng.index(alphabet.len())] as char);
            }
            let status = STATUSES[rng.index(STATUSES.len())];
            let is_object = matches!(json::parse_value(&s), Ok(Value::Object(_)));
            match parse_envelope(status, &s, None) {
                Ok(v) => {
                    assert_eq!(status, 200, "{s:?}");
                    if let Ok(updates) = parse_updates(&v) {
                        assert!(updates.len() <= as_array(&v).map_or(0, |l| l.len()));
                    }
                }
                Err(e) => {
                    assert_well_formed(&e);
                    if !is_object {
                        let want = if status == 200 {
                            ApiError::BadResponse { detail: "not JSON" }
                        } else {
                            by_status_alone(status)
                        };
                        assert_eq!(e, want, "{s:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn generated_envelopes_are_classified_by_their_fields() {
        let descriptions = [
            r#""Bad Request: chat not found""#,
            r#""  line\nbreak\ttab  ""#,
            r#""é😀""#,
            "17",
        ];
        let texts = [r#""hi""#, r#""é\n😀""#, "5"];
        let mut rng = XorShift(0x2545_F491_4F6C_DD1D);
        let long = format!("\"{}\"", "d".repeat(3 * MAX_DESCRIPTION_CHARS));
        let huge = format!("\"{}\"", "t".repeat(MAX_USER_MESSAGE_BYTES + 100));
        // How often each outcome was met: every one must be (the generator reaches them).
        let mut seen = [0u32; 4];
        for _ in 0..3_000 {
            let status = STATUSES[rng.index(STATUSES.len())];
            let mut fields: Vec<String> = Vec::new();
            let ok = [Some("true"), Some("false"), Some("1"), None][rng.index(4)];
            if let Some(ok) = ok {
                fields.push(format!(r#""ok":{ok}"#));
            }
            let code = [
                None,
                Some(400i64),
                Some(409),
                Some(429),
                Some(503),
                Some(99),
            ][rng.index(6)];
            if let Some(c) = code {
                fields.push(format!(r#""error_code":{c}"#));
            }
            if rng.below(2) == 0 {
                let d = match rng.index(descriptions.len() + 1) {
                    i if i < descriptions.len() => descriptions[i],
                    _ => long.as_str(),
                };
                fields.push(format!(r#""description":{d}"#));
            }
            let retry_after = [None, Some(7i64), Some(-1)][rng.index(3)];
            if let Some(r) = retry_after {
                fields.push(format!(r#""parameters":{{"retry_after":{r}}}"#));
            }
            // Updates: some without an id, some with a message, texts of every size.
            let mut with_id = 0;
            let mut updates = Vec::new();
            for i in 0..rng.below(5) {
                let text = match rng.index(texts.len() + 1) {
                    j if j < texts.len() => texts[j],
                    _ => huge.as_str(),
                };
                let message = format!(
                    r#"{{"message_id":{i},"chat":{{"id":-{i},"type":"group"}},"text":{text}}}"#
                );
                if rng.below(4) == 0 {
                    updates.push(format!(r#"{{"message":{message}}}"#));
                } else {
                    with_id += 1;
                    updates.push(format!(r#"{{"update_id":{i},"message":{message}}}"#));
                }
            }
            let has_result = rng.below(4) != 0;
            if has_result {
                fields.push(format!(r#""result":[{}]"#, updates.join(",")));
            }
            let mut body = format!("{{{}}}", fields.join(","));
            let cut = rng.below(8) == 0 && body.len() > 1;
            if cut {
                body.truncate(rng.index(body.len() - 1) + 1);
            }

            let r = parse_envelope(status, &body, None);
            if cut {
                let want = if status == 200 {
                    ApiError::BadResponse { detail: "not JSON" }
                } else {
                    by_status_alone(status)
                };
                assert_eq!(r.err(), Some(want), "{body}");
                seen[0] += 1;
                continue;
            }
            // `"ok":1` is not a boolean: read as no `ok` field at all.
            let ok = ok.filter(|o| *o != "1");
            let success = status == 200 && ok == Some("true");
            match r {
                Ok(v) => {
                    seen[1] += 1;
                    assert!(success && has_result, "{body}");
                    let got = parse_updates(&v).unwrap();
                    assert_eq!(got.len(), with_id, "{body}");
                    for u in &got {
                        let m = u.message.as_ref().expect("every update has a message");
                        assert_eq!(m.chat, ChatKind::Group);
                        let len = m.text.as_ref().map_or(0, String::len);
                        assert!(len <= MAX_USER_MESSAGE_BYTES, "{len}");
                    }
                }
                Err(e) => {
                    assert_well_formed(&e);
                    assert!(!(success && has_result), "{body}: {e:?}");
                    if success {
                        assert_eq!(
                            e,
                            ApiError::BadResponse {
                                detail: "no result"
                            }
                        );
                    } else if ok.is_none() {
                        let want = if status == 200 {
                            ApiError::BadResponse {
                                detail: "no ok field",
                            }
                        } else {
                            by_status_alone(status)
                        };
                        assert_eq!(e, want, "{body}");
                    } else {
                        // Telegram's error_code wins when it is an error code.
                        let want = match code {
                            Some(c) if (400..600).contains(&c) => c as u16,
                            _ if status == 200 => 500,
                            _ => status,
                        };
                        match e {
                            ApiError::RateLimited { retry_after_secs } => {
                                seen[2] += 1;
                                assert_eq!(want, 429, "{body}");
                                let want_wait = match retry_after {
                                    Some(7) => 7,
                                    _ => DEFAULT_RETRY_AFTER_SECS,
                                };
                                assert_eq!(retry_after_secs, want_wait, "{body}");
                            }
                            ApiError::Rejected { status, .. } => {
                                seen[3] += 1;
                                assert_eq!(status, want, "{body}");
                            }
                            ApiError::Conflict { .. } => assert_eq!(want, 409),
                            ApiError::Unauthorized => assert_eq!(want, 401),
                            ApiError::Server { status } => assert_eq!(status, want),
                            other => panic!("{body}: {other:?}"),
                        }
                    }
                }
            }
        }
        assert!(seen.iter().all(|n| *n > 0), "{seen:?}");
    }
}
