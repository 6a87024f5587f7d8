//! PicoClaw (`~/.picoclaw`): `config.json` in its three shapes (version 0: `providers`
//! and `agents.defaults.model`; versions 1-2: `model_list` and `channels`; version 3:
//! `channel_list` with `settings`), keys moved out to `.security.yml`, the workspace
//! (`AGENT.md` is yoctoclaw's `AGENTS.md`; daily notes in `memory/YYYYMM/`), and
//! `workspace/cron/jobs.json`.
//!
//! `.security.yml` is read by a line scanner that knows just its shape (nested mappings,
//! `- item` lists, quoted or plain scalars); values PicoClaw encrypted (`enc://`) are
//! reported, not decrypted.
//!
//! # Bounds
//! `.security.yml` is read up to `MAX_PEER_CONFIG_BYTES`; its nesting is bounded by its
//! line count (the path stack only grows with indentation).

use super::source::{self, Format, Src};
use super::{MAX_PEER_CONFIG_BYTES, Plan, split_model};
use crate::json;
use miniserde::json::Value;

/// Separates path parts in the scanner's keys (model names hold dots and slashes).
const SEP: char = '\u{1}';

pub fn read(src: &Src, plan: &mut Plan) {
    let cfg = source::config(plan, src, "config.json", Format::Json).unwrap_or(Value::Null);
    let sec = source::text(plan, src, ".security.yml", MAX_PEER_CONFIG_BYTES)
        .map(|t| yaml_leaves(&t))
        .unwrap_or_default();
    let secret = |path: &[&str]| {
        let p = path.join(&SEP.to_string());
        sec.iter().find(|(k, _)| *k == p).map(|(_, v)| v.clone())
    };
    let d = json::path(&cfg, &["agents", "defaults"]).unwrap_or(&Value::Null);
    let list = json::get(&cfg, "model_list").and_then(json::as_array);
    if let Some(list) = list {
        let names = json::str_at(d, "model_name").or_else(|| json::str_at(d, "model"));
        let fallbacks = json::get(d, "model_fallbacks").and_then(json::as_array);
        let fallbacks = fallbacks.into_iter().flatten().filter_map(json::as_str);
        for name in names.into_iter().chain(fallbacks) {
            let Some(e) = list
                .iter()
                .find(|e| json::str_at(e, "model_name") == Some(name))
            else {
                plan.skip("provider", name, "not in model_list");
                continue;
            };
            let model = json::str_at(e, "model").unwrap_or("");
            let (proto, m) = split_model(model).unwrap_or(("openai", model));
            let p = json::str_at(e, "provider")
                .filter(|p| !p.is_empty())
                .unwrap_or(proto);
            let key = secret(&["model_list", name, "api_keys"])
                .or_else(|| secret(&["model_list", name, "api_key"]))
                .or_else(|| first_str(json::get(e, "api_keys")))
                .or_else(|| json::str_at(e, "api_key").map(str::to_string));
            plan.provider(p, m, json::str_at(e, "api_base"), false, key.as_deref());
        }
    } else if let Some(model) = json::str_at(d, "model") {
        // Version 0: a `providers` map, the model named in the defaults.
        let providers = json::get(&cfg, "providers").and_then(json::as_object);
        let named = json::str_at(d, "provider").filter(|p| !p.is_empty());
        let (p, m) = match (named, split_model(model)) {
            (Some(p), _) => (p, model),
            (None, Some((p, m))) if providers.is_some_and(|o| o.contains_key(p)) => (p, m),
            _ => {
                let with_key = providers
                    .into_iter()
                    .flatten()
                    .find(|(_, v)| json::str_at(v, "api_key").is_some_and(|k| !k.is_empty()));
                (with_key.map_or("openrouter", |(k, _)| k.as_str()), model)
            }
        };
        let conf = json::path(&cfg, &["providers", p]).unwrap_or(&Value::Null);
        plan.provider(
            p,
            m,
            json::str_at(conf, "api_base"),
            false,
            json::str_at(conf, "api_key"),
        );
    }

    let v3 = json::path(&cfg, &["channel_list", "telegram"]);
    if let Some(tg) = v3.or_else(|| json::path(&cfg, &["channels", "telegram"])) {
        let token = secret(&["channels", "telegram", "token"])
            .or_else(|| secret(&["channel_list", "telegram", "settings", "token"]))
            .or_else(|| {
                json::path(tg, &["settings", "token"])
                    .and_then(json::as_str)
                    .map(str::to_string)
            })
            .or_else(|| json::str_at(tg, "token").map(str::to_string));
        let on = json::get(tg, "enabled").and_then(json::as_bool) == Some(true);
        plan.telegram_token(token.as_deref(), on);
        if let Some(a) = json::get(tg, "allow_from") {
            plan.allow(a);
        }
    }

    let ws = json::str_at(d, "workspace").map_or_else(|| "workspace".into(), |w| src.rel(w));
    source::workspace(plan, src, &ws);
    if let Some(v) = source::config(plan, src, &[&ws, "/cron/jobs.json"].concat(), Format::Json) {
        source::jobs(plan, source::job_list(&v), true);
    }
}

