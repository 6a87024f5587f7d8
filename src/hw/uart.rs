//! A serial port for one exchange: open, configure, write and/or read until a delimiter,
//! a byte count or a timeout, close.
//!
//! The line is set up as the serial chat channel sets up its own (`channels::serial::port`,
//! DECISIONS 19 and 21): opened `O_NOCTTY | O_NONBLOCK` (no controlling terminal, no hang
//! on a missing carrier), raw, 8N1, no flow control, `CLOCAL`, any baud rate through
//! rustix's termios. The descriptor stays non-blocking; every read and write waits in
//! `poll` against the call's deadline, so nothing here can wait longer than asked.
//! Input that arrived before the call is discarded.
//!
//! # Bounds
//! [`MAX_WRITE_BYTES`] written, [`MAX_READ_BYTES`] read, [`MAX_TIMEOUT_MS`] per call, a
//! delimiter of at most [`MAX_DELIMITER_BYTES`]. Closing a port may wait for the kernel
//! to send what was written (at most `MAX_WRITE_BYTES` at the chosen baud rate).
//!
//! # Threads
//! Worker threads (`tools::hardware` hands each call there).
//!
//! # Blocking
//! Every function blocks up to its deadline: run on a worker thread.

use super::{HwError, open_rw};
use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::OFlags;
use rustix::io::Errno;
use rustix::termios::{
    self, ControlModes, InputModes, OptionalActions, QueueSelector, SpecialCodeIndex,
};
use std::time::{Duration, Instant};

/// Most bytes written in one call.
pub const MAX_WRITE_BYTES: usize = 4096;
/// Most bytes read in one call.
pub const MAX_READ_BYTES: usize = 4096;
/// Longest a call waits (for writing and reading together).
pub const MAX_TIMEOUT_MS: u64 = 30_000;
/// Longest delimiter.
pub const MAX_DELIMITER_BYTES: usize = 16;
/// Baud rates accepted (as the serial channel's).
pub const MIN_BAUD: u32 = 50;
pub const MAX_BAUD: u32 = 4_000_000;

/// Why a read stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// The delimiter arrived (it is included in the bytes).
    Delimiter,
    /// The byte count was reached.
    Count,
    /// The time ran out.
    Timeout,
}

/// What to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Until {
    pub delimiter: Vec<u8>,
    pub max_bytes: usize,
}

/// Open `device` at `baud`, raw 8N1, non-blocking, input flushed.
pub fn open(device: &str, baud: u32) -> Result<OwnedFd, HwError> {
    if !(MIN_BAUD..=MAX_BAUD).contains(&baud) {
        return Err(HwError::Invalid("baud rate must be 50 to 4000000"));
    }
    let fd = open_rw(device, OFlags::NONBLOCK)?;
    configure(fd.as_fd(), baud).map_err(|e| match e {
        Errno::NOTTY => HwError::Unsupported("the device is not a serial port"),
        e => HwError::from_errno(e, device, device),
    })?;
    Ok(fd)
}

/// Raw mode, `baud`, 8N1, no flow control, `CLOCAL`, `VMIN=1 VTIME=0`; pending input
/// (line noise from before anyone listened) is discarded. The serial chat channel
/// configures its line with this too.
pub fn configure(fd: BorrowedFd<'_>, baud: u32) -> Result<(), Errno> {
    let mut t = termios::tcgetattr(fd)?;
    t.make_raw();
    t.control_modes.remove(
        ControlModes::CSIZE | ControlModes::PARENB | ControlModes::CSTOPB | ControlModes::CRTSCTS,
    );
    t.control_modes
        .insert(ControlModes::CS8 | ControlModes::CREAD | ControlModes::CLOCAL);
    t.input_modes
        .remove(InputModes::IXON | InputModes::IXOFF | InputModes::IXANY);
    t.special_codes[SpecialCodeIndex::VMIN] = 1;
    t.special_codes[SpecialCodeIndex::VTIME] = 0;
    t.set_speed(baud)?;
    termios::tcsetattr(fd, OptionalActions::Now, &t)?;
    let _ = termios::tcflush(fd, QueueSelector::IFlush);
    Ok(())
}

