//! `yoctoclaw service install|uninstall|status`: run the gateway under the board's init
//! system, so it starts at boot and comes back after a crash.
//!
//! It detects the init system and writes what fits: a systemd unit (system-wide, or a
//! user unit with `--user`) with the board profile's memory limits; an OpenRC script run
//! by `supervise-daemon`; a respawn line in BusyBox init's `/etc/inittab`; or a SysV
//! script using `start-stop-daemon`. It writes files and prints the commands that enable
//! and start the service; it never runs them.
//!
//! Every file it writes carries [`MARK`]: `uninstall` removes only files that do (the
//! inittab line by its marker line above it), and `install` never replaces a file that
//! does not. `--root DIR` writes under DIR and reads the init system's traces,
//! `/etc/passwd` and `/proc/meminfo` from there: for building images, and for the tests.
//!
//! # Bounds
//! Every file read (inittab, passwd, meminfo, the service files, `/proc`) is read up to
//! `MAX_SERVICE_READ_BYTES`; a larger inittab is refused rather than cut.
//!
//! # Threads
//! Main thread (`yoctoclaw service`).
//!
//! # Blocking
//! Main thread: a one-shot command reading and writing a few small files.

use crate::args::ServiceCmd;
use crate::config::Home;
use crate::files::{ReadError, read_regular, write_atomic};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

/// Largest file read (inittab, passwd, meminfo, a service file, `/proc/stat`).
pub const MAX_SERVICE_READ_BYTES: usize = 64 * 1024;
/// How a file without [`MARK`] is described.
const NOT_OURS: &str = ": not written by yoctoclaw service install";
/// What every file written here says about itself, and what `uninstall` looks for.
pub const MARK: &str = "Written by yoctoclaw service install";
/// Linux's USER_HZ, the unit of `/proc/<pid>/stat`'s start time (100 on every target).
const CLOCK_TICKS_PER_SEC: u64 = 100;

/// A board profile's memory limits (`boards/<name>.conf`: `memory_high`, `memory_max`).
#[derive(Debug, PartialEq, Eq)]
pub struct Board {
    pub name: &'static str,
    /// [`ARCH`] of the profile's triple.
    pub arch: &'static str,
    pub ram_mb: u64,
    pub memory_high: &'static str,
    pub memory_max: &'static str,
}

/// The profiles of `boards/*.conf`, smallest RAM first per CPU (a test checks the files).
pub const BOARDS: [Board; 5] = [
    board("milkv-duo-64mb", "riscv64", 64, "16M", "24M"),
    board("licheerv-nano", "riscv64", 256, "32M", "48M"),
    board("armv6-generic", "armv6", 256, "32M", "48M"),
    board("armv7-generic", "arm", 256, "32M", "48M"),
    board("aarch64-generic", "aarch64", 512, "48M", "64M"),
];

/// This build's CPU as the profiles name it: `std::env::consts::ARCH`, except that the
/// armv6 build (no ARMv7 instructions) is `armv6` rather than `arm`.
pub const ARCH: &str = if cfg!(all(target_arch = "arm", not(target_feature = "v7"))) {
    "armv6"
} else {
    std::env::consts::ARCH
};

/// This CPU as the profiles name it: [`ARCH`]; in `test-hooks` builds
/// `YOCTOCLAW_TEST_ARCH` stands in for it (the tests run on hosts without a profile).
pub fn this_arch() -> String {
    #[cfg(feature = "test-hooks")]
    if let Ok(a) = std::env::var("YOCTOCLAW_TEST_ARCH") {
        return a;
    }
    ARCH.to_string()
}

/// The path of this binary, which `service install` writes into the service and `update`
/// replaces; in `test-hooks` builds `YOCTOCLAW_TEST_EXE` stands in for it (a copy the
/// tests may replace).
pub fn this_exe() -> Option<PathBuf> {
    #[cfg(feature = "test-hooks")]
    if let Some(p) = std::env::var_os("YOCTOCLAW_TEST_EXE") {
        return Some(PathBuf::from(p));
    }
    std::env::current_exe().ok()
}

const fn board(
    name: &'static str,
    arch: &'static str,
    ram_mb: u64,
    memory_high: &'static str,
    memory_max: &'static str,
) -> Board {
    Board {
        name,
        arch,
        ram_mb,
        memory_high,
        memory_max,
    }
}

/// The profile for this CPU and `MemTotal` (KiB): the largest whose RAM is at most twice
/// `MemTotal` (kernels and camera buffers take a share), else the smallest.
pub fn board_for(arch: &str, mem_total_kib: u64) -> Option<&'static Board> {
    let mut pick = None;
    for b in BOARDS.iter().filter(|b| b.arch == arch) {
        if pick.is_none() || b.ram_mb * 512 <= mem_total_kib {
            pick = Some(b);
        }
    }
    pick
}

/// The init systems written for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Init {
    Systemd,
    OpenRc,
    BusyBox,
    SysV,
}

