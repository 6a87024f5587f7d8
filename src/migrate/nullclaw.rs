//! NullClaw (`~/.nullclaw`): `config.json` (`models.providers.<p>.api_key|base_url`,
//! `agents.defaults.model.primary` as `provider/model`, `reliability.model_fallbacks` and
//! `fallback_providers`, Telegram under `channels.telegram.accounts.<id>`), the workspace
//! (`workspace` key, else `workspace/`) with its markdown memories and `memory.db`, and
//! `cron.json`.

use super::source::{self, Format, Src};
use super::{Plan, split_model};
use crate::json;
use miniserde::json::Value;

pub fn read(src: &Src, plan: &mut Plan) {
    let cfg = source::config(plan, src, "config.json", Format::Json).unwrap_or(Value::Null);
    let model = json::path(&cfg, &["agents", "defaults", "model"]);
    let primary = model.and_then(|m| json::str_at(m, "primary").or_else(|| json::as_str(m)));
    let rel = json::get(&cfg, "reliability").unwrap_or(&Value::Null);
    let list = |v: Option<&Value>| -> Vec<String> {
        v.and_then(json::as_array)
            .into_iter()
            .flatten()
            .filter_map(json::as_str)
            .map(str::to_string)
            .collect()
    };
    let mut refs: Vec<String> = primary.map(str::to_string).into_iter().collect();
    if let Some(p) = primary {
        // Other models for the primary one, then the same model at other providers.
        let entries = json::get(rel, "model_fallbacks").and_then(json::as_array);
        for e in entries.into_iter().flatten() {
            let m = json::str_at(e, "model").unwrap_or("");
            if m == p || split_model(p).is_some_and(|(_, pm)| pm == m) {
                refs.extend(list(json::get(e, "fallbacks")));
            }
        }
        if let Some((_, m)) = split_model(p) {
            refs.extend(
                list(json::get(rel, "fallback_providers"))
                    .iter()
                    .map(|fp| [fp.as_str(), "/", m].concat()),
            );
        }
    }
    for r in &refs {
        let Some((p, m)) = split_model(r) else {
            plan.skip("provider", r, "not written as provider/model");
            continue;
        };
        let conf = json::path(&cfg, &["models", "providers", p]).unwrap_or(&Value::Null);
        let url = json::str_at(conf, "base_url").or_else(|| json::str_at(conf, "api_url"));
        plan.provider(p, m, url, false, json::str_at(conf, "api_key"));
    }

    if let Some(tg) = json::path(&cfg, &["channels", "telegram"]) {
        let accounts = json::get(tg, "accounts").and_then(json::as_object);
        let account = accounts.and_then(|a| {
            ["main", "default"]
                .iter()
                .find_map(|k| a.get(*k))
                .or_else(|| a.values().next())
        });
        let a = account.unwrap_or(tg);
        plan.telegram_token(json::str_at(a, "bot_token"), true);
        if let Some(allow) = json::get(a, "allow_from") {
            plan.allow(allow);
        }
    }

    let ws = json::str_at(&cfg, "workspace").map_or_else(|| "workspace".into(), |w| src.rel(w));
    source::workspace(plan, src, &ws);
    source::database(plan, src, &[&ws, "/memory.db"].concat());
    if let Some(v) = source::config(plan, src, "cron.json", Format::Json) {
        source::jobs(plan, source::job_list(&v), false);
    }
}
