//! The configuration structs, their defaults and ranges, read from JSON by `read_config`.
//!
//! # Threads
//! Any thread: pure functions over their arguments, no I/O.

use super::ConfigError;
use super::fields::Fields;
use super::tool_rules::ToolSet;

/// Which wire protocol a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderKind {
    /// OpenAI-compatible Chat Completions (`{base_url}/chat/completions`).
    OpenAi,
    /// Anthropic Messages API (`{base_url}/v1/messages`).
    Anthropic,
}

impl ProviderKind {
    /// Its name in the configuration (`provider.kind`).
    pub fn name(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "openai",
            ProviderKind::Anthropic => "anthropic",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ProviderConfig {
    pub kind: ProviderKind,
    /// Defaults to `https://openrouter.ai/api/v1`.
    pub base_url: String,
    pub model: String,
    /// Name of the environment variable holding the key. Defaults to `YOCTOCLAW_API_KEY`.
    pub api_key_env: String,
    /// 1..=200000, defaults to 1024.
    pub max_tokens: u64,
    /// Overall request timeout, 5..=900 s, defaults to 120.
    pub timeout_secs: u64,
    pub stream: bool,
    /// How tools reach the model. Defaults to `native`.
    pub tool_mode: ToolMode,
    /// The model's context window in tokens; 0 (the default): 8,192 for a server on this
    /// machine or the LAN (`http://`, private addresses), unknown (no fitting) elsewhere.
    /// 256..=2,000,000.
    pub context_window: u64,
    /// Photos and MCP tool results' images are sent to the model as image parts
    /// (`provider.vision`). Defaults to true: a model that refuses them is remembered
    /// (`agent::chat`) and gets the photo's path and the image's placeholder line
    /// instead; false: always those.
    pub vision: bool,
}

/// How the tools are offered to the model (`provider.tool_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolMode {
    /// In the request's `tools` (the server's native tool calling).
    Native,
    /// Described in the system prompt; calls read from the answer's text.
    Text,
    /// Not offered at all.
    None,
}

impl ToolMode {
    pub fn as_str(self) -> &'static str {
        match self {
            ToolMode::Native => "native",
            ToolMode::Text => "text",
            ToolMode::None => "none",
        }
    }
}

impl ProviderConfig {
    /// The context window to fit requests into: `context_window`, or 8,192 for a local
    /// server when unset, or `None` (a cloud model's window is large and not ours to guess).
    pub fn window(&self) -> Option<u64> {
        if self.context_window > 0 {
            return Some(self.context_window);
        }
        let url = self.base_url.as_str();
        let local = url.starts_with("http://")
            || [
                "https://localhost",
                "https://127.",
                "https://10.",
                "https://192.168.",
            ]
            .iter()
            .any(|p| url.starts_with(p));
        local.then_some(DEFAULT_LOCAL_CONTEXT_WINDOW)
    }
}

/// The context window assumed for a local server when `provider.context_window` is unset.
pub const DEFAULT_LOCAL_CONTEXT_WINDOW: u64 = 8192;

impl Default for ProviderConfig {
    fn default() -> Self {
        ProviderConfig {
            kind: ProviderKind::OpenAi,
            base_url: "https://openrouter.ai/api/v1".into(),
            model: "anthropic/claude-sonnet-4.5".into(),
            api_key_env: "YOCTOCLAW_API_KEY".into(),
            max_tokens: 1024,
            timeout_secs: 120,
            stream: false,
            tool_mode: ToolMode::Native,
            context_window: 0,
            vision: true,
        }
    }
}

/// The default `base_url` of `kind = "anthropic"` (as in Anthropic's SDKs).
pub const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupMode {
    /// Answer in groups only when mentioned or replied to.
    Mention,
    /// Answer every message in groups.
    All,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TelegramConfig {
    pub enabled: bool,
    pub api_base: String,
    pub token_env: String,
    /// Numeric user ids (as strings) or `@usernames`. Empty = nobody.
    pub allow_from: Vec<String>,
    /// 0..=120 s, defaults to 50.
    pub poll_timeout_secs: u64,
    pub group_mode: GroupMode,
    /// `telegram.deny_tools`: tools not offered on Telegram (`tool_rules`).
    pub deny_tools: ToolSet,
    /// `telegram.mode`: how updates arrive (long poll, or Telegram posting them to
    /// `POST /webhook/telegram` on the HTTP server).
    pub mode: TelegramMode,
    /// `telegram.webhook_url`: the public https URL Telegram posts updates to (a tunnel
    /// or reverse proxy in front of `http.listen`); empty unless set.
    pub webhook_url: String,
    /// `telegram.webhook_secret_env`: the variable holding the webhook's secret token.
    pub webhook_secret_env: String,
}

/// How Telegram updates arrive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TelegramMode {
    /// `getUpdates` long poll (the default).
    Polling,
    /// Telegram posts each update to `POST /webhook/telegram` (`setWebhook`).
    Webhook,
}