/// Why a service command failed.
#[derive(Debug)]
pub enum ServiceError {
    Usage(&'static str),
    NoInit,
    UserNeedsSystemd,
    /// Writing this path needs root (`true`: systemd, where `--user` is the way out).
    NeedsRoot(PathBuf, bool),
    NotOurs(PathBuf),
    /// Still enabled: the command that disables it.
    Enabled(&'static str),
    Unsafe(PathBuf),
    TooBig(PathBuf),
    NoExe,
    Io(&'static str, PathBuf, ErrorKind),
}

impl std::fmt::Display for ServiceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServiceError::Usage(m) => f.write_str(m),
            ServiceError::NoInit => f.write_str(
                "found no init system (systemd, OpenRC, BusyBox init or /etc/init.d): start yoctoclaw gateway from /etc/rc.local (docs/boards.md)",
            ),
            ServiceError::UserNeedsSystemd => {
                f.write_str("--user needs systemd: run with sudo for a system service")
            }
            ServiceError::NeedsRoot(p, sd) => write!(
                f,
                "writing {} needs root: run with sudo{}",
                p.display(),
                if *sd { ", or use --user" } else { "" }
            ),
            ServiceError::NotOurs(p) => write!(
                f,
                "{} exists and was not written by yoctoclaw service install: move it aside first",
                p.display()
            ),
            ServiceError::Enabled(cmd) => {
                write!(f, "the service is still enabled: run {cmd} first")
            }
            ServiceError::Unsafe(p) => write!(
                f,
                "the path {} cannot go into a service file safely: use letters, digits and / . _ - only",
                p.display()
            ),
            ServiceError::TooBig(p) => {
                write!(f, "{} is over 64 KiB: add the line by hand (docs/boards.md)", p.display())
            }
            ServiceError::NoExe => f.write_str("cannot tell where this yoctoclaw binary is"),
            ServiceError::Io(verb, p, k) => write!(f, "cannot {verb} {}: {k}", p.display()),
        }
    }
}

impl std::error::Error for ServiceError {}

/// What `yoctoclaw service` was asked: the action and its options.
struct Opts<'a> {
    action: &'a str,
    /// `Some(true)`: `--user`; `Some(false)`: `--system`; `None`: the default.
    scope: Option<bool>,
    dry: bool,
    root: &'a Path,
}

const USAGE: &str =
    "usage: yoctoclaw service install|uninstall|status [--system|--user] [--dry-run] [--root DIR]";

fn parse(args: &[String]) -> Result<Opts<'_>, ServiceError> {
    let mut o = Opts {
        action: "",
        scope: None,
        dry: false,
        root: Path::new("/"),
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--system" | "--user" if o.scope.is_some() => {
                return Err(ServiceError::Usage(
                    "--system and --user exclude each other",
                ));
            }
            "--system" => o.scope = Some(false),
            "--user" => o.scope = Some(true),
            "--dry-run" => o.dry = true,
            "--root" => o.root = Path::new(it.next().ok_or(ServiceError::Usage(USAGE))?),
            "install" | "uninstall" | "status" if o.action.is_empty() => o.action = a,
            _ => return Err(ServiceError::Usage(USAGE)),
        }
    }
    if o.action.is_empty() {
        return Err(ServiceError::Usage(USAGE));
    }
    Ok(o)
}

/// Run `yoctoclaw service ACTION [options]` for the home `--home` names (see
/// [`home_of`]); returns what to print.
pub fn command(c: &ServiceCmd, home_flag: Option<&Path>) -> Result<String, ServiceError> {
    let o = parse(&c.args)?;
    let home = &home_of(o.root, home_flag)?;
    match o.action {
        "install" => install(o.root, o.scope, o.dry, home),
        "uninstall" => uninstall(o.root, o.scope, o.dry),
        _ => Ok(status(o.root, home)),
    }
}

/// The home the service runs on: `--home`, `$YOCTOCLAW_HOME`, and under `sudo` the
/// invoking user's `~/.yoctoclaw` (sudo sets `HOME` to root's), else `~/.yoctoclaw`.
pub fn home_of(root: &Path, flag: Option<&Path>) -> Result<Home, ServiceError> {
    let sudo_user = std::env::var("SUDO_USER").ok().filter(|u| u != "root");
    if let (None, None, Some(user), true) = (
        flag,
        std::env::var_os("YOCTOCLAW_HOME"),
        sudo_user,
        is_root(),
    ) && let Some([_, dir]) = passwd(root, 0, &user)
    {
        return Ok(Home {
            dir: Path::new(&dir).join(".yoctoclaw"),
        });
    }
    Home::resolve(flag)
        .map_err(|_| ServiceError::Usage("no home folder: set HOME or pass --home DIR"))
}

/// The name and home folder of the `/etc/passwd` entry whose `field` is `value`.
fn passwd(root: &Path, field: usize, value: &str) -> Option<[String; 2]> {
    let text = text_of(&under(root, "/etc/passwd"));
    text.lines().find_map(|l| {
        let f = |n| l.split(':').nth(n);
        if f(field)? != value {
            return None;
        }
        Some([f(0)?.to_string(), f(5)?.to_string()])
    })
}

/// `abs` (an absolute path) under `root`.
fn under(root: &Path, abs: &str) -> PathBuf {
    root.join(abs.trim_start_matches('/'))
}

