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
fn zeroclaw_schema_1_is_named_not_read() {
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
}

/// PicoClaw's `config.json` of the older shape (without `model_list`) read into a plan.
fn picoclaw_v0(tag: &str, config: &str) -> Plan {
    let d = Dir::new(tag, &[("config.json", config)]);
    plan(Peer::PicoClaw, &d.0).unwrap()
}

fn setting<'a>(p: &'a Plan, key: &str) -> Option<&'a str> {
    p.settings
        .iter()
        .find(|s| s.key == key)
        .map(|s| s.value.as_str())
}

fn secret<'a>(p: &'a Plan, name: &str) -> Option<&'a str> {
    p.secrets
        .iter()
        .find(|s| s.name == name)
        .map(|s| s.value.as_str())
}

/// PicoClaw's first `config.example.json` (commit e17693b1, 2026-02-04), verbatim, then
/// with the Zhipu key and the bot token filled in as its README said to.
#[test]
fn picoclaw_first_example_config_brings_zhipu_once_its_key_is_there() {
    let example = include_str!("../../tests/fixtures/picoclaw-v0/config.example.e17693b1.json");
    // As shipped: every key is a placeholder, so no provider and no secret.
    let p = picoclaw_v0("pc-v0-first-raw", example);
    assert!(p.providers.is_empty() && p.secrets.is_empty(), "{p:?}");
    assert!(
        skipped(&p, "agents.defaults.model glm-4.7").is_some_and(|s| s.contains("no provider")),
        "{:?}",
        p.skipped
    );
    assert!(skipped(&p, "TELEGRAM_BOT_TOKEN").is_some_and(|s| s.contains("placeholder")));
    assert!(skipped(&p, "YOUR_USER_ID").is_some_and(|s| s.contains("placeholder")));
    assert_eq!(p.telegram.as_ref().map(|t| t.allow_from.len()), Some(0));

    let filled = example
        .replace("YOUR_ZHIPU_API_KEY", "sk-test-zhipu-first")
        .replace("YOUR_TELEGRAM_BOT_TOKEN", "4242:TEST-first-token")
        .replace("YOUR_USER_ID", "424242")
        .replace(
            "\"enabled\": false,\n      \"token\": \"4242",
            "\"enabled\": true,\n      \"token\": \"4242",
        );
    let p = picoclaw_v0("pc-v0-first", &filled);
    assert_eq!(p.providers.len(), 1, "{p:?}");
    let pr = &p.providers[0];
    assert!(!pr.anthropic);
    // PicoClaw's Zhipu endpoint (mainland), not Z.ai's.
    assert_eq!(pr.base_url, "https://open.bigmodel.cn/api/paas/v4");
    assert_eq!(pr.model, "glm-4.7");
    assert_eq!(pr.from, "zhipu");
    assert_eq!(secret(&p, "YOCTOCLAW_API_KEY"), Some("sk-test-zhipu-first"));
    assert_eq!(
        secret(&p, "TELEGRAM_BOT_TOKEN"),
        Some("4242:TEST-first-token")
    );
    let t = p.telegram.as_ref().unwrap();
    assert!(t.enabled);
    assert_eq!(t.allow_from, ["424242"]);
    // The placeholders of the keys not filled in are not keys: no transcription, no
    // line for OpenRouter's or Groq's.
    assert_eq!(names(&p), ["YOCTOCLAW_API_KEY", "TELEGRAM_BOT_TOKEN"]);
    assert!(skipped(&p, "providers.").is_none(), "{:?}", p.skipped);
    assert_eq!(setting(&p, "provider.max_tokens"), Some("8192"));
    assert_eq!(setting(&p, "agent.max_tool_iterations"), Some("20"));
    assert!(skipped(&p, "agents.defaults.temperature").is_some());
}

