//! A peer's MCP servers as yoctoclaw's `mcp.servers` entries.
//!
//! Each peer reader turns its own shape into a [`Found`] (PicoClaw's `tools.mcp.servers`,
//! ZeroClaw's `[[mcp.servers]]`, NullClaw's `mcp_servers`, OpenClaw's `mcp.servers`) and
//! hands it to [`Plan::mcp_server`], which makes the entry:
//!
//! - Secrets never reach `config.json`. An `env` value or a header value is a secret when
//!   its name says so (a word `KEY`, `TOKEN`, `SECRET`, `PASSWORD`, `AUTH`, `COOKIE`,
//!   `CREDENTIAL(S)`, `PAT`, ... or a name ending in `KEY`/`TOKEN`/`SECRET`;
//!   `Authorization`), or when the value looks like a key (`sk-`, `ghp_`, `xoxb-` ...) or
//!   is one the peer encrypted (`enc2:`). The value goes to `secrets.env` under
//!   `MCP_<SERVER>_<NAME>` and the entry reads `${MCP_<SERVER>_<NAME>}`; an
//!   `Authorization: Bearer TOKEN` header keeps its scheme (`Bearer ${...}`). A value that
//!   is a `${VAR}` reference the peer's own files define comes the same way; one they do
//!   not define stays a reference to `VAR` (set it in `secrets.env`).
//! - A value that cannot go to `secrets.env` (a placeholder of the peer's example
//!   config, an encrypted one) is a `skip` line; the entry still reads the variable, so
//!   the server says which variable is missing when it starts.
//! - A server whose arguments or URL carry a credential (`scheme://user:password@`,
//!   `?token=`) is not brought: those places cannot read a variable.
//! - Names are made yoctoclaw's (`[A-Za-z0-9_-]{1,24}`, unique); at most
//!   `MCP_MAX_SERVERS` come, the rest are named.
//!
//! # Bounds
//! At most `MCP_MAX_SERVERS` servers per plan; an entry holds what the peer's config
//! held (bounded by `MAX_PEER_CONFIG_BYTES`).
//!
//! # Threads
//! Main thread (`yoctoclaw migrate`).

use super::source::{Src, text};
use super::{MAX_PEER_CONFIG_BYTES, Plan, at, strs};
use crate::config::mcp::{MCP_MAX_NAME, MCP_MAX_SERVERS, valid_server_name};
use crate::json::{self, as_array, as_bool, as_object, as_u64, get, quote, str_at};
use miniserde::json::Value;

/// A peer's MCP server, read into yoctoclaw's terms (see the module doc).
#[derive(Debug, Default, Clone)]
pub struct Found {
    /// The peer's name for it.
    pub name: String,
    /// Stdio: the command (empty for an HTTP server).
    pub command: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub cwd: String,
    /// HTTP: the URL (empty for a stdio server).
    pub url: String,
    pub headers: Vec<(String, String)>,
    /// The 2024-11-05 HTTP+SSE transport (else Streamable HTTP).
    pub legacy_sse: bool,
    pub enabled: bool,
    pub timeout_secs: Option<u64>,
    pub allow_tools: Vec<String>,
    pub deny_tools: Vec<String>,
    /// Why it was brought switched off, for the report.
    pub off_because: Option<String>,
}

/// One server bound for `config.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    /// yoctoclaw's name for it (the key in `mcp.servers`).
    pub name: String,
    /// The entry as one line of JSON.
    pub entry: String,
    /// What was done, for the report (variable names, never a value).
    pub note: String,
}

/// Words of a variable or header name that say it holds a secret.
const SECRET_WORDS: &[&str] = &[
    "KEY",
    "APIKEY",
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "PASS",
    "PWD",
    "PAT",
    "AUTH",
    "AUTHORIZATION",
    "CREDENTIAL",
    "CREDENTIALS",
    "COOKIE",
    "BEARER",
    "PRIVATE",
    "SESSION",
];

/// How well-known keys begin (a value with one of these is a secret whatever its name).
const KEY_PREFIXES: &[&str] = &[
    "sk-",
    "sk_",
    "ghp_",
    "gho_",
    "ghs_",
    "github_pat_",
    "glpat-",
    "xoxb-",
    "xoxp-",
    "xapp-",
    "AKIA",
    "hf_",
    "gsk_",
    "pplx-",
    "enc:",
    "enc2:",
    "enc://",
];

