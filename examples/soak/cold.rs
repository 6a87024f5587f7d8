//! What a memory-floor trial (`scripts/bench-floor.py`) needs from the soak: the gateway
//! started from a cold copy of the binary, its home's files out of the page cache, and the
//! gateway's process placed in a memory cgroup before it runs its first instruction.
//!
//! Why: a memory cgroup is charged for every page-cache page its processes bring in (the
//! binary's code as it is faulted in, the database as it is read), but a page already in
//! the cache stays charged to whoever brought it in first. The soak's own `onboard` run
//! and its seeding of memories would otherwise have charged the binary and the database
//! to the soak's group, and a gateway that ran in a limited group would look smaller
//! than it is on a board after a boot, where nothing is cached.
//!
//! # Bounds
//! One copy of the binary; one pass over the home's files (a fresh soak home: a few dozen
//! files). `resident_kib` maps the file once.

use std::ffi::{CString, c_int, c_void};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

/// Copy `src` to a new file `dst`, write it to disk and drop its pages from the page cache,
/// so the process that runs it next faults every page in from the disk (and is charged).
pub fn copy_cold(src: &Path, dst: &Path) -> Result<(), String> {
    let _ = std::fs::remove_file(dst);
    std::fs::copy(src, dst).map_err(|e| format!("cannot copy {}: {e}", src.display()))?;
    drop_cached(dst)
}

/// Write `path` (a file, or every file under a directory) to disk and drop its pages from
/// the page cache (`posix_fadvise(POSIX_FADV_DONTNEED)`; dirty pages cannot be dropped,
/// hence the sync first).
pub fn drop_cached(path: &Path) -> Result<(), String> {
    let meta = std::fs::symlink_metadata(path).map_err(|e| e.to_string())?;
    if meta.is_dir() {
        for entry in std::fs::read_dir(path).map_err(|e| e.to_string())? {
            drop_cached(&entry.map_err(|e| e.to_string())?.path())?;
        }
        return Ok(());
    }
    if !meta.is_file() {
        return Ok(());
    }
    let f = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    f.sync_all()
        .map_err(|e| format!("{}: sync: {e}", path.display()))?;
    rustix::fs::fadvise(&f, 0, None, rustix::fs::Advice::DontNeed)
        .map_err(|e| format!("{}: fadvise: {e}", path.display()))
}

/// KiB of `path` in the page cache (`mincore` over a mapping of the whole file); `None`
/// when the file cannot be mapped.
pub fn resident_kib(path: &Path) -> Option<u64> {
    unsafe extern "C" {
        fn mmap(
            a: *mut c_void,
            len: usize,
            prot: c_int,
            fl: c_int,
            fd: c_int,
            off: i64,
        ) -> *mut c_void;
        fn munmap(a: *mut c_void, len: usize) -> c_int;
        fn mincore(a: *mut c_void, len: usize, vec: *mut u8) -> c_int;
    }
    use std::os::fd::AsRawFd;
    let f = std::fs::File::open(path).ok()?;
    let len = f.metadata().ok()?.len() as usize;
    if len == 0 {
        return Some(0);
    }
    const PROT_READ: c_int = 1;
    const MAP_SHARED: c_int = 1;
    let page = 4096;
    let mut vec = vec![0u8; len.div_ceil(page)];
    // SAFETY: a read-only shared mapping of a file we opened, only passed to mincore (never
    // read through) and unmapped before returning.
    unsafe {
        let p = mmap(
            std::ptr::null_mut(),
            len,
            PROT_READ,
            MAP_SHARED,
            f.as_raw_fd(),
            0,
        );
        if p as isize == -1 {
            return None;
        }
        let ok = mincore(p, len, vec.as_mut_ptr()) == 0;
        munmap(p, len);
        ok.then(|| vec.iter().filter(|&&v| v & 1 == 1).count() as u64 * page as u64 / 1024)
    }
}

/// Start the command's process inside the cgroup `dir` (v1 or v2): between fork and exec
/// the child writes "0" (itself) to `dir/cgroup.procs`, so everything the gateway does from
/// its first instruction on, start-up included, is charged to that group. A failed write
/// fails the spawn.
pub fn join_cgroup(cmd: &mut Command, dir: &Path) -> Result<(), String> {
    let procs = CString::new(dir.join("cgroup.procs").as_os_str().as_bytes())
        .map_err(|_| format!("bad cgroup path {}", dir.display()))?;
    // SAFETY: the closure runs in the forked child before exec; it only makes system calls
    // (open, write) on memory prepared before the fork, and allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            use rustix::fs::{Mode, OFlags};
            let fd = rustix::fs::open(procs.as_c_str(), OFlags::WRONLY, Mode::empty())?;
            rustix::io::write(&fd, b"0\n")?;
            Ok(())
        });
    }
    Ok(())
}
