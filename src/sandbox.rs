//! Keeping our secrets out of reach of the commands `exec` runs: our own environment block
//! emptied of secrets, no core dumps and no same-user ptrace, and Landlock confinement of
//! each child.
//!
//! Why: a command runs with our user id. Without more, it can read the keys through
//! `/proc/<our pid>/environ` (which shows the environment block the kernel gave us, not
//! what `unsetenv` left), through `/proc/<our pid>/mem`, or straight from `secrets.env`
//! by a path built at run time, which no reading of the command text can catch.
//!
//! - [`clear_environment`] overwrites the chosen values *in place* in the block `environ`
//!   points into, so `/proc/self/environ` shows `NAME=` followed by zero bytes.
//! - [`no_dumps`] sets `PR_SET_DUMPABLE` to 0: no core file, and only root may ptrace us
//!   or read our `/proc/<pid>/{environ,mem,maps}`.
//! - [`Ruleset`] builds a Landlock ruleset (Linux 5.13+, where enabled) that lets a child
//!   read and run almost everything, write only below the paths it is given, and never
//!   open anything below the hidden paths (their names can be listed) (the yoctoclaw home outside the workspace, `~/.ssh`,
//!   `~/.gnupg`): Landlock only grants, so the tree is granted entry by entry around
//!   them. Raw block devices and `/dev/mem` are not granted, and no device node can be
//!   made. A Landlock domain also cannot ptrace-attach a process outside it, so the child
//!   cannot open our `/proc/<pid>/mem` even as root (recent kernels still let it read
//!   `/proc/<pid>/environ`, which is why the environment block is wiped).
//!   [`restrict_self`] applies it in the child between fork and exec.
//! - [`landlock`] says whether the kernel has it (probed once). Nothing turns it off: the
//!   fallback's tests start the binary under a seccomp filter that makes the Landlock
//!   system calls fail as on a kernel without them.
//!
//! Not a sandbox against root: a command running as root can still do what root does
//! (load modules, change the system). `tools.exec.user` runs commands as another user.
//!
//! # Bounds
//! A ruleset holds at most [`MAX_LANDLOCK_RULES`] rules; entries beyond are simply not
//! granted (the safe side), so the writable folders that take one rule are added before
//! the walks that can reach it. The environment is walked once.
//!
//! # Threads
//! [`clear_environment`] runs on the main thread before any other thread starts;
//! [`Ruleset::build`] and the spawn on a worker thread (`exec`); [`restrict_self`] in the
//! forked child between fork and exec, where only async-signal-safe calls are allowed.
//!
//! # Blocking
//! [`Ruleset::build`] reads directories and opens paths: call it on a worker thread.
//! [`clear_environment`] is an `unsafe fn`: no other thread may read or change the
//! environment while it rewrites it (its `# Safety`). The rest are single system calls.

use std::ffi::CStr;
use std::fmt;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::raw::{c_char, c_int, c_long, c_ulong};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Rules in one ruleset, at most (entries beyond are not granted).
pub const MAX_LANDLOCK_RULES: usize = 1024;

// The same numbers on every Linux architecture (allocated after the tables were unified).
const SYS_LANDLOCK_CREATE_RULESET: c_long = 444;
const SYS_LANDLOCK_ADD_RULE: c_long = 445;
const SYS_LANDLOCK_RESTRICT_SELF: c_long = 446;
const LANDLOCK_CREATE_RULESET_VERSION: c_ulong = 1;
const LANDLOCK_RULE_PATH_BENEATH: c_int = 1;

// Filesystem access rights (linux/landlock.h).
const EXECUTE: u64 = 1 << 0;
const WRITE_FILE: u64 = 1 << 1;
const READ_FILE: u64 = 1 << 2;
const READ_DIR: u64 = 1 << 3;
const MAKE_CHAR: u64 = 1 << 6;
const MAKE_BLOCK: u64 = 1 << 11;
/// ABI 2: linking or renaming across directories.
const REFER: u64 = 1 << 13;
/// ABI 3: truncating a file.
const TRUNCATE: u64 = 1 << 14;
/// ABI 1: every right from EXECUTE to MAKE_SYM.
const ABI1_ALL: u64 = (1 << 13) - 1;
/// Rights that apply to a file (not a directory).
const FILE_RIGHTS: u64 = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE;
const READ: u64 = EXECUTE | READ_FILE | READ_DIR;

