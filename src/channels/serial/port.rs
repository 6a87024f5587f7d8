//! Opening a serial device and configuring its line through termios (rustix): raw mode,
//! the baud rate, 8 data bits, no parity, one stop bit (8N1), no flow control (neither
//! RTS/CTS nor XON/XOFF), modem control lines ignored, reads that wait for one byte.
//!
//! The device is opened with `O_NOCTTY` (a daemon started by an init system is a session
//! leader: without it the line would become its controlling terminal and a hang-up would
//! send SIGHUP) and `O_NONBLOCK` (so a line without carrier cannot hang the open), then
//! switched back to blocking once `CLOCAL` is set.
//!
//! # Threads
//! The `yc-serial` reader thread opens and reads the device; replies are written on a
//! worker thread.
//!
//! # Blocking
//! `open` does not block; reads and writes on the returned file do.

use rustix::fs::{Mode, OFlags};
use std::fs::File;
use std::os::fd::AsFd;

/// Slowest baud rate accepted (the config's lower bound).
pub const MIN_BAUD: u32 = 50;
/// Fastest baud rate accepted (the config's upper bound).
pub const MAX_BAUD: u32 = 4_000_000;

/// Open `device` and configure it for `baud` 8N1 raw.
pub fn open(device: &str, baud: u32) -> std::io::Result<File> {
    let fd = rustix::fs::open(
        device,
        OFlags::RDWR | OFlags::NOCTTY | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    configure(&fd, baud)?;
    let flags = rustix::fs::fcntl_getfl(&fd)?;
    rustix::fs::fcntl_setfl(&fd, flags.difference(OFlags::NONBLOCK))?;
    Ok(File::from(fd))
}

/// Raw mode, `baud`, 8N1, no flow control, `CLOCAL`, `VMIN=1 VTIME=0`; pending input
/// (line noise from before we were listening) is discarded (`hw::uart::configure`).
pub fn configure(fd: impl AsFd, baud: u32) -> std::io::Result<()> {
    crate::hw::uart::configure(fd.as_fd(), baud.clamp(MIN_BAUD, MAX_BAUD)).map_err(Into::into)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_that_is_not_a_terminal_is_refused() {
        let path = std::env::temp_dir().join(format!("yc-notatty-{}", std::process::id()));
        std::fs::write(&path, b"x").unwrap();
        let err = open(path.to_str().unwrap(), 115_200).unwrap_err();
        assert_eq!(
            err.raw_os_error(),
            Some(rustix::io::Errno::NOTTY.raw_os_error())
        );
        let _ = std::fs::remove_file(&path);
        assert!(open("/nonexistent/tty", 9600).is_err());
    }
}
