// tests/smoke.rs and tests/free_pages.rs include this file as a module, each using
// part of it.
#![allow(dead_code)]

use arbitrary::{Result, Unstructured};
use dlmalloc::{Allocator, Dlmalloc};
use std::cmp;
use std::mem;
use std::slice;

const MAX_ALLOCATED: usize = 100 << 20; // 100 MB

pub fn run(u: &mut Unstructured<'_>) -> Result<()> {
    run_with(u, None)
}

/// `run` with calls to `Dlmalloc::free_pages` at random points. Each run of pages it
/// reports is checked (whole pages of the allocator's page size, disjoint from every
/// live allocation and its chunk header, disjoint from the other runs) and then passed
/// to `release`, which may hand the pages back to the system (`madvise`) or overwrite
/// them; afterwards every live allocation must still hold its bytes.
pub fn run_free_pages(
    u: &mut Unstructured<'_>,
    release: &mut dyn FnMut(*mut u8, usize),
) -> Result<()> {
    run_with(u, Some(release))
}

fn run_with(
    u: &mut Unstructured<'_>,
    mut release: Option<&mut dyn FnMut(*mut u8, usize)>,
) -> Result<()> {
    let mut a = Dlmalloc::new();
    let mut ptrs = Vec::new();
    let mut allocated = 0;
    // `run` goes on while the input says so, `run_free_pages` until the input is used
    // up: long runs of traffic between its calls to `free_pages`.
    let long = release.is_some();
    unsafe {
        while if long { !u.is_empty() } else { u.arbitrary()? } {
            if let Some(release) = release.as_mut() {
                if u.ratio(1, 20)? {
                    free_pages(&mut a, &ptrs, &mut **release, false);
                }
            }

            // If there are pointers to free then have a chance of deallocating
            // a pointer. Try not to deallocate things until there's a "large"
            // working set but afterwards give it a 50/50 chance of allocating
            // or deallocating.
            let free = match ptrs.len() {
                0 => false,
                0..=10_000 => u.ratio(1, 3)?,
                _ => u.arbitrary()?,
            };
            if free {
                let idx = u.choose_index(ptrs.len())?;
                let (ptr, size, align) = ptrs.swap_remove(idx);
                allocated -= size;
                a.free(ptr, size, align);
                continue;
            }

            // 1/100 chance of reallocating a pointer to a different size.
            if ptrs.len() > 0 && u.ratio(1, 100)? {
                let idx = u.choose_index(ptrs.len())?;
                let (ptr, size, align) = ptrs.swap_remove(idx);

                // Arbitrarily choose whether to make this allocation either
                // twice as large or half as small.
                let new_size = if u.arbitrary()? {
                    u.int_in_range(size..=size * 2)?
                } else if size > 10 {
                    u.int_in_range(size / 2..=size)?
                } else {
                    continue;
                };
                if allocated + new_size - size > MAX_ALLOCATED {
                    ptrs.push((ptr, size, align));
                    continue;
                }
                allocated -= size;
                allocated += new_size;

                // Perform the `realloc` and assert that all bytes were copied.
                let mut tmp = Vec::new();
                for i in 0..cmp::min(size, new_size) {
                    tmp.push(*ptr.offset(i as isize));
                }
                let ptr = a.realloc(ptr, size, align, new_size);
                assert!(!ptr.is_null());
                for (i, byte) in tmp.iter().enumerate() {
                    assert_eq!(*byte, *ptr.offset(i as isize));
                }
                if new_size > size {
                    ptr.add(size).write_bytes(0xce, new_size - size);
                }
                ptrs.push((ptr, new_size, align));
            }

            // Aribtrarily choose a size to allocate as well as an alignment.
            // Enable small sizes with standard alignment happening a fair bit.
            let size = if u.arbitrary()? {
                u.int_in_range(1..=128)?
            } else {
                u.int_in_range(1..=128 * 1024)?
            };
            let align = if u.ratio(1, 10)? {
                1 << u.int_in_range(3..=8)?
            } else {
                8
            };

            if size + allocated > MAX_ALLOCATED {
                continue;
            }
            allocated += size;

            // Choose arbitrarily between a zero-allocated chunk and a normal
            // allocated chunk.
            let zero = u.ratio(1, 50)?;
            let ptr = if zero {
                a.calloc(size, align)
            } else {
                a.malloc(size, align)
            };
            if zero {
                // SAFETY: `ptr` is a fresh allocation of `size` bytes, zeroed by `calloc`.
                assert!(slice::from_raw_parts(ptr, size).iter().all(|&b| b == 0));
            }
            ptr.write_bytes(0xce, size);
            ptrs.push((ptr, size, align));
        }

        // Deallocate everythign when we're done.
        if let Some(release) = release.as_mut() {
            free_pages(&mut a, &ptrs, &mut **release, true);
        }
        for (ptr, size, align) in ptrs {
            a.free(ptr, size, align);
        }
        if let Some(release) = release.as_mut() {
            free_pages(&mut a, &[], &mut **release, true);
        }

        a.destroy();
    }

    Ok(())
}

/// Calls `a.free_pages`, checks every run against the live allocations `ptrs` (each
/// filled with 0xce by `run_with`) before passing it to `release`, then checks that the
/// runs are disjoint and that every live allocation still holds its bytes: all of them
/// if `full`, else the first byte and the first of each page (whatever changes a whole
/// page of an allocation changes one of those).
///
/// Safety: `ptrs` are live allocations of `a`, each `size` bytes long and all written.
unsafe fn free_pages(
    a: &mut Dlmalloc,
    ptrs: &[(*mut u8, usize, usize)],
    release: &mut dyn FnMut(*mut u8, usize),
    full: bool,
) {
    let page = a.allocator().page_size();
    // A live allocation's chunk starts two words before the pointer (its header).
    let header = 2 * mem::size_of::<usize>();
    let mut runs = Vec::new();
    let total = a.free_pages(|start, len| {
        let start_addr = start as usize;
        assert!(len > 0);
        assert_eq!(start_addr % page, 0, "run at {start:p} not page-aligned");
        assert_eq!(
            len % page,
            0,
            "run at {start:p} of {len} bytes not whole pages"
        );
        for &(ptr, size, _) in ptrs {
            let (lo, hi) = (ptr as usize - header, ptr as usize + size);
            assert!(
                start_addr + len <= lo || hi <= start_addr,
                "run {start:p}+{len} overlaps the live allocation {ptr:p}+{size}"
            );
        }
        runs.push((start_addr, len));
        release(start, len);
    });
    runs.sort_unstable();
    for w in runs.windows(2) {
        assert!(w[0].0 + w[0].1 <= w[1].0, "runs {:?} overlap", w);
    }
    assert_eq!(total, runs.iter().map(|r| r.1).sum::<usize>());
    let pattern = [0xce; 4096];
    for &(ptr, size, _) in ptrs {
        if full {
            // SAFETY: `ptr` is a live allocation of `size` bytes, all written.
            let bytes = slice::from_raw_parts(ptr, size);
            for chunk in bytes.chunks(pattern.len()) {
                assert!(chunk == &pattern[..chunk.len()], "{ptr:p}+{size} changed");
            }
        } else {
            let first_page = (ptr as usize + page - 1) & !(page - 1);
            let pages = (first_page - ptr as usize..size).step_by(page);
            for at in std::iter::once(0).chain(pages) {
                // SAFETY: `at < size` and the allocation's bytes are all written.
                assert_eq!(*ptr.add(at), 0xce, "{ptr:p}+{size} changed at +{at}");
            }
        }
    }
}
