//! The threading model: one thread runs the smol `LocalExecutor` (sessions, the agent
//! loop, timers); blocking work (HTTP calls, child processes) runs on a small fixed pool
//! of worker threads fed over a bounded async-channel.
//!
//! # Bounds
//! `WORKER_THREADS` threads with `THREAD_STACK_BYTES` stacks; at most `WORKER_QUEUE_LEN`
//! jobs wait for a thread (senders then wait, which is back-pressure, not a drop).
//!
//! # Threads
//! [`Workers::start`] runs on the main thread at start-up and starts the `yc-worker-N`
//! threads ([`Workers::start_named`]: another pool's, `yc-mcp-0` for the MCP manager); [`Workers::run`] and [`forget_dropped_timers`] run on the executor thread;
//! [`spawn_thread`] starts the other named threads.
//!
//! # Blocking
//! `Workers::run` is async and never blocks the executor; the jobs it runs may block.

use crate::limits::{THREAD_STACK_BYTES, WORKER_QUEUE_LEN};
use std::fmt;

type Job = Box<dyn FnOnce() + Send + 'static>;
/// A job's result on its way back to the executor, its type erased ([`Workers::run`]).
type Answer = Box<dyn std::any::Any + Send>;

/// Make the timer reactor forget the timers dropped before they fired. async-io queues
/// a dropped timer's removal without waking the reactor, which then still wakes at that
/// timer's deadline, once, for nothing: 4 s after the last turn for its "typing…"
/// refresher, 20 s after a file tool for its deadline, inside what should be a silent
/// idle (docs/DECISIONS.md 106). Registering a timer does wake the reactor, which then
/// applies every queued change and sleeps until the next deadline still wanted. Called
/// when the last running turn ends; costs one reactor wake-up then.
pub fn forget_dropped_timers() {
    use std::future::Future;
    use std::task::{Context, Waker};
    // Far enough that the timer never decides the reactor's next deadline itself.
    let mut far = smol::Timer::after(std::time::Duration::from_secs(24 * 3600));
    let _ = std::pin::Pin::new(&mut far).poll(&mut Context::from_waker(Waker::noop()));
}

/// The worker pool went away (only at shutdown).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkersGone;

impl fmt::Display for WorkersGone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("worker threads stopped")
    }
}

impl std::error::Error for WorkersGone {}

/// A fixed pool of blocking worker threads.
#[derive(Clone)]
pub struct Workers {
    tx: async_channel::Sender<Job>,
    threads: usize,
}

impl Workers {
    /// Start `n` threads (at least one), `yc-worker-N`.
    pub fn start(n: usize) -> Workers {
        Workers::start_named("yc-worker", n)
    }

    /// Start `n` threads (at least one) named `PREFIX-N`: a pool of its own, for work
    /// that must not hold the others' threads (the MCP manager's: `yc-mcp`).
    pub fn start_named(prefix: &str, n: usize) -> Workers {
        let (tx, rx) = async_channel::bounded::<Job>(WORKER_QUEUE_LEN);
        for i in 0..n.max(1) {
            let rx = rx.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("{prefix}-{i}"))
                .stack_size(THREAD_STACK_BYTES)
                .spawn(move || {
                    while let Ok(job) = rx.recv_blocking() {
                        job();
                    }
                });
            if let Err(e) = spawned {
                log::error!("cannot start worker thread {i}: {e}");
            }
        }
        Workers {
            tx,
            threads: n.max(1),
        }
    }

    /// How many threads the pool has (jobs that can run at once).
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Run a blocking closure on a worker thread and await its result.
    pub async fn run<T, F>(&self, f: F) -> Result<T, WorkersGone>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let answer = self
            .run_boxed(Box::new(move || Box::new(f()) as Answer))
            .await?;
        // Always a `T`: the closure above boxed it.
        answer.downcast::<T>().map(|t| *t).map_err(|_| WorkersGone)
    }

    /// [`Workers::run`] for every result type at once: its channel and its future are
    /// compiled once, not once per caller (each of them cost a few KB of the binary).
    async fn run_boxed(
        &self,
        f: Box<dyn FnOnce() -> Answer + Send + 'static>,
    ) -> Result<Answer, WorkersGone> {
        let (rtx, rrx) = async_channel::bounded::<Answer>(1);
        let job: Job = Box::new(move || {
            let _ = rtx.send_blocking(f());
        });
        self.tx.send(job).await.map_err(|_| WorkersGone)?;
        rrx.recv().await.map_err(|_| WorkersGone)
    }
}

/// Start a named thread with the program's small stack size.
pub fn spawn_thread<F>(name: &str, f: F) -> std::io::Result<std::thread::JoinHandle<()>>
where
    F: FnOnce() + Send + 'static,
{
    std::thread::Builder::new()
        .name(name.to_string())
        .stack_size(THREAD_STACK_BYTES)
        .spawn(f)
}

/// The version line: `yoctoclaw 0.1.0 (aarch64 linux)`.
pub fn version_text() -> String {
    format!(
        "yoctoclaw {} ({} {})",
        env!("CARGO_PKG_VERSION"),
        std::env::consts::ARCH,
        std::env::consts::OS
    )
}

/// A small xorshift generator for backoff jitter (not for anything secret), seeded from
/// the clock, the process id and a stack address so processes and threads differ.
#[derive(Debug, Clone)]
pub struct Jitter(pub u64);

impl Jitter {
    pub fn from_clock() -> Jitter {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        let local = 0u8;
        let addr = &local as *const u8 as u64;
        Jitter((t ^ addr.rotate_left(32) ^ u64::from(std::process::id())) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_run_off_the_executor_thread() {
        let w = Workers::start(2);
        let me = std::thread::current().id();
        let (other, sum) = smol::block_on(async {
            let a = w.run(move || std::thread::current().id() != me).await;
            let b = w.run(|| (1..=10).sum::<i32>()).await;
            (a, b)
        });
        assert_eq!(other, Ok(true));
        assert_eq!(sum, Ok(55));
    }
}
