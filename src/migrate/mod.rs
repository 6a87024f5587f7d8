//! `yoctoclaw migrate --from PEER`: bring a peer assistant's home across (OpenClaw,
//! PicoClaw, NullClaw, ZeroClaw): provider, model and fallbacks, API keys and the bot token
//! (into `secrets.env`), the Telegram allowlist, workspace files and skills, memories, and
//! the cron jobs yoctoclaw can express.
//!
//! Two steps. Each peer's reader (`openclaw`, `picoclaw`, `nullclaw`, `zeroclaw`) reads
//! the peer's home into a neutral [`Plan`] and writes nothing; [`apply`] then writes it,
//! or with `--dry-run` only says item by item what it would write. What cannot come
//! across is a `skip` line with its reason, and the rest still comes.
//!
//! Safety: nothing outside the peer home is read (symlinks leading out are refused, loops
//! named); secrets go only to `secrets.env` (mode 0600) and are never printed, not even
//! their length, dry run included; existing yoctoclaw files are kept unless `--force` (an
//! unedited onboard template holds nothing of the owner's and is replaced); the database
//! import (memories and cron jobs) is one transaction; files are written atomically.
//!
//! # Bounds
//! Peer config files up to `MAX_PEER_CONFIG_BYTES`, workspace files up to
//! `MAX_PEER_FILE_BYTES`, markdown memory files read up to `MAX_PEER_MEMORY_FILE_BYTES`
//! (what is past that is reported, not read), at most `MAX_PEER_DIR_ENTRIES` names listed
//! per folder, memory text held in the plan up to `MAX_PLAN_MEMORY_BYTES` in total (and
//! `store::memory::MAX_MEMORIES` entries), `MAX_FALLBACKS` fallbacks, and the cron jobs
//! the store holds (`store::cron::MAX_CRON_JOBS`).
//!
//! # Blocking
//! A one-shot command on the main thread: plain file and SQLite I/O, no executor.

mod apply;
pub mod json5;
mod nullclaw;
mod openclaw;
mod picoclaw;
mod source;
pub mod toml;
mod zeroclaw;

pub use apply::{Options, apply};

use crate::config::{Home, ProviderKind};
use crate::memory::transfer::Entry;
use miniserde::json::{Number, Value};
use std::fmt;
use std::path::{Path, PathBuf};

/// Largest peer config file read.
pub const MAX_PEER_CONFIG_BYTES: u64 = 1024 * 1024;
/// Largest workspace file (SOUL.md, a SKILL.md ...) brought across.
pub const MAX_PEER_FILE_BYTES: u64 = 256 * 1024;
/// Bytes of one markdown memory file read; the rest is reported as not read.
pub const MAX_PEER_MEMORY_FILE_BYTES: u64 = 4 * 1024 * 1024;
/// Names listed per peer folder (skills, daily notes).
pub const MAX_PEER_DIR_ENTRIES: usize = 2000;
/// Memory text held by one plan; memories past it are reported, not read.
pub const MAX_PLAN_MEMORY_BYTES: usize = 16 * 1024 * 1024;
const _: () = assert!(
    MAX_PLAN_MEMORY_BYTES == 16 << 20,
    "the skip message says 16 MiB"
);
/// Fallback providers brought across.
pub const MAX_FALLBACKS: usize = 4;

/// The assistants migrate knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peer {
    OpenClaw,
    PicoClaw,
    NullClaw,
    ZeroClaw,
}

impl Peer {
    pub const ALL: [Peer; 4] = [
        Peer::OpenClaw,
        Peer::PicoClaw,
        Peer::NullClaw,
        Peer::ZeroClaw,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Peer::OpenClaw => "openclaw",
            Peer::PicoClaw => "picoclaw",
            Peer::NullClaw => "nullclaw",
            Peer::ZeroClaw => "zeroclaw",
        }
    }

    pub fn parse(s: &str) -> Option<Peer> {
        Peer::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(s.trim()))
    }
}

