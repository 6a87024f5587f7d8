//! `yoctoclaw doctor` end to end against a fake provider and a fake Bot API on loopback:
//! each state of the world gives the verdicts and exit status it should.

mod support;

use std::net::TcpListener;
use std::process::Output;
use support::binary::TEST_NOW;
use support::fake_http::{FakeServer, Response, openai_text, openai_tool_call};
use support::{TempHome, config_for, hook, text};

const GOOD_TOKEN: &str = "123456:GOOD-token-abcdef";
const BAD_TOKEN: &str = "654321:BAD-token-zyxwvu";

/// A provider whose `/models` lists `fake-model`, or answers `models_status` with no list.
fn provider(models_status: u16) -> FakeServer {
    FakeServer::start(move |req| {
        if req.path.ends_with("/models") {
            if models_status == 200 {
                return Response::json(
                    200,
                    r#"{"object":"list","data":[{"id":"other-model"},{"id":"fake-model"}]}"#,
                );
            }
            return Response::json(models_status, r#"{"error":{"message":"nope"}}"#);
        }
        if req.path.ends_with("/chat/completions") {
            return Response::json(200, &openai_text("p"));
        }
        Response::json(404, "{}")
    })
}

/// A Bot API that knows only `GOOD_TOKEN`.
fn bot_api() -> FakeServer {
    FakeServer::start(|req| {
        if req.path == format!("/bot{GOOD_TOKEN}/getMe") {
            Response::json(
                200,
                r#"{"ok":true,"result":{"id":1,"is_bot":true,"first_name":"Fake","username":"fake_bot"}}"#,
            )
        } else {
            Response::json(
                401,
                r#"{"ok":false,"error_code":401,"description":"Unauthorized"}"#,
            )
        }
    })
}

fn telegram(api: &FakeServer) -> String {
    format!(
        r#""telegram":{{"enabled":true,"api_base":"{}","allow_from":["42"]}}"#,
        api.url()
    )
}

fn doctor(home: &TempHome, envs: &[(&str, &str)]) -> Output {
    let mut c = home.cmd(&["doctor"]);
    for (k, v) in envs {
        c.env(k, v);
    }
    c.output().expect("run doctor")
}

/// The line for check `name`.
fn line<'a>(stdout: &'a str, name: &str) -> &'a str {
    stdout
        .lines()
        .find(|l| {
            l.get(5..)
                .is_some_and(|rest| rest.starts_with(&format!("{name} ")))
        })
        .unwrap_or_else(|| panic!("no {name} line in:\n{stdout}"))
}

fn closed_port_url() -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    drop(l);
    format!("http://127.0.0.1:{port}")
}

