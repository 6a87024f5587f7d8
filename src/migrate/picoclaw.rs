//! PicoClaw's home (`~/.picoclaw`) read into a [`Plan`], its `config.json` in both shapes:
//!
//! - With `model_list` (config versions 1-3): `agents.defaults.model_name` (or `model`) and
//!   `model_fallbacks` name `model_list` entries (`model` as `protocol/model`, `api_base`,
//!   `api_key(s)`; keys moved out to `.security.yml` are read there).
//! - Without it (version 0, the shape PicoClaw's README showed from February to March
//!   2026): `agents.defaults.{provider, model}` and `providers.<name>.{api_key, api_base,
//!   proxy, auth_method}`. The provider is the one PicoClaw's runtime of that time chose:
//!   the one `agents.defaults.provider` names if it has a key, else the first whose hint
//!   the model's name carries ([`OLD_PROVIDERS`]), else OpenRouter. A Groq key also
//!   transcribed voice notes (Whisper), so it becomes yoctoclaw's `transcription`; other
//!   keys the model does not use are named, not brought (PicoClaw used one provider).
//!
//! A non-empty `model_list` wins over `providers` (named in a skip line): PicoClaw reads
//! `providers` only for a config without `model_list`. Without `api_base`, a provider
//! gets PicoClaw's own base URL for it (Zhipu is `open.bigmodel.cn`, Qwen DashScope's
//! mainland endpoint, Moonshot `api.moonshot.cn`), in both shapes.
//!
//! Also from both shapes: `channels.telegram` (version 3: `channel_list.telegram` with
//! `settings`; the token also in `.security.yml`), `tools.mcp` (its MCP servers, see
//! `mcp`), `agents.defaults.{max_tokens,
//! max_tool_iterations, workspace}` and `heartbeat` (what differs from yoctoclaw's
//! defaults), the workspace (`AGENT.md` is yoctoclaw's `AGENTS.md`; daily notes in
//! `memory/YYYYMM/`) and `workspace/cron/jobs.json`. Values PicoClaw encrypted (`enc://`),
//! the example config's placeholders, `temperature`, proxies and a workspace restriction
//! turned off are reported, not brought.
//!
//! # Threads
//! Main thread (`yoctoclaw migrate`).
//!
//! # Bounds
//! The files as `source` reads them (`MAX_PEER_CONFIG_BYTES`); the tables here are fixed.
//!
//! # Blocking
//! Plain file reads on the calling thread (see `source`).

use super::formats::Format::{Json, Yaml};
use super::source::{Src, config, job_list, jobs, workspace};
use super::{Plan, at, placeholder, split_model, strs};
use crate::json::{as_array, as_bool, as_str, as_u64, get, str_at};
use miniserde::json::Value;

const NULL: Value = Value::Null;

/// Gemini's root as PicoClaw calls it, and its OpenAI-compatible API below it (the one
/// yoctoclaw speaks).
const GEMINI_NATIVE: &str = "https://generativelanguage.googleapis.com/v1beta";
const GEMINI_OPENAI: &str = "https://generativelanguage.googleapis.com/v1beta/openai";
/// Where PicoClaw sent voice notes with a Groq key, and the model it asked for.
const GROQ_WHISPER: (&str, &str) = ("https://api.groq.com/openai/v1", "whisper-large-v3");
/// The model PicoClaw used when `agents.defaults.model` is not set.
const OLD_DEFAULT_MODEL: &str = "glm-4.7";

/// PicoClaw's providers, in the order its runtime before `model_list` tried them on the
/// model's name: its `providers` key; other names `agents.defaults.provider` (and
/// `model_list` protocols) use for it; what in the model's name picks it (`prefix/`, a
/// word the lower-cased name contains, or `*`: any model); its base URL when `api_base` is
/// empty (none: `api_base` is required).
const OLD_PROVIDERS: [(&str, &str, &str, &str); 15] = [
    (
        "moonshot",
        "kimi",
        "kimi moonshot",
        "https://api.moonshot.cn/v1",
    ),
    (
        "openrouter",
        "",
        "openrouter/ anthropic/ openai/ meta-llama/ deepseek/ google/",
        "https://openrouter.ai/api/v1",
    ),
    (
        "anthropic",
        "claude",
        "claude anthropic/",
        "https://api.anthropic.com",
    ),
    ("openai", "gpt", "gpt openai/", "https://api.openai.com/v1"),
    ("gemini", "google", "gemini google/", GEMINI_OPENAI),
    (
        "zhipu",
        "glm",
        "glm zhipu zai",
        "https://open.bigmodel.cn/api/paas/v4",
    ),
    ("groq", "", "groq", "https://api.groq.com/openai/v1"),
    (
        "qwen",
        "tongyi",
        "qwen",
        "https://dashscope.aliyuncs.com/compatible-mode/v1",
    ),
    (
        "nvidia",
        "",
        "nvidia",
        "https://integrate.api.nvidia.com/v1",
    ),
    ("cerebras", "", "cerebras", "https://api.cerebras.ai/v1"),
    ("ollama", "", "ollama", "http://127.0.0.1:11434/v1"),
    (
        "volcengine",
        "doubao",
        "doubao volcengine",
        "https://ark.cn-beijing.volces.com/api/v3",
    ),
    ("vllm", "", "*", ""),
    ("deepseek", "", "", "https://api.deepseek.com/v1"),
    (
        "shengsuanyun",
        "",
        "",
        "https://router.shengsuanyun.com/api/v1",
    ),
];

