//! ZeroClaw (`~/.zeroclaw`): `config.toml` in both its shapes (schema 1: `default_provider`,
//! `default_model`, `api_key`, `[model_providers.*]`, `[channels_config.telegram]`; schema
//! 2-3: `[providers.models.<type>.<alias>]`, `[agents.<name>] model_provider`,
//! `[channels.telegram.<alias>]`, `[peer_groups.*] external_peers`), `[[cron.jobs]]` and
//! the `cron_jobs` table of `jobs.db`, the workspace (`workspace/`, or the agent's
//! `agents/<name>/workspace/`, skills also in `shared/skills/`) and `brain.db` memories.
//!
//! ZeroClaw encrypts secrets by default (`enc2:` values); those are reported, not
//! decrypted.

use super::source::{self, Format, Src};
use super::{Plan, split_model};
use crate::json;
use miniserde::json::{Object, Value};

pub fn read(src: &Src, plan: &mut Plan) {
    let cfg = source::config(plan, src, "config.toml", Format::Toml).unwrap_or(Value::Null);
    let mut ws = "workspace".to_string();
    if let Some(models) = json::path(&cfg, &["providers", "models"]) {
        ws = v3(&cfg, models, plan);
    } else {
        v1(&cfg, plan);
    }
    source::workspace(plan, src, &ws);
    if ws != "workspace" {
        source::workspace(plan, src, "workspace");
    }
    source::skills(plan, src, "shared/skills");
    for db in ["workspace/memory/brain.db", "data/memory/brain.db"] {
        source::database(plan, src, db);
    }
    if let Some(jobs) = json::path(&cfg, &["cron", "jobs"]).and_then(json::as_array) {
        source::jobs(plan, jobs, false);
    }
    for db in ["workspace/cron/jobs.db", "data/cron/jobs.db"] {
        job_table(plan, src, db);
    }
}

/// Schema 2-3; returns the agent's workspace folder.
fn v3(cfg: &Value, models: &Value, plan: &mut Plan) -> String {
    let agents = json::get(cfg, "agents").and_then(json::as_object);
    let agent = agents.and_then(|a| {
        let on = |v: &&Value| json::get(v, "enabled").and_then(json::as_bool) != Some(false);
        a.get_key_value("default")
            .filter(|(_, v)| on(v))
            .or_else(|| a.iter().find(|(_, v)| on(v)))
    });
    let mut refs: Vec<String> = agent
        .and_then(|(_, a)| json::str_at(a, "model_provider"))
        .map(str::to_string)
        .into_iter()
        .collect();
    let mut i = 0;
    while i < refs.len() && i < 1 + super::MAX_FALLBACKS {
        let r = refs[i].clone();
        i += 1;
        let Some((t, alias)) = r.split_once('.') else {
            plan.skip("provider", &r, "not written as type.alias");
            continue;
        };
        let Some(e) = json::path(models, &[t, alias]) else {
            plan.skip("provider", &r, "no [providers.models] entry for it");
            continue;
        };
        let model = json::str_at(e, "model").unwrap_or("");
        let url = json::str_at(e, "uri");
        plan.provider(t, model, url, false, json::str_at(e, "api_key"));
        for m in json::get(e, "fallback_models")
            .and_then(json::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(m) = json::as_str(m) {
                plan.provider(t, m, url, false, json::str_at(e, "api_key"));
            }
        }
        for f in json::get(e, "fallback")
            .and_then(json::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(f) = json::as_str(f).filter(|f| !refs.iter().any(|x| x == f)) {
                refs.push(f.to_string());
            }
        }
    }
    if let Some(tgs) = json::path(cfg, &["channels", "telegram"]).and_then(json::as_object)
        && let Some(tg) = tgs.values().next()
    {
        let on = json::get(tg, "enabled").and_then(json::as_bool) == Some(true);
        plan.telegram_token(json::str_at(tg, "bot_token"), on);
        let groups = json::get(cfg, "peer_groups").and_then(json::as_object);
        for g in groups.into_iter().flat_map(|g| g.values()) {
            let ch = json::str_at(g, "channel").unwrap_or("");
            if (ch == "telegram" || ch.starts_with("telegram."))
                && let Some(p) = json::get(g, "external_peers")
            {
                plan.allow(p);
            }
        }
    }
    agent
        .map(|(name, a)| {
            let w = json::path(a, &["workspace", "path"]).and_then(json::as_str);
            w.map_or_else(|| ["agents/", name, "/workspace"].concat(), str::to_string)
        })
        .unwrap_or_else(|| "workspace".into())
}

