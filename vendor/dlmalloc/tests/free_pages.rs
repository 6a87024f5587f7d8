// Tests of `Dlmalloc::free_pages`: random traffic with the free pages handed back to
// the system (or overwritten) at random points, pages that really leave memory, and
// no call at all when there is nothing to hand back. Run them with `--features debug`
// too: then the allocator checks its own structures on every call.

// Under Miri only the tests without random traffic run (see `random_traffic_overwritten`).
#![cfg_attr(miri, allow(dead_code, unused_imports))]

use arbitrary::Unstructured;
use dlmalloc::{Allocator, Dlmalloc};
use rand::{rngs::SmallRng, RngCore, SeedableRng};
use std::alloc::{self, Layout};
use std::cell::Cell;
use std::ptr;

#[path = "../fuzz/src/lib.rs"]
mod fuzz;

/// Inputs of random traffic per test: each about 1,500 steps and 70 calls to
/// `free_pages`.
const SEEDS: u64 = 6;

/// Runs the fuzz harness's `run_free_pages` on `seeds` deterministic inputs (as
/// `smoke.rs`'s `stress` does for `run`); returns the calls to `release` and the bytes
/// passed to it.
fn traffic(seeds: u64, release: &mut dyn FnMut(*mut u8, usize)) -> (usize, usize) {
    let (mut calls, mut bytes) = (0, 0);
    let mut buf = vec![0; 16 << 10];
    for seed in 0..seeds {
        let mut rng = SmallRng::seed_from_u64(seed);
        rng.fill_bytes(&mut buf);
        let mut u = Unstructured::new(&buf);
        let _ = fuzz::run_free_pages(&mut u, &mut |start, len| {
            calls += 1;
            bytes += len;
            release(start, len);
        });
    }
    (calls, bytes)
}

// The pages go back to the kernel: they read back as zeros, so a `calloc` that
// skipped clearing them, or a structure kept in them, would show.
#[test]
#[cfg(all(unix, not(target_arch = "wasm32"), not(miri)))]
fn random_traffic_madvise_dontneed() {
    let (calls, bytes) = traffic(SEEDS, &mut |start, len| {
        // SAFETY: `free_pages` reports whole pages of free memory that the allocator
        // never reads again before writing; dropping them at most makes them read back
        // as zeros.
        let rc = unsafe { libc::madvise(start.cast(), len, libc::MADV_DONTNEED) };
        assert_eq!(rc, 0, "madvise({start:p}, {len})");
    });
    assert!(
        calls >= 1000 && bytes >= 100 << 20,
        "{calls} calls, {bytes} bytes"
    );
}

// The pages are overwritten with garbage (what `MADV_FREE` may leave, and not zeros):
// nothing of the allocator's may live there and `calloc` must clear them. Runs on
// every platform. Skipped under Miri: long traffic soon unlinks a small-bin chunk
// whose neighbour is the bin's head, which Miri reports (Stacked and Tree Borrows)
// at `unlink_small_chunk` with or without `free_pages`: the `smallbins` self-aliasing
// that `sub_page_granularity_alloc_free` in smoke.rs is skipped for.
#[test]
#[cfg(not(miri))]
fn random_traffic_overwritten() {
    let (calls, bytes) = traffic(SEEDS, &mut |start, len| {
        // SAFETY: `free_pages` reports whole pages of free memory that the allocator
        // never reads again before writing.
        unsafe { ptr::write_bytes(start, 0xa5, len) };
    });
    assert!(
        calls >= 1000 && bytes >= 100 << 20,
        "{calls} calls, {bytes} bytes"
    );
}

#[cfg(all(unix, not(target_arch = "wasm32")))]
fn kernel_page_size() -> usize {
    // SAFETY: sysconf only reads a value.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    assert!(page > 0);
    page as usize
}