/// `/dev` entries a command may write (besides reading).
const DEV_WRITABLE: &[&str] = &["null", "zero", "full", "tty", "random", "urandom"];
/// `/dev` directories a command may use in full.
const DEV_DIRS: &[&str] = &["shm", "pts"];
/// Character devices never granted (physical and kernel memory, I/O ports).
const DEV_NEVER: &[&str] = &["mem", "kmem", "port"];

// rustix has no Landlock calls and no access to the C library's `environ`: these two are
// declared here. Everything else (open, fstat, prctl) goes through rustix.
unsafe extern "C" {
    fn syscall(num: c_long, ...) -> c_long;
    static mut environ: *mut *mut c_char;
}

/// Why Landlock cannot be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missing {
    /// The kernel has no such system call (before 5.13, or built without it).
    NoSyscall,
    /// Built in but not enabled at boot (`lsm=`).
    Disabled,
    /// Another error, with its errno.
    Other(i32),
}

impl fmt::Display for Missing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Missing::NoSyscall => f.write_str("this kernel has no Landlock; it needs Linux 5.13+"),
            Missing::Disabled => f.write_str("Landlock is not enabled at boot (lsm=)"),
            Missing::Other(e) => write!(f, "Landlock answered errno {e}"),
        }
    }
}

/// Landlock's ABI version, or why it cannot be used. Probed once per process.
pub fn landlock() -> Result<u32, Missing> {
    static ABI: OnceLock<Result<u32, Missing>> = OnceLock::new();
    *ABI.get_or_init(|| {
        // SAFETY: the documented version query: no pointer is read.
        let r = unsafe {
            syscall(
                SYS_LANDLOCK_CREATE_RULESET,
                std::ptr::null::<u8>(),
                0usize,
                LANDLOCK_CREATE_RULESET_VERSION,
            )
        };
        if r > 0 {
            return Ok(u32::try_from(r).unwrap_or(1));
        }
        match io::Error::last_os_error().raw_os_error() {
            Some(38) => Err(Missing::NoSyscall), // ENOSYS
            Some(95) => Err(Missing::Disabled),  // EOPNOTSUPP
            Some(e) => Err(Missing::Other(e)),
            None => Err(Missing::Other(0)),
        }
    })
}

/// Every right a ruleset of this ABI handles (IOCTL_DEV is left alone: not handled, so
/// terminals and serial ports keep working).
fn handled(abi: u32) -> u64 {
    let mut all = ABI1_ALL;
    if abi >= 2 {
        all |= REFER;
    }
    if abi >= 3 {
        all |= TRUNCATE;
    }
    all
}

/// What a confined child may reach.
#[derive(Debug, Clone, Default)]
pub struct Confinement {
    /// Never granted, nor anything below them (absolute, symlinks resolved).
    pub hidden: Vec<PathBuf>,
    /// Everything but making device nodes, below each (absolute, symlinks resolved),
    /// minus the hidden paths inside them.
    pub writable: Vec<PathBuf>,
}

/// A Landlock ruleset ready for [`restrict_self`]: read and run everything but the
/// hidden paths, write below the writable ones.
#[derive(Debug)]
pub struct Ruleset {
    fd: OwnedFd,
    /// Rules added.
    pub rules: usize,
    /// The rights this ruleset handles (a rule may grant only those).
    handled: u64,
    /// What a writable folder grants: everything handled but making device nodes.
    write: u64,
}

#[repr(C)]
struct RulesetAttr {
    handled_access_fs: u64,
}

#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

