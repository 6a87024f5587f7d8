use super::*;
use std::path::Path;

fn parse_str(text: &str) -> Result<Config, ConfigError> {
    parse(Some(text), Path::new("/h/config.json"), &Env::isolated(&[]))
}

#[test]
fn missing_file_and_empty_object_give_defaults() {
    let d = parse(None, Path::new("x"), &Env::isolated(&[])).unwrap();
    assert_eq!(d, Config::default());
    assert_eq!(parse_str("{}").unwrap(), Config::default());
    assert_eq!(parse_str("  \n").unwrap(), Config::default());
}

#[test]
fn keys_are_read() {
    let c = parse_str(
        r#"{"provider":{"kind":"anthropic","base_url":"https://api.anthropic.com/","model":"claude","max_tokens":99},
            "telegram":{"enabled":true,"allow_from":["@ada", 12345]},
            "agent":{"autonomy":"full","timezone":"Europe/Berlin"},
            "fallbacks":[{"model":"backup"}],
            "log_level":"debug"}"#,
    )
    .unwrap();
    assert_eq!(c.provider.kind, ProviderKind::Anthropic);
    assert_eq!(c.provider.base_url, "https://api.anthropic.com");
    assert_eq!(c.provider.max_tokens, 99);
    assert_eq!(c.telegram.allow_from, vec!["@ada", "12345"]);
    assert_eq!(c.agent.autonomy, Autonomy::Full);
    assert_eq!(c.fallbacks.len(), 1);
    // Fallbacks inherit unspecified keys from the primary.
    assert_eq!(c.fallbacks[0].base_url, "https://api.anthropic.com");
    assert_eq!(c.fallbacks[0].model, "backup");
    assert_eq!(c.log_level, "debug");
}

#[test]
fn a_kind_without_base_url_defaults_to_its_service() {
    let c = parse_str(
        r#"{"provider":{"kind":"anthropic","model":"claude"},
            "fallbacks":[{"model":"b"},{"kind":"openai","model":"c"}]}"#,
    )
    .unwrap();
    assert_eq!(c.provider.base_url, "https://api.anthropic.com");
    assert_eq!(c.fallbacks[0].base_url, "https://api.anthropic.com");
    assert_eq!(c.fallbacks[1].base_url, "https://openrouter.ai/api/v1");
}