/// Why migrate could not run at all (items that cannot come across are not errors).
#[derive(Debug)]
pub enum MigrateError {
    /// `--from` names no known peer (exit 2).
    UnknownPeer(String),
    /// The peer home is missing or unreadable (exit 2).
    NoPeerHome(PathBuf, String),
    /// Writing into the yoctoclaw home failed (exit 1).
    Write(PathBuf, std::io::Error),
    /// The database import failed and was rolled back (exit 1).
    Store(String),
}

impl MigrateError {
    /// True for mistakes in what was asked (exit 2).
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            MigrateError::UnknownPeer(_) | MigrateError::NoPeerHome(..)
        )
    }
}

impl fmt::Display for MigrateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MigrateError::UnknownPeer(p) => write!(
                f,
                "unknown peer {p:?}: use --from openclaw, picoclaw, nullclaw or zeroclaw"
            ),
            MigrateError::NoPeerHome(p, why) => write!(
                f,
                "cannot read the peer home {} ({why}): pass its folder with --path DIR",
                p.display()
            ),
            MigrateError::Write(p, e) => write!(f, "cannot write {}: {e}", p.display()),
            MigrateError::Store(e) => write!(
                f,
                "the database import failed and nothing of it was kept ({e}): fix that and run migrate again"
            ),
        }
    }
}

impl std::error::Error for MigrateError {}

/// A provider as yoctoclaw will call it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provider {
    pub kind: ProviderKind,
    pub base_url: String,
    pub model: String,
    /// Environment variable (in secrets.env) holding its key.
    pub key_env: String,
    /// The peer's name for the provider, for the report.
    pub from: String,
}

/// A secret bound for `secrets.env`. `Debug` never shows the value.
pub struct Secret {
    pub name: String,
    pub value: String,
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secret({})", self.name)
    }
}

/// When a peer's job runs, before it is turned into a yoctoclaw schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum When {
    /// A cron expression and the peer's time zone for it, if any.
    Cron(String, Option<String>),
    EveryMs(u64),
    /// A one-shot instant (Unix seconds).
    At(i64),
}

/// A cron job to bring.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    pub name: String,
    pub when: When,
    pub text: String,
    pub is_message: bool,
    /// `telegram:<chat_id>` or empty.
    pub target: String,
}

/// Memories from one peer source (a file or a database).
#[derive(Debug)]
pub struct Batch {
    pub from: String,
    pub entries: Vec<Entry>,
}

/// The Telegram channel as found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Telegram {
    pub enabled: bool,
    pub allow_from: Vec<String>,
}

/// Everything a peer home holds that yoctoclaw can use, and what it cannot. `Debug`
/// shows no secret and no peer variable's value.
pub struct Plan {
    pub peer: Peer,
    pub provider: Option<Provider>,
    pub fallbacks: Vec<Provider>,
    pub secrets: Vec<Secret>,
    pub telegram: Option<Telegram>,
    pub timezone: Option<String>,
    /// (path in the workspace, text).
    pub files: Vec<(String, String)>,
    pub memories: Vec<Batch>,
    pub jobs: Vec<Job>,
    /// (report column, what, why).
    pub skipped: Vec<(&'static str, String, String)>,
    /// Variables the peer's own files define (`.env`, `env` sections), for `${VAR}`.
    pub env: Vec<(String, String)>,
    mem_bytes: usize,
    mem_count: usize,
    mem_dropped: usize,
}

impl fmt::Debug for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Plan")
            .field("peer", &self.peer)
            .field("provider", &self.provider)
            .field("fallbacks", &self.fallbacks)
            .field("secrets", &self.secrets)
            .field("telegram", &self.telegram)
            .field("files", &self.files.len())
            .field("memories", &self.memories.len())
            .field("jobs", &self.jobs)
            .field("skipped", &self.skipped)
            .finish_non_exhaustive()
    }
}

impl Plan {
    pub fn new(peer: Peer) -> Plan {
        Plan {
            peer,
            provider: None,
            fallbacks: Vec::new(),
            secrets: Vec::new(),
            telegram: None,
            timezone: None,
            files: Vec::new(),
            memories: Vec::new(),
            jobs: Vec::new(),
            skipped: Vec::new(),
            env: Vec::new(),
            mem_bytes: 0,
            mem_count: 0,
            mem_dropped: 0,
        }
    }

