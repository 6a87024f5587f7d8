//! What the model is offered of the servers' tools: [`offer`] turns each server's tool
//! list into named, bounded, cleaned tools.
//!
//! - Servers in name order, enabled ones only, each with its tools as the manager offers
//!   them (its `allow_tools`/`deny_tools` applied, `MCP_MAX_TOOLS` in all: `Mcp::tools`).
//! - Names by `names::exposed` (`SERVER__TOOL`, never a built-in's).
//! - Descriptions cut to `MCP_OFFER_DESCRIPTION_BYTES`.
//! - Input schemas cleaned as the built-in tools' are written ([`clean_schema`]): no
//!   length bounds (`maxLength`, `minLength`, `maxItems`, `minItems`), which a
//!   grammar-constrained local server (llama-cpp-python) unrolls into a rule thousands
//!   deep and dies on; the top level an object schema (`{"type":"object"}` for one
//!   that is not, with a log line); larger than `MCP_OFFER_SCHEMA_BYTES`: without
//!   descriptions, then `{"type":"object"}`.
//! - At most `MCP_MAX_OFFER_BYTES` of names, descriptions and schemas in all; the tools
//!   past it are left out, with one log line.
//!
//! # Bounds
//! As above; schemas walked to `MCP_MAX_SCHEMA_DEPTH`.
//!
//! # Threads
//! Executor thread (pure functions over the lists; run when a tool list changes).

use super::{ToolInfo, names};
use crate::config::mcp::McpConfig;
use crate::json;
use crate::limits::{
    MCP_MAX_OFFER_BYTES, MCP_MAX_SCHEMA_DEPTH, MCP_OFFER_DESCRIPTION_BYTES, MCP_OFFER_SCHEMA_BYTES,
};
use miniserde::json::Value;

/// The schema offered for a tool whose own cannot be used.
pub const ANY_OBJECT: &str = r#"{"type":"object"}"#;

/// Schema keywords a grammar-constrained server unrolls: never offered.
const UNROLLED: &[&str] = &["maxLength", "minLength", "maxItems", "minItems"];
/// Keywords whose value is one schema (or, for `items`, an array of schemas).
const ONE_SCHEMA: &[&str] = &[
    "items",
    "additionalItems",
    "additionalProperties",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
];
/// Keywords whose value is an array of schemas.
const SCHEMA_LIST: &[&str] = &["anyOf", "oneOf", "allOf", "prefixItems"];
/// Keywords whose value maps names to schemas.
const SCHEMA_MAP: &[&str] = &[
    "properties",
    "patternProperties",
    "dependentSchemas",
    "$defs",
    "definitions",
];

/// One MCP tool as the model is offered it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offered {
    /// `SERVER__TOOL`, as the model calls it.
    pub name: String,
    pub server: String,
    /// The tool's name as the server declared it.
    pub tool: String,
    pub description: String,
    /// A JSON Schema object, compact.
    pub schema: String,
    /// The server's entry says `"trust": true`.
    pub trust: bool,
}

/// The tools offered from `lists` (each server's name and tools, as the manager has
/// them), none named as one of `reserved` (the built-in tools).
pub fn offer(
    cfg: &McpConfig,
    lists: &[(String, Vec<ToolInfo>)],
    reserved: &[&str],
) -> Vec<Offered> {
    let mut picked: Vec<(&str, &ToolInfo, bool)> = Vec::new();
    for s in cfg.servers.iter().filter(|s| s.enabled) {
        if let Some((_, tools)) = lists.iter().find(|(n, _)| *n == s.name) {
            picked.extend(tools.iter().map(|t| (s.name.as_str(), t, s.trust)));
        }
    }
    let pairs: Vec<(&str, &str)> = picked
        .iter()
        .map(|(s, t, _)| (*s, t.name.as_str()))
        .collect();
    let named = names::exposed(&pairs, reserved);
    let mut out = Vec::with_capacity(picked.len());
    let mut bytes = 0usize;
    let mut over_bytes = 0usize;
    for ((server, t, trust), name) in picked.into_iter().zip(named) {
        let Some(name) = name else {
            log::warn!(
                "mcp: {server} declares the tool {:?} twice (or its name cannot be made unique): offered once",
                crate::text::cap_text(&t.name, 80)
            );
            continue;
        };
        let description = crate::text::cap_text(t.description.trim(), MCP_OFFER_DESCRIPTION_BYTES);
        let schema = clean_schema(&t.input_schema, &name);
        let size = name.len() + description.len() + schema.len();
        if bytes + size > MCP_MAX_OFFER_BYTES {
            over_bytes += 1;
            continue;
        }
        bytes += size;
        out.push(Offered {
            name,
            server: server.to_string(),
            tool: t.name.clone(),
            description,
            schema,
            trust,
        });
    }
    if over_bytes > 0 {
        log::warn!(
            "mcp: {over_bytes} tool(s) left out: the MCP tools' descriptions and schemas may take {} KiB in all (every request carries them); deny_tools in a server's entry leaves out the ones not needed",
            MCP_MAX_OFFER_BYTES / 1024
        );
    }
    out
}

