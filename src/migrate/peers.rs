//! The peers' homes, read into a [`Plan`]:
//!
//! - OpenClaw (`~/.openclaw`): `openclaw.json` (JSON5), the `.env` file and the config's
//!   `env` section, the main agent's `auth-profiles.json`, Telegram pairing allowlists in
//!   `credentials/`, the workspace (`agents.defaults.workspace`, else `workspace/`), managed
//!   skills in `skills/`, `cron/jobs.json` and `mcp.servers`. Keys:
//!   `models.providers.<p>.apiKey`, else the conventional `<P>_API_KEY` variable from
//!   `.env` or `env`, else an `api_key`/`token` auth profile for the provider; `${VAR}`
//!   values come from the same variables.
//! - PicoClaw (`~/.picoclaw`): its own file, `picoclaw.rs` (both config shapes).
//! - NullClaw (`~/.nullclaw`): `config.json` (`models.providers.<p>.api_key|base_url`,
//!   `agents.defaults.model.primary` as `provider/model`, `reliability.model_fallbacks`
//!   and `fallback_providers`, Telegram under `channels.telegram.accounts.<id>`), the
//!   workspace (`workspace` key, else `workspace/`) with `memory.db`, `cron.json` and
//!   `mcp_servers`.
//! - ZeroClaw (`~/.zeroclaw`): `config.toml` schema 2-3 (`[providers.models.<type>.<alias>]`,
//!   `[agents.<name>] model_provider`, `[channels.telegram.<alias>]`, `[peer_groups.*]
//!   external_peers`, `[[cron.jobs]]`, `[[mcp.servers]]` with the agent's `mcp_bundles`;
//!   jobs made with `zeroclaw cron` in `jobs.db` are named, not read), the workspace
//!   (`workspace/`, or the agent's `agents/<name>/workspace/`, skills also in
//!   `shared/skills/`) and `brain.db` memories. Its `enc2:` secrets are reported.
//!
//! # Threads
//! Main thread (`yoctoclaw migrate`).
//!
//! # Blocking
//! Plain file and SQLite reads on the calling thread (see `source`).

use super::formats::Format::{Json, Json5, Toml};
use super::source::{Src, config, database, job_list, jobs, skills, text, workspace};
use super::{MAX_FALLBACKS, MAX_PEER_CONFIG_BYTES, Plan, at, split_model, strs};
use crate::json::{as_array, as_bool, as_object, as_str, get, str_at};
use miniserde::json::Value;

const NULL: Value = Value::Null;

/// Job databases (OpenClaw's `state/openclaw.sqlite`, ZeroClaw's `jobs.db`).
const JOBS_BY_HAND: &str = "not read: add these jobs again with yoctoclaw cron add";

/// ZeroClaw's schema 1.
const OLD_SHAPE: &str = "an old config shape: set provider and telegram by hand";

fn flag(v: &Value, k: &str) -> Option<bool> {
    get(v, k).and_then(as_bool)
}

/// The workspace a config names (below the home when it is there), else `workspace`.
fn ws_of(src: &Src, v: &Value) -> String {
    str_at(v, "workspace").map_or_else(|| "workspace".into(), |w| src.rel(w))
}

