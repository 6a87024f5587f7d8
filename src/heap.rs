//! The process's one heap: dlmalloc behind a mutex, installed as the global allocator by
//! `main.rs` (SQLite allocates from it too, see `store::sqlite_alloc`); [`trim`], which
//! hands the free memory at the top of the heap back to the system; and
//! [`release_free_pages`], which does the same for whole free pages inside the heap
//! (dlmalloc vendored for it: vendor/dlmalloc/PATCH.md).
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
        // SAFETY: dlmalloc's contract is GlobalAlloc's: a non-zero size (the caller's) and a
        // power-of-two alignment (a Layout's); under the heap's lock.
        unsafe { heap().0.malloc(layout.size(), layout.align()) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as in `alloc`.
        unsafe { heap().0.calloc(layout.size(), layout.align()) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator with this layout (GlobalAlloc's contract).
        unsafe { heap().0.free(ptr, layout.size(), layout.align()) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from this allocator with `layout`, `new_size` is non-zero and
        // fits an isize once rounded to the alignment (GlobalAlloc's contract).
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

/// Hand the whole free pages inside the heap back to the system (`MADV_DONTNEED`: they
/// stay mapped and read back as zeros), where [`trim`] returns only the free memory at
/// the top. After a burst of traffic most of the heap's resident memory can be free
/// chunks between live ones. Returns the bytes handed back. docs/DECISIONS.md, 101.
pub fn release_free_pages() -> usize {
    let mut h = heap();
    let mut done = 0;
    // SAFETY: under the heap's lock; each range is whole pages inside a free chunk of this
    // allocator (never a chunk header), which dlmalloc never reads before reusing.
    unsafe {
        h.0.free_pages(|p, len| {
            if dont_need(p, len) {
                done += len;
            }
        });
    }
    done
}

/// `madvise(MADV_DONTNEED)` on `len` bytes at `p`: the pages' contents are dropped (a
/// private anonymous page reads back as zeros, a file page is read again from the file).
/// Whether the kernel took it.
///
/// # Safety
/// `p..p + len` is page-aligned memory of this process that nothing will read expecting
/// the old contents (free pages inside the heap).
unsafe fn dont_need(p: *mut u8, len: usize) -> bool {
    // SAFETY: the caller's contract.
    unsafe { rustix::mm::madvise(p.cast(), len, rustix::mm::Advice::LinuxDontNeed) }.is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tests below share the one heap; those that look at where blocks land take
    /// turns.
    static TURN: Mutex<()> = Mutex::new(());

    fn turn() -> std::sync::MutexGuard<'static, ()> {
        TURN.lock().unwrap_or_else(|e| e.into_inner())
    }

    // rustix has no mincore(2).
    unsafe extern "C" {
        fn mincore(addr: *mut std::ffi::c_void, len: usize, vec: *mut u8) -> std::ffi::c_int;
    }

    /// The kernel's page size (4 KiB here; 16 or 64 KiB on some arm64 kernels).
    fn page() -> usize {
        rustix::param::page_size()
    }

    /// Whether the page at `p` (page-aligned) is resident.
    fn resident(p: *mut u8) -> bool {
        let mut v = 0u8;
        // SAFETY: mincore only reads the page table for the range and writes one byte
        // per page into `v` (one page asked); an unmapped address is an error, not UB.
        unsafe { mincore(p.cast(), page(), &mut v) == 0 && v & 1 == 1 }
    }

    /// # Safety
    /// `p..p + len` is writable memory this test owns.
    unsafe fn fill(p: *mut u8, len: usize, seed: u8) {
        for i in 0..len {
            // SAFETY: the caller's contract.
            unsafe { *p.add(i) = seed.wrapping_add((i % 251) as u8) };
        }
    }

    /// # Safety
    /// `p..p + len` is readable, initialised memory this test owns.
    unsafe fn intact(p: *mut u8, len: usize, seed: u8) -> bool {
        // SAFETY: the caller's contract.
        (0..len).all(|i| unsafe { *p.add(i) } == seed.wrapping_add((i % 251) as u8))
    }

    #[test]
    fn free_pages_between_live_blocks_go_back_and_the_live_blocks_keep_their_bytes() {
        let _t = turn();
        let small = Layout::from_size_align(1000, 8).unwrap();
        let big = Layout::from_size_align(256 * 1024, 8).unwrap();
        // SAFETY: every block is used within its layout and freed once with it; the
        // pointers checked after a release are of blocks still live.
        unsafe {
            let a = Heap.alloc(small);
            let b = Heap.alloc(big);
            let c = Heap.alloc(small);
            fill(a, small.size(), 1);
            fill(b, big.size(), 2);
            fill(c, small.size(), 3);
            let pg = page();
            assert!(resident(((b as usize + 2 * pg) & !(pg - 1)) as *mut u8));
            // Wherever b lies (between live blocks, or next to the top of the heap), its
            // whole pages are handed back and no longer resident.
            Heap.dealloc(b, big);
            let released = release_free_pages();
            assert!(released >= big.size() - 3 * pg, "{released}");
            let first = (b as usize + pg + 64) & !(pg - 1);
            let last = (b as usize + big.size() - pg) & !(pg - 1);
            for p in (first..last).step_by(pg) {
                assert!(
                    !resident(p as *mut u8),
                    "page {p:#x} of the free block is resident"
                );
            }
            assert!(intact(a, small.size(), 1) && intact(c, small.size(), 3));
            // The memory is reused as usual: zeroed when asked, written and read back.
            let z = Heap.alloc_zeroed(big);
            assert!((0..big.size()).all(|i| *z.add(i) == 0));
            fill(z, big.size(), 4);
            assert!(intact(z, big.size(), 4));
            Heap.dealloc(z, big);
            Heap.dealloc(a, small);
            Heap.dealloc(c, small);
        }
    }

    #[test]
    fn random_traffic_with_releases_never_changes_a_live_block() {
        let _t = turn();
        // A fixed pseudo-random sequence (LCG): sizes from 8 bytes to 300 KiB, frees in
        // any order, a release every 37 steps, every live block checked each time.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (x >> 33) as usize
        };
        let mut live: Vec<(*mut u8, Layout, u8)> = Vec::new();
        let mut released = 0;
        for step in 0..3000 {
            if live.len() < 64 && (next() % 3 != 0 || live.is_empty()) {
                let size = match next() % 10 {
                    0..=5 => 8 + next() % 512,
                    6..=8 => 4096 + next() % 40_000,
                    _ => 100_000 + next() % 200_000,
                };
                let l = Layout::from_size_align(size, 8 << (next() % 3)).unwrap();
                // SAFETY: a non-zero size and a power-of-two alignment.
                let p = unsafe { Heap.alloc(l) };
                assert!(!p.is_null());
                let seed = (step % 256) as u8;
                // SAFETY: a live block of `size` bytes.
                unsafe { fill(p, size, seed) };
                live.push((p, l, seed));
            } else {
                let (p, l, seed) = live.swap_remove(next() % live.len());
                // SAFETY: a live block, filled, of this layout, freed once here.
                unsafe {
                    assert!(intact(p, l.size(), seed), "step {step}");
                    Heap.dealloc(p, l);
                }
            }
            if step % 37 == 0 {
                released += release_free_pages();
                for &(p, l, seed) in &live {
                    // SAFETY: a live, filled block.
                    let ok = unsafe { intact(p, l.size(), seed) };
                    assert!(ok, "after a release at step {step}");
                }
            }
        }
        assert!(released > 0, "nothing was ever handed back");
        for (p, l, seed) in live {
            // SAFETY: a live, filled block of this layout, freed once here.
            unsafe {
                assert!(intact(p, l.size(), seed));
                Heap.dealloc(p, l);
            }
        }
    }

    #[test]
    fn blocks_from_the_heap_are_usable_and_trim_is_safe() {
        let _t = turn();
        // SAFETY: each block is used within its layout (the realloc'd one within its new
        // size) and freed once with the layout it has.
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
