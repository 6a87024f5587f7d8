//! SQLite's memory comes from the Rust global allocator (`SQLITE_CONFIG_MALLOC`), so the
//! whole process uses one heap.
//!
//! Why: with musl's allocator a short SQLite statement mapped and unmapped fresh pages
//! many times per message (every `munmap` a TLB shoot-down across threads); with one heap
//! SQLite's short-lived blocks are reused like Rust's (docs/DECISIONS.md, 60). It also
//! makes the `bench-alloc` counts include SQLite.
//!
//! # Layout
//! Every block carries an 8-byte header holding its total size (SQLite's `xSize` needs
//! it); blocks are 8-byte aligned, which is what SQLite asks of an allocator.
//!
//! # Threads
//! Whatever thread calls SQLite (the one that owns the `Db`): SQLite's allocation callbacks
//! take the heap's one lock like any Rust allocation. [`install`] runs once, before the
//! first connection opens.

use rusqlite::ffi;
use std::alloc::{Layout, alloc, dealloc, realloc};
use std::ffi::{c_int, c_void};
use std::sync::Once;

const HEADER: usize = 8;
const ALIGN: usize = 8;

/// The layout of a block of `total` bytes (header included); `None` if it cannot exist.
fn layout(total: usize) -> Option<Layout> {
    Layout::from_size_align(total, ALIGN).ok()
}

/// Total bytes (header included) for a request of `n` bytes.
fn total_for(n: c_int) -> Option<usize> {
    usize::try_from(n)
        .ok()
        .filter(|&n| n > 0)?
        .checked_add(HEADER)
}

unsafe extern "C" fn x_malloc(n: c_int) -> *mut c_void {
    let Some(total) = total_for(n) else {
        return std::ptr::null_mut();
    };
    let Some(l) = layout(total) else {
        return std::ptr::null_mut();
    };
    // SAFETY: `l` has a non-zero size. The header is written inside the new block.
    unsafe {
        let base = alloc(l);
        if base.is_null() {
            return base.cast();
        }
        base.cast::<usize>().write(total);
        base.add(HEADER).cast()
    }
}

/// The block's base and total size, from a pointer `x_malloc`/`x_realloc` returned.
///
/// # Safety
/// `p` must be non-null and come from this allocator.
unsafe fn block(p: *mut c_void) -> (*mut u8, usize) {
    // SAFETY: per the contract, `p - HEADER` is the block start, holding its size.
    unsafe {
        let base = p.cast::<u8>().sub(HEADER);
        (base, base.cast::<usize>().read())
    }
}

unsafe extern "C" fn x_free(p: *mut c_void) {
    if p.is_null() {
        return;
    }
    // SAFETY: SQLite frees only what this allocator gave it; the layout is the one
    // the block was allocated with (same total, same alignment).
    unsafe {
        let (base, total) = block(p);
        if let Some(l) = layout(total) {
            dealloc(base, l);
        }
    }
}

unsafe extern "C" fn x_realloc(p: *mut c_void, n: c_int) -> *mut c_void {
    if p.is_null() {
        // SAFETY: same as a fresh allocation.
        return unsafe { x_malloc(n) };
    }
    let Some(new_total) = total_for(n) else {
        return std::ptr::null_mut();
    };
    // SAFETY: `p` came from this allocator; `realloc` gets the block's own layout and
    // a non-zero new size that fits a Layout of the same alignment (checked above by
    // `layout(new_total)`); on failure the old block is left untouched, as SQLite expects.
    unsafe {
        let (base, total) = block(p);
        let (Some(old), Some(_)) = (layout(total), layout(new_total)) else {
            return std::ptr::null_mut();
        };
        let grown = realloc(base, old, new_total);
        if grown.is_null() {
            return grown.cast();
        }
        grown.cast::<usize>().write(new_total);
        grown.add(HEADER).cast()
    }
}

unsafe extern "C" fn x_size(p: *mut c_void) -> c_int {
    if p.is_null() {
        return 0;
    }
    // SAFETY: `p` came from this allocator.
    let (_, total) = unsafe { block(p) };
    c_int::try_from(total - HEADER).unwrap_or(c_int::MAX)
}

unsafe extern "C" fn x_roundup(n: c_int) -> c_int {
    n.checked_add(7).map_or(n, |m| m & !7)
}

unsafe extern "C" fn x_init(_: *mut c_void) -> c_int {
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_shutdown(_: *mut c_void) {}

/// Point SQLite at the global allocator. Must run before SQLite initialises (the first
/// connection); later calls, or a SQLite already initialised by someone else, leave
/// SQLite on the C allocator, which is also correct.
pub fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let methods = ffi::sqlite3_mem_methods {
            xMalloc: Some(x_malloc),
            xFree: Some(x_free),
            xRealloc: Some(x_realloc),
            xSize: Some(x_size),
            xRoundup: Some(x_roundup),
            xInit: Some(x_init),
            xShutdown: Some(x_shutdown),
            pAppData: std::ptr::null_mut(),
        };
        // SAFETY: SQLite copies the struct during the call; the functions are 'static.
        let rc = unsafe {
            ffi::sqlite3_config(
                ffi::SQLITE_CONFIG_MALLOC,
                &methods as *const ffi::sqlite3_mem_methods,
            )
        };
        if rc != ffi::SQLITE_OK {
            log::debug!("SQLite keeps the C allocator (sqlite3_config returned {rc})");
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_keep_their_size_through_realloc_and_free() {
        // SAFETY: SQLite's allocator contract: each block is used within the size it was
        // given, realloc'd or freed once, and only through these functions.
        unsafe {
            let p = x_malloc(10);
            assert!(!p.is_null());
            assert_eq!(p as usize % ALIGN, 0);
            assert_eq!(x_size(p), 10);
            std::ptr::write_bytes(p.cast::<u8>(), 0xAB, 10);
            let q = x_realloc(p, 5000);
            assert!(!q.is_null());
            assert_eq!(x_size(q), 5000);
            assert_eq!(*q.cast::<u8>().add(9), 0xAB);
            let r = x_realloc(q, 3);
            assert_eq!(x_size(r), 3);
            x_free(r);
            x_free(std::ptr::null_mut());
            assert!(x_malloc(0).is_null());
            assert!(x_malloc(-1).is_null());
            assert_eq!(x_roundup(13), 16);
            assert_eq!(x_roundup(c_int::MAX), c_int::MAX);
        }
    }

    #[test]
    fn sqlite_runs_on_it() {
        install();
        let db = crate::store::Db::open_in_memory().unwrap();
        db.set_state("k", &"v".repeat(100_000)).unwrap();
        assert_eq!(db.get_state("k").unwrap().map(|v| v.len()), Some(100_000));
    }
}
