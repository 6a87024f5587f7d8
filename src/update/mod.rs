//! `yoctoclaw update`: a new release for this board, checked and installed, with an
//! automatic way back.
//!
//! - `update --check`: read the release index at `update.url` ([`index`]) and say whether
//!   it names a newer version.
//! - `update`: download this board's archive (the profile `install.sh` would choose:
//!   `service::board_for`), check its size, SHA-256 and minisign signature ([`minisign`],
//!   against [`BUILT_IN_KEY`] and `update.public_key`), unpack it with the system's `tar`
//!   (only authenticated bytes are ever parsed), check its `board.conf` is for this CPU,
//!   then install: the old binary is kept as `yoctoclaw.prev`, the new one (fsynced) is
//!   renamed over the old one (atomic), the folder is fsynced, the service restarted the
//!   way `service install` set it up, and `update` waits up to `update.confirm_secs` for
//!   the new gateway's health mark; without it the previous binary is put back and the
//!   service restarted again.
//! - `update --from FILE`: the same with a local archive and its `FILE.minisig`.
//! - `update --rollback`: put `yoctoclaw.prev` back by hand and restart.
//!
//! State in the home: [`PENDING_FILE`] while an installed update waits for its mark (the
//! deadline, the installed path and its inode); [`NOTE_FILE`] holds the one line the next
//! start logs after a rollback. The gateway calls [`at_start`] first thing (cleans what an
//! interrupted update left beside the binary; rolls back itself when it is a new binary
//! past its deadline without a mark, then exits so the service manager starts the old
//! one) and [`confirm`] once it has polled Telegram, or finished its start without
//! Telegram.
//!
//! # Bounds
//! The index is read up to `MAX_INDEX_BYTES`, an archive up to `MAX_ARCHIVE_BYTES`, a
//! signature up to `minisign::MAX_MINISIG_BYTES`, `board.conf` and the state files up to
//! `MAX_STATE_BYTES`. The archive is held in memory once (it is verified before a byte of
//! it is unpacked).
//!
//! # Threads
//! The main thread of `yoctoclaw update` (and of the gateway, before its executor runs,
//! for [`at_start`]; [`confirm`] from the Telegram poller's thread, or from the executor
//! without polling: it removes one small file).
//!
//! # Blocking
//! `update` blocks its main thread on the downloads (ureq's timeouts), `tar`, the service
//! manager and the wait for the mark (`update.confirm_secs`); nothing else runs there.

pub mod blake2b;
pub mod index;
pub mod minisign;

