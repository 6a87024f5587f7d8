//! Unit tests of the plan: provider names, instants, secrets, allowlists, fallbacks, and
//! peer homes in the shapes the fixtures of `tests/migrate_cli.rs` do not cover.

use super::*;

#[test]
fn provider_names_map_to_kinds_and_base_urls() {
    let ok = |n: &str, url: Option<&str>| {
        let (a, _, base) = resolve_provider(n, url, false).unwrap();
        (a, base)
    };
    assert_eq!(
        ok("openrouter", None),
        (false, "https://openrouter.ai/api/v1".into())
    );
    assert_eq!(
        ok("Anthropic", Some("https://api.anthropic.com/v1/")),
        (true, crate::config::ANTHROPIC_BASE_URL.into())
    );
    assert!(ok("anthropic", None) == (true, crate::config::ANTHROPIC_BASE_URL.into()));
    assert!(ok("anthropic-messages", None).0);
    assert_eq!(
        ok("google", None).1,
        "https://generativelanguage.googleapis.com/v1beta/openai"
    );
    assert_eq!(ok("zhipu", None).1, "https://api.z.ai/api/paas/v4");
    assert_eq!(
        resolve_provider("Zhipu", None, false).unwrap().1,
        "zai",
        "an alias takes the provider's own name"
    );
    assert_eq!(
        ok("ollama", Some("http://127.0.0.1:11434")).1,
        "http://127.0.0.1:11434/v1"
    );
    assert_eq!(
        ok("openai", Some("https://api.openai.com")).1,
        "https://api.openai.com/v1"
    );
    assert_eq!(
        ok("custom", Some("https://llm.lan:8443/v1")),
        (false, "https://llm.lan:8443/v1".into())
    );
    assert_eq!(
        resolve_provider("anthropic", Some("https://api.z.ai/api/anthropic"), false),
        Ok((
            true,
            "anthropic".into(),
            "https://api.z.ai/api/anthropic".into()
        ))
    );
    assert_eq!(
        ok("myproxy", Some("http://10.0.0.2:4000/v1")).1,
        "http://10.0.0.2:4000/v1"
    );
    assert!(
        resolve_provider("bedrock", None, false)
            .unwrap_err()
            .contains("\"bedrock\"")
    );
    assert!(resolve_provider("x", Some("ftp://x"), false).is_err());
    // Every line of the table is a URL and at least one name.
    for line in PROVIDERS.lines() {
        let w: Vec<&str> = line.split(' ').collect();
        assert!(w.len() >= 2 && w[0].starts_with("http"), "{line}");
        assert_eq!(resolve_provider(w[1], None, false).unwrap().1, w[1]);
    }
}

#[test]
fn instants_parse_in_the_peers_formats() {
    assert_eq!(parse_instant("1970-01-02T00:00:00Z"), Some(86_400));
    assert_eq!(parse_instant("2026-03-01 10:00:00"), Some(1_772_359_200));
    assert_eq!(
        parse_instant("2026-03-01T12:00:00.123+02:00"),
        Some(1_772_359_200)
    );
    assert_eq!(parse_instant("2026-03-01T05:30-04:30"), Some(1_772_359_200));
    assert_eq!(parse_instant("2026-03-01T10:00"), Some(1_772_359_200));
    for bad in [
        "",
        "2026-13-01T00:00",
        "yesterday",
        "2026-03-01T10:00:00Q",
        "2026-03-01",
        "2026-03-01T10:00+2",
        "2026-03-01T10:00é",
    ] {
        assert_eq!(parse_instant(bad), None, "{bad}");
    }
    assert_eq!(
        time_value(&Value::Number(Number::U64(1_772_359_200_000))),
        Some(1_772_359_200)
    );
}

#[test]
fn secrets_are_checked_and_never_shown() {
    let mut p = Plan::new(Peer::OpenClaw);
    p.env.push(("OR_KEY".into(), "sk-test-or".into()));
    assert!(p.secret("A_KEY", "${OR_KEY}"));
    assert!(!p.secret("B_KEY", "${MISSING}"));
    assert!(!p.secret("C_KEY", "enc2:abcdef"));
    assert!(!p.secret("D_KEY", "two words"));
    assert!(p.secret("A_KEY", "sk-test-or"));
    assert!(!p.secret("A_KEY", "sk-test-other"));
    assert_eq!(p.secrets.len(), 1);
    assert_eq!(p.skipped.len(), 4);
    assert!(p.skipped[0].1.contains("MISSING"));
    let shown = format!("{p:?}");
    assert!(!shown.contains("sk-test-or\"") && shown.contains("Secret(A_KEY)"));
}

