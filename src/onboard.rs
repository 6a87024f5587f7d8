//! `yoctoclaw onboard`: create the home, `config.json` with every default, and the
//! workspace's starter markdown files. Never overwrites an existing file without `--force`.
//! With `--board NAME`, also the board's pinout as the workspace skill `skills/pinout`
//! (files under `boards/pinouts/`, compiled in).
//!
//! # Threads
//! Main thread: one command creating a few small files.

use crate::config::Home;
use crate::files::{create_dir_private, write_atomic};
use std::fmt::Write as _;
use std::path::PathBuf;

/// `config.json` as written by onboard: every key with its default. Keys starting with
/// `//` are comments (the config reader skips them).
pub const CONFIG_TEMPLATE: &str = r#"{
  "//": "yoctoclaw settings. Every key is optional; these are the defaults. Secrets never go here: keys are read from the environment variables named below (or secrets.env, mode 0600).",
  "provider": {
    "//": "kind: openai (any OpenAI-compatible server: OpenRouter, OpenAI, Ollama http://127.0.0.1:11434/v1, llama.cpp, vLLM, Groq...) or anthropic (base_url https://api.anthropic.com)",
    "kind": "openai",
    "base_url": "https://openrouter.ai/api/v1",
    "model": "anthropic/claude-sonnet-4.5",
    "api_key_env": "YOCTOCLAW_API_KEY",
    "max_tokens": 1024,
    "timeout_secs": 120,
    "stream": false,
    "// tool_mode": "native (tools in the request), text (described in the prompt, for models without native tool calls), none; doctor --deep says which fits",
    "tool_mode": "native",
    "// context_window": "the model's context size in tokens (llama.cpp --ctx-size, Ollama num_ctx); 0: 8192 for a local server, unknown for a cloud one",
    "context_window": 0,
    "// vision": "photos and MCP tools' images go to the model as images (one that refuses them gets their path or description); false: always that",
    "vision": true
  },
  "fallbacks": [],
  "telegram": {
    "//": "allow_from: numeric user ids (as strings) or @usernames; empty means nobody",
    "enabled": false,
    "api_base": "https://api.telegram.org",
    "token_env": "TELEGRAM_BOT_TOKEN",
    "allow_from": [],
    "poll_timeout_secs": 50,
    "group_mode": "mention",
    "deny_tools": []
  },
  "agent": {
    "//": "autonomy: read_only, supervised (asks before writes, exec and cron changes) or full",
    "max_tool_iterations": 10,
    "max_sessions": 16,
    "autonomy": "supervised",
    "timezone": "UTC",
    "approval_timeout_secs": 120,
    "history_messages": 40,
    "max_tool_result_bytes": 16384,
    "restrict_to_workspace": true,
    "//compact": "history compaction: past compact_after_messages messages or compact_after_tokens (bytes/4), older messages are summarised; the newest keep_recent_messages stay verbatim",
    "compact_after_messages": 30,
    "compact_after_tokens": 16000,
    "keep_recent_messages": 10
  },
  "heartbeat": {
    "//": "deliver_to: telegram:<chat_id>, stdout, or empty (log only)",
    "enabled": true,
    "interval_mins": 30,
    "deliver_to": "",
    "deny_tools": []
  },
  "memory": {
    "//": "categories: core never expires; daily, conversation and custom are deleted after *_days. audit_days: how long the audit trail keeps each tool call. min_relevance_milli: bm25 score x 1000 a search match needs to enter the prompt",
    "inject_top_k": 5,
    "inject_budget_bytes": 4096,
    "daily_days": 30,
    "conversation_days": 7,
    "custom_days": 90,
    "audit_days": 30,
    "cache_kib": 256,
    "min_relevance_milli": 100
  },
  "tools": {
    "//": "deny: tools no channel is offered; telegram, serial and heartbeat deny_tools add to it there (cron jobs get every list). Tool names or groups: fs_read, fs_write, exec, web, memory, cron, messaging, system, hardware",
    "deny": [],
    "exec": { "enabled": true, "timeout_secs": 30, "max_output_bytes": 16384, "write_paths": [], "user": "" },
    "web_fetch": { "allow_private": false, "max_bytes": 524288, "timeout_secs": 20 },
    "// web_search": "backend: duckduckgo (no key), searxng (your instance: searxng_url), brave or tavily (keys in the variables *_key_env name); fallback: backends tried next, in order; base_url: the backend's own endpoint (same as its *_url key); language: de or de-DE, empty for the default; safe_search: off, moderate or strict",
    "web_search": { "backend": "duckduckgo", "fallback": [], "base_url": "", "searxng_url": "", "max_results": 5, "language": "", "safe_search": "moderate", "timeout_secs": 10, "brave_key_env": "BRAVE_API_KEY", "tavily_key_env": "TAVILY_API_KEY" }
  },
  "serial": { "device": "", "baud": 115200, "echo": false, "deny_tools": [] },
  "hardware": {
    "//": "allow: \"DEVICE[:LINES] read|write\" entries, e.g. \"gpiochip0:17,27 write\", \"i2c-1:0x48 read\"; empty: no hardware tools (docs/hardware.md)",
    "allow": []
  },
  "budget": { "daily_tokens": null, "monthly_tokens": null },
  "tls": {
    "//": "ca_file: a PEM file of extra CA certificates (a private CA), trusted besides the built-in roots",
    "ca_file": ""
  },
  "transcription": {
    "//": "voice notes: OpenAI-compatible speech to text, e.g. https://api.openai.com/v1 or whisper.cpp http://127.0.0.1:8080/v1; empty: off",
    "base_url": "",
    "model": "whisper-1",
    "api_key_env": "YOCTOCLAW_TRANSCRIPTION_API_KEY",
    "timeout_secs": 120
  },
  "media": {
    "//": "files sent on Telegram: per file (at most 20), and in workspace/inbox",
    "max_file_mb": 20,
    "inbox_max_mb": 200
  },
  "http": {
    "//": "the gateway's HTTP server: GET /health (open), the OpenAI-compatible POST /v1/chat/completions and GET /v1/models (Authorization: Bearer <the token in token_env>). listen 0.0.0.0:18790 opens it to the LAN (plain HTTP: put a TLS proxy or tunnel in front beyond it). rate_per_minute: requests per client address",
    "enabled": false,
    "listen": "127.0.0.1:18790",
    "token_env": "YOCTOCLAW_HTTP_TOKEN",
    "max_connections": 16,
    "max_body_kib": 1024,
    "rate_per_minute": 120,
    "metrics_public": false,
    "header_timeout_secs": 10,
    "body_timeout_secs": 30,
    "deny_tools": []
  },
  "mcp": {
    "//": "MCP servers whose tools the model is offered, keyed by name (at most 8): stdio {\"command\": \"npx\", \"args\": [...], \"env\": {...}} or HTTP {\"url\": \"https://...\", \"headers\": {...}}; a secret is written ${NAME} and kept in secrets.env. idle_stop_mins: a server unused that long is stopped (0: never)",
    "idle_stop_mins": 10,
    "servers": {}
  },
  "security": {
    "//": "injection: untrusted content (web pages, search results, MCP results, files in the inbox) is fenced as data and screened; action flag (shown to the model flagged) or withhold (replaced by one line); threshold: the heuristic score (0 to 1) that is a hit; extra_patterns: your own regexes, matched against lower-cased text; judge: {\"model\": \"a cheap model at your first provider\"} is asked about scores from judge.floor (0.3) up to the threshold",
    "injection": { "enabled": true, "action": "flag", "threshold": 0.6, "extra_patterns": [] }
  },
  "log_level": "info"
}
"#;

