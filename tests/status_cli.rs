//! `yoctoclaw status` and `--log-file` end to end: the report's fields from a database
//! holding sessions, memories, cron jobs, a heartbeat and a gateway record; log lines in a
//! file instead of stderr.

mod support;

use support::fake_http::{FakeServer, Response, openai_text};
use support::{TempHome, config_for, text};
use yoctoclaw::status::{
    GATEWAY_STATUS_KEY, HEARTBEAT_LAST_RESULT_KEY, HEARTBEAT_LAST_RUN_KEY, Rss,
    write_gateway_record,
};
use yoctoclaw::store::Db;

fn provider() -> FakeServer {
    FakeServer::start(|_| Response::json(200, &openai_text("hi there")))
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn field<'a>(report: &'a str, name: &str) -> &'a str {
    report
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .map(str::trim)
        .unwrap_or_else(|| panic!("no {name}: line in\n{report}"))
}

#[test]
fn status_reports_every_field() {
    let p = provider();
    let extra = r#""telegram":{"enabled":true,"allow_from":["42"]},"serial":{"device":"/dev/ttyS9","baud":9600},"heartbeat":{"interval_mins":15}"#;
    let home = TempHome::onboarded("status-full", &config_for(&p.url(), extra));
    let out = home.run(&["agent", "-m", "hello"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    {
        let db = Db::open(&home.dir.join("yoctoclaw.db"), 256).unwrap();
        let t = now();
        db.conn
            .execute_batch(&format!(
                "INSERT INTO memories(key, text, category, created, updated) VALUES
                   ('name', 'Ada', 'core', {t}, {t}),
                   ('lang', 'English', 'core', {t}, {t}),
                   ('walk', 'walked 5 km', 'daily', {t}, {t});
                 INSERT INTO cron_jobs(schedule, prompt, enabled, created, next_run) VALUES
                   ('every 15m', 'water plants', 1, {t}, 4102444800),
                   ('0 9 * * *', 'old job', 0, {t}, 4000000000);"
            ))
            .unwrap();
        db.set_state(HEARTBEAT_LAST_RUN_KEY, "1767225600").unwrap();
        db.set_state(HEARTBEAT_LAST_RESULT_KEY, "ok\nsecond line hidden")
            .unwrap();
        let rss = Rss {
            rss_kib: 5120,
            hwm_kib: 6144,
        };
        write_gateway_record(&db, std::process::id(), rss, 2, t).unwrap();
    }
    let out = home.run(&["status"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let r = text(&out.stdout);
    let first = r.lines().next().unwrap();
    assert!(
        first.starts_with("yoctoclaw ") && first.contains(", built 20"),
        "{r}"
    );
    assert_eq!(field(&r, "home"), home.dir.display().to_string());
    assert!(
        field(&r, "provider").starts_with("openai fake-model (http://127.0.0.1:"),
        "{r}"
    );
    assert_eq!(
        field(&r, "channels"),
        "terminal, telegram (polling, token TELEGRAM_BOT_TOKEN NOT SET, 1 user(s) allowed), serial /dev/ttyS9 at 9600 baud"
    );
    let gw = field(&r, "gateway");
    assert!(
        gw.starts_with(&format!(
            "running, pid {}, RSS 5120 KiB (peak 6144 KiB), 2 live",
            std::process::id()
        )),
        "{r}"
    );
    assert_eq!(field(&r, "sessions"), "1 stored, 2 live in the gateway");
    assert_eq!(field(&r, "memory"), "3 entries (core 2, daily 1)");
    assert_eq!(
        field(&r, "cron"),
        "2 job(s), 1 enabled; next: job 1 at 2100-01-01 00:00 (UTC, +00:00)"
    );
    assert_eq!(
        field(&r, "heartbeat"),
        "every 15 min; last 2026-01-01 00:00 (UTC, +00:00): ok"
    );
    assert!(field(&r, "tokens").contains("(10 in, 5 out)"), "{r}");
    let db = field(&r, "database");
    assert!(
        db.contains("yoctoclaw.db (")
            && db.ends_with(&format!(
                "KiB with its WAL, schema {})",
                yoctoclaw::store::SCHEMA_VERSION
            )),
        "{r}"
    );
}

#[test]
fn a_gateway_whose_process_is_gone_is_not_running() {
    let home = TempHome::onboarded("status-stale", &config_for("http://127.0.0.1:9", ""));
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let gone = child.id();
    child.wait().unwrap();
    {
        let db = Db::open(&home.dir.join("yoctoclaw.db"), 256).unwrap();
        write_gateway_record(&db, gone, Rss::default(), 1, now()).unwrap();
        assert!(db.get_state(GATEWAY_STATUS_KEY).unwrap().is_some());
    }
    let out = home.run(&["status"]);
    let r = text(&out.stdout);
    assert!(
        field(&r, "gateway").starts_with("not running (last seen "),
        "{r}"
    );
    assert_eq!(field(&r, "sessions"), "0 stored, none live");
    assert_eq!(field(&r, "memory"), "0 entries");
    assert_eq!(field(&r, "cron"), "no jobs");
    assert_eq!(field(&r, "heartbeat"), "every 30 min; never ran");
}

#[test]
fn status_before_any_database_says_so() {
    let home = TempHome::onboarded("status-nodb", &config_for("http://127.0.0.1:9", ""));
    let out = home.run(&["status"]);
    assert!(out.status.success());
    let r = text(&out.stdout);
    assert!(field(&r, "database").starts_with("not created yet"), "{r}");
}

#[test]
fn log_lines_go_to_the_log_file_instead_of_stderr() {
    let p = provider();
    let home = TempHome::onboarded("logfile", &config_for(&p.url(), ""));
    let log = home.dir.join("yoctoclaw.log");
    let out = home
        .cmd(&["--log-file", log.to_str().unwrap(), "agent", "-m", "hi"])
        .env("RUST_LOG", "info")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stderr), "", "logs went to the file");
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.contains(" INFO  database migrated"), "{logged}");
    for l in logged.lines() {
        assert!(
            l.len() > 21 && l.as_bytes()[4] == b'-' && l.contains("Z "),
            "{l}"
        );
    }
    // A log file that cannot be opened: said once, logs stay on stderr, the command works.
    let out = home
        .cmd(&["--log-file", "/nonexistent-dir/y.log", "agent", "-m", "hi"])
        .env("RUST_LOG", "info")
        .output()
        .unwrap();
    assert!(out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("cannot open the log file /nonexistent-dir/y.log"),
        "{stderr}"
    );
    assert_eq!(text(&out.stdout), "hi there\n");
}
