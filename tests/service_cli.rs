//! `yoctoclaw service install|uninstall|status` through the real binary, against a
//! temporary root (`--root DIR`) faking each init system: the files it writes (content
//! and mode), idempotence, uninstall removing exactly what install wrote, `--dry-run`
//! touching nothing, refusals (a file that is not ours, an enabled unit, no root), and
//! status reading the gateway's record.

mod support;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use support::{bin, skipped, text};

/// A fake system root and a home, removed on drop.
struct Root {
    dir: PathBuf,
}

impl Root {
    fn new(tag: &str) -> Root {
        let dir = std::env::temp_dir().join(format!("yc-svc-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("home/.yoctoclaw")).unwrap();
        std::fs::create_dir_all(dir.join("sys")).unwrap();
        Root { dir }
    }
    /// Path under the fake root.
    fn at(&self, p: &str) -> PathBuf {
        self.dir.join("sys").join(p.trim_start_matches('/'))
    }
    fn home(&self) -> PathBuf {
        self.dir.join("home/.yoctoclaw")
    }
    fn mkdir(&self, p: &str) {
        std::fs::create_dir_all(self.at(p)).unwrap();
    }
    fn write(&self, p: &str, text: &str) {
        let p = self.at(p);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    fn read(&self, p: &str) -> String {
        std::fs::read_to_string(self.at(p)).unwrap_or_else(|e| panic!("{p}: {e}"))
    }
    fn mode(&self, p: &str) -> u32 {
        std::fs::metadata(self.at(p)).unwrap().permissions().mode() & 0o7777
    }
    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = support::binary::command();
        c.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.dir.join("home"))
            .arg("--home")
            .arg(self.home())
            .arg("service")
            .args(args)
            .arg("--root")
            .arg(self.dir.join("sys"))
            .stdin(Stdio::null());
        c
    }
    fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().expect("run yoctoclaw")
    }
    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "service {args:?} failed: {}{}",
            text(&out.stdout),
            text(&out.stderr)
        );
        text(&out.stdout)
    }
    /// Every file under the fake root with its content and mode.
    fn snapshot(&self) -> BTreeMap<PathBuf, (Vec<u8>, u32)> {
        fn walk(d: &Path, out: &mut BTreeMap<PathBuf, (Vec<u8>, u32)>) {
            for e in std::fs::read_dir(d).unwrap() {
                let p = e.unwrap().path();
                let m = std::fs::symlink_metadata(&p).unwrap();
                if m.is_dir() {
                    out.insert(p.clone(), (Vec::new(), m.permissions().mode()));
                    walk(&p, out);
                } else {
                    let bytes = std::fs::read(&p).unwrap_or_default();
                    out.insert(p, (bytes, m.permissions().mode()));
                }
            }
        }
        let mut out = BTreeMap::new();
        walk(&self.dir, &mut out);
        out
    }
}