use crate::args::UpdateCmd;
use crate::config::{Config, Home};
use crate::files::{ReadError, read_regular, write_atomic};
use minisign::{MAX_MINISIG_BYTES, PublicKey, SigError};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The release signing key built into the binary (minisign's public key line). A release
/// build sets it with the `YOCTOCLAW_UPDATE_PUBLIC_KEY` environment variable at compile
/// time; without it only `update.public_key` is trusted.
pub const BUILT_IN_KEY: &str = match option_env!("YOCTOCLAW_UPDATE_PUBLIC_KEY") {
    Some(k) => k,
    None => "",
};
/// Largest release archive taken (a board's is about 1.3 MB).
pub const MAX_ARCHIVE_BYTES: u64 = 16 * 1024 * 1024;
/// Largest release index read.
pub const MAX_INDEX_BYTES: u64 = 64 * 1024;
/// Largest state file or `board.conf` read.
const MAX_STATE_BYTES: usize = 4096;
/// The overall timeout of one download.
const DOWNLOAD_TIMEOUT_SECS: u64 = 300;
/// How often `update` looks for the health mark.
const MARK_POLL_MS: u64 = 200;
/// What `tar` and the service manager's command get of our environment (`systemctl
/// --user` needs the session's bus).
const CHILD_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "LANG",
    "USER",
    "LOGNAME",
    "XDG_RUNTIME_DIR",
    "DBUS_SESSION_BUS_ADDRESS",
];
/// In the home: an installed update waiting for its health mark.
pub const PENDING_FILE: &str = "update-pending";
/// In the home: what the last automatic rollback said, for the next start to log.
pub const NOTE_FILE: &str = "update-note";
/// Beside the binary: where an archive is unpacked (removed after, and at every start).
const WORK_DIR: &str = ".yoctoclaw-update";
/// Beside the binary: the previous version.
const PREV: &str = "yoctoclaw.prev";
/// Beside the binary: the previous version while it is being made.
const PREV_TMP: &str = ".yoctoclaw.prev.tmp";
/// The running version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Why an update did not happen, each a sentence saying what to do. Whatever the error,
/// the installed binary is the one that was there before.
#[derive(Debug)]
pub enum UpdateError {
    Usage(&'static str),
    NoUrl,
    NoKey,
    /// What is wrong with the release index.
    Index(&'static str),
    /// The board (or, without a profile for this machine, the CPU) the release lacks.
    NoBoard(String),
    /// Why a download failed.
    Download(&'static str),
    /// A download answered with this HTTP status.
    Status(u16),
    TooLarge,
    Checksum,
    Signature(SigError),
    MissingSignature,
    /// Why the archive could not be unpacked.
    Unpack(&'static str),
    OtherBoard(String),
    /// What could not be done beside the binary, and why.
    Install(&'static str, ErrorKind),
    TurnRunning,
    Pending,
    NoPrevious,
    NoExe,
    /// The program that did not restart the service.
    Restart(String),
    RolledBack(u64),
}

impl std::fmt::Display for UpdateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use UpdateError as E;
        let unchanged = ": nothing was changed";
        match self {
            E::Usage(m) => f.write_str(m),
            E::NoUrl => f.write_str("no release index: set update.url in config.json, or use update --from FILE"),
            E::NoKey => f.write_str("no trusted signing key: this build has none built in; set update.public_key to your minisign public key"),
            E::Index(m) => write!(f, "the release index is not usable: {m}"),
            E::NoBoard(b) => write!(f, "the release has no archive for this board ({b}){unchanged}"),
            E::Download(m) => write!(f, "download failed ({m}){unchanged}; try again later"),
            E::Status(s) => write!(f, "download failed (HTTP status {s}){unchanged}; try again later"),
            E::TooLarge => write!(f, "the download is larger than allowed (16 MiB for an archive, 64 KiB for the index){unchanged}"),
            E::Checksum => write!(f, "the archive does not match the index's SHA-256 (truncated or changed){unchanged}"),
            E::Signature(s) => write!(f, "{s}{unchanged}"),
            E::MissingSignature => write!(f, "the archive has no signature (FILE.minisig){unchanged}"),
            E::Unpack(m) => write!(f, "cannot unpack the archive ({m}){unchanged}"),
            E::OtherBoard(b) => write!(f, "the archive is for another board ({b}){unchanged}"),
            E::Install(what, k) => write!(f, "cannot {what} beside the binary ({k}): the installed version is unchanged"),
            E::TurnRunning => f.write_str("the gateway is answering a message: nothing was changed; try again when it has finished"),
            E::Pending => f.write_str("an update is still waiting for the new gateway to confirm its start: wait, or run yoctoclaw update --rollback"),
            E::NoPrevious => f.write_str("there is no previous version (yoctoclaw.prev) to go back to"),
            E::NoExe => f.write_str("cannot tell where this yoctoclaw binary is"),
            E::Restart(p) => write!(f, "the service could not be restarted ({p} failed): the installed version is unchanged; check the service, then try again"),
            E::RolledBack(s) => write!(f, "the new version did not confirm its start within {s} s: the previous version is back and was restarted"),
        }
    }
}

impl std::error::Error for UpdateError {}

impl UpdateError {
    pub fn is_usage(&self) -> bool {
        matches!(self, UpdateError::Usage(_))
    }
}

fn io(what: &'static str) -> impl Fn(std::io::Error) -> UpdateError {
    move |e| UpdateError::Install(what, e.kind())
}

/// Run `yoctoclaw update` as `o` asks; what to print. Progress goes to stderr.
pub fn command(home: &Home, cfg: &Config, o: &UpdateCmd) -> Result<String, UpdateError> {
    if u8::from(o.check) + u8::from(o.rollback) + u8::from(o.from.is_some()) > 1 {
        return Err(UpdateError::Usage(
            "--check, --rollback and --from exclude each other",
        ));
    }
    let exe = crate::service::this_exe().ok_or(UpdateError::NoExe)?;
    clean_leftovers(&exe);
    if o.rollback {
        return rollback(home, cfg, &exe, &o.root, "");
    }
    let (archive, sig) = match &o.from {
        Some(file) => (read_archive(file)?, read_sig(file)?),
        None => {
            if cfg.update.url.is_empty() {
                return Err(UpdateError::NoUrl);
            }
            let board = board(&o.root);
            let idx = index::fetch(&cfg.update.url, board.unwrap_or(""))?;
            let v = &idx.version;
            if !index::newer(v, VERSION) {
                return Ok(format!("up to date: {VERSION} (the newest release is {v})"));
            }
            if o.check {
                return Ok(format!(
                    "a newer release exists: {v} (this is {VERSION}); install it with yoctoclaw update"
                ));
            }
            let e = idx.entry.ok_or_else(|| {
                UpdateError::NoBoard(board.map_or_else(crate::service::this_arch, String::from))
            })?;
            eprintln!("update: downloading {v}");
            let archive = index::download(&e.url, MAX_ARCHIVE_BYTES)?;
            let sum = ring::digest::digest(&ring::digest::SHA256, &archive);
            if !index::hex_eq(sum.as_ref(), &e.sha256) {
                return Err(UpdateError::Checksum);
            }
            let sig = index::download(&e.minisig, MAX_MINISIG_BYTES)
                .map_err(|_| UpdateError::MissingSignature)?;
            (archive, sig)
        }
    };
    minisign::verify(&trusted_keys(cfg)?, &archive, &sig).map_err(UpdateError::Signature)?;
    if gateway_busy(home, cfg) {
        return Err(UpdateError::TurnRunning);
    }
    if read_pending(home).is_some() {
        return Err(UpdateError::Pending);
    }
    let work = beside(&exe, WORK_DIR);
    let installed = unpack(&archive, &work).and_then(|(new, version)| {
        install(&exe, &new)?;
        Ok(version)
    });
    drop(archive);
    let _ = std::fs::remove_dir_all(&work);
    let version = installed?;
    let Some(how) = crate::service::restart(&o.root) else {
        return Ok(format!(
            "installed {version} (the previous version is kept as {PREV}); no service is installed: restart the gateway yourself"
        ));
    };
    let secs = cfg.update.confirm_secs;
    let deadline = crate::time::clock::now().saturating_add_unsigned(secs);
    write_pending(home, &exe, inode(&exe).unwrap_or(0), deadline, &version)?;
    eprintln!(
        "update: installed {version}; restarting the service and waiting up to {secs} s for it to confirm"
    );
    if let Err(e) = restart(&how, home, cfg) {
        // The service manager refused: the previous binary goes back, as it was.
        put_back(home, &exe, "")?;
        return Err(e);
    }
    if wait_for_mark(home, secs) {
        return Ok(format!(
            "updated to {version}: the new gateway confirmed its start (the previous version is kept as {PREV}; yoctoclaw update --rollback goes back)"
        ));
    }
    let note = format!(
        "update: {version} did not confirm its start within {secs} s: rolled back to {VERSION}"
    );
    rollback(home, cfg, &exe, &o.root, &note)?;
    Err(UpdateError::RolledBack(secs))
}

/// The board profile for this machine (as `install.sh` picks it), in a test tree `root`.
fn board(root: &Path) -> Option<&'static str> {
    let mem = crate::service::mem_total_kib(root)
        .or_else(|| crate::service::mem_total_kib(Path::new("/")))
        .unwrap_or(0);
    crate::service::board_for(&crate::service::this_arch(), mem).map(|b| b.name)
}

fn trusted_keys(cfg: &Config) -> Result<Vec<PublicKey>, UpdateError> {
    let mut keys = Vec::with_capacity(2);
    if let Ok(k) = PublicKey::parse(BUILT_IN_KEY) {
        keys.push(k);
    }
    if !cfg.update.public_key.is_empty() {
        keys.push(PublicKey::parse(&cfg.update.public_key).map_err(UpdateError::Signature)?);
    }
    if keys.is_empty() {
        return Err(UpdateError::NoKey);
    }
    Ok(keys)
}

/// The local archive `file` (`update --from`).
fn read_archive(file: &Path) -> Result<Vec<u8>, UpdateError> {
    match read_regular(file, MAX_ARCHIVE_BYTES as usize + 1, true) {
        Ok((b, _)) if b.len() as u64 > MAX_ARCHIVE_BYTES => Err(UpdateError::TooLarge),
        Ok((b, _)) => Ok(b),
        Err(ReadError::NotFound) => Err(UpdateError::Usage("no such archive file")),
        Err(_) => Err(UpdateError::Usage("cannot read the archive file")),
    }
}

/// `FILE.minisig`, beside the local archive `file`.
fn read_sig(file: &Path) -> Result<Vec<u8>, UpdateError> {
    let mut sig = file.as_os_str().to_owned();
    sig.push(".minisig");
    match read_regular(Path::new(&sig), MAX_MINISIG_BYTES as usize, true) {
        Ok((b, _)) => Ok(b),
        Err(_) => Err(UpdateError::MissingSignature),
    }
}

/// The home's store, when there is one (the gateway's status record is there).
fn open_db(home: &Home, cfg: &Config) -> Option<crate::store::Db> {
    let db = home.db_file();
    if !db.exists() {
        return None;
    }
    crate::store::Db::open(&db, cfg.memory.cache_kib).ok()
}

/// Whether a running gateway is in a turn: its status record counts one (HTTP API turns
/// included; rewritten every minute), or a Telegram message waits for its turn or its
/// answer in the durable inbox (committed as it happens).
fn gateway_busy(home: &Home, cfg: &Config) -> bool {
    use crate::status::{Gateway, read_gateway_record};
    open_db(home, cfg).is_some_and(|db| {
        match read_gateway_record(&db, crate::time::clock::system_secs()) {
            Ok(Gateway::Running(r)) => {
                r.live_sessions > 0 || db.turns_unfinished().is_ok_and(|n| n > 0)
            }
            _ => false,
        }
    })
}

/// Run `cmd` from a clean environment ([`CHILD_ENV`]) with `input` on its standard
/// input, its output dropped and its errors shown; whether it ran and succeeded.
fn run(cmd: &mut Command, input: &[u8]) -> bool {
    use std::io::Write;
    let child = cmd
        .env_clear()
        .envs(crate::security::child_env::inherit(CHILD_ENV, "update"))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn();
    let Ok(mut child) = child else {
        return false;
    };
    let wrote = child.stdin.take().map(|mut i| i.write_all(input));
    child.wait().is_ok_and(|s| s.success()) && matches!(wrote, Some(Ok(())))
}

/// Unpack `archive` into `work` with the system's `tar`; the new binary (in `work`) and
/// the release's version, once `board.conf` says it is for this CPU.
fn unpack(archive: &[u8], work: &Path) -> Result<(PathBuf, String), UpdateError> {
    let bad = UpdateError::Unpack;
    std::fs::create_dir(work).map_err(io("create a folder"))?;
    if !run(
        Command::new("tar").args(["-xzf", "-", "-C"]).arg(work),
        archive,
    ) {
        return Err(bad("tar failed or is missing; is the disk full?"));
    }
    let mut tops = std::fs::read_dir(work).map_err(io("read the unpacked archive"))?;
    let top = match (tops.next(), tops.next()) {
        (Some(Ok(t)), None) => t.path(),
        _ => return Err(bad("not one folder at its top")),
    };
    let conf = read_regular(&top.join("board.conf"), MAX_STATE_BYTES * 4, false)
        .map_err(|_| bad("no board.conf"))?
        .0;
    let profile = std::str::from_utf8(&conf)
        .unwrap_or("")
        .lines()
        .find_map(|l| l.strip_prefix("name="))
        .unwrap_or("");
    let arch = crate::service::this_arch();
    if !crate::service::BOARDS
        .iter()
        .any(|b| b.name == profile && b.arch == arch)
    {
        return Err(UpdateError::OtherBoard(profile.into()));
    }
    let version = top
        .file_name()
        .and_then(|n| {
            n.to_str()?
                .strip_prefix("yoctoclaw-")?
                .strip_suffix(profile)?
                .strip_suffix('-')
        })
        .unwrap_or("unknown")
        .to_string();
    Ok((top.join("yoctoclaw"), version))
}

/// Keep the binary at `exe` as `yoctoclaw.prev` and rename `new` (a regular file, not a
/// link) over it, fsynced.
fn install(exe: &Path, new: &Path) -> Result<(), UpdateError> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let f = crate::files::open_regular(new, false)
        .map_err(|_| UpdateError::Unpack("no yoctoclaw binary"))?;
    f.set_permissions(std::fs::Permissions::from_mode(0o755))
        .map_err(io("make the new binary executable"))?;
    f.sync_all().map_err(io("write the new binary"))?;
    let tmp = beside(exe, PREV_TMP);
    let _ = std::fs::remove_file(&tmp);
    if std::fs::hard_link(exe, &tmp).is_err() {
        // A file system without hard links: a copy, on the disk before it is relied on.
        let copied = std::fs::File::open(exe).and_then(|mut from| {
            let mut to = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o755)
                .open(&tmp)?;
            crate::files::copy(&mut from, &mut to)?;
            to.sync_all()
        });
        if let Err(e) = copied {
            let _ = std::fs::remove_file(&tmp);
            return Err(io("keep the previous binary")(e));
        }
    }
    std::fs::rename(&tmp, beside(exe, PREV)).map_err(io("keep the previous binary"))?;
    std::fs::rename(new, exe).map_err(io("put the new binary in place"))?;
    sync_dir(exe);
    Ok(())
}