/// A file's text; `None` when it does not exist. Cut at `MAX_SERVICE_READ_BYTES`; `whole`
/// refuses a longer file instead.
fn read(p: &Path, whole: bool) -> Result<Option<String>, ServiceError> {
    match read_regular(p, MAX_SERVICE_READ_BYTES, true) {
        Ok((b, total)) if whole && total > b.len() as u64 => {
            Err(ServiceError::TooBig(p.to_path_buf()))
        }
        Ok((b, _)) => Ok(Some(String::from_utf8_lossy(&b).into_owned())),
        Err(ReadError::NotFound) => Ok(None),
        Err(e) => Err(ServiceError::Io(
            "read",
            p.to_path_buf(),
            match e {
                ReadError::Io(e) => e.kind(),
                _ => ErrorKind::InvalidInput,
            },
        )),
    }
}

fn text_of(p: &Path) -> String {
    read(p, false).ok().flatten().unwrap_or_default()
}

/// Which init system runs under `root`. BusyBox init needs an `/etc/inittab` to append to
/// (without one it runs built-in defaults that a new file would replace): one that names
/// BusyBox or has no `initdefault` line, which sysvinit's always has.
pub fn detect(root: &Path) -> Option<Init> {
    if under(root, "/run/systemd/system").is_dir() {
        return Some(Init::Systemd);
    }
    if under(root, "/sbin/openrc-run").exists() || under(root, "/run/openrc").exists() {
        return Some(Init::OpenRc);
    }
    if let Ok(Some(t)) = read(&under(root, "/etc/inittab"), false)
        && (t.to_ascii_lowercase().contains("busybox") || !t.contains(":initdefault:"))
    {
        return Some(Init::BusyBox);
    }
    under(root, "/etc/init.d").is_dir().then_some(Init::SysV)
}

fn init_name(i: Option<Init>) -> &'static str {
    match i {
        Some(Init::Systemd) => "systemd",
        Some(Init::OpenRc) => "OpenRC",
        Some(Init::BusyBox) => "BusyBox init",
        Some(Init::SysV) => "SysV init",
        None => "none found",
    }
}

/// `p` as text if every byte is one that a unit file and a shell line carry as is (and,
/// for a path, it is absolute).
fn safe(p: &Path, path: bool) -> Result<&str, ServiceError> {
    p.to_str()
        .filter(|s| {
            (s.starts_with('/') || !path)
                && !s.is_empty()
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"/._-+@,:=".contains(&b))
        })
        .ok_or_else(|| ServiceError::Unsafe(p.to_path_buf()))
}

/// Where systemd looks for this user's units: `~/.config/systemd/user` (under `root`).
fn user_unit_dir(root: &Path) -> Option<PathBuf> {
    let home = PathBuf::from(std::env::var_os("HOME")?);
    let rel = home.strip_prefix("/").ok()?;
    Some(root.join(rel).join(".config/systemd/user"))
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// The account the service runs as: the home's owner (the caller when there is no home
/// yet), by name from `/etc/passwd`; `None` for root.
fn run_as(root: &Path, home: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let uid = std::fs::metadata(home)
        .map(|m| m.uid())
        .unwrap_or_else(|_| rustix::process::geteuid().as_raw());
    let uid = rustix::path::DecInt::new(uid);
    let uid = uid.as_str();
    if uid == "0" {
        return None;
    }
    Some(passwd(root, 2, uid).map_or_else(|| uid.to_string(), |[name, _]| name))
}

fn add(s: &mut String, parts: &[&str]) {
    for p in parts {
        s.push_str(p);
    }
}

/// The systemd unit. In every template `{X}` is the binary, `{H}` the home, `{U}` the
/// account; a line holding a key without a value is left out (see [`fill`]).
const SYSTEMD: &str =
    "# Written by yoctoclaw service install; yoctoclaw service uninstall removes it.
[Unit]
Description=yoctoclaw personal AI assistant (gateway)
{S}Wants=network-online.target time-sync.target
{S}After=network-online.target time-sync.target

[Service]
Type=notify
NotifyAccess=main
WatchdogSec=60
User={U}
ExecStart={X} --home {H} gateway
# systemctl reload: config.json and secrets.env read again; fails when the gateway refused them.
ExecReload={X} --home {H} reload
Restart=on-failure
RestartSec=10
TimeoutStopSec=20
# boards/{B}.conf
MemoryHigh={M}
MemoryMax={N}
NoNewPrivileges=yes
{S}TasksMax=64
{S}PrivateTmp=yes
{S}ProtectSystem=strict
{S}ProtectHome=read-only
{S}ReadWritePaths={H}
{S}ProtectKernelTunables=yes
{S}ProtectControlGroups=yes
{S}RestrictSUIDSGID=yes
{S}LockPersonality=yes

[Install]
{S}WantedBy=multi-user.target
{W}WantedBy=default.target
";

/// The OpenRC script: supervise-daemon keeps the gateway in the foreground (so no
/// `command_background`) and restarts it.
const OPENRC: &str = "#!/sbin/openrc-run
# Written by yoctoclaw service install; yoctoclaw service uninstall removes it.
description=\"yoctoclaw personal AI assistant (gateway)\"
# supervise-daemon restarts it; it stays in the foreground (no command_background).
supervisor=supervise-daemon
command={X}
command_args=\"--home {H} --log-file {H}/gateway.log gateway\"
command_user={U}
pidfile=/run/yoctoclaw.pid
respawn_delay=10
respawn_max=0
# rc-service yoctoclaw reload: config.json and secrets.env read again (SIGHUP).
extra_started_commands=\"reload\"

depend() {
	need net
	after ntp-client ntpd chronyd
}

reload() {
	ebegin \"Reloading $RC_SVCNAME\"
	supervise-daemon \"$RC_SVCNAME\" --signal HUP
	eend $?
}
";

/// The SysV script, for BusyBox's or Debian's start-stop-daemon.
const SYSV: &str = "#!/bin/sh
### BEGIN INIT INFO
# Provides: yoctoclaw
# Required-Start: $network $remote_fs
# Required-Stop: $network $remote_fs
# Default-Start: 2 3 4 5
# Default-Stop: 0 1 6
### END INIT INFO
# Written by yoctoclaw service install; yoctoclaw service uninstall removes it.
P=/var/run/yoctoclaw.pid
case \"$1\" in
start)
{R}	start-stop-daemon -S -b -m -p $P -x {X} -- --home {H} --log-file {H}/gateway.log gateway;;
	start-stop-daemon -S -b -m -p $P -c {U} -x {X} -- --home {H} --log-file {H}/gateway.log gateway;;
