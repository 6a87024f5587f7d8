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
//! for [`at_start`]; [`confirm`] from the executor: it removes one small file).
//!
//! # Blocking
//! `update` blocks its main thread on the downloads (ureq's timeouts), `tar`, the service
//! manager and the wait for the mark (`update.confirm_secs`); nothing else runs there.

pub mod blake2b;
pub mod index;
pub mod minisign;

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
/// What the service manager's command gets of our environment (`systemctl --user` needs
/// the session's bus).
const RESTART_ENV: &[&str] = &[
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
/// The running version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// What `yoctoclaw update` was asked.
pub struct Options<'a> {
    pub check: bool,
    pub rollback: bool,
    pub from: Option<&'a Path>,
    /// Where the service files are (`/`; a test tree).
    pub root: &'a Path,
}

/// Why an update did not happen, each a sentence saying what to do. Whatever the error,
/// the installed binary is the one that was there before.
#[derive(Debug)]
pub enum UpdateError {
    Usage(&'static str),
    NoUrl,
    NoKey,
    Index(String),
    NoBoard(String),
    Download(String),
    TooLarge,
    Checksum,
    Signature(SigError),
    MissingSignature,
    Unpack(String),
    OtherBoard(String),
    Install(&'static str, ErrorKind),
    TurnRunning,
    Pending,
    NoPrevious,
    NoExe,
    Restart(String),
    RolledBack(u64),
}

impl std::fmt::Display for UpdateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use UpdateError as E;
        match self {
            E::Usage(m) => f.write_str(m),
            E::NoUrl => f.write_str("no release index: set update.url in config.json, or use update --from FILE"),
            E::NoKey => f.write_str("no trusted signing key: this build has none built in; set update.public_key to your minisign public key"),
            E::Index(m) => write!(f, "the release index is not usable: {m}"),
            E::NoBoard(b) => write!(f, "the release has no archive for this board ({b}): nothing was changed"),
            E::Download(m) => write!(f, "download failed ({m}): nothing was changed; try again later"),
            E::TooLarge => f.write_str("the archive is larger than 16 MiB: refused, nothing was changed"),
            E::Checksum => f.write_str("the archive does not match the index's SHA-256 (truncated or changed): nothing was changed"),
            E::Signature(s) => write!(f, "{s}: nothing was changed"),
            E::MissingSignature => f.write_str("the archive has no signature (FILE.minisig): nothing was changed"),
            E::Unpack(m) => write!(f, "cannot unpack the archive ({m}): nothing was changed"),
            E::OtherBoard(b) => write!(f, "the archive is for another board ({b}): nothing was changed"),
            E::Install(what, k) => write!(f, "cannot {what} beside the binary ({k}): the installed version is unchanged"),
            E::TurnRunning => f.write_str("the gateway is answering a message: nothing was changed; try again when it has finished"),
            E::Pending => f.write_str("an update is still waiting for the new gateway to confirm its start: wait, or run yoctoclaw update --rollback"),
            E::NoPrevious => f.write_str("there is no previous version (yoctoclaw.prev) to go back to"),
            E::NoExe => f.write_str("cannot tell where this yoctoclaw binary is"),
            E::Restart(m) => write!(f, "the service could not be restarted ({m}): the installed version is unchanged; check the service, then try again"),
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

/// Run `yoctoclaw update` with `o`; what to print. Progress goes to stderr.
pub fn command(home: &Home, cfg: &Config, o: &Options) -> Result<String, UpdateError> {
    if [o.check, o.rollback, o.from.is_some()]
        .iter()
        .filter(|b| **b)
        .count()
        > 1
    {
        return Err(UpdateError::Usage(
            "--check, --rollback and --from exclude each other",
        ));
    }
    let exe = crate::service::this_exe().ok_or(UpdateError::NoExe)?;
    clean_leftovers(&exe);
    if o.rollback {
        return rollback(home, cfg, &exe, o.root, "");
    }
    let board = board(o.root);
    let (archive, sig) = match o.from {
        Some(file) => (read_file(file)?, read_sig(&sig_path(file))?),
        None => {
            if cfg.update.url.is_empty() {
                return Err(UpdateError::NoUrl);
            }
            let idx = index::fetch(&cfg.update.url)?;
            let newer = index::newer(&idx.version, VERSION);
            if o.check {
                return Ok(if newer {
                    format!(
                        "a newer release exists: {} (this is {VERSION}); install it with yoctoclaw update",
                        idx.version
                    )
                } else {
                    format!(
                        "up to date: {VERSION} (the newest release is {})",
                        idx.version
                    )
                });
            }
            if !newer {
                return Ok(format!("up to date: {VERSION}"));
            }
            let b = board
                .clone()
                .ok_or_else(|| UpdateError::NoBoard(crate::service::this_arch()))?;
            let entry = idx
                .boards
                .into_iter()
                .find(|e| e.board == b)
                .ok_or(UpdateError::NoBoard(b))?;
            eprintln!("update: downloading {} for {}", idx.version, entry.board);
            let archive = index::download(&entry.url, MAX_ARCHIVE_BYTES)?;
            let sum = ring::digest::digest(&ring::digest::SHA256, &archive);
            if !index::hex_eq(sum.as_ref(), &entry.sha256) {
                return Err(UpdateError::Checksum);
            }
            let sig = index::download(&entry.minisig, MAX_MINISIG_BYTES)
                .map_err(|_| UpdateError::MissingSignature)?;
            (archive, String::from_utf8_lossy(&sig).into_owned())
        }
    };
    let keys = trusted_keys(cfg)?;
    minisign::verify(&keys, &archive, &sig).map_err(UpdateError::Signature)?;
    if gateway_busy(home, cfg) {
        return Err(UpdateError::TurnRunning);
    }
    if read_pending(home).is_some() {
        return Err(UpdateError::Pending);
    }
    let dir = exe.parent().ok_or(UpdateError::NoExe)?;
    let work = dir.join(WORK_DIR);
    let unpacked = unpack(&archive, &work);
    let (new_bin, version) = match unpacked {
        Ok(v) => v,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&work);
            return Err(e);
        }
    };
    drop(archive);
    let installed = install(&exe, &new_bin);
    let _ = std::fs::remove_dir_all(&work);
    installed?;
    let Some(how) = crate::service::restart(o.root) else {
        return Ok(format!(
            "installed {version} (the previous version is kept as {PREV}); no service is installed: restart the gateway yourself"
        ));
    };
    let ino = inode(&exe).unwrap_or(0);
    let deadline = crate::time::clock::now() + cfg.update.confirm_secs as i64;
    write_pending(home, &exe, ino, deadline, &version)?;
    eprintln!(
        "update: installed {version}; restarting the service and waiting up to {} s for it to confirm",
        cfg.update.confirm_secs
    );
    if let Err(e) = restart(&how, home, cfg) {
        // The service manager refused: the previous binary goes back, as it was.
        put_back(home, &exe, "")?;
        return Err(e);
    }
    if wait_for_mark(home, cfg.update.confirm_secs) {
        return Ok(format!(
            "updated to {version}: the new gateway confirmed its start (the previous version is kept as {PREV}; yoctoclaw update --rollback goes back)"
        ));
    }
    let secs = cfg.update.confirm_secs;
    let note = format!(
        "update: {version} did not confirm its start within {secs} s: rolled back to {VERSION}"
    );
    rollback(home, cfg, &exe, o.root, &note)?;
    Err(UpdateError::RolledBack(secs))
}

/// The board profile for this machine (as `install.sh` picks it), in a test tree `root`.
fn board(root: &Path) -> Option<String> {
    let mem = crate::service::mem_total_kib(root)
        .or_else(|| crate::service::mem_total_kib(Path::new("/")))
        .unwrap_or(0);
    crate::service::board_for(&crate::service::this_arch(), mem).map(|b| b.name.to_string())
}

fn trusted_keys(cfg: &Config) -> Result<Vec<PublicKey>, UpdateError> {
    let mut keys = Vec::with_capacity(2);
    if !BUILT_IN_KEY.is_empty()
        && let Ok(k) = PublicKey::parse(BUILT_IN_KEY)
    {
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

fn sig_path(file: &Path) -> PathBuf {
    let mut s = file.as_os_str().to_owned();
    s.push(".minisig");
    PathBuf::from(s)
}

fn read_file(file: &Path) -> Result<Vec<u8>, UpdateError> {
    match read_regular(file, MAX_ARCHIVE_BYTES as usize + 1, true) {
        Ok((b, total)) if total > MAX_ARCHIVE_BYTES || b.len() as u64 > MAX_ARCHIVE_BYTES => {
            Err(UpdateError::TooLarge)
        }
        Ok((b, _)) => Ok(b),
        Err(ReadError::NotFound) => Err(UpdateError::Usage("no such archive file")),
        Err(_) => Err(UpdateError::Usage("cannot read the archive file")),
    }
}

fn read_sig(file: &Path) -> Result<String, UpdateError> {
    match read_regular(file, MAX_MINISIG_BYTES as usize, true) {
        Ok((b, _)) => Ok(String::from_utf8_lossy(&b).into_owned()),
        Err(_) => Err(UpdateError::MissingSignature),
    }
}

/// Whether a running gateway is in a turn: its status record counts one (HTTP API turns
/// included; rewritten every minute), or a Telegram message waits for its turn or its
/// answer in the durable inbox (committed as it happens).
fn gateway_busy(home: &Home, cfg: &Config) -> bool {
    let db = home.db_file();
    if !db.exists() {
        return false;
    }
    let Ok(d) = crate::store::Db::open(&db, cfg.memory.cache_kib) else {
        return false;
    };
    let now = crate::time::clock::now();
    let Ok(crate::status::Gateway::Running(r)) = crate::status::read_gateway_record(&d, now) else {
        return false;
    };
    r.live_sessions > 0 || d.turns_unfinished().is_ok_and(|n| n > 0)
}

/// Unpack `archive` into `work` with the system's `tar`; the new binary (in `work`) and
/// the release's version, once `board.conf` says it is for this CPU.
fn unpack(archive: &[u8], work: &Path) -> Result<(PathBuf, String), UpdateError> {
    use std::io::Write;
    let _ = std::fs::remove_dir_all(work);
    std::fs::create_dir(work).map_err(io("create a folder"))?;
    let mut child = Command::new("tar")
        .args(["-xzf", "-", "-C"])
        .arg(work)
        .env_clear()
        .envs(crate::security::child_env::inherit(&["PATH"], "update"))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|_| UpdateError::Unpack("no tar program".into()))?;
    let wrote = child.stdin.take().map(|mut i| i.write_all(archive));
    let status = child
        .wait()
        .map_err(|_| UpdateError::Unpack("tar failed".into()))?;
    if !status.success() || !matches!(wrote, Some(Ok(()))) {
        return Err(UpdateError::Unpack(
            "tar failed: the disk may be full".into(),
        ));
    }
    let mut tops = std::fs::read_dir(work).map_err(io("read the unpacked archive"))?;
    let top = match (tops.next(), tops.next()) {
        (Some(Ok(t)), None) => t.path(),
        _ => return Err(UpdateError::Unpack("not one folder at its top".into())),
    };
    let name = top.file_name().unwrap_or_default().to_string_lossy();
    let bin = top.join("yoctoclaw");
    let conf = match read_regular(&top.join("board.conf"), MAX_STATE_BYTES * 4, false) {
        Ok((b, _)) => String::from_utf8_lossy(&b).into_owned(),
        Err(_) => return Err(UpdateError::Unpack("no board.conf".into())),
    };
    if !std::fs::symlink_metadata(&bin).is_ok_and(|m| m.is_file()) {
        return Err(UpdateError::Unpack("no yoctoclaw binary".into()));
    }
    let get = |k: &str| {
        conf.lines()
            .find_map(|l| l.strip_prefix(k)?.strip_prefix('='))
            .unwrap_or("")
            .to_string()
    };
    let profile = get("name");
    let arch = crate::service::BOARDS
        .iter()
        .find(|b| b.name == profile)
        .map(|b| b.arch);
    if arch != Some(crate::service::this_arch().as_str()) {
        return Err(UpdateError::OtherBoard(if profile.is_empty() {
            "unknown".into()
        } else {
            profile
        }));
    }
    let version = name
        .strip_prefix("yoctoclaw-")
        .and_then(|r| r.strip_suffix(&format!("-{profile}")))
        .unwrap_or("unknown")
        .to_string();
    Ok((bin, version))
}

/// Keep the binary at `exe` as `yoctoclaw.prev` and rename `new` over it, fsynced.
fn install(exe: &Path, new: &Path) -> Result<(), UpdateError> {
    use std::os::unix::fs::PermissionsExt;
    let dir = exe.parent().ok_or(UpdateError::NoExe)?;
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(new)
        .map_err(io("open the new binary"))?;
    f.set_permissions(std::fs::Permissions::from_mode(0o755))
        .map_err(io("make the new binary executable"))?;
    f.sync_all().map_err(io("write the new binary"))?;
    drop(f);
    let prev = dir.join(PREV);
    let tmp = dir.join(".yoctoclaw.prev.tmp");
    let _ = std::fs::remove_file(&tmp);
    if std::fs::hard_link(exe, &tmp).is_err() {
        std::fs::copy(exe, &tmp).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            UpdateError::Install("keep the previous binary", e.kind())
        })?;
    }
    std::fs::rename(&tmp, &prev).map_err(io("keep the previous binary"))?;
    std::fs::rename(new, exe).map_err(io("put the new binary in place"))?;
    sync_dir(dir);
    Ok(())
}