#[test]
fn allowlists_are_normalised() {
    let mut p = Plan::new(Peer::OpenClaw);
    let v =
        crate::json::parse_value(r#"["123", 456, "tg:789", "@ada", "bob_x", "*", "a b", "123"]"#)
            .unwrap();
    p.allow(Some(&v));
    let t = p.telegram.as_ref().unwrap();
    assert_eq!(t.allow_from, ["123", "456", "789", "@ada", "@bob_x"]);
    assert_eq!(p.skipped.len(), 2);
}

#[test]
fn fallbacks_share_a_service_key_and_are_bounded() {
    let mut p = Plan::new(Peer::NullClaw);
    p.provider("openrouter", "a/b", None, false, Some("sk-test-1"));
    p.provider("openrouter", "c/d", None, false, None);
    p.provider("groq", "llama", None, false, Some("gsk-test"));
    p.provider("openrouter", "a/b", None, false, None);
    for i in 0..6 {
        p.provider("ollama", &format!("m{i}"), None, false, None);
    }
    let envs: Vec<&str> = p.providers.iter().map(|p| p.key_env.as_str()).collect();
    assert_eq!(
        envs[..4],
        [
            "YOCTOCLAW_API_KEY",
            "YOCTOCLAW_API_KEY",
            "GROQ_API_KEY",
            "OLLAMA_API_KEY"
        ]
    );
    assert_eq!(p.providers.len(), 1 + MAX_FALLBACKS);
    assert_eq!(p.secrets.len(), 2);
}

/// A peer home holding `files`, removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new(tag: &str, files: &[(&str, &str)]) -> Dir {
        let d = std::env::temp_dir().join(format!("yc-migrate-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        for (rel, text) in files {
            let p = d.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        Dir(d)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn names(p: &Plan) -> Vec<&str> {
    p.secrets.iter().map(|s| s.name.as_str()).collect()
}

fn skipped<'a>(p: &'a Plan, what: &str) -> Option<&'a str> {
    p.skipped
        .iter()
        .find(|(_, s)| s.starts_with(what))
        .map(|(_, s)| s.as_str())
}

#[test]
fn old_config_shapes_are_named_not_read() {
    let d = Dir::new(
        "zc1",
        &[(
            "config.toml",
            "api_key = \"sk-test-zc1\"\ndefault_provider = \"openrouter\"\ndefault_model = \"qwen3\"\n",
        )],
    );
    let p = plan(Peer::ZeroClaw, &d.0).unwrap();
    assert!(p.providers.is_empty() && p.secrets.is_empty());
    assert!(skipped(&p, "config.toml: an old config shape").is_some());
    let d = Dir::new(
        "pc0",
        &[(
            "config.json",
            r#"{"agents": {"defaults": {"model": "glm-4.7", "provider": "zhipu"}},
                "providers": {"zhipu": {"api_key": "sk-test-zhipu"}}}"#,
        )],
    );
    let p = plan(Peer::PicoClaw, &d.0).unwrap();
    assert!(p.providers.is_empty() && p.secrets.is_empty());
    assert!(skipped(&p, "config.json: an old config shape").is_some());
}

#[test]
fn picoclaw_encrypted_token_keeps_the_channel_off() {
    let d = Dir::new(
        "pc-enc",
        &[
            (
                "config.json",
                r#"{"agents": {"defaults": {"model_name": "glm"}},
                    "model_list": [{"model_name": "glm", "model": "zhipu/glm-4.7", "api_key": "sk-test-zhipu"}],
                    "channels": {"telegram": {"enabled": true, "token": "2:TEST", "allow_from": ["42"]}}}"#,
            ),
            (
                ".security.yml",
                "channels:\n  telegram:\n    token: \"enc://AAAA\"\n",
            ),
        ],
    );
    let p = plan(Peer::PicoClaw, &d.0).unwrap();
    let pr = &p.providers[0];
    assert_eq!(pr.base_url, "https://api.z.ai/api/paas/v4");
    assert_eq!(pr.model, "glm-4.7");
    assert_eq!(names(&p), ["YOCTOCLAW_API_KEY"]);
    // The encrypted token is reported, and the channel stays off without it.
    assert!(skipped(&p, "TELEGRAM_BOT_TOKEN").is_some_and(|s| s.contains("encrypted")));
    let t = p.telegram.as_ref().unwrap();
    assert!(!t.enabled);
    assert_eq!(t.allow_from, ["42"]);
}

#[test]
fn nullclaw_flat_telegram_and_a_config_outside_the_home() {
    let d = Dir::new(
        "nc",
        &[(
            "config.json",
            r#"{"workspace": "/etc", "agents": {"defaults": {"model": {"primary": "ollama/llama3.2"}}},
                "channels": {"telegram": {"bot_token": "3:TEST", "allow_from": ["7"]}}}"#,
        )],
    );
    let p = plan(Peer::NullClaw, &d.0).unwrap();
    assert_eq!(p.providers[0].base_url, "http://127.0.0.1:11434/v1");
    assert_eq!(names(&p), ["TELEGRAM_BOT_TOKEN"]);
    assert!(p.files.is_empty());
    // `/etc` is not below the home: nothing is read from it.
    assert!(
        skipped(&p, "/etc").is_some_and(|s| s.contains("outside")),
        "{:?}",
        p.skipped
    );
}
