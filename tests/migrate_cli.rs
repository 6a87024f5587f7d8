//! `yoctoclaw migrate` through the real binary, on the peer homes in
//! `tests/fixtures/peers/<peer>/` (copied to a temporary folder first; `*.db.sql` files
//! become the SQLite databases the peers keep; `picoclaw-v0` is a PicoClaw home with the
//! older config, without `model_list`). A migrated home is then run: `agent -m` against a
//! fake model and the gateway against a fake Telegram.

mod support;

use rusqlite::Connection;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;
use support::fake_http::{chat_bodies, openai_text};
use support::fake_telegram::FakeTelegram;
use support::gateway::{FAST_BACKOFF, Gateway};
use support::{TempHome, succeeded, text};
use yoctoclaw::config::mcp::{McpServerConfig, McpTransport};
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
    "sk-or-test-picoclaw-v0",
    "gsk-test-picoclaw-v0",
    "112233:TEST-picoclaw-v0-bot-token",
    "ctx7sk-test-picoclaw",
    "ghp_test_picoclaw",
    "picoclaw-test-remote-token",
    "xoxb-test-picoclaw-slack",
    "zeroclaw-test-ha-token",
    "0a1b2c3d4e5f60718293a4b5c6d7e8f9",
    "nullclaw-test-myserver-key",
    "ghp_test_openclaw",
    "openclaw-test-legacy-key",
];

/// Every peer fixture home.
const FIXTURES: [&str; 5] = [
    "openclaw",
    "picoclaw",
    "picoclaw-v0",
    "nullclaw",
    "zeroclaw",
];

/// The peer a fixture home is of (`picoclaw-v0` is PicoClaw's).
fn peer_of(fixture: &str) -> &str {
    fixture.split('-').next().unwrap()
}

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

/// The README's "Full config example" of PicoClaw before `model_list` (commit 5d1669ec,
/// 2026-02-18), test keys in place of its placeholders.
#[test]
fn picoclaw_v0_home_migrates() {
    let peer = Peer::copy("picoclaw-v0");
    let home = TempHome::new("mig-picoclaw-v0");
    let (code, out, err) = migrate(&home, "picoclaw", &peer.dir, &[]);
    assert_eq!(code, 0, "{out}{err}");
    let cfg = config_of(&home);
    assert_eq!(cfg.provider.kind, ProviderKind::OpenAi);
    assert_eq!(cfg.provider.base_url, "https://openrouter.ai/api/v1");
    assert_eq!(cfg.provider.model, "anthropic/claude-opus-4-5");
    assert!(cfg.fallbacks.is_empty());
    assert!(cfg.telegram.enabled);
    assert_eq!(cfg.telegram.allow_from, ["123456789"]);
    // Groq's key transcribed Telegram voice notes in PicoClaw.
    assert_eq!(cfg.transcription.base_url, "https://api.groq.com/openai/v1");
    assert_eq!(cfg.transcription.model, "whisper-large-v3");
    let s = secrets_of(&home);
    for line in [
        "YOCTOCLAW_API_KEY=sk-or-test-picoclaw-v0",
        "YOCTOCLAW_TRANSCRIPTION_API_KEY=gsk-test-picoclaw-v0",
        "TELEGRAM_BOT_TOKEN=112233:TEST-picoclaw-v0-bot-token",
    ] {
        assert!(s.lines().any(|l| l == line), "{line} missing:\n{out}");
    }
    assert_secrets_contained(&home, &out, &err);
    assert!(ws(&home, "USER.md").contains("Dan"));
    assert_eq!(count(&home, "SELECT COUNT(*) FROM memories"), 2);
    assert!(
        !out.contains("old config shape"),
        "the old shape is read now: {out}"
    );
}

const OLD_KEY: &str = "sk-or-v1-test-picoclaw-old-key";
const OLD_TOKEN: &str = "987654321:AAHtestOldPicoClawTokenQwErTyUiOp1";
const ALICE: i64 = 424_242;

