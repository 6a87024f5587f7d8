//! `yoctoclaw migrate` through the real binary, on the peer homes in
//! `tests/fixtures/peers/<peer>/` (copied to a temporary folder first; `*.db.sql` files
//! become the SQLite databases the peers keep).

mod support;

use rusqlite::Connection;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use support::{TempHome, text};
use yoctoclaw::config::{Config, Env, ProviderKind};

/// Every fake secret the fixtures hold: none may appear anywhere but secrets.env.
const FIXTURE_SECRETS: &[&str] = &[
    "sk-or-test-openclaw-router",
    "sk-ant-test-openclaw",
    "gsk-test-openclaw-groq",
    "123456:TEST-openclaw-bot-token",
    "sk-ant-test-picoclaw",
    "sk-test-picoclaw-deepseek",
    "654321:TEST-picoclaw-bot-token",
    "BSA-test-picoclaw",
    "sk-or-test-nullclaw",
    "gsk-test-nullclaw",
    "987654:TEST-nullclaw-bot-token",
    "sk-or-test-zeroclaw",
    "777777:TEST-zeroclaw-bot-token",
    "8f2a1c0b9e7d6c5b4a39281706f5e4d3",
];

/// A peer home in a temporary folder, removed on drop.
struct Peer {
    dir: PathBuf,
}

impl Peer {
    fn copy(name: &str) -> Peer {
        let dir = TempHome::new(&format!("peer-{name}")).dir.clone();
        let src = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/peers")
            .join(name);
        copy_tree(&src, &dir);
        Peer { dir }
    }

    fn empty(tag: &str) -> Peer {
        let dir = TempHome::new(&format!("peer-{tag}")).dir.clone();
        std::fs::create_dir_all(&dir).unwrap();
        Peer { dir }
    }

    fn write(&self, rel: &str, bytes: impl AsRef<[u8]>) {
        let p = self.dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn copy_tree(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        let to = dst.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &to);
        } else if let Some(db) = to.to_str().unwrap().strip_suffix(".sql") {
            let c = Connection::open(db).unwrap();
            c.execute_batch(&std::fs::read_to_string(e.path()).unwrap())
                .unwrap();
        } else {
            std::fs::copy(e.path(), &to).unwrap();
        }
    }
}

fn migrate(home: &TempHome, peer: &str, dir: &Path, extra: &[&str]) -> (i32, String, String) {
    let mut args = vec!["migrate", "--from", peer, "--path", dir.to_str().unwrap()];
    args.extend_from_slice(extra);
    let out = home.run(&args);
    (
        out.status.code().unwrap_or(-1),
        text(&out.stdout),
        text(&out.stderr),
    )
}