/// The file `name` in the folder of `exe`.
fn beside(exe: &Path, name: &str) -> PathBuf {
    exe.parent().unwrap_or(Path::new("/")).join(name)
}

/// Fsync the folder of `file` (a rename in it is then on the disk).
fn sync_dir(file: &Path) {
    if let Some(Ok(d)) = file.parent().map(std::fs::File::open) {
        let _ = d.sync_all();
    }
}

fn inode(p: &Path) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(p).ok().map(|m| m.ino())
}

/// Remove what an interrupted update left beside `exe` (the unpack folder, a half-made
/// copy of the previous binary).
pub fn clean_leftovers(exe: &Path) {
    let _ = std::fs::remove_dir_all(beside(exe, WORK_DIR));
    let _ = std::fs::remove_file(beside(exe, PREV_TMP));
}

/// An installed update waiting for its mark.
#[derive(Debug, PartialEq)]
pub struct Pending {
    pub exe: PathBuf,
    pub ino: u64,
    pub deadline: i64,
    pub version: String,
}

/// Record that `version`, installed at `exe` (inode `ino`), owes its mark by `deadline`.
fn write_pending(
    home: &Home,
    exe: &Path,
    ino: u64,
    deadline: i64,
    version: &str,
) -> Result<(), UpdateError> {
    let text = format!(
        "exe={}\nino={ino}\ndeadline={deadline}\nversion={version}\n",
        exe.to_string_lossy()
    );
    // Readable by the service's account when `update` runs as root (sudo); not secret.
    write_atomic(&home.dir.join(PENDING_FILE), text.as_bytes(), 0o644)
        .map_err(io("record the pending update"))
}