/// Wait until `fd` is ready for `flags` or `deadline` passes; `false` on timeout.
fn wait(fd: &OwnedFd, flags: PollFlags, deadline: Instant) -> Result<bool, Errno> {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let ts = Timespec {
            tv_sec: left.as_secs() as i64,
            tv_nsec: left.subsec_nanos() as _,
        };
        let mut fds = [PollFd::new(fd, flags)];
        match poll(&mut fds, Some(&ts)) {
            Ok(0) => return Ok(false),
            Ok(_) => return Ok(true),
            Err(Errno::INTR) if !left.is_zero() => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Write all of `data` before `deadline`.
pub fn write_all(
    fd: &OwnedFd,
    device: &str,
    data: &[u8],
    deadline: Instant,
) -> Result<(), HwError> {
    if data.len() > MAX_WRITE_BYTES {
        return Err(HwError::Invalid("at most 4096 bytes are written at once"));
    }
    let fail = |e| HwError::from_errno(e, device, device);
    let mut rest = data;
    while !rest.is_empty() {
        match rustix::io::write(fd, rest) {
            Ok(n) => rest = rest.get(n..).unwrap_or_default(),
            Err(Errno::AGAIN | Errno::INTR) => {
                if !wait(fd, PollFlags::OUT, deadline).map_err(fail)? {
                    return Err(HwError::TimedOut(device.to_string()));
                }
            }
            Err(e) => return Err(fail(e)),
        }
    }
    Ok(())
}

/// Read until `u.delimiter` (when not empty) arrives, `u.max_bytes` (at most
/// [`MAX_READ_BYTES`]) are read, or `deadline` passes. A hang-up ends the read like a
/// timeout.
pub fn read_until(
    fd: &OwnedFd,
    device: &str,
    u: &Until,
    deadline: Instant,
) -> Result<(Vec<u8>, Ended), HwError> {
    let max = u.max_bytes.clamp(1, MAX_READ_BYTES);
    let fail = |e| HwError::from_errno(e, device, device);
    let mut out = Vec::new();
    let mut buf = [0u8; 256];
    loop {
        if out.len() >= max {
            return Ok((out, Ended::Count));
        }
        if !wait(fd, PollFlags::IN, deadline).map_err(fail)? {
            return Ok((out, Ended::Timeout));
        }
        let room = (max - out.len()).min(buf.len());
        match rustix::io::read(fd, &mut buf[..room]) {
            Ok(0) => return Ok((out, Ended::Timeout)),
            Ok(n) => {
                // Stop right after the delimiter, even if more arrived in the same read.
                for &b in &buf[..n] {
                    out.push(b);
                    if !u.delimiter.is_empty() && out.ends_with(&u.delimiter) {
                        return Ok((out, Ended::Delimiter));
                    }
                }
            }
            Err(Errno::AGAIN | Errno::INTR) => {}
            Err(Errno::IO) => return Ok((out, Ended::Timeout)),
            Err(e) => return Err(fail(e)),
        }
    }
}

/// One call: open `device` at `baud`, write `data` (may be empty), then read by `until`
/// (`None`: no read), all within `timeout` (at most [`MAX_TIMEOUT_MS`]); then close.
pub fn exchange(
    device: &str,
    baud: u32,
    data: &[u8],
    until: Option<&Until>,
    timeout: Duration,
) -> Result<Option<(Vec<u8>, Ended)>, HwError> {
    if until.is_some_and(|u| u.delimiter.len() > MAX_DELIMITER_BYTES) {
        return Err(HwError::Invalid("the delimiter is longer than 16 bytes"));
    }
    let deadline = Instant::now() + timeout.min(Duration::from_millis(MAX_TIMEOUT_MS));
    let fd = open(device, baud)?;
    write_all(&fd, device, data, deadline)?;
    match until {
        None => Ok(None),
        Some(u) => read_until(&fd, device, u, deadline).map(Some),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_bounds() {
        assert_eq!(
            (MIN_BAUD, MAX_BAUD, MAX_WRITE_BYTES, MAX_DELIMITER_BYTES),
            (50, 4_000_000, 4096, 16)
        );
    }

    #[test]
    fn files_that_are_not_ports_and_bad_bauds_are_refused() {
        let path = std::env::temp_dir().join(format!("yc-uart-notatty-{}", std::process::id()));
        std::fs::write(&path, b"x").unwrap();
        let p = path.to_str().unwrap();
        assert!(matches!(open(p, 9600), Err(HwError::Unsupported(_))));
        assert!(matches!(open(p, 10), Err(HwError::Invalid(_))));
        assert!(matches!(
            open("/dev/ttyYOCTO-missing", 9600),
            Err(HwError::NoDevice(_))
        ));
        let _ = std::fs::remove_file(&path);
        let long = Until {
            delimiter: vec![b'x'; MAX_DELIMITER_BYTES + 1],
            max_bytes: 1,
        };
        assert!(matches!(
            exchange("/dev/null", 9600, b"", Some(&long), Duration::ZERO),
            Err(HwError::Invalid(_))
        ));
    }
}
