//! Configuration and onboarding as a user meets them: exit statuses and messages.

mod support;

use support::{TempHome, text};

#[test]
fn onboard_creates_everything_and_never_overwrites() {
    let home = TempHome::new("onboard");
    let out = home.run(&["onboard"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("YOCTOCLAW_API_KEY"), "{stdout}");
    assert!(stdout.contains("yoctoclaw agent"), "{stdout}");
    for f in [
        "IDENTITY.md",
        "SOUL.md",
        "USER.md",
        "AGENTS.md",
        "TOOLS.md",
        "HEARTBEAT.md",
    ] {
        assert!(home.workspace().join(f).is_file(), "{f}");
    }
    assert!(home.dir.join("config.json").is_file());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(home.dir.join("config.json"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0, "config is private");
    }
    // Second run: keeps the user's edits and says so.
    std::fs::write(home.workspace().join("SOUL.md"), "my soul").unwrap();
    let out = home.run(&["onboard"]);
    assert!(out.status.success());
    assert!(
        text(&out.stdout).contains("kept 7 existing file(s)"),
        "{}",
        text(&out.stdout)
    );
    assert_eq!(
        std::fs::read_to_string(home.workspace().join("SOUL.md")).unwrap(),
        "my soul"
    );
    // --force overwrites.
    let out = home.run(&["onboard", "--force"]);
    assert!(out.status.success());
    assert_ne!(
        std::fs::read_to_string(home.workspace().join("SOUL.md")).unwrap(),
        "my soul"
    );
}

#[test]
fn home_comes_from_the_environment_when_no_flag() {
    let home = TempHome::new("envhome");
    let out = support::binary::command()
        .env_clear()
        .env("YOCTOCLAW_HOME", &home.dir)
        .arg("onboard")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(home.dir.join("config.json").is_file());
}

#[test]
fn an_unknown_key_exits_2_and_names_it() {
    let home = TempHome::onboarded("unknown", r#"{"provider":{"modle":"x"}}"#);
    let out = home.run(&["agent", "-m", "hi"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.starts_with("yoctoclaw: "), "{err}");
    assert!(err.contains("provider.modle"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn malformed_json_exits_2_with_line_and_column() {
    let home = TempHome::onboarded(
        "badjson",
        "{\n  \"provider\": {\n    \"model\": \"x\"\n  ,\n}\n",
    );
    let out = home.run(&["status"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("config.json"), "{err}");
    assert!(err.contains("line 5, column 1"), "{err}");
}

#[cfg(unix)]
#[test]
fn a_readable_secrets_file_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let home = TempHome::onboarded("secrets", "{}");
    let p = home.dir.join("secrets.env");
    std::fs::write(&p, "YOCTOCLAW_API_KEY=sk-abc\n").unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = home.run(&["status"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("chmod 600"), "{err}");
    assert!(!err.contains("sk-abc"));
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = home.run(&["status"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("YOCTOCLAW_API_KEY (set)"));
    assert!(!text(&out.stdout).contains("sk-abc"));
}

#[test]
fn bad_usage_exits_2() {
    let home = TempHome::new("usage");
    assert_eq!(home.run(&["frobnicate"]).status.code(), Some(2));
    assert_eq!(home.run(&["agent", "--bogus"]).status.code(), Some(2));
    let out = home.run(&["agent", "-m", "hi"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "no home yet: {}",
        text(&out.stderr)
    );
    assert!(text(&out.stderr).contains("onboard"));
}

#[test]
fn version_and_help() {
    let out = support::binary::command()
        .arg("--version")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(text(&out.stdout).starts_with("yoctoclaw "));
    let out = support::binary::command().arg("--help").output().unwrap();
    assert!(out.status.success());
    assert!(text(&out.stdout).contains("onboard"));
}