pub const WORKSPACE_FILES: &[(&str, &str)] = &[
    (
        "IDENTITY.md",
        "# Identity\n\nYou are yoctoclaw, a personal AI assistant running on a small Linux board.\nYou talk with your owner over Telegram, a terminal or a serial line.\n",
    ),
    (
        "SOUL.md",
        "# Soul\n\n- Be concise: replies are read on a phone or a 80-column terminal.\n- Be honest about what you do not know; never invent file contents or command output.\n- Prefer doing over explaining when a tool can answer the question.\n- Ask before anything destructive or irreversible.\n",
    ),
    (
        "USER.md",
        "# User\n\n<!-- Tell the assistant about yourself: name, language, time zone, what you use it for. -->\n- Name:\n- Preferred language: English\n",
    ),
    (
        "AGENTS.md",
        "# How to work\n\n- Use tools to look things up instead of guessing.\n- Files you create live in this workspace folder.\n- Store lasting facts about the user with memory_store; search memory before asking again.\n- Keep answers short unless asked for detail.\n",
    ),
    (
        "TOOLS.md",
        "# Tools\n\nNotes about the tools and this board (paths, devices, services) go here.\nTools are confined to the workspace folder.\n",
    ),
    (
        "HEARTBEAT.md",
        "# Heartbeat\n\n<!-- Every heartbeat interval the assistant reads this file. While it holds only headings,\n     comments and blank lines, no model call is made. Add tasks as plain lines, e.g.:\n     - Check disk space and tell me if it is above 90%.\n     The assistant answers HEARTBEAT_OK when nothing needs your attention. -->\n",
    ),
];

/// Boards with a pinout skill: `--board` name and the skill's `SKILL.md`.
pub const BOARDS: &[(&str, &str)] = &[
    (
        "raspberry-pi",
        include_str!("../boards/pinouts/raspberry-pi.md"),
    ),
    (
        "orange-pi-zero3",
        include_str!("../boards/pinouts/orange-pi-zero3.md"),
    ),
    ("milkv-duo", include_str!("../boards/pinouts/milkv-duo.md")),
    (
        "licheerv-nano",
        include_str!("../boards/pinouts/licheerv-nano.md"),
    ),
];

