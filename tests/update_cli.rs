//! `yoctoclaw update` end to end through the real binary: release archives made and
//! signed here with the `minisign` tool (its default prehashed "ED" signatures and the
//! legacy "Ed" ones), served by a fake release server over TLS with a test CA, installed
//! beside a copy of the binary that the real `service install` (systemd, under `--root`)
//! wrote a unit for, and restarted through a fake `systemctl` on PATH that starts the
//! unit's `ExecStart` line. Each bad input leaves the installed binary as it was with one
//! sentence; a new binary that crashes at start or never writes its health mark is rolled
//! back automatically.
//!
//! The "binaries" are small shell scripts that run the binary under test (so an archive is
//! a few hundred bytes, and the gateway that starts is the real one, writing the real
//! health mark); `YOCTOCLAW_TEST_EXE` (a test hook) names the copy to replace and
//! `YOCTOCLAW_TEST_ARCH` makes this host an aarch64 board.

mod support;

use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::tls::TestCa;
use support::{TempHome, skipped, text};

/// Longest wait for the fake service's gateway (a hang guard).
const PATIENCE: Duration = Duration::from_secs(40);
const NEW: &str = "9.9.9";
const BOARD: &str = "aarch64-generic";

fn have_minisign(test: &str) -> bool {
    let ok = Command::new("minisign")
        .arg("-v")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok();
    if !ok {
        skipped(
            test,
            "the minisign tool is not installed (apt-get install minisign)",
        );
    }
    ok
}

/// A shell script that runs the binary under test, marked `tag`.
fn wrapper(tag: &str) -> String {
    let mut line = String::from("exec");
    for a in support::binary::runner() {
        line.push_str(&format!(" '{a}'"));
    }
    line.push_str(&format!(" '{}' \"$@\"", support::bin().display()));
    format!("#!/bin/sh\n# {tag}\n{line}\n")
}