/// `schema` (a tool's `inputSchema` as JSON text) as it is offered: see the module
/// documentation. `name` is the tool's, for the log.
pub fn clean_schema(schema: &str, name: &str) -> String {
    let mut v = match json::parse_value(schema) {
        Ok(v @ Value::Object(_)) => v,
        _ => {
            log::warn!(
                "mcp: the tool {name} declares an input schema that is not a JSON object: offered as taking any object"
            );
            return ANY_OBJECT.to_string();
        }
    };
    if let Value::Object(o) = &mut v {
        match o.get("type") {
            None => {
                o.insert("type".to_string(), json::string("object"));
            }
            Some(Value::String(t)) if t == "object" => {}
            Some(_) => {
                log::warn!(
                    "mcp: the tool {name}'s input schema is not of type object: offered as taking any object"
                );
                return ANY_OBJECT.to_string();
            }
        }
    }
    if !walk(&mut v, 0, &mut |o| {
        for k in UNROLLED {
            o.remove(*k);
        }
    }) {
        log::warn!(
            "mcp: the tool {name}'s input schema nests deeper than {MCP_MAX_SCHEMA_DEPTH}: offered as taking any object"
        );
        return ANY_OBJECT.to_string();
    }
    let text = json::to_string(&v);
    if text.len() <= MCP_OFFER_SCHEMA_BYTES {
        return text;
    }
    walk(&mut v, 0, &mut |o| {
        o.remove("description");
        o.remove("title");
        o.remove("examples");
    });
    let text = json::to_string(&v);
    if text.len() <= MCP_OFFER_SCHEMA_BYTES {
        return text;
    }
    log::warn!(
        "mcp: the tool {name}'s input schema is larger than {} KiB even without its descriptions: offered as taking any object",
        MCP_OFFER_SCHEMA_BYTES / 1024
    );
    ANY_OBJECT.to_string()
}