/// A PicoClaw home whose `config.json` has the older shape (`agents.defaults.{provider,
/// model}`, `providers.<name>`, `channels.telegram`) as its README showed it, the provider
/// at `api_base`.
fn old_picoclaw(tag: &str, api_base: &str, allow_from: &str) -> Peer {
    let peer = Peer::empty(tag);
    peer.write(
        "config.json",
        format!(
            r#"{{
  "agents": {{
    "defaults": {{
      "workspace": "~/.picoclaw/workspace",
      "restrict_to_workspace": true,
      "provider": "openrouter",
      "model": "anthropic/claude-opus-4-5",
      "max_tokens": 8192,
      "temperature": 0.7,
      "max_tool_iterations": 20
    }}
  }},
  "channels": {{
    "telegram": {{
      "enabled": true,
      "token": "{OLD_TOKEN}",
      "proxy": "",
      "allow_from": {allow_from}
    }},
    "discord": {{ "enabled": false, "token": "YOUR_DISCORD_BOT_TOKEN", "allow_from": [] }}
  }},
  "providers": {{
    "anthropic": {{ "api_key": "", "api_base": "" }},
    "openrouter": {{ "api_key": "{OLD_KEY}", "api_base": "{api_base}" }},
    "groq": {{ "api_key": "gsk_xxx", "api_base": "" }},
    "zhipu": {{ "api_key": "YOUR_ZHIPU_API_KEY", "api_base": "" }}
  }},
  "tools": {{ "web": {{ "search": {{ "api_key": "YOUR_BRAVE_API_KEY", "max_results": 5 }} }} }},
  "heartbeat": {{ "enabled": true, "interval": 30 }}
}}"#
        ),
    );
    peer.write("workspace/USER.md", "# User\n\n- Name: Alice\n");
    peer
}

/// The gateway of `home` with the bot token from its secrets.env (the test's variable
/// emptied) and Telegram at the fake.
fn gateway_of(home: &TempHome, tg: &FakeTelegram) -> Gateway {
    Gateway::start(
        home,
        &[
            FAST_BACKOFF,
            ("TELEGRAM_BOT_TOKEN", ""),
            ("YOCTOCLAW_TELEGRAM_API_BASE", &tg.url()),
            ("YOCTOCLAW_TELEGRAM_POLL_TIMEOUT_SECS", "1"),
        ],
    )
}