/// Whether a variable or header name says its value is a secret.
pub fn secret_name(name: &str) -> bool {
    let up = name.to_ascii_uppercase();
    up.split(|c: char| !c.is_ascii_alphanumeric()).any(|w| {
        SECRET_WORDS.contains(&w)
            || (w.len() > 3 && (w.ends_with("KEY") || w.ends_with("TOKEN")))
            || w.ends_with("SECRET")
    })
}

/// Whether a value looks like a key whatever it is called.
pub fn secret_value(v: &str) -> bool {
    let v = v.trim();
    KEY_PREFIXES.iter().any(|p| v.starts_with(p))
}

/// Whether a URL or an argument carries a credential: `scheme://user:password@` or a
/// query parameter named like a secret (`?token=`, `&api_key=`).
pub fn carries_credential(s: &str) -> bool {
    if let Some((_, rest)) = s.split_once("://") {
        let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
        if let Some((userinfo, _)) = authority.rsplit_once('@')
            && userinfo.contains(':')
        {
            return true;
        }
        if let Some((_, query)) = rest.split_once('?') {
            return query
                .split('&')
                .filter_map(|p| p.split_once('='))
                .any(|(k, v)| !v.is_empty() && secret_name(k));
        }
    }
    false
}

/// `MCP_<SERVER>_<NAME>`: upper-case letters and digits, everything else `_`.
pub fn secret_var(server: &str, name: &str) -> String {
    let mut s = String::from("MCP_");
    for part in [server, "_", name] {
        s.extend(part.chars().map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        }));
    }
    s.truncate(128);
    s
}

/// The variable a value names when it is exactly `${VAR}` (`${VAR:-default}` too).
fn whole_ref(v: &str) -> Option<&str> {
    let inner = v.trim().strip_prefix("${")?.strip_suffix('}')?;
    let var = inner.split(":-").next().unwrap_or(inner);
    let ok = !var.is_empty()
        && !var.as_bytes()[0].is_ascii_digit()
        && var.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    ok.then_some(var)
}

/// A peer's server name as a yoctoclaw one: characters outside `[A-Za-z0-9_-]` become
/// `_`, cut to `MCP_MAX_NAME`.
fn own_name(name: &str) -> String {
    let mut n: String = name
        .trim()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(MCP_MAX_NAME)
        .collect();
    if n.is_empty() {
        n.push_str("server");
    }
    n
}

fn list(out: &mut String, items: &[String]) {
    out.push('[');
    for (i, a) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(&quote(a));
    }
    out.push(']');
}

fn map(out: &mut String, items: &[(String, String)]) {
    out.push('{');
    for (i, (k, v)) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(&quote(k));
        out.push_str(": ");
        out.push_str(&quote(v));
    }
    out.push('}');
}

