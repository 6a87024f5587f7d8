//! Tools and safety end to end: the real binary, a fake OpenAI-compatible model that calls
//! tools, and (for approvals) a fake Telegram Bot API. Nothing reaches the network: web
//! fetches go to loopback servers.

mod support;

use std::io::Write;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};
use support::fake_http::{FakeServer, Response, json_str, openai_text, openai_tool_calls};
use support::fake_telegram::FakeTelegram;
use support::gateway::{FAST_BACKOFF, Gateway, PATIENCE, TOKEN};
use support::{TempHome, config_for, text};

/// Longest wait for anything (a hang guard, not a timing check).
const ALICE: i64 = 42;

fn calls(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(n, a)| (n.to_string(), a.to_string()))
        .collect()
}

/// The role of the last message of a chat request.
fn last_role(body: &str) -> String {
    use yoctoclaw::json::{as_array, get, parse_value, str_at};
    let Ok(v) = parse_value(body) else {
        return String::new();
    };
    get(&v, "messages")
        .and_then(as_array)
        .and_then(|m| m.last())
        .and_then(|m| str_at(m, "role"))
        .unwrap_or("")
        .to_string()
}

/// A model that makes `calls` whenever the user spoke last, and answers `done` once the
/// tool results are in.
fn tool_model(calls: Vec<(String, String)>) -> FakeServer {
    FakeServer::start(move |req| {
        if !req.path.ends_with("/v1/chat/completions") {
            return Response::json(404, r#"{"error":{"message":"no route"}}"#);
        }
        if last_role(&req.body) == "tool" {
            Response::json(200, &openai_text("done"))
        } else {
            Response::json(200, &openai_tool_calls(&calls, None))
        }
    })
}

/// The tool results (role `tool` contents) of the latest turn, as the model got them.
fn tool_results(model: &FakeServer) -> Vec<String> {
    use yoctoclaw::json::{as_array, get, parse_value, str_at};
    let reqs = model.requests_to("/chat/completions");
    let Some(last) = reqs.last() else {
        return Vec::new();
    };
    let v = parse_value(&last.body).expect("request JSON");
    let Some(messages) = get(&v, "messages").and_then(as_array) else {
        return Vec::new();
    };
    let turn_start = messages
        .iter()
        .rposition(|m| str_at(m, "role") == Some("user"))
        .unwrap_or(0);
    messages[turn_start..]
        .iter()
        .filter(|m| str_at(m, "role") == Some("tool"))
        .filter_map(|m| str_at(m, "content").map(str::to_string))
        .collect()
}

fn full(extra: &str) -> String {
    let sep = if extra.is_empty() { "" } else { "," };
    format!(r#""agent":{{"autonomy":"full"}}{sep}{extra}"#)
}

/// `agent -m go` with a clean environment plus `env`.
fn run_agent(home: &TempHome, env: &[(&str, &str)]) -> Output {
    let mut c = home.cmd(&["agent", "-m", "go"]);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run yoctoclaw")
}

/// Run one turn making `list` tool calls under `extra` config; returns the results.
fn results_of(tag: &str, extra: &str, list: &[(&str, &str)]) -> (Vec<String>, TempHome) {
    let model = tool_model(calls(list));
    let home = TempHome::onboarded(tag, &config_for(&model.url(), extra));
    let out = run_agent(&home, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let r = tool_results(&model);
    assert_eq!(r.len(), list.len(), "{r:?}");
    (r, home)
}

#[test]
fn file_tools_write_edit_read_and_list_in_the_workspace() {
    let (r, home) = results_of(
        "files",
        &full(""),
        &[
            (
                "write_file",
                r#"{"path":"notes/todo.md","content":"buy milk\nbuy eggs\n"}"#,
            ),
            (
                "edit_file",
                r#"{"path":"notes/todo.md","old_text":"eggs","new_text":"bread"}"#,
            ),
            ("read_file", r#"{"path":"notes/todo.md"}"#),
            ("list_dir", r#"{"path":"notes"}"#),
            (
                "edit_file",
                r#"{"path":"notes/todo.md","old_text":"buy","new_text":"get"}"#,
            ),
            (
                "edit_file",
                r#"{"path":"notes/todo.md","old_text":"cheese","new_text":"x"}"#,
            ),
        ],
    );
    assert_eq!(r[0], "Created notes/todo.md (18 bytes).");
    assert!(
        r[1].starts_with("Edited notes/todo.md: replaced 1 occurrence"),
        "{}",
        r[1]
    );
    assert_eq!(r[2], "buy milk\nbuy bread\n");
    assert!(r[3].contains("todo.md"), "{}", r[3]);
    assert!(r[4].contains("appears 2 times"), "{}", r[4]);
    assert!(r[5].contains("not found"), "{}", r[5]);
    assert_eq!(
        std::fs::read_to_string(home.workspace().join("notes/todo.md")).unwrap(),
        "buy milk\nbuy bread\n"
    );
}

#[cfg(unix)]
#[test]
fn file_paths_cannot_escape_the_workspace() {
    let model = tool_model(Vec::new());
    let home = TempHome::onboarded("escape", &config_for(&model.url(), &full("")));
    drop(model);
    let ws = home.workspace();
    std::os::unix::fs::symlink(home.dir.join("config.json"), ws.join("link.txt")).unwrap();
    std::os::unix::fs::symlink(&home.dir, ws.join("linkdir")).unwrap();
    let config_before = std::fs::read_to_string(home.dir.join("config.json")).unwrap();
    let outside = std::env::temp_dir().join(format!("yc-evil-{}.txt", std::process::id()));
    let outside_arg = json_str(outside.to_str().unwrap());
    let reads = [
        ("read_file", r#"{"path":"../config.json"}"#.to_string()),
        ("read_file", r#"{"path":"/etc/passwd"}"#.to_string()),
        ("read_file", r#"{"path":"link.txt"}"#.to_string()),
        ("read_file", r#"{"path":"linkdir/config.json"}"#.to_string()),
        ("list_dir", r#"{"path":".."}"#.to_string()),
        ("list_dir", r#"{"path":"linkdir"}"#.to_string()),
    ];
    let writes = [
        (
            "write_file",
            r#"{"path":"../evil.txt","content":"x"}"#.to_string(),
        ),
        (
            "write_file",
            format!(r#"{{"path":{outside_arg},"content":"x"}}"#),
        ),
        (
            "write_file",
            r#"{"path":"link.txt","content":"x"}"#.to_string(),
        ),
        (
            "write_file",
            r#"{"path":"linkdir/evil.txt","content":"x"}"#.to_string(),
        ),
        (
            "edit_file",
            r#"{"path":"../config.json","old_text":"{","new_text":"x"}"#.to_string(),
        ),
        (
            "edit_file",
            r#"{"path":"link.txt","old_text":"{","new_text":"x"}"#.to_string(),
        ),
        (
            "edit_file",
            r#"{"path":"linkdir/config.json","old_text":"{","new_text":"x"}"#.to_string(),
        ),
        (
            "edit_file",
            r#"{"path":"/etc/passwd","old_text":"root","new_text":"b"}"#.to_string(),
        ),
    ];
    for batch in [&reads[..], &writes[..]] {
        let list: Vec<(String, String)> = batch
            .iter()
            .map(|(n, a)| (n.to_string(), a.clone()))
            .collect();
        let model = tool_model(list);
        home.write_config(&config_for(&model.url(), &full("")));
        let out = run_agent(&home, &[]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let r = tool_results(&model);
        assert_eq!(r.len(), batch.len());
        for (res, (name, args)) in r.iter().zip(batch) {
            assert!(
                res.starts_with("error: refused: path") && res.contains("outside the workspace"),
                "{name} {args}: {res}"
            );
        }
    }
    home.write_config(&config_before);
    assert_eq!(
        std::fs::read_to_string(home.dir.join("config.json")).unwrap(),
        config_before
    );
    assert!(!home.dir.join("evil.txt").exists());
    assert!(!outside.exists());
}

#[test]
fn exec_runs_in_the_workspace_and_reports_the_exit_code() {
    let (r, home) = results_of(
        "exec-ok",
        &full(""),
        &[
            (
                "exec",
                r#"{"command":"echo hello > made.txt; pwd; exit 3"}"#,
            ),
            ("exec", r#"{"command":"echo to-stderr >&2"}"#),
            ("exec", r#"{"command":"true"}"#),
        ],
    );
    assert!(r[0].starts_with("exit code: 3\n"), "{}", r[0]);
    assert!(r[0].trim_end().ends_with("/workspace"), "{}", r[0]);
    assert_eq!(r[1], "exit code: 0\nto-stderr\n");
    assert_eq!(r[2], "exit code: 0\n(no output)");
    assert_eq!(
        std::fs::read_to_string(home.workspace().join("made.txt")).unwrap(),
        "hello\n"
    );
}

/// Destructive and secret-reading commands, spelled the ways people get around filters.
/// They are run with an empty PATH, so even a policy bug could not make them do harm.
const BYPASSES: &[&str] = &[
    "rm -rf /",
    "rm  -rf   /  ",
    "rm -rf \"/\"",
    "rm -r -f '/'",
    "rm -rf $HOME",
    "rm -rf ${HOME}",
    "rm -rf ~",
    "rm -rf ~/",
    "cd / && rm -rf *",
    "cat ~/.ssh/id_rsa",
    "cat \"$HOME/.ssh/id_ed25519\"",
    "cat ${HOME}/.ssh/authorized_keys",
    "mkfs.ext4 /dev/sda1",
    "dd if=/dev/zero of=/dev/mmcblk0 bs=1M",
    "echo x > /dev/sda",
    "shutdown -h now",
    "sudo reboot",
    "/sbin/poweroff",
    "cat ../secrets.env",
    "cat ../config.json",
    "grep -r token ..",
    "systemctl halt",
    "cat /etc/shadow",
    "cp ../yoctoclaw.db /tmp/x",
];

#[test]
fn exec_refuses_the_deny_list_and_its_bypass_spellings() {
    let model = tool_model(Vec::new());
    let home = TempHome::onboarded("deny", &config_for(&model.url(), ""));
    let empty_bin = home.dir.join("empty-bin");
    std::fs::create_dir_all(&empty_bin).unwrap();
    let fake_home = home.dir.join("fake-user-home");
    std::fs::create_dir_all(fake_home.join(".ssh")).unwrap();
    for chunk in BYPASSES.chunks(8) {
        let list: Vec<(String, String)> = chunk
            .iter()
            .map(|c| {
                (
                    "exec".to_string(),
                    format!(r#"{{"command":{}}}"#, json_str(c)),
                )
            })
            .collect();
        let model = tool_model(list);
        // Default (supervised) autonomy: refused by the policy before anyone is asked.
        home.write_config(&config_for(&model.url(), ""));
        let out = home
            .cmd(&["agent", "-m", "go"])
            .env("PATH", &empty_bin)
            .env("HOME", &fake_home)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert!(
            !text(&out.stderr).contains("approval"),
            "nobody is asked about a refused command: {}",
            text(&out.stderr)
        );
        let r = tool_results(&model);
        assert_eq!(r.len(), chunk.len());
        for (res, cmd) in r.iter().zip(chunk) {
            assert!(
                res.starts_with("error: refused:")
                    && res.contains("exec does not run destructive or secret-reading commands"),
                "{cmd:?} was not refused: {res}"
            );
        }
    }
    assert!(fake_home.join(".ssh").is_dir());
    assert!(home.dir.join("config.json").is_file());
}

/// Whether a live (not zombie) process has `needle` in its command line. Without `ps`
/// this fails: "no process found" must not pass for "none alive".
fn alive(needle: &str) -> bool {
    let ps = std::process::Command::new("ps")
        .args(["-eo", "stat,args"])
        .output()
        .expect("run ps (procps) to list the processes");
    text(&ps.stdout)
        .lines()
        .any(|l| l.contains(needle) && !l.trim_start().starts_with('Z'))
}

#[test]
fn exec_timeout_kills_the_command_and_its_children() {
    let a = format!("sleep 9{}", std::process::id());
    let b = format!("sleep 8{}", std::process::id());
    let cmd = format!(r#"{{"command":"echo started; {a} & {b}"}}"#);
    let (r, _home) = results_of(
        "timeout",
        &full(r#""tools":{"exec":{"timeout_secs":1}}"#),
        &[("exec", &cmd)],
    );
    assert!(
        r[0].starts_with("timed out after 1 s: the command and everything it started were stopped"),
        "{}",
        r[0]
    );
    assert!(r[0].contains("started"), "{}", r[0]);
    let start = Instant::now();
    while (alive(&a) || alive(&b)) && start.elapsed() < PATIENCE {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!alive(&a), "the background child outlived the timeout");
    assert!(!alive(&b), "the command outlived the timeout");
}

/// Values of every secret shape the scrubber knows, and where they come from.
const API_KEY: &str = "plain-api-key-value-0123456789";
const SECRET_FILE_VALUE: &str = "correct-horse-battery-staple-42";
const SHAPES: &[&str] = &[
    "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "sk-or-v1-0123456789abcdef0123456789abcdef0123456789abcdef",
    "gsk_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
    "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "AKIAIOSFODNN7EXAMPLE",
];

/// A text holding every secret shape; returns it and the values that must never show.
fn secret_text() -> (String, Vec<String>) {
    let mut t = String::from("Here are my credentials:\n");
    let mut values: Vec<String> = SHAPES.iter().map(|s| s.to_string()).collect();
    for s in SHAPES {
        t.push_str(&format!("- {s}\n"));
    }
    t.push_str("Authorization: Bearer abcDEF123456ghiJKL789mno\n");
    values.push("abcDEF123456ghiJKL789mno".into());
    for (k, v) in [
        ("api_key", "Zq8rT2vW9xY4"),
        ("token", "tok3nVa1ue99"),
        ("password", "hunter2Secret"),
        ("secret", "s3cr3tSauce7"),
    ] {
        t.push_str(&format!("{k}={v}\n"));
        values.push(v.into());
    }
    t.push_str("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7onLRnrq0\n-----END RSA PRIVATE KEY-----\n");
    values.push(
        "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7onLRnrq0".into(),
    );
    t.push_str(&format!("the api key is {API_KEY}\nthe file secret is {SECRET_FILE_VALUE}\nthe bot token is {TOKEN}\n"));
    values.push(API_KEY.into());
    values.push(SECRET_FILE_VALUE.into());
    values.push("AAHdQwErTyUiOpAsDfGhJkLzXcVbNm12345".into());
    (t, values)
}

fn with_secrets(home: &TempHome) {
    let p = home.dir.join("secrets.env");
    std::fs::write(&p, format!("MY_SERVICE_PASSWORD={SECRET_FILE_VALUE}\n")).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
}

fn assert_clean(what: &str, s: &str, values: &[String]) {
    for v in values {
        assert!(!s.contains(v.as_str()), "{what} leaked {v:?}:\n{s}");
    }
}

#[test]
fn exec_gets_no_secrets_in_its_environment() {
    let model = tool_model(calls(&[("exec", r#"{"command":"env"}"#)]));
    let home = TempHome::onboarded("env", &config_for(&model.url(), &full("")));
    with_secrets(&home);
    let out = run_agent(
        &home,
        &[
            ("YOCTOCLAW_API_KEY", API_KEY),
            ("TELEGRAM_BOT_TOKEN", TOKEN),
            ("YC_CANARY", "visible-if-not-cleared"),
            ("BRAVE_API_KEY", "BSAbravekeyvalue7q2"),
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let r = tool_results(&model);
    let env = &r[0];
    assert!(!env.contains("BSAbravekeyvalue7q2"), "{env}");
    assert!(env.starts_with("exit code: 0\n"), "{env}");
    assert!(env.contains("PATH="), "{env}");
    for name in [
        "YOCTOCLAW_API_KEY",
        "TELEGRAM_BOT_TOKEN",
        "MY_SERVICE_PASSWORD",
        "YC_CANARY",
        "BRAVE_API_KEY",
    ] {
        assert!(!env.contains(name), "{name} reached the command:\n{env}");
    }
    for value in [API_KEY, TOKEN, SECRET_FILE_VALUE, "[REDACTED]"] {
        assert!(!env.contains(value), "{value} reached the command:\n{env}");
    }
}

#[test]
fn tool_output_is_scrubbed_of_every_secret_shape() {
    let model = tool_model(calls(&[
        ("read_file", r#"{"path":"creds.txt"}"#),
        ("exec", r#"{"command":"cat creds.txt"}"#),
    ]));
    let home = TempHome::onboarded("scrub-tools", &config_for(&model.url(), &full("")));
    with_secrets(&home);
    let (t, values) = secret_text();
    std::fs::write(home.workspace().join("creds.txt"), &t).unwrap();
    let out = run_agent(
        &home,
        &[
            ("YOCTOCLAW_API_KEY", API_KEY),
            ("TELEGRAM_BOT_TOKEN", TOKEN),
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let r = tool_results(&model);
    for res in &r {
        assert_clean("a tool result", res, &values);
        assert!(res.contains("[REDACTED]"), "{res}");
        assert!(res.contains("Here are my credentials"), "{res}");
    }
    // Nothing the model was sent carries a secret (the key itself goes in a header).
    for req in model.requests() {
        assert_clean("a model request", &req.body, &values);
    }
}

#[test]
fn final_replies_on_the_terminal_are_scrubbed() {
    let (t, values) = secret_text();
    let reply = openai_text(&t);
    let model = FakeServer::start(move |_| Response::json(200, &reply));
    let home = TempHome::onboarded("scrub-reply", &config_for(&model.url(), ""));
    with_secrets(&home);
    let env = [
        ("YOCTOCLAW_API_KEY", API_KEY),
        ("TELEGRAM_BOT_TOKEN", TOKEN),
    ];
    let out = run_agent(&home, &env);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert_clean("stdout", &stdout, &values);
    assert!(stdout.contains("Here are my credentials") && stdout.contains("[REDACTED]"));
    // The stored history is clean too (the next request carries it back).
    let out = run_agent(&home, &env);
    assert!(out.status.success());
    let reqs = model.requests();
    assert_clean("the history sent back", &reqs[1].body, &values);
}

/// SSE bytes of an OpenAI-compatible stream of `text`, cut every `n` bytes.
fn sse(text: &str, n: usize) -> Response {
    let mut s = String::new();
    let chars: Vec<char> = text.chars().collect();
    for piece in chars.chunks(n) {
        let p: String = piece.iter().collect();
        s.push_str(&format!(
            "data: {{\"id\":\"c\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":{}}},\"finish_reason\":null}}]}}\n\n",
            json_str(&p)
        ));
    }
    s.push_str("data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n");
    s.push_str("data: [DONE]\n\n");
    let chunks = s.as_bytes().chunks(97).map(|c| c.to_vec()).collect();
    Response::Chunked {
        status: 200,
        content_type: "text/event-stream".into(),
        chunks,
        pause: Duration::from_millis(1),
    }
}

#[test]
fn streamed_replies_on_the_terminal_are_scrubbed_even_when_split() {
    let (t, values) = secret_text();
    for n in [3, 11] {
        let t2 = t.clone();
        let model = FakeServer::start(move |_| sse(&t2, n));
        let home = TempHome::onboarded(
            "scrub-stream",
            &format!(
                r#"{{"provider":{{"base_url":"{}/v1","model":"fake-model","stream":true}}}}"#,
                model.url()
            ),
        );
        with_secrets(&home);
        let out = run_agent(
            &home,
            &[
                ("YOCTOCLAW_API_KEY", API_KEY),
                ("TELEGRAM_BOT_TOKEN", TOKEN),
            ],
        );
        assert!(out.status.success(), "{}", text(&out.stderr));
        let stdout = text(&out.stdout);
        assert_clean("streamed stdout", &stdout, &values);
        assert!(stdout.contains("Here are my credentials"), "{stdout}");
        assert!(stdout.contains("the bot token is [REDACTED]"), "{stdout}");
    }
}

/// A loopback web server for `web_fetch`.
fn web_server() -> FakeServer {
    FakeServer::start(|req| {
        let port_of = |r: &support::fake_http::Request| r.header("host").unwrap_or("").to_string();
        match req.path.as_str() {
            "/page" => Response::Full {
                status: 200,
                headers: vec![("Content-Type".into(), "text/html; charset=utf-8".into())],
                body: b"<html><head><style>p{}</style><script>alert('x')</script></head><body><h1>Board news</h1><p>Fish &amp; chips &lt;today&gt;</p><ul><li>one</li><li>two</li></ul></body></html>".to_vec(),
            },
            "/to-file" => Response::text(302, "").with_header("Location", "file:///etc/passwd"),
            "/loop" => Response::text(302, "")
                .with_header("Location", &format!("http://{}/loop", port_of(req))),
            "/image" => Response::Full {
                status: 200,
                headers: vec![("Content-Type".into(), "image/png".into())],
                body: vec![0x89, b'P', b'N', b'G', 0, 0, 0, 0],
            },
            _ => Response::text(404, "not here"),
        }
    })
}

#[test]
fn web_fetch_refuses_loopback_unless_allowed_and_reduces_html() {
    let web = web_server();
    let page = format!(r#"{{"url":"{}/page"}}"#, web.url());
    let (r, _h) = results_of("web-deny", "", &[("web_fetch", &page)]);
    assert!(
        r[0].starts_with("error: refused: host resolves to 127.0.0.1"),
        "{}",
        r[0]
    );
    assert!(web.requests().is_empty(), "nothing reached the server");

    let to_file = format!(r#"{{"url":"{}/to-file"}}"#, web.url());
    let looping = format!(r#"{{"url":"{}/loop"}}"#, web.url());
    let image = format!(r#"{{"url":"{}/image"}}"#, web.url());
    let (r, _h) = results_of(
        "web-allow",
        r#""tools":{"web_fetch":{"allow_private":true}}"#,
        &[
            ("web_fetch", &page),
            ("web_fetch", &to_file),
            ("web_fetch", &looping),
            ("web_fetch", &image),
            ("web_fetch", r#"{"url":"ftp://example.com/x"}"#),
            ("web_fetch", r#"{"url":"http://2130706433/"}"#),
            ("web_fetch", r#"{}"#),
        ],
    );
    assert!(r[0].contains("Board news"), "{}", r[0]);
    assert!(r[0].contains("Fish & chips <today>"), "{}", r[0]);
    assert!(r[0].contains("- one\n- two"), "{}", r[0]);
    assert!(!r[0].contains("alert") && !r[0].contains("p{}"), "{}", r[0]);
    assert!(
        r[1].contains("refused: only http:// and https:// urls can be fetched"),
        "a redirect to file:// is checked again: {}",
        r[1]
    );
    assert!(r[2].contains("more than 5 redirects"), "{}", r[2]);
    assert!(r[3].contains("not text (image/png)"), "{}", r[3]);
    assert!(r[4].contains("only http:// and https://"), "{}", r[4]);
    assert!(r[5].contains("dotted quad"), "{}", r[5]);
    assert!(
        r[6].contains("bad arguments: \"url\" is required"),
        "{}",
        r[6]
    );
    assert_eq!(
        web.requests_to("/loop").len(),
        6,
        "the first request and 5 redirects"
    );
}

#[test]
fn read_only_autonomy_refuses_every_change_without_asking() {
    let (r, home) = results_of(
        "readonly",
        r#""agent":{"autonomy":"read_only"}"#,
        &[
            ("write_file", r#"{"path":"a.txt","content":"x"}"#),
            (
                "edit_file",
                r#"{"path":"AGENTS.md","old_text":"a","new_text":"b"}"#,
            ),
            ("exec", r#"{"command":"touch b.txt"}"#),
            ("cron_add", r#"{"schedule":"every 1h","prompt":"x"}"#),
            ("cron_remove", r#"{"id":1}"#),
            ("list_dir", r#"{}"#),
        ],
    );
    for res in &r[..5] {
        assert!(res.contains("refused: autonomy is read_only"), "{res}");
    }
    assert!(r[5].contains("AGENTS.md"), "reading still works: {}", r[5]);
    assert!(!home.workspace().join("a.txt").exists());
    assert!(!home.workspace().join("b.txt").exists());
}

#[test]
fn bad_arguments_are_clear_tool_errors() {
    let big = format!(r#"{{"command":"{}"}}"#, "x".repeat(20_000));
    let (r, _h) = results_of(
        "badargs",
        &full(""),
        &[
            ("exec", r#"{}"#),
            ("exec", r#"{"command":42}"#),
            ("exec", &big),
            ("write_file", r#"{"path":"x.txt"}"#),
            ("edit_file", r#"{"path":"x.txt","old_text":"a"}"#),
            ("read_file", r#"not json"#),
            ("system_info", r#"{}"#),
            ("no_such_tool", r#"{}"#),
        ],
    );
    assert!(
        r[0].contains("bad arguments: \"command\" is required"),
        "{}",
        r[0]
    );
    assert!(
        r[1].contains("bad arguments: \"command\" must be a string"),
        "{}",
        r[1]
    );
    assert!(
        r[2].contains("bad arguments: \"command\" is longer than"),
        "{}",
        r[2]
    );
    assert!(
        r[3].contains("bad arguments: \"content\" is required"),
        "{}",
        r[3]
    );
    assert!(
        r[4].contains("bad arguments: \"new_text\" is required"),
        "{}",
        r[4]
    );
    assert!(
        r[5].contains("bad arguments: arguments are not valid JSON"),
        "{}",
        r[5]
    );
    assert!(r[6].contains("cores: "), "{}", r[6]);
    assert!(r[7].contains("unknown tool"), "{}", r[7]);
}

#[test]
fn agent_m_without_a_terminal_refuses_what_needs_approval() {
    let (r, home) = results_of(
        "m-noterm",
        "",
        &[("exec", r#"{"command":"touch ran.txt"}"#)],
    );
    assert!(r[0].contains("could not be asked"), "{}", r[0]);
    assert!(!home.workspace().join("ran.txt").exists());
}

#[test]
fn the_interactive_terminal_asks_and_reads_the_answer() {
    let model = tool_model(calls(&[("exec", r#"{"command":"echo ran >> ran.txt"}"#)]));
    let home = TempHome::onboarded("term-ask", &config_for(&model.url(), ""));
    let mut child = home
        .cmd(&["agent"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        let mut stdin = child.stdin.take().unwrap();
        // The answer is read only once the question is out, so it can be sent at once;
        // the third line waits for the second turn and is refused.
        stdin
            .write_all(b"please run it\n/yes\nand again\nno\n")
            .unwrap();
    }
    let out = child.wait_with_output().unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        stdout.contains("Approve? Run command: echo ran >> ran.txt\nReply /yes, /no, or /always"),
        "{stdout}"
    );
    assert!(
        stdout.contains("Approved: Run command: echo ran >> ran.txt"),
        "{stdout}"
    );
    assert!(stdout.contains("Denied: Run command"), "{stdout}");
    assert_eq!(stdout.matches("done").count(), 2, "{stdout}");
    assert_eq!(
        std::fs::read_to_string(home.workspace().join("ran.txt")).unwrap(),
        "ran\n"
    );
}

#[test]
fn send_message_reaches_allowed_chats_only_and_is_scrubbed() {
    let tg = FakeTelegram::start();
    let model = tool_model(calls(&[
        (
            "send_message",
            r#"{"text":"progress: key sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789","to":"telegram:42"}"#,
        ),
        ("send_message", r#"{"text":"hi","to":"telegram:99"}"#),
        ("send_message", r#"{"text":"hi","to":"@alice"}"#),
        ("send_message", r#"{"text":"note for the terminal"}"#),
    ]));
    let home = TempHome::onboarded(
        "send",
        &config_for(
            &model.url(),
            &format!(
                r#""telegram":{{"api_base":"{}","allow_from":["{ALICE}","@bob"]}}"#,
                tg.url()
            ),
        ),
    );
    let out = run_agent(&home, &[("TELEGRAM_BOT_TOKEN", TOKEN)]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let r = tool_results(&model);
    assert!(r[0].starts_with("Sent"), "{}", r[0]);
    assert!(r[1].contains("not in telegram.allow_from"), "{}", r[1]);
    assert!(
        r[2].contains("numeric chat id") || r[2].contains("telegram:<"),
        "{}",
        r[2]
    );
    assert!(r[3].starts_with("Sent"), "{}", r[3]);
    let sent = tg.sent();
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].chat_id, ALICE);
    assert_eq!(sent[0].text, "progress: key [REDACTED]");
    assert!(text(&out.stdout).contains("note for the terminal\n"));
}

// ---------------------------------------------------------------------------------
// Approvals over Telegram.

/// The gateway with Telegram's waits shortened and `env`.
fn start(home: &TempHome, env: &[(&str, &str)]) -> Gateway {
    let mut all = vec![FAST_BACKOFF];
    all.extend_from_slice(env);
    Gateway::start(home, &all)
}

fn tg_config(model: &FakeServer, tg: &FakeTelegram, agent: &str) -> String {
    config_for(
        &model.url(),
        &format!(
            r#""agent":{{{agent}}},"telegram":{{"enabled":true,"api_base":"{}","allow_from":["{ALICE}"],"poll_timeout_secs":1}}"#,
            tg.url()
        ),
    )
}

fn texts_to(tg: &FakeTelegram, chat: i64) -> Vec<String> {
    tg.sent_to(chat).into_iter().map(|s| s.text).collect()
}

fn count(tg: &FakeTelegram, needle: &str) -> usize {
    texts_to(tg, ALICE)
        .iter()
        .filter(|t| t.contains(needle))
        .count()
}

const ASK: &str = "Approve? Run command: echo ran >> ran.txt";

#[test]
fn telegram_approval_yes_no_always_and_nothing_waiting() {
    let model = tool_model(calls(&[("exec", r#"{"command":"echo ran >> ran.txt"}"#)]));
    let tg = FakeTelegram::start();
    let home = TempHome::onboarded("tg-approve", &tg_config(&model, &tg, ""));
    let ran = home.workspace().join("ran.txt");
    let lines = || {
        std::fs::read_to_string(&ran)
            .map(|s| s.lines().count())
            .unwrap_or(0)
    };
    let mut g = start(&home, &[]);

    // ask → /yes → runs
    tg.push_private(ALICE, "alice", "run it once");
    g.wait_for("the question", || count(&tg, ASK) == 1);
    let q = texts_to(&tg, ALICE)
        .into_iter()
        .find(|t| t.contains(ASK))
        .unwrap();
    assert!(q.contains("Reply /yes, /no, or /always"), "{q}");
    assert!(q.contains("No answer within 120 s means no"), "{q}");
    assert_eq!(lines(), 0, "nothing runs before the answer");
    tg.push_private(ALICE, "alice", "/yes");
    g.wait_for("the first answer", || count(&tg, "done") == 1);
    assert_eq!(count(&tg, "Approved: Run command"), 1);
    assert_eq!(lines(), 1);
    assert!(
        tool_results(&model)
            .last()
            .unwrap()
            .starts_with("exit code: 0")
    );

    // ask → /no → denied, the model is told and goes on
    tg.push_private(ALICE, "alice", "run it again");
    g.wait_for("the second question", || count(&tg, ASK) == 2);
    tg.push_private(ALICE, "alice", "/no");
    g.wait_for("the second answer", || count(&tg, "done") == 2);
    assert_eq!(count(&tg, "Denied: Run command"), 1);
    assert_eq!(lines(), 1, "not run");
    let denied = tool_results(&model).last().unwrap().clone();
    assert!(denied.contains("refused: the user said no"), "{denied}");

    // ask → /always → runs; the next call in the session is not asked about
    tg.push_private(ALICE, "alice", "and again");
    g.wait_for("the third question", || count(&tg, ASK) == 3);
    tg.push_private(ALICE, "alice", "/always");
    g.wait_for("the third answer", || count(&tg, "done") == 3);
    assert_eq!(lines(), 2);
    tg.push_private(ALICE, "alice", "one more time");
    g.wait_for("the fourth answer", || count(&tg, "done") == 4);
    assert_eq!(count(&tg, ASK), 3, "/always: no new question");
    assert_eq!(lines(), 3);

    // An answer with nothing waiting says so.
    tg.push_private(ALICE, "alice", "/yes");
    g.wait_for("the nothing-waiting reply", || {
        count(&tg, "There is nothing waiting for your approval.") == 1
    });
    let log = g.log();
    g.stop();
    assert!(log.contains("approval asked in telegram:42"), "{log}");
}

#[test]
fn telegram_approval_times_out_as_a_no() {
    let model = tool_model(calls(&[("exec", r#"{"command":"echo ran >> ran.txt"}"#)]));
    let tg = FakeTelegram::start();
    let home = TempHome::onboarded(
        "tg-timeout",
        &tg_config(&model, &tg, r#""approval_timeout_secs":10"#),
    );
    // The shortest timeout the config allows (10 s): the real wait, no test hook.
    let mut g = start(&home, &[]);
    tg.push_private(ALICE, "alice", "run it");
    g.wait_for("the answer after the timeout", || count(&tg, "done") == 1);
    assert_eq!(count(&tg, ASK), 1);
    let r = tool_results(&model);
    assert!(
        r.last()
            .unwrap()
            .contains("the user did not answer within 10 s"),
        "{r:?}"
    );
    // A late /yes finds nothing waiting.
    tg.push_private(ALICE, "alice", "/yes");
    g.wait_for("the late answer", || {
        count(&tg, "There is nothing waiting") == 1
    });
    g.stop();
    assert!(!home.workspace().join("ran.txt").exists());
}

#[test]
fn telegram_read_only_refuses_without_asking() {
    let model = tool_model(calls(&[(
        "write_file",
        r#"{"path":"x.txt","content":"x"}"#,
    )]));
    let tg = FakeTelegram::start();
    let home = TempHome::onboarded(
        "tg-readonly",
        &tg_config(&model, &tg, r#""autonomy":"read_only""#),
    );
    let mut g = start(&home, &[]);
    tg.push_private(ALICE, "alice", "write it");
    g.wait_for("the answer", || count(&tg, "done") == 1);
    g.stop();
    assert_eq!(count(&tg, "Approve?"), 0);
    let r = tool_results(&model);
    assert!(r[0].contains("refused: autonomy is read_only"), "{r:?}");
    assert!(!home.workspace().join("x.txt").exists());
}

#[test]
fn telegram_replies_are_scrubbed() {
    let (t, values) = secret_text();
    let reply = openai_text(&t);
    let model = FakeServer::start(move |_| Response::json(200, &reply));
    let tg = FakeTelegram::start();
    let home = TempHome::onboarded("tg-scrub", &tg_config(&model, &tg, ""));
    with_secrets(&home);
    let mut g = start(&home, &[("YOCTOCLAW_API_KEY", API_KEY)]);
    tg.push_private(ALICE, "alice", "what are my keys?");
    g.wait_for("the reply", || !tg.sent_to(ALICE).is_empty());
    let log = g.log();
    g.stop();
    for body in tg.server.requests_to("/sendMessage") {
        assert_clean("a sendMessage body", &body.body, &values);
    }
    assert!(texts_to(&tg, ALICE)[0].contains("[REDACTED]"));
    assert_clean("the log", &log, &values);
}

// ---------------------------------------------------------------------------------
// Special files in the workspace never freeze the gateway.

fn mkfifo(path: &std::path::Path) {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .expect("mkfifo");
}

#[test]
fn a_fifo_in_the_workspace_never_blocks_the_gateway() {
    // FIFOs without a writer: a plain open() of either waits forever, which on the
    // executor thread froze every chat, the scheduler and SIGTERM handling.
    let model = tool_model(calls(&[
        ("read_file", r#"{"path":"pipe"}"#),
        (
            "edit_file",
            r#"{"path":"pipe","old_text":"a","new_text":"b"}"#,
        ),
        ("list_dir", r#"{"path":"."}"#),
    ]));
    let tg = FakeTelegram::start();
    let home = TempHome::onboarded("fifo", &tg_config(&model, &tg, r#""autonomy":"full""#));
    mkfifo(&home.workspace().join("pipe"));
    // A FIFO where the prompt's files are read, too.
    std::fs::remove_file(home.workspace().join("SOUL.md")).unwrap();
    mkfifo(&home.workspace().join("SOUL.md"));
    tg.push_private(ALICE, "alice", "read the pipe");
    let mut g = start(&home, &[]);
    g.wait_for("the first answer", || texts_to(&tg, ALICE).len() == 1);
    let r = tool_results(&model);
    assert_eq!(r.len(), 3, "{r:?}");
    assert!(
        r[0].contains("FIFO") && r[0].contains("not a regular file"),
        "{}",
        r[0]
    );
    assert!(r[1].contains("FIFO"), "{}", r[1]);
    assert!(r[2].contains("pipe"), "{}", r[2]);
    // The gateway still answers, and stops within its shutdown limit.
    tg.push_private(ALICE, "alice", "still there?");
    g.wait_for("the second answer", || texts_to(&tg, ALICE).len() == 2);
    let log = g.stop_cleanly();
    assert!(log.contains("SOUL.md skipped"), "{log}");
}
