//! `yoctoclaw migrate --from PEER`: bring a peer assistant's home across (OpenClaw,
//! PicoClaw, NullClaw, ZeroClaw): provider, model and fallbacks, API keys and the bot token
//! (into `secrets.env`), the Telegram allowlist, workspace files and skills, memories, the
//! cron jobs yoctoclaw can express, web search settings (`search`), and MCP servers (`mcp`: their secrets into
//! `secrets.env`, read through `${NAME}` references).
//!
//! Two steps. The peer's reader (`peers`) reads its home into a neutral [`Plan`] and
//! writes nothing; [`apply`] then writes it, or with `--dry-run` only says item by item
//! what it would write. What cannot come across is a `skip` line with its reason, and the
//! rest still comes. PicoClaw's config is read in both its shapes (with `model_list`, and
//! the older `providers` one); ZeroClaw's schema 1 is named in a skip line, not read.
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
//! # Threads
//! Main thread (`yoctoclaw migrate`).
//!
//! # Blocking
//! A one-shot command on the main thread: plain file and SQLite I/O, no executor.

mod apply;
mod formats;
pub mod mcp;
mod peers;
mod picoclaw;
mod search;
mod source;

pub use apply::{Options, apply};

use crate::config::Home;
use crate::json;
use crate::memory::transfer::Entry;
use miniserde::json::{Number, Value};
use std::fmt;
use std::path::{Path, PathBuf};

/// Largest peer config file read.
pub const MAX_PEER_CONFIG_BYTES: usize = 1024 * 1024;
/// Largest workspace file (SOUL.md, a SKILL.md ...) brought across.
pub const MAX_PEER_FILE_BYTES: usize = 256 * 1024;
/// Bytes of one markdown memory file read; the rest is reported as not read.
pub const MAX_PEER_MEMORY_FILE_BYTES: usize = 4 * 1024 * 1024;
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
        ["openclaw", "picoclaw", "nullclaw", "zeroclaw"][self as usize]
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
                "the database import failed and nothing of it was kept ({e}): fix it and run migrate again"
            ),
        }
    }
}

impl std::error::Error for MigrateError {}

/// A provider as yoctoclaw will call it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provider {
    /// Messages API (else OpenAI-compatible Chat Completions).
    pub anthropic: bool,
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

/// A yoctoclaw setting brought from the peer besides the provider, Telegram and the time
/// zone (only when it differs from yoctoclaw's default).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    /// Its `config.json` key, `section.key` (one [`effective`] knows).
    pub key: &'static str,
    /// Its value as JSON text, within yoctoclaw's bounds.
    pub value: String,
    /// The peer's name for it, for the report.
    pub from: String,
}

/// A setting's value as yoctoclaw uses it (after its bounds), as JSON text.
fn effective(c: &crate::config::Config, key: &str) -> Option<String> {
    Some(match key {
        "provider.max_tokens" => c.provider.max_tokens.to_string(),
        "agent.max_tool_iterations" => c.agent.max_tool_iterations.to_string(),
        "heartbeat.enabled" => c.heartbeat.enabled.to_string(),
        "heartbeat.interval_mins" => c.heartbeat.interval_mins.to_string(),
        "transcription.base_url" => json::quote(&c.transcription.base_url),
        "transcription.model" => json::quote(&c.transcription.model),
        "tools.web_search" => c.tools.web_search.to_json(),
        _ => return None,
    })
}

/// Everything a peer home holds that yoctoclaw can use, and what it cannot. `Debug`
/// shows no secret and no peer variable's value.
pub struct Plan {
    pub peer: Peer,
    /// The primary provider first, then the fallbacks.
    pub providers: Vec<Provider>,
    pub secrets: Vec<Secret>,
    pub telegram: Option<Telegram>,
    pub timezone: Option<String>,
    pub settings: Vec<Setting>,
    /// (path in the workspace, text).
    pub files: Vec<(String, String)>,
    pub memories: Vec<Batch>,
    pub jobs: Vec<Job>,
    /// MCP servers for `mcp.servers`, in the order found.
    pub mcp: Vec<mcp::Server>,
    /// (report column, "what: why").
    pub skipped: Vec<(&'static str, String)>,
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
            .field("providers", &self.providers)
            .field("secrets", &self.secrets)
            .field("telegram", &self.telegram)
            .field("settings", &self.settings)
            .field("jobs", &self.jobs)
            .field("mcp", &self.mcp)
            .field("skipped", &self.skipped)
            .finish_non_exhaustive()
    }
}