/// Apply `f` to every schema object within `v` (a schema), keywords told from data: the
/// members of `properties` are schemas, those of `enum` or `default` are not. `false`
/// when the schema nests deeper than `MCP_MAX_SCHEMA_DEPTH`.
fn walk(v: &mut Value, depth: usize, f: &mut dyn FnMut(&mut miniserde::json::Object)) -> bool {
    if depth > MCP_MAX_SCHEMA_DEPTH {
        return false;
    }
    let Value::Object(o) = v else {
        // `true`/`false` schemas, or a malformed one: nothing to clean.
        return true;
    };
    f(o);
    let mut ok = true;
    for (k, child) in o.iter_mut() {
        let k = k.as_str();
        if ONE_SCHEMA.contains(&k) {
            ok &= match child {
                Value::Array(items) => items.iter_mut().all(|c| walk(c, depth + 1, f)),
                c => walk(c, depth + 1, f),
            };
        } else if SCHEMA_LIST.contains(&k) {
            if let Value::Array(items) = child {
                ok &= items.iter_mut().all(|c| walk(c, depth + 1, f));
            }
        } else if SCHEMA_MAP.contains(&k)
            && let Value::Object(map) = child
        {
            ok &= map.iter_mut().all(|(_, c)| walk(c, depth + 1, f));
        }
    }
    ok
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::mcp::{McpServerConfig, McpStart, McpTransport};

    fn server(name: &str) -> McpServerConfig {
        McpServerConfig {
            name: name.into(),
            transport: McpTransport::Stdio {
                command: "x".into(),
                args: vec![],
                env: vec![],
                cwd: String::new(),
            },
            enabled: true,
            start: McpStart::FirstUse,
            timeout_secs: 60,
            allow_tools: vec![],
            deny_tools: vec![],
            env_from_secrets: vec![],
            trust: false,
            idle_stop_mins: 10,
        }
    }

    fn tool(name: &str, schema: &str) -> ToolInfo {
        ToolInfo {
            name: name.into(),
            description: format!("Does {name}."),
            input_schema: schema.into(),
        }
    }

    const S: &str = r#"{"type":"object","properties":{"a":{"type":"number"}}}"#;

    #[test]
    fn schemas_lose_length_bounds_but_keep_properties_named_like_keywords() {
        let s = r#"{"type":"object","properties":{"q":{"type":"string","maxLength":4096,"minLength":1},"maxLength":{"type":"integer","minimum":1},"tags":{"type":"array","maxItems":9,"items":{"type":"string","maxLength":5}},"x":{"anyOf":[{"type":"string","maxLength":3},{"type":"null"}]}},"required":["q"],"default":{"maxLength":2},"$defs":{"d":{"type":"string","minLength":2}}}"#;
        let out = clean_schema(s, "t");
        let v = json::parse_value(&out).unwrap();
        let props = json::get(&v, "properties").unwrap();
        // A property named maxLength stays; data under `default` is not a schema.
        assert!(json::get(props, "maxLength").is_some(), "{out}");
        assert_eq!(
            json::path(&v, &["default", "maxLength"]).and_then(json::as_u64),
            Some(2)
        );
        assert!(json::path(props, &["q", "maxLength"]).is_none());
        assert!(json::path(props, &["q", "minLength"]).is_none());
        assert!(json::path(props, &["tags", "maxItems"]).is_none());
        assert!(json::path(props, &["tags", "items", "maxLength"]).is_none());
        assert!(
            !out.contains("\"maxLength\":3") && !out.contains("\"minLength\":2"),
            "{out}"
        );
        assert_eq!(
            json::path(props, &["maxLength", "minimum"]).and_then(json::as_u64),
            Some(1)
        );
    }

    #[test]
    fn a_schema_that_is_not_an_object_schema_takes_any_object() {
        for bad in [
            "",
            "[1]",
            "\"x\"",
            "{",
            r#"{"type":"string"}"#,
            r#"{"type":["object","null"]}"#,
        ] {
            assert_eq!(clean_schema(bad, "t"), ANY_OBJECT, "{bad}");
        }
        assert_eq!(clean_schema("{}", "t"), ANY_OBJECT);
        assert_eq!(
            clean_schema(r#"{"properties":{"a":{"type":"number"}}}"#, "t"),
            r#"{"properties":{"a":{"type":"number"}},"type":"object"}"#
        );
        let deep = format!(
            r#"{{"type":"object","properties":{{"a":{}1{}}}}}"#,
            r#"{"items":"#.repeat(40),
            "}".repeat(40)
        );
        assert_eq!(clean_schema(&deep, "t"), ANY_OBJECT);
    }

    #[test]
    fn a_large_schema_loses_its_descriptions_then_everything() {
        let props: Vec<String> = (0..40)
            .map(|i| {
                format!(
                    r#""p{i}":{{"type":"string","description":"{}"}}"#,
                    "d".repeat(200)
                )
            })
            .collect();
        let big = format!(
            r#"{{"type":"object","properties":{{{}}}}}"#,
            props.join(",")
        );
        assert!(big.len() > MCP_OFFER_SCHEMA_BYTES);
        let out = clean_schema(&big, "t");
        assert!(
            out.len() <= MCP_OFFER_SCHEMA_BYTES && out.contains("\"p39\""),
            "{}",
            out.len()
        );
        assert!(!out.contains("description"));
        let props: Vec<String> = (0..900)
            .map(|i| format!(r#""p{i}":{{"type":"string"}}"#))
            .collect();
        let huge = format!(
            r#"{{"type":"object","properties":{{{}}}}}"#,
            props.join(",")
        );
        assert_eq!(clean_schema(&huge, "t"), ANY_OBJECT);
    }

    #[test]
    fn enabled_servers_tools_are_named_and_bounded() {
        let mut home = server("home");
        home.trust = true;
        let mut off = server("off");
        off.enabled = false;
        let cfg = McpConfig {
            servers: vec![home, server("nas"), off],
            idle_stop_mins: 10,
        };
        let lists = vec![
            ("nas".to_string(), vec![tool("df", S)]),
            ("home".to_string(), vec![tool("on", S), tool("on", S)]),
            ("off".to_string(), vec![tool("x", S)]),
        ];
        let out = offer(&cfg, &lists, &["exec"]);
        let names: Vec<&str> = out.iter().map(|o| o.name.as_str()).collect();
        assert_eq!(names, ["home__on", "nas__df"]);
        assert!(out[0].trust && !out[1].trust);
        assert_eq!(
            (out[1].server.as_str(), out[1].tool.as_str()),
            ("nas", "df")
        );
        assert_eq!(out[1].description, "Does df.");
        let cfg = McpConfig {
            servers: vec![server("big")],
            idle_stop_mins: 10,
        };
        // Byte bound: long descriptions fill the budget first.
        let mut wordy: Vec<ToolInfo> = (0..100).map(|i| tool(&format!("w{i}"), S)).collect();
        for t in &mut wordy {
            t.description = "x".repeat(10_000);
        }
        let out = offer(&cfg, &[("big".into(), wordy)], &[]);
        let total: usize = out
            .iter()
            .map(|o| o.name.len() + o.description.len() + o.schema.len())
            .sum();
        assert!(
            total <= MCP_MAX_OFFER_BYTES && out.len() >= 20,
            "{total} {}",
            out.len()
        );
        assert!(
            out.iter()
                .all(|o| o.description.len() <= MCP_OFFER_DESCRIPTION_BYTES + 64)
        );
    }
}
