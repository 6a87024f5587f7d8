//! SIGINT and SIGTERM as an awaitable event (the self-pipe trick), with no extra crate.
//!
//! Why it exists: std has no signal API, and the crates that have one
//! (`signal-hook-registry`, `async-signal`) sit in our dependency tree only as unused
//! parts of smol: using them would add their code to the binary. The whole mechanism is
//! small: a handler that writes one byte to one end of a `UnixStream` pair, and the
//! executor awaiting the other end through `smol::Async`. The handler does nothing but
//! an atomic load and `write(2)`, both async-signal-safe, and keeps `errno` intact
//! (docs/DECISIONS.md).
//!
//! # Bounds
//! One pipe for the process; later `install` calls reuse it. A signal arriving while the
//! pipe is full is dropped (one pending byte is enough to wake the waiter).
//!
//! # Blocking
//! Nothing blocks: the write end is non-blocking; [`Signals::wait`] is async.

use std::io;
use std::os::fd::IntoRawFd;
use std::os::raw::{c_int, c_void};
use std::os::unix::net::UnixStream;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI32, Ordering};

const SIGINT: c_int = 2;
const SIGTERM: c_int = 15;

/// Write end of the pipe, read by the handler (-1 before `install`).
static WRITE_FD: AtomicI32 = AtomicI32::new(-1);
/// Read end, kept so a second `install` shares the pipe.
static READ_END: Mutex<Option<UnixStream>> = Mutex::new(None);

unsafe extern "C" {
    fn signal(signum: c_int, handler: extern "C" fn(c_int)) -> usize;
    fn write(fd: c_int, buf: *const c_void, count: usize) -> isize;
    #[cfg(any(target_os = "linux", target_os = "android"))]
    fn __errno_location() -> *mut c_int;
}

extern "C" fn on_signal(_signum: c_int) {
    let fd = WRITE_FD.load(Ordering::Relaxed);
    if fd < 0 {
        return;
    }
    #[cfg(any(target_os = "linux", target_os = "android"))]
    // SAFETY: __errno_location returns this thread's errno slot; always valid.
    let saved = unsafe { *__errno_location() };
    let byte = 1u8;
    // SAFETY: fd is the write end of our socket pair (never closed); the buffer is one
    // byte on this stack. write(2) is async-signal-safe.
    unsafe {
        write(fd, (&byte as *const u8).cast(), 1);
    }
    #[cfg(any(target_os = "linux", target_os = "android"))]
    // SAFETY: as above.
    unsafe {
        *__errno_location() = saved;
    }
}

/// SIGINT/SIGTERM arrivals, to be awaited on the executor.
pub struct Signals {
    read: smol::Async<UnixStream>,
}

impl Signals {
    /// Install the handlers for SIGINT and SIGTERM.
    pub fn install() -> io::Result<Signals> {
        let mut guard = READ_END
            .lock()
            .map_err(|_| io::Error::other("signal pipe lock poisoned"))?;
        if guard.is_none() {
            let (read, write_end) = UnixStream::pair()?;
            write_end.set_nonblocking(true)?;
            read.set_nonblocking(true)?;
            WRITE_FD.store(write_end.into_raw_fd(), Ordering::SeqCst);
            // SAFETY: installing a handler that only does async-signal-safe work.
            unsafe {
                signal(SIGINT, on_signal);
                signal(SIGTERM, on_signal);
            }
            *guard = Some(read);
        }
        let read = guard
            .as_ref()
            .ok_or_else(|| io::Error::other("signal pipe missing"))?
            .try_clone()?;
        Ok(Signals {
            read: smol::Async::new(read)?,
        })
    }

    /// Wait for the next SIGINT or SIGTERM.
    pub async fn wait(&self) {
        use smol::io::AsyncReadExt;
        let mut buf = [0u8; 16];
        loop {
            match (&self.read).read(&mut buf).await {
                Ok(n) if n > 0 => return,
                Ok(_) => {
                    // Cannot happen (we hold the write end); never spin on it.
                    std::future::pending::<()>().await;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    log::error!("cannot watch for signals: {e}");
                    std::future::pending::<()>().await;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_handler_wakes_the_waiter() {
        let s = Signals::install().unwrap();
        // Call the handler directly (raising a real SIGTERM would hit the test runner).
        on_signal(SIGTERM);
        // A deadline, so a waiter that is never woken fails the test instead of hanging it.
        let woken = smol::block_on(smol::future::or(
            async {
                s.wait().await;
                true
            },
            async {
                smol::Timer::after(std::time::Duration::from_secs(10)).await;
                false
            },
        ));
        assert!(woken, "the waiter did not wake within 10 s of the handler");
    }
}