// `madvise` rounds a length up to whole kernel pages: runs of a smaller page would
// drop live memory past their end (16 KiB pages on Apple silicon and some aarch64
// Linux kernels, 64 KiB on others).
#[test]
#[cfg(all(unix, not(target_arch = "wasm32")))]
fn page_size_is_the_kernels() {
    assert_eq!(Dlmalloc::new().allocator().page_size(), kernel_page_size());
}

/// How many of the pages of `start..end` (page-aligned) are resident.
#[cfg(all(target_os = "linux", not(miri)))]
fn resident_pages(start: usize, end: usize) -> usize {
    let page = kernel_page_size();
    let mut vec = vec![0u8; (end - start) / page];
    // SAFETY: `start..end` is page-aligned memory mapped by the allocator; `vec` has one
    // byte per page.
    let rc = unsafe { libc::mincore(start as *mut _, end - start, vec.as_mut_ptr().cast()) };
    assert_eq!(rc, 0);
    vec.iter().filter(|&&v| v & 1 != 0).count()
}

// A large block freed between two live ones: its pages leave memory, read back as
// zeros, and serve the next allocation of that size; its neighbours keep their bytes.
// Linux: elsewhere `MADV_DONTNEED` need not drop the pages at once nor zero them.
#[test]
#[cfg(all(target_os = "linux", not(miri)))]
fn freed_block_in_the_middle_leaves_memory() {
    let page = kernel_page_size();
    let big = 256 * page;
    let mut a = Dlmalloc::new();
    // One segment for all three blocks, so they lie one after the other.
    assert!(a.set_granularity(4 * big));
    // SAFETY: every pointer comes from `a`, is used within its size and freed once with
    // its size and alignment; the freed block is read only after `free_pages` dropped
    // its pages and before anything reuses them (the memory stays mapped by `a`).
    unsafe {
        let before = a.malloc(1000, 8);
        let middle = a.malloc(big, 8);
        let after = a.malloc(1000, 8);
        assert!(!before.is_null() && !middle.is_null() && !after.is_null());
        assert!(before < middle && middle < after);
        before.write_bytes(0x11, 1000);
        middle.write_bytes(0x22, big);
        after.write_bytes(0x33, 1000);
        // The block's whole pages (its first page also holds its chunk header).
        let lo = (middle as usize + page - 1) & !(page - 1);
        let hi = (middle as usize + big) & !(page - 1);
        assert_eq!(resident_pages(lo, hi), (hi - lo) / page);

        a.free(middle, big, 8);
        let mut runs = Vec::new();
        let total = a.free_pages(|start, len| {
            runs.push((start as usize, len));
            // SAFETY: as in `random_traffic_madvise_dontneed`.
            assert_eq!(libc::madvise(start.cast(), len, libc::MADV_DONTNEED), 0);
        });
        assert!(
            runs.iter().any(|&(s, l)| s <= lo + page && hi <= s + l),
            "no run covers {lo:#x}..{hi:#x}: {runs:x?}"
        );
        assert!(total >= hi - lo - page);
        assert_eq!(resident_pages(lo + page, hi), 0);
        for p in (lo + page..hi).step_by(page) {
            assert_eq!(ptr::read_volatile(p as *const u8), 0);
        }
        assert!((0..1000).all(|i| *before.add(i) == 0x11 && *after.add(i) == 0x33));

        let again = a.malloc(big, 8);
        assert_eq!(again, middle);
        again.write_bytes(0x44, big);
        assert!((0..big).all(|i| *again.add(i) == 0x44));
        assert_eq!(resident_pages(lo, hi), (hi - lo) / page);
        a.free(again, big, 8);
        a.free_pages(|start, len| {
            // SAFETY: as in `random_traffic_madvise_dontneed`.
            assert_eq!(libc::madvise(start.cast(), len, libc::MADV_DONTNEED), 0);
        });
        let zeroed = a.calloc(big, 8);
        assert_eq!(zeroed, middle);
        assert!((0..big).all(|i| *zeroed.add(i) == 0));
        a.free(zeroed, big, 8);
        a.free(before, 1000, 8);
        a.free(after, 1000, 8);
        a.destroy();
    }
}

