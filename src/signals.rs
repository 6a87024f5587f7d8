//! SIGINT and SIGTERM as an awaitable event (the self-pipe trick), with no extra crate;
//! in the gateway SIGHUP too, as a request to reload the configuration.
//!
//! Why it exists: std has no signal API, and the crates that have one
//! (`signal-hook-registry`, `async-signal`) sit in our dependency tree only as unused
//! parts of smol: using them would add their code to the binary. The whole mechanism is
//! small: a handler that writes one byte (the signal's number) to one end of a
//! `UnixStream` pair, and the executor awaiting the other end through `smol::Async`. The handler does nothing but
//! an atomic load and one `write(2)` system call, both async-signal-safe, and leaves
//! `errno` alone (docs/DECISIONS.md, 7).
//!
//! # Bounds
//! One pipe for the process; later `install` calls reuse it. A signal arriving while the
//! pipe is full is dropped (one pending byte is enough to wake the waiter). Reload
//! requests wait in a queue of one: SIGHUPs that arrive before the last one was taken
//! make one reload.
//!
//! # Threads
//! The handler runs on whichever thread the kernel interrupts (one atomic load and one
//! `write`); [`Signals::wait`] is awaited on the executor thread.
//!
//! # Blocking
//! Nothing blocks: the write end is non-blocking; [`Signals::wait`] is async.

use std::io;
use std::os::fd::{BorrowedFd, IntoRawFd};
use std::os::raw::c_int;
use std::os::unix::net::UnixStream;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI32, Ordering};

const SIGINT: c_int = 2;
const SIGTERM: c_int = 15;
const SIGHUP: c_int = 1;

/// Write end of the pipe, read by the handler (-1 before `install`).
static WRITE_FD: AtomicI32 = AtomicI32::new(-1);
/// Read end, kept so a second `install` shares the pipe.
static READ_END: Mutex<Option<UnixStream>> = Mutex::new(None);

// rustix has no `sigaction` for programs that use the C library (its `runtime` module is
// for programs without one), so `signal` is declared here; `write` goes through rustix.
unsafe extern "C" {
    fn signal(signum: c_int, handler: extern "C" fn(c_int)) -> usize;
}

extern "C" fn on_signal(signum: c_int) {
    let fd = WRITE_FD.load(Ordering::Relaxed);
    if fd < 0 {
        return;
    }
    // SAFETY: `fd` is the write end of our socket pair, stored before the handler was
    // installed and never closed, so it is open for the rest of the process.
    let fd = unsafe { BorrowedFd::borrow_raw(fd) };
    // One raw write(2) system call: rustix's Linux backend makes it inline, with no
    // allocation, no lock and no `errno` (its errors are return values), so the handler
    // is async-signal-safe and leaves the interrupted code's `errno` as it was. A full
    // pipe (EAGAIN) drops the byte: one pending byte is enough.
    let _ = rustix::io::write(fd, &[signum as u8]);
}

/// SIGINT/SIGTERM arrivals, to be awaited on the executor; SIGHUPs (once
/// [`Signals::catch_reload`] was called) are queued for [`Signals::reloads`].
pub struct Signals {
    read: smol::Async<UnixStream>,
    reload: (async_channel::Sender<()>, async_channel::Receiver<()>),
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
            reload: async_channel::bounded(1),
        })
    }

    /// Catch SIGHUP too (the gateway: a reload request instead of the default, the end
    /// of the process). The requests reach [`Signals::reloads`] while [`Signals::wait`]
    /// is being awaited.
    pub fn catch_reload(&self) {
        // SAFETY: as in `install`: a handler that only does async-signal-safe work, and
        // its pipe exists (this value was built by `install`).
        unsafe {
            signal(SIGHUP, on_signal);
        }
    }

    /// Reload requests (SIGHUP), one waiting at most.
    pub fn reloads(&self) -> async_channel::Receiver<()> {
        self.reload.1.clone()
    }

    /// Wait for the next SIGINT or SIGTERM; a SIGHUP meanwhile is queued for
    /// [`Signals::reloads`].
    pub async fn wait(&self) {
        use smol::io::AsyncReadExt;
        let mut buf = [0u8; 16];
        loop {
            match (&self.read).read(&mut buf).await {
                Ok(n) if n > 0 => {
                    let hup = |b: &u8| c_int::from(*b) == SIGHUP;
                    if buf[..n].iter().any(hup) {
                        // A full queue already holds a request: that one reload reads
                        // the files as they are then.
                        let _ = self.reload.0.try_send(());
                    }
                    if !buf[..n].iter().all(hup) {
                        return;
                    }
                }
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

    fn the_handler_wakes_the_waiter() {
        let s = Signals::install().unwrap();
        // Call the handler directly (raising a real SIGTERM would hit the test runner).
        on_signal(SIGTERM);
        let woken = woke_within_10s(&s);
        assert!(woken, "the waiter did not wake within 10 s of the handler");
    }

    /// Whether `s.wait()` returns within 10 s (a deadline, so a waiter never woken fails
    /// the test instead of hanging it).
    fn woke_within_10s(s: &Signals) -> bool {
        smol::block_on(smol::future::or(
            async {
                s.wait().await;
                true
            },
            async {
                smol::Timer::after(std::time::Duration::from_secs(10)).await;
                false
            },
        ))
    }

    #[test]
    fn a_hangup_is_a_reload_request_not_a_stop() {
        // The same pipe as above's: one test, so no other test's signal is read here.
        the_handler_wakes_the_waiter();
        let s = Signals::install().unwrap();
        let reloads = s.reloads();
        on_signal(SIGHUP);
        on_signal(SIGHUP);
        on_signal(SIGTERM);
        let woken = woke_within_10s(&s);
        assert!(woken, "SIGTERM after two SIGHUPs did not wake the waiter");
        // Two hangups, one request: both are served by one reload.
        assert_eq!(reloads.try_recv(), Ok(()));
        assert!(reloads.try_recv().is_err());
    }
}