fn sync_dir(dir: &Path) {
    if let Ok(d) = std::fs::File::open(dir) {
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
    if let Some(dir) = exe.parent() {
        let _ = std::fs::remove_dir_all(dir.join(WORK_DIR));
        let _ = std::fs::remove_file(dir.join(".yoctoclaw.prev.tmp"));
    }
}

/// An installed update waiting for its mark.
#[derive(Debug, PartialEq)]
pub struct Pending {
    pub exe: PathBuf,
    pub ino: u64,
    pub deadline: i64,
    pub version: String,
}

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
    let text = String::from_utf8_lossy(&b);
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
    while Instant::now() < end {
        if !f.exists() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(MARK_POLL_MS));
    }
    !f.exists()
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
    if let Some(how) = crate::service::restart(root) {
        restart(&how, home, cfg)?;
        return Ok("the previous version is back and the service was restarted".into());
    }
    Ok("the previous version is back: restart the gateway to run it".into())
}

fn put_back(home: &Home, exe: &Path, note: &str) -> Result<(), UpdateError> {
    let dir = exe.parent().ok_or(UpdateError::NoExe)?;
    let prev = dir.join(PREV);
    if !prev.is_file() {
        return Err(UpdateError::NoPrevious);
    }
    std::fs::rename(&prev, exe).map_err(io("put the previous binary back"))?;
    sync_dir(dir);
    let _ = std::fs::remove_file(home.dir.join(PENDING_FILE));
    if !note.is_empty() {
        let _ = write_atomic(&home.dir.join(NOTE_FILE), note.as_bytes(), 0o644);
    }
    Ok(())
}

