//! LLM providers: the HTTP client shared by all
//! providers, one module per wire protocol (`openai`, `anthropic`), streamed replies
//! (`sse`, `stream`) and the retry policy (`retry`).
//!
//! # Bounds
//! Response bodies (streamed or not) are read up to `MAX_PROVIDER_RESPONSE_BYTES`;
//! request bodies above `MAX_PROVIDER_REQUEST_BYTES` are refused before sending.
//! Connect timeout `HTTP_CONNECT_TIMEOUT_SECS`; overall timeout `provider.timeout_secs`,
//! or for a streamed reply `provider.timeout_secs` per read (a stall) and
//! `STREAM_MAX_SECS` overall.
//!
//! # Threads
//! The agent builds request bodies on the executor thread (a photo named in one is only
//! checked there; its bytes are read while the body is sent); [`Provider::chat_blocking`]
//! and [`Provider::chat_stream_blocking`] run on a worker thread; [`Provider::chain`]
//! builds the providers on the main thread at start-up.
//!
//! # Blocking
//! [`Provider::chat_blocking`] and [`Provider::chat_stream_blocking`] block for the whole
//! HTTP exchange: call them on a worker thread (`runtime::Workers`), never on the
//! executor.

pub mod anthropic;
pub mod http;
pub mod openai;
pub mod resolve;
pub mod retry;
pub mod sse;
pub mod stream;
pub mod tls;
pub mod upload;

use crate::chat::{Message, ToolCall, ToolSpec, Usage};
use crate::config::{Env, ProviderConfig, ProviderKind};
use std::fmt;

/// The model's answer to one request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChatReply {
    pub content: String,
    pub tool_calls: Vec<ToolCall>,
    pub finish_reason: String,
    pub usage: Option<Usage>,
}

/// Everything one request carries.
pub struct ChatRequest<'a> {
    pub system: &'a str,
    pub messages: &'a [Message],
    /// Empty = no tools offered (used to force a final answer).
    pub tools: &'a [ToolSpec],
    /// The workspace, when images may be sent to a model that can see
    /// (`provider.vision`): the photos named in the last user message and the images
    /// messages carry (`Message::images`, a tool's result); `None`: text only.
    pub media_root: Option<&'a std::path::Path>,
}

/// An image to send: its mime type and the file mark standing for its base64
/// (`upload::FILE_MARK`).
#[derive(Debug, Clone)]
pub struct Image {
    pub mime: &'static str,
    pub mark: String,
}

impl ChatRequest<'_> {
    /// The index of the last user message and the photos it names that exist, when the
    /// provider can see.
    pub fn images(&self, cfg: &ProviderConfig) -> (usize, Vec<Image>) {
        let last = self
            .messages
            .iter()
            .rposition(|m| m.role == crate::chat::Role::User);
        let (Some(root), Some(i), true) = (self.media_root, last, cfg.vision) else {
            return (usize::MAX, Vec::new());
        };
        let images = crate::chat::media::photos_in(&self.messages[i].content)
            .into_iter()
            .filter_map(|(rel, _)| {
                // Only a workspace file that is an image by its bytes and not too large
                // (a placeholder can be typed by hand).
                let path = crate::security::confine::resolve(root, rel, true).ok()?;
                let mut file = std::fs::File::open(&path).ok()?;
                let meta = file.metadata().ok()?;
                let (_, mime) = crate::chat::media::sniff_image(&crate::files::head(&mut file))?;
                let ok = meta.is_file() && meta.len() <= crate::chat::media::MAX_IMAGE_BYTES;
                Some(Image {
                    mime,
                    mark: upload::file_mark(&path).filter(|_| ok)?,
                })
            })
            .collect();
        (i, images)
    }

    /// The images `m` carries (a tool's result), as this request sends them: none when
    /// it is text only or the provider cannot see.
    pub fn shown(&self, cfg: &ProviderConfig, m: &Message) -> Vec<Image> {
        if self.media_root.is_none() || !cfg.vision {
            return Vec::new();
        }
        m.images
            .iter()
            .filter_map(|i| {
                Some(Image {
                    mime: i.mime(),
                    mark: upload::file_mark(i.path())?,
                })
            })
            .collect()
    }

    /// A JSON writer for this request's body, sized for it (text plus escaping and
    /// member names), with the members every provider starts with already written:
    /// `{"model":…,"max_tokens":…,"messages":[` (the caller writes the messages).
    pub fn body_writer(&self, cfg: &ProviderConfig) -> crate::json::Writer {
        let size: usize = self.system.len()
            + self
                .messages
                .iter()
                .map(|m| m.content.len() + 64)
                .sum::<usize>()
            + self
                .tools
                .iter()
                .map(|t| t.parameters.len() + 256)
                .sum::<usize>();
        let mut w = crate::json::Writer::with_capacity(size + size / 8 + 256);
        w.begin_object();
        w.field_str("model", &cfg.model);
        w.key("max_tokens");
        w.uint(cfg.max_tokens);
        w.key("messages");
        w.begin_array();
        w
    }
}

