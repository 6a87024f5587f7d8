//! The process's one heap: dlmalloc behind a mutex, installed as the global allocator by
//! `main.rs` (SQLite allocates from it too, see `store::sqlite_alloc`), and [`trim`],
//! which hands the free memory at the top of the heap back to the system.
//!
//! Why not `dlmalloc::GlobalDlmalloc`: its instance is private, so nothing can trim it,
//! and dlmalloc on its own keeps up to 2 MiB of free memory mapped. A daemon that is idle
//! most of the day should give back what start-up and a burst of traffic left behind
//! (docs/DECISIONS.md, 60).
//!
//! # Bounds
//! [`trim`] leaves `TRIM_PAD_BYTES` free at the top, so the next message does not map
//! fresh pages at once. Nothing here allocates.
//!
//! # Threads
//! Any thread: the global allocator, one mutex around dlmalloc.

use dlmalloc::Dlmalloc;
use std::alloc::{GlobalAlloc, Layout};
use std::sync::Mutex;

/// Free bytes left mapped at the top of the heap after a trim.
pub const TRIM_PAD_BYTES: usize = 64 * 1024;

struct Dl(Dlmalloc);

// SAFETY: the allocator's raw pointers are only touched under the mutex.
unsafe impl Send for Dl {}

static HEAP: Mutex<Dl> = Mutex::new(Dl(Dlmalloc::new()));

fn heap() -> std::sync::MutexGuard<'static, Dl> {
    // A panic never unwinds through the allocator (panic = abort); a poisoned lock
    // still guards a consistent heap.
    HEAP.lock().unwrap_or_else(|e| e.into_inner())
}

/// The global allocator (installed in `main.rs`).
pub struct Heap;

// SAFETY: every call is forwarded to dlmalloc under the mutex, with the caller's layout.
unsafe impl GlobalAlloc for Heap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        unsafe { heap().0.malloc(layout.size(), layout.align()) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        unsafe { heap().0.calloc(layout.size(), layout.align()) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { heap().0.free(ptr, layout.size(), layout.align()) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        unsafe {
            heap()
                .0
                .realloc(ptr, layout.size(), layout.align(), new_size)
        }
    }
}

/// Give the free memory at the top of the heap back to the system (keeping
/// `TRIM_PAD_BYTES`); returns whether any was given back. Cheap when there is none.
pub fn trim() -> bool {
    // SAFETY: trimming only releases free memory of this allocator, under its lock.
    unsafe { heap().0.trim(TRIM_PAD_BYTES) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_from_the_heap_are_usable_and_trim_is_safe() {
        unsafe {
            let l = Layout::from_size_align(300_000, 16).unwrap();
            let p = Heap.alloc(l);
            assert!(!p.is_null());
            assert_eq!(p as usize % 16, 0);
            std::ptr::write_bytes(p, 7, l.size());
            let q = Heap.realloc(p, l, 600_000);
            assert_eq!(*q.add(299_999), 7);
            Heap.dealloc(q, Layout::from_size_align(600_000, 16).unwrap());
            let z = Heap.alloc_zeroed(Layout::from_size_align(4096, 8).unwrap());
            assert!(std::slice::from_raw_parts(z, 4096).iter().all(|&b| b == 0));
            Heap.dealloc(z, Layout::from_size_align(4096, 8).unwrap());
        }
        trim();
        assert!(!trim(), "nothing left to give back right after a trim");
    }
}