/// Every file below `dir`: relative path, mode, and content (symlinks: their target).
fn snapshot(dir: &Path) -> Vec<(String, u32, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd {
            let p = e.unwrap().path();
            let md = std::fs::symlink_metadata(&p).unwrap();
            let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
            let mode = md.permissions().mode();
            if md.is_dir() {
                out.push((rel, mode, Vec::new()));
                stack.push(p);
            } else if md.file_type().is_symlink() {
                let t = std::fs::read_link(&p).unwrap();
                out.push((rel, mode, t.to_string_lossy().as_bytes().to_vec()));
            } else {
                out.push((rel, mode, std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

fn hash(snap: &[(String, u32, Vec<u8>)]) -> u64 {
    let mut h = DefaultHasher::new();
    snap.hash(&mut h);
    h.finish()
}

fn config_of(home: &TempHome) -> Config {
    let p = home.dir.join("config.json");
    let t = std::fs::read_to_string(&p).expect("config.json written");
    yoctoclaw::config::parse(Some(&t), &p, &Env::isolated(&[])).expect("config.json loads")
}

fn secrets_of(home: &TempHome) -> String {
    let p = home.dir.join("secrets.env");
    let mode = std::fs::metadata(&p)
        .expect("secrets.env written")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "secrets.env mode");
    std::fs::read_to_string(p).unwrap()
}

fn count(home: &TempHome, sql: &str) -> i64 {
    let c = Connection::open(home.dir.join("yoctoclaw.db")).unwrap();
    c.query_row(sql, [], |r| r.get(0)).unwrap()
}

/// No fixture secret in stdout, stderr, or any file of the home but secrets.env.
fn assert_secrets_contained(home: &TempHome, out: &str, err: &str) {
    for s in FIXTURE_SECRETS {
        assert!(!out.contains(s) && !err.contains(s), "{s} printed");
        for (rel, _, bytes) in snapshot(&home.dir) {
            if rel == "secrets.env" {
                continue;
            }
            let found = bytes.windows(s.len()).any(|w| w == s.as_bytes());
            assert!(!found, "{s} found in {rel}");
        }
    }
}

fn ws(home: &TempHome, rel: &str) -> String {
    std::fs::read_to_string(home.workspace().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

#[test]
fn openclaw_home_migrates() {
    let peer = Peer::copy("openclaw");
    let home = TempHome::new("mig-openclaw");
    let (code, out, err) = migrate(&home, "openclaw", &peer.dir, &[]);
    assert_eq!(code, 0, "{out}{err}");
    let cfg = config_of(&home);
    assert_eq!(cfg.provider.kind, ProviderKind::OpenAi);
    assert_eq!(cfg.provider.base_url, "https://openrouter.ai/api/v1");
    assert_eq!(cfg.provider.model, "anthropic/claude-sonnet-4.5");
    assert_eq!(cfg.fallbacks.len(), 2);
    assert_eq!(cfg.fallbacks[0].kind, ProviderKind::Anthropic);
    assert_eq!(cfg.fallbacks[0].api_key_env, "ANTHROPIC_API_KEY");
    assert_eq!(cfg.fallbacks[1].base_url, "https://api.groq.com/openai/v1");
    assert!(cfg.telegram.enabled);
    assert_eq!(
        cfg.telegram.allow_from,
        ["111111111", "222222222", "333333333"]
    );
    let s = secrets_of(&home);
    for line in [
        "YOCTOCLAW_API_KEY=sk-or-test-openclaw-router",
        "ANTHROPIC_API_KEY=sk-ant-test-openclaw",
        "GROQ_API_KEY=gsk-test-openclaw-groq",
        "TELEGRAM_BOT_TOKEN=123456:TEST-openclaw-bot-token",
    ] {
        assert!(s.lines().any(|l| l == line), "{line} missing");
    }
    assert_secrets_contained(&home, &out, &err);
    assert!(ws(&home, "SOUL.md").contains("Molty"));
    assert!(ws(&home, "skills/weather/SKILL.md").contains("name: weather"));
    // Five distinct memories: the daily note repeats one of MEMORY.md's.
    assert_eq!(count(&home, "SELECT COUNT(*) FROM memories"), 5);
    assert_eq!(
        count(
            &home,
            "SELECT COUNT(*) FROM memories WHERE category = 'daily'"
        ),
        2
    );
    assert_eq!(count(&home, "SELECT COUNT(*) FROM cron_jobs"), 3);
    assert_eq!(
        count(
            &home,
            "SELECT COUNT(*) FROM cron_jobs WHERE target = 'telegram:111111111' AND schedule = '0 8 * * *'"
        ),
        1
    );
    for why in [
        "bedrock",
        "America/New_York",
        "\"stream\" schedules",
        "wildcard",
        "disabled",
    ] {
        assert!(
            out.lines()
                .any(|l| l.starts_with("  skip") && l.contains(why)),
            "{why}: {out}"
        );
    }
}

#[test]
fn picoclaw_home_migrates() {
    let peer = Peer::copy("picoclaw");
    let home = TempHome::new("mig-picoclaw");
    let (code, out, err) = migrate(&home, "picoclaw", &peer.dir, &[]);
    assert_eq!(code, 0, "{out}{err}");
    let cfg = config_of(&home);
    assert_eq!(cfg.provider.kind, ProviderKind::Anthropic);
    assert_eq!(cfg.provider.base_url, "https://api.anthropic.com");
    assert_eq!(cfg.provider.model, "claude-sonnet-4.6");
    assert_eq!(cfg.fallbacks.len(), 2);
    assert_eq!(cfg.fallbacks[1].base_url, "http://localhost:11434/v1");
    assert_eq!(cfg.telegram.allow_from, ["444444444", "@carol_w"]);
    let s = secrets_of(&home);
    assert!(s.contains("YOCTOCLAW_API_KEY=sk-ant-test-picoclaw\n"));
    assert!(s.contains("DEEPSEEK_API_KEY=sk-test-picoclaw-deepseek\n"));
    assert!(s.contains("TELEGRAM_BOT_TOKEN=654321:TEST-picoclaw-bot-token\n"));
    assert!(
        !s.contains("BSA-test"),
        "only keys yoctoclaw uses come across"
    );
    assert_secrets_contained(&home, &out, &err);
    // AGENT.md is yoctoclaw's AGENTS.md.
    assert!(ws(&home, "AGENTS.md").contains("Sipeed board"));
    assert_eq!(count(&home, "SELECT COUNT(*) FROM memories"), 3);
    assert_eq!(
        count(&home, "SELECT COUNT(*) FROM cron_jobs WHERE is_message = 1"),
        1
    );
    assert_eq!(count(&home, "SELECT COUNT(*) FROM cron_jobs"), 2);
    assert!(out.contains("\"Backup\": it runs a shell command"), "{out}");
}

#[test]
fn nullclaw_home_migrates() {
    let peer = Peer::copy("nullclaw");
    let home = TempHome::new("mig-nullclaw");
    let (code, out, err) = migrate(&home, "nullclaw", &peer.dir, &[]);
    assert_eq!(code, 0, "{out}{err}");
    let cfg = config_of(&home);
    assert_eq!(cfg.provider.model, "anthropic/claude-sonnet-4");
    assert_eq!(cfg.fallbacks[0].model, "openai/gpt-4o-mini");
    assert_eq!(cfg.fallbacks[0].api_key_env, "YOCTOCLAW_API_KEY");
    assert_eq!(cfg.fallbacks[1].api_key_env, "GROQ_API_KEY");
    assert_eq!(cfg.telegram.allow_from, ["555555555", "@erin"]);
    let s = secrets_of(&home);
    assert!(s.contains("YOCTOCLAW_API_KEY=sk-or-test-nullclaw\n"));
    assert!(s.contains("TELEGRAM_BOT_TOKEN=987654:TEST-nullclaw-bot-token\n"));
    assert_secrets_contained(&home, &out, &err);
    // `**user_name**: Erin` keeps its key; the database's user_name is the same memory.
    let c = Connection::open(home.dir.join("yoctoclaw.db")).unwrap();
    let t: String = c
        .query_row(
            "SELECT text FROM memories WHERE key = 'user_name'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(t, "Erin");
    assert_eq!(count(&home, "SELECT COUNT(*) FROM memories"), 7);
    assert_eq!(
        count(
            &home,
            "SELECT COUNT(*) FROM memories WHERE category = 'conversation'"
        ),
        1
    );
    assert_eq!(
        count(&home, "SELECT COUNT(*) FROM memories WHERE key = 'router'"),
        0
    );
    assert_eq!(count(&home, "SELECT COUNT(*) FROM cron_jobs"), 2);
    assert_eq!(
        count(
            &home,
            "SELECT COUNT(*) FROM cron_jobs WHERE schedule = 'at 2100-01-01T09:00'"
        ),
        1
    );
}

#[test]
fn zeroclaw_home_migrates() {
    let peer = Peer::copy("zeroclaw");
    let home = TempHome::new("mig-zeroclaw");
    let (code, out, err) = migrate(&home, "zeroclaw", &peer.dir, &[]);
    assert_eq!(code, 0, "{out}{err}");
    let cfg = config_of(&home);
    assert_eq!(cfg.provider.model, "anthropic/claude-sonnet-4.6");
    assert_eq!(cfg.fallbacks[0].base_url, "http://127.0.0.1:11434/v1");
    assert_eq!(cfg.fallbacks[1].kind, ProviderKind::Anthropic);
    assert_eq!(
        cfg.telegram.allow_from,
        ["777777777", "@frank", "888888888"]
    );
    let s = secrets_of(&home);
    assert!(s.contains("YOCTOCLAW_API_KEY=sk-or-test-zeroclaw\n"));
    assert!(
        !s.contains("ANTHROPIC_API_KEY"),
        "an encrypted key cannot come"
    );
    assert_secrets_contained(&home, &out, &err);
    assert!(
        out.contains("skip    secret   ANTHROPIC_API_KEY: the peer stores it encrypted"),
        "{out}"
    );
    assert!(ws(&home, "skills/git/SKILL.md").contains("name: git"));
    assert_eq!(count(&home, "SELECT COUNT(*) FROM memories"), 3);
    assert!(out.contains("more than 4096"), "{out}");
    // `[[cron.jobs]]` come; jobs made with `zeroclaw cron` (jobs.db) are named, not read.
    assert_eq!(count(&home, "SELECT COUNT(*) FROM cron_jobs"), 1);
    assert!(
        out.contains("skip    cron     data/cron/jobs.db: not read: add these jobs again"),
        "{out}"
    );
}

#[test]
fn dry_run_changes_nothing_and_names_only_variables() {
    for name in ["openclaw", "picoclaw", "nullclaw", "zeroclaw"] {
        let peer = Peer::copy(name);
        let peer_before = snapshot(&peer.dir);
        // A target that does not exist stays absent.
        let fresh = TempHome::new("mig-dry-fresh");
        let (code, out, err) = migrate(&fresh, name, &peer.dir, &["--dry-run"]);
        assert_eq!(code, 0, "{out}{err}");
        assert!(!fresh.dir.exists(), "{name}: dry run created the home");
        assert!(
            out.contains("new     secret   YOCTOCLAW_API_KEY in secrets.env"),
            "{out}"
        );
        assert!(out.contains("dry run: nothing was written"));
        assert_secrets_contained(&fresh, &out, &err);
        // An onboarded home with a database and a memory stays byte for byte the same.
        let home = TempHome::new("mig-dry");
        assert!(home.run(&["onboard"]).status.success());
        let added = home.run(&["memory", "add", "k1", "something", "to", "remember"]);
        assert!(added.status.success(), "{}", text(&added.stderr));
        let before = snapshot(&home.dir);
        let (code, out, _) = migrate(&home, name, &peer.dir, &["--dry-run"]);
        assert_eq!(code, 0, "{out}");
        let after = snapshot(&home.dir);
        assert_eq!(
            hash(&before),
            hash(&after),
            "{name}: dry run changed the home"
        );
        assert_eq!(before, after);
        assert_eq!(
            peer_before,
            snapshot(&peer.dir),
            "{name}: the peer home changed"
        );
    }
}

#[test]
fn a_second_run_adds_nothing() {
    for name in ["openclaw", "picoclaw", "nullclaw", "zeroclaw"] {
        let peer = Peer::copy(name);
        let home = TempHome::new("mig-twice");
        let (code, first, _) = migrate(&home, name, &peer.dir, &[]);
        assert_eq!(code, 0, "{first}");
        let mems = count(&home, "SELECT COUNT(*) FROM memories");
        let jobs = count(&home, "SELECT COUNT(*) FROM cron_jobs");
        let files = snapshot(&home.workspace());
        let secrets = secrets_of(&home);
        let (code, second, err) = migrate(&home, name, &peer.dir, &[]);
        assert_eq!(code, 0, "{second}{err}");
        assert!(
            !second.lines().any(|l| l.starts_with("  new")),
            "{name}: {second}"
        );
        assert!(
            second
                .lines()
                .last()
                .unwrap()
                .starts_with("0 new, 0 replaced"),
            "{second}"
        );
        assert_eq!(count(&home, "SELECT COUNT(*) FROM memories"), mems);
        assert_eq!(count(&home, "SELECT COUNT(*) FROM cron_jobs"), jobs);
        assert_eq!(files, snapshot(&home.workspace()));
        assert_eq!(secrets, secrets_of(&home));
    }
}

#[test]
fn existing_work_is_kept_without_force() {
    let peer = Peer::copy("openclaw");
    let home = TempHome::new("mig-force");
    assert!(home.run(&["onboard"]).status.success());
    std::fs::write(home.workspace().join("SOUL.md"), "# My own soul\n").unwrap();
    let cfg_path = home.dir.join("config.json");
    std::fs::write(&cfg_path, "{ \"log_level\": \"debug\" }\n").unwrap();
    let sp = home.dir.join("secrets.env");
    std::fs::write(&sp, "# mine\nYOCTOCLAW_API_KEY=sk-mine\nOTHER=1\n").unwrap();
    std::fs::set_permissions(&sp, std::fs::Permissions::from_mode(0o600)).unwrap();

    let (code, out, err) = migrate(&home, "openclaw", &peer.dir, &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(ws(&home, "SOUL.md"), "# My own soul\n");
    assert!(
        out.contains(
            "kept    file     workspace/SOUL.md: exists and differs (--force replaces it)"
        ),
        "{out}"
    );
    // USER.md was onboard's unedited template: replaced without --force.
    assert!(ws(&home, "USER.md").contains("Ada"));
    assert!(out.contains("replace file     workspace/USER.md"), "{out}");
    assert_eq!(
        std::fs::read_to_string(&cfg_path).unwrap(),
        "{ \"log_level\": \"debug\" }\n"
    );
    assert!(out.contains("kept    config"), "{out}");
    let s = secrets_of(&home);
    assert!(
        s.contains("YOCTOCLAW_API_KEY=sk-mine\n")
            && s.contains("GROQ_API_KEY=gsk-test-openclaw-groq\n")
    );
    assert!(out.contains("kept    secret   YOCTOCLAW_API_KEY in secrets.env (holds another value"));
    assert!(!out.contains("sk-mine"));

    let (code, out, _) = migrate(&home, "openclaw", &peer.dir, &["--force"]);
    assert_eq!(code, 0, "{out}");
    assert!(ws(&home, "SOUL.md").contains("Molty"));
    assert_eq!(
        config_of(&home).provider.base_url,
        "https://openrouter.ai/api/v1"
    );
    let s = secrets_of(&home);
    assert!(
        s.starts_with("# mine\nYOCTOCLAW_API_KEY=sk-or-test-openclaw-router\nOTHER=1\n"),
        "{s}"
    );
    assert!(!s.contains("sk-mine"));
}

#[test]
fn broken_inputs_are_reported_item_by_item() {
    let peer = Peer::empty("broken");
    peer.write(
        "openclaw.json",
        "{ agents: { defaults: { model: 'openrouter/x' \n",
    );
    peer.write("workspace/SOUL.md", [0xff, 0xfe, 0x00, 0x9f, b'\n', 0xc3]);
    peer.write("workspace/AGENTS.md", "# Fine\n");
    peer.write(
        "workspace/memory/brain.db",
        "this is not a database, it only says so",
    );
    std::os::unix::fs::symlink("USER.md", peer.dir.join("workspace/USER.md")).unwrap();
    std::os::unix::fs::symlink("/etc/hostname", peer.dir.join("workspace/TOOLS.md")).unwrap();
    std::os::unix::fs::symlink(&peer.dir, peer.dir.join("workspace/skills")).unwrap();
    let filler = "the garden sensor reported a normal reading. ".repeat(8);
    let big: String = (0..12_000)
        .map(|i| format!("- fact {i}: {filler}\n"))
        .collect();
    assert!(big.len() > 4 * 1024 * 1024);
    peer.write("workspace/MEMORY.md", &big);
    peer.write("cron/jobs.json", "{\"jobs\": [{\"name\": \"x\", \"schedule\": {\"kind\": \"every\", \"everyMs\": 1500}, \"payload\": {\"kind\": \"agentTurn\", \"message\": \"m\"}}]}");

    let home = TempHome::new("mig-broken");
    let before_dry = snapshot(&peer.dir);
    let (code, out, err) = migrate(&home, "openclaw", &peer.dir, &["--dry-run"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!home.dir.exists());
    assert_eq!(before_dry, snapshot(&peer.dir));

    let (code, out, err) = migrate(&home, "openclaw", &peer.dir, &[]);
    assert_eq!(code, 0, "{out}{err}");
    let skip = |needle: &str| {
        assert!(
            out.lines()
                .any(|l| l.starts_with("  skip") && l.contains(needle)),
            "no skip line with {needle:?}:\n{out}"
        )
    };
    skip("openclaw.json: not valid JSON5 (line 2");
    skip("workspace/SOUL.md: not UTF-8 text");
    skip("workspace/USER.md: it is a symlink loop");
    skip("workspace/TOOLS.md: it leads outside the peer home");
    skip("workspace/MEMORY.md: larger than 4 MiB: only its first 4 MiB were read");
    skip("its interval is not whole seconds");
    skip("workspace/memory/brain.db: its memories cannot be read");
    assert_eq!(ws(&home, "AGENTS.md"), "# Fine\n");
    assert!(!home.workspace().join("SOUL.md").exists());
    let n = count(&home, "SELECT COUNT(*) FROM memories");
    assert!(n > 10_000 && n < 12_000, "{n}");
    // Progress on plain lines when stdout is not a terminal.
    assert!(
        out.lines().any(|l| l == format!("  memories 5000/{n}")),
        "{out:.300}"
    );
}

#[test]
fn nothing_usable_exits_1() {
    let peer = Peer::empty("useless");
    peer.write("config.json", "{\"model_list\": [{\"model_name\": \"b\", \"model\": \"bedrock/claude\"}], \"agents\": {\"defaults\": {\"model_name\": \"b\"}}}");
    let home = TempHome::new("mig-useless");
    let (code, out, err) = migrate(&home, "picoclaw", &peer.dir, &[]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("skip    provider bedrock claude: "), "{out}");
    assert!(err.contains("nothing was brought across"), "{err}");
    assert!(!home.dir.join("config.json").exists());
}

#[test]
fn bad_usage_exits_2() {
    let home = TempHome::new("mig-usage");
    let (code, _, err) = migrate(&home, "hermes", Path::new("/nonexistent"), &[]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown peer \"hermes\""), "{err}");
    let (code, _, err) = migrate(&home, "openclaw", Path::new("/nonexistent/peer"), &[]);
    assert_eq!(code, 2);
    assert!(
        err.contains("cannot read the peer home /nonexistent/peer"),
        "{err}"
    );
}

#[test]
fn a_failed_database_import_keeps_none_of_it() {
    let peer = Peer::copy("openclaw");
    let home = TempHome::new("mig-rollback");
    assert!(home.run(&["onboard"]).status.success());
    let added = home.run(&["memory", "add", "mine", "my own memory"]);
    assert!(added.status.success(), "{}", text(&added.stderr));
    // The cron step fails after the memories are in: none of them may stay.
    let c = Connection::open(home.dir.join("yoctoclaw.db")).unwrap();
    c.execute_batch(
        "CREATE TRIGGER no_jobs BEFORE INSERT ON cron_jobs BEGIN SELECT RAISE(ABORT, 'no jobs today'); END;",
    )
    .unwrap();
    drop(c);
    let (code, out, err) = migrate(&home, "openclaw", &peer.dir, &[]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("the database import failed and nothing of it was kept"),
        "{err}"
    );
    assert_eq!(count(&home, "SELECT COUNT(*) FROM memories"), 1);
    assert_eq!(count(&home, "SELECT COUNT(*) FROM cron_jobs"), 0);
}