stop) start-stop-daemon -K -p $P -s TERM && rm -f $P;;
restart) \"$0\" stop; sleep 3; exec \"$0\" start;;
reload) start-stop-daemon -K -p $P -s HUP;;
*) echo \"usage: $0 start|stop|restart|reload\" >&2; exit 1;;
esac
";

/// The inittab lines: the marker, then the respawn entry. The `sleep` keeps a gateway that
/// cannot start (no network yet, a bad config) from spinning.
const INITTAB: &str = "# Written by yoctoclaw service install: the next line (yoctoclaw service uninstall removes both)
{R}::respawn:/bin/sh -c 'sleep 5; exec {X} --home {H} --log-file {H}/gateway.log gateway'
::respawn:/bin/su -s /bin/sh {U} -c 'sleep 5; exec {X} --home {H} --log-file {H}/gateway.log gateway'
";

/// The template keys, in the order of [`fill`]'s values: binary, home, account, "no
/// account", board name, MemoryHigh, MemoryMax, system unit, user unit.
const KEYS: &[u8; 9] = b"XHURBMNSW";

/// `t` with `{K}` replaced by the value of key K; lines holding a key whose value is
/// `None` are left out.
pub fn fill(t: &str, vals: &[Option<&str>; 9]) -> String {
    let mut out = String::with_capacity(t.len() + 256);
    'lines: for line in t.split_inclusive('\n') {
        let mut l = String::with_capacity(line.len() + 64);
        let mut rest = line;
        while let Some(i) = rest.find('{') {
            let key = rest
                .as_bytes()
                .get(i + 1)
                .and_then(|k| KEYS.iter().position(|x| x == k));
            match key {
                Some(k) if rest.as_bytes().get(i + 2) == Some(&b'}') => {
                    let Some(v) = vals[k] else { continue 'lines };
                    add(&mut l, &[&rest[..i], v]);
                    rest = &rest[i + 3..];
                }
                _ => {
                    l.push_str(&rest[..=i]);
                    rest = &rest[i + 1..];
                }
            }
        }
        add(&mut out, &[&l, rest]);
    }
    out
}

/// `text` without our marker line and the line after it (when that one is our respawn line).
fn strip_inittab(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let (mut skip, mut found) = (false, false);
    for line in text.split_inclusive('\n') {
        if std::mem::take(&mut skip) && line.starts_with("::respawn:") && line.contains(" gateway")
        {
            continue;
        }
        if line.starts_with('#') && line.contains(MARK) {
            (skip, found) = (true, true);
            continue;
        }
        out.push_str(line);
    }
    found.then_some(out)
}

fn mode_of(p: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).map_or(0o644, |m| m.permissions().mode() & 0o7777)
}

/// Write `text` to `path` atomically with `mode` (less the umask), creating its folder.
fn put(path: &Path, text: &str, mode: u32, root_sd: Option<bool>) -> Result<(), ServiceError> {
    let r = match path.parent() {
        Some(d) => std::fs::create_dir_all(d),
        None => Ok(()),
    }
    .and_then(|_| write_atomic(path, text.as_bytes(), mode));
    r.map_err(|e| io_err("write", path, e, root_sd))
}

/// `root_sd`: `Some(systemd?)` for system paths, where a refusal means "needs root".
fn io_err(verb: &'static str, p: &Path, e: std::io::Error, root_sd: Option<bool>) -> ServiceError {
    match root_sd {
        Some(sd) if e.kind() == ErrorKind::PermissionDenied => {
            ServiceError::NeedsRoot(p.to_path_buf(), sd)
        }
        _ => ServiceError::Io(verb, p.to_path_buf(), e.kind()),
    }
}

/// `MemTotal` of `/proc/meminfo` under `root`, in KiB.
pub fn mem_total_kib(root: &Path) -> Option<u64> {
    text_of(&under(root, "/proc/meminfo"))
        .lines()
        .find_map(|l| {
            l.strip_prefix("MemTotal:")?
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse()
                .ok()
        })
}