    /// Report something that cannot come across: `kind` is its report column.
    pub fn skip(&mut self, kind: &'static str, what: &str, why: &str) {
        self.skipped.push((kind, what.to_string(), why.to_string()));
    }

    /// Add memories, within `MAX_PLAN_MEMORY_BYTES`.
    pub fn batch(&mut self, from: &str, entries: Vec<Entry>) {
        let mut kept = Vec::with_capacity(entries.len());
        for e in entries {
            if self.mem_bytes + e.text.len() > MAX_PLAN_MEMORY_BYTES
                || self.mem_count >= crate::store::memory::MAX_MEMORIES as usize
            {
                self.mem_dropped += 1;
                continue;
            }
            self.mem_bytes += e.text.len();
            self.mem_count += 1;
            kept.push(e);
        }
        if !kept.is_empty() {
            self.memories.push(Batch {
                from: from.to_string(),
                entries: kept,
            });
        }
    }

    /// The value of a peer setting that may be `${VAR}` (resolved from the peer's env).
    pub fn resolve(&self, v: &str) -> Result<String, String> {
        let v = v.trim();
        let Some(name) = v.strip_prefix("${").and_then(|r| r.strip_suffix('}')) else {
            return Ok(v.to_string());
        };
        let name = name.split(":-").next().unwrap_or(name);
        self.env
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .ok_or_else(|| {
                [
                    "refers to ",
                    name,
                    ", which the peer's files do not set: put the value in secrets.env by hand",
                ]
                .concat()
            })
    }

    /// A secret for `secrets.env` under `name`, checked (reported when it cannot come).
    pub fn secret(&mut self, name: &str, raw: &str) -> bool {
        let checked = self
            .resolve(raw)
            .and_then(|v| check_secret(&v).map(|_| v).map_err(str::to_string));
        let why = match checked {
            Ok(v) => match self.secrets.iter().find(|s| s.name == name) {
                Some(s) if s.value == v => return true,
                Some(_) => "it already holds another of the peer's keys".to_string(),
                None => {
                    self.secrets.push(Secret {
                        name: name.to_string(),
                        value: v,
                    });
                    return true;
                }
            },
            Err(why) => why,
        };
        self.skip("secret", name, &why);
        false
    }

    /// Add the primary provider (first call) or a fallback. `key` is the raw key setting.
    pub fn provider(
        &mut self,
        name: &str,
        model: &str,
        url: Option<&str>,
        anthropic: bool,
        key: Option<&str>,
    ) {
        if let Err(why) = self.try_provider(name, model.trim(), url, anthropic, key) {
            self.skip("provider", &[name, " ", model].concat(), &why);
        }
    }

    fn try_provider(
        &mut self,
        name: &str,
        model: &str,
        url: Option<&str>,
        anthropic: bool,
        key: Option<&str>,
    ) -> Result<(), String> {
        let (kind, base_url) = resolve_provider(name, url, anthropic)?;
        if model.is_empty() {
            return Err("no model is named for it".into());
        }
        let mut all = self.provider.iter().chain(self.fallbacks.iter());
        if all
            .clone()
            .any(|p| p.base_url == base_url && p.model == model)
        {
            return Ok(());
        }
        let primary = self.provider.is_none();
        if !primary && self.fallbacks.len() >= MAX_FALLBACKS {
            return Err("more fallbacks than yoctoclaw keeps".into());
        }
        let key_env = match all.find(|p| p.base_url == base_url) {
            Some(p) => p.key_env.clone(),
            None if primary => "YOCTOCLAW_API_KEY".to_string(),
            None => {
                let mut n: String = canonical_name(name)
                    .chars()
                    .map(|c| {
                        if c.is_ascii_alphanumeric() {
                            c.to_ascii_uppercase()
                        } else {
                            '_'
                        }
                    })
                    .collect();
                n.push_str("_API_KEY");
                n
            }
        };
        if let Some(k) = key.filter(|k| !k.trim().is_empty()) {
            // A key that cannot come is reported; the provider still comes.
            self.secret(&key_env, k);
        }
        let p = Provider {
            kind,
            base_url,
            model: model.to_string(),
            key_env,
            from: name.to_string(),
        };
        if primary {
            self.provider = Some(p);
        } else {
            self.fallbacks.push(p);
        }
        Ok(())
    }