/// `agents.defaults.provider` values that sign in through PicoClaw itself or a CLI.
const SIGN_IN: &str = "claude-cli claudecode claude-code codex-cli codex-code github_copilot copilot antigravity google-antigravity";

/// Why such a provider cannot come.
const NEEDS_KEY: &str =
    "PicoClaw signs in to it itself (OAuth or a CLI): set a provider and its API key by hand";

/// Model prefixes PicoClaw dropped before sending the name to the provider.
const DROPPED_PREFIXES: [&str; 6] = [
    "moonshot/",
    "nvidia/",
    "groq/",
    "ollama/",
    "qwen/",
    "cerebras/",
];

fn flag(v: &Value, k: &str) -> Option<bool> {
    get(v, k).and_then(as_bool)
}

/// The line of [`OLD_PROVIDERS`] for a provider name or alias.
fn known(name: &str) -> Option<&'static (&'static str, &'static str, &'static str, &'static str)> {
    let n = name.trim().to_ascii_lowercase();
    OLD_PROVIDERS
        .iter()
        .find(|p| p.0 == n || p.1.split(' ').any(|a| a == n))
}

/// The base URL for provider `name`: `api_base` when set, else PicoClaw's default (none
/// for a provider it has no default for). Gemini's native root becomes its
/// OpenAI-compatible one.
fn base_url(name: &str, api_base: Option<&str>) -> Option<String> {
    let set = api_base.map(str::trim).filter(|b| !b.is_empty());
    let b = set.or_else(|| known(name).map(|p| p.3).filter(|b| !b.is_empty()))?;
    if b.trim_end_matches('/') == GEMINI_NATIVE {
        return Some(GEMINI_OPENAI.to_string());
    }
    Some(b.to_string())
}

/// The key of a `providers` entry: set and not the example's placeholder.
fn key_of(conf: &Value) -> Option<&str> {
    str_at(conf, "api_key")
        .map(str::trim)
        .filter(|k| !k.is_empty() && !placeholder(k))
}

pub fn read(src: &Src, plan: &mut Plan) {
    let cfg = config(plan, src, "config.json", Json).unwrap_or(NULL);
    let sec = config(plan, src, ".security.yml", Yaml).unwrap_or(NULL);
    let d = at(&cfg, "agents defaults").unwrap_or(&NULL);
    let list = get(&cfg, "model_list")
        .and_then(as_array)
        .filter(|l| !l.is_empty());
    let provs = get(&cfg, "providers").unwrap_or(&NULL);
    match list {
        Some(list) => {
            model_list(list, d, &sec, plan);
            let keyed = OLD_PROVIDERS
                .iter()
                .any(|p| get(provs, p.0).and_then(key_of).is_some());
            if keyed {
                plan.skip(
                    "provider",
                    "providers",
                    "not read: model_list is there, and PicoClaw reads providers only without it",
                );
            }
        }
        None if !matches!(provs, Value::Null) || get(d, "model").is_some() => {
            providers(provs, d, plan)
        }
        None => {}
    }
    settings(&cfg, d, plan);
    telegram(&cfg, &sec, plan);
    super::search::picoclaw(plan, &cfg, &sec);
    let ws = str_at(d, "workspace").map_or_else(|| "workspace".into(), |w| src.rel(w));
    workspace(plan, src, &ws);
    if let Some(v) = config(plan, src, &[&ws, "/cron/jobs.json"].concat(), Json) {
        jobs(plan, job_list(&v), true);
    }
    super::mcp::picoclaw(plan, src, &cfg, &ws);
}