// linux/landlock.h, the same on every architecture: `struct landlock_ruleset_attr` starts
// with the u64 we set (the kernel takes a shorter struct as the older ABI's), and
// `struct landlock_path_beneath_attr` is packed: a u64 and an s32.
const _: () = assert!(std::mem::size_of::<RulesetAttr>() == 8);
const _: () = assert!(std::mem::size_of::<PathBeneathAttr>() == 12);

impl Ruleset {
    /// Build the ruleset of `c` for Landlock ABI `abi` (reads directories: worker thread).
    pub fn build(c: &Confinement, abi: u32) -> io::Result<Ruleset> {
        let all = handled(abi);
        let attr = RulesetAttr {
            handled_access_fs: all,
        };
        // SAFETY: `attr` is a valid landlock_ruleset_attr of the size given.
        let fd = unsafe {
            syscall(
                SYS_LANDLOCK_CREATE_RULESET,
                &attr as *const RulesetAttr,
                std::mem::size_of::<RulesetAttr>(),
                0u32,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a new descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd as RawFd) };
        let mut rs = Ruleset {
            fd,
            rules: 0,
            handled: all,
            write: all & !(MAKE_CHAR | MAKE_BLOCK),
        };
        // Listing is allowed everywhere (`ls /`, `ls ~`): the hidden folders' names show,
        // their files cannot be opened.
        rs.add(Path::new("/"), READ_DIR)?;
        // Writable folders that take one rule go first: a folder walked entry by entry
        // (one holding a hidden path, e.g. a crowded /tmp holding the home) can reach
        // the cap, and what the cap leaves out must never be the workspace or a folder
        // of `tools.exec.write_paths`.
        let walked = |w: &PathBuf| c.hidden.iter().any(|h| h.starts_with(w) && h != w);
        for w in c.writable.iter().filter(|w| !walked(w)) {
            rs.grant(w, rs.write, &c.hidden)?;
        }
        rs.grant(Path::new("/"), READ, &c.hidden)?;
        for w in c.writable.iter().filter(|w| walked(w)) {
            rs.grant(w, rs.write, &c.hidden)?;
        }
        if rs.rules >= MAX_LANDLOCK_RULES {
            log::warn!(
                "exec: the sandbox's rules reached {MAX_LANDLOCK_RULES}: some entries of a crowded folder beside the yoctoclaw home (often /tmp) stay unreadable to commands"
            );
        }
        Ok(rs)
    }