    /// Add Telegram user ids or @names from a peer allowlist value (a list or one value).
    pub fn allow(&mut self, v: &Value) {
        let items = match v {
            Value::Array(a) => a.as_slice(),
            other => std::slice::from_ref(other),
        };
        for item in items {
            let Some(s) = scalar(item) else { continue };
            let s = s.trim();
            let s = s
                .strip_prefix("telegram:")
                .or_else(|| s.strip_prefix("tg:"))
                .unwrap_or(s);
            let id = if s.parse::<i64>().is_ok() || s.starts_with('@') {
                s.to_string()
            } else if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                ["@", s].concat()
            } else {
                let why = if s == "*" {
                    "a wildcard lets everyone in: yoctoclaw needs each user's id or @name"
                } else {
                    "not a Telegram user id or @username"
                };
                self.skip("telegram", s, why);
                continue;
            };
            let t = self.telegram.get_or_insert_with(Telegram::default);
            if !t.allow_from.contains(&id) {
                t.allow_from.push(id);
            }
        }
    }

    /// The bot token and whether the channel is on.
    pub fn telegram_token(&mut self, raw: Option<&str>, enabled: bool) {
        let ok = match raw.filter(|r| !r.trim().is_empty()) {
            Some(raw) => self.secret("TELEGRAM_BOT_TOKEN", raw),
            None => true,
        };
        self.telegram.get_or_insert_with(Telegram::default).enabled |= enabled && ok;
    }
}

/// Refuse values `secrets.env` cannot hold or that are not the key itself.
fn check_secret(v: &str) -> Result<(), &'static str> {
    Err(if v.is_empty() {
        "it is empty"
    } else if ["enc:", "enc2:", "enc://"].iter().any(|p| v.starts_with(p)) {
        "the peer stores it encrypted: put the plain value in secrets.env by hand"
    } else if ["op://", "file://", "env:", "keyring:"]
        .iter()
        .any(|p| v.starts_with(p))
    {
        "the peer looks it up at run time: put the value in secrets.env by hand"
    } else if v
        .chars()
        .any(|c| c.is_whitespace() || c.is_control() || c == '"' || c == '\'')
    {
        "it holds characters secrets.env cannot store: put it there by hand"
    } else {
        return Ok(());
    })
}

/// Known providers: canonical name and base URL. Only `anthropic` speaks the Messages API;
/// every other one is OpenAI-compatible.
const PROVIDERS: &[(&str, &str)] = &[
    ("openai", "https://api.openai.com/v1"),
    ("anthropic", crate::config::ANTHROPIC_BASE_URL),
    ("openrouter", "https://openrouter.ai/api/v1"),
    ("ollama", "http://127.0.0.1:11434/v1"),
    ("groq", "https://api.groq.com/openai/v1"),
    ("deepseek", "https://api.deepseek.com/v1"),
    ("mistral", "https://api.mistral.ai/v1"),
    ("xai", "https://api.x.ai/v1"),
    (
        "gemini",
        "https://generativelanguage.googleapis.com/v1beta/openai",
    ),
    ("together", "https://api.together.xyz/v1"),
    ("fireworks", "https://api.fireworks.ai/inference/v1"),
    ("perplexity", "https://api.perplexity.ai"),
    ("cerebras", "https://api.cerebras.ai/v1"),
    ("moonshot", "https://api.moonshot.ai/v1"),
    ("venice", "https://api.venice.ai/api/v1"),
    ("nvidia", "https://integrate.api.nvidia.com/v1"),
    ("zai", "https://api.z.ai/api/paas/v4"),
    (
        "qwen",
        "https://dashscope-intl.aliyuncs.com/compatible-mode/v1",
    ),
    ("siliconflow", "https://api.siliconflow.cn/v1"),
    ("minimax", "https://api.minimax.io/v1"),
    ("lmstudio", "http://127.0.0.1:1234/v1"),
    ("vllm", "http://127.0.0.1:8000/v1"),
    ("llamacpp", "http://127.0.0.1:8080/v1"),
    ("litellm", "http://127.0.0.1:4000/v1"),
];