impl Plan {
    /// Bring one MCP server (see the module doc); what cannot come is a `skip` line.
    pub fn mcp_server(&mut self, f: Found) {
        let from = f.name.clone();
        let stdio = !f.command.trim().is_empty();
        let http = !f.url.trim().is_empty();
        let why = if self.mcp.len() == MCP_MAX_SERVERS {
            Some("yoctoclaw runs at most 8 MCP servers: add it by hand in place of another")
        } else if stdio == http {
            Some("neither a command nor a URL alone: add it by hand")
        } else if f.args.iter().any(|a| carries_credential(a)) {
            Some(
                "an argument carries a password (scheme://user:password@): config.json holds no secrets; add it by hand with the value in secrets.env",
            )
        } else if carries_credential(&f.url) {
            Some(
                "its URL carries a credential: config.json holds no secrets; put it in a header from secrets.env by hand",
            )
        } else {
            None
        };
        if let Some(why) = why {
            return self.skip("mcp", &from, why);
        }
        let mut name = own_name(&from);
        let mut n = 2;
        while self.mcp.iter().any(|s| s.name == name) || !valid_server_name(&name) {
            let suffix = ["_", &n.to_string()].concat();
            name.truncate(MCP_MAX_NAME - suffix.len());
            name.push_str(&suffix);
            n += 1;
        }
        // What the note says, variable names only.
        let mut said: Vec<String> = Vec::new();
        let mut values = |pairs: &[(String, String)], header: bool, plan: &mut Plan| {
            let mut out = Vec::with_capacity(pairs.len());
            for (k, v) in pairs {
                let value = plan.mcp_value(&name, k, v, header, &mut said);
                out.push((k.clone(), value));
            }
            out
        };
        let env = values(&f.env, false, self);
        let headers = values(&f.headers, true, self);

        let mut e = String::with_capacity(256);
        e.push('{');
        let mut sep = "";
        let mut key = |e: &mut String, k: &str| {
            e.push_str(sep);
            e.push_str(&quote(k));
            e.push_str(": ");
            sep = ", ";
        };
        let transport;
        if stdio {
            transport = "stdio";
            key(&mut e, "command");
            e.push_str(&quote(f.command.trim()));
            if !f.args.is_empty() {
                key(&mut e, "args");
                list(&mut e, &f.args);
            }
            if !env.is_empty() {
                key(&mut e, "env");
                map(&mut e, &env);
            }
            if !f.cwd.trim().is_empty() {
                key(&mut e, "cwd");
                e.push_str(&quote(f.cwd.trim()));
            }
        } else {
            transport = if f.legacy_sse { "sse" } else { "http" };
            key(&mut e, "type");
            e.push_str(&quote(transport));
            key(&mut e, "url");
            e.push_str(&quote(f.url.trim()));
            if !headers.is_empty() {
                key(&mut e, "headers");
                map(&mut e, &headers);
            }
        }
        if !f.enabled {
            key(&mut e, "enabled");
            e.push_str("false");
        }
        if let Some(t) = f.timeout_secs {
            let t = t.clamp(1, 3600);
            key(&mut e, "timeout_secs");
            e.push_str(&t.to_string());
        }
        for (k, l) in [
            ("allow_tools", &f.allow_tools),
            ("deny_tools", &f.deny_tools),
        ] {
            if !l.is_empty() {
                key(&mut e, k);
                list(&mut e, l);
            }
        }
        e.push('}');

        let mut note = String::with_capacity(96);
        note.push_str(transport);
        note.push(' ');
        note.push_str(if stdio {
            f.command.trim()
        } else {
            f.url.trim()
        });
        if name != from {
            note.push_str(" (the peer's ");
            note.push_str(&from);
            note.push(')');
        }
        match (&f.off_because, f.enabled) {
            (Some(why), _) => {
                note.push_str(", off: ");
                note.push_str(why);
            }
            (None, false) => note.push_str(", off as it was"),
            _ => {}
        }
        for s in &said {
            note.push_str("; ");
            note.push_str(s);
        }
        self.mcp.push(Server {
            name,
            entry: e,
            note,
        });
    }

    /// An `env` or header value as the entry holds it: a secret becomes a `${NAME}`
    /// reference (its value bound for `secrets.env`); `said` gets a line for the report.
    fn mcp_value(
        &mut self,
        server: &str,
        key: &str,
        raw: &str,
        header: bool,
        said: &mut Vec<String>,
    ) -> String {
        // `Bearer TOKEN`, `Basic X`, `Token X`: the scheme stays, the rest is the value.
        let (scheme, part) = match raw.trim().split_once(' ') {
            Some((s, rest))
                if header
                    && !s.is_empty()
                    && s.bytes().all(|b| b.is_ascii_alphabetic())
                    && !rest.trim().is_empty()
                    && !rest.trim().contains(' ') =>
            {
                ([s, " "].concat(), rest.trim())
            }
            _ => (String::new(), raw.trim()),
        };
        let referenced = whole_ref(part);
        let resolved = referenced.and_then(|v| self.var(v));
        let value = resolved.as_deref().unwrap_or(part);
        if !(secret_name(key) || secret_value(value)) {
            // Not a secret: as written (a `${VAR}` the peer defines, by its value).
            return match &resolved {
                Some(v) => [scheme.as_str(), v].concat(),
                None => raw.to_string(),
            };
        }
        if let (Some(var), None) = (referenced, &resolved) {
            // The peer read it from its environment: so does yoctoclaw.
            said.push([key, " reads ", var, " (put it in secrets.env)"].concat());
            return [scheme.as_str(), "${", var, "}"].concat();
        }
        let var = secret_var(server, key);
        if self.secret(&var, value) {
            said.push([key, " from secrets.env ", &var].concat());
        } else {
            said.push(
                [
                    key,
                    " reads ",
                    &var,
                    " (not brought: set it in secrets.env)",
                ]
                .concat(),
            );
        }
        [scheme.as_str(), "${", &var, "}"].concat()
    }
}