/// The `model_list` shape: the default model, then the fallbacks.
fn model_list(list: &[Value], d: &Value, sec: &Value, plan: &mut Plan) {
    let mut names = strs(get(d, "model_name").or_else(|| get(d, "model")));
    names.extend(strs(get(d, "model_fallbacks")));
    for name in names {
        let Some(e) = list.iter().find(|e| str_at(e, "model_name") == Some(name)) else {
            plan.skip("provider", name, "not in model_list");
            continue;
        };
        let model = str_at(e, "model").unwrap_or("");
        let (proto, m) = split_model(model).unwrap_or(("openai", model));
        let p = str_at(e, "provider")
            .filter(|p| !p.is_empty())
            .unwrap_or(proto);
        let s = get(sec, "model_list")
            .and_then(|o| get(o, name))
            .unwrap_or(&NULL);
        let key = [
            (s, "api_keys"),
            (s, "api_key"),
            (e, "api_keys"),
            (e, "api_key"),
        ]
        .into_iter()
        .find_map(|(v, k)| strs(get(v, k)).first().copied());
        let url = base_url(p, str_at(e, "api_base"));
        plan.provider(p, m, url.as_deref(), false, key);
    }
}

/// The older shape: `providers.<name>` and `agents.defaults.{provider, model}`, the
/// provider chosen as PicoClaw chose it (see the module doc).
fn providers(provs: &Value, d: &Value, plan: &mut Plan) {
    let model = str_at(d, "model")
        .map(str::trim)
        .filter(|m| !m.is_empty())
        .unwrap_or(OLD_DEFAULT_MODEL);
    let lower = model.to_ascii_lowercase();
    let conf = |name: &str| get(provs, name).unwrap_or(&NULL);
    // Set up enough to call: a key, or a local server's URL (no key needed).
    let usable = |name: &str| {
        let c = conf(name);
        base_url(name, str_at(c, "api_base")).is_some()
            && (key_of(c).is_some()
                || (matches!(name, "vllm" | "ollama")
                    && str_at(c, "api_base").is_some_and(|b| !b.trim().is_empty())))
    };
    // Signs in with OAuth instead of a key: PicoClaw used that and looked no further.
    let signs_in = |name: &str| {
        let c = conf(name);
        key_of(c).is_none() && str_at(c, "auth_method").is_some_and(|a| !a.trim().is_empty())
    };
    let named = str_at(d, "provider")
        .map(|p| p.trim().to_ascii_lowercase())
        .filter(|p| !p.is_empty());
    if let Some(n) = &named
        && SIGN_IN.split(' ').any(|s| s == n)
    {
        return plan.skip(
            "provider",
            &["agents.defaults.provider ", n].concat(),
            NEEDS_KEY,
        );
    }
    let explicit = named.as_deref().and_then(known).map(|p| p.0);
    let hinted = |p: &&(&str, &str, &str, &str)| {
        p.2.split(' ').any(|h| {
            !h.is_empty()
                && (h == "*"
                    || h.strip_suffix('/')
                        .map_or(lower.contains(h), |_| lower.starts_with(h)))
        })
    };
    let mut chosen = None;
    for name in explicit
        .into_iter()
        .chain(OLD_PROVIDERS.iter().filter(hinted).map(|p| p.0))
        .chain(["openrouter"])
    {
        if signs_in(name) && matches!(name, "anthropic" | "openai") {
            return plan.skip("provider", &["providers.", name].concat(), NEEDS_KEY);
        }
        if usable(name) {
            chosen = Some(name);
            break;
        }
    }
    let Some(name) = chosen else {
        return plan.skip(
            "provider",
            &["agents.defaults.model ", model].concat(),
            "no provider in providers has a key for it (PicoClaw took agents.defaults.provider, else one the model's name points to, else OpenRouter): set the provider and its key by hand",
        );
    };
    let c = conf(name);
    let m = old_model(model, name, explicit == Some(name));
    let url = base_url(name, str_at(c, "api_base"));
    plan.provider(name, &m, url.as_deref(), false, key_of(c));
    if str_at(c, "proxy").is_some_and(|p| !p.trim().is_empty()) {
        plan.skip(
            "provider",
            &["providers.", name, ".proxy"].concat(),
            NO_PROXY,
        );
    }
    // Groq's key also transcribed voice notes, whichever provider answered.
    if let Some(k) = key_of(conf("groq"))
        && plan.secret("YOCTOCLAW_TRANSCRIPTION_API_KEY", k)
    {
        let from = "providers.groq: voice notes";
        plan.setting(
            "transcription.base_url",
            &crate::json::quote(GROQ_WHISPER.0),
            from,
        );
        plan.setting(
            "transcription.model",
            &crate::json::quote(GROQ_WHISPER.1),
            from,
        );
    }
    for p in OLD_PROVIDERS.iter().map(|p| p.0) {
        if p != name && p != "groq" && key_of(conf(p)).is_some() {
            plan.skip(
                "provider",
                &["providers.", p].concat(),
                "a key for a provider agents.defaults.model does not use (PicoClaw used one): not brought",
            );
        }
    }
}