impl Drop for Root {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

fn exe() -> String {
    bin().to_str().unwrap().to_string()
}

/// The account the system service should name: "pi" when the test can give the home to
/// uid 1000 (as root), else the caller's uid (absent from the fake passwd).
fn owner(r: &Root) -> Option<String> {
    r.write(
        "/etc/passwd",
        "root:x:0:0:root:/root:/bin/sh\npi:x:1000:1000::/home/pi:/bin/sh\n",
    );
    if is_root() {
        std::os::unix::fs::chown(r.home(), Some(1000), Some(1000)).unwrap();
        Some("pi".into())
    } else {
        Some(rustix::process::geteuid().as_raw().to_string())
    }
}

fn assert_has(text: &str, lines: &[&str]) {
    for l in lines {
        assert!(text.lines().any(|x| x == *l), "no line {l:?} in:\n{text}");
    }
}

#[test]
fn systemd_system_unit_is_written_idempotent_and_removed_exactly() {
    let r = Root::new("systemd");
    r.mkdir("/run/systemd/system");
    r.write(
        "/proc/meminfo",
        "MemTotal:          55000 kB\nMemFree: 1 kB\n",
    );
    let who = owner(&r).unwrap();
    let home = r.home().display().to_string();
    let out = r.ok(&["install", "--system"]);
    let unit_path = "/etc/systemd/system/yoctoclaw.service";
    assert!(
        out.contains("wrote ") && out.contains("systemd system unit"),
        "{out}"
    );
    assert!(
        out.contains("then run: systemctl daemon-reload && systemctl enable --now yoctoclaw"),
        "{out}"
    );
    let unit = r.read(unit_path);
    assert_eq!(r.mode(unit_path), 0o644);
    assert_has(
        &unit,
        &[
            "[Unit]",
            "Wants=network-online.target time-sync.target",
            "After=network-online.target time-sync.target",
            "[Service]",
            &format!("User={who}"),
            &format!("ExecStart={} --home {home} gateway", exe()),
            // `systemctl reload`: the gateway reads its files again and says how it went.
            &format!("ExecReload={} --home {home} reload", exe()),
            "Restart=on-failure",
            // The gateway's sd_notify (src/watchdog.rs): READY=1, then WATCHDOG=1 pings.
            "Type=notify",
            "NotifyAccess=main",
            "WatchdogSec=60",
            &format!("ReadWritePaths={home}"),
            "ProtectSystem=strict",
            "NoNewPrivileges=yes",
            "[Install]",
            "WantedBy=multi-user.target",
        ],
    );
    assert!(unit.starts_with("# Written by yoctoclaw service install"));
    // The memory limits are those of the profile for this CPU and 55 MB, when there is one.
    match yoctoclaw::service::board_for(support::binary::arch(), 55_000) {
        Some(b) => assert_has(
            &unit,
            &[
                &format!("MemoryHigh={}", b.memory_high),
                &format!("MemoryMax={}", b.memory_max),
            ],
        ),
        None => {
            assert!(!unit.contains("Memory"), "{unit}");
            assert!(out.contains("no board profile for this CPU"), "{out}");
        }
    }

    // Again: nothing changes.
    let before = r.snapshot();
    let again = r.ok(&["install", "--system"]);
    assert!(again.starts_with("unchanged: "), "{again}");
    assert_eq!(before, r.snapshot());

    let status = r.ok(&["status"]);
    assert!(status.contains("init:       systemd"), "{status}");
    assert!(
        status.contains("yoctoclaw.service (not enabled)"),
        "{status}"
    );
    assert!(
        status.contains("running:    no (never started)"),
        "{status}"
    );

    // Enabled: uninstall refuses and changes nothing.
    let wants = r.at("/etc/systemd/system/multi-user.target.wants");
    std::fs::create_dir_all(&wants).unwrap();
    std::os::unix::fs::symlink(r.at(unit_path), wants.join("yoctoclaw.service")).unwrap();
    assert!(r.ok(&["status"]).contains("(enabled)"));
    let before = r.snapshot();
    let out = r.run(&["uninstall"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("still enabled: run systemctl disable --now yoctoclaw first"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(before, r.snapshot());

    std::fs::remove_file(wants.join("yoctoclaw.service")).unwrap();
    let out = r.ok(&["uninstall"]);
    assert!(
        out.contains("removed ") && out.contains("systemctl daemon-reload"),
        "{out}"
    );
    assert!(!r.at(unit_path).exists());
    assert!(r.ok(&["uninstall"]).contains("nothing to remove"));
    assert!(r.ok(&["status"]).contains("installed:  no"));
}

#[test]
fn systemd_user_unit_needs_no_root_and_names_linger() {
    let r = Root::new("user");
    r.mkdir("/run/systemd/system");
    let out = r.ok(&["install", "--user"]);
    let rel = format!(
        "{}/.config/systemd/user/yoctoclaw.service",
        r.dir.join("home").display()
    );
    let unit = r.read(&rel);
    assert!(out.contains("systemd user unit"), "{out}");
    assert!(
        out.contains("systemctl --user daemon-reload && systemctl --user enable --now yoctoclaw")
    );
    assert!(out.contains("loginctl enable-linger"), "{out}");
    assert_has(
        &unit,
        &[
            &format!("ExecStart={} --home {} gateway", exe(), r.home().display()),
            "Restart=on-failure",
            "WantedBy=default.target",
        ],
    );
    assert!(
        !unit.contains("User=") && !unit.contains("network-online"),
        "{unit}"
    );
    assert_eq!(r.mode(&rel), 0o644);
    // A system unit is not touched by a --user uninstall, and vice versa.
    r.ok(&["install", "--system"]);
    let out = r.ok(&["uninstall", "--user"]);
    assert!(
        out.contains("user/yoctoclaw.service") && !out.contains("system/yoctoclaw"),
        "{out}"
    );
    assert!(r.at("/etc/systemd/system/yoctoclaw.service").exists());
    assert!(!r.at(&rel).exists());
}

#[test]
fn openrc_script_uses_supervise_daemon() {
    let r = Root::new("openrc");
    r.write("/sbin/openrc-run", "#!/bin/sh\n");
    r.mkdir("/etc/init.d");
    let who = owner(&r).unwrap();
    let home = r.home().display().to_string();
    let out = r.ok(&["install"]);
    assert!(
        out.contains("then run: rc-update add yoctoclaw default && rc-service yoctoclaw start"),
        "{out}"
    );
    let p = "/etc/init.d/yoctoclaw";
    let s = r.read(p);
    assert_eq!(r.mode(p), 0o755);
    assert!(s.starts_with("#!/sbin/openrc-run\n"), "{s}");
    assert_has(
        &s,
        &[
            "supervisor=supervise-daemon",
            &format!("command={}", exe()),
            &format!("command_args=\"--home {home} --log-file {home}/gateway.log gateway\""),
            &format!("command_user={who}"),
            "pidfile=/run/yoctoclaw.pid",
            "respawn_delay=10",
            "\tneed net",
            // `rc-service yoctoclaw reload`: SIGHUP through the supervisor.
            "extra_started_commands=\"reload\"",
            "reload() {",
            "\tsupervise-daemon \"$RC_SVCNAME\" --signal HUP",
        ],
    );
    sh_syntax_ok(&r.at(p));
    assert_eq!(
        r.ok(&["install"]).lines().next().unwrap_or("").get(..10),
        Some("unchanged:")
    );
    // Enabled in the default runlevel: uninstall says how to undo that first.
    r.mkdir("/etc/runlevels/default");
    // (OpenRC's link is absolute; relative here so that it resolves inside the fake root.)
    std::os::unix::fs::symlink(
        "../../init.d/yoctoclaw",
        r.at("/etc/runlevels/default/yoctoclaw"),
    )
    .unwrap();
    assert!(
        r.ok(&["status"])
            .contains("/etc/init.d/yoctoclaw (enabled)")
    );
    let out = r.run(&["uninstall"]);
    assert!(
        text(&out.stderr).contains("rc-update del yoctoclaw default first"),
        "{}",
        text(&out.stderr)
    );
    assert!(r.at(p).exists());
    std::fs::remove_file(r.at("/etc/runlevels/default/yoctoclaw")).unwrap();
    r.ok(&["uninstall"]);
    assert!(!r.at(p).exists());
}

const BUILDROOT_INITTAB: &str = "# /etc/inittab\n#\n# Copyright (C) 2001 Erik Andersen <andersen@codepoet.org>\n#\n# Note: BusyBox init doesn't support runlevels.\n::sysinit:/bin/mount -t proc proc /proc\n::sysinit:/etc/init.d/rcS\nconsole::respawn:/sbin/getty -L  console 0 vt100 # GENERIC_SERIAL\n::shutdown:/etc/init.d/rcK\n::shutdown:/bin/umount -a -r";

#[test]
fn busybox_inittab_line_is_appended_once_and_removed_by_its_marker() {
    let r = Root::new("busybox");
    r.write("/etc/inittab", BUILDROOT_INITTAB);
    std::fs::set_permissions(r.at("/etc/inittab"), std::fs::Permissions::from_mode(0o600)).unwrap();
    r.mkdir("/etc/init.d");
    let home = r.home().display().to_string();
    let out = r.ok(&["install"]);
    assert!(
        out.contains("BusyBox init") && out.contains("then run: kill -HUP 1"),
        "{out}"
    );
    let first = r.read("/etc/inittab");
    assert!(
        first.starts_with(&format!("{BUILDROOT_INITTAB}\n")),
        "{first}"
    );
    let added = &first[BUILDROOT_INITTAB.len() + 1..];
    let who_prefix = if is_root() {
        "::respawn:/bin/sh -c 'sleep 5; exec ".to_string()
    } else {
        format!(
            "::respawn:/bin/su -s /bin/sh {} -c 'sleep 5; exec ",
            rustix::process::geteuid().as_raw()
        )
    };
    assert_eq!(
        added,
        format!(
            "# Written by yoctoclaw service install: the next line (yoctoclaw service uninstall removes both)\n{who_prefix}{} --home {home} --log-file {home}/gateway.log gateway'\n",
            exe()
        )
    );
    assert_eq!(r.mode("/etc/inittab"), 0o600, "the file keeps its mode");
    // Twice: still one line.
    r.ok(&["install"]);
    assert_eq!(r.read("/etc/inittab"), first);
    // A line added after ours by hand stays; a reinstall moves ours, never doubles it.
    std::fs::write(
        r.at("/etc/inittab"),
        format!("{first}::ctrlaltdel:/sbin/reboot\n"),
    )
    .unwrap();
    r.ok(&["install"]);
    let text = r.read("/etc/inittab");
    assert_eq!(text.matches("::respawn:/bin/s").count(), 1, "{text}");
    assert_eq!(text.matches("# Written by yoctoclaw").count(), 1, "{text}");
    assert!(text.contains("::ctrlaltdel:/sbin/reboot\n"));
    let status = r.ok(&["status"]);
    assert!(
        status.contains("init:       BusyBox init") && status.contains("/etc/inittab"),
        "{status}"
    );
    let out = r.ok(&["uninstall"]);
    assert!(out.contains("removed the yoctoclaw line from "), "{out}");
    assert_eq!(
        r.read("/etc/inittab"),
        format!("{BUILDROOT_INITTAB}\n::ctrlaltdel:/sbin/reboot\n")
    );
    assert_eq!(r.mode("/etc/inittab"), 0o600);
    assert!(r.ok(&["uninstall"]).contains("nothing to remove"));
}

#[test]
fn sysv_script_uses_start_stop_daemon() {
    // rcS runs /etc/init.d/S??*. sysvinit's inittab (it has initdefault) is not BusyBox's.
    let r = Root::new("sysv");
    r.mkdir("/etc/init.d");
    let sysvinit_tab =
        "id:2:initdefault:\nsi::sysinit:/etc/init.d/rcS\n1:2345:respawn:/sbin/getty 38400 tty1\n";
    r.write("/etc/inittab", sysvinit_tab);
    let home = r.home().display().to_string();
    let out = r.ok(&["install"]);
    assert!(
        out.contains("then run: /etc/init.d/S99yoctoclaw start"),
        "{out}"
    );
    let p = "/etc/init.d/S99yoctoclaw";
    let s = r.read(p);
    assert_eq!(r.mode(p), 0o755);
    assert!(s.starts_with("#!/bin/sh\n### BEGIN INIT INFO\n"));
    assert!(
        s.contains(&format!(
            " -x {} -- --home {home} --log-file {home}/gateway.log gateway;;\n",
            exe()
        )),
        "{s}"
    );
    assert!(s.contains("start-stop-daemon -S -b -m -p $P "));
    assert!(s.contains("start-stop-daemon -K -p $P -s TERM"));
    assert!(
        s.contains("\nreload) start-stop-daemon -K -p $P -s HUP;;\n"),
        "{s}"
    );
    sh_syntax_ok(&r.at(p));
    assert!(r.ok(&["status"]).contains("init:       SysV init"));
    r.ok(&["uninstall"]);
    assert!(!r.at(p).exists());
    assert_eq!(r.read("/etc/inittab"), sysvinit_tab, "inittab untouched");

    // Where /etc/rc2.d exists (Debian style) the same script needs update-rc.d: it says so.
    assert!(
        out.contains("update-rc.d S99yoctoclaw defaults first"),
        "{out}"
    );
    assert!(s.contains("Default-Start: 2 3 4 5"));
}

#[test]
fn dry_run_touches_nothing() {
    for (tag, setup) in [
        ("dry-systemd", "run/systemd/system"),
        ("dry-openrc", "run/openrc"),
        ("dry-busybox", "etc/init.d"),
        ("dry-sysv", "etc/init.d"),
    ] {
        let r = Root::new(tag);
        r.mkdir(setup);
        if tag == "dry-busybox" {
            r.write("/etc/inittab", BUILDROOT_INITTAB);
        }
        let before = r.snapshot();
        let out = r.ok(&["install", "--system", "--dry-run"]);
        assert!(out.starts_with("would write "), "{out}");
        assert!(out.contains(&exe()), "{out}");
        assert_eq!(before, r.snapshot(), "{tag}: dry run changed files");
        r.ok(&["install", "--system"]);
        let after_install = r.snapshot();
        let out = r.ok(&["uninstall", "--dry-run"]);
        assert!(out.starts_with("would remove "), "{out}");
        if tag == "dry-busybox" {
            assert!(
                out.contains("would remove the yoctoclaw line from "),
                "{out}"
            );
        }
        assert_eq!(
            after_install,
            r.snapshot(),
            "{tag}: dry uninstall changed files"
        );
    }
}

#[test]
fn a_file_not_written_by_us_is_never_replaced_or_removed() {
    let r = Root::new("foreign");
    r.mkdir("/run/systemd/system");
    let hand = "[Service]\nExecStart=/usr/local/bin/yoctoclaw gateway\n";
    r.write("/etc/systemd/system/yoctoclaw.service", hand);
    let out = r.run(&["install", "--system"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains(
            "exists and was not written by yoctoclaw service install: move it aside first"
        ),
        "{}",
        text(&out.stderr)
    );
    let out = r.ok(&["uninstall"]);
    assert!(
        out.contains("left ") && out.contains("nothing to remove"),
        "{out}"
    );
    assert_eq!(r.read("/etc/systemd/system/yoctoclaw.service"), hand);
    assert!(
        r.ok(&["status"])
            .contains(": not written by yoctoclaw service install")
    );
}

#[test]
fn a_system_path_without_root_says_so_and_writes_nothing() {
    let r = Root::new("noroot");
    r.mkdir("/run/systemd/system");
    r.mkdir("/etc/systemd/system");
    // Root writes anywhere: drop to nobody for this run; others get a read-only folder.
    let mut c;
    if is_root() {
        if Command::new("setpriv").arg("--help").output().is_err() {
            skipped(
                "needs-root sentence",
                "running as root, and setpriv (util-linux) is missing to drop to nobody",
            );
            return;
        }
        for p in [&r.dir, &r.dir.join("home"), &r.home()] {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .args(support::binary::runner())
            .arg(bin())
            .arg("--home")
            .arg(r.home())
            .args(["service", "install", "--system", "--root"])
            .arg(r.dir.join("sys"));
    } else {
        std::fs::set_permissions(
            r.at("/etc/systemd/system"),
            std::fs::Permissions::from_mode(0o555),
        )
        .unwrap();
        c = r.cmd(&["install", "--system"]);
    }
    let out = c.output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert_eq!(
        text(&out.stderr).trim(),
        format!(
            "yoctoclaw: writing {} needs root: run with sudo, or use --user",
            r.at("/etc/systemd/system/yoctoclaw.service").display()
        )
    );
    assert_eq!(
        std::fs::read_dir(r.at("/etc/systemd/system"))
            .unwrap()
            .count(),
        0,
        "no temp file left"
    );
}

#[test]
fn no_init_system_and_bad_usage_are_one_sentence() {
    let r = Root::new("none");
    let out = r.run(&["install"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("found no init system"),
        "{}",
        text(&out.stderr)
    );
    let out = r.run(&["restart"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("usage: yoctoclaw service install|uninstall|status [--system|--user] [--dry-run] [--root DIR]"));
    let out = r.run(&["install", "--user", "--system"]);
    assert_eq!(out.status.code(), Some(2));
    r.mkdir("/etc/init.d");
    let out = r.run(&["install", "--user"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("--user needs systemd"),
        "{}",
        text(&out.stderr)
    );
    let odd = r.dir.join("home/my home");
    std::fs::create_dir_all(&odd).unwrap();
    let out = support::binary::command()
        .arg("--home")
        .arg(&odd)
        .args(["service", "install", "--root"])
        .arg(r.dir.join("sys"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("cannot go into a service file safely"),
        "{}",
        text(&out.stderr)
    );
    assert!(!r.at("/etc/init.d/S99yoctoclaw").exists());
}

#[test]
fn status_says_running_since_when_from_the_gateway_record() {
    use yoctoclaw::status::{Rss, write_gateway_record};
    let r = Root::new("status");
    r.mkdir("/run/systemd/system");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let db = yoctoclaw::store::Db::open(&r.home().join("yoctoclaw.db"), 256).unwrap();
    // This test process stands in for the gateway.
    write_gateway_record(&db, std::process::id(), Rss::default(), 0, now).unwrap();
    let status = r.ok(&["status"]);
    let line = status.lines().find(|l| l.starts_with("running:")).unwrap();
    let since = line
        .strip_prefix(&format!(
            "running:    yes, pid {}, since ",
            std::process::id()
        ))
        .unwrap_or_else(|| panic!("{status}"));
    // This process started within the last day.
    let fmt = |t| yoctoclaw::time::clock::format_at(t, "UTC");
    assert!(
        (0..24 * 60).any(|m| fmt(now - m * 60) == since),
        "since {since:?} is not in the last day"
    );
    // A record from a process that is gone: not running, last seen then.
    write_gateway_record(&db, u32::MAX - 1, Rss::default(), 0, 1_767_225_600).unwrap();
    let status = r.ok(&["status"]);
    assert!(
        status.contains("running:    no (last seen 2026-01-01 00:00 (UTC, +00:00))"),
        "{status}"
    );
}

/// `sh -n`: the script parses.
fn sh_syntax_ok(p: &Path) {
    let out = Command::new("sh").arg("-n").arg(p).output().unwrap();
    assert!(
        out.status.success(),
        "{}: {}",
        p.display(),
        text(&out.stderr)
    );
}

#[test]
fn under_sudo_the_invoking_users_home_and_account_are_used() {
    if !is_root() {
        skipped(
            "sudo home",
            "the test must run as root to stand in for sudo",
        );
        return;
    }
    let r = Root::new("sudo");
    r.mkdir("/run/systemd/system");
    let pi_home = r.dir.join("pi");
    std::fs::create_dir_all(pi_home.join(".yoctoclaw")).unwrap();
    std::os::unix::fs::chown(pi_home.join(".yoctoclaw"), Some(1000), Some(1000)).unwrap();
    r.write(
        "/etc/passwd",
        &format!(
            "root:x:0:0:root:/root:/bin/sh\npi:x:1000:1000::{}:/bin/sh\n",
            pi_home.display()
        ),
    );
    // What `sudo yoctoclaw service install` sees: HOME is root's, SUDO_USER the caller.
    let out = support::binary::command()
        .env_clear()
        .env("HOME", "/root")
        .env("SUDO_USER", "pi")
        .args(["service", "install", "--root"])
        .arg(r.dir.join("sys"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let unit = r.read("/etc/systemd/system/yoctoclaw.service");
    let home = pi_home.join(".yoctoclaw").display().to_string();
    assert_has(
        &unit,
        &[
            "User=pi",
            &format!("ExecStart={} --home {home} gateway", exe()),
            &format!("ReadWritePaths={home}"),
        ],
    );
}
