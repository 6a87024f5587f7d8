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

#[test]
fn update_keys_are_read_with_their_defaults_and_bounds() {
    let d = Config::default().update;
    assert_eq!(
        (d.url.as_str(), d.public_key.as_str(), d.confirm_secs),
        ("", "", 120)
    );
    let c = parse_str(
        r#"{"update":{"url":"https://r.test/index.json","public_key":"RWQ","confirm_secs":30}}"#,
    )
    .unwrap();
    assert_eq!(c.update.url, "https://r.test/index.json");
    assert_eq!(c.update.public_key, "RWQ");
    assert_eq!(c.update.confirm_secs, 30);
    // Out of range: held to 1..3600, like the other numbers.
    let c = parse_str(r#"{"update":{"confirm_secs":0}}"#).unwrap();
    assert_eq!(c.update.confirm_secs, 1);
    let c = parse_str(r#"{"update":{"confirm_secs":99999}}"#).unwrap();
    assert_eq!(c.update.confirm_secs, 3600);
    let e = parse_str(r#"{"update":{"confirm_secs":"x"}}"#).unwrap_err();
    assert!(e.to_string().contains("\"update.confirm_secs\""), "{e}");
    let e = parse_str(r#"{"update":{"urll":"x"}}"#).unwrap_err();
    assert!(e.to_string().contains("\"update.urll\""), "{e}");
}

#[test]
fn tls_ca_file_is_read_and_overridden_by_the_environment() {
    assert_eq!(Config::default().tls.ca_file, "");
    let c = parse_str(r#"{"tls":{"ca_file":"ca.pem"}}"#).unwrap();
    assert_eq!(c.tls.ca_file, "ca.pem");
    let env = Env::isolated(&[("YOCTOCLAW_TLS_CA_FILE", "/etc/ssl/private-ca.pem")]);
    let c = parse(
        Some(r#"{"tls":{"ca_file":"ca.pem"}}"#),
        Path::new("x"),
        &env,
    )
    .unwrap();
    assert_eq!(c.tls.ca_file, "/etc/ssl/private-ca.pem");
    let e = parse_str(r#"{"tls":{"cafile":"x"}}"#).unwrap_err();
    assert!(e.to_string().contains("\"tls.cafile\""), "{e}");
    let e = parse_str(r#"{"tls":{"ca_file":5}}"#).unwrap_err();
    assert!(e.to_string().contains("\"tls.ca_file\""), "{e}");
}

#[test]
fn hardware_allow_is_parsed_and_a_bad_entry_is_named() {
    let c =
        parse_str(r#"{"hardware":{"allow":["gpiochip0:17,27 write","i2c-1:0x48 read"]}}"#).unwrap();
    let e = c.hardware.allow.entries();
    assert_eq!(e.len(), 2);
    assert_eq!(e[0].device, "/dev/gpiochip0");
    assert_eq!(e[0].which, vec![(17, 17), (27, 27)]);
    assert!(e[0].write && !e[1].write);
    let err = parse_str(r#"{"hardware":{"allow":["gpiochip0 read","i2c-1:0x48 maybe"]}}"#)
        .unwrap_err()
        .to_string();
    assert!(err.contains("\"hardware.allow\""), "{err}");
    assert!(
        err.contains("\"i2c-1:0x48 maybe\": mode must be read or write"),
        "{err}"
    );
    let err = parse_str(r#"{"hardware":{"allow":["/dev/../etc/shadow read"]}}"#)
        .unwrap_err()
        .to_string();
    assert!(err.contains("/dev/../etc/shadow"), "{err}");
    let err = parse_str(r#"{"hardware":{"allowed":[]}}"#).unwrap_err();
    assert!(matches!(err, ConfigError::UnknownKey(k) if k == "hardware.allowed"));
    // From the environment, entries are separated by ';' (commas list lines).
    let env = Env::isolated(&[(
        "YOCTOCLAW_HARDWARE_ALLOW",
        "gpiochip0:17,27 write; /dev/ttyUSB0 read",
    )]);
    let c = parse(Some("{}"), Path::new("c"), &env).unwrap();
    let e = c.hardware.allow.entries();
    assert_eq!(e.len(), 2);
    assert_eq!(e[0].which, vec![(17, 17), (27, 27)]);
    assert_eq!(e[1].device, "/dev/ttyUSB0");
}

#[test]
fn deny_lists_expand_groups_and_apply_per_channel() {
    use crate::chat::ChannelKind::*;
    let c = parse_str(
        r#"{"tools":{"deny":["web"],"exec":{"enabled":true}},
            "telegram":{"deny_tools":["exec","fs_write"]},
            "serial":{"deny_tools":["memory_forget"]},
            "heartbeat":{"deny_tools":["messaging","cron"]},
            "http":{"deny_tools":["hardware","system_info"]}}"#,
    )
    .unwrap();
    assert!(c.telegram.deny_tools.contains("write_file"));
    assert!(c.telegram.deny_tools.contains("edit_file"));
    assert!(!c.telegram.deny_tools.contains("read_file"));
    let by = |t, ch| c.tool_denied_by(t, ch);
    // The global list everywhere, the terminal nothing else.
    for ch in tool_rules::CHANNELS {
        assert_eq!(by("web_fetch", ch), Some("tools.deny"), "{ch:?}");
        assert_eq!(by("read_file", ch), None, "{ch:?}");
    }
    assert_eq!(by("exec", Terminal), None);
    assert_eq!(by("exec", Telegram), Some("telegram.deny_tools"));
    assert_eq!(by("exec", Serial), None);
    assert_eq!(by("exec", Heartbeat), None);
    assert_eq!(by("memory_forget", Serial), Some("serial.deny_tools"));
    assert_eq!(by("memory_forget", Telegram), None);
    assert_eq!(by("cron_list", Heartbeat), Some("heartbeat.deny_tools"));
    assert_eq!(by("send_message", Terminal), None);
    assert_eq!(by("system_info", Http), Some("http.deny_tools"));
    assert_eq!(by("system_info", Telegram), None);
    assert_eq!(by("exec", Http), None);
    // Cron jobs get every list: a job added on Telegram cannot run what Telegram cannot.
    for t in [
        "exec",
        "edit_file",
        "memory_forget",
        "send_message",
        "cron_add",
        "system_info",
    ] {
        assert!(by(t, Cron).is_some(), "{t}");
    }
    assert_eq!(by("memory_store", Cron), None);
    // The hardware tools are offered only with a hardware.allow, and can be denied.
    assert!(!c.tool_offered("gpio", Terminal));
    assert!(c.tool_offered("exec", Terminal) && !c.tool_offered("exec", Telegram));
    let hw = parse_str(
        r#"{"hardware":{"allow":["gpiochip0:17 write"]},"serial":{"deny_tools":["hardware"]}}"#,
    )
    .unwrap();
    assert!(hw.tool_offered("gpio", Terminal) && hw.tool_offered("spi", Telegram));
    assert!(!hw.tool_offered("gpio", Serial) && !hw.tool_offered("serial_port", Cron));
}

#[test]
fn exec_enabled_false_takes_exec_away_everywhere() {
    let c = parse_str(r#"{"tools":{"exec":{"enabled":false}}}"#).unwrap();
    for ch in tool_rules::CHANNELS {
        assert_eq!(c.tool_denied_by("exec", ch), Some("tools.exec.enabled"));
        assert_eq!(c.tool_denied_by("read_file", ch), None);
    }
    let env = Env::isolated(&[("YOCTOCLAW_TOOLS_EXEC_ENABLED", "off")]);
    let c = parse(Some("{}"), Path::new("c"), &env).unwrap();
    assert!(!c.tools.exec.enabled);
    assert_eq!(
        Config::default().tool_denied_by("exec", crate::chat::ChannelKind::Cron),
        None
    );
}

#[test]
fn an_unknown_tool_or_group_is_named_with_its_key() {
    for (text, key, name) in [
        (
            r#"{"tools":{"deny":["exec","shell"]}}"#,
            "tools.deny",
            "shell",
        ),
        (
            r#"{"telegram":{"deny_tools":["fs_writes"]}}"#,
            "telegram.deny_tools",
            "fs_writes",
        ),
        (r#"{"serial":{"deny_tools":[""]}}"#, "serial.deny_tools", ""),
        (
            r#"{"heartbeat":{"deny_tools":["Exec"]}}"#,
            "heartbeat.deny_tools",
            "Exec",
        ),
    ] {
        let err = parse_str(text).unwrap_err().to_string();
        assert!(err.contains(&format!("\"{key}\"")), "{err}");
        assert!(
            err.contains(&format!("\"{name}\" is none of them")),
            "{err}"
        );
        assert!(err.contains("fs_read, fs_write, exec, web"), "{err}");
    }
    let err = parse_str(r#"{"telegram":{"deny_tools":"exec"}}"#).unwrap_err();
    assert!(
        err.to_string()
            .contains("\"telegram.deny_tools\" must be a list"),
        "{err}"
    );
    let err = parse_str(r#"{"telegram":{"deny_tool":[]}}"#).unwrap_err();
    assert!(matches!(err, ConfigError::UnknownKey(k) if k == "telegram.deny_tool"));
    // From the environment, a comma-separated list, checked the same way.
    let env = Env::isolated(&[
        ("YOCTOCLAW_TOOLS_DENY", "web, system_info"),
        ("YOCTOCLAW_TELEGRAM_DENY_TOOLS", "exec,fs_write"),
    ]);
    let c = parse(
        Some(r#"{"tools":{"deny":["memory"]}}"#),
        Path::new("c"),
        &env,
    )
    .unwrap();
    assert!(c.tools.deny.contains("web_fetch") && c.tools.deny.contains("system_info"));
    assert!(
        !c.tools.deny.contains("memory_store"),
        "the environment replaces the list"
    );
    assert!(c.telegram.deny_tools.contains("edit_file"));
    let bad = Env::isolated(&[("YOCTOCLAW_SERIAL_DENY_TOOLS", "exec,rm")]);
    let err = parse(None, Path::new("c"), &bad).unwrap_err().to_string();
    assert!(
        err.contains("\"serial.deny_tools\"") && err.contains("\"rm\""),
        "{err}"
    );
}

#[test]
fn every_group_names_known_tools_once() {
    let mut seen = std::collections::BTreeSet::new();
    for (g, tools) in tool_rules::TOOL_GROUPS {
        let set = ToolSet::parse(&[g.to_string()], "k").unwrap();
        for t in tools {
            assert!(tool_rules::TOOL_NAMES.contains(t), "{g}: {t}");
            assert!(set.contains(t) && seen.insert(*t), "{g}: {t}");
        }
    }
    // Every tool is in exactly one group, so the groups together deny everything.
    assert_eq!(seen.len(), tool_rules::TOOL_NAMES.len());
}

#[test]
fn mcp_servers_read_the_shape_other_clients_paste() {
    // Claude Desktop's stdio entry, Cursor's HTTP entry, Cline's extra keys.
    let c = parse_str(
        r#"{"mcp":{"idle_stop_mins":5,"servers":{
            "fs":{"command":"npx","args":["-y","@modelcontextprotocol/server-filesystem","/tmp"],
                  "env":{"DEBUG":"1","PORT":8123},"autoApprove":[],"disabled":false,"timeout":30},
            "home_assistant":{"url":"http://ha.local:8123/mcp_server/sse","type":"sse",
                  "headers":{"Authorization":"Bearer ${HA_TOKEN}"},"trust":true,"start":"boot",
                  "allow_tools":["HassTurnOn"],"idle_stop_mins":0},
            "notes":{"url":"https://notes.example/mcp","enabled":false,
                  "env_from_secrets":["A","B=C"]}}}}"#,
    )
    .unwrap();
    let m = &c.mcp;
    assert_eq!(m.idle_stop_mins, 5);
    assert_eq!(m.servers.len(), 3);
    let fs = m.server("fs").unwrap();
    assert!(fs.enabled && !fs.trust);
    assert_eq!(fs.start, mcp::McpStart::FirstUse);
    assert_eq!(fs.timeout_secs, 30);
    assert_eq!(fs.idle_stop_mins, 5);
    match &fs.transport {
        mcp::McpTransport::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            assert_eq!(command, "npx");
            assert_eq!(args.len(), 3);
            assert_eq!(
                env,
                &[("DEBUG".into(), "1".into()), ("PORT".into(), "8123".into())]
            );
            assert!(cwd.is_empty());
        }
        t => panic!("{t:?}"),
    }
    let ha = m.server("home_assistant").unwrap();
    assert_eq!(ha.transport_name(), "sse");
    assert!(ha.trust);
    assert_eq!(ha.start, mcp::McpStart::Boot);
    assert_eq!(ha.idle_stop_mins, 0);
    assert_eq!(ha.allow_tools, ["HassTurnOn"]);
    let notes = m.server("notes").unwrap();
    assert!(!notes.enabled);
    assert_eq!(notes.transport_name(), "http");
    assert_eq!(
        notes.env_from_secrets,
        [("A".into(), "A".into()), ("B".into(), "C".into())]
    );
}

#[test]
fn mcp_entries_that_cannot_work_are_errors_naming_the_key() {
    let err = |text: &str| parse_str(text).unwrap_err().to_string();
    assert!(err(r#"{"mcp":{"servers":{"a b":{"command":"x"}}}}"#).contains("mcp.servers.a b"));
    assert!(err(r#"{"mcp":{"servers":{"x":{}}}}"#).contains("either \"command\""));
    assert!(
        err(r#"{"mcp":{"servers":{"x":{"command":"a","url":"http://h"}}}}"#)
            .contains("mcp.servers.x")
    );
    assert!(err(r#"{"mcp":{"servers":{"x":{"url":"ftp://h"}}}}"#).contains("mcp.servers.x.url"));
    assert!(
        err(r#"{"mcp":{"servers":{"x":{"command":"a","colour":1}}}}"#)
            .contains("mcp.servers.x.colour")
    );
    assert!(
        err(r#"{"mcp":{"servers":{"x":{"url":"http://h","headers":{"A":"b\r\nX: y"}}}}}"#)
            .contains("headers")
    );
    assert!(
        err(r#"{"mcp":{"servers":{"x":{"url":"http://h","headers":{"A":"${}"}}}}}"#)
            .contains("headers")
    );
    let nine: Vec<String> = (0..9)
        .map(|i| format!("\"s{i}\":{{\"command\":\"c\"}}"))
        .collect();
    assert!(
        err(&format!(
            "{{\"mcp\":{{\"servers\":{{{}}}}}}}",
            nine.join(",")
        ))
        .contains("at most 8")
    );
}

#[test]
fn mcp_servers_never_get_yoctoclaws_own_secrets() {
    for text in [
        r#"{"mcp":{"servers":{"x":{"command":"a","env_from_secrets":["YOCTOCLAW_API_KEY"]}}}}"#,
        r#"{"mcp":{"servers":{"x":{"command":"a","env":{"K":"${TELEGRAM_BOT_TOKEN}"}}}}}"#,
        r#"{"mcp":{"servers":{"x":{"url":"http://h","headers":{"A":"Bearer ${YOCTOCLAW_API_KEY}"}}}}}"#,
        r#"{"fallbacks":[{"api_key_env":"BACKUP_KEY"}],"mcp":{"servers":{"x":{"command":"a","env_from_secrets":["K=BACKUP_KEY"]}}}}"#,
    ] {
        let e = parse_str(text).unwrap_err().to_string();
        assert!(e.contains("never reach an MCP server"), "{text}: {e}");
    }
}

#[test]
fn mcp_references_resolve_from_the_environment_and_name_what_is_missing() {
    let env = Env::isolated(&[("HA_TOKEN", "t0k")]);
    assert_eq!(
        mcp::resolve_refs("Bearer ${HA_TOKEN}", &env).unwrap(),
        "Bearer t0k"
    );
    assert_eq!(
        mcp::resolve_refs("$HOME and $ {x}", &env).unwrap(),
        "$HOME and $ {x}"
    );
    assert_eq!(mcp::resolve_refs("${NOPE}", &env).unwrap_err(), "NOPE");
    assert_eq!(mcp::refs("a ${B} c ${D_1}").unwrap(), ["B", "D_1"]);
    assert!(mcp::refs("${1A}").is_none());
}

#[test]
fn the_http_section_has_safe_defaults_and_checks_its_address() {
    let d = parse_str("{}").unwrap().http;
    assert!(!d.enabled);
    assert_eq!(d.listen.to_string(), "127.0.0.1:18790");
    assert_eq!(d.token_env, "YOCTOCLAW_HTTP_TOKEN");
    assert_eq!(
        (d.max_connections, d.max_body_kib, d.rate_per_minute),
        (16, 1024, 120)
    );
    assert!(!d.metrics_public);
    let c = parse_str(
        r#"{"http":{"enabled":true,"listen":"[::1]:8080","max_connections":100000,"rate_per_minute":0,"metrics_public":true}}"#,
    )
    .unwrap()
    .http;
    assert!(c.enabled && c.metrics_public);
    assert_eq!(c.listen.to_string(), "[::1]:8080");
    assert_eq!((c.max_connections, c.rate_per_minute), (256, 1), "clamped");
    for bad in [
        r#""localhost:80""#,
        r#""127.0.0.1""#,
        r#""1.2.3.4:99999""#,
        "8080",
    ] {
        let e = parse_str(&format!(r#"{{"http":{{"listen":{bad}}}}}"#)).unwrap_err();
        assert!(e.to_string().contains("http.listen"), "{bad}: {e}");
    }
    let e = parse_str(r#"{"http":{"port":80}}"#).unwrap_err();
    assert!(e.to_string().contains("http.port"), "{e}");
    let env = Env::isolated(&[("YOCTOCLAW_HTTP_LISTEN", "0.0.0.0:9000")]);
    let c = parse(Some("{}"), Path::new("c"), &env).unwrap();
    assert_eq!(c.http.listen.to_string(), "0.0.0.0:9000");
}

#[test]
fn the_injection_screen_is_configured_and_bad_patterns_are_named() {
    use crate::security::injection::Action;
    let d = parse_str("{}").unwrap();
    assert!(d.security.injection.enabled);
    assert_eq!(d.security.injection.action, Action::Flag);
    assert_eq!(d.security.injection.threshold, 0.6);
    let c = parse_str(
        r#"{"security": {"injection": {"action": "withhold", "threshold": 0.75, "extra_patterns": ["pod bay doors"]}}}"#,
    )
    .unwrap();
    assert_eq!(c.security.injection.action, Action::Withhold);
    assert_eq!(c.security.injection.threshold, 0.75);
    assert_eq!(c.security.injection.extra_patterns, ["pod bay doors"]);
    assert_eq!(d.security.injection.judge, None);
    let j = parse_str(r#"{"security": {"injection": {"judge": {"model": " qwen-0.5b "}}}}"#)
        .unwrap()
        .security
        .injection
        .judge
        .expect("a judge");
    assert_eq!(
        (j.model.as_str(), j.floor, j.timeout_secs),
        ("qwen-0.5b", 0.3, 10)
    );
    let off = parse_str(r#"{"security": {"injection": {"judge": {"model": "", "floor": 0.9}}}}"#);
    assert_eq!(off.unwrap().security.injection.judge, None, "no model: off");
    for bad in [
        r#"{"judge": {"model": "m", "floor": 0.6}}"#,
        r#"{"judge": {"model": "m", "flor": 0.2}}"#,
        r#"{"judge": "m"}"#,
    ] {
        let e = parse_str(&format!(r#"{{"security": {{"injection": {bad}}}}}"#)).unwrap_err();
        assert!(e.to_string().contains("security.injection.judge"), "{e}");
    }
    let e = parse_str(r#"{"security": {"injection": {"extra_patterns": ["ok", "(unclosed"]}}}"#)
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("config key \"security.injection.extra_patterns\" must be a list of regular expressions (entry 1 does not compile"), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
    for bad in ["1.5", "\"high\"", "-0.1"] {
        let e = parse_str(&format!(
            r#"{{"security": {{"injection": {{"threshold": {bad}}}}}}}"#
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("security.injection.threshold"), "{e}");
    }
    assert!(parse_str(r#"{"security": {"injection": {"action": "drop"}}}"#).is_err());
}

#[test]
fn webhook_mode_needs_the_server_an_https_url_and_a_secret_variable() {
    let d = Config::default().telegram;
    assert_eq!(d.mode, TelegramMode::Polling);
    assert_eq!(d.webhook_secret_env, "YOCTOCLAW_TELEGRAM_WEBHOOK_SECRET");
    let cfg = |tg: &str, http: bool| {
        parse_str(&format!(
            r#"{{"telegram":{{"enabled":true,"mode":"webhook"{tg}}},"http":{{"enabled":{http}}}}}"#
        ))
    };
    let url = r#","webhook_url":"https://bot.example.org/webhook/telegram""#;
    let c = cfg(url, true).unwrap();
    assert_eq!(c.telegram.mode, TelegramMode::Webhook);
    assert_eq!(
        c.telegram.webhook_url,
        "https://bot.example.org/webhook/telegram"
    );
    let e = cfg(url, false).unwrap_err().to_string();
    assert!(
        e.contains("telegram.mode") && e.contains("http.enabled"),
        "{e}"
    );
    for bad in [
        "",
        r#","webhook_url":"http://bot.example.org/x""#,
        r#","webhook_url":"https://""#,
    ] {
        let e = cfg(bad, true).unwrap_err().to_string();
        assert!(
            e.contains("telegram.webhook_url") && e.contains("https://"),
            "{bad}: {e}"
        );
    }
    let e = cfg(&format!(r#"{url},"webhook_secret_env":" ""#), true).unwrap_err();
    assert!(e.to_string().contains("telegram.webhook_secret_env"), "{e}");
    // Telegram off: the mode is not checked.
    assert!(parse_str(r#"{"telegram":{"mode":"webhook"}}"#).is_ok());
    let e = parse_str(r#"{"telegram":{"mode":"hook"}}"#).unwrap_err();
    assert!(e.to_string().contains("telegram.mode"), "{e}");
    assert!(webhook_secret_ok("a-Z_9") && webhook_secret_ok(&"x".repeat(256)));
    assert!(!webhook_secret_ok("") && !webhook_secret_ok(&"x".repeat(257)));
    assert!(!webhook_secret_ok("has space") && !webhook_secret_ok("é"));
}