/// Issue 29, point 10: the older PicoClaw config migrated, the home answers as it did:
/// `agent -m` through the migrated base URL with the migrated key, and the gateway with
/// the migrated bot token, to the allowed user only.
#[test]
fn picoclaw_old_config_migrates_and_the_home_answers() {
    let llm = chat_bodies(
        vec![openai_text("Hello from the migrated home")],
        Duration::ZERO,
    );
    let peer = old_picoclaw(
        "pc-v0-e2e",
        &format!("{}/v1", llm.url()),
        &format!(r#"[{ALICE}, "carol_w"]"#),
    );
    let home = TempHome::new("mig-pc-v0-e2e");
    let (code, out, err) = migrate(&home, "picoclaw", &peer.dir, &[]);
    assert_eq!(code, 0, "{out}{err}");
    for line in [
        &format!(
            "  new     provider openai {}/v1 model anthropic/claude-opus-4-5 (the peer's openrouter; key in YOCTOCLAW_API_KEY)",
            llm.url()
        ),
        &format!("  new     telegram on, allow_from: {ALICE}, @carol_w"),
        "  new     setting  provider.max_tokens 8192 (the peer's agents.defaults.max_tokens)",
        "  new     secret   YOCTOCLAW_API_KEY in secrets.env",
        "  new     secret   TELEGRAM_BOT_TOKEN in secrets.env",
        "  skip    config   agents.defaults.temperature: yoctoclaw sends no temperature: the model's own default is used",
    ] {
        assert!(out.lines().any(|l| l == line), "no line {line:?}:\n{out}");
    }
    for (secret, why) in [(OLD_KEY, "the key"), ("987654321:AAHtest", "the bot token")] {
        assert!(
            !out.contains(secret) && !err.contains(secret),
            "{why} printed"
        );
    }
    let cfg_text = std::fs::read_to_string(home.dir.join("config.json")).unwrap();
    assert!(!cfg_text.contains(OLD_KEY) && !cfg_text.contains("AAHtest"));
    let s = secrets_of(&home);
    assert!(
        s.contains(&format!("YOCTOCLAW_API_KEY={OLD_KEY}\n")),
        "{s:.20}"
    );
    assert!(s.contains(&format!("TELEGRAM_BOT_TOKEN={OLD_TOKEN}\n")));
    // The example's placeholders are not keys: no transcription, no Zhipu key.
    assert!(!s.contains("gsk_xxx") && !s.contains("YOUR_"));

    // `agent -m`: the model at the migrated URL, the key as the bearer token.
    let said = succeeded(&home.run(&["agent", "-m", "hello from the terminal"]));
    assert!(said.contains("Hello from the migrated home"), "{said}");
    let turns = llm.requests_to("/v1/chat/completions");
    assert_eq!(turns.len(), 1);
    assert_eq!(
        turns[0].header("authorization"),
        Some(format!("Bearer {OLD_KEY}").as_str())
    );
    assert!(
        turns[0]
            .body
            .contains(r#""model":"anthropic/claude-opus-4-5""#),
        "{}",
        turns[0].body
    );

    // The gateway: the migrated token, the allowlist (a stranger is refused, Alice answered).
    let tg = FakeTelegram::start();
    tg.push_private(555, "mallory", "let me in");
    tg.push_private(ALICE, "alice", "hello from Telegram");
    let mut g = gateway_of(&home, &tg);
    g.wait_for("Alice's reply", || !tg.sent_to(ALICE).is_empty());
    g.wait_for("the stranger's refusal", || !tg.sent_to(555).is_empty());
    let all = g.stop_cleanly();
    assert!(!all.contains("AAHtestOldPicoClawToken"), "the token leaked");
    assert_eq!(tg.sent_to(ALICE)[0].text, "Hello from the migrated home");
    assert!(tg.sent_to(555)[0].text.contains("555"));
    let reqs = tg.server.requests();
    assert!(
        !reqs.is_empty()
            && reqs
                .iter()
                .all(|r| r.path.starts_with(&format!("/bot{OLD_TOKEN}/"))),
        "Telegram called without the migrated token"
    );
    let turns = llm.requests_to("/v1/chat/completions");
    assert_eq!(turns.len(), 2, "only Alice's message reached the model");
    assert!(turns[1].body.contains("hello from Telegram"));
    assert!(turns.iter().all(|t| !t.body.contains("let me in")));
}

/// PicoClaw answered everyone when `allow_from` was empty; the migrated home keeps
/// yoctoclaw's deny by default, and the migration says so.
#[test]
fn picoclaw_old_config_with_an_empty_allowlist_answers_nobody() {
    let llm = chat_bodies(vec![openai_text("nobody should see this")], Duration::ZERO);
    let peer = old_picoclaw("pc-v0-deny", &format!("{}/v1", llm.url()), "[]");
    let home = TempHome::new("mig-pc-v0-deny");
    let (code, out, err) = migrate(&home, "picoclaw", &peer.dir, &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.lines().any(|l| l
            == "  skip    telegram allow_from []: PicoClaw answered everyone, yoctoclaw answers nobody: put your user id in telegram.allow_from"),
        "{out}"
    );
    let cfg = config_of(&home);
    assert!(cfg.telegram.enabled && cfg.telegram.allow_from.is_empty());

    let tg = FakeTelegram::start();
    tg.push_private(ALICE, "alice", "are you there?");
    let mut g = gateway_of(&home, &tg);
    g.wait_for("the refusal", || !tg.sent_to(ALICE).is_empty());
    g.stop_cleanly();
    let refused = tg.sent_to(ALICE);
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(
        refused[0].text.contains(&ALICE.to_string()),
        "{}",
        refused[0].text
    );
    assert!(llm.requests().is_empty(), "the model was called");
}

/// Both shapes in one config.json: `model_list` wins, as PicoClaw itself converts
/// `providers` only for a config without `model_list`.
#[test]
fn picoclaw_with_both_config_shapes_takes_model_list() {
    let peer = Peer::empty("pc-both");
    peer.write(
        "config.json",
        r#"{"agents": {"defaults": {"provider": "openrouter", "model": "anthropic/claude-opus-4-5", "model_name": "glm"}},
            "model_list": [{"model_name": "glm", "model": "zhipu/glm-4.7", "api_key": "sk-test-both-zhipu"}],
            "providers": {"openrouter": {"api_key": "sk-or-test-both-old"}}}"#,
    );
    let home = TempHome::new("mig-pc-both");
    let (code, out, err) = migrate(&home, "picoclaw", &peer.dir, &[]);
    assert_eq!(code, 0, "{out}{err}");
    let cfg = config_of(&home);
    assert_eq!(cfg.provider.model, "glm-4.7");
    assert_eq!(
        cfg.provider.base_url,
        "https://open.bigmodel.cn/api/paas/v4"
    );
    let s = secrets_of(&home);
    assert!(s.contains("YOCTOCLAW_API_KEY=sk-test-both-zhipu\n"));
    assert!(!s.contains("sk-or-test-both-old"));
    assert!(
        out.contains("  skip    provider providers: not read: model_list is there"),
        "{out}"
    );
}

#[test]
fn dry_run_changes_nothing_and_names_only_variables() {
    for fixture in FIXTURES {
        let (name, peer) = (peer_of(fixture), Peer::copy(fixture));
        let peer_before = snapshot(&peer.dir);
        // A target that does not exist stays absent.
        let fresh = TempHome::new("mig-dry-fresh");
        let (code, out, err) = migrate(&fresh, name, &peer.dir, &["--dry-run"]);
        assert_eq!(code, 0, "{out}{err}");
        assert!(!fresh.dir.exists(), "{fixture}: dry run created the home");
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
            "{fixture}: dry run changed the home"
        );
        assert_eq!(before, after);
        assert_eq!(
            peer_before,
            snapshot(&peer.dir),
            "{fixture}: the peer home changed"
        );
    }
}