impl Plan {
    pub fn new(peer: Peer) -> Plan {
        Plan {
            peer,
            providers: Vec::new(),
            secrets: Vec::new(),
            telegram: None,
            timezone: None,
            settings: Vec::new(),
            files: Vec::new(),
            memories: Vec::new(),
            jobs: Vec::new(),
            mcp: Vec::new(),
            skipped: Vec::new(),
            env: Vec::new(),
            mem_bytes: 0,
            mem_count: 0,
            mem_dropped: 0,
        }
    }

    /// Report something that cannot come across: `kind` is its report column.
    pub fn skip(&mut self, kind: &'static str, what: &str, why: &str) {
        self.skipped.push((kind, [what, ": ", why].concat()));
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

    /// A variable the peer's files define.
    pub fn var(&self, name: &str) -> Option<String> {
        let v = self.env.iter().find(|(k, _)| k == name)?;
        Some(v.1.clone())
    }

    /// A secret for `secrets.env` under `name`: `raw` may be `${VAR}` (resolved from the
    /// peer's variables). Checked; reported when it cannot come.
    pub fn secret(&mut self, name: &str, raw: &str) -> bool {
        let v = raw.trim();
        let (v, var) = match v.strip_prefix("${").and_then(|r| r.strip_suffix('}')) {
            Some(var) => {
                let var = var.split(":-").next().unwrap_or(var);
                (self.var(var), var)
            }
            None => (Some(v.to_string()), ""),
        };
        let why = match v {
            None => [
                "it refers to ",
                var,
                ", which the peer does not set: put it in secrets.env by hand",
            ]
            .concat(),
            Some(v) => match check_secret(&v) {
                Err(why) => why.to_string(),
                Ok(()) => match self.secrets.iter().find(|s| s.name == name) {
                    Some(s) if s.value == v => return true,
                    Some(_) => "it holds another key already".to_string(),
                    None => {
                        self.secrets.push(Secret {
                            name: name.to_string(),
                            value: v,
                        });
                        return true;
                    }
                },
            },
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
        let model = model.trim();
        let why = match resolve_provider(name, url, anthropic) {
            Err(why) => why,
            Ok(_) if model.is_empty() => "no model named".into(),
            Ok((_, _, base_url))
                if self
                    .providers
                    .iter()
                    .any(|p| p.base_url == base_url && p.model == model) =>
            {
                return;
            }
            Ok(_) if self.providers.len() > MAX_FALLBACKS => "too many fallbacks".into(),
            Ok((anthropic, canonical, base_url)) => {
                let key_env = match self.providers.iter().find(|p| p.base_url == base_url) {
                    Some(p) => p.key_env.clone(),
                    None if self.providers.is_empty() => "YOCTOCLAW_API_KEY".to_string(),
                    None => key_var(&canonical),
                };
                if let Some(k) = key.filter(|k| !k.trim().is_empty()) {
                    // A key that cannot come is reported; the provider still comes.
                    self.secret(&key_env, k);
                }
                self.providers.push(Provider {
                    anthropic,
                    base_url,
                    model: model.to_string(),
                    key_env,
                    from: name.to_string(),
                });
                return;
            }
        };
        self.skip("provider", &[name, " ", model].concat(), &why);
    }

    /// Bring `value` (JSON text) for the yoctoclaw setting `key` (one [`effective`] knows) as
    /// yoctoclaw's config takes it (within its bounds): nothing when that is yoctoclaw's
    /// default, a skip line when the config refuses it. `from` names the peer's setting.
    pub fn setting(&mut self, key: &'static str, value: &str, from: &str) {
        let (section, name) = key.split_once('.').unwrap_or(("", key));
        let text = ["{\"", section, "\": {\"", name, "\": ", value, "}}"].concat();
        // The peer's value alone, not this process's YOCTOCLAW_* variables.
        let env = crate::config::Env::isolated(&[]);
        let path = Path::new("config.json");
        let default = crate::config::parse(None, path, &env)
            .ok()
            .and_then(|c| effective(&c, key));
        debug_assert!(default.is_some(), "no setting {key}");
        match crate::config::parse(Some(&text), path, &env) {
            Err(e) => self.skip("config", &[from, " ", value].concat(), &e.to_string()),
            Ok(c) => match effective(&c, key) {
                Some(v) if Some(&v) != default.as_ref() => {
                    let from = if v == value {
                        from.to_string()
                    } else {
                        [from, " ", value, ", within yoctoclaw's bounds"].concat()
                    };
                    self.settings.retain(|s| s.key != key);
                    self.settings.push(Setting {
                        key,
                        value: v,
                        from,
                    });
                }
                _ => {}
            },
        }
    }

    /// Add Telegram user ids or @names from a peer allowlist value (a list or one value).
    /// PicoClaw's `id|username` entries bring their id.
    pub fn allow(&mut self, v: Option<&Value>) {
        let items = match v {
            Some(Value::Array(a)) => a.as_slice(),
            Some(other) => std::slice::from_ref(other),
            None => &[],
        };
        for item in items {
            let Some(s) = scalar(item) else { continue };
            let s = s.trim();
            let s = s
                .strip_prefix("telegram:")
                .or_else(|| s.strip_prefix("tg:"))
                .unwrap_or(s);
            let s = match s.split_once('|') {
                Some((id, _)) if id.parse::<i64>().is_ok() => id,
                _ => s,
            };
            let word = !s.is_empty() && s.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_');
            let id = if placeholder(s) {
                self.skip("telegram", s, PLACEHOLDER);
                continue;
            } else if s.parse::<i64>().is_ok() || s.starts_with('@') {
                s.to_string()
            } else if word {
                ["@", s].concat()
            } else {
                let why = if s == "*" {
                    "a wildcard: yoctoclaw needs each user's id or @name"
                } else {
                    "not a Telegram id or @name"
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

/// Why a value is not brought: it is the peer's example text, not the owner's.
const PLACEHOLDER: &str = "a placeholder from the peer's example config, not a value of yours";

/// The example configs' stand-ins (`YOUR_ZHIPU_API_KEY`, `sk-or-v1-xxx`, `123456:ABC...`,
/// `YOUR_USER_ID`).
pub fn placeholder(v: &str) -> bool {
    let v = v.trim();
    v.get(..5).is_some_and(|p| p.eq_ignore_ascii_case("your_"))
        || v.ends_with("xxx")
        || v.ends_with("...")
}

/// Refuse values `secrets.env` cannot hold or that are not the key itself.
fn check_secret(v: &str) -> Result<(), &'static str> {
    let has = |prefixes: &str| prefixes.split(' ').any(|p| v.starts_with(p));
    Err(if v.is_empty() {
        "it is empty"
    } else if placeholder(v) {
        PLACEHOLDER
    } else if has("enc: enc2: enc://") {
        "the peer stores it encrypted: put it in secrets.env by hand"
    } else if has("op:// file:// env: keyring:") {
        "looked up at run time: put it in secrets.env by hand"
    } else if v
        .chars()
        .any(|c| c.is_whitespace() || c.is_control() || c == '"' || c == '\'')
    {
        "secrets.env cannot hold it: put it there by hand"
    } else {
        return Ok(());
    })
}

/// `<NAME>_API_KEY` for a provider name: letters and digits upper-cased, the rest `_`.
pub fn key_var(name: &str) -> String {
    let mut n: String = name
        .bytes()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase() as char
            } else {
                '_'
            }
        })
        .collect();
    n.push_str("_API_KEY");
    n
}

/// Known providers, one a line: base URL, then every name the peers use for it (the
/// first is its own). Only `anthropic` speaks the Messages API; every other one is
/// OpenAI-compatible.
const PROVIDERS: &str = "\
https://api.openai.com/v1 openai gpt
https://api.anthropic.com anthropic claude anthropic-messages
https://openrouter.ai/api/v1 openrouter
http://127.0.0.1:11434/v1 ollama
https://api.groq.com/openai/v1 groq
https://api.deepseek.com/v1 deepseek
https://api.mistral.ai/v1 mistral
https://api.x.ai/v1 xai grok
https://generativelanguage.googleapis.com/v1beta/openai gemini google
https://api.z.ai/api/paas/v4 zai zhipu glm
https://dashscope-intl.aliyuncs.com/compatible-mode/v1 qwen dashscope
http://127.0.0.1:1234/v1 lmstudio
http://127.0.0.1:8000/v1 vllm
http://127.0.0.1:8080/v1 llamacpp llama.cpp";

/// A peer's provider name (and base URL, if it set one) as (Messages API?, yoctoclaw's
/// name for it, base URL). `anthropic` says the peer speaks the Messages API to it.
pub fn resolve_provider(
    name: &str,
    url: Option<&str>,
    anthropic: bool,
) -> Result<(bool, String, String), String> {
    let mut n = name.trim().to_ascii_lowercase();
    let mut known = None;
    for line in PROVIDERS.lines() {
        let mut words = line.split(' ');
        let base = words.next();
        let own = words.clone().next().unwrap_or("");
        if words.any(|w| w == n) {
            (n, known) = (own.to_string(), base);
            break;
        }
    }
    let Some(base) = url.map(str::trim).filter(|u| !u.is_empty()).or(known) else {
        return Err([
            "unknown provider \"",
            name,
            "\" without a base URL: set provider.base_url by hand",
        ]
        .concat());
    };
    let anthropic = anthropic || n == "anthropic";
    let mut base = base.trim_end_matches('/').to_string();
    let Some(after) = base
        .strip_prefix("https://")
        .or_else(|| base.strip_prefix("http://"))
    else {
        return Err(["its base URL \"", &base, "\" is not an http(s) URL"].concat());
    };
    if anthropic {
        // yoctoclaw appends /v1/messages itself.
        if let Some(b) = base.strip_suffix("/v1") {
            base.truncate(b.len());
        }
    } else if !after.contains('/') {
        // `https://api.openai.com`, `http://host:11434`: the Chat Completions root is /v1.
        base.push_str("/v1");
    }
    Ok((anthropic, n, base))
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

/// The value at a path of object keys, written space-separated (`"agents defaults"`).
pub fn at<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    path.split(' ').try_fold(v, json::get)
}

/// The strings of a value that is a string or a list (anything else: none).
pub fn strs(v: Option<&Value>) -> Vec<&str> {
    match v {
        Some(Value::Array(a)) => a.iter().filter_map(json::as_str).collect(),
        Some(Value::String(s)) => vec![s.as_str()],
        _ => Vec::new(),
    }
}

/// Unix seconds of `YYYY-MM-DD[T ]HH:MM[:SS[.fff]][Z|±HH:MM]` (no offset: UTC).
pub fn parse_instant(s: &str) -> Option<i64> {
    let s = s.trim();
    let n = if s.as_bytes().get(16) == Some(&b':') {
        19
    } else {
        16
    };
    let mut head = s.get(..n)?.as_bytes().to_vec();
    if head.get(10) == Some(&b' ') {
        head[10] = b'T';
    }
    let t = crate::time::civil::CivilDateTime::parse(std::str::from_utf8(&head).ok()?)
        .ok()?
        .to_unix();
    let mut rest = s.get(n..)?;
    if n == 19 && rest.starts_with('.') {
        rest = rest[1..].trim_start_matches(|c: char| c.is_ascii_digit());
    }
    let off = match rest.as_bytes() {
        [] | [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
            let num = |r| rest.get(r).and_then(|d: &str| d.parse::<i64>().ok());
            let o = num(1..3)? * 3600 + num(4..6)? * 60;
            if *sign == b'+' { o } else { -o }
        }
        _ => return None,
    };
    Some(t - off)
}

/// A time as the peers store it: seconds, milliseconds or RFC 3339 text.
pub fn time_value(v: &Value) -> Option<i64> {
    match v {
        Value::String(s) => parse_instant(s),
        other => json::as_i64(other).map(|n| if n > 100_000_000_000 { n / 1000 } else { n }),
    }
}

/// Read a peer home into a plan. Fails only when the home itself cannot be read.
#[inline(never)]
pub fn plan(peer: Peer, dir: &Path) -> Result<Plan, MigrateError> {
    let src = source::Src::open(dir, peer)
        .map_err(|why| MigrateError::NoPeerHome(dir.to_path_buf(), why))?;
    let mut plan = Plan::new(peer);
    [
        peers::openclaw,
        picoclaw::read,
        peers::nullclaw,
        peers::zeroclaw,
    ][peer as usize](&src, &mut plan);
    if plan.mem_dropped > 0 {
        let n = plan.mem_dropped.to_string();
        plan.skip(
            "memory",
            &n,
            "memories not read (over 16 MiB): use yoctoclaw memory import",
        );
    }
    Ok(plan)
}

/// `yoctoclaw migrate`: plan, then apply (or describe), printing to stdout. Returns
/// whether anything is (or would be) in the yoctoclaw home afterwards.
#[inline(never)]
pub fn command(
    home: &Home,
    from: &str,
    path: Option<&Path>,
    opts: &Options,
) -> Result<bool, MigrateError> {
    let peer = Peer::parse(from).ok_or_else(|| MigrateError::UnknownPeer(from.to_string()))?;
    let dir = match path {
        Some(p) => p.to_path_buf(),
        // Without HOME, `~/.<peer>`: reported as a peer home that cannot be read.
        None => PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "~".into()))
            .join([".", peer.name()].concat()),
    };
    let plan = plan(peer, &dir)?;
    apply(&plan, &dir, home, opts)
}

#[cfg(test)]
mod tests;
