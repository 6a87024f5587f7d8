//! Files: crash-safe writes, and reads that only ever touch regular files.
//!
//! Writes: write a temporary file beside the target, fsync it, rename it over the
//! target, fsync the folder. A power cut leaves the old or the new file, never half of
//! one (SD cards on $10 boards lose power often).
//!
//! Reads ([`read_regular`]): a FIFO, a device node or a socket in the workspace would
//! block a plain `open` or `read` forever (a FIFO without a writer, a tty without
//! carrier). Files are opened with `O_NONBLOCK` (an open never waits), checked with
//! `fstat`, and refused unless regular; `O_NOFOLLOW` where the caller has already
//! resolved symlinks (so a link swapped in afterwards is refused, not followed).
//!
//! # Bounds
//! [`read_regular`] reads at most the `max` bytes it is given; [`copy`] goes through one
//! buffer of `COPY_BUFFER_BYTES`.
//!
//! # Threads
//! The caller's thread: a worker for the file tools and uploads, the executor for the
//! prompt's workspace files (regular files only, so an open never waits), the main thread
//! for one-shot commands.
//!
//! # Blocking
//! Synchronous filesystem calls, including two fsyncs per write; a read of a regular
//! file waits only for the disk.

use std::fmt;
use std::io::{Read, Write};
use std::path::Path;

/// The buffer [`copy`] goes through.
const COPY_BUFFER_BYTES: usize = 16 * 1024;

/// Why [`read_regular`] read nothing.
#[derive(Debug)]
pub enum ReadError {
    /// Not a regular file: what it is ("folder", "FIFO", "device", "socket",
    /// "symbolic link").
    NotRegular(&'static str),
    NotFound,
    Io(std::io::Error),
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::NotRegular(kind) => {
                write!(
                    f,
                    "it is a {kind}, not a regular file: only regular files are read"
                )
            }
            ReadError::NotFound => f.write_str("no such file"),
            ReadError::Io(e) => write!(f, "{}", e.kind()),
        }
    }
}

impl std::error::Error for ReadError {}

/// What a file type is called in [`ReadError::NotRegular`].
fn kind_of(ft: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if ft.is_dir() {
        "folder"
    } else if ft.is_fifo() {
        "FIFO"
    } else if ft.is_socket() {
        "socket"
    } else if ft.is_char_device() || ft.is_block_device() {
        "device"
    } else if ft.is_symlink() {
        "symbolic link"
    } else {
        "special file"
    }
}

/// Open `path` for reading if, and only if, it is a regular file; never waits on a FIFO
/// or device. `follow`: follow a symbolic link in the last component (false when the
/// path was resolved already).
pub fn open_regular(path: &Path, follow: bool) -> Result<std::fs::File, ReadError> {
    use rustix::fs::{Mode, OFlags};
    let mut flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY;
    if !follow {
        flags |= OFlags::NOFOLLOW;
    }
    let fd = match rustix::fs::open(path, flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT) => return Err(ReadError::NotFound),
        Err(rustix::io::Errno::LOOP) if !follow => {
            return Err(ReadError::NotRegular("symbolic link"));
        }
        Err(e) => return Err(ReadError::Io(e.into())),
    };
    let file = std::fs::File::from(fd);
    let ft = file.metadata().map_err(ReadError::Io)?.file_type();
    if !ft.is_file() {
        return Err(ReadError::NotRegular(kind_of(ft)));
    }
    Ok(file)
}

/// The first `max` bytes of the regular file at `path`, and its whole length.
pub fn read_regular(path: &Path, max: usize, follow: bool) -> Result<(Vec<u8>, u64), ReadError> {
    let file = open_regular(path, follow)?;
    let total = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut buf = Vec::with_capacity((total as usize).min(max));
    file.take(max as u64)
        .read_to_end(&mut buf)
        .map_err(ReadError::Io)?;
    Ok((buf, total))
}

/// Write `bytes` to `path` atomically with the given Unix mode.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".into());
    let tmp = dir.join(format!(".{name}.tmp{}", std::process::id()));
    let result = (|| {
        let mut opts = std::fs::OpenOptions::new();
        opts.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            opts.mode(mode);
        }
        let mut f = opts.open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, path)?;
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    let _ = mode;
    result
}

/// `from` into `to` through one buffer (std's `io::copy` brings its kernel-copy paths:
/// kilobytes of code for a rare fallback).
pub fn copy(from: &mut std::fs::File, to: &mut std::fs::File) -> std::io::Result<()> {
    let mut buf = vec![0u8; COPY_BUFFER_BYTES];
    loop {
        match from.read(&mut buf)? {
            0 => return Ok(()),
            n => to.write_all(&buf[..n])?,
        }
    }
}

/// Create a folder (and parents) with the given mode for the last component.
pub fn create_dir_private(path: &Path, mode: u32) -> std::io::Result<()> {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        b.mode(mode);
    }
    let _ = mode;
    b.create(path)
}

/// The first 16 bytes of a file (fewer when it is shorter; none on a read error): enough
/// to know a type by its magic bytes (`chat::media::sniff_image`). A plain read loop:
/// `read_to_end` would bring its growth strategy's code for 16 bytes.
pub fn head(file: &mut std::fs::File) -> Vec<u8> {
    use std::io::Read;
    let mut buf = [0u8; 16];
    let mut n = 0;
    while n < buf.len() {
        match file.read(&mut buf[n..]) {
            Ok(0) | Err(_) => break,
            Ok(k) => n += k,
        }
    }
    buf[..n].to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_are_read_and_a_fifo_never_blocks() {
        let d = std::env::temp_dir().join(format!("yc-files-read-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("a.txt"), "hello world").unwrap();
        let (bytes, total) = read_regular(&d.join("a.txt"), 5, false).unwrap();
        assert_eq!((bytes.as_slice(), total), (&b"hello"[..], 11));
        // A FIFO with no writer: a plain open would wait forever.
        let fifo = d.join("pipe");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        assert!(matches!(
            read_regular(&fifo, 10, true),
            Err(ReadError::NotRegular("FIFO"))
        ));
        assert!(matches!(
            read_regular(&d, 10, true),
            Err(ReadError::NotRegular("folder"))
        ));
        assert!(matches!(
            read_regular(Path::new("/dev/null"), 10, true),
            Err(ReadError::NotRegular("device"))
        ));
        std::os::unix::fs::symlink(d.join("a.txt"), d.join("link")).unwrap();
        assert!(read_regular(&d.join("link"), 10, true).is_ok());
        assert!(matches!(
            read_regular(&d.join("link"), 10, false),
            Err(ReadError::NotRegular("symbolic link"))
        ));
        assert!(matches!(
            read_regular(&d.join("missing"), 10, true),
            Err(ReadError::NotFound)
        ));
        let msg = ReadError::NotRegular("FIFO").to_string();
        assert!(msg.contains("FIFO") && !msg.contains(d.to_str().unwrap()));
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn atomic_write_replaces_content_and_leaves_no_temp() {
        let d = std::env::temp_dir().join(format!("yc-files-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        create_dir_private(&d, 0o700).unwrap();
        let p = d.join("f.txt");
        write_atomic(&p, b"one", 0o600).unwrap();
        write_atomic(&p, b"two", 0o600).unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "two");
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1);
        let _ = std::fs::remove_dir_all(&d);
    }
}