/// Schema 1.
fn v1(cfg: &Value, plan: &mut Plan) {
    let s = |k: &str| json::str_at(cfg, k).filter(|v| !v.trim().is_empty());
    let provider = s("default_provider").unwrap_or("openrouter");
    let providers =
        |p: &str, k: &str| json::path(cfg, &["model_providers", p, k]).and_then(json::as_str);
    if let Some(model) = s("default_model") {
        let url = s("api_url").or_else(|| providers(provider, "base_url"));
        let key = s("api_key").or_else(|| providers(provider, "api_key"));
        plan.provider(provider, model, url, false, key);
        let rel = json::get(cfg, "reliability").unwrap_or(&Value::Null);
        let models = json::path(rel, &["model_fallbacks", model]).and_then(json::as_array);
        for m in models.into_iter().flatten().filter_map(json::as_str) {
            let (p, m) = split_model(m)
                .filter(|(p, _)| json::path(cfg, &["model_providers", p]).is_some())
                .unwrap_or((provider, m));
            plan.provider(
                p,
                m,
                providers(p, "base_url"),
                false,
                providers(p, "api_key"),
            );
        }
        let others = json::get(rel, "fallback_providers").and_then(json::as_array);
        for p in others.into_iter().flatten().filter_map(json::as_str) {
            plan.provider(
                p,
                model,
                providers(p, "base_url"),
                false,
                providers(p, "api_key"),
            );
        }
    }
    if let Some(tg) = json::path(cfg, &["channels_config", "telegram"]) {
        let on = json::get(tg, "enabled").and_then(json::as_bool) != Some(false);
        plan.telegram_token(json::str_at(tg, "bot_token"), on);
        if let Some(a) = json::get(tg, "allowed_users") {
            plan.allow(a);
        }
    }
}

/// Jobs from ZeroClaw's `cron_jobs` table, as the JSON objects `source::jobs` reads.
fn job_table(plan: &mut Plan, src: &Src, rel: &str) {
    let path = match src.real(rel) {
        Ok(Some(p)) => p,
        Ok(None) => return,
        Err(why) => return plan.skip("cron", rel, &why),
    };
    const COLS: [&str; 9] = [
        "id",
        "name",
        "job_type",
        "prompt",
        "command",
        "expression",
        "schedule",
        "delivery",
        "enabled",
    ];
    let read = || -> rusqlite::Result<Vec<Value>> {
        let sql = ["SELECT ", &COLS.join(", "), " FROM cron_jobs"].concat();
        let mut out = Vec::new();
        for row in source::db_rows(&path, &sql, COLS.len())? {
            let mut o = Object::new();
            for (c, v) in COLS.iter().zip(row) {
                let Some(v) = v else { continue };
                // `schedule` and `delivery` hold JSON text, `enabled` 0 or 1.
                let v = match *c {
                    "schedule" | "delivery" => json::parse_value(&v).unwrap_or(Value::Null),
                    "enabled" => Value::Bool(v != "0"),
                    _ => Value::String(v),
                };
                o.insert(c.to_string(), v);
            }
            out.push(Value::Object(o));
        }
        Ok(out)
    };
    match read() {
        Ok(jobs) => source::jobs(plan, &jobs, false),
        Err(e) => plan.skip(
            "cron",
            rel,
            &["its cron jobs cannot be read (", &e.to_string(), ")"].concat(),
        ),
    }
}