/// The pending update recorded in the home, if any.
pub fn read_pending(home: &Home) -> Option<Pending> {
    let (b, _) = read_regular(&home.dir.join(PENDING_FILE), MAX_STATE_BYTES, false).ok()?;
    let text = std::str::from_utf8(&b).ok()?;
    let get = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(k)?.strip_prefix('='))
    };
    Some(Pending {
        exe: PathBuf::from(get("exe")?),
        ino: get("ino")?.parse().ok()?,
        deadline: get("deadline")?.parse().ok()?,
        version: get("version").unwrap_or("").to_string(),
    })
}

/// The health mark: a gateway that has started well clears the pending update.
pub fn confirm(home: &Home) {
    if let Some(p) = read_pending(home)
        && std::fs::remove_file(home.dir.join(PENDING_FILE)).is_ok()
    {
        log::info!("update: {} confirmed (its health mark)", p.version);
    }
}

/// Wait up to `secs` for the pending file to go (the new gateway's mark).
fn wait_for_mark(home: &Home, secs: u64) -> bool {
    let end = Instant::now() + Duration::from_secs(secs);
    let f = home.dir.join(PENDING_FILE);
    loop {
        if !f.exists() {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(MARK_POLL_MS));
    }
}

/// Put `yoctoclaw.prev` back over `exe`, clear the pending update, leave `note` for the
/// next start, and restart the service.
fn rollback(
    home: &Home,
    cfg: &Config,
    exe: &Path,
    root: &Path,
    note: &str,
) -> Result<String, UpdateError> {
    put_back(home, exe, note)?;
    let Some(how) = crate::service::restart(root) else {
        return Ok("the previous version is back: restart the gateway to run it".into());
    };
    restart(&how, home, cfg)?;
    Ok("the previous version is back and the service was restarted".into())
}