/// Strings of a list (or one string).
fn strings(v: Option<&Value>) -> Vec<String> {
    strs(v).into_iter().map(str::to_string).collect()
}

/// An object of scalars (`env`, `headers`) as pairs; numbers and booleans as their text.
fn pairs(v: Option<&Value>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (k, v) in v.and_then(as_object).into_iter().flatten() {
        let text = match v {
            Value::String(s) => s.clone(),
            Value::Bool(b) => b.to_string(),
            Value::Number(_) => match json::as_i64(v) {
                Some(n) => n.to_string(),
                None => continue,
            },
            _ => continue,
        };
        out.push((k.clone(), text));
    }
    out
}

/// What every peer writes alike: `command`, `args`, `env`, `url`, `headers`.
fn common(name: &str, v: &Value) -> Found {
    Found {
        name: name.to_string(),
        command: str_at(v, "command").unwrap_or("").to_string(),
        args: strings(get(v, "args")),
        env: pairs(get(v, "env")),
        url: str_at(v, "url").unwrap_or("").to_string(),
        headers: pairs(get(v, "headers")),
        enabled: true,
        ..Found::default()
    }
}

/// `KEY=value` lines as PicoClaw reads an `env_file` (`#` comments, quotes stripped).
fn env_lines(t: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for l in t.lines().map(str::trim) {
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        if let Some((k, v)) = l.split_once('=') {
            let (k, mut v) = (k.trim(), v.trim());
            for q in ['"', '\''] {
                if v.len() >= 2 && v.starts_with(q) && v.ends_with(q) {
                    v = &v[1..v.len() - 1];
                }
            }
            if !k.is_empty() {
                out.push((k.to_string(), v.to_string()));
            }
        }
    }
    out
}

/// PicoClaw: `tools.mcp` (`enabled`, `servers.<name>`: `enabled` (off unless true),
/// `type` (`stdio`, `http`/`streamable-http`, `sse`: its `sse` and a URL without a type
/// are Streamable HTTP with the optional GET stream, which yoctoclaw's HTTP transport
/// is), `command`, `args`, `env`, `env_file` (relative to the workspace), `url`,
/// `headers`; `deferred` means nothing here).
pub fn picoclaw(plan: &mut Plan, src: &Src, cfg: &Value, ws: &str) {
    let Some(m) = at(cfg, "tools mcp") else {
        return;
    };
    let on = get(m, "enabled").and_then(as_bool) == Some(true);
    for (name, v) in get(m, "servers").and_then(as_object).into_iter().flatten() {
        let mut f = common(name, v);
        let kind = str_at(v, "type").unwrap_or("").trim().to_ascii_lowercase();
        match kind.as_str() {
            "stdio" => f.url.clear(),
            "http" | "sse" | "streamable-http" | "streamable_http" | "streamablehttp" => {
                f.command.clear()
            }
            "" => {}
            _ => {
                plan.skip(
                    "mcp",
                    name,
                    "its type is not a transport PicoClaw runs (stdio, http or sse): add it by hand",
                );
                continue;
            }
        }
        if let Some(file) = str_at(v, "env_file").filter(|f| !f.trim().is_empty()) {
            let rel = if file.starts_with('/') || file.starts_with('~') {
                src.rel(file)
            } else {
                [ws, "/", file].concat()
            };
            match src.real(&rel) {
                Ok(Some(_)) => {
                    if let Some(t) = text(plan, src, &rel, MAX_PEER_CONFIG_BYTES) {
                        let mut env = env_lines(&t);
                        // The entry's own `env` wins over the file's.
                        env.retain(|(k, _)| !f.env.iter().any(|(e, _)| e == k));
                        env.append(&mut f.env);
                        f.env = env;
                    }
                }
                Ok(None) => plan.skip("mcp", &[name, " env_file ", file].concat(), "not found"),
                Err(why) => plan.skip("mcp", &[name, " env_file ", file].concat(), &why),
            }
        }
        let server_on = get(v, "enabled").and_then(as_bool) == Some(true);
        f.enabled = on && server_on;
        if server_on && !on {
            f.off_because = Some("tools.mcp.enabled is false".into());
        }
        plan.mcp_server(f);
    }
}