// A fresh allocator has no free pages.
#[test]
fn empty_allocator_calls_nothing() {
    let mut a = Dlmalloc::new();
    let mut calls = 0;
    // SAFETY: the callback only counts.
    let total = unsafe { a.free_pages(|_, _| calls += 1) };
    assert_eq!((calls, total), (0, 0));
}

/// A system allocator with one region of `SIZE` bytes, handed out once and never taken
/// back: an allocator that can run out of memory.
struct OneRegion {
    region: *mut u8,
    given: Cell<bool>,
}

// SAFETY: the region is only touched through the `Dlmalloc` that owns this value.
unsafe impl Send for OneRegion {}

impl OneRegion {
    const SIZE: usize = 1 << 20;
    const PAGE: usize = 4096;

    fn layout() -> Layout {
        Layout::from_size_align(Self::SIZE, Self::PAGE).unwrap()
    }

    fn new() -> OneRegion {
        // SAFETY: the layout's size is not zero.
        let region = unsafe { alloc::alloc_zeroed(Self::layout()) };
        assert!(!region.is_null());
        OneRegion {
            region,
            given: Cell::new(false),
        }
    }
}

impl Drop for OneRegion {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { alloc::dealloc(self.region, Self::layout()) }
    }
}

// SAFETY: `alloc` hands out the region once, whole and zeroed; nothing is ever taken
// back or resized.
unsafe impl Allocator for OneRegion {
    fn alloc(&self, size: usize) -> (*mut u8, usize, u32) {
        if self.given.get() || size > Self::SIZE {
            return (ptr::null_mut(), 0, 0);
        }
        self.given.set(true);
        (self.region, Self::SIZE, 0)
    }
    fn remap(&self, _: *mut u8, _: usize, _: usize, _: bool) -> *mut u8 {
        ptr::null_mut()
    }
    fn free_part(&self, _: *mut u8, _: usize, _: usize) -> bool {
        false
    }
    fn free(&self, _: *mut u8, _: usize) -> bool {
        false
    }
    fn can_release_part(&self, _: u32) -> bool {
        false
    }
    fn allocates_zeros(&self) -> bool {
        true
    }
    fn page_size(&self) -> usize {
        Self::PAGE
    }
}

// An allocator whose memory is all handed out has no free pages; nor has one whose
// free chunks are all smaller than a page (every other 1 KiB block freed). Once the
// blocks are freed the pages are there again.
#[test]
fn no_free_memory_calls_nothing() {
    let mut a = Dlmalloc::new_with_allocator(OneRegion::new());
    let mut calls = 0;
    // SAFETY: every pointer comes from `a` and is freed once with its size and
    // alignment; the callbacks only count.
    unsafe {
        let mut blocks = Vec::new();
        for size in [1000, 100, 10, 1] {
            loop {
                let p = a.malloc(size, 8);
                if p.is_null() {
                    break;
                }
                blocks.push((p, size));
            }
        }
        assert!(blocks.len() > OneRegion::SIZE / 1024 - 2);
        assert_eq!(a.free_pages(|_, _| calls += 1), 0);
        assert_eq!(calls, 0);

        for &(p, size) in blocks.iter().filter(|b| b.1 == 1000).step_by(2) {
            a.free(p, size, 8);
        }
        assert_eq!(a.free_pages(|_, _| calls += 1), 0);
        assert_eq!(calls, 0);

        for &(p, size) in blocks.iter().filter(|b| b.1 == 1000).skip(1).step_by(2) {
            a.free(p, size, 8);
        }
        assert!(a.free_pages(|_, _| calls += 1) > OneRegion::SIZE / 2);
        assert!(calls > 0);
    }
}