#[test]
fn a_second_run_adds_nothing() {
    for fixture in FIXTURES {
        let (name, peer) = (peer_of(fixture), Peer::copy(fixture));
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
            "{fixture}: {second}"
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

/// The MCP server `name` of a migrated home's config.
fn mcp_server<'a>(cfg: &'a Config, name: &str) -> &'a McpServerConfig {
    cfg.mcp
        .server(name)
        .unwrap_or_else(|| panic!("no MCP server {name}: {:?}", cfg.mcp.servers))
}

fn stdio(s: &McpServerConfig) -> (&str, &[String], &[(String, String)]) {
    match &s.transport {
        McpTransport::Stdio {
            command, args, env, ..
        } => (command, args, env),
        t => panic!("{}: not stdio: {t:?}", s.name),
    }
}

fn http(s: &McpServerConfig) -> (&str, &[(String, String)], bool) {
    match &s.transport {
        McpTransport::Http {
            url,
            headers,
            legacy_sse,
        } => (url, headers, *legacy_sse),
        t => panic!("{}: not HTTP: {t:?}", s.name),
    }
}

fn pair(k: &str, v: &str) -> (String, String) {
    (k.to_string(), v.to_string())
}

fn skipped(out: &str, what: &str) -> bool {
    out.lines()
        .any(|l| l.starts_with("  skip") && l.contains(what))
}