/// Why a provider call failed. Display strings are short, secret-free and say what to do.
#[derive(Debug, Clone, PartialEq)]
pub enum ProviderError {
    /// The env var that should hold the key is empty.
    NoKey { env: String },
    /// DNS failure, refused connection, TLS failure…
    Unreachable { host: String, detail: String },
    /// Connect or overall timeout.
    Timeout { host: String },
    /// 401/403.
    Unauthorized {
        status: u16,
        detail: String,
        env: String,
    },
    /// 404: usually an unknown model or a wrong base URL.
    NotFound { model: String, detail: String },
    /// 429.
    RateLimited {
        retry_after_secs: Option<u64>,
        detail: String,
    },
    /// 5xx and other unexpected statuses; `retry_after_secs`: the `Retry-After` header,
    /// when the server sent one (a 503 telling how long it will be down).
    Status {
        status: u16,
        detail: String,
        retry_after_secs: Option<u64>,
    },
    /// 400 and other client errors the provider explains.
    BadRequest { status: u16, detail: String },
    /// The request does not fit the model's context window (a 400 that says so, or the
    /// same error inside a stream). `window`: the size the server named, if it did.
    ContextOverflow { window: Option<u64>, detail: String },
    /// The server refuses tools for this model (Ollama's "does not support tools",
    /// llama.cpp without `--jinja`, vLLM without a tool parser).
    ToolsRefused { detail: String },
    /// The body is not the JSON we expect.
    BadResponse { detail: String },
    /// The body exceeded the size cap.
    TooLarge,
    /// The request we built is too large to send.
    RequestTooLarge,
    /// A streamed answer ended before its end marker (connection closed, reset…).
    StreamCut { detail: String },
    /// TLS failed: the certificate, the protocol, or the connection broke (`tls`).
    Tls(tls::TlsFailure),
    /// The caller went away while the answer was being read (shutdown).
    Cancelled,
}

impl ProviderError {
    /// Worth trying again (same provider after backoff, or a fallback).
    pub fn is_retryable(&self) -> bool {
        match self {
            ProviderError::Unreachable { .. }
            | ProviderError::Timeout { .. }
            | ProviderError::RateLimited { .. }
            | ProviderError::StreamCut { .. } => true,
            ProviderError::Tls(t) => t.is_transient(),
            ProviderError::Status { status, .. } => {
                matches!(status, 500 | 502 | 503 | 504 | 529)
            }
            _ => false,
        }
    }
}