/// Why a proxy setting is not brought.
const NO_PROXY: &str = "yoctoclaw has no proxy setting: not brought";

/// The model name as PicoClaw sent it to provider `name`: without the prefixes it dropped
/// and the provider's own (OpenRouter's names are `vendor/model`, kept); DeepSeek, when
/// named, got `deepseek-chat` unless `deepseek-reasoner` was asked for.
fn old_model(model: &str, name: &str, explicit: bool) -> String {
    let mut m = model.trim();
    if let Some(rest) = DROPPED_PREFIXES.iter().find_map(|p| m.strip_prefix(p)) {
        m = rest;
    }
    if name != "openrouter"
        && let Some(rest) = m.strip_prefix(name).and_then(|r| r.strip_prefix('/'))
    {
        m = rest;
    }
    if explicit && name == "deepseek" && m != "deepseek-chat" && m != "deepseek-reasoner" {
        m = "deepseek-chat";
    }
    m.to_string()
}

/// `agents.defaults` and `heartbeat` settings yoctoclaw has (both shapes).
fn settings(cfg: &Value, d: &Value, plan: &mut Plan) {
    for (k, key) in [
        ("max_tokens", "provider.max_tokens"),
        ("max_tool_iterations", "agent.max_tool_iterations"),
    ] {
        if let Some(n) = get(d, k).and_then(as_u64) {
            plan.setting(key, &n.to_string(), &["agents.defaults.", k].concat());
        }
    }
    if get(d, "temperature").is_some_and(|v| !matches!(v, Value::Null)) {
        plan.skip(
            "config",
            "agents.defaults.temperature",
            "yoctoclaw sends no temperature: the model's own default is used",
        );
    }
    if flag(d, "restrict_to_workspace") == Some(false) {
        plan.skip(
            "config",
            "agents.defaults.restrict_to_workspace false",
            "not brought: the agent stays in its workspace unless you set agent.restrict_to_workspace by hand",
        );
    }
    let hb = get(cfg, "heartbeat").unwrap_or(&NULL);
    if let Some(on) = flag(hb, "enabled") {
        plan.setting(
            "heartbeat.enabled",
            if on { "true" } else { "false" },
            "heartbeat.enabled",
        );
    }
    if let Some(n) = get(hb, "interval").and_then(as_u64) {
        plan.setting(
            "heartbeat.interval_mins",
            &n.to_string(),
            "heartbeat.interval",
        );
    }
}

/// `channels.telegram` (version 3: `channel_list.telegram`, fields under `settings`).
fn telegram(cfg: &Value, sec: &Value, plan: &mut Plan) {
    let v3 = at(cfg, "channel_list telegram");
    let Some(tg) = v3.or_else(|| at(cfg, "channels telegram")) else {
        return;
    };
    let token = [
        at(sec, "channels telegram token"),
        at(sec, "channel_list telegram settings token"),
        at(tg, "settings token"),
        get(tg, "token"),
    ]
    .into_iter()
    .find_map(|v| v.and_then(as_str));
    let enabled = flag(tg, "enabled") == Some(true);
    plan.telegram_token(token, enabled);
    // PicoClaw's README once spelled it `allowFrom` (which PicoClaw ignored, answering
    // everyone); the ids are what the owner meant.
    let listed = |k| get(tg, k).filter(|v| as_array(v).is_none_or(|a| !a.is_empty()));
    let allow = listed("allow_from").or_else(|| listed("allowFrom"));
    plan.allow(allow);
    if enabled && allow.is_none() {
        plan.skip(
            "telegram",
            "allow_from []",
            "PicoClaw answered everyone, yoctoclaw answers nobody: put your user id in telegram.allow_from",
        );
    }
    if [get(tg, "proxy"), at(tg, "settings proxy")]
        .into_iter()
        .any(|v| v.and_then(as_str).is_some_and(|p| !p.trim().is_empty()))
    {
        plan.skip("telegram", "channels.telegram.proxy", NO_PROXY);
    }
}
