//! The process's one heap: dlmalloc behind a mutex, installed as the global allocator by
//! `main.rs` (SQLite allocates from it too, see `store::sqlite_alloc`), and [`trim`],
//! which hands the free memory at the top of the heap back to the system,
//! [`release_free_pages`], which does the same for whole free pages inside the heap
//! (dlmalloc vendored for it: vendor/dlmalloc/PATCH.md), and [`release_code`], which
//! unmaps the binary's code and read-only data pages (they stay in the page cache).
//!
//! Why not `dlmalloc::GlobalDlmalloc`: its instance is private, so nothing can trim it,
//! and dlmalloc on its own keeps up to 2 MiB of free memory mapped. A daemon that is idle
//! most of the day should give back what start-up and a burst of traffic left behind
//! (docs/DECISIONS.md, 60).
//!
//! # Bounds
//! [`trim`] leaves `TRIM_PAD_BYTES` free at the top, so the next message does not map
//! fresh pages at once. Nothing here allocates but [`release_code`] (one read of
//! /proc/self/maps, a few KiB).
//!
//! # Threads
//! Any thread: the global allocator, one mutex around dlmalloc.

use dlmalloc::Dlmalloc;
use std::alloc::{GlobalAlloc, Layout};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

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

/// Set by [`release_code_at_next_wait`], taken by [`release_code_if_asked`].
static RELEASE_AT_NEXT_WAIT: AtomicBool = AtomicBool::new(false);

/// Ask for [`release_code`] the next time a connection that carries the hook
/// (`provider::http::idle_agent`: the Telegram long poll) starts waiting for an answer.
/// The poller asks after a poll that came back empty: released then, after the next
/// request went out, the pages stay unmapped for the whole wait, where a release before
/// the request would be undone by the request itself (docs/DECISIONS.md 105).
pub fn release_code_at_next_wait() {
    RELEASE_AT_NEXT_WAIT.store(true, Ordering::Relaxed);
}

/// [`release_code`] if [`release_code_at_next_wait`] asked for it since the last time;
/// returns whether it ran.
pub fn release_code_if_asked() -> bool {
    let asked = RELEASE_AT_NEXT_WAIT.swap(false, Ordering::Relaxed);
    if asked {
        release_code();
    }
    asked
}

/// Unmap the binary's code and read-only data from this process; the pages stay in the
/// kernel's page cache. A daemon idle most of the day then holds only the code and
/// constants it uses while idle (the long poll, a timer), and the next message maps back
/// what it needs from the page cache (minor faults, no disk read while the cache holds
/// them). Returns the bytes unmapped, 0 when /proc is not there. docs/DECISIONS.md, 93
/// and 100.
///
/// Which mappings: the code mapping (the `r-xp` one holding this function) and the
/// binary's `r--p` mappings before it (`.rodata` and the ELF headers in every layout
/// GNU ld and lld produce). Both are read-only and were never written, so
/// `MADV_DONTNEED` drops page-table entries, not data. Never the `r--p` mapping after the
/// code: that is RELRO in a dynamically linked build, pages the loader wrote
/// (relocations) and then made read-only; dropping them would lose the writes.
pub fn release_code() -> usize {
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
        return 0;
    };
    let here = release_code as fn() -> usize as usize;
    let mappings: Vec<Mapping> = maps.lines().filter_map(Mapping::parse).collect();
    let Some(code) = mappings
        .iter()
        .find(|m| m.perms == "r-xp" && (m.start..m.end).contains(&here))
    else {
        return 0;
    };
    mappings
        .iter()
        .filter(|m| {
            std::ptr::eq(*m, code)
                || (m.perms == "r--p" && m.path == code.path && m.end <= code.start)
        })
        // SAFETY: each range is one of this process's own file mappings of its binary,
        // page-aligned, read-only, private and never written (see above): dropping its
        // pages only makes the next use fault them back in.
        .map(|m| {
            // SAFETY: as said above the closure.
            match unsafe { dont_need(m.start as *mut u8, m.end - m.start) } {
                true => m.end - m.start,
                false => 0,
            }
        })
        .sum()
}

/// One line of /proc/self/maps: the range, the permissions, the path (if any).
struct Mapping<'a> {
    start: usize,
    end: usize,
    perms: &'a str,
    path: &'a str,
}

impl<'a> Mapping<'a> {
    fn parse(line: &'a str) -> Option<Mapping<'a>> {
        let mut f = line.split_whitespace();
        let (range, perms) = (f.next()?, f.next()?);
        let path = f.nth(3).unwrap_or("");
        let (a, z) = range.split_once('-')?;
        let (start, end) = (
            usize::from_str_radix(a, 16).ok()?,
            usize::from_str_radix(z, 16).ok()?,
        );
        (start < end).then_some(Mapping {
            start,
            end,
            perms,
            path,
        })
    }
}

/// `madvise(MADV_DONTNEED)` on `len` bytes at `p`: the pages' contents are dropped (a
/// private anonymous page reads back as zeros, a file page is read again from the file).
/// Whether the kernel took it.
///
/// # Safety
/// `p..p + len` is page-aligned memory of this process that nothing will read expecting
/// the old contents (free heap pages, or read-only file pages that were never written).
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

    #[test]
    fn code_pages_come_back_after_release() {
        let released = release_code();
        assert!(
            released > 0,
            "the code mapping was not found in /proc/self/maps"
        );
        assert_eq!(released % page(), 0);
        // Code runs on after its pages were unmapped (faulted back from the page cache).
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(v.iter().sum::<u64>(), 5050);
        assert!(release_code() > 0);
    }

    /// Pointers in a `static` live in RELRO in the (dynamically linked) test binary:
    /// written by the loader, then made read-only. They must survive a release.
    static TABLE: [&str; 3] = ["one", "two", "three"];

    #[test]
    fn read_only_data_before_the_code_is_released_and_relro_is_kept() {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let m: Vec<Mapping> = maps.lines().filter_map(Mapping::parse).collect();
        let here = release_code as fn() -> usize as usize;
        let code = m
            .iter()
            .find(|x| x.perms == "r-xp" && (x.start..x.end).contains(&here))
            .unwrap();
        let before: usize = m
            .iter()
            .filter(|x| x.perms == "r--p" && x.path == code.path && x.end <= code.start)
            .map(|x| x.end - x.start)
            .sum();
        assert!(before > 0, "no read-only mapping before the code: {maps}");
        assert_eq!(release_code(), code.end - code.start + before);
        // Constants and relocated pointers read back after the release.
        let joined: String = std::hint::black_box(&TABLE).concat();
        assert_eq!(joined, "onetwothree");
        assert_eq!(std::hint::black_box("a constant string").len(), 17);
    }

    #[test]
    fn maps_lines_parse_with_and_without_a_path() {
        let a =
            Mapping::parse("01000000-01060000 r--p 00000000 fd:01 123 /usr/bin/yoctoclaw").unwrap();
        assert_eq!(
            (a.start, a.end, a.perms, a.path),
            (0x0100_0000, 0x0106_0000, "r--p", "/usr/bin/yoctoclaw")
        );
        let b = Mapping::parse("7f97266a0000-7f9726780000 rw-p 00000000 00:00 0").unwrap();
        assert_eq!((b.perms, b.path), ("rw-p", ""));
        assert!(Mapping::parse("garbage").is_none());
        assert!(Mapping::parse("2000-1000 r--p 0 0:0 0 /x").is_none());
    }
}