impl fmt::Display for ProviderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProviderError::NoKey { env } => write!(
                f,
                "no API key: set {env} in the environment or in secrets.env (or point provider.base_url at a local http:// server)"
            ),
            // The host stays out of the user's sentence; `transport_error` logs it.
            ProviderError::Unreachable { detail, .. } => write!(
                f,
                "cannot reach the provider ({detail}): check provider.base_url and the network"
            ),
            ProviderError::Timeout { .. } => f.write_str(
                "the provider did not answer in time: try again, or raise provider.timeout_secs",
            ),
            ProviderError::Unauthorized {
                status,
                detail,
                env,
            } => write!(
                f,
                "the provider refused the API key (HTTP {status}{}): check {env}",
                detail_suffix(detail)
            ),
            ProviderError::NotFound { model, detail } => write!(
                f,
                "the provider does not know model \"{model}\" or the URL is wrong (HTTP 404{}): check provider.model and provider.base_url",
                detail_suffix(detail)
            ),
            ProviderError::RateLimited { detail, .. } => write!(
                f,
                "the provider is rate limiting us (HTTP 429{}): wait a little and try again",
                detail_suffix(detail)
            ),
            ProviderError::Status { status, detail, .. } => write!(
                f,
                "the provider failed (HTTP {status}{}): try again later",
                detail_suffix(detail)
            ),
            ProviderError::ContextOverflow { window, .. } => {
                f.write_str("the conversation does not fit the model's context window")?;
                if let Some(n) = window {
                    write!(f, " of {n} tokens")?;
                }
                f.write_str(": set provider.context_window to the server's context size, or start fresh with /new")
            }
            ProviderError::ToolsRefused { detail } => write!(
                f,
                "the server refuses tools for this model{}: set provider.tool_mode to text",
                detail_suffix(detail)
            ),
            ProviderError::BadRequest { status, detail } => write!(
                f,
                "the provider rejected the request (HTTP {status}{}): check provider.model and provider.max_tokens",
                detail_suffix(detail)
            ),
            ProviderError::BadResponse { detail } => write!(
                f,
                "the provider sent an answer yoctoclaw cannot read ({detail}): check provider.base_url and provider.kind"
            ),
            ProviderError::TooLarge => write!(
                f,
                "the provider's answer is larger than {} MiB: lower provider.max_tokens",
                crate::limits::MAX_PROVIDER_RESPONSE_BYTES / (1024 * 1024)
            ),
            ProviderError::RequestTooLarge => write!(
                f,
                "the conversation is too large to send: start a fresh one with /new"
            ),
            ProviderError::StreamCut { detail } => write!(
                f,
                "the provider's streamed answer broke off before the end ({detail}): the answer is incomplete, try again"
            ),
            ProviderError::Tls(t) => write!(f, "cannot talk securely to the provider: {t}"),
            ProviderError::Cancelled => f.write_str("the request was cancelled"),
        }
    }
}

/// A body with file marks, ready to stream (a photo deleted since the body was built
/// fails here).
fn spliced(body: &str) -> Result<upload::Body, ProviderError> {
    upload::spliced(body.to_string()).map_err(|_| ProviderError::BadRequest {
        status: 0,
        detail: "a photo of this conversation cannot be read any more".into(),
    })
}

fn detail_suffix(detail: &str) -> String {
    if detail.is_empty() {
        String::new()
    } else {
        format!(": {detail}")
    }
}

impl std::error::Error for ProviderError {}

/// A provider's body read as JSON. When it is not, a warning says where it stopped being
/// JSON (the byte offset and the body's length, never the body) and the error carries
/// `detail` (the user's sentence names no position).
fn read_json(text: &str, detail: &str) -> Result<miniserde::json::Value, ProviderError> {
    crate::json::parse_value(text).map_err(|e| {
        log::warn!(
            "provider: {detail} ({})",
            crate::json::AtByte(&e, text.len())
        );
        ProviderError::BadResponse {
            detail: detail.into(),
        }
    })
}

/// A transport failure as a provider error; the log line names the host the sentence leaves
/// out.
fn transport_error(e: http::HttpError, url: &str) -> ProviderError {
    if !matches!(e, http::HttpError::TooLarge | http::HttpError::Malformed(_)) {
        log::warn!("provider at {}: {e}", http::host_of(url));
    }
    e.into_provider(url)
}

/// `kind:model`: how logs, usage records and `/metrics` name a provider (never its URL).
pub fn label(cfg: &ProviderConfig) -> String {
    let kind = match cfg.kind {
        ProviderKind::OpenAi => "openai",
        ProviderKind::Anthropic => "anthropic",
    };
    format!("{kind}:{}", cfg.model)
}

/// A configured provider: its settings, its key (if any) and an HTTP agent.
pub struct Provider {
    pub cfg: ProviderConfig,
    key: Option<String>,
    agent: ureq::Agent,
    /// Its slot in `/metrics`' provider table (`metrics::provider_slot`).
    metric: usize,
}

impl fmt::Debug for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Provider")
            .field("kind", &self.cfg.kind)
            .field("base_url", &self.cfg.base_url)
            .field("model", &self.cfg.model)
            .field("key", &self.key.as_ref().map(|_| "[REDACTED]"))
            .finish()
    }
}