/// ZeroClaw: `[mcp] enabled` (default on) and `[[mcp.servers]]` (`name`, `transport`
/// stdio/http/sse (its `sse` is the legacy HTTP+SSE one), `command`, `args`, `env`,
/// `url`, `headers`, `tool_timeout_secs`). A server reaches an agent only through the
/// agent's `mcp_bundles`: the servers `agent` is not granted come switched off.
pub fn zeroclaw(plan: &mut Plan, cfg: &Value, agent: Option<&Value>) {
    let Some(m) = get(cfg, "mcp") else {
        return;
    };
    let on = get(m, "enabled").and_then(as_bool) != Some(false);
    // The agent's grant: the bundles' servers minus what any of them excludes.
    let (mut granted, mut excluded) = (Vec::new(), Vec::new());
    for b in strs(agent.and_then(|a| get(a, "mcp_bundles"))) {
        if let Some(bundle) = at(cfg, "mcp_bundles").and_then(|o| get(o, b)) {
            granted.extend(strs(get(bundle, "servers")));
            excluded.extend(strs(get(bundle, "exclude")));
        }
    }
    for v in get(m, "servers").and_then(as_array).into_iter().flatten() {
        let name = str_at(v, "name").unwrap_or("");
        let mut f = common(name, v);
        match str_at(v, "transport").unwrap_or("stdio") {
            "http" => f.command.clear(),
            "sse" => {
                f.command.clear();
                f.legacy_sse = true;
            }
            _ => f.url.clear(),
        }
        f.timeout_secs = get(v, "tool_timeout_secs").and_then(as_u64);
        let grant = granted.contains(&name) && !excluded.contains(&name);
        f.enabled = on && grant;
        f.off_because = if !on {
            Some("mcp.enabled is false".into())
        } else if !grant {
            Some("the agent's mcp_bundles do not grant it".into())
        } else {
            None
        };
        for (k, why) in [
            (
                "pinned_resources",
                "yoctoclaw reads no MCP resources: not brought",
            ),
            ("tls_ca_cert_path", "set tls.ca_file to that CA by hand"),
        ] {
            if get(v, k).is_some_and(|x| !strs(Some(x)).is_empty()) {
                plan.skip("mcp", &[name, " ", k].concat(), why);
            }
        }
        plan.mcp_server(f);
    }
}

/// NullClaw: `mcp_servers.<name>` with `command`, `args`, `env` (stdio only: NullClaw runs
/// no entry without a command).
pub fn nullclaw(plan: &mut Plan, cfg: &Value) {
    for (name, v) in get(cfg, "mcp_servers")
        .and_then(as_object)
        .into_iter()
        .flatten()
    {
        if str_at(v, "command").is_none() {
            plan.skip("mcp", name, "no command: NullClaw did not run it");
            continue;
        }
        let mut f = common(name, v);
        f.url.clear();
        f.headers.clear();
        plan.mcp_server(f);
    }
}