/// Restart the service as `how` says.
fn restart(how: &crate::service::Restart, home: &Home, cfg: &Config) -> Result<(), UpdateError> {
    match how {
        crate::service::Restart::Run(argv) => {
            let ok = Command::new(&argv[0])
                .args(&argv[1..])
                .env_clear()
                .envs(crate::security::child_env::inherit(RESTART_ENV, "update"))
                .stdin(Stdio::null())
                .status()
                .map_err(|_| UpdateError::Restart(format!("cannot run {}", argv[0])))?;
            if !ok.success() {
                return Err(UpdateError::Restart(format!("{} failed", argv[0])));
            }
            Ok(())
        }
        crate::service::Restart::Respawn => {
            let db = crate::store::Db::open(&home.db_file(), cfg.memory.cache_kib)
                .map_err(|_| UpdateError::Restart("no gateway status record".into()))?;
            match crate::status::read_gateway_record(&db, crate::time::clock::now()) {
                Ok(crate::status::Gateway::Running(r)) => {
                    let pid = rustix::process::Pid::from_raw(r.pid as i32)
                        .ok_or_else(|| UpdateError::Restart("no gateway running".into()))?;
                    rustix::process::kill_process(pid, rustix::process::Signal::TERM)
                        .map_err(|_| UpdateError::Restart("cannot stop the gateway".into()))
                }
                _ => Ok(()),
            }
        }
    }
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

/// For `doctor`: the version and the update waiting for confirmation, if any.
pub fn doctor_line(home: &Home) -> String {
    match read_pending(home) {
        Some(p) => format!(
            "version {VERSION}; update to {} waiting for the gateway to confirm its start",
            p.version
        ),
        None => format!("version {VERSION}; no update pending"),
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
        assert!(doctor_line(&home).contains("update to 9.9.9 waiting"));
        // The installed file is no longer the update's (replaced by hand): forgotten.
        write_pending(&home, &exe, ino + 1, 42, "9.9.9").unwrap();
        assert_eq!(at_start(&home), Ok(false));
        assert!(read_pending(&home).is_none());
        // Within its deadline: a mark is owed; confirm clears it.
        write_pending(&home, &exe, ino, i64::MAX, "9.9.9").unwrap();
        assert_eq!(at_start(&home), Ok(true));
        confirm(&home);
        assert!(read_pending(&home).is_none());
        assert!(doctor_line(&home).contains("no update pending"));
        let _ = std::fs::remove_dir_all(&home.dir);
    }
}