#[test]
fn unknown_keys_are_named() {
    let e = parse_str(r#"{"provider":{"modle":"x"}}"#).unwrap_err();
    assert_eq!(
        e.to_string(),
        "unknown config key \"provider.modle\": check its spelling (see README, Configuration)"
    );
    let e = parse_str(r#"{"telegarm":{}}"#).unwrap_err();
    assert!(e.to_string().contains("\"telegarm\""));
    let e = parse_str(r#"{"tools":{"exec":{"timeout":5}}}"#).unwrap_err();
    assert!(e.to_string().contains("\"tools.exec.timeout\""));
    let e = parse_str(r#"{"fallbacks":[{"model":"a","kindd":"openai"}]}"#).unwrap_err();
    assert!(e.to_string().contains("fallbacks[0].kindd"));
    // Comment keys are allowed.
    assert!(parse_str(r#"{"//":"note","provider":{"//":"x"}}"#).is_ok());
}

#[test]
fn malformed_json_names_file_line_and_column() {
    let e = parse_str("{\n  \"provider\": {\n    \"model\": \"x\",\n  }\n}").unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("/h/config.json"), "{msg}");
    assert!(msg.contains("line 4, column 3"), "{msg}");
}

#[test]
fn wrong_types_name_the_key() {
    let e = parse_str(r#"{"provider":{"max_tokens":"lots"}}"#).unwrap_err();
    assert_eq!(
        e.to_string(),
        "config key \"provider.max_tokens\" must be a whole number"
    );
    let e = parse_str(r#"{"agent":{"autonomy":"yolo"}}"#).unwrap_err();
    assert!(e.to_string().contains("read_only, supervised, full"));
    let e = parse_str(r#"{"provider":{"base_url":"ftp://x"}}"#).unwrap_err();
    assert!(e.to_string().contains("provider.base_url"));
    let e = parse_str(r#"{"heartbeat":{"deliver_to":"email:me"}}"#).unwrap_err();
    assert!(e.to_string().contains("heartbeat.deliver_to"));
    assert!(parse_str("[]").is_err());
    assert!(parse_str(r#"{"provider":[]}"#).is_err());
}

#[test]
fn values_are_clamped() {
    let c =
        parse_str(r#"{"heartbeat":{"interval_mins":1},"agent":{"max_sessions":100000}}"#).unwrap();
    assert_eq!(c.heartbeat.interval_mins, 5);
    assert_eq!(c.agent.max_sessions, 256);
}

#[test]
fn env_overrides_file_values() {
    let env = Env::isolated(&[
        ("YOCTOCLAW_PROVIDER_MODEL", "env-model"),
        ("YOCTOCLAW_TELEGRAM_API_BASE", "http://127.0.0.1:9/"),
        ("YOCTOCLAW_TELEGRAM_ALLOW_FROM", "1, @bob"),
        ("YOCTOCLAW_TOOLS_EXEC_TIMEOUT_SECS", "7"),
        ("YOCTOCLAW_LOG_LEVEL", "warn"),
        ("YOCTOCLAW_HEARTBEAT_ENABLED", "false"),
    ]);
    let c = parse(
        Some(r#"{"provider":{"model":"file-model"}}"#),
        Path::new("c"),
        &env,
    )
    .unwrap();
    assert_eq!(c.provider.model, "env-model");
    assert_eq!(c.telegram.api_base, "http://127.0.0.1:9");
    assert_eq!(c.telegram.allow_from, vec!["1", "@bob"]);
    assert_eq!(c.tools.exec.timeout_secs, 7);
    assert_eq!(c.log_level, "warn");
    assert!(!c.heartbeat.enabled);
    let bad = Env::isolated(&[("YOCTOCLAW_AGENT_MAX_SESSIONS", "many")]);
    assert!(parse(None, Path::new("c"), &bad).is_err());
}

#[test]
fn secrets_file_lines() {
    let m = env::parse_secrets("# comment\nexport A=1\nB = \"two words\"\n\nC='x=y'\n").unwrap();
    assert_eq!(m["A"], "1");
    assert_eq!(m["B"], "two words");
    assert_eq!(m["C"], "x=y");
    assert_eq!(env::parse_secrets("ok=1\nnot a line\n"), Err(2));
    assert_eq!(env::parse_secrets("bad-key=1"), Err(1));
}

#[cfg(unix)]
#[test]
fn secrets_file_must_be_private() {
    use std::os::unix::fs::PermissionsExt;
    let d = std::env::temp_dir().join(format!("yc-secrets-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&d);
    let p = d.join("secrets.env");
    std::fs::write(&p, "K=v\n").unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
    let e = load_secrets_file(&p).unwrap_err();
    assert!(e.to_string().contains("chmod 600"), "{e}");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert_eq!(load_secrets_file(&p).unwrap()["K"], "v");
    assert!(load_secrets_file(&d.join("absent")).unwrap().is_empty());
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn env_prefers_process_then_file_and_hides_values_in_debug() {
    let mut file = std::collections::BTreeMap::new();
    file.insert(
        "YC_TEST_ONLY_IN_FILE".to_string(),
        "from-file-secret".to_string(),
    );
    let e = Env::new(file);
    assert_eq!(
        e.get("YC_TEST_ONLY_IN_FILE").as_deref(),
        Some("from-file-secret")
    );
    assert!(!format!("{e:?}").contains("from-file-secret"));
}

#[test]
fn random_config_text_never_panics() {
    let alphabet: Vec<char> = "{}[]\":,0123 abtruefalsnul\\provider model telegram agent\n"
        .chars()
        .collect();
    let mut x = crate::testkit::XorShift(0x9E3779B97F4A7C15);
    for _ in 0..5000 {
        let mut s = String::new();
        for _ in 0..x.below(48) {
            s.push(alphabet[x.index(alphabet.len())]);
        }
        // Properties: an error is one line of text that says what is wrong, never a
        // dump; a text that parses gives a config whose values are in their ranges.
        match parse_str(&s) {
            Err(e) => {
                let m = e.to_string();
                assert!(!m.is_empty() && !m.contains('\n'), "{s:?} -> {m:?}");
                assert!(m.len() < 600, "{m}");
            }
            Ok(c) => {
                assert!(c.agent.max_tool_iterations >= 1, "{s:?}");
                assert!(c.provider.timeout_secs >= 5, "{s:?}");
            }
        }
    }
}

#[test]
fn an_unknown_timezone_is_a_config_error() {
    let e = parse_str(r#"{"agent":{"timezone":"Mars/Olympus_Mons"}}"#).unwrap_err();
    assert!(e.to_string().contains("agent.timezone"), "{e}");
    assert!(parse_str(r#"{"agent":{"timezone":"+05:30"}}"#).is_ok());
    assert!(parse_str(r#"{"agent":{"timezone":"UTC"}}"#).is_ok());
}