/// PicoClaw's `tools.mcp` as its config.example.json and tools_configuration.md write it.
#[test]
fn picoclaw_mcp_servers_come_with_their_secrets_in_secrets_env() {
    let peer = Peer::copy("picoclaw");
    let home = TempHome::new("mig-pc-mcp");
    let (code, out, err) = migrate(&home, "picoclaw", &peer.dir, &[]);
    assert_eq!(code, 0, "{out}{err}");
    let cfg = config_of(&home);
    let names: Vec<&str> = cfg.mcp.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "brave-search",
            "context7",
            "filesystem",
            "github",
            "remote-mcp",
            "slack"
        ]
    );
    // PicoClaw's "http" and its "sse" (and a URL without a type) are Streamable HTTP.
    let (url, headers, legacy) = http(mcp_server(&cfg, "context7"));
    assert_eq!(url, "https://mcp.context7.com/mcp");
    assert_eq!(
        headers,
        [pair("CONTEXT7_API_KEY", "${MCP_CONTEXT7_CONTEXT7_API_KEY}")]
    );
    assert!(!legacy);
    let (_, headers, legacy) = http(mcp_server(&cfg, "remote-mcp"));
    assert_eq!(
        headers,
        [pair(
            "Authorization",
            "Bearer ${MCP_REMOTE_MCP_AUTHORIZATION}"
        )]
    );
    assert!(!legacy);
    let (command, args, env) = stdio(mcp_server(&cfg, "github"));
    assert_eq!((command, args.len()), ("npx", 2));
    assert_eq!(
        env,
        [pair(
            "GITHUB_PERSONAL_ACCESS_TOKEN",
            "${MCP_GITHUB_GITHUB_PERSONAL_ACCESS_TOKEN}"
        )]
    );
    // env_file (relative to the workspace): the token to secrets.env, the team id as is.
    let (_, _, env) = stdio(mcp_server(&cfg, "slack"));
    assert_eq!(
        env,
        [
            pair("SLACK_BOT_TOKEN", "${MCP_SLACK_SLACK_BOT_TOKEN}"),
            pair("SLACK_TEAM_ID", "T01234567")
        ]
    );
    // PicoClaw's per-server `enabled` is off unless true.
    assert!(!mcp_server(&cfg, "brave-search").enabled);
    assert!(mcp_server(&cfg, "filesystem").enabled);
    let s = secrets_of(&home);
    for line in [
        "MCP_CONTEXT7_CONTEXT7_API_KEY=ctx7sk-test-picoclaw",
        "MCP_GITHUB_GITHUB_PERSONAL_ACCESS_TOKEN=ghp_test_picoclaw",
        "MCP_REMOTE_MCP_AUTHORIZATION=picoclaw-test-remote-token",
        "MCP_SLACK_SLACK_BOT_TOKEN=xoxb-test-picoclaw-slack",
    ] {
        assert!(s.lines().any(|l| l == line), "{line} missing: {out}");
    }
    assert_secrets_contained(&home, &out, &err);
    // The example's placeholder is named, not brought; the password in an argument
    // keeps the server out.
    assert!(
        skipped(&out, "MCP_BRAVE_SEARCH_BRAVE_API_KEY: a placeholder"),
        "{out}"
    );
    assert!(
        skipped(&out, "postgres: an argument carries a password"),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("  new     mcp") && l.contains("github: stdio npx")),
        "{out}"
    );
}

/// ZeroClaw's `[[mcp.servers]]`, granted to the agent through `[mcp_bundles.*]`.
#[test]
fn zeroclaw_mcp_servers_follow_the_agents_bundles() {
    let peer = Peer::copy("zeroclaw");
    let home = TempHome::new("mig-zc-mcp");
    let (code, out, err) = migrate(&home, "zeroclaw", &peer.dir, &[]);
    assert_eq!(code, 0, "{out}{err}");
    let cfg = config_of(&home);
    let fs = mcp_server(&cfg, "filesystem");
    assert!(fs.enabled);
    assert_eq!(fs.timeout_secs, 30);
    assert_eq!(stdio(fs).1.last().map(String::as_str), Some("/srv/notes"));
    let ha = mcp_server(&cfg, "home-assistant");
    let (url, headers, legacy) = http(ha);
    assert_eq!(url, "http://homeassistant.local:8123/api/mcp");
    assert_eq!(
        headers,
        [pair(
            "Authorization",
            "Bearer ${MCP_HOME_ASSISTANT_AUTHORIZATION}"
        )]
    );
    assert!(!legacy && ha.enabled);
    // ZeroClaw's sse is the legacy HTTP+SSE transport; not in the agent's bundle: off.
    let legacy = mcp_server(&cfg, "legacy");
    assert!(http(legacy).2 && !legacy.enabled);
    // Excluded by the bundle, and its token encrypted: off, the variable named.
    let gh = mcp_server(&cfg, "github");
    assert!(!gh.enabled);
    assert_eq!(
        stdio(gh).2,
        [pair(
            "GITHUB_PERSONAL_ACCESS_TOKEN",
            "${MCP_GITHUB_GITHUB_PERSONAL_ACCESS_TOKEN}"
        )]
    );
    assert!(
        skipped(
            &out,
            "MCP_GITHUB_GITHUB_PERSONAL_ACCESS_TOKEN: the peer stores it encrypted"
        ),
        "{out}"
    );
    assert!(
        secrets_of(&home)
            .lines()
            .any(|l| l == "MCP_HOME_ASSISTANT_AUTHORIZATION=zeroclaw-test-ha-token")
    );
    assert_secrets_contained(&home, &out, &err);
}