    /// The descriptor for [`restrict_self`]; valid while `self` lives.
    pub fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Grant `access` below `root`, except below the hidden paths: a root that holds one
    /// is granted entry by entry, descending towards it. `/dev` is never granted whole.
    fn grant(&mut self, root: &Path, access: u64, hidden: &[PathBuf]) -> io::Result<()> {
        let holds_hidden = |p: &Path| hidden.iter().any(|h| h.starts_with(p) && h != p);
        if hidden.iter().any(|h| h == root) {
            return Ok(());
        }
        if root == Path::new("/dev") {
            return self.grant_dev(root);
        }
        if !holds_hidden(root) {
            return self.add(root, access);
        }
        let mut dirs = vec![root.to_path_buf()];
        while let Some(dir) = dirs.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                if hidden.contains(&path) {
                    continue;
                }
                let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
                if path == Path::new("/dev") {
                    self.grant_dev(&path)?;
                } else if holds_hidden(&path) {
                    if is_dir {
                        dirs.push(path);
                    }
                } else {
                    self.add(&path, access)?;
                }
            }
        }
        Ok(())
    }

    /// `/dev`: character devices but memory and ports (read, and write for the harmless
    /// ones), `shm` and `pts` like a writable folder; block devices and the rest not at
    /// all (whatever `access` the caller grants around them).
    fn grant_dev(&mut self, root: &Path) -> io::Result<()> {
        let Ok(entries) = std::fs::read_dir(root) else {
            return Ok(());
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let Ok(t) = entry.file_type() else { continue };
            use std::os::unix::fs::FileTypeExt;
            if t.is_dir() && DEV_DIRS.contains(&name.as_ref()) {
                self.add(&entry.path(), self.write)?;
            } else if t.is_char_device() && !DEV_NEVER.contains(&name.as_ref()) {
                let a = if DEV_WRITABLE.contains(&name.as_ref()) {
                    READ_FILE | WRITE_FILE | TRUNCATE
                } else {
                    READ_FILE
                };
                self.add(&entry.path(), a)?;
            }
        }
        Ok(())
    }

    /// One rule for `path` (not followed if it is a symlink: its target has its own
    /// rules); a file gets only the rights that apply to files.
    fn add(&mut self, path: &Path, access: u64) -> io::Result<()> {
        use rustix::fs::{FileType, Mode, OFlags};
        if self.rules >= MAX_LANDLOCK_RULES {
            return Ok(());
        }
        let flags = OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let Ok(fd) = rustix::fs::open(path, flags, Mode::empty()) else {
            return Ok(()); // vanished or unreadable: not granted
        };
        let Ok(st) = rustix::fs::fstat(&fd) else {
            return Ok(());
        };
        let access = self.handled
            & match FileType::from_raw_mode(st.st_mode) {
                FileType::Directory => access,
                FileType::Symlink => return Ok(()),
                _ => access & FILE_RIGHTS,
            };
        if access == 0 {
            return Ok(());
        }
        let attr = PathBeneathAttr {
            allowed_access: access,
            parent_fd: fd.as_raw_fd(),
        };
        // SAFETY: `attr` is a valid landlock_path_beneath_attr; both descriptors live.
        let r = unsafe {
            syscall(
                SYS_LANDLOCK_ADD_RULE,
                self.fd.as_raw_fd(),
                LANDLOCK_RULE_PATH_BENEATH,
                &attr as *const PathBeneathAttr,
                0u32,
            )
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        self.rules += 1;
        Ok(())
    }
}