pub fn openclaw(src: &Src, plan: &mut Plan) {
    if let Some(t) = text(plan, src, ".env", MAX_PEER_CONFIG_BYTES) {
        let mut bad = false;
        for l in t.lines() {
            match crate::config::secret_line(l) {
                Some(Some((k, v))) => plan.env.push((k.into(), v.into())),
                Some(None) => bad = true,
                None => {}
            }
        }
        if bad {
            plan.skip("config", ".env", "lines not KEY=VALUE: not read");
        }
    }
    let cfg = config(plan, src, "openclaw.json", Json5).unwrap_or(NULL);
    if let Some(env) = get(&cfg, "env") {
        for obj in [env, get(env, "vars").unwrap_or(&NULL)] {
            for (k, v) in as_object(obj).into_iter().flatten() {
                if let Value::String(s) = v {
                    plan.env.push((k.clone(), s.clone()));
                }
            }
        }
    }
    let profiles = config(plan, src, "agents/main/agent/auth-profiles.json", Json).unwrap_or(NULL);
    let d = at(&cfg, "agents defaults").unwrap_or(&NULL);
    let model = get(d, "model").unwrap_or(&NULL);
    let mut refs = strs(Some(model));
    refs.extend(strs(get(model, "primary")));
    refs.extend(strs(get(model, "fallbacks")));
    for r in refs {
        let Some((p, m)) = split_model(r) else {
            plan.skip("provider", r, "not written as provider/model");
            continue;
        };
        let conf = at(&cfg, "models providers")
            .and_then(|o| get(o, p))
            .unwrap_or(&NULL);
        let key = match str_at(conf, "apiKey") {
            Some(k) => Some(k.to_string()),
            None => plan
                .var(&super::key_var(p))
                .or_else(|| profile_key(&profiles, p)),
        };
        let anthropic = str_at(conf, "api") == Some("anthropic-messages");
        plan.provider(p, m, str_at(conf, "baseUrl"), anthropic, key.as_deref());
    }
    plan.timezone = str_at(d, "userTimezone").map(str::to_string);

    if let Some(tg) = at(&cfg, "channels telegram") {
        let mut token = str_at(tg, "botToken").map(str::to_string);
        if let Some(f) = str_at(tg, "tokenFile").filter(|_| token.is_none()) {
            token = text(plan, src, &src.rel(f), MAX_PEER_CONFIG_BYTES);
        }
        let token = token.or_else(|| plan.var("TELEGRAM_BOT_TOKEN"));
        plan.telegram_token(token.as_deref(), flag(tg, "enabled") != Some(false));
        plan.allow(get(tg, "allowFrom"));
    }
    // Users approved by pairing.
    for f in ["telegram-allowFrom.json", "telegram-default-allowFrom.json"] {
        if let Some(v) = config(plan, src, &["credentials/", f].concat(), Json) {
            plan.allow(get(&v, "allowFrom"));
        }
    }

    let ws = ws_of(src, d);
    workspace(plan, src, &ws);
    skills(plan, src, "skills");
    database(plan, src, &[&ws, "/memory/brain.db"].concat());
    if let Some(v) = config(plan, src, "cron/jobs.json", Json) {
        jobs(plan, job_list(&v), false);
    } else if let Ok(Some(_)) = src.real("state/openclaw.sqlite") {
        plan.skip("cron", "state/openclaw.sqlite", JOBS_BY_HAND);
    }
    super::mcp::openclaw(plan, &cfg);
}

/// An API key or token from the auth profiles for provider `p` (current
/// `{profiles: {"p:default": {provider, key | token}}}` and legacy `{p: {apiKey}}` shapes).
fn profile_key(profiles: &Value, p: &str) -> Option<String> {
    for v in get(profiles, "profiles")
        .and_then(as_object)
        .into_iter()
        .flat_map(|o| o.values())
    {
        if str_at(v, "provider") == Some(p)
            && let Some(k) = str_at(v, "key").or_else(|| str_at(v, "token"))
        {
            return Some(k.to_string());
        }
    }
    str_at(get(profiles, p)?, "apiKey").map(str::to_string)
}

pub fn nullclaw(src: &Src, plan: &mut Plan) {
    let cfg = config(plan, src, "config.json", Json).unwrap_or(NULL);
    let model = at(&cfg, "agents defaults model");
    let primary = model.and_then(|m| str_at(m, "primary").or_else(|| as_str(m)));
    let rel = get(&cfg, "reliability").unwrap_or(&NULL);
    let mut refs: Vec<String> = primary.map(str::to_string).into_iter().collect();
    if let Some(p) = primary {
        // Other models for the primary one, then the same model at other providers.
        let pm = split_model(p).map(|(_, m)| m);
        for e in get(rel, "model_fallbacks")
            .and_then(as_array)
            .into_iter()
            .flatten()
        {
            let m = str_at(e, "model");
            if m == Some(p) || (m.is_some() && m == pm) {
                refs.extend(strs(get(e, "fallbacks")).into_iter().map(str::to_string));
            }
        }
        if let Some(m) = pm {
            for fp in strs(get(rel, "fallback_providers")) {
                refs.push([fp, "/", m].concat());
            }
        }
    }
    for r in &refs {
        let Some((p, m)) = split_model(r) else {
            plan.skip("provider", r, "not written as provider/model");
            continue;
        };
        let conf = at(&cfg, "models providers")
            .and_then(|o| get(o, p))
            .unwrap_or(&NULL);
        let url = str_at(conf, "base_url").or_else(|| str_at(conf, "api_url"));
        plan.provider(p, m, url, false, str_at(conf, "api_key"));
    }

    if let Some(tg) = at(&cfg, "channels telegram") {
        let accounts = get(tg, "accounts").and_then(as_object);
        let account = accounts.and_then(|a| {
            a.get("main")
                .or_else(|| a.get("default"))
                .or_else(|| a.values().next())
        });
        let a = account.unwrap_or(tg);
        plan.telegram_token(str_at(a, "bot_token"), true);
        plan.allow(get(a, "allow_from"));
    }

    let ws = ws_of(src, &cfg);
    workspace(plan, src, &ws);
    database(plan, src, &[&ws, "/memory.db"].concat());
    if let Some(v) = config(plan, src, "cron.json", Json) {
        jobs(plan, job_list(&v), false);
    }
    super::search::nullclaw(plan, &cfg);
    super::mcp::nullclaw(plan, &cfg);
}