/// Other spellings the peers use for the same services.
const ALIASES: &[(&str, &str)] = &[
    ("anthropic-messages", "anthropic"),
    ("claude", "anthropic"),
    ("gpt", "openai"),
    ("google", "gemini"),
    ("grok", "xai"),
    ("kimi", "moonshot"),
    ("zhipu", "zai"),
    ("glm", "zai"),
    ("dashscope", "qwen"),
    ("qwen-portal", "qwen"),
    ("qwen-intl", "qwen"),
    ("together-ai", "together"),
    ("llama.cpp", "llamacpp"),
    ("llama-cpp", "llamacpp"),
    ("lm-studio", "lmstudio"),
];

fn canonical_name(name: &str) -> String {
    let n = name.trim().to_ascii_lowercase();
    ALIASES
        .iter()
        .find(|(a, _)| *a == n)
        .map_or(n, |(_, c)| c.to_string())
}

/// A peer's provider name (and base URL, if it set one) as yoctoclaw's kind and base URL.
/// `anthropic` says the peer speaks the Messages API to it.
pub fn resolve_provider(
    name: &str,
    url: Option<&str>,
    anthropic: bool,
) -> Result<(ProviderKind, String), String> {
    let raw = name.trim();
    let (n, url) = if let Some(u) = raw.strip_prefix("custom:") {
        ("custom".to_string(), Some(u))
    } else if let Some(u) = raw.strip_prefix("anthropic-custom:") {
        ("anthropic".to_string(), Some(u))
    } else {
        (canonical_name(raw), url)
    };
    let url = url.map(str::trim).filter(|u| !u.is_empty());
    let known = PROVIDERS.iter().find(|(p, _)| *p == n).map(|(_, u)| *u);
    let Some(base) = url.or(known) else {
        return Err(format!(
            "yoctoclaw does not know the provider {name:?} and the peer gives no base URL for it: set provider.kind and provider.base_url by hand"
        ));
    };
    let kind = if anthropic || n == "anthropic" {
        ProviderKind::Anthropic
    } else {
        ProviderKind::OpenAi
    };
    let mut base = base.trim_end_matches('/').to_string();
    let Some(after) = base
        .strip_prefix("https://")
        .or_else(|| base.strip_prefix("http://"))
    else {
        return Err(format!(
            "its base URL {base:?} is not an http:// or https:// URL"
        ));
    };
    let has_path = after.contains('/');
    if kind == ProviderKind::Anthropic {
        // yoctoclaw appends /v1/messages itself.
        if let Some(b) = base.strip_suffix("/v1") {
            base = b.to_string();
        }
    } else if !has_path {
        // `https://api.openai.com`, `http://host:11434`: the Chat Completions root is /v1.
        base.push_str("/v1");
    }
    Ok((kind, base))
}

/// `provider/model` as the peers write it (`openrouter/anthropic/claude-sonnet-4`).
pub fn split_model(s: &str) -> Option<(&str, &str)> {
    s.trim()
        .split_once('/')
        .filter(|(p, m)| !p.is_empty() && !m.is_empty())
}

/// A string or a number as text.
pub fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(Number::U64(n)) => Some(n.to_string()),
        Value::Number(Number::I64(n)) => Some(n.to_string()),
        _ => None,
    }
}

/// Unix seconds of `YYYY-MM-DD[T ]HH:MM[:SS[.fff]][Z|±HH:MM]` (no offset: UTC).
pub fn parse_instant(s: &str) -> Option<i64> {
    let b = s.trim().as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        std::str::from_utf8(b.get(r)?).ok()?.parse().ok()
    };
    if b.len() < 16 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let (y, mo, d, h, mi) = (
        num(0..4)?,
        num(5..7)?,
        num(8..10)?,
        num(11..13)?,
        num(14..16)?,
    );
    let mut i = 16;
    let mut sec = 0;
    if b.get(i) == Some(&b':') {
        sec = num(17..19)?;
        i = 19;
        if b.get(i) == Some(&b'.') {
            i += 1;
            while b.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
        }
    }
    let offset = match b.get(i) {
        None | Some(b'Z' | b'z') => 0,
        Some(&sign @ (b'+' | b'-')) => {
            let o = num(i + 1..i + 3)? * 3600 + num(i + 4..i + 6)? * 60;
            if sign == b'+' { o } else { -o }
        }
        _ => return None,
    };
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let days = crate::time::civil::days_from_civil(y as i32, mo as u8, d as u8);
    Some(days * 86_400 + h * 3600 + mi * 60 + sec - offset)
}