/// `config/config.example.json` as PicoClaw had it the day `model_list` came (commit
/// 5d1669ec, 2026-02-18), verbatim: placeholders everywhere, so nothing to call; then with
/// the keys a Moonshot user fills in.
#[test]
fn picoclaw_last_providers_example_config() {
    let example = include_str!("../../tests/fixtures/picoclaw-v0/config.example.5d1669ec.json");
    let p = picoclaw_v0("pc-v0-last-raw", example);
    assert!(p.providers.is_empty() && p.secrets.is_empty(), "{p:?}");
    assert!(skipped(&p, "agents.defaults.model glm-4.7").is_some());

    let filled = example
        .replace("\"glm-4.7\"", "\"kimi-k2.5\"")
        .replace(
            "\"sk-xxx\",\n      \"api_base\": \"\"\n    },\n    \"qwen\"",
            "\"sk-test-moonshot\",\n      \"api_base\": \"\"\n    },\n    \"qwen\"",
        )
        .replace("\"gsk_xxx\"", "\"gsk-test-groq\"");
    let p = picoclaw_v0("pc-v0-last", &filled);
    assert_eq!(p.providers.len(), 1, "{p:?}");
    assert_eq!(p.providers[0].base_url, "https://api.moonshot.cn/v1");
    assert_eq!(p.providers[0].model, "kimi-k2.5");
    assert_eq!(secret(&p, "YOCTOCLAW_API_KEY"), Some("sk-test-moonshot"));
    // Groq's key transcribed voice notes in PicoClaw: it does here too.
    assert_eq!(
        secret(&p, "YOCTOCLAW_TRANSCRIPTION_API_KEY"),
        Some("gsk-test-groq")
    );
    assert_eq!(
        setting(&p, "transcription.base_url"),
        Some("\"https://api.groq.com/openai/v1\"")
    );
    assert_eq!(
        setting(&p, "transcription.model"),
        Some("\"whisper-large-v3\"")
    );
    // Heartbeat 30 minutes on is yoctoclaw's default: no setting for it.
    assert_eq!(setting(&p, "heartbeat.enabled"), None);
    assert_eq!(setting(&p, "heartbeat.interval_mins"), None);
}

/// The README's Zhipu section (and its "Migration from Legacy `providers` Config" one, at
/// commit d5c2bc53, 2026-03-15), the user's key in place of "your-key".
#[test]
fn picoclaw_readme_zhipu_config_with_a_named_provider() {
    let p = picoclaw_v0(
        "pc-v0-zhipu",
        r#"{
  "providers": {
    "zhipu": {
      "api_key": "sk-test-zhipu-readme",
      "api_base": "https://open.bigmodel.cn/api/paas/v4"
    }
  },
  "agents": {
    "defaults": {
      "provider": "zhipu",
      "model": "glm-4.7"
    }
  }
}"#,
    );
    let pr = &p.providers[0];
    assert_eq!(
        (pr.base_url.as_str(), pr.model.as_str()),
        ("https://open.bigmodel.cn/api/paas/v4", "glm-4.7")
    );
    assert_eq!(names(&p), ["YOCTOCLAW_API_KEY"]);
    assert!(p.telegram.is_none() && p.settings.is_empty());
}

