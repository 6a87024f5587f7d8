//! A counting global allocator for benchmark builds only (cargo feature `bench-alloc`,
//! off by default: a normal build contains none of this).
//!
//! Why it exists: the footprint budget asks for heap allocations and bytes allocated
//! per message. `examples/soak` runs a `bench-alloc` gateway with
//! `YOCTOCLAW_ALLOC_STATS=<file>` set; a small thread then rewrites that file every
//! `REPORT_INTERVAL_MS` with one line `allocs=N bytes=N live=N peak=N`, and the soak
//! reads it before and after its traffic.
//!
//! # Bounds
//! Four atomic counters; one extra thread (`REPORTER_STACK_BYTES` stack) that formats
//! into a fixed buffer on its stack, so the reporter itself never allocates after start.
//!
//! # Threads
//! The counting allocator runs on every thread (atomic counters); the reporter runs on its
//! own thread, `yc-alloc-stats`, with a `REPORTER_STACK_BYTES` stack, started once at
//! start-up (only in `bench-alloc` builds, only when `YOCTOCLAW_ALLOC_STATS` is set).
//!
//! # Blocking
//! The reporter thread sleeps and does one small positioned write per interval.

use crate::heap::Heap as Inner;
use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicU64, Ordering};

/// The environment variable naming the stats file.
pub const ALLOC_STATS_ENV: &str = "YOCTOCLAW_ALLOC_STATS";
/// How often the stats file is rewritten.
pub const REPORT_INTERVAL_MS: u64 = 100;
/// Stack of the reporter thread.
const REPORTER_STACK_BYTES: usize = 32 * 1024;
/// Bytes of the stats line (padded with spaces so a shorter line leaves no stale tail).
const LINE_BYTES: usize = 120;

static ALLOCS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);
static LIVE: AtomicU64 = AtomicU64::new(0);
static PEAK: AtomicU64 = AtomicU64::new(0);

/// The system allocator, counting calls (allocations and reallocations), bytes asked
/// for, bytes live and the peak of live bytes.
pub struct Counting;

fn grew(by: u64) {
    let live = LIVE.fetch_add(by, Ordering::Relaxed) + by;
    PEAK.fetch_max(live, Ordering::Relaxed);
}

fn shrank(by: u64) {
    // Saturating: never wraps even if counting started after an allocation.
    let _ = LIVE.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
        Some(v.saturating_sub(by))
    });
}

// SAFETY: every method forwards to the shipped allocator (`Inner`) with the same arguments; the counters are
// plain atomics and never affect what is returned.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(layout.size() as u64, Ordering::Relaxed);
        grew(layout.size() as u64);
        // SAFETY: same contract as ours.
        unsafe { Inner.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(layout.size() as u64, Ordering::Relaxed);
        grew(layout.size() as u64);
        // SAFETY: same contract as ours.
        unsafe { Inner.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        shrank(layout.size() as u64);
        // SAFETY: same contract as ours.
        unsafe { Inner.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(new_size as u64, Ordering::Relaxed);
        shrank(layout.size() as u64);
        grew(new_size as u64);
        // SAFETY: same contract as ours.
        unsafe { Inner.realloc(ptr, layout, new_size) }
    }
}

/// The counters now: (allocation calls, bytes asked for, live bytes, peak live bytes).
pub fn snapshot() -> (u64, u64, u64, u64) {
    (
        ALLOCS.load(Ordering::Relaxed),
        BYTES.load(Ordering::Relaxed),
        LIVE.load(Ordering::Relaxed),
        PEAK.load(Ordering::Relaxed),
    )
}

/// Start the reporter thread when `YOCTOCLAW_ALLOC_STATS` names a file; otherwise do
/// nothing. Failures are ignored (this is a benchmark aid).
pub fn start_reporter() {
    use std::io::Write;
    use std::os::unix::fs::FileExt;
    let Some(path) = std::env::var_os(ALLOC_STATS_ENV) else {
        return;
    };
    let Ok(file) = std::fs::File::create(&path) else {
        return;
    };
    let _ = std::thread::Builder::new()
        .name("yc-alloc-stats".into())
        .stack_size(REPORTER_STACK_BYTES)
        .spawn(move || {
            loop {
                let (a, b, l, p) = snapshot();
                let mut buf = [b' '; LINE_BYTES];
                let mut w: &mut [u8] = &mut buf[..LINE_BYTES - 1];
                let _ = write!(w, "allocs={a} bytes={b} live={l} peak={p}");
                buf[LINE_BYTES - 1] = b'\n';
                let _ = file.write_at(&buf, 0);
                std::thread::sleep(std::time::Duration::from_millis(REPORT_INTERVAL_MS));
            }
        });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_move_with_the_test_allocator_absent() {
        // The test binary does not install `Counting`; calling it directly still counts.
        let before = snapshot();
        let layout = Layout::from_size_align(64, 8).unwrap();
        // SAFETY: a valid non-zero layout, freed with the same layout.
        unsafe {
            let p = Counting.alloc(layout);
            assert!(!p.is_null());
            let p = Counting.realloc(p, layout, 128);
            assert!(!p.is_null());
            Counting.dealloc(p, Layout::from_size_align(128, 8).unwrap());
        }
        let after = snapshot();
        assert!(after.0 >= before.0 + 2);
        assert!(after.1 >= before.1 + 192);
        assert!(after.3 >= 128);
    }
}