/// OpenClaw: `mcp.servers.<name>` (`command`, `args`, `env`, `cwd`/`workingDirectory`;
/// `url`, `headers`, `transport` (`streamable-http`, else the legacy `sse`; `type: "http"`
/// read as Streamable HTTP); `enabled`; `timeout` seconds or `requestTimeoutMs`;
/// `toolFilter.include`/`exclude`). OAuth sign-in and client certificates cannot come.
pub fn openclaw(plan: &mut Plan, cfg: &Value) {
    let servers = at(cfg, "mcp servers").and_then(as_object);
    for (name, v) in servers.into_iter().flatten() {
        let mut f = common(name, v);
        if str_at(v, "auth") == Some("oauth") {
            plan.skip(
                "mcp",
                name,
                "it signs in with OAuth, which yoctoclaw does not do: add it by hand with a token header",
            );
            continue;
        }
        if get(v, "clientCert").is_some() {
            plan.skip(
                "mcp",
                name,
                "it needs a client certificate, which yoctoclaw does not send",
            );
            continue;
        }
        let kind = str_at(v, "transport").or_else(|| str_at(v, "type"));
        match kind.unwrap_or("") {
            "stdio" => f.url.clear(),
            "streamable-http" | "http" | "streamableHttp" => f.command.clear(),
            _ if f.command.is_empty() => f.legacy_sse = true,
            _ => {}
        }
        f.cwd = str_at(v, "cwd")
            .or_else(|| str_at(v, "workingDirectory"))
            .unwrap_or("")
            .to_string();
        f.enabled = get(v, "enabled").and_then(as_bool) != Some(false);
        f.timeout_secs = get(v, "timeout").and_then(as_u64).or_else(|| {
            get(v, "requestTimeoutMs")
                .and_then(as_u64)
                .map(|ms| ms.div_ceil(1000))
        });
        let filter = get(v, "toolFilter");
        let include = strs(filter.and_then(|t| get(t, "include")));
        let exclude = strs(filter.and_then(|t| get(t, "exclude")));
        match (exact_names(&include), exact_names(&exclude)) {
            (Some(a), Some(d)) => (f.allow_tools, f.deny_tools) = (a, d),
            _ => {
                f.enabled = false;
                f.off_because = Some(
                    "its toolFilter has patterns: list the tools in allow_tools/deny_tools, then enable it"
                        .into(),
                );
            }
        }
        if get(v, "sslVerify").and_then(as_bool) == Some(false) {
            plan.skip(
                "mcp",
                &[name, " sslVerify false"].concat(),
                "yoctoclaw always verifies TLS: set tls.ca_file for a private CA",
            );
        }
        plan.mcp_server(f);
    }
}