fn first_str(v: Option<&Value>) -> Option<String> {
    v.and_then(json::as_array)?
        .first()
        .and_then(json::as_str)
        .map(str::to_string)
}

/// `(path, value)` for every scalar of a simple YAML file: mapping keys joined by `SEP`;
/// list items take their list's path. Quotes around scalars are removed.
pub fn yaml_leaves(text: &str) -> Vec<(String, String)> {
    let mut stack: Vec<(usize, String)> = Vec::new();
    let mut out = Vec::new();
    let path = |stack: &[(usize, String)], last: Option<&str>| {
        let mut parts: Vec<&str> = stack.iter().map(|(_, k)| k.as_str()).collect();
        parts.extend(last);
        parts.join(&SEP.to_string())
    };
    for line in text.lines() {
        let body = line.trim();
        if body.is_empty() || body.starts_with('#') || body == "---" {
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        if let Some(item) = body
            .strip_prefix("- ")
            .or(if body == "-" { Some("") } else { None })
        {
            while stack.last().is_some_and(|(i, _)| *i > indent) {
                stack.pop();
            }
            out.push((path(&stack, None), scalar(item)));
            continue;
        }
        while stack.last().is_some_and(|(i, _)| *i >= indent) {
            stack.pop();
        }
        let Some((k, v)) = body.split_once(':') else {
            continue;
        };
        let (k, v) = (scalar(k), v.trim());
        if v.is_empty() {
            stack.push((indent, k));
        } else {
            out.push((path(&stack, Some(&k)), scalar(v)));
        }
    }
    out
}

/// A YAML scalar without its quotes (or, plain, without a trailing comment).
fn scalar(s: &str) -> String {
    let s = s.trim();
    for q in ['"', '\''] {
        if let Some(inner) = s.strip_prefix(q).and_then(|r| r.split(q).next()) {
            return inner.to_string();
        }
    }
    s.split(" #").next().unwrap_or(s).trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn security_yml_leaves() {
        let y = "# secrets\nmodel_list:\n  gpt-5.4:\n    api_keys:\n      - \"sk-test-1\"\n      - 'sk-test-2'\n  claude.x/y:\n    api_key: sk-test-3 # note\nchannels:\n  telegram:\n    token: \"123:ABC\"\nweb:\n  brave:\n    api_keys:\n    - BSA\n";
        let l = yaml_leaves(y);
        let get = |p: &[&str]| -> Vec<&str> {
            let p = p.join(&SEP.to_string());
            l.iter()
                .filter(|(k, _)| *k == p)
                .map(|(_, v)| v.as_str())
                .collect()
        };
        assert_eq!(
            get(&["model_list", "gpt-5.4", "api_keys"]),
            ["sk-test-1", "sk-test-2"]
        );
        assert_eq!(get(&["model_list", "claude.x/y", "api_key"]), ["sk-test-3"]);
        assert_eq!(get(&["channels", "telegram", "token"]), ["123:ABC"]);
        assert_eq!(get(&["web", "brave", "api_keys"]), ["BSA"]);
    }
}