/// The places `install` writes to, by [`Place`]: the file (`~/` is the user unit
/// folder), the link that enables it, the command that removes that link, and what to run
/// after the file is gone.
const PLACES: [[&str; 4]; 5] = [
    [
        "/etc/systemd/system/yoctoclaw.service",
        "/etc/systemd/system/multi-user.target.wants/yoctoclaw.service",
        "systemctl disable --now yoctoclaw",
        "systemctl daemon-reload",
    ],
    [
        "~/yoctoclaw.service",
        "~/default.target.wants/yoctoclaw.service",
        "systemctl --user disable --now yoctoclaw",
        "systemctl --user daemon-reload",
    ],
    [
        "/etc/init.d/yoctoclaw",
        "/etc/runlevels/default/yoctoclaw",
        "rc-service yoctoclaw stop && rc-update del yoctoclaw default",
        "",
    ],
    [
        "/etc/init.d/S99yoctoclaw",
        "",
        "",
        "update-rc.d S99yoctoclaw remove, where /etc/rc2.d exists",
    ],
    [
        "/etc/inittab",
        "",
        "",
        "kill -HUP 1, and stop the running gateway",
    ],
];
const USER_UNIT: usize = 1;
const INITTAB_PLACE: usize = 4;

/// What `install` writes at each place: template, mode, what it is, what to run next.
const WRITES: [(&str, u32, &str, &str); 5] = [
    (
        SYSTEMD,
        0o644,
        "systemd system unit",
        "systemctl daemon-reload && systemctl enable --now yoctoclaw",
    ),
    (
        SYSTEMD,
        0o644,
        "systemd user unit",
        "systemctl --user daemon-reload && systemctl --user enable --now yoctoclaw\nto keep it running after you log out and start it at boot: loginctl enable-linger",
    ),
    (
        OPENRC,
        0o755,
        "OpenRC",
        "rc-update add yoctoclaw default && rc-service yoctoclaw start",
    ),
    (
        SYSV,
        0o755,
        "SysV init",
        "/etc/init.d/S99yoctoclaw start (with /etc/rc2.d, Debian style: update-rc.d S99yoctoclaw defaults first)",
    ),
    (
        INITTAB,
        0,
        "BusyBox init",
        "kill -HUP 1 (init reads /etc/inittab again and starts it)",
    ),
];

/// A place of [`PLACES`] under `root` (`None`: a user unit without `HOME`, or no link).
fn place(root: &Path, rel: &str) -> Option<PathBuf> {
    match rel.strip_prefix("~/") {
        Some(r) => Some(user_unit_dir(root)?.join(r)),
        None if rel.is_empty() => None,
        None => Some(under(root, rel)),
    }
}

/// Whether the place's enabling link exists (it points at the file, which exists).
fn enabled(root: &Path, i: usize) -> Option<bool> {
    place(root, PLACES[i][1]).map(|l| l.exists())
}

fn install(
    root: &Path,
    scope: Option<bool>,
    dry: bool,
    home: &Home,
) -> Result<String, ServiceError> {
    let init = detect(root).ok_or(ServiceError::NoInit)?;
    let sd = init == Init::Systemd;
    let user_unit = scope.unwrap_or(sd && !is_root());
    if user_unit && !sd {
        return Err(ServiceError::UserNeedsSystemd);
    }
    let exe = this_exe().ok_or(ServiceError::NoExe)?;
    let exe = safe(&exe, true)?;
    let home_dir = std::fs::canonicalize(&home.dir).unwrap_or_else(|_| home.dir.clone());
    let hd = safe(&home_dir, true)?;
    let who = if user_unit {
        None
    } else {
        run_as(root, &home_dir)
    };
    if let Some(w) = &who {
        safe(Path::new(w), false)?;
    }
    let board = if sd {
        mem_total_kib(root).and_then(|k| board_for(&this_arch(), k))
    } else {
        None
    };
    let i = match init {
        Init::Systemd => user_unit as usize,
        Init::OpenRc => 2,
        Init::SysV => 3,
        Init::BusyBox => INITTAB_PLACE,
    };
    let (template, mode, what, next) = WRITES[i];
    let path = place(root, PLACES[i][0]).ok_or(ServiceError::Usage("--user needs HOME set"))?;
    let ours = fill(
        template,
        &[
            Some(exe),
            Some(hd),
            who.as_deref(),
            who.is_none().then_some(""),
            board.map(|b| b.name),
            board.map(|b| b.memory_high),
            board.map(|b| b.memory_max),
            (!user_unit).then_some(""),
            user_unit.then_some(""),
        ],
    );
    let old = read(&path, mode == 0)?;
    let text = if mode == 0 {
        // The inittab: ours replaces an older line of ours, or goes at the end.
        let old = old.clone().unwrap_or_default();
        let mut t = strip_inittab(&old).unwrap_or(old);
        if !t.is_empty() && !t.ends_with('\n') {
            t.push('\n');
        }
        t + &ours
    } else if old.as_deref().is_some_and(|t| !t.contains(MARK)) {
        return Err(ServiceError::NotOurs(path));
    } else {
        ours.clone()
    };
    let shown = path.to_string_lossy();
    let mut out = String::new();
    if dry {
        add(
            &mut out,
            &["would write ", &shown, " (", what, "):\n", &ours],
        );
    } else if old.as_deref() == Some(text.as_str()) {
        add(&mut out, &["unchanged: ", &shown, " (", what, ")\n"]);
    } else {
        let mode = if mode == 0 { mode_of(&path) } else { mode };
        put(&path, &text, mode, (!user_unit).then_some(sd))?;
        add(&mut out, &["wrote ", &shown, " (", what, ")\n"]);
    }
    if sd {
        add(
            &mut out,
            &[
                "note: ",
                if board.is_some() {
                    "memory limits of board profile "
                } else {
                    "no board profile for this CPU: no memory limits"
                },
                board.map_or("", |b| b.name),
                "\n",
            ],
        );
    }
    if !home_dir.is_dir() {
        add(
            &mut out,
            &[
                "note: ",
                hd,
                " does not exist yet: run yoctoclaw onboard first\n",
            ],
        );
    }
    add(&mut out, &["then run: ", next]);
    Ok(out)
}