/// Tool names of a peer's filter; `None` when one is a pattern yoctoclaw cannot take.
pub fn exact_names(v: &[&str]) -> Option<Vec<String>> {
    v.iter()
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
        .map(|s| (!s.contains(['*', '?', '['])).then(|| s.to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::migrate::Peer;

    #[test]
    fn secret_names_values_and_credentials_are_told_apart() {
        for n in [
            "GITHUB_PERSONAL_ACCESS_TOKEN",
            "BRAVE_API_KEY",
            "Authorization",
            "X-API-Key",
            "SLACK_BOT_TOKEN",
            "CONTEXT7_API_KEY",
            "DB_PASSWORD",
            "HA_TOKEN",
            "APIKEY",
            "Cookie",
            "GITLAB_PAT",
            "MY_SECRET",
        ] {
            assert!(secret_name(n), "{n}");
        }
        for n in [
            "PATH",
            "NODE_ENV",
            "DEBUG",
            "SLACK_TEAM_ID",
            "Accept",
            "PORT",
            "KEYBOARD_LAYOUT",
            "HOME",
        ] {
            assert!(!secret_name(n), "{n}");
        }
        assert!(secret_value("ghp_abc") && secret_value("sk-or-v1-1") && secret_value("enc2:x"));
        assert!(!secret_value("production"));
        assert!(carries_credential("postgresql://user:pw@localhost/db"));
        assert!(carries_credential("https://h/mcp?x=1&token=abc"));
        assert!(!carries_credential("https://h/mcp?page=2"));
        assert!(!carries_credential("https://user@h/mcp"));
        assert!(!carries_credential("/tmp"));
        assert_eq!(
            secret_var("home-assistant", "Authorization"),
            "MCP_HOME_ASSISTANT_AUTHORIZATION"
        );
    }

    #[test]
    fn secrets_become_references_and_names_become_valid() {
        let mut p = Plan::new(Peer::OpenClaw);
        p.env.push(("GH".into(), "ghp_test_value".into()));
        p.mcp_server(Found {
            name: "my.github server".into(),
            command: "npx".into(),
            args: vec!["-y".into(), "@modelcontextprotocol/server-github".into()],
            env: vec![
                ("GITHUB_PERSONAL_ACCESS_TOKEN".into(), "${GH}".into()),
                ("NODE_ENV".into(), "production".into()),
                ("OTHER_TOKEN".into(), "${UNSET_VAR}".into()),
                ("SNEAKY".into(), "sk-hidden-value".into()),
            ],
            enabled: true,
            ..Found::default()
        });
        p.mcp_server(Found {
            name: "ha".into(),
            url: "http://ha.local:8123/api/mcp".into(),
            headers: vec![("Authorization".into(), "Bearer eyJ.test.token".into())],
            enabled: false,
            timeout_secs: Some(99_999),
            ..Found::default()
        });
        p.mcp_server(Found {
            name: "pg".into(),
            command: "npx".into(),
            args: vec!["postgresql://u:pw@localhost/db".into()],
            enabled: true,
            ..Found::default()
        });
        assert_eq!(p.mcp.len(), 2);
        let gh = &p.mcp[0];
        assert_eq!(gh.name, "my_github_server");
        assert!(
            gh.entry.contains(
                "\"GITHUB_PERSONAL_ACCESS_TOKEN\": \"${MCP_MY_GITHUB_SERVER_GITHUB_PERSONAL_ACCESS_TOKEN}\""
            ),
            "{}",
            gh.entry
        );
        assert!(gh.entry.contains("\"NODE_ENV\": \"production\""));
        assert!(gh.entry.contains("\"OTHER_TOKEN\": \"${UNSET_VAR}\""));
        assert!(
            gh.entry
                .contains("\"SNEAKY\": \"${MCP_MY_GITHUB_SERVER_SNEAKY}\"")
        );
        let ha = &p.mcp[1];
        assert_eq!(
            ha.entry,
            "{\"type\": \"http\", \"url\": \"http://ha.local:8123/api/mcp\", \"headers\": {\"Authorization\": \"Bearer ${MCP_HA_AUTHORIZATION}\"}, \"enabled\": false, \"timeout_secs\": 3600}"
        );
        let names: Vec<&str> = p.secrets.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "MCP_MY_GITHUB_SERVER_GITHUB_PERSONAL_ACCESS_TOKEN",
                "MCP_MY_GITHUB_SERVER_SNEAKY",
                "MCP_HA_AUTHORIZATION"
            ]
        );
        assert_eq!(p.secrets[2].value, "eyJ.test.token");
        for s in &p.mcp {
            for secret in ["ghp_test_value", "sk-hidden", "eyJ.test"] {
                assert!(!s.entry.contains(secret) && !s.note.contains(secret));
            }
        }
        assert!(
            p.skipped
                .iter()
                .any(|(k, w)| *k == "mcp" && w.starts_with("pg: "))
        );
        // Each entry loads as yoctoclaw's config.
        for s in &p.mcp {
            let text = [
                "{\"mcp\": {\"servers\": {",
                &quote(&s.name),
                ": ",
                &s.entry,
                "}}}",
            ]
            .concat();
            crate::config::parse(
                Some(&text),
                std::path::Path::new("c.json"),
                &crate::config::Env::isolated(&[]),
            )
            .unwrap_or_else(|e| panic!("{text}: {e}"));
        }
    }

    #[test]
    fn a_placeholder_is_named_and_the_entry_still_reads_its_variable() {
        let mut p = Plan::new(Peer::PicoClaw);
        p.mcp_server(Found {
            name: "brave-search".into(),
            command: "npx".into(),
            env: vec![("BRAVE_API_KEY".into(), "YOUR_BRAVE_API_KEY".into())],
            enabled: true,
            ..Found::default()
        });
        assert!(p.secrets.is_empty());
        assert!(p.mcp[0].entry.contains("${MCP_BRAVE_SEARCH_BRAVE_API_KEY}"));
        assert!(
            p.skipped.iter().any(|(k, w)| *k == "secret"
                && w.contains("MCP_BRAVE_SEARCH_BRAVE_API_KEY: a placeholder"))
        );
    }

    #[test]
    fn names_stay_unique_and_the_ninth_server_is_named() {
        let mut p = Plan::new(Peer::NullClaw);
        for i in 0..9 {
            p.mcp_server(Found {
                name: if i < 2 {
                    "same name".into()
                } else {
                    format!("s{i}")
                },
                command: "x".into(),
                enabled: true,
                ..Found::default()
            });
        }
        assert_eq!(p.mcp.len(), 8);
        assert_eq!(p.mcp[0].name, "same_name");
        assert_eq!(p.mcp[1].name, "same_name_2");
        assert!(
            p.skipped
                .iter()
                .any(|(_, w)| w.starts_with("s8: yoctoclaw runs at most 8"))
        );
        assert_eq!(
            exact_names(&["a", " b "]),
            Some(vec!["a".to_string(), "b".to_string()])
        );
        assert_eq!(exact_names(&["read_*"]), None);
    }
}