fn put_back(home: &Home, exe: &Path, note: &str) -> Result<(), UpdateError> {
    let prev = beside(exe, PREV);
    if !prev.is_file() {
        return Err(UpdateError::NoPrevious);
    }
    std::fs::rename(&prev, exe).map_err(io("put the previous binary back"))?;
    sync_dir(exe);
    let _ = std::fs::remove_file(home.dir.join(PENDING_FILE));
    if !note.is_empty() {
        let _ = write_atomic(&home.dir.join(NOTE_FILE), note.as_bytes(), 0o644);
    }
    Ok(())
}

/// Restart the service as `how` says.
fn restart(how: &crate::service::Restart, home: &Home, cfg: &Config) -> Result<(), UpdateError> {
    use crate::service::Restart;
    use rustix::process::{Pid, Signal, kill_process};
    match how {
        Restart::Run(argv) => {
            if !run(Command::new(&argv[0]).args(&argv[1..]), b"") {
                return Err(UpdateError::Restart(argv[0].clone()));
            }
        }
        // BusyBox init starts the gateway again once it has stopped; only a process that
        // runs the gateway is signalled (a stale record's pid may be another program's).
        Restart::Respawn => {
            let stopped = match open_db(home, cfg).and_then(|db| crate::status::live_gateway(&db)) {
                Some(r) => i32::try_from(r.pid)
                    .ok()
                    .and_then(Pid::from_raw)
                    .is_some_and(|p| kill_process(p, Signal::TERM).is_ok()),
                None => true,
            };
            if !stopped {
                return Err(UpdateError::Restart("stopping the gateway".into()));
            }
        }
    }
    Ok(())
}