#[test]
fn picoclaw_v0_provider_choice_follows_picoclaw() {
    let pick = |tag: &str, config: &str| {
        let p = picoclaw_v0(tag, config);
        let pr = p.providers.first().map(|pr| {
            (
                pr.from.clone(),
                pr.anthropic,
                pr.base_url.clone(),
                pr.model.clone(),
            )
        });
        (pr, p)
    };
    // A vendor/model name goes to OpenRouter as it is, even with an Anthropic key there.
    let (pr, p) = pick(
        "pc-v0-or",
        r#"{"agents":{"defaults":{"model":"anthropic/claude-sonnet-4"}},
            "providers":{"openrouter":{"api_key":"sk-or-test-1","api_base":""},"anthropic":{"api_key":"sk-ant-test-1"}}}"#,
    );
    let pr = pr.unwrap();
    assert_eq!(
        (pr.0.as_str(), pr.2.as_str(), pr.3.as_str()),
        (
            "openrouter",
            "https://openrouter.ai/api/v1",
            "anthropic/claude-sonnet-4"
        )
    );
    assert!(
        skipped(&p, "providers.anthropic").is_some_and(|s| s.contains("does not use")),
        "{:?}",
        p.skipped
    );
    // Without an OpenRouter key, a Claude model goes to Anthropic (Messages API).
    let (pr, _) = pick(
        "pc-v0-ant",
        r#"{"agents":{"defaults":{"model":"anthropic/claude-sonnet-4"}},
            "providers":{"openrouter":{"api_key":"sk-or-v1-xxx"},"anthropic":{"api_key":"sk-ant-test-2","api_base":""}}}"#,
    );
    let pr = pr.unwrap();
    assert!(pr.1);
    assert_eq!(
        (pr.2.as_str(), pr.3.as_str()),
        (crate::config::ANTHROPIC_BASE_URL, "claude-sonnet-4")
    );
    // A named provider wins when it has a key; PicoClaw forced DeepSeek's model name.
    let (pr, _) = pick(
        "pc-v0-ds",
        r#"{"agents":{"defaults":{"provider":"deepseek","model":"glm-4.7"}},
            "providers":{"deepseek":{"api_key":"sk-test-ds"},"zhipu":{"api_key":"sk-test-z"}}}"#,
    );
    let pr = pr.unwrap();
    assert_eq!(
        (pr.2.as_str(), pr.3.as_str()),
        ("https://api.deepseek.com/v1", "deepseek-chat")
    );
    // A named provider without its key: the model's name decides, as in PicoClaw.
    let (pr, _) = pick(
        "pc-v0-fall",
        r#"{"agents":{"defaults":{"provider":"openai","model":"glm-4.7"}},
            "providers":{"openai":{"api_key":""},"zhipu":{"api_key":"sk-test-z2"}}}"#,
    );
    assert_eq!(pr.unwrap().0, "zhipu");
    // A local Ollama needs no key; the prefix PicoClaw dropped is dropped.
    let (pr, p) = pick(
        "pc-v0-ollama",
        r#"{"agents":{"defaults":{"provider":"ollama","model":"ollama/qwen2.5:3b"}},
            "providers":{"ollama":{"api_key":"","api_base":"http://localhost:11434/v1"}}}"#,
    );
    let pr = pr.unwrap();
    assert_eq!(
        (pr.2.as_str(), pr.3.as_str()),
        ("http://localhost:11434/v1", "qwen2.5:3b")
    );
    assert!(p.secrets.is_empty());
    // vLLM with a URL takes any model PicoClaw's name rules did not place.
    let (pr, _) = pick(
        "pc-v0-vllm",
        r#"{"agents":{"defaults":{"model":"my-local-7b"}},
            "providers":{"vllm":{"api_key":"","api_base":"http://10.0.0.5:8000/v1"},"openrouter":{"api_key":"sk-or-test-3"}}}"#,
    );
    assert_eq!(pr.unwrap().2, "http://10.0.0.5:8000/v1");
    // Gemini's native root becomes its OpenAI-compatible one.
    let (pr, _) = pick(
        "pc-v0-gem",
        r#"{"agents":{"defaults":{"model":"gemini-2.5-flash"}},
            "providers":{"gemini":{"api_key":"AIza-test","api_base":"https://generativelanguage.googleapis.com/v1beta"}}}"#,
    );
    assert_eq!(
        pr.unwrap().2,
        "https://generativelanguage.googleapis.com/v1beta/openai"
    );
    // Sign-in providers cannot come, and nothing else is tried (PicoClaw did not either).
    for (tag, cfg) in [
        (
            "pc-v0-cli",
            r#"{"agents":{"defaults":{"provider":"claude-cli","model":"claude-sonnet-4"}},"providers":{"openrouter":{"api_key":"sk-or-test-4"}}}"#,
        ),
        (
            "pc-v0-oauth",
            r#"{"agents":{"defaults":{"provider":"anthropic","model":"claude-sonnet-4"}},"providers":{"anthropic":{"auth_method":"oauth"},"openrouter":{"api_key":"sk-or-test-5"}}}"#,
        ),
    ] {
        let (pr, p) = pick(tag, cfg);
        assert!(pr.is_none(), "{tag}: {pr:?}");
        assert!(
            p.skipped.iter().any(|(_, s)| s.contains("signs in")),
            "{tag}: {:?}",
            p.skipped
        );
    }
    // A proxy is named, not brought.
    let (_, p) = pick(
        "pc-v0-proxy",
        r#"{"agents":{"defaults":{"model":"nvidia/meta/llama-3.1-8b-instruct"}},
            "providers":{"nvidia":{"api_key":"nvapi-test","proxy":"http://127.0.0.1:7890"}}}"#,
    );
    assert_eq!(p.providers[0].model, "meta/llama-3.1-8b-instruct");
    assert_eq!(
        p.providers[0].base_url,
        "https://integrate.api.nvidia.com/v1"
    );
    assert!(skipped(&p, "providers.nvidia.proxy").is_some());
}