/// What is at place `i` of [`PLACES`]: its path, and whether it is ours; for the inittab,
/// `Some` of its text without our lines (ours only when it had them).
fn found(root: &Path, i: usize) -> Result<Option<(PathBuf, bool, Option<String>)>, ServiceError> {
    let Some(path) = place(root, PLACES[i][0]) else {
        return Ok(None);
    };
    let Some(text) = read(&path, i == INITTAB_PLACE)? else {
        return Ok(None);
    };
    Ok(if i == INITTAB_PLACE {
        strip_inittab(&text).map(|t| (path, true, Some(t)))
    } else {
        let ours = text.contains(MARK);
        Some((path, ours, None))
    })
}

fn uninstall(root: &Path, scope: Option<bool>, dry: bool) -> Result<String, ServiceError> {
    let sd = detect(root) == Some(Init::Systemd);
    let mut out = String::new();
    let mut todo = Vec::new();
    for (i, p) in PLACES.iter().enumerate() {
        if scope.is_some_and(|u| u != (i == USER_UNIT)) {
            continue;
        }
        let Some((path, ours, new)) = found(root, i)? else {
            continue;
        };
        if !ours {
            add(
                &mut out,
                &["left ", &path.to_string_lossy(), NOT_OURS, "\n"],
            );
            continue;
        }
        if enabled(root, i) == Some(true) {
            return Err(ServiceError::Enabled(p[2]));
        }
        todo.push((i, path, new));
    }
    if todo.is_empty() {
        out.push_str("nothing to remove: no file written by yoctoclaw service install");
        return Ok(out);
    }
    for (i, path, new) in todo {
        let what = match (dry, new.is_some()) {
            (true, true) => "would remove the yoctoclaw line from ",
            (true, false) => "would remove ",
            (false, true) => "removed the yoctoclaw line from ",
            (false, false) => "removed ",
        };
        add(&mut out, &[what, &path.to_string_lossy(), "\n"]);
        if dry {
            continue;
        }
        let root_sd = (i != USER_UNIT).then_some(sd);
        match &new {
            Some(t) => put(&path, t, mode_of(&path), root_sd)?,
            None => std::fs::remove_file(&path).map_err(|e| io_err("remove", &path, e, root_sd))?,
        }
        if !PLACES[i][3].is_empty() {
            add(&mut out, &["then run: ", PLACES[i][3], "\n"]);
        }
    }
    Ok(out.trim_end().to_string())
}

/// How the installed service is restarted (`yoctoclaw update`).
#[derive(Debug, PartialEq, Eq)]
pub enum Restart {
    /// Run this command (systemd, OpenRC, the SysV script).
    Run(Vec<String>),
    /// BusyBox init: stop the running gateway; init starts it again (`respawn`).
    Respawn,
}

/// How to restart the service that `install` wrote under `root` (the first of ours found,
/// in [`PLACES`]' order); `None` when there is none.
pub fn restart(root: &Path) -> Option<Restart> {
    let i = (0..PLACES.len()).find(|&i| matches!(found(root, i), Ok(Some((_, true, _)))))?;
    let run = |a: &[&str]| Some(Restart::Run(a.iter().map(|s| s.to_string()).collect()));
    match i {
        0 => run(&["systemctl", "restart", "yoctoclaw"]),
        USER_UNIT => run(&["systemctl", "--user", "restart", "yoctoclaw"]),
        2 => run(&["rc-service", "yoctoclaw", "restart"]),
        INITTAB_PLACE => Some(Restart::Respawn),
        _ => run(&[&place(root, PLACES[i][0])?.to_string_lossy(), "restart"]),
    }
}

/// When process `pid` started (Unix seconds), from `/proc`.
fn started_at(pid: u32) -> Option<i64> {
    let stat = text_of(
        &Path::new("/proc")
            .join(rustix::path::DecInt::new(pid).as_str())
            .join("stat"),
    );
    // Fields after the command name (which may hold spaces): state is the first, the
    // start time (clock ticks after boot) the 20th.
    let ticks: u64 = stat
        .rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(19)?
        .parse()
        .ok()?;
    let boot: i64 = text_of(Path::new("/proc/stat"))
        .lines()
        .find_map(|l| l.strip_prefix("btime ")?.trim().parse().ok())?;
    Some(boot + (ticks / CLOCK_TICKS_PER_SEC) as i64)
}