/// A number naming a provider by its URL and model (FNV-1a, stable across runs), for
/// what is remembered about it without keeping its URL.
pub fn provider_id(cfg: &ProviderConfig) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in cfg.base_url.bytes().chain([0]).chain(cfg.model.bytes()) {
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

impl Provider {
    /// Look the key up; a missing key is an error except for plain-http (local) servers.
    pub fn new(cfg: &ProviderConfig, env: &Env) -> Result<Provider, ProviderError> {
        let key = env.get(&cfg.api_key_env);
        if key.is_none() && cfg.base_url.starts_with("https://") {
            return Err(ProviderError::NoKey {
                env: cfg.api_key_env.clone(),
            });
        }
        Ok(Provider {
            cfg: cfg.clone(),
            key,
            agent: http::agent(cfg.timeout_secs),
            metric: crate::metrics::provider_slot(&label(cfg)),
        })
    }

    /// The same endpoint, key and connections asking `model`, answering in at most
    /// `max_tokens` (the injection screen's judge: a short verdict from a cheap model).
    pub fn with_model(&self, model: &str, max_tokens: u64) -> Provider {
        let mut cfg = self.cfg.clone();
        cfg.model = model.to_string();
        cfg.max_tokens = cfg.max_tokens.min(max_tokens);
        Provider {
            cfg,
            key: self.key.clone(),
            agent: self.agent.clone(),
            metric: self.metric,
        }
    }

    /// The primary provider and the fallbacks that can be set up, in order. Fails when the
    /// primary cannot (no key); a fallback that cannot is skipped with a warning.
    pub fn chain(
        primary: &ProviderConfig,
        fallbacks: &[ProviderConfig],
        env: &Env,
    ) -> Result<Vec<std::sync::Arc<Provider>>, ProviderError> {
        let mut list = vec![std::sync::Arc::new(Provider::new(primary, env)?)];
        for f in fallbacks {
            match Provider::new(f, env) {
                Ok(p) => list.push(std::sync::Arc::new(p)),
                Err(e) => log::warn!("fallback provider {} skipped: {e}", f.model),
            }
        }
        Ok(list)
    }

    /// Short label for logs, usage records and `/metrics`: `openai:model`.
    pub fn label(&self) -> String {
        label(&self.cfg)
    }

    /// Its slot in `/metrics`' provider table.
    pub fn metric(&self) -> usize {
        self.metric
    }

    /// Build the request body on the caller's thread (cheap, no I/O).
    pub fn build_body(&self, req: &ChatRequest<'_>) -> Result<String, ProviderError> {
        self.build_body_as(req, self.cfg.stream)
    }

    /// `build_body`, streamed or not whatever `provider.stream` says.
    pub fn build_body_as(
        &self,
        req: &ChatRequest<'_>,
        stream: bool,
    ) -> Result<String, ProviderError> {
        let unstreamed;
        let cfg = if stream == self.cfg.stream {
            &self.cfg
        } else {
            unstreamed = ProviderConfig {
                stream,
                ..self.cfg.clone()
            };
            &unstreamed
        };
        let body = match cfg.kind {
            ProviderKind::OpenAi => openai::request_body(cfg, req),
            ProviderKind::Anthropic => anthropic::request_body(cfg, req),
        };
        if body.len() > crate::limits::MAX_PROVIDER_REQUEST_BYTES {
            return Err(ProviderError::RequestTooLarge);
        }
        Ok(body)
    }

    /// Whether requests ask for a streamed answer (`provider.stream`).
    pub fn streams(&self) -> bool {
        self.cfg.stream
    }

    fn url(&self) -> String {
        match self.cfg.kind {
            ProviderKind::OpenAi => format!("{}/chat/completions", self.cfg.base_url),
            ProviderKind::Anthropic => anthropic::messages_url(&self.cfg.base_url),
        }
    }

    fn headers(&self) -> Vec<(&'static str, String)> {
        let mut headers: Vec<(&str, String)> = vec![("Content-Type", "application/json".into())];
        match (self.cfg.kind, &self.key) {
            (ProviderKind::OpenAi, Some(k)) => {
                headers.push(("Authorization", format!("Bearer {k}")))
            }
            (ProviderKind::Anthropic, Some(k)) => headers.push(("x-api-key", k.clone())),
            (ProviderKind::OpenAi, None) => {}
            (ProviderKind::Anthropic, None) => {}
        }
        if self.cfg.kind == ProviderKind::Anthropic {
            headers.push(("anthropic-version", anthropic::API_VERSION.into()));
        }
        headers
    }

    /// Parse a complete 2xx body.
    fn parse(&self, text: &str) -> Result<ChatReply, ProviderError> {
        match self.cfg.kind {
            ProviderKind::OpenAi => openai::parse_reply(text, &self.cfg),
            ProviderKind::Anthropic => anthropic::parse_reply(text, &self.cfg),
        }
    }

    /// A non-2xx answer as a typed error.
    fn status_error(&self, status: u16, text: &str, retry_after: Option<u64>) -> ProviderError {
        openai::status_error(status, text, retry_after, &self.cfg)
    }

    /// Send one request and parse the answer (counted in `/metrics`). Blocks: run on a
    /// worker thread.
    pub fn chat_blocking(&self, body: &str) -> Result<ChatReply, ProviderError> {
        let started = std::time::Instant::now();
        let r = self.exchange(body);
        crate::metrics::provider_request(self.metric, started, r.is_ok());
        r
    }

    fn exchange(&self, body: &str) -> Result<ChatReply, ProviderError> {
        let url = self.url();
        let sent = if body.contains(upload::FILE_MARK) {
            let b = spliced(body)?;
            upload::post_body(
                &self.agent,
                &url,
                &self.headers(),
                b,
                crate::limits::MAX_PROVIDER_RESPONSE_BYTES,
            )
        } else {
            http::post(&self.agent, &url, &self.headers(), body)
        };
        let (status, text, retry_after) = sent.map_err(|e| transport_error(e, &url))?;
        if !(200..300).contains(&status) {
            return Err(self.status_error(status, &text, retry_after));
        }
        self.parse(&text)
    }

    /// Send one request that asks for a streamed answer; `on_text` gets the visible text
    /// as it arrives (never empty; returning false cancels). The reply is the same as
    /// [`Provider::chat_blocking`] would give. A server that ignores `stream` and answers
    /// with one JSON body is accepted (its text is handed to `on_text` once). Counted in
    /// `/metrics` like [`Provider::chat_blocking`]. Blocks: run on a worker thread.
    pub fn chat_stream_blocking(
        &self,
        body: &str,
        on_text: &mut dyn FnMut(&str) -> bool,
    ) -> Result<ChatReply, ProviderError> {
        let started = std::time::Instant::now();
        let r = self.exchange_stream(body, on_text);
        crate::metrics::provider_request(self.metric, started, r.is_ok());
        r
    }

    fn exchange_stream(
        &self,
        body: &str,
        on_text: &mut dyn FnMut(&str) -> bool,
    ) -> Result<ChatReply, ProviderError> {
        use crate::limits::{MAX_PROVIDER_RESPONSE_BYTES, STREAM_MAX_SECS};
        use std::time::Duration;
        let url = self.url();
        let mut headers = self.headers();
        headers.push(("Accept", "text/event-stream".into()));
        let per_read = Duration::from_secs(self.cfg.timeout_secs.max(1));
        let total = Duration::from_secs(STREAM_MAX_SECS.max(self.cfg.timeout_secs));
        let mut plain = body.as_bytes();
        let mut photos;
        let (reader, len): (&mut dyn std::io::Read, u64) = if body.contains(upload::FILE_MARK) {
            photos = spliced(body)?;
            (&mut photos.reader, photos.len)
        } else {
            (&mut plain, body.len() as u64)
        };
        headers.push(("Content-Length", len.to_string()));
        let resp = http::post_streaming(&self.agent, &url, &headers, reader, per_read, total)
            .map_err(|e| transport_error(e, &url))?;
        let status = resp.status().as_u16();
        let json_body = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.to_ascii_lowercase().contains("json"));
        if !(200..300).contains(&status) || json_body {
            let (status, text, retry_after) = http::read_reply(resp, MAX_PROVIDER_RESPONSE_BYTES)
                .map_err(|e| transport_error(e, &url))?;
            if !(200..300).contains(&status) {
                return Err(self.status_error(status, &text, retry_after));
            }
            let reply = self.parse(&text)?;
            if !reply.content.is_empty() && !on_text(&reply.content) {
                return Err(ProviderError::Cancelled);
            }
            return Ok(reply);
        }
        let mut reader = resp
            .into_body()
            .into_with_config()
            .limit(MAX_PROVIDER_RESPONSE_BYTES)
            .reader();
        stream::read_stream(&mut reader, &self.cfg, &http::host_of(&url), on_text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::{Message, Role};

    /// A conversation whose last round's first result carries an image (`shot.png`, the
    /// 8 bytes of a PNG signature, in `dir`), and the result of a second call without.
    pub(super) fn tool_round_with_image(dir: &std::path::Path) -> Vec<Message> {
        std::fs::create_dir_all(dir).unwrap();
        let path = dir.join("shot.png");
        std::fs::write(&path, b"\x89PNG\r\n\x1a\n").unwrap();
        let image = crate::chat::media::ToolImage::adopt(path, "image/png", 8);
        let mut said = Message::new(Role::Assistant, "");
        said.tool_calls = vec![
            crate::chat::ToolCall {
                id: "call_1".into(),
                name: "cam__shot".into(),
                arguments: "{}".into(),
            },
            crate::chat::ToolCall {
                id: "call_2".into(),
                name: "cam__info".into(),
                arguments: "{}".into(),
            },
        ];
        let mut shot = Message::new(Role::Tool, "[image: image/png, 8 bytes]");
        shot.tool_call_id = Some("call_1".into());
        shot.images = vec![image];
        let mut info = Message::new(Role::Tool, "ok");
        info.tool_call_id = Some("call_2".into());
        vec![Message::new(Role::User, "look"), said, shot, info]
    }

    /// The messages member of a body as sent (file marks spliced), exactly.
    pub(super) fn sent_messages(body: &str) -> String {
        let sent = upload::spliced_text(body);
        let start = sent.find("\"messages\":").expect("messages") + 11;
        let end = sent.find(",\"stream\":").expect("stream after messages");
        sent[start..end].to_string()
    }

    #[test]
    fn only_workspace_images_named_in_the_last_user_message_are_sent() {
        let root = std::env::temp_dir().join(format!("yc-images-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("inbox")).unwrap();
        std::fs::write(root.join("inbox/a.jpg"), [0xFF, 0xD8, 0xFF, 0xE0, 1, 2]).unwrap();
        std::fs::write(root.join("inbox/fake.png"), b"PK\x03\x04 not an image").unwrap();
        let line = |p: &str| crate::chat::media::photo_line(p, "image/png", 6);
        let cfg = ProviderConfig::default();
        let old = Message::new(Role::User, line("inbox/a.jpg"));
        let last = Message::new(
            Role::User,
            format!(
                "{}\n{}\n{}\n{}",
                line("inbox/a.jpg"),
                line("inbox/fake.png"),
                line("inbox/missing.jpg"),
                line("../../etc/passwd")
            ),
        );
        let msgs = [old, Message::new(Role::Assistant, "ok"), last];
        let req = ChatRequest {
            system: "",
            messages: &msgs,
            tools: &[],
            media_root: Some(&root),
        };
        let (i, images) = req.images(&cfg);
        assert_eq!(i, 2);
        assert_eq!(images.len(), 1);
        // The type comes from the bytes, not from the line.
        assert_eq!(images[0].mime, "image/jpeg");
        assert!(
            images[0].mark.ends_with("inbox/a.jpg\u{1}"),
            "{}",
            images[0].mark
        );
        let blind = ProviderConfig {
            vision: false,
            ..cfg.clone()
        };
        assert!(req.images(&blind).1.is_empty());
        let none = ChatRequest {
            media_root: None,
            ..req
        };
        assert!(none.images(&cfg).1.is_empty());
        // Written into both protocols' bodies as a file mark, never as bytes.
        let body = openai::request_body(&cfg, &req);
        assert!(
            body.contains("\"image_url\":{\"url\":\"data:image/jpeg;base64,\u{1}"),
            "{body}"
        );
        let a = anthropic::request_body(&cfg, &req);
        assert!(
            a.contains("{\"type\":\"image\",\"source\":{\"type\":\"base64\",\"media_type\":\"image/jpeg\",\"data\":\"\u{1}"),
            "{a}"
        );
        let _ = std::fs::remove_dir_all(&root);
    }
}
