//! OpenClaw (`~/.openclaw`): `openclaw.json` (JSON5), the `.env` file and the config's
//! `env` section, the main agent's `auth-profiles.json`, Telegram pairing allowlists in
//! `credentials/`, the workspace (`agents.defaults.workspace`, else `workspace/`), managed
//! skills in `skills/`, and `cron/jobs.json`.
//!
//! Keys: `models.providers.<p>.apiKey`, else the conventional `<P>_API_KEY` variable from
//! `.env` or `env`, else an `api_key`/`token` auth profile for the provider. `${VAR}`
//! values are resolved from the same variables.

use super::source::{self, Format, Src};
use super::{MAX_PEER_CONFIG_BYTES, Plan, split_model};
use crate::json;
use miniserde::json::Value;

pub fn read(src: &Src, plan: &mut Plan) {
    if let Some(t) = source::text(plan, src, ".env", MAX_PEER_CONFIG_BYTES) {
        match crate::config::parse_secrets(&t) {
            Ok(m) => plan.env.extend(m),
            Err(_) => plan.skip(
                "config",
                ".env",
                "a line is not KEY=VALUE: its variables were not read",
            ),
        }
    }
    let cfg = source::config(plan, src, "openclaw.json", Format::Json5).unwrap_or(Value::Null);
    if let Some(env) = json::get(&cfg, "env") {
        for obj in [Some(env), json::get(env, "vars")].into_iter().flatten() {
            for (k, v) in json::as_object(obj).into_iter().flatten() {
                if let Value::String(s) = v {
                    plan.env.push((k.clone(), s.clone()));
                }
            }
        }
    }
    let profiles = source::config(
        plan,
        src,
        "agents/main/agent/auth-profiles.json",
        Format::Json,
    )
    .unwrap_or(Value::Null);
    let defaults = json::path(&cfg, &["agents", "defaults"]).unwrap_or(&Value::Null);
    let model = json::get(defaults, "model");
    let primary = model.and_then(|m| json::as_str(m).or_else(|| json::str_at(m, "primary")));
    let fallbacks = model
        .and_then(|m| json::get(m, "fallbacks"))
        .and_then(json::as_array)
        .map_or(&[][..], |a| a.as_slice());
    let refs = primary
        .into_iter()
        .chain(fallbacks.iter().filter_map(json::as_str));
    for r in refs.collect::<Vec<_>>() {
        let Some((p, m)) = split_model(r) else {
            plan.skip(
                "provider",
                r,
                "an alias without a provider: set provider.model by hand",
            );
            continue;
        };
        let conf = json::path(&cfg, &["models", "providers", p]).unwrap_or(&Value::Null);
        let env_name = [&p.to_ascii_uppercase().replace('-', "_"), "_API_KEY"].concat();
        let key = json::str_at(conf, "apiKey")
            .map(str::to_string)
            .or_else(|| {
                plan.env
                    .iter()
                    .find(|(k, _)| *k == env_name)
                    .map(|(_, v)| v.clone())
            })
            .or_else(|| profile_key(&profiles, p));
        let url = json::str_at(conf, "baseUrl");
        let anthropic = json::str_at(conf, "api") == Some("anthropic-messages");
        plan.provider(p, m, url, anthropic, key.as_deref());
    }
    plan.timezone = json::str_at(defaults, "userTimezone").map(str::to_string);

    if let Some(tg) = json::path(&cfg, &["channels", "telegram"]) {
        let from_file = json::str_at(tg, "tokenFile")
            .and_then(|f| source::text(plan, src, &src.rel(f), MAX_PEER_CONFIG_BYTES));
        let env_token = plan
            .env
            .iter()
            .find(|(k, _)| k == "TELEGRAM_BOT_TOKEN")
            .map(|(_, v)| v.clone());
        let token = json::str_at(tg, "botToken")
            .map(str::to_string)
            .or(from_file)
            .or(env_token);
        let on = json::get(tg, "enabled").and_then(json::as_bool) != Some(false);
        plan.telegram_token(token.as_deref(), on);
        if let Some(a) = json::get(tg, "allowFrom") {
            plan.allow(a);
        }
    }
    // Users approved by pairing.
    for f in [
        "credentials/telegram-allowFrom.json",
        "credentials/telegram-default-allowFrom.json",
    ] {
        if let Some(v) = source::config(plan, src, f, Format::Json)
            && let Some(a) = json::get(&v, "allowFrom")
        {
            plan.allow(a);
        }
    }

    let ws = json::str_at(defaults, "workspace").map_or_else(|| "workspace".into(), |w| src.rel(w));
    source::workspace(plan, src, &ws);
    source::skills(plan, src, "skills");
    source::database(plan, src, &[&ws, "/memory/brain.db"].concat());
    if let Some(v) = source::config(plan, src, "cron/jobs.json", Format::Json) {
        source::jobs(plan, source::job_list(&v), false);
    } else if let Ok(Some(_)) = src.real("state/openclaw.sqlite") {
        plan.skip(
            "cron",
            "state/openclaw.sqlite",
            "newer OpenClaw releases keep automations in this database, which migrate does not read: add them again with yoctoclaw cron add",
        );
    }
}

/// An API key or token from the auth profiles for provider `p` (current
/// `{profiles: {"p:default": {provider, key | token}}}` and legacy `{p: {apiKey}}` shapes).
fn profile_key(profiles: &Value, p: &str) -> Option<String> {
    let current = json::get(profiles, "profiles")
        .and_then(json::as_object)
        .into_iter()
        .flatten()
        .map(|(_, v)| v)
        .filter(|v| json::str_at(v, "provider") == Some(p))
        .find_map(|v| json::str_at(v, "key").or_else(|| json::str_at(v, "token")));
    current
        .or_else(|| json::path(profiles, &[p, "apiKey"]).and_then(json::as_str))
        .map(str::to_string)
}