pub fn zeroclaw(src: &Src, plan: &mut Plan) {
    let cfg = config(plan, src, "config.toml", Toml).unwrap_or(NULL);
    let models = at(&cfg, "providers models").unwrap_or(&NULL);
    if get(&cfg, "default_model").is_some() {
        plan.skip("provider", "config.toml", OLD_SHAPE);
    }
    // The agent named `default` when it is on, else the first one on.
    let mut agent = None;
    for (name, a) in get(&cfg, "agents")
        .and_then(as_object)
        .into_iter()
        .flatten()
    {
        if flag(a, "enabled") != Some(false) && (agent.is_none() || name == "default") {
            agent = Some((name, a));
        }
    }
    let mut refs: Vec<String> = Vec::new();
    refs.extend(
        agent
            .and_then(|(_, a)| str_at(a, "model_provider"))
            .map(str::to_string),
    );
    let mut i = 0;
    while i < refs.len() && i <= MAX_FALLBACKS {
        let r = refs[i].clone();
        i += 1;
        let entry = r
            .split_once('.')
            .and_then(|(t, alias)| Some((t, get(get(models, t)?, alias)?)));
        let Some((t, e)) = entry else {
            plan.skip("provider", &r, "not in [providers.models]");
            continue;
        };
        let (url, key) = (str_at(e, "uri"), str_at(e, "api_key"));
        plan.provider(t, str_at(e, "model").unwrap_or(""), url, false, key);
        for m in strs(get(e, "fallback_models")) {
            plan.provider(t, m, url, false, key);
        }
        for f in strs(get(e, "fallback")) {
            if !refs.iter().any(|x| x == f) {
                refs.push(f.to_string());
            }
        }
    }
    let tgs = at(&cfg, "channels telegram").and_then(as_object);
    if let Some(tg) = tgs.and_then(|t| t.values().next()) {
        plan.telegram_token(str_at(tg, "bot_token"), flag(tg, "enabled") == Some(true));
        for g in get(&cfg, "peer_groups")
            .and_then(as_object)
            .into_iter()
            .flat_map(|o| o.values())
        {
            let ch = str_at(g, "channel").unwrap_or("");
            if ch == "telegram" || ch.starts_with("telegram.") {
                plan.allow(get(g, "external_peers"));
            }
        }
    }
    let ws = match agent {
        Some((name, a)) => match at(a, "workspace path").and_then(as_str) {
            Some(w) => w.to_string(),
            None => ["agents/", name, "/workspace"].concat(),
        },
        None => "workspace".into(),
    };
    workspace(plan, src, &ws);
    if ws != "workspace" {
        workspace(plan, src, "workspace");
    }
    skills(plan, src, "shared/skills");
    for dir in ["workspace", "data"] {
        database(plan, src, &[dir, "/memory/brain.db"].concat());
    }
    if let Some(list) = at(&cfg, "cron jobs").and_then(as_array) {
        jobs(plan, list, false);
    }
    for rel in ["workspace/cron/jobs.db", "data/cron/jobs.db"] {
        if let Ok(Some(_)) = src.real(rel) {
            plan.skip("cron", rel, JOBS_BY_HAND);
        }
    }
    super::search::zeroclaw(plan, &cfg);
    super::mcp::zeroclaw(plan, &cfg, agent.map(|(_, a)| a));
}