/// The pinout skill of `name`, or the usage error listing the known boards.
pub fn board_skill(name: &str) -> Result<&'static str, String> {
    BOARDS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, text)| *text)
        .ok_or_else(|| {
            let known: Vec<&str> = BOARDS.iter().map(|(n, _)| *n).collect();
            format!("unknown board {name:?}: use one of {}", known.join(", "))
        })
}

/// What onboard did, for the report.
#[derive(Debug, Default)]
pub struct Report {
    pub created: Vec<PathBuf>,
    pub overwritten: Vec<PathBuf>,
    pub kept: Vec<PathBuf>,
}

/// Create the home (and `skills/pinout/SKILL.md` when a board's `pinout` is given).
/// Existing files are kept unless `force`.
pub fn run(home: &Home, force: bool, pinout: Option<&str>) -> std::io::Result<Report> {
    let mut report = Report::default();
    create_dir_private(&home.dir, 0o700)?;
    create_dir_private(&home.workspace(), 0o700)?;
    create_dir_private(&home.workspace().join("skills"), 0o700)?;
    let mut files: Vec<(PathBuf, &str, u32)> = vec![(home.config_file(), CONFIG_TEMPLATE, 0o600)];
    for (name, text) in WORKSPACE_FILES {
        files.push((home.workspace().join(name), text, 0o644));
    }
    if let Some(text) = pinout {
        let dir = home.workspace().join("skills/pinout");
        create_dir_private(&dir, 0o700)?;
        files.push((dir.join("SKILL.md"), text, 0o644));
    }
    for (path, text, mode) in files {
        let exists = path.exists();
        if exists && !force {
            report.kept.push(path);
            continue;
        }
        write_atomic(&path, text.as_bytes(), mode)?;
        if exists {
            report.overwritten.push(path);
        } else {
            report.created.push(path);
        }
    }
    Ok(report)
}

/// The text printed after onboarding.
pub fn summary(home: &Home, r: &Report) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "yoctoclaw home: {}", home.dir.display());
    for p in &r.created {
        let _ = writeln!(s, "  created      {}", p.display());
    }
    for p in &r.overwritten {
        let _ = writeln!(s, "  overwritten  {}", p.display());
    }
    if !r.kept.is_empty() {
        let _ = writeln!(
            s,
            "  kept {} existing file(s) unchanged (use onboard --force to overwrite them)",
            r.kept.len()
        );
    }
    let _ = writeln!(s, "\nNext steps:");
    let _ = writeln!(
        s,
        "  1. Give it an API key: export YOCTOCLAW_API_KEY=...  (or put YOCTOCLAW_API_KEY=... in {} and chmod 600 it)",
        home.secrets_file().display()
    );
    let _ = writeln!(
        s,
        "  2. Check provider.base_url and provider.model in {} (default: OpenRouter). A local http:// server (Ollama, llama.cpp) needs no key.",
        home.config_file().display()
    );
    let _ = writeln!(
        s,
        "  3. Chat: yoctoclaw agent   (one turn: yoctoclaw agent -m \"hello\")"
    );
    let _ = writeln!(
        s,
        "  4. Telegram: set telegram.enabled and telegram.allow_from, export TELEGRAM_BOT_TOKEN=..., then run yoctoclaw gateway"
    );
    let _ = write!(s, "  5. Check everything: yoctoclaw doctor");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Config, Env};

    #[test]
    fn each_board_pinout_is_a_skill_and_unknown_boards_list_the_known() {
        for (name, text) in BOARDS {
            assert_eq!(board_skill(name), Ok(*text));
            assert!(
                text.starts_with("---\nname: pinout\ndescription: "),
                "{name}"
            );
            assert!(text.contains("\n---\n# "), "{name}");
            assert!(
                text.contains("Source"),
                "{name}: say where the facts come from"
            );
            assert!(text.len() < 4096, "{name}: the skills index reads 4 KiB");
        }
        let e = board_skill("rpi5").unwrap_err();
        assert!(e.contains("\"rpi5\""), "{e}");
        for (name, _) in BOARDS {
            assert!(e.contains(name), "{e}");
        }
        let d = std::env::temp_dir().join(format!("yc-onboard-board-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        let home = Home { dir: d.clone() };
        let r = run(&home, false, Some(BOARDS[0].1)).unwrap();
        let skill = home.workspace().join("skills/pinout/SKILL.md");
        assert!(r.created.contains(&skill));
        assert_eq!(std::fs::read_to_string(&skill).unwrap(), BOARDS[0].1);
        let r = run(&home, false, Some(BOARDS[1].1)).unwrap();
        assert!(r.kept.contains(&skill));
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn template_is_exactly_the_defaults() {
        let cfg = crate::config::parse(
            Some(CONFIG_TEMPLATE),
            std::path::Path::new("config.json"),
            &Env::isolated(&[]),
        )
        .unwrap();
        assert_eq!(cfg, Config::default());
    }
}