/// NullClaw's `mcp_servers` (stdio only), as its README and config tests write it.
#[test]
fn nullclaw_mcp_servers_come() {
    let peer = Peer::copy("nullclaw");
    let home = TempHome::new("mig-nc-mcp");
    let (code, out, err) = migrate(&home, "nullclaw", &peer.dir, &[]);
    assert_eq!(code, 0, "{out}{err}");
    let cfg = config_of(&home);
    assert_eq!(cfg.mcp.servers.len(), 3);
    assert_eq!(stdio(mcp_server(&cfg, "git")).0, "mcp-server-git");
    let (command, args, env) = stdio(mcp_server(&cfg, "myserver"));
    assert_eq!(
        (command, args),
        ("/usr/bin/server", &["--verbose".to_string()][..])
    );
    assert_eq!(
        env,
        [
            pair("DEBUG", "true"),
            pair("MYSERVER_API_KEY", "${MCP_MYSERVER_MYSERVER_API_KEY}"),
            pair("NODE_ENV", "production"),
        ]
    );
    assert!(
        secrets_of(&home)
            .lines()
            .any(|l| l == "MCP_MYSERVER_MYSERVER_API_KEY=nullclaw-test-myserver-key")
    );
    assert!(
        skipped(&out, "remote: no command: NullClaw did not run it"),
        "{out}"
    );
    assert_secrets_contained(&home, &out, &err);
}

/// OpenClaw's `mcp.servers` as `openclaw mcp set` saves them (docs/cli/mcp.md).
#[test]
fn openclaw_mcp_servers_come_and_what_cannot_is_named() {
    let peer = Peer::copy("openclaw");
    let home = TempHome::new("mig-oc-mcp");
    let (code, out, err) = migrate(&home, "openclaw", &peer.dir, &[]);
    assert_eq!(code, 0, "{out}{err}");
    let cfg = config_of(&home);
    let names: Vec<&str> = cfg.mcp.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["context7", "docs", "files", "github", "legacy"]);
    // A `${VAR}` the peer's .env sets: its value to secrets.env under our name.
    assert_eq!(
        stdio(mcp_server(&cfg, "github")).2,
        [pair("GITHUB_TOKEN", "${MCP_GITHUB_GITHUB_TOKEN}")]
    );
    assert!(
        secrets_of(&home)
            .lines()
            .any(|l| l == "MCP_GITHUB_GITHUB_TOKEN=ghp_test_openclaw")
    );
    // One it does not set stays a reference to the same variable.
    let docs = mcp_server(&cfg, "docs");
    let (_, headers, legacy) = http(docs);
    assert_eq!(headers, [pair("Authorization", "Bearer ${DOCS_MCP_TOKEN}")]);
    assert!(!legacy);
    assert_eq!(docs.timeout_secs, 20);
    assert_eq!(docs.allow_tools, ["search", "read_page"]);
    // No transport with a URL: OpenClaw's legacy SSE; requestTimeoutMs in seconds.
    let l = mcp_server(&cfg, "legacy");
    assert!(http(l).2);
    assert_eq!(l.timeout_secs, 30);
    assert_eq!(http(l).1, [pair("X-API-Key", "${MCP_LEGACY_X_API_KEY}")]);
    // A filter with patterns: off, and said why.
    assert!(!mcp_server(&cfg, "files").enabled);
    assert!(
        out.contains("files: stdio npx, off: its toolFilter has patterns"),
        "{out}"
    );
    assert!(
        skipped(&out, "remote-tools: it signs in with OAuth"),
        "{out}"
    );
    assert_secrets_contained(&home, &out, &err);
}