impl TelegramMode {
    pub fn name(self) -> &'static str {
        match self {
            TelegramMode::Polling => "polling",
            TelegramMode::Webhook => "webhook",
        }
    }
}

impl Default for TelegramConfig {
    fn default() -> Self {
        TelegramConfig {
            enabled: false,
            api_base: "https://api.telegram.org".into(),
            token_env: "TELEGRAM_BOT_TOKEN".into(),
            allow_from: Vec::new(),
            poll_timeout_secs: 50,
            group_mode: GroupMode::Mention,
            deny_tools: ToolSet::default(),
            mode: TelegramMode::Polling,
            webhook_url: String::new(),
            webhook_secret_env: "YOCTOCLAW_TELEGRAM_WEBHOOK_SECRET".into(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Autonomy {
    ReadOnly,
    Supervised,
    Full,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AgentConfig {
    /// 1..=50, defaults to 10.
    pub max_tool_iterations: u64,
    /// Sessions held in RAM, 1..=256, defaults to 16.
    pub max_sessions: u64,
    pub autonomy: Autonomy,
    /// `UTC`, `+02:00` or an IANA name.
    pub timezone: String,
    /// Seconds to wait for `/yes` or `/no`, 10..=3600, defaults to 120.
    pub approval_timeout_secs: u64,
    /// Most history messages sent with a request, 4..=400, defaults to 40.
    pub history_messages: u64,
    /// Cap on one tool result, 1 KiB..=256 KiB, defaults to 16 KiB.
    pub max_tool_result_bytes: u64,
    /// Confine file tools to the workspace. Defaults to true.
    pub restrict_to_workspace: bool,
    /// Compact a session's history when it holds more messages than this, 6..=400,
    /// defaults to 30.
    pub compact_after_messages: u64,
    /// Compact when the history's estimated tokens (bytes / 4) pass this,
    /// 1000..=1000000, defaults to 16000.
    pub compact_after_tokens: u64,
    /// Newest messages kept verbatim by compaction, 2..=200, defaults to 10.
    pub keep_recent_messages: u64,
    /// Workers (`spawn_worker`, `delegate`) running at once, 0..=8 (0: none), defaults to 3.
    pub max_workers: u64,
    /// Tool rounds a worker may take, 1..=50, defaults to 15.
    pub worker_max_turns: u64,
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            max_tool_iterations: 10,
            max_sessions: 16,
            autonomy: Autonomy::Supervised,
            timezone: "UTC".into(),
            approval_timeout_secs: 120,
            history_messages: crate::limits::DEFAULT_HISTORY_MESSAGES as u64,
            max_tool_result_bytes: crate::limits::DEFAULT_TOOL_RESULT_BYTES as u64,
            restrict_to_workspace: true,
            compact_after_messages: 30,
            compact_after_tokens: 16_000,
            keep_recent_messages: 10,
            max_workers: 3,
            worker_max_turns: 15,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct HeartbeatConfig {
    pub enabled: bool,
    /// 5..=10080 minutes, defaults to 30.
    pub interval_mins: u64,
    /// `telegram:<chat_id>`, `stdout`, or empty (log only).
    pub deliver_to: String,
    /// `heartbeat.deny_tools`: tools not offered to the heartbeat (`tool_rules`).
    pub deny_tools: ToolSet,
}

impl Default for HeartbeatConfig {
    fn default() -> Self {
        HeartbeatConfig {
            enabled: true,
            interval_mins: 30,
            deliver_to: String::new(),
            deny_tools: ToolSet::default(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct MemoryConfig {
    /// FTS matches injected into the prompt, 0..=20, defaults to 5.
    pub inject_top_k: u64,
    /// Bytes of memory text injected into the prompt, 0..=64 KiB, defaults to 4 KiB.
    pub inject_budget_bytes: u64,
    /// Retention in days per category (`core` never expires).
    pub daily_days: u64,
    pub conversation_days: u64,
    pub custom_days: u64,
    /// Days the audit trail keeps a tool call's row, 1..=36500, defaults to 30.
    pub audit_days: u64,
    /// SQLite page cache in KiB, 64..=8192, defaults to 256.
    pub cache_kib: u64,
    /// Relevance an FTS match needs to be injected: the negated FTS5 bm25 score times
    /// 1000, 0..=100000, defaults to 100 (0.1). See `memory::inject` for the reasoning.
    pub min_relevance_milli: u64,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        MemoryConfig {
            inject_top_k: 5,
            inject_budget_bytes: 4096,
            daily_days: 30,
            conversation_days: 7,
            custom_days: 90,
            audit_days: 30,
            cache_kib: crate::limits::DB_CACHE_KIB as u64,
            min_relevance_milli: 100,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ExecConfig {
    /// `false` takes `exec` away on every channel. Defaults to true.
    pub enabled: bool,
    /// 1..=600 s, defaults to 30.
    pub timeout_secs: u64,
    /// Output kept (head + tail), 1 KiB..=1 MiB, defaults to 16 KiB.
    pub max_output_bytes: u64,
    /// Absolute folders commands may write below, besides the workspace and the temp
    /// folder (where Landlock confines them). Defaults to none.
    pub write_paths: Vec<String>,
    /// Run commands as this user (a name or a numeric uid); only when yoctoclaw runs as
    /// root. Defaults to empty: the user yoctoclaw runs as.
    pub user: String,
}

impl Default for ExecConfig {
    fn default() -> Self {
        ExecConfig {
            enabled: true,
            timeout_secs: 30,
            max_output_bytes: 16 * 1024,
            write_paths: Vec::new(),
            user: String::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct WebFetchConfig {
    /// Allow loopback, private and link-local addresses. Defaults to false.
    pub allow_private: bool,
    /// Body bytes read, 1 KiB..=8 MiB, defaults to 512 KiB.
    pub max_bytes: u64,
    /// 1..=120 s, defaults to 20.
    pub timeout_secs: u64,
}

impl Default for WebFetchConfig {
    fn default() -> Self {
        WebFetchConfig {
            allow_private: false,
            max_bytes: 512 * 1024,
            timeout_secs: 20,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolsConfig {
    /// `tools.deny`: tools not offered on any channel (`tool_rules`).
    pub deny: ToolSet,
    pub exec: ExecConfig,
    pub web_fetch: WebFetchConfig,
    /// `tools.web_search` (`config::web_search`).
    pub web_search: super::web_search::WebSearchConfig,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SerialConfig {
    /// Device for the gateway's serial console; empty = none.
    pub device: String,
    pub baud: u64,
    pub echo: bool,
    /// `serial.deny_tools`: tools not offered on the serial console (`tool_rules`).
    pub deny_tools: ToolSet,
}

impl Default for SerialConfig {
    fn default() -> Self {
        SerialConfig {
            device: String::new(),
            baud: 115_200,
            echo: false,
            deny_tools: ToolSet::default(),
        }
    }
}

/// `watchdog`: the hardware watchdog device and the stall detector (the `watchdog` module).
#[derive(Debug, Clone, PartialEq)]
pub struct WatchdogConfig {
    /// `watchdog.device`: a kernel watchdog device (e.g. `/dev/watchdog`); empty = none.
    pub device: String,
    /// `watchdog.timeout_secs`: the device's timeout to set; `None` keeps the driver's.
    pub timeout_secs: Option<u64>,
    /// `watchdog.stall_secs`: exit when the executor has not turned this long; 0 = off.
    pub stall_secs: u64,
}

impl Default for WatchdogConfig {
    fn default() -> Self {
        WatchdogConfig {
            device: String::new(),
            timeout_secs: None,
            stall_secs: 120,
        }
    }
}

/// `update`: where `yoctoclaw update` looks for releases and whose signatures it trusts
/// (the `update` module).
#[derive(Debug, Clone, PartialEq)]
pub struct UpdateConfig {
    /// `update.url`: the release index (JSON, `update::index`); empty = none.
    pub url: String,
    /// `update.public_key`: a minisign public key trusted besides the built-in one (for
    /// self-built releases); empty = none.
    pub public_key: String,
    /// `update.confirm_secs`: how long a new binary has to write its health mark before
    /// the previous one is put back.
    pub confirm_secs: u64,
}

impl Default for UpdateConfig {
    fn default() -> Self {
        UpdateConfig {
            url: String::new(),
            public_key: String::new(),
            confirm_secs: 120,
        }
    }
}

/// Outgoing HTTPS (`provider::tls`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TlsConfig {
    /// A PEM file of extra CA certificates trusted besides the embedded roots (relative
    /// paths are taken from the home folder). Empty (the default): none.
    pub ca_file: String,
}

/// `hardware`: which devices the hardware tools may touch.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HardwareConfig {
    /// `hardware.allow`: entries like `"gpiochip0:17,27 write"` or `"i2c-1:0x48 read"`
    /// (grammar in `hw::allow`). Defaults to empty: the hardware tools are not offered.
    /// From the environment (`YOCTOCLAW_HARDWARE_ALLOW`), entries are separated by `;`
    /// (an entry's own line list uses commas).
    pub allow: crate::hw::allow::Allowlist,
}

/// `transcription`: the speech-to-text service voice notes go to (OpenAI-compatible
/// `POST {base_url}/audio/transcriptions`). Unset `base_url`: voice notes are refused
/// with a sentence saying how to set it.
#[derive(Debug, Clone, PartialEq)]
pub struct TranscriptionConfig {
    /// e.g. `https://api.openai.com/v1`, `https://api.groq.com/openai/v1`,
    /// `http://127.0.0.1:8080/v1` (whisper.cpp's server). Empty (the default): off.
    pub base_url: String,
    /// Defaults to `whisper-1`.
    pub model: String,
    /// Defaults to `YOCTOCLAW_TRANSCRIPTION_API_KEY` (environment or `secrets.env`).
    pub api_key_env: String,
    /// Overall timeout of one transcription, 5..=900 s, defaults to 120.
    pub timeout_secs: u64,
}

impl Default for TranscriptionConfig {
    fn default() -> Self {
        TranscriptionConfig {
            base_url: String::new(),
            model: "whisper-1".into(),
            api_key_env: "YOCTOCLAW_TRANSCRIPTION_API_KEY".into(),
            timeout_secs: 120,
        }
    }
}

/// `media`: caps on what Telegram users send.
#[derive(Debug, Clone, PartialEq)]
pub struct MediaConfig {
    /// Largest file taken, 1..=20 MB (Telegram's bots download at most 20 MB). Default 20.
    pub max_file_mb: u64,
    /// Most the workspace's `inbox/` may hold, 1..=100,000 MB. Default 200.
    pub inbox_max_mb: u64,
}

impl Default for MediaConfig {
    fn default() -> Self {
        MediaConfig {
            max_file_mb: 20,
            inbox_max_mb: 200,
        }
    }
}

/// `http`: the gateway's HTTP server (`channels::http`): health, the OpenAI-compatible
/// API. Off by default; on loopback by default when on.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpConfig {
    pub enabled: bool,
    /// `IP:PORT` to listen on. Defaults to `127.0.0.1:18790` (this machine only).
    pub listen: std::net::SocketAddr,
    /// The variable holding the API's bearer token (environment or `secrets.env`).
    /// Defaults to `YOCTOCLAW_HTTP_TOKEN`; unset: every route but `/health` answers 503.
    pub token_env: String,
    /// Connections open at once, 1..=256, defaults to 16; past it: 503 and closed.
    pub max_connections: u64,
    /// Largest request body in KiB, 1..=16384, defaults to 1024; past it: 413.
    pub max_body_kib: u64,
    /// Requests one client address may make per minute (a sliding window),
    /// 1..=1,000,000, defaults to 120; past it: 429 with `Retry-After`.
    pub rate_per_minute: u64,
    /// `/metrics` answers without the token. Defaults to false.
    pub metrics_public: bool,
    /// Seconds a request's head may take to arrive (the first request's from the
    /// connection, a later one's from its first byte), 1..=300, defaults to 10.
    pub header_timeout_secs: u64,
    /// Seconds a request's body may take to arrive, 1..=600, defaults to 30.
    pub body_timeout_secs: u64,
    /// `http.deny_tools`: tools not offered to turns from the HTTP API (`tool_rules`).
    pub deny_tools: ToolSet,
}

/// `http.listen`'s default: loopback, a port no common service uses.
pub const DEFAULT_HTTP_LISTEN: &str = "127.0.0.1:18790";

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            enabled: false,
            listen: std::net::SocketAddr::from(([127, 0, 0, 1], 18790)),
            token_env: "YOCTOCLAW_HTTP_TOKEN".into(),
            max_connections: 16,
            max_body_kib: 1024,
            rate_per_minute: 120,
            metrics_public: false,
            header_timeout_secs: 10,
            body_timeout_secs: 30,
            deny_tools: ToolSet::default(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct BudgetConfig {
    pub daily_tokens: Option<u64>,
    pub monthly_tokens: Option<u64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub provider: ProviderConfig,
    pub fallbacks: Vec<ProviderConfig>,
    pub telegram: TelegramConfig,
    pub agent: AgentConfig,
    pub heartbeat: HeartbeatConfig,
    pub memory: MemoryConfig,
    pub tools: ToolsConfig,
    pub serial: SerialConfig,
    /// `watchdog` (the `watchdog` module).
    pub watchdog: WatchdogConfig,
    /// `update` (the `update` module).
    pub update: UpdateConfig,
    pub hardware: HardwareConfig,
    pub budget: BudgetConfig,
    pub tls: TlsConfig,
    pub transcription: TranscriptionConfig,
    pub media: MediaConfig,
    /// `http`: the gateway's HTTP server.
    pub http: HttpConfig,
    /// `mcp`: MCP servers (`config::mcp`).
    pub mcp: super::mcp::McpConfig,
    /// `security`: the injection screen (`config::security`).
    pub security: super::security::SecurityConfig,
    /// `error`, `warn`, `info`, `debug`. Defaults to `info`.
    pub log_level: String,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            provider: ProviderConfig::default(),
            fallbacks: Vec::new(),
            telegram: TelegramConfig::default(),
            agent: AgentConfig::default(),
            heartbeat: HeartbeatConfig::default(),
            memory: MemoryConfig::default(),
            tools: ToolsConfig::default(),
            serial: SerialConfig::default(),
            watchdog: WatchdogConfig::default(),
            update: UpdateConfig::default(),
            hardware: HardwareConfig::default(),
            budget: BudgetConfig::default(),
            tls: TlsConfig::default(),
            transcription: TranscriptionConfig::default(),
            media: MediaConfig::default(),
            http: HttpConfig::default(),
            mcp: super::mcp::McpConfig::default(),
            security: super::security::SecurityConfig::default(),
            log_level: "info".into(),
        }
    }
}

pub const LOG_LEVELS: &[&str] = &["error", "warn", "info", "debug", "off"];

pub(super) fn read_config(top: &mut Fields<'_>) -> Result<Config, ConfigError> {
    let d = Config::default();
    let mut s = top.section("provider")?;
    let provider = read_provider(&mut s, &d.provider)?;
    s.finish()?;

    let mut fallbacks = Vec::new();
    for (path, v) in top.object_list("fallbacks")? {
        let mut f = Fields::item(v, path, top.env())?;
        fallbacks.push(read_provider(&mut f, &provider)?);
        f.finish()?;
    }

    let mut s = top.section("telegram")?;
    let dt = &d.telegram;
    let telegram = TelegramConfig {
        enabled: s.bool("enabled", dt.enabled)?,
        api_base: trim_slash(s.string("api_base", &dt.api_base)?),
        token_env: s.string("token_env", &dt.token_env)?,
        allow_from: s.string_list("allow_from")?,
        poll_timeout_secs: s.uint("poll_timeout_secs", dt.poll_timeout_secs, 0, 120)?,
        group_mode: match s
            .choice("group_mode", "mention", &["mention", "all"])?
            .as_str()
        {
            "all" => GroupMode::All,
            _ => GroupMode::Mention,
        },
        deny_tools: deny_list(&mut s, "telegram.deny_tools")?,
        mode: match s
            .choice("mode", "polling", &["polling", "webhook"])?
            .as_str()
        {
            "webhook" => TelegramMode::Webhook,
            _ => TelegramMode::Polling,
        },
        webhook_url: s.string("webhook_url", &dt.webhook_url)?.trim().to_string(),
        webhook_secret_env: s.string("webhook_secret_env", &dt.webhook_secret_env)?,
    };
    check_url(&telegram.api_base, "telegram.api_base")?;
    s.finish()?;

    let mut s = top.section("agent")?;
    let da = &d.agent;
    let agent = AgentConfig {
        max_tool_iterations: s.uint("max_tool_iterations", da.max_tool_iterations, 1, 50)?,
        max_sessions: s.uint("max_sessions", da.max_sessions, 1, 256)?,
        autonomy: match s
            .choice(
                "autonomy",
                "supervised",
                &["read_only", "supervised", "full"],
            )?
            .as_str()
        {
            "read_only" => Autonomy::ReadOnly,
            "full" => Autonomy::Full,
            _ => Autonomy::Supervised,
        },
        timezone: s.string("timezone", &da.timezone)?,
        approval_timeout_secs: s.uint(
            "approval_timeout_secs",
            da.approval_timeout_secs,
            10,
            3600,
        )?,
        history_messages: s.uint("history_messages", da.history_messages, 4, 400)?,
        max_tool_result_bytes: s.uint(
            "max_tool_result_bytes",
            da.max_tool_result_bytes,
            1024,
            256 * 1024,
        )?,
        restrict_to_workspace: s.bool("restrict_to_workspace", da.restrict_to_workspace)?,
        compact_after_messages: s.uint(
            "compact_after_messages",
            da.compact_after_messages,
            6,
            400,
        )?,
        compact_after_tokens: s.uint(
            "compact_after_tokens",
            da.compact_after_tokens,
            1000,
            1_000_000,
        )?,
        keep_recent_messages: s.uint("keep_recent_messages", da.keep_recent_messages, 2, 200)?,
        max_workers: s.uint("max_workers", da.max_workers, 0, 8)?,
        worker_max_turns: s.uint("worker_max_turns", da.worker_max_turns, 1, 50)?,
    };
    s.finish()?;

    if let Err(e) = crate::time::tz::Tz::parse(&agent.timezone) {
        return Err(ConfigError::BadValue {
            key: "agent.timezone".into(),
            expected: format!(
                "UTC, an offset like +02:00, a time zone name like Europe/Berlin, or a POSIX rule ({e})"
            ),
        });
    }
    let mut s = top.section("heartbeat")?;
    let dh = &d.heartbeat;
    let heartbeat = HeartbeatConfig {
        enabled: s.bool("enabled", dh.enabled)?,
        interval_mins: s.uint("interval_mins", dh.interval_mins, 5, 7 * 24 * 60)?,
        deliver_to: s.string("deliver_to", &dh.deliver_to)?,
        deny_tools: deny_list(&mut s, "heartbeat.deny_tools")?,
    };
    check_target(&heartbeat.deliver_to, "heartbeat.deliver_to")?;
    s.finish()?;

    let mut s = top.section("memory")?;
    let dm = &d.memory;
    let memory = MemoryConfig {
        inject_top_k: s.uint("inject_top_k", dm.inject_top_k, 0, 20)?,
        inject_budget_bytes: s.uint("inject_budget_bytes", dm.inject_budget_bytes, 0, 64 * 1024)?,
        daily_days: s.uint("daily_days", dm.daily_days, 1, 36_500)?,
        conversation_days: s.uint("conversation_days", dm.conversation_days, 1, 36_500)?,
        custom_days: s.uint("custom_days", dm.custom_days, 1, 36_500)?,
        audit_days: s.uint("audit_days", dm.audit_days, 1, 36_500)?,
        cache_kib: s.uint("cache_kib", dm.cache_kib, 64, 8192)?,
        min_relevance_milli: s.uint("min_relevance_milli", dm.min_relevance_milli, 0, 100_000)?,
    };
    s.finish()?;

    let mut s = top.section("tools")?;
    let deny = ToolSet::parse(&s.string_list("deny")?, "tools.deny")?;
    let mut e = s.section("exec")?;
    let de = ExecConfig::default();
    let exec = ExecConfig {
        enabled: e.bool("enabled", de.enabled)?,
        timeout_secs: e.uint("timeout_secs", de.timeout_secs, 1, 600)?,
        max_output_bytes: e.uint("max_output_bytes", de.max_output_bytes, 1024, 1024 * 1024)?,
        write_paths: e.string_list("write_paths")?,
        user: e.string("user", &de.user)?.trim().to_string(),
    };
    if exec.write_paths.iter().any(|p| !p.starts_with('/')) {
        return Err(ConfigError::BadValue {
            key: "tools.exec.write_paths".into(),
            expected: "a list of absolute paths (\"/var/www\")".into(),
        });
    }
    e.finish()?;
    let mut w = s.section("web_fetch")?;
    let dw = WebFetchConfig::default();
    let web_fetch = WebFetchConfig {
        allow_private: w.bool("allow_private", dw.allow_private)?,
        max_bytes: w.uint("max_bytes", dw.max_bytes, 1024, 8 * 1024 * 1024)?,
        timeout_secs: w.uint("timeout_secs", dw.timeout_secs, 1, 120)?,
    };
    w.finish()?;
    let mut w = s.section("web_search")?;
    let web_search = super::web_search::read(&mut w)?;
    w.finish()?;
    s.finish()?;
    let tools = ToolsConfig {
        deny,
        exec,
        web_fetch,
        web_search,
    };

    let mut s = top.section("serial")?;
    let ds = SerialConfig::default();
    let serial = SerialConfig {
        device: s.string("device", &ds.device)?,
        baud: s.uint("baud", ds.baud, 50, 4_000_000)?,
        echo: s.bool("echo", ds.echo)?,
        deny_tools: deny_list(&mut s, "serial.deny_tools")?,
    };
    s.finish()?;

    let mut s = top.section("watchdog")?;
    let dw = WatchdogConfig::default();
    let watchdog = WatchdogConfig {
        device: s.string("device", &dw.device)?,
        timeout_secs: match s.uint("timeout_secs", 0, 0, 65_535)? {
            0 => None,
            t => Some(t),
        },
        stall_secs: s.uint("stall_secs", dw.stall_secs, 0, 86_400)?,
    };
    s.finish()?;

    let mut s = top.section("update")?;
    let du = UpdateConfig::default();
    let update = UpdateConfig {
        url: s.string("url", &du.url)?,
        public_key: s.string("public_key", &du.public_key)?,
        confirm_secs: s.uint("confirm_secs", du.confirm_secs, 1, 3_600)?,
    };
    s.finish()?;

    let mut s = top.section("hardware")?;
    let entries = s.string_list_sep("allow", ';')?;
    let hardware = HardwareConfig {
        allow: crate::hw::allow::Allowlist::parse(&entries).map_err(|e| {
            ConfigError::BadValue {
                key: "hardware.allow".into(),
                expected: format!(
                    "a list of \"DEVICE[:LINES] read|write\" entries, e.g. \"gpiochip0:17 write\" (entry {e})"
                ),
            }
        })?,
    };
    s.finish()?;

    let mut s = top.section("budget")?;
    let budget = BudgetConfig {
        daily_tokens: s.opt_uint("daily_tokens", 1, u64::MAX / 2)?,
        monthly_tokens: s.opt_uint("monthly_tokens", 1, u64::MAX / 2)?,
    };
    s.finish()?;

    let mut s = top.section("tls")?;
    let tls = TlsConfig {
        ca_file: s.string("ca_file", "")?,
    };
    s.finish()?;

    let mut s = top.section("transcription")?;
    let dt = TranscriptionConfig::default();
    let transcription = TranscriptionConfig {
        base_url: trim_slash(s.string("base_url", &dt.base_url)?),
        model: s.string("model", &dt.model)?,
        api_key_env: s.string("api_key_env", &dt.api_key_env)?,
        timeout_secs: s.uint("timeout_secs", dt.timeout_secs, 5, 900)?,
    };
    if !transcription.base_url.is_empty() {
        check_url(&transcription.base_url, "transcription.base_url")?;
    }
    s.finish()?;

    let mut s = top.section("media")?;
    let dm = MediaConfig::default();
    let media = MediaConfig {
        max_file_mb: s.uint("max_file_mb", dm.max_file_mb, 1, 20)?,
        inbox_max_mb: s.uint("inbox_max_mb", dm.inbox_max_mb, 1, 100_000)?,
    };
    s.finish()?;

    let mut s = top.section("http")?;
    let http = read_http(&mut s)?;
    s.finish()?;

    check_webhook(&telegram, &http)?;

    let own_secrets: Vec<&str> = [provider.api_key_env.as_str(), telegram.token_env.as_str()]
        .into_iter()
        .chain(fallbacks.iter().map(|f| f.api_key_env.as_str()))
        .chain([transcription.api_key_env.as_str(), http.token_env.as_str()])
        .chain([telegram.webhook_secret_env.as_str()])
        .chain([
            tools.web_search.brave_key_env.as_str(),
            tools.web_search.tavily_key_env.as_str(),
        ])
        .collect();
    let mut s = top.section("mcp")?;
    let mcp = super::mcp::read_mcp(&mut s, &own_secrets)?;
    s.finish()?;

    let mut s = top.section("security")?;
    let security = super::security::read(&mut s)?;
    s.finish()?;

    let log_level = top.choice("log_level", "info", LOG_LEVELS)?;

    Ok(Config {
        provider,
        fallbacks,
        telegram,
        agent,
        heartbeat,
        memory,
        tools,
        serial,
        watchdog,
        update,
        hardware,
        budget,
        tls,
        transcription,
        media,
        http,
        mcp,
        security,
        log_level,
    })
}

/// Whether `s` is a secret token `setWebhook` takes: 1 to 256 of `A-Z a-z 0-9 _ -`.
pub fn webhook_secret_ok(s: &str) -> bool {
    (1..=256).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Webhook mode (with Telegram on) needs the HTTP server, an https URL and a secret's
/// variable; the secret itself is read at the gateway's start.
fn check_webhook(t: &TelegramConfig, http: &HttpConfig) -> Result<(), ConfigError> {
    if !t.enabled || t.mode != TelegramMode::Webhook {
        return Ok(());
    }
    let url_ok = t.webhook_url.len() > 8
        && t.webhook_url[..8].eq_ignore_ascii_case("https://")
        && !t
            .webhook_url
            .chars()
            .any(|c| c.is_whitespace() || c.is_control());
    let (key, expected) = if !http.enabled {
        (
            "telegram.mode",
            "\"polling\" while http.enabled is false: webhook mode needs the HTTP server, an https telegram.webhook_url and the secret named by telegram.webhook_secret_env",
        )
    } else if !url_ok {
        (
            "telegram.webhook_url",
            "the public https:// URL Telegram posts updates to (like https://bot.example.org/webhook/telegram) in webhook mode",
        )
    } else if t.webhook_secret_env.trim().is_empty() {
        (
            "telegram.webhook_secret_env",
            "the name of the variable holding the webhook's secret in webhook mode",
        )
    } else {
        return Ok(());
    };
    Err(ConfigError::BadValue {
        key: key.into(),
        expected: expected.into(),
    })
}

/// The `http` section.
fn read_http(s: &mut Fields<'_>) -> Result<HttpConfig, ConfigError> {
    let d = HttpConfig::default();
    let listen = s.string("listen", DEFAULT_HTTP_LISTEN)?;
    let http = HttpConfig {
        enabled: s.bool("enabled", d.enabled)?,
        listen: listen
            .trim()
            .parse()
            .map_err(|_| ConfigError::BadValue {
                key: "http.listen".into(),
                expected: format!(
                    "an IP address and port like {DEFAULT_HTTP_LISTEN}, 0.0.0.0:18790 (every interface) or [::1]:18790"
                ),
            })?,
        token_env: s.string("token_env", &d.token_env)?,
        max_connections: s.uint("max_connections", d.max_connections, 1, 256)?,
        max_body_kib: s.uint("max_body_kib", d.max_body_kib, 1, 16 * 1024)?,
        rate_per_minute: s.uint("rate_per_minute", d.rate_per_minute, 1, 1_000_000)?,
        metrics_public: s.bool("metrics_public", d.metrics_public)?,
        header_timeout_secs: s.uint("header_timeout_secs", d.header_timeout_secs, 1, 300)?,
        body_timeout_secs: s.uint("body_timeout_secs", d.body_timeout_secs, 1, 600)?,
        deny_tools: deny_list(s, "http.deny_tools")?,
    };
    if http.token_env.trim().is_empty() {
        return Err(ConfigError::BadValue {
            key: "http.token_env".into(),
            expected: "the name of the variable holding the API token".into(),
        });
    }
    Ok(http)
}

fn read_provider(s: &mut Fields<'_>, d: &ProviderConfig) -> Result<ProviderConfig, ConfigError> {
    let default_kind = d.kind.name();
    let kind = match s
        .choice("kind", default_kind, &["openai", "anthropic"])?
        .as_str()
    {
        "anthropic" => ProviderKind::Anthropic,
        _ => ProviderKind::OpenAi,
    };
    // A kind other than the inherited one defaults to that kind's own service.
    let default_url = match (kind, d.kind) {
        (ProviderKind::Anthropic, ProviderKind::OpenAi) => ANTHROPIC_BASE_URL.to_string(),
        (ProviderKind::OpenAi, ProviderKind::Anthropic) => ProviderConfig::default().base_url,
        _ => d.base_url.clone(),
    };
    let p = ProviderConfig {
        kind,
        base_url: trim_slash(s.string("base_url", &default_url)?),
        model: s.string("model", &d.model)?,
        api_key_env: s.string("api_key_env", &d.api_key_env)?,
        max_tokens: s.uint("max_tokens", d.max_tokens, 1, 200_000)?,
        timeout_secs: s.uint("timeout_secs", d.timeout_secs, 5, 900)?,
        stream: s.bool("stream", d.stream)?,
        tool_mode: match s
            .choice(
                "tool_mode",
                d.tool_mode.as_str(),
                &["native", "text", "none"],
            )?
            .as_str()
        {
            "text" => ToolMode::Text,
            "none" => ToolMode::None,
            _ => ToolMode::Native,
        },
        context_window: match s.uint("context_window", d.context_window, 0, 2_000_000)? {
            0 => 0,
            n => n.max(256),
        },
        vision: s.bool("vision", d.vision)?,
    };
    check_url(&p.base_url, "provider.base_url")?;
    if p.model.trim().is_empty() {
        return Err(ConfigError::BadValue {
            key: "provider.model".into(),
            expected: "a model name".into(),
        });
    }
    Ok(p)
}

/// A section's `deny_tools` list (`tool_rules`); `key` names it in errors.
fn deny_list(s: &mut Fields<'_>, key: &str) -> Result<ToolSet, ConfigError> {
    ToolSet::parse(&s.string_list("deny_tools")?, key)
}

pub(super) fn trim_slash(s: String) -> String {
    s.trim().trim_end_matches('/').to_string()
}

pub(super) fn check_url(url: &str, key: &str) -> Result<(), ConfigError> {
    let ok = (url.starts_with("http://") && url.len() > 7)
        || (url.starts_with("https://") && url.len() > 8);
    if ok && !url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        Ok(())
    } else {
        Err(ConfigError::BadValue {
            key: key.into(),
            expected: "an http:// or https:// URL".into(),
        })
    }
}

/// Delivery targets: `telegram:<chat_id>`, `stdout`, or empty.
pub fn check_target(t: &str, key: &str) -> Result<(), ConfigError> {
    if crate::chat::Target::parse(t).is_some() {
        Ok(())
    } else {
        Err(ConfigError::BadValue {
            key: key.into(),
            expected: "telegram:<chat_id>, stdout, or empty".into(),
        })
    }
}
