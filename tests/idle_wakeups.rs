//! An idle gateway must not be woken by timers it no longer wants (docs/DECISIONS.md 106).
//! Its own test binary: the timer reactor is per process, and no other test may use it
//! while the reactor thread's context switches are counted.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Waker};
use std::time::Duration;

/// Context switches so far of this process's timer reactor thread ("async-io").
fn reactor_switches() -> Option<u64> {
    for t in std::fs::read_dir("/proc/self/task").ok()? {
        let status = std::fs::read_to_string(t.ok()?.path().join("status")).ok()?;
        if status.lines().any(|l| l == "Name:\tasync-io") {
            return Some(
                status
                    .lines()
                    .filter(|l| l.contains("ctxt_switches:"))
                    .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
                    .sum(),
            );
        }
    }
    None
}

/// A timer due in `ms`, registered with the reactor, then dropped before it fires (what a
/// finished turn does with its "typing…" refresher). Then `after`, then a wait past the
/// deadline; returns the reactor thread's context switches during that wait.
fn switches_past_a_dropped_timer(ms: u64, after: impl FnOnce()) -> u64 {
    let mut t = smol::Timer::after(Duration::from_millis(ms));
    assert!(
        Pin::new(&mut t)
            .poll(&mut Context::from_waker(Waker::noop()))
            .is_pending()
    );
    // The timer lives a while, as the refresher does during a turn: the reactor has
    // taken it in and sleeps until its deadline.
    std::thread::sleep(Duration::from_millis(50));
    drop(t);
    after();
    // Let the reactor apply what it was told, then count past the dropped deadline.
    std::thread::sleep(Duration::from_millis(100));
    let before = reactor_switches().expect("async-io's reactor thread is running");
    std::thread::sleep(Duration::from_millis(ms + 300));
    reactor_switches().unwrap() - before
}

#[test]
fn a_dropped_timer_never_wakes_the_reactor_after_forget_dropped_timers() {
    // Without it, the reactor wakes at the dropped timer's deadline (async-io queues the
    // removal without waking it). If this ever fails, async-io forgets dropped timers by
    // itself and `forget_dropped_timers` can go.
    let woken = switches_past_a_dropped_timer(400, || {});
    assert!(
        woken > 0,
        "the reactor did not wake for a dropped timer: async-io changed"
    );
    // With it: not woken at all.
    let woken = switches_past_a_dropped_timer(400, yoctoclaw::runtime::forget_dropped_timers);
    assert_eq!(
        woken, 0,
        "the reactor woke for a timer dropped before it fired"
    );
}