#[test]
fn picoclaw_v0_telegram_allowlists() {
    // Numbers, PicoClaw's `id|username` entries, @names; a proxy is named.
    let p = picoclaw_v0(
        "pc-v0-tg",
        r#"{"agents":{"defaults":{"model":"glm-4.7"}},"providers":{"zhipu":{"api_key":"sk-test-z3"}},
            "channels":{"telegram":{"enabled":true,"token":"5:TEST-tg","proxy":"socks5://127.0.0.1:1080",
            "allow_from":[123456789,"987654321|alice","@bob","carol"]}}}"#,
    );
    let t = p.telegram.as_ref().unwrap();
    assert!(t.enabled);
    assert_eq!(t.allow_from, ["123456789", "987654321", "@bob", "@carol"]);
    assert!(skipped(&p, "channels.telegram.proxy").is_some());
    // The README's Telegram section wrote `allowFrom`: the ids the owner meant come.
    let p = picoclaw_v0(
        "pc-v0-camel",
        r#"{"channels":{"telegram":{"enabled":true,"token":"6:TEST-tg","allowFrom":["24680"]}}}"#,
    );
    assert_eq!(p.telegram.as_ref().unwrap().allow_from, ["24680"]);
    // An empty allowlist: PicoClaw answered everyone; yoctoclaw keeps denying by default
    // and says so.
    let p = picoclaw_v0(
        "pc-v0-empty",
        r#"{"channels":{"telegram":{"enabled":true,"token":"7:TEST-tg","allow_from":[]}}}"#,
    );
    let t = p.telegram.as_ref().unwrap();
    assert!(t.enabled && t.allow_from.is_empty());
    assert!(
        skipped(&p, "allow_from []").is_some_and(|s| s.contains("answers nobody")),
        "{:?}",
        p.skipped
    );
}

/// Both shapes in one config: `model_list` wins, as PicoClaw converts `providers` only
/// for a config without it.
#[test]
fn picoclaw_model_list_wins_over_providers() {
    let p = picoclaw_v0(
        "pc-both",
        r#"{"agents":{"defaults":{"model_name":"glm","provider":"openrouter","model":"anthropic/claude-sonnet-4"}},
            "model_list":[{"model_name":"glm","model":"zhipu/glm-4.7","api_key":"sk-test-zl"}],
            "providers":{"openrouter":{"api_key":"sk-or-test-both"}}}"#,
    );
    assert_eq!(p.providers.len(), 1, "{p:?}");
    assert_eq!(p.providers[0].model, "glm-4.7");
    assert_eq!(
        p.providers[0].base_url,
        "https://open.bigmodel.cn/api/paas/v4"
    );
    assert_eq!(secret(&p, "YOCTOCLAW_API_KEY"), Some("sk-test-zl"));
    assert!(
        skipped(&p, "providers: not read: model_list").is_some(),
        "{:?}",
        p.skipped
    );
    // An empty model_list holds nothing to use: providers are read.
    let p = picoclaw_v0(
        "pc-both-empty",
        r#"{"model_list":[],"agents":{"defaults":{"model":"anthropic/claude-sonnet-4"}},
            "providers":{"openrouter":{"api_key":"sk-or-test-both2"}}}"#,
    );
    assert_eq!(p.providers[0].from, "openrouter");
}

#[test]
fn picoclaw_settings_keep_within_yoctoclaws_bounds() {
    let p = picoclaw_v0(
        "pc-v0-set",
        r#"{"agents":{"defaults":{"model":"glm-4.7","max_tokens":4096,"max_tool_iterations":200,
            "restrict_to_workspace":false,"temperature":0.2}},
            "providers":{"zhipu":{"api_key":"sk-test-z4"}},
            "heartbeat":{"enabled":false,"interval":2}}"#,
    );
    assert_eq!(setting(&p, "provider.max_tokens"), Some("4096"));
    assert_eq!(setting(&p, "agent.max_tool_iterations"), Some("50"));
    assert_eq!(setting(&p, "heartbeat.enabled"), Some("false"));
    assert_eq!(setting(&p, "heartbeat.interval_mins"), Some("5"));
    let s = p
        .settings
        .iter()
        .find(|s| s.key == "agent.max_tool_iterations")
        .unwrap();
    assert!(
        s.from.contains("200, within yoctoclaw's bounds"),
        "{}",
        s.from
    );
    assert!(skipped(&p, "agents.defaults.restrict_to_workspace false").is_some());
    assert!(skipped(&p, "agents.defaults.temperature").is_some());
    // The config they make loads, with those values.
    let text = apply::config_text(&p, None);
    let c = crate::config::parse(
        Some(&text),
        Path::new("c.json"),
        &crate::config::Env::isolated(&[]),
    )
    .unwrap();
    assert_eq!(c.provider.max_tokens, 4096);
    assert_eq!(c.agent.max_tool_iterations, 50);
    assert!(!c.heartbeat.enabled);
    assert!(c.agent.restrict_to_workspace);
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
    // PicoClaw's `zhipu` protocol is the mainland endpoint.
    assert_eq!(pr.base_url, "https://open.bigmodel.cn/api/paas/v4");
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