fn write_exec(p: &Path, text: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The fake `systemctl`: logs its arguments; `restart` stops the gateway it started last
/// and starts the unit's `ExecStart` line in the background.
/// It finds its state and the unit by its own path (it gets no test variables).
const SYSTEMCTL: &str = r#"#!/bin/sh
w=$(dirname "$0")/..
FAKE_STATE=$w/state
FAKE_UNIT=$w/sys/etc/systemd/system/yoctoclaw.service
echo "$*" >> "$FAKE_STATE/calls"
[ "$1" = restart ] || exit 0
if [ -f "$FAKE_STATE/pid" ]; then kill "$(cat "$FAKE_STATE/pid")" 2>/dev/null; fi
cmd=$(sed -n 's/^ExecStart=//p' "$FAKE_UNIT")
$cmd >> "$FAKE_STATE/gateway.log" 2>&1 &
echo $! > "$FAKE_STATE/pid"
"#;

/// A minisign key pair (no password).
struct Key {
    public: String,
    secret: PathBuf,
}

fn keygen(dir: &Path, name: &str) -> Key {
    let (p, s) = (
        dir.join(format!("{name}.pub")),
        dir.join(format!("{name}.key")),
    );
    let out = Command::new("minisign")
        .args(["-G", "-W", "-p"])
        .arg(&p)
        .arg("-s")
        .arg(&s)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let public = std::fs::read_to_string(&p)
        .unwrap()
        .lines()
        .nth(1)
        .unwrap()
        .to_string();
    Key { public, secret: s }
}

fn sign(key: &Key, file: &Path, legacy: bool) {
    let mut c = Command::new("minisign");
    c.arg("-S").arg("-s").arg(&key.secret).arg("-m").arg(file);
    if legacy {
        c.arg("-l");
    }
    let out = c.stdin(Stdio::null()).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
}

/// One test's world: the fake root, the home, the installed copy, the release server.
struct World {
    dir: PathBuf,
    home: TempHome,
    key: Key,
    files: Arc<Mutex<HashMap<String, Vec<u8>>>>,
    server: support::fake_http::FakeServer,
}

impl World {
    fn new(tag: &str, confirm_secs: u64) -> World {
        let dir = std::env::temp_dir().join(format!("yc-upd-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("sys/run/systemd/system")).unwrap();
        std::fs::create_dir_all(dir.join("sys/proc")).unwrap();
        std::fs::create_dir_all(dir.join("state")).unwrap();
        std::fs::write(
            dir.join("sys/proc/meminfo"),
            "MemTotal:        1000000 kB\n",
        )
        .unwrap();
        write_exec(&dir.join("bin/yoctoclaw"), &wrapper("v-old"));
        write_exec(&dir.join("fake/systemctl"), SYSTEMCTL);
        let key = keygen(&dir, "release");
        let ca = TestCa::new("yoctoclaw update test CA");
        ca.write_pem(&dir.join("ca.pem"));
        let files: Arc<Mutex<HashMap<String, Vec<u8>>>> = Arc::default();
        let f = files.clone();
        let (server, _switch) = support::tls::serve(
            move |r| match f.lock().unwrap().get(&r.path) {
                Some(b) => support::fake_http::Response::Full {
                    status: 200,
                    headers: vec![],
                    body: b.clone(),
                },
                None => support::fake_http::Response::text(404, "no"),
            },
            false,
            &ca,
        );
        let home = TempHome::new(&format!("upd-{tag}"));
        let out = home.run(&["onboard"]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let w = World {
            dir,
            home,
            key,
            files,
            server,
        };
        w.config(confirm_secs, &w.key.public.clone());
        let out = w
            .cmd(&["service", "install", "--system", "--root"])
            .arg(w.dir.join("sys"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        w
    }

    fn config(&self, confirm_secs: u64, public_key: &str) {
        self.home.write_config(&format!(
            r#"{{"provider":{{"base_url":"http://127.0.0.1:9/v1","model":"m"}},"telegram":{{"enabled":false}},"tls":{{"ca_file":"{}"}},"update":{{"url":"{}/index.json","public_key":"{public_key}","confirm_secs":{confirm_secs}}}}}"#,
            self.dir.join("ca.pem").display(),
            self.server.url(),
        ));
    }

    fn exe(&self) -> PathBuf {
        self.dir.join("bin/yoctoclaw")
    }

    fn installed(&self) -> String {
        std::fs::read_to_string(self.exe()).unwrap()
    }

    fn calls(&self) -> String {
        std::fs::read_to_string(self.dir.join("state/calls")).unwrap_or_default()
    }

    fn gateway_log(&self) -> String {
        std::fs::read_to_string(self.dir.join("state/gateway.log")).unwrap_or_default()
    }

    /// The binary under test with the world's environment.
    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = self.home.cmd(args);
        let path = format!(
            "{}:{}",
            self.dir.join("fake").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        c.env("PATH", path)
            .env("HOME", &self.dir)
            .env("YOCTOCLAW_TEST_EXE", self.exe())
            .env("YOCTOCLAW_TEST_ARCH", "aarch64")
            .env("RUST_LOG", "info");
        c
    }

    fn update(&self, extra: &[&str]) -> Output {
        let mut args = vec!["update"];
        args.extend_from_slice(extra);
        let root = self.dir.join("sys");
        self.cmd(&args).arg("--root").arg(root).output().unwrap()
    }

    /// A release archive for `board` whose binary is `bin`, signed (or not) by `key`;
    /// its path.
    fn archive(&self, name: &str, board: &str, bin: &str, key: Option<(&Key, bool)>) -> PathBuf {
        let stage = self.dir.join(format!("stage-{name}"));
        let top = format!("yoctoclaw-{NEW}-{board}");
        let _ = std::fs::remove_dir_all(&stage);
        write_exec(&stage.join(&top).join("yoctoclaw"), bin);
        let conf = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("boards/{board}.conf")),
        )
        .unwrap();
        std::fs::write(stage.join(&top).join("board.conf"), conf).unwrap();
        let out = self.dir.join(format!("{name}.tar.gz"));
        let st = Command::new("tar")
            .arg("-czf")
            .arg(&out)
            .arg("-C")
            .arg(&stage)
            .arg(&top)
            .status()
            .unwrap();
        assert!(st.success());
        if let Some((k, legacy)) = key {
            sign(k, &out, legacy);
        }
        out
    }

    /// Serve `archive` (and its signature) in the index as this board's release.
    fn publish(&self, archive: &Path, sha256_of: Option<&[u8]>) {
        let bytes = std::fs::read(archive).unwrap();
        let sum = sha256_hex(sha256_of.unwrap_or(&bytes));
        let sig = std::fs::read(format!("{}.minisig", archive.display())).unwrap_or_default();
        let index = format!(
            r#"{{"version":"{NEW}","boards":{{"{BOARD}":{{"url":"a.tar.gz","sha256":"{sum}","minisig":"a.tar.gz.minisig"}}}}}}"#
        );
        let mut f = self.files.lock().unwrap();
        f.insert("/index.json".into(), index.into_bytes());
        f.insert("/a.tar.gz".into(), bytes);
        f.insert("/a.tar.gz.minisig".into(), sig);
    }

    /// Wait until the fake service's gateway log has `needle`.
    fn wait_log(&self, needle: &str) {
        let start = Instant::now();
        while !self.gateway_log().contains(needle) {
            assert!(
                start.elapsed() < PATIENCE,
                "no {needle:?} in the gateway's log:\n{}",
                self.gateway_log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Nothing changed: the old binary in place, nothing beside it, no restart.
    fn assert_untouched(&self, out: &Output, says: &str) {
        assert!(!out.status.success(), "{}", text(&out.stdout));
        let err = text(&out.stderr);
        assert!(err.contains(says), "{err}");
        assert!(
            err.contains("nothing was changed") || err.contains("unchanged"),
            "{err}"
        );
        assert!(self.installed().contains("v-old"));
        assert!(!self.dir.join("bin/yoctoclaw.prev").exists());
        assert!(!self.dir.join("bin/.yoctoclaw-update").exists());
        assert!(!self.home.dir.join("update-pending").exists());
        assert!(!self.calls().contains("restart"), "{}", self.calls());
    }
}

impl Drop for World {
    fn drop(&mut self) {
        if let Ok(p) = std::fs::read_to_string(self.dir.join("state/pid"))
            && let Ok(pid) = p.trim().parse::<i32>()
        {
            // The gateway this test's fake service started.
            if let Some(pid) = rustix::process::Pid::from_raw(pid) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn sha256_hex(b: &[u8]) -> String {
    let d = ring::digest::digest(&ring::digest::SHA256, b);
    d.as_ref().iter().map(|x| format!("{x:02x}")).collect()
}

#[test]
fn a_newer_release_is_found_installed_restarted_and_confirmed() {
    if !have_minisign("update: good update") {
        return;
    }
    let w = World::new("good", 30);
    let a = w.archive("a", BOARD, &wrapper("v-new"), Some((&w.key, false)));
    w.publish(&a, None);
    let out = w.update(&["--check"]);
    let said = support::succeeded(&out);
    assert!(said.contains("a newer release exists: 9.9.9"), "{said}");
    assert!(!w.calls().contains("restart"));

    let out = w.update(&[]);
    let said = support::succeeded(&out);
    assert!(said.contains("updated to 9.9.9"), "{said}");
    assert!(w.installed().contains("v-new"));
    let prev = std::fs::read_to_string(w.dir.join("bin/yoctoclaw.prev")).unwrap();
    assert!(prev.contains("v-old"));
    assert_eq!(
        w.calls().matches("restart yoctoclaw").count(),
        1,
        "{}",
        w.calls()
    );
    assert!(!w.home.dir.join("update-pending").exists());
    w.wait_log("update: 9.9.9 confirmed");
    assert!(!w.dir.join("bin/.yoctoclaw-update").exists());

    // By hand, back to the previous one.
    let out = w.update(&["--rollback"]);
    support::succeeded(&out);
    assert!(w.installed().contains("v-old"));
    assert_eq!(w.calls().matches("restart yoctoclaw").count(), 2);
    let out = w.update(&["--rollback"]);
    assert!(
        text(&out.stderr).contains("no previous version"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_local_archive_with_a_legacy_signature_installs() {
    if !have_minisign("update: --from, legacy signature") {
        return;
    }
    let w = World::new("from", 30);
    let a = w.archive("a", BOARD, &wrapper("v-new"), Some((&w.key, true)));
    let out = w.update(&["--from", a.to_str().unwrap()]);
    let said = support::succeeded(&out);
    assert!(said.contains("updated to 9.9.9"), "{said}");
    assert!(w.installed().contains("v-new"));
    let doctor = text(&w.cmd(&["doctor"]).output().unwrap().stdout);
    assert!(
        doctor.contains("version 0.") && doctor.contains("no update pending"),
        "{doctor}"
    );
}

#[test]
fn bad_archives_and_signatures_change_nothing() {
    if !have_minisign("update: bad input") {
        return;
    }
    let w = World::new("bad", 30);
    let good = w.archive("good", BOARD, &wrapper("v-new"), Some((&w.key, false)));
    let bytes = std::fs::read(&good).unwrap();
    let sig = std::fs::read_to_string(format!("{}.minisig", good.display())).unwrap();
    let from = |p: &Path| w.update(&["--from", p.to_str().unwrap()]);

    // Tampered: one byte changed, the signature kept.
    let t = w.dir.join("tampered.tar.gz");
    let mut b = bytes.clone();
    let mid = b.len() / 2;
    b[mid] ^= 0x40;
    std::fs::write(&t, &b).unwrap();
    std::fs::write(format!("{}.minisig", t.display()), &sig).unwrap();
    w.assert_untouched(&from(&t), "does not match its signature");

    // Truncated.
    let t = w.dir.join("truncated.tar.gz");
    std::fs::write(&t, &bytes[..bytes.len() - 10]).unwrap();
    std::fs::write(format!("{}.minisig", t.display()), &sig).unwrap();
    w.assert_untouched(&from(&t), "does not match its signature");

    // No signature; a signature that is not one.
    let t = w.archive("unsigned", BOARD, &wrapper("v-new"), None);
    w.assert_untouched(&from(&t), "has no signature");
    std::fs::write(
        format!("{}.minisig", t.display()),
        "untrusted comment: x\nnonsense\n",
    )
    .unwrap();
    w.assert_untouched(&from(&t), "not a minisign signature");

    // Signed by another key.
    let other = keygen(&w.dir, "other");
    let t = w.archive("otherkey", BOARD, &wrapper("v-new"), Some((&other, false)));
    w.assert_untouched(&from(&t), "signed by a key this binary does not trust");

    // Well signed, for another board (a RISC-V profile).
    let t = w.archive(
        "riscv",
        "milkv-duo-64mb",
        &wrapper("v-new"),
        Some((&w.key, false)),
    );
    w.assert_untouched(&from(&t), "for another board (milkv-duo-64mb)");

    // From the index: the archive does not match the index's checksum.
    w.publish(&good, Some(b"something else"));
    w.assert_untouched(&w.update(&[]), "does not match the index's SHA-256");
    // The index's signature is missing.
    w.publish(&good, None);
    w.files.lock().unwrap().remove("/a.tar.gz.minisig");
    w.assert_untouched(&w.update(&[]), "has no signature");
}

#[test]
fn a_full_disk_while_unpacking_changes_nothing() {
    if !have_minisign("update: full disk") {
        return;
    }
    let w = World::new("full", 30);
    // A 2 MB binary of noise (it does not compress), unpacked under a 256 KiB file size
    // limit: tar cannot write it, as on a full disk.
    let mut noise = vec![0u8; 2 << 20];
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for b in noise.iter_mut() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
    let big = String::from("#!/bin/sh\n")
        + &noise
            .iter()
            .map(|b| (b'a' + b % 26) as char)
            .collect::<String>();
    let a = w.archive("big", BOARD, &big, Some((&w.key, false)));
    let root = w.dir.join("sys");
    let base = w.cmd(&[
        "update",
        "--from",
        a.to_str().unwrap(),
        "--root",
        root.to_str().unwrap(),
    ]);
    let out = Command::new("sh")
        .arg("-c")
        .arg("ulimit -f 512; exec \"$@\"")
        .arg("sh")
        .arg(base.get_program())
        .args(base.get_args())
        .env_clear()
        .envs(base.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    w.assert_untouched(&out, "cannot unpack the archive");
}

#[test]
fn leftovers_of_an_interrupted_update_are_cleaned_and_the_binary_is_intact() {
    let w = World::new("power", 30);
    // Power lost after the unpack and the copy of the old binary, before the rename.
    std::fs::create_dir_all(w.dir.join("bin/.yoctoclaw-update/yoctoclaw-9.9.9-x")).unwrap();
    std::fs::write(
        w.dir
            .join("bin/.yoctoclaw-update/yoctoclaw-9.9.9-x/yoctoclaw"),
        "half",
    )
    .unwrap();
    std::fs::write(w.dir.join("bin/.yoctoclaw.prev.tmp"), "half").unwrap();
    let out = w.update(&["--rollback"]);
    assert!(
        text(&out.stderr).contains("no previous version"),
        "{}",
        text(&out.stderr)
    );
    assert!(!w.dir.join("bin/.yoctoclaw-update").exists());
    assert!(!w.dir.join("bin/.yoctoclaw.prev.tmp").exists());
    assert!(w.installed().contains("v-old"));
}

#[test]
fn a_new_binary_that_crashes_or_never_confirms_is_rolled_back() {
    if !have_minisign("update: rollback") {
        return;
    }
    for (tag, bin) in [
        ("crash", "#!/bin/sh\necho crashing >&2\nexit 1\n"),
        ("silent", "#!/bin/sh\nexec sleep 30\n"),
    ] {
        let w = World::new(tag, 2);
        let a = w.archive("a", BOARD, bin, Some((&w.key, false)));
        w.publish(&a, None);
        let out = w.update(&[]);
        assert!(!out.status.success());
        let err = text(&out.stderr);
        assert!(
            err.contains("did not confirm its start within 2 s: the previous version is back"),
            "{err}"
        );
        assert!(w.installed().contains("v-old"), "{tag}");
        assert!(!w.dir.join("bin/yoctoclaw.prev").exists());
        assert!(!w.home.dir.join("update-pending").exists());
        assert_eq!(
            w.calls().matches("restart yoctoclaw").count(),
            2,
            "{}",
            w.calls()
        );
        // The previous gateway, started again, says what happened in one line.
        w.wait_log("update: 9.9.9 did not confirm its start within 2 s: rolled back to");
    }
}

#[test]
fn a_new_binary_started_past_its_deadline_rolls_itself_back() {
    if !have_minisign("update: rollback at start") {
        return;
    }
    let w = World::new("late", 30);
    let a = w.archive("a", BOARD, &wrapper("v-new"), Some((&w.key, false)));
    let out = w.update(&["--from", a.to_str().unwrap()]);
    support::succeeded(&out);
    // As if the update's own watcher had died: the new binary is still unconfirmed, and
    // its deadline has passed when the service starts it.
    use std::os::unix::fs::MetadataExt;
    let ino = std::fs::metadata(w.exe()).unwrap().ino();
    std::fs::write(
        w.home.dir.join("update-pending"),
        format!(
            "exe={}\nino={ino}\ndeadline=1000\nversion=9.9.9\n",
            w.exe().display()
        ),
    )
    .unwrap();
    let doctor = text(&w.cmd(&["doctor"]).output().unwrap().stdout);
    assert!(
        doctor.contains("update to 9.9.9 waiting for the gateway to confirm"),
        "{doctor}"
    );
    let out = Command::new(w.exe())
        .envs(w.cmd(&[]).get_envs().filter_map(|(k, v)| Some((k, v?))))
        .arg("--home")
        .arg(&w.home.dir)
        .arg("gateway")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("did not confirm its start in time: rolled back"),
        "{}",
        text(&out.stderr)
    );
    assert!(w.installed().contains("v-old"));
    assert!(!w.home.dir.join("update-pending").exists());
}

#[test]
fn package_sh_signs_its_archives_and_writes_an_index_update_reads() {
    if !have_minisign("update: package.sh signing") {
        return;
    }
    let w = World::new("package", 30);
    let dist = w.dir.join("dist");
    let triple = "aarch64-unknown-linux-musl";
    write_exec(&dist.join(triple).join("yoctoclaw"), &wrapper("v-new"));
    let out = Command::new("bash")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/package.sh"))
        .arg(BOARD)
        .env("BOARDS_DIST", &dist)
        .env("SOURCE_DATE_EPOCH", "1767225600")
        .env("MINISIGN_SECRET_KEY", &w.key.secret)
        .output()
        .unwrap();
    assert!(out.status.success(), "package.sh: {}", text(&out.stderr));
    let v = env!("CARGO_PKG_VERSION");
    let name = format!("yoctoclaw-{v}-{BOARD}.tar.gz");
    let archive = dist.join(&name);
    let sig = std::fs::read_to_string(dist.join(format!("{name}.minisig"))).unwrap();
    assert!(
        sig.contains(&format!("trusted comment: yoctoclaw {v} {BOARD}")),
        "{sig}"
    );
    // The index, served as package.sh wrote it.
    let index = std::fs::read(dist.join("index.json")).unwrap();
    assert!(text(&index).contains(&sha256_hex(&std::fs::read(&archive).unwrap())));
    w.files.lock().unwrap().insert("/index.json".into(), index);
    let said = support::succeeded(&w.update(&["--check"]));
    assert!(said.contains(&format!("up to date: {v}")), "{said}");
    // Its archive, with the signature package.sh made, installs.
    let said = support::succeeded(&w.update(&["--from", archive.to_str().unwrap()]));
    assert!(said.contains(&format!("updated to {v}")), "{said}");
    assert!(w.installed().contains("v-new"));
}

#[test]
fn with_telegram_the_health_mark_waits_for_an_answered_poll() {
    use support::fake_http::Response;
    use support::fake_telegram::FakeTelegram;
    use support::gateway::{Gateway, fast_backoff};
    let tg = FakeTelegram::start();
    // Two polls fail, the third fails slowly: no poll has been answered while it waits.
    tg.script_polls(vec![
        Response::json(500, r#"{"ok":false,"error_code":500,"description":"x"}"#),
        Response::json(500, r#"{"ok":false,"error_code":500,"description":"x"}"#),
        Response::Delay(
            Duration::from_secs(2),
            Box::new(Response::json(
                500,
                r#"{"ok":false,"error_code":500,"description":"x"}"#,
            )),
        ),
    ]);
    let home = TempHome::onboarded(
        "upd-tg",
        &format!(
            r#"{{"provider":{{"base_url":"http://127.0.0.1:9/v1","model":"m"}},"telegram":{{"enabled":true,"api_base":"{}","allow_from":["1"],"poll_timeout_secs":1}}}}"#,
            tg.url()
        ),
    );
    // An update installed at `exe`, within its deadline.
    let exe = home.dir.join("installed-yoctoclaw");
    std::fs::write(&exe, "x").unwrap();
    use std::os::unix::fs::MetadataExt;
    let ino = std::fs::metadata(&exe).unwrap().ino();
    let pending = home.dir.join("update-pending");
    std::fs::write(
        &pending,
        format!(
            "exe={}\nino={ino}\ndeadline=99999999999\nversion=9.9.9\n",
            exe.display()
        ),
    )
    .unwrap();
    let mut gw = Gateway::start(&home, &[fast_backoff()]);
    let start = Instant::now();
    while tg.polls() < 3 {
        assert!(start.elapsed() < PATIENCE, "no third poll:\n{}", gw.log());
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        pending.exists(),
        "marked before any poll was answered:\n{}",
        gw.log()
    );
    gw.wait_for_log("update: 9.9.9 confirmed");
    assert!(!pending.exists());
}

#[test]
fn no_update_while_the_gateway_has_a_turn_to_finish() {
    if !have_minisign("update: never during a turn") {
        return;
    }
    let w = World::new("busy", 30);
    let a = w.archive("a", BOARD, &wrapper("v-new"), Some((&w.key, false)));
    let from = || w.update(&["--from", a.to_str().unwrap()]);
    // A running gateway (this process stands for it: its pid exists) whose record, a
    // minute old at most, counts no turn; what its durable inbox says is current.
    let db = yoctoclaw::store::Db::open(&w.home.dir.join("yoctoclaw.db"), 256).unwrap();
    let now = yoctoclaw::time::clock::now();
    let rss = yoctoclaw::status::Rss {
        rss_kib: 1,
        hwm_kib: 1,
    };
    yoctoclaw::status::write_gateway_record(&db, std::process::id(), rss, 0, now).unwrap();
    // A message waiting for its turn.
    assert!(db.inbox_push(42, None, false, "hello", now).unwrap());
    w.assert_untouched(&from(), "the gateway is answering a message");
    // Its turn started: owed an answer until it is delivered.
    let next = db.inbox_next(42, "telegram:42", 4096, now).unwrap();
    assert!(next.is_some());
    w.assert_untouched(&from(), "the gateway is answering a message");
    // Answered: the update goes ahead.
    let owed: Vec<i64> = db.owed_replies().unwrap().iter().map(|o| o.id).collect();
    assert_eq!(owed.len(), 1);
    db.replies_done(&owed).unwrap();
    let said = support::succeeded(&from());
    assert!(said.contains("updated to 9.9.9"), "{said}");
    assert!(w.installed().contains("v-new"));
}