/// In the child, between fork and exec: no new privileges, then the ruleset. Only
/// async-signal-safe calls (two system calls, no allocation: rustix's Linux backend makes
/// `prctl` inline).
pub fn restrict_self(ruleset: RawFd) -> io::Result<()> {
    rustix::thread::set_no_new_privs(true)?;
    // SAFETY: a plain system call on integers; `ruleset` is only read by the kernel.
    if unsafe { syscall(SYS_LANDLOCK_RESTRICT_SELF, ruleset, 0u32) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// No core dumps, and no ptrace or `/proc/<pid>/{environ,mem}` reading by anyone but root.
pub fn no_dumps() -> io::Result<()> {
    use rustix::process::{DumpableBehavior, set_dumpable_behavior};
    set_dumpable_behavior(DumpableBehavior::NotDumpable).map_err(io::Error::from)
}

/// Overwrite, in place, the value of every environment variable for which `wipe(name,
/// value)` holds, with zero bytes; returns those variables with their values. Afterwards
/// `/proc/self/environ` and `getenv` show them empty.
///
/// # Safety
/// No other thread may exist while it runs (call it first thing in `main`, before the
/// executor, the workers or any library starts one): another thread reading or changing
/// the environment (`getenv`, `setenv`, `std::env::var`) meanwhile would race with the
/// in-place writes, which is undefined behaviour. `wipe` must not touch the environment.
pub unsafe fn clear_environment(mut wipe: impl FnMut(&str, &str) -> bool) -> Vec<(String, String)> {
    let mut taken = Vec::new();
    // SAFETY: `environ` is the C library's NUL-terminated array of NUL-terminated strings;
    // the caller guarantees no other thread exists, so nothing changes it while it is
    // walked. Each string is writable memory (the initial block on the stack, or one
    // setenv allocated), and only bytes before its terminating NUL are overwritten.
    unsafe {
        let mut p = environ;
        if p.is_null() {
            return taken;
        }
        while !(*p).is_null() {
            let s = *p;
            let bytes = CStr::from_ptr(s).to_bytes();
            if let Some(eq) = bytes.iter().position(|&b| b == b'=') {
                let name = String::from_utf8_lossy(&bytes[..eq]).into_owned();
                let value = String::from_utf8_lossy(&bytes[eq + 1..]).into_owned();
                let len = bytes.len() - eq - 1;
                if len > 0 && wipe(&name, &value) {
                    std::ptr::write_bytes(s.add(eq + 1), 0, len);
                    taken.push((name, value));
                }
            }
            p = p.add(1);
        }
    }
    taken
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_is_stable_and_says_why() {
        let first = landlock();
        assert_eq!(first, landlock());
        match first {
            Ok(abi) => assert!(abi >= 1),
            Err(m) => {
                let why = m.to_string();
                assert!(!why.is_empty() && !why.contains('\n'), "{why}");
                // The probe's "why" was checked; that the kernel lacks Landlock is a skip
                // (CI's kernel has it).
                crate::testkit::skipped("landlock", &why);
            }
        }
    }

    #[test]
    fn handled_rights_grow_with_the_abi() {
        assert_eq!(handled(1), ABI1_ALL);
        assert_eq!(handled(2), ABI1_ALL | REFER);
        assert_eq!(handled(7), ABI1_ALL | REFER | TRUNCATE);
        assert_eq!(FILE_RIGHTS & READ_DIR, 0);
    }

    /// A ruleset applied in a child process: the hidden folder cannot be read, the
    /// writable one can be written, the rest read but not written.
    #[test]
    fn a_child_cannot_reach_the_hidden_folder() {
        let abi = match landlock() {
            Ok(abi) => abi,
            Err(m) => {
                crate::testkit::skipped("landlock", &m.to_string());
                return;
            }
        };
        let base = std::env::temp_dir()
            .join(format!("yc-sandbox-{}", std::process::id()))
            .canonicalize_or_make();
        let hidden = base.join("home");
        let ws = hidden.join("workspace");
        let other = base.join("other");
        for d in [&ws, &other] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(hidden.join("secrets.env"), "KEY=v\n").unwrap();
        std::fs::write(other.join("readable.txt"), "hello\n").unwrap();
        let c = Confinement {
            hidden: vec![hidden.clone()],
            writable: vec![ws.clone()],
        };
        let rs = Ruleset::build(&c, abi).unwrap();
        assert!(
            rs.rules > 3 && rs.rules <= MAX_LANDLOCK_RULES,
            "{}",
            rs.rules
        );
        let script = format!(
            "cat {h}/secrets.env; echo r=$?; ls {h} >/dev/null; echo l=$?; echo n > /dev/null; echo d=$?; echo w > {w}/out.txt; echo w=$?; cat {o}/readable.txt; echo x > {o}/no.txt; echo o=$?",
            h = hidden.display(),
            w = ws.display(),
            o = other.display()
        );
        use std::os::unix::process::CommandExt;
        let fd = rs.raw();
        let mut cmd = std::process::Command::new("/bin/sh");
        cmd.arg("-c").arg(&script);
        // SAFETY: restrict_self makes two system calls and allocates nothing.
        unsafe {
            cmd.pre_exec(move || restrict_self(fd));
        }
        let out = cmd.output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(!stdout.contains("KEY=v"), "{stdout}");
        for want in ["r=1", "l=0", "d=0", "w=0", "hello", "o=2"] {
            assert!(stdout.contains(want), "{want}: {stdout}");
        }
        assert_eq!(std::fs::read_to_string(ws.join("out.txt")).unwrap(), "w\n");
        assert!(!other.join("no.txt").exists());
        let _ = std::fs::remove_dir_all(&base);
    }

    trait MakeDir {
        fn canonicalize_or_make(self) -> PathBuf;
    }

    impl MakeDir for PathBuf {
        fn canonicalize_or_make(self) -> PathBuf {
            let _ = std::fs::remove_dir_all(&self);
            std::fs::create_dir_all(&self).unwrap();
            self.canonicalize().unwrap()
        }
    }
}