/// A time as the peers store it: seconds, milliseconds or RFC 3339 text.
pub fn time_value(v: &Value) -> Option<i64> {
    match v {
        Value::String(s) => parse_instant(s),
        other => crate::json::as_i64(other).map(|n| if n > 100_000_000_000 { n / 1000 } else { n }),
    }
}

/// The default home of a peer: `$HOME/.<peer>`.
pub fn default_peer_home(peer: Peer) -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| PathBuf::from(h).join(format!(".{}", peer.name())))
}

/// Read a peer home into a plan. Fails only when the home itself cannot be read.
pub fn plan(peer: Peer, dir: &Path) -> Result<Plan, MigrateError> {
    let src = source::Src::open(dir, peer)
        .map_err(|why| MigrateError::NoPeerHome(dir.to_path_buf(), why))?;
    let mut plan = Plan::new(peer);
    match peer {
        Peer::OpenClaw => openclaw::read(&src, &mut plan),
        Peer::PicoClaw => picoclaw::read(&src, &mut plan),
        Peer::NullClaw => nullclaw::read(&src, &mut plan),
        Peer::ZeroClaw => zeroclaw::read(&src, &mut plan),
    }
    if plan.mem_dropped > 0 {
        let n = plan.mem_dropped.to_string();
        plan.skip(
            "memory",
            &n,
            "memories not read: migrate holds at most 16 MiB of memory text at once; import the rest with yoctoclaw memory import",
        );
    }
    Ok(plan)
}