/// The gateway's first step: clean what an interrupted update left, say what the last
/// rollback did, and roll back a new binary that is past its deadline without a mark
/// (`Err`: the sentence to exit with, so the service manager starts the previous one).
/// `Ok(true)`: a mark is owed ([`confirm`] once serving).
pub fn at_start(home: &Home) -> Result<bool, String> {
    if let Some(exe) = crate::service::this_exe() {
        clean_leftovers(&exe);
    }
    let note = home.dir.join(NOTE_FILE);
    if let Ok((b, _)) = read_regular(&note, MAX_STATE_BYTES, false) {
        log::warn!("{}", String::from_utf8_lossy(&b).trim());
        let _ = std::fs::remove_file(&note);
    }
    let Some(p) = read_pending(home) else {
        return Ok(false);
    };
    if inode(&p.exe) != Some(p.ino) {
        // The installed binary is no longer the update's: the record is stale.
        let _ = std::fs::remove_file(home.dir.join(PENDING_FILE));
        return Ok(false);
    }
    if crate::time::clock::now() <= p.deadline {
        return Ok(true);
    }
    let line = format!(
        "update: {} did not confirm its start in time: rolled back to the previous version",
        p.version
    );
    match put_back(home, &p.exe, &line) {
        Ok(()) => Err(format!("{line}; the service starts it again")),
        Err(e) => {
            // Its folder is not writable here (systemd's ProtectSystem=strict for a system
            // unit): the record stays, so `doctor` shows it, and this binary runs on.
            log::warn!(
                "update: {} did not confirm its start in time and {e}: run yoctoclaw update --rollback",
                p.version
            );
            Ok(false)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_home(tag: &str) -> Home {
        let dir = std::env::temp_dir().join(format!("yc-update-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Home { dir }
    }

    #[test]
    fn a_running_turn_in_the_status_record_holds_the_update_back() {
        let home = temp_home("busy");
        let cfg = Config::default();
        assert!(!gateway_busy(&home, &cfg), "no database: not busy");
        let db = crate::store::Db::open(&home.db_file(), 128).unwrap();
        let now = crate::time::clock::now();
        let me = std::process::id();
        crate::status::write_gateway_record(&db, me, Default::default(), 0, now).unwrap();
        assert!(!gateway_busy(&home, &cfg), "running, no turn");
        crate::status::write_gateway_record(&db, me, Default::default(), 1, now).unwrap();
        assert!(gateway_busy(&home, &cfg), "a turn running");
        let _ = std::fs::remove_dir_all(&home.dir);
    }

    #[test]
    fn the_pending_record_reads_back_and_a_stale_one_is_dropped_at_start() {
        let home = temp_home("pending");
        let exe = home.dir.join("yoctoclaw");
        std::fs::write(&exe, "x").unwrap();
        let ino = inode(&exe).unwrap();
        write_pending(&home, &exe, ino, 42, "9.9.9").unwrap();
        let p = read_pending(&home).unwrap();
        assert_eq!(
            (p.exe, p.ino, p.deadline, p.version.as_str()),
            (exe.clone(), ino, 42, "9.9.9")
        );
        // The installed file is no longer the update's (replaced by hand): forgotten.
        write_pending(&home, &exe, ino + 1, 42, "9.9.9").unwrap();
        assert_eq!(at_start(&home), Ok(false));
        assert!(read_pending(&home).is_none());
        // Within its deadline: a mark is owed; confirm clears it.
        write_pending(&home, &exe, ino, i64::MAX, "9.9.9").unwrap();
        assert_eq!(at_start(&home), Ok(true));
        confirm(&home);
        assert!(read_pending(&home).is_none());
        let _ = std::fs::remove_dir_all(&home.dir);
    }
}