fn status(root: &Path, home: &Home) -> String {
    let mut s = String::new();
    add(&mut s, &["init:       ", init_name(detect(root)), "\n"]);
    let mut label = "installed:  ";
    for i in 0..PLACES.len() {
        let Ok(Some((path, ours, _))) = found(root, i) else {
            continue;
        };
        let note = match (ours, enabled(root, i)) {
            (false, _) => NOT_OURS,
            (_, Some(true)) => " (enabled)",
            (_, Some(false)) => " (not enabled)",
            _ => "",
        };
        add(&mut s, &[label, &path.to_string_lossy(), note, "\n"]);
        label = "            ";
    }
    if label.starts_with('i') {
        s.push_str("installed:  no (yoctoclaw service install writes it)\n");
    }
    let cfg = crate::config::load(home, &crate::config::Env::default()).ok();
    let (tz, cache) = cfg.as_ref().map_or(("UTC", 128), |c| {
        (c.agent.timezone.as_str(), c.memory.cache_kib)
    });
    let db = home.db_file();
    let record = if db.exists() {
        crate::store::Db::open(&db, cache)
            .and_then(|d| crate::status::read_gateway_record(&d, crate::time::clock::now()))
            .map_err(|_| ())
    } else {
        Ok(crate::status::Gateway::Never)
    };
    let at = |t| crate::time::clock::format_at(t, tz);
    s.push_str("running:    ");
    match record {
        Ok(crate::status::Gateway::Running(r)) => add(
            &mut s,
            &[
                "yes, pid ",
                rustix::path::DecInt::new(r.pid).as_str(),
                ", since ",
                &started_at(r.pid).map_or_else(|| "?".into(), at),
            ],
        ),
        Ok(crate::status::Gateway::Stopped(r)) => add(&mut s, &["no (last seen ", &at(r.at), ")"]),
        Ok(crate::status::Gateway::Never) => s.push_str("no (never started)"),
        Err(()) => s.push_str("unknown: cannot read the database (run as the home's owner)"),
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_board_table_matches_the_profiles() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("boards");
        let mut seen = 0;
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_none_or(|x| x != "conf") {
                continue;
            }
            let text = std::fs::read_to_string(&p).unwrap();
            let get = |k: &str| {
                text.lines()
                    .find_map(|l| l.strip_prefix(k)?.strip_prefix('='))
                    .unwrap()
                    .to_string()
            };
            let name = get("name");
            let b = BOARDS
                .iter()
                .find(|b| b.name == name)
                .unwrap_or_else(|| panic!("boards/{name}.conf is missing from service::BOARDS"));
            let arch = match get("triple").split('-').next().unwrap() {
                "riscv64gc" => "riscv64",
                "armv7" => "arm",
                "arm" => "armv6",
                a => a,
            }
            .to_string();
            assert_eq!(
                (b.arch, b.ram_mb, b.memory_high, b.memory_max),
                (
                    arch.as_str(),
                    get("ram_mb").parse().unwrap(),
                    get("memory_high").as_str(),
                    get("memory_max").as_str()
                ),
                "service::BOARDS disagrees with {}",
                p.display()
            );
            seen += 1;
        }
        assert_eq!(
            seen,
            BOARDS.len(),
            "a profile in BOARDS has no boards/*.conf"
        );
    }

    #[test]
    fn boards_are_picked_by_cpu_and_memory() {
        let name = |arch, kib| board_for(arch, kib).map(|b| b.name);
        // A Milk-V Duo shows about 55 MiB; a Duo 256M about 200 MiB after the camera.
        assert_eq!(name("riscv64", 55_000), Some("milkv-duo-64mb"));
        assert_eq!(name("riscv64", 200_000), Some("licheerv-nano"));
        assert_eq!(name("riscv64", 8_000_000), Some("licheerv-nano"));
        assert_eq!(name("riscv64", 0), Some("milkv-duo-64mb"));
        assert_eq!(name("aarch64", 100_000), Some("aarch64-generic"));
        assert_eq!(name("arm", 230_000), Some("armv7-generic"));
        assert_eq!(name("armv6", 440_000), Some("armv6-generic"));
        assert_eq!(name("x86_64", 8_000_000), None);
    }

    #[test]
    fn the_restart_follows_the_installed_service() {
        let root = std::env::temp_dir().join(format!("yc-svc-restart-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        assert_eq!(restart(&root), None);
        let put = |rel: &str, text: &str| {
            let p = under(&root, rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        let ours = format!("# {MARK}\n");
        let argv = |a: &[&str]| Some(Restart::Run(a.iter().map(|s| s.to_string()).collect()));
        put("/etc/inittab", "::sysinit:/etc/init.d/rcS\n");
        assert_eq!(restart(&root), None, "an inittab without our line");
        put(
            "/etc/inittab",
            &format!("{ours}::respawn:/bin/sh -c 'exec /x gateway'\n"),
        );
        assert_eq!(restart(&root), Some(Restart::Respawn));
        put("/etc/init.d/S99yoctoclaw", &ours);
        let sysv = under(&root, "/etc/init.d/S99yoctoclaw");
        assert_eq!(restart(&root), argv(&[sysv.to_str().unwrap(), "restart"]));
        put("/etc/init.d/yoctoclaw", &ours);
        assert_eq!(
            restart(&root),
            argv(&["rc-service", "yoctoclaw", "restart"])
        );
        put("/etc/systemd/system/yoctoclaw.service", "not ours\n");
        assert_eq!(
            restart(&root),
            argv(&["rc-service", "yoctoclaw", "restart"])
        );
        put("/etc/systemd/system/yoctoclaw.service", &ours);
        assert_eq!(restart(&root), argv(&["systemctl", "restart", "yoctoclaw"]));
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn unsafe_paths_are_refused() {
        assert_eq!(
            safe(Path::new("/home/pi/.yoctoclaw"), true).unwrap(),
            "/home/pi/.yoctoclaw"
        );
        for bad in [
            "/home/a b",
            "/x/%h",
            "/x/'q",
            "/x/$HOME",
            "/x/a\nb",
            "/x/\"",
            "/x/;rm",
            "",
            "relative/home",
        ] {
            assert!(safe(Path::new(bad), true).is_err(), "{bad:?}");
        }
        assert!(safe(Path::new("pi"), false).is_ok());
        assert!(safe(Path::new("p i"), false).is_err());
    }

    fn vals<'a>(
        user: Option<&'a str>,
        b: Option<&'a Board>,
        user_unit: bool,
    ) -> [Option<&'a str>; 9] {
        [
            Some("/b/yc"),
            Some("/h"),
            user,
            user.is_none().then_some(""),
            b.map(|b| b.name),
            b.map(|b| b.memory_high),
            b.map(|b| b.memory_max),
            (!user_unit).then_some(""),
            user_unit.then_some(""),
        ]
    }

    #[test]
    fn fill_replaces_keys_and_drops_lines_without_a_value() {
        let t = "a {X} b {H}{H}\nUser={U}\ndepend() {\n${PIDFILE} {Q} {\n{R}root only\n{";
        assert_eq!(
            fill(t, &vals(None, None, false)),
            "a /b/yc b /h/h\ndepend() {\n${PIDFILE} {Q} {\nroot only\n{"
        );
        assert_eq!(
            fill(t, &vals(Some("pi"), None, false)),
            "a /b/yc b /h/h\nUser=pi\ndepend() {\n${PIDFILE} {Q} {\n{"
        );
        // No key is left in any template, whatever is known.
        for t in [SYSTEMD, OPENRC, SYSV, INITTAB] {
            for v in [
                vals(None, None, true),
                vals(Some("pi"), Some(&BOARDS[0]), false),
            ] {
                let out = fill(t, &v);
                for k in KEYS {
                    assert!(!out.contains(&format!("{{{}}}", *k as char)), "{out}");
                }
                assert!(out.contains(MARK), "{out}");
            }
        }
    }

    #[test]
    fn the_inittab_block_is_stripped_exactly() {
        let block = fill(INITTAB, &vals(None, None, false));
        assert_eq!(block.lines().count(), 2, "{block}");
        let base = "::sysinit:/etc/init.d/rcS\n# yoctoclaw is great\nttyS0::respawn:/sbin/getty -L ttyS0\n";
        let with = format!("{base}{block}");
        assert_eq!(strip_inittab(&with).as_deref(), Some(base));
        assert_eq!(strip_inittab(base), None);
        // A marker whose line was deleted by hand: the next, unrelated line stays.
        let orphan = format!("# {MARK}: x\n::shutdown:/bin/umount -a -r\n");
        assert_eq!(
            strip_inittab(&orphan).as_deref(),
            Some("::shutdown:/bin/umount -a -r\n")
        );
    }

    #[test]
    fn user_units_have_no_user_line_and_no_system_targets() {
        let u = fill(SYSTEMD, &vals(None, None, true));
        assert!(u.contains("WantedBy=default.target"));
        assert!(!u.contains("User=") && !u.contains("network-online") && !u.contains("Memory"));
        assert!(!u.contains("ProtectSystem") && !u.contains("multi-user"));
        let s = fill(SYSTEMD, &vals(Some("pi"), Some(&BOARDS[0]), false));
        assert!(s.contains("User=pi\n") && s.contains("MemoryMax=24M\n"));
        assert!(s.contains("ReadWritePaths=/h\n") && s.contains("WantedBy=multi-user.target"));
        assert!(!s.contains("default.target"));
        assert!(s.contains("\nExecReload=/b/yc --home /h reload\n"), "{s}");
        let sysv = fill(SYSV, &vals(Some("pi"), None, false));
        assert!(sysv.contains("\nreload) start-stop-daemon -K -p $P -s HUP;;\n"));
        let rc = fill(OPENRC, &vals(Some("pi"), None, false));
        assert!(rc.contains("\nextra_started_commands=\"reload\"\n"), "{rc}");
        assert!(rc.contains("\nreload() {\n"), "{rc}");
        assert!(
            rc.contains("supervise-daemon \"$RC_SVCNAME\" --signal HUP"),
            "{rc}"
        );
        assert_eq!(sysv.matches("start-stop-daemon -S").count(), 1);
        assert!(
            sysv.contains(" -c pi -x /b/yc -- --home /h --log-file /h/gateway.log gateway;;\n")
        );
    }
}