/// `yoctoclaw migrate`: plan, then apply (or describe), printing to `out`. Returns whether
/// anything is (or would be) in the yoctoclaw home afterwards.
pub fn command(
    home: &Home,
    from: &str,
    path: Option<&Path>,
    opts: &Options,
    out: &mut dyn std::io::Write,
) -> Result<bool, MigrateError> {
    let peer = Peer::parse(from).ok_or_else(|| MigrateError::UnknownPeer(from.to_string()))?;
    let dir = match path {
        Some(p) => p.to_path_buf(),
        None => default_peer_home(peer).ok_or_else(|| {
            MigrateError::NoPeerHome(
                PathBuf::from(format!("~/.{}", peer.name())),
                "HOME is not set".into(),
            )
        })?,
    };
    let plan = plan(peer, &dir)?;
    apply(&plan, &dir, home, opts, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_names_map_to_kinds_and_base_urls() {
        let ok = |n: &str, url: Option<&str>| resolve_provider(n, url, false).unwrap();
        assert_eq!(
            ok("openrouter", None),
            (ProviderKind::OpenAi, "https://openrouter.ai/api/v1".into())
        );
        assert_eq!(
            ok("Anthropic", Some("https://api.anthropic.com/v1/")),
            (ProviderKind::Anthropic, "https://api.anthropic.com".into())
        );
        assert_eq!(ok("anthropic-messages", None).0, ProviderKind::Anthropic);
        assert_eq!(
            ok("google", None).1,
            "https://generativelanguage.googleapis.com/v1beta/openai"
        );
        assert_eq!(
            ok("ollama", Some("http://127.0.0.1:11434")).1,
            "http://127.0.0.1:11434/v1"
        );
        assert_eq!(
            ok("openai", Some("https://api.openai.com")).1,
            "https://api.openai.com/v1"
        );
        assert_eq!(
            ok("custom:https://llm.lan:8443/v1", None),
            (ProviderKind::OpenAi, "https://llm.lan:8443/v1".into())
        );
        assert_eq!(
            ok("anthropic-custom:https://api.z.ai/api/anthropic", None),
            (
                ProviderKind::Anthropic,
                "https://api.z.ai/api/anthropic".into()
            )
        );
        assert_eq!(
            ok("myproxy", Some("http://10.0.0.2:4000/v1")).1,
            "http://10.0.0.2:4000/v1"
        );
        assert!(
            resolve_provider("bedrock", None, false)
                .unwrap_err()
                .contains("bedrock")
        );
        assert!(resolve_provider("x", Some("ftp://x"), false).is_err());
    }

    #[test]
    fn instants_parse_in_the_peers_formats() {
        assert_eq!(parse_instant("1970-01-02T00:00:00Z"), Some(86_400));
        assert_eq!(parse_instant("2026-03-01 10:00:00"), Some(1_772_359_200));
        assert_eq!(
            parse_instant("2026-03-01T12:00:00.123+02:00"),
            Some(1_772_359_200)
        );
        assert_eq!(parse_instant("2026-03-01T10:00"), Some(1_772_359_200));
        for bad in [
            "",
            "2026-13-01T00:00",
            "yesterday",
            "2026-03-01T10:00:00Q",
            "2026-03-01",
        ] {
            assert_eq!(parse_instant(bad), None, "{bad}");
        }
        assert_eq!(
            time_value(&Value::Number(Number::U64(1_772_359_200_000))),
            Some(1_772_359_200)
        );
    }

    #[test]
    fn secrets_are_checked_and_never_shown() {
        let mut p = Plan::new(Peer::OpenClaw);
        p.env.push(("OR_KEY".into(), "sk-test-or".into()));
        assert!(p.secret("A_KEY", "${OR_KEY}"));
        assert!(!p.secret("B_KEY", "${MISSING}"));
        assert!(!p.secret("C_KEY", "enc2:abcdef"));
        assert!(!p.secret("D_KEY", "two words"));
        assert!(p.secret("A_KEY", "sk-test-or"));
        assert!(!p.secret("A_KEY", "sk-test-other"));
        assert_eq!(p.secrets.len(), 1);
        assert_eq!(p.skipped.len(), 4);
        let shown = format!("{p:?}");
        assert!(!shown.contains("sk-test-or\"") && shown.contains("Secret(A_KEY)"));
    }

    #[test]
    fn allowlists_are_normalised() {
        let mut p = Plan::new(Peer::OpenClaw);
        let v = crate::json::parse_value(
            r#"["123", 456, "tg:789", "@ada", "bob_x", "*", "a b", "123"]"#,
        )
        .unwrap();
        p.allow(&v);
        let t = p.telegram.as_ref().unwrap();
        assert_eq!(t.allow_from, ["123", "456", "789", "@ada", "@bob_x"]);
        assert_eq!(p.skipped.len(), 2);
    }

    #[test]
    fn fallbacks_share_a_service_key_and_are_bounded() {
        let mut p = Plan::new(Peer::NullClaw);
        p.provider("openrouter", "a/b", None, false, Some("sk-test-1"));
        p.provider("openrouter", "c/d", None, false, None);
        p.provider("groq", "llama", None, false, Some("gsk-test"));
        p.provider("openrouter", "a/b", None, false, None);
        for i in 0..6 {
            p.provider("ollama", &format!("m{i}"), None, false, None);
        }
        assert_eq!(p.provider.as_ref().unwrap().key_env, "YOCTOCLAW_API_KEY");
        assert_eq!(p.fallbacks[0].key_env, "YOCTOCLAW_API_KEY");
        assert_eq!(p.fallbacks[1].key_env, "GROQ_API_KEY");
        assert_eq!(p.fallbacks.len(), MAX_FALLBACKS);
        assert_eq!(p.secrets.len(), 2);
    }
}

#[cfg(test)]
mod peer_tests {
    use super::*;

    /// A peer home holding `files`, removed on drop.
    struct Dir(PathBuf);

    impl Dir {
        fn new(tag: &str, files: &[(&str, &str)]) -> Dir {
            let d = std::env::temp_dir().join(format!("yc-migrate-{tag}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&d);
            for (rel, text) in files {
                let p = d.join(rel);
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(p, text).unwrap();
            }
            Dir(d)
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn names(p: &Plan) -> Vec<&str> {
        p.secrets.iter().map(|s| s.name.as_str()).collect()
    }

    #[test]
    fn zeroclaw_schema_1() {
        let d = Dir::new(
            "zc1",
            &[(
                "config.toml",
                r#"api_key = "sk-test-zc1"
default_provider = "custom:https://llm.lan/v1"
default_model = "qwen3"

[reliability]
fallback_providers = ["groq"]

[reliability.model_fallbacks]
qwen3 = ["qwen3-small"]

[model_providers.groq]
api_key = "gsk-test-zc1"

[channels_config.telegram]
bot_token = "1:TEST"
allowed_users = ["@v1_admin", "12345678"]
"#,
            )],
        );
        let p = plan(Peer::ZeroClaw, &d.0).unwrap();
        let pr = p.provider.as_ref().unwrap();
        assert_eq!(
            (pr.base_url.as_str(), pr.model.as_str()),
            ("https://llm.lan/v1", "qwen3")
        );
        assert_eq!(p.fallbacks.len(), 2);
        assert_eq!(p.fallbacks[0].model, "qwen3-small");
        assert_eq!(p.fallbacks[1].base_url, "https://api.groq.com/openai/v1");
        assert_eq!(
            names(&p),
            ["YOCTOCLAW_API_KEY", "GROQ_API_KEY", "TELEGRAM_BOT_TOKEN"]
        );
        assert_eq!(
            p.telegram.as_ref().unwrap().allow_from,
            ["@v1_admin", "12345678"]
        );
        assert!(p.skipped.is_empty(), "{:?}", p.skipped);
    }

    #[test]
    fn picoclaw_version_0_and_broken_security_file() {
        let d = Dir::new(
            "pc0",
            &[
                (
                    "config.json",
                    r#"{"agents": {"defaults": {"model": "glm-4.7", "provider": "zhipu"}},
                        "providers": {"zhipu": {"api_key": "sk-test-zhipu", "api_base": ""},
                                      "openrouter": {"api_key": ""}},
                        "channels": {"telegram": {"enabled": true, "token": "2:TEST", "allow_from": ["42"]}}}"#,
                ),
                (
                    ".security.yml",
                    "channels:\n  telegram:\n    token: \"enc://AAAA\"\n",
                ),
            ],
        );
        let p = plan(Peer::PicoClaw, &d.0).unwrap();
        let pr = p.provider.as_ref().unwrap();
        assert_eq!(pr.base_url, "https://api.z.ai/api/paas/v4");
        assert_eq!(pr.model, "glm-4.7");
        assert_eq!(names(&p), ["YOCTOCLAW_API_KEY"]);
        // The encrypted token is reported, and the channel stays off without it.
        assert!(
            p.skipped
                .iter()
                .any(|(_, w, why)| w == "TELEGRAM_BOT_TOKEN" && why.contains("encrypted"))
        );
        let t = p.telegram.as_ref().unwrap();
        assert!(!t.enabled);
        assert_eq!(t.allow_from, ["42"]);
    }

    #[test]
    fn nullclaw_flat_telegram_and_a_config_outside_the_home() {
        let d = Dir::new(
            "nc",
            &[(
                "config.json",
                r#"{"workspace": "/etc", "agents": {"defaults": {"model": {"primary": "ollama/llama3.2"}}},
                    "channels": {"telegram": {"bot_token": "3:TEST", "allow_from": ["7"]}}}"#,
            )],
        );
        let p = plan(Peer::NullClaw, &d.0).unwrap();
        assert_eq!(
            p.provider.as_ref().unwrap().base_url,
            "http://127.0.0.1:11434/v1"
        );
        assert_eq!(names(&p), ["TELEGRAM_BOT_TOKEN"]);
        assert!(p.files.is_empty());
        // `/etc` is not below the home: nothing is read from it.
        assert!(
            p.skipped
                .iter()
                .any(|(_, w, why)| w == "/etc" && why.contains("outside")),
            "{:?}",
            p.skipped
        );
    }
}