#[test]
fn everything_ok_against_healthy_fakes() {
    let p = provider(200);
    let api = bot_api();
    let home = TempHome::onboarded("doc-ok", &config_for(&p.url(), &telegram(&api)));
    // One turn creates the database, so its integrity is checked too.
    assert!(home.run(&["agent", "-m", "hi"]).status.success());
    let out = doctor(&home, &[("TELEGRAM_BOT_TOKEN", GOOD_TOKEN)]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    for l in stdout.lines().filter(|l| !l.contains(" checks: ")) {
        // Free disk and memory depend on the machine running the tests, Landlock on its
        // kernel (qemu-user has none).
        let host_dependent = l.contains(" disk ")
            || l.contains(" memory ")
            || (l.contains(" confine ") && l.contains("Landlock is not available"));
        assert!(
            l.starts_with("OK ") || (host_dependent && l.starts_with("WARN")),
            "{l}\n{stdout}"
        );
    }
    assert!(
        line(&stdout, "provider").contains("TCP connect ok"),
        "{stdout}"
    );
    assert!(
        line(&stdout, "model").contains("a one-token request to fake-model worked"),
        "{stdout}"
    );
    assert!(line(&stdout, "telegram").starts_with("OK"), "{stdout}");
    assert!(
        stdout.contains("OK   bot token  valid (@fake_bot)"),
        "{stdout}"
    );
    assert!(
        line(&stdout, "database").contains(&format!(
            "integrity ok, schema {}",
            yoctoclaw::store::SCHEMA_VERSION
        )),
        "{stdout}"
    );
    assert!(line(&stdout, "fts5").starts_with("OK"), "{stdout}");
    assert!(line(&stdout, "clock").starts_with("OK"), "{stdout}");
    assert!(stdout.contains(", 0 FAIL"), "{stdout}");
    assert_eq!(api.requests_to("/getMe").len(), 1);
    // The token is never printed, even when it is fine.
    assert!(!stdout.contains(GOOD_TOKEN) && !text(&out.stderr).contains(GOOD_TOKEN));
}

#[test]
fn an_unreachable_provider_fails_with_exit_1() {
    let home = TempHome::onboarded("doc-down", &config_for(&closed_port_url(), ""));
    let out = doctor(&home, &[]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let l = line(&stdout, "provider");
    assert!(l.starts_with("FAIL"), "{stdout}");
    assert!(l.contains("cannot connect") && l.contains("check"), "{l}");
    assert!(line(&stdout, "model").starts_with("WARN"), "{stdout}");
    assert!(
        text(&out.stderr).contains("check(s) failed"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_bad_bot_token_fails_and_is_never_printed() {
    let p = provider(200);
    let api = bot_api();
    let home = TempHome::onboarded("doc-token", &config_for(&p.url(), &telegram(&api)));
    let out = doctor(&home, &[("TELEGRAM_BOT_TOKEN", BAD_TOKEN)]);
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let fails: Vec<&str> = stdout.lines().filter(|l| l.starts_with("FAIL")).collect();
    assert_eq!(fails.len(), 1, "{stdout}");
    assert!(fails[0].contains("bot token"), "{stdout}");
    assert!(
        fails[0].contains("HTTP 401") && fails[0].contains("@BotFather"),
        "{stdout}"
    );
    assert!(!stdout.contains(BAD_TOKEN) && !stderr.contains(BAD_TOKEN));
    assert!(
        !stdout.contains("BAD-token"),
        "not even part of it: {stdout}"
    );
}

#[test]
fn a_clock_before_the_build_is_a_warning() {
    let p = provider(200);
    let home = TempHome::onboarded("doc-clock", &config_for(&p.url(), ""));
    let out = doctor(&home, &[(hook(TEST_NOW), "86400")]);
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "a warning is not a failure: {stdout}"
    );
    let l = line(&stdout, "clock");
    assert!(l.starts_with("WARN"), "{l}");
    assert!(l.contains("1970-01-02") && l.contains("NTP"), "{l}");
}

#[test]
fn a_broken_config_is_a_fail_line_not_an_early_exit() {
    let home = TempHome::onboarded("doc-badcfg", "{ \"provider\": ");
    let out = doctor(&home, &[]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let l = line(&stdout, "config");
    assert!(l.starts_with("FAIL") && l.contains("not valid JSON"), "{l}");
    // The checks that do not need the config still ran.
    assert!(line(&stdout, "fts5").starts_with("OK"), "{stdout}");
    assert!(line(&stdout, "network").starts_with("WARN"), "{stdout}");
}

#[test]
fn loose_secrets_file_permissions_fail() {
    let p = provider(200);
    let home = TempHome::onboarded("doc-secrets", &config_for(&p.url(), ""));
    let secrets = home.dir.join("secrets.env");
    std::fs::write(&secrets, "YOCTOCLAW_API_KEY=sk-loose-123456\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&secrets, std::fs::Permissions::from_mode(0o644)).unwrap();
        let out = doctor(&home, &[]);
        let stdout = text(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{stdout}");
        let l = line(&stdout, "secrets");
        assert!(l.starts_with("FAIL") && l.contains("chmod 600"), "{l}");
        assert!(!stdout.contains("sk-loose-123456"));
        // Fixed: OK, and the key counts as set without being shown.
        std::fs::set_permissions(&secrets, std::fs::Permissions::from_mode(0o600)).unwrap();
        let out = doctor(&home, &[]);
        let stdout = text(&out.stdout);
        assert!(line(&stdout, "secrets").starts_with("OK"), "{stdout}");
        assert!(
            line(&stdout, "api key").contains("from secrets.env"),
            "{stdout}"
        );
        assert!(!stdout.contains("sk-loose-123456"));
        // The key went to the provider as a bearer token.
        let reqs = p.requests_to("/chat/completions");
        assert_eq!(
            reqs.last().and_then(|r| r.header("authorization")),
            Some("Bearer sk-loose-123456")
        );
    }
}

#[test]
fn the_model_check_is_a_one_token_request() {
    // llama-cpp-python lists its model by file path and serves any name: a listing would
    // say "not found" for a model that works. One token proves it.
    let p = FakeServer::start(|req| {
        if req.path.ends_with("/models") {
            return Response::json(
                200,
                r#"{"object":"list","data":[{"id":"/models/SmolLM2-135M-Instruct.Q4_1.gguf"}]}"#,
            );
        }
        if req.path.ends_with("/chat/completions") {
            return Response::json(200, &openai_text("p"));
        }
        Response::json(404, "{}")
    });
    let home = TempHome::onboarded("doc-onetoken", &config_for(&p.url(), ""));
    let out = doctor(&home, &[]);
    let stdout = text(&out.stdout);
    let l = line(&stdout, "model");
    assert!(
        l.starts_with("OK") && l.contains("one-token request"),
        "{stdout}"
    );
    let chat = p.requests_to("/chat/completions");
    assert_eq!(chat.len(), 1);
    assert!(
        chat[0].body.contains("\"max_tokens\":1"),
        "{}",
        chat[0].body
    );
    assert!(p.requests_to("/models").is_empty(), "no listing asked for");
    // A refused key.
    let p401 = FakeServer::start(|_| {
        Response::json(401, r#"{"error":{"message":"Incorrect API key provided"}}"#)
    });
    let home = TempHome::onboarded("doc-401", &config_for(&p401.url(), ""));
    let out = doctor(&home, &[]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1));
    let l = line(&stdout, "model");
    assert!(
        l.starts_with("FAIL") && l.contains("refused the key"),
        "{l}"
    );
    // A model the server does not have.
    let p404 = FakeServer::start(|_| {
        Response::json(
            404,
            r#"{"error":{"message":"model 'missing-model' not found"}}"#,
        )
    });
    let home = TempHome::onboarded("doc-unknown-model", &config_for(&p404.url(), ""));
    let out = doctor(&home, &[]);
    let stdout = text(&out.stdout);
    let l = line(&stdout, "model");
    assert!(l.starts_with("FAIL") && l.contains("not found"), "{l}");
}

#[test]
fn doctor_deep_says_which_tool_mode_fits_the_model() {
    let cases: [(&str, String, &str); 3] = [
        (
            "native",
            openai_tool_call("c1", "get_time", "{}"),
            "OK   tool calls native tool calls work",
        ),
        (
            "text",
            openai_text("<tool_call>{\"name\":\"get_time\",\"arguments\":{}}</tool_call>"),
            "WARN tool calls the model writes tool calls as text",
        ),
        (
            "none",
            openai_text("It is probably noon."),
            "WARN tool calls the model called no tool",
        ),
    ];
    for (tag, answer, want) in cases {
        let p = FakeServer::start(move |req| {
            // The one-token check gets a plain answer; the tool question gets `answer`.
            if req.body.contains("get_time") {
                Response::json(200, &answer)
            } else {
                Response::json(200, &openai_text("p"))
            }
        });
        let home = TempHome::onboarded(&format!("doc-deep-{tag}"), &config_for(&p.url(), ""));
        let out = home.cmd(&["doctor", "--deep"]).output().unwrap();
        let stdout = text(&out.stdout);
        assert!(stdout.contains(want), "{tag}: {stdout}");
        let asked = p.requests_to("/chat/completions");
        assert!(
            asked
                .iter()
                .any(|r| r.body.contains("\"tool_choice\":\"auto\"")),
            "{tag}"
        );
        // Without --deep, no tool question is asked.
        let before = p.requests().len();
        let _ = home.cmd(&["doctor"]).output().unwrap();
        let after = p.requests();
        assert!(
            !after[before..].iter().any(|r| r.body.contains("get_time")),
            "{tag}"
        );
    }
}

#[test]
fn a_board_without_tzdata_takes_iana_zones_from_the_builtin_table() {
    let p = provider(200);
    let home = TempHome::onboarded(
        "doc-tz",
        &config_for(&p.url(), r#""agent":{"timezone":"Europe/Berlin"}"#),
    );
    // TZDIR is where the binary (as the C library does) looks for zoneinfo files: a
    // folder that does not exist is a board without tzdata.
    let missing = home.dir.join("no-zoneinfo");
    let envs = [("TZDIR", missing.to_str().expect("utf-8 temp path"))];
    let out = doctor(&home, &envs);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(line(&stdout, "config").starts_with("OK"), "{stdout}");
    let l = line(&stdout, "timezone");
    // Now, on the real clock: Berlin is an hour ahead of UTC in winter, two in summer.
    let berlin = ["(Europe/Berlin, +01:00)", "(Europe/Berlin, +02:00)"];
    assert!(
        l.starts_with("OK   timezone   20")
            && berlin
                .iter()
                .any(|b| l.contains(&format!("{b}: rules from the built-in table (tzdata 20"))),
        "{l}"
    );
    assert!(l.contains("install tzdata"), "{l}");

    // With the system's zoneinfo, its file is used.
    if !std::path::Path::new("/usr/share/zoneinfo/Europe/Berlin").is_file() {
        support::skipped(
            "doctor with the system zoneinfo",
            "no /usr/share/zoneinfo/Europe/Berlin here: install tzdata",
        );
        return;
    }
    let out = doctor(&home, &[]);
    let stdout = text(&out.stdout);
    let l = line(&stdout, "timezone");
    assert!(
        l.starts_with("OK")
            && berlin
                .iter()
                .any(|b| l.ends_with(&format!("{b}: rules from the zoneinfo file"))),
        "{l}"
    );
}
