//! yoctoclaw's entry point: everything happens in `cli::run`, which returns the exit status.
//!
//! # Threads
//! Main thread.

/// Benchmark builds only (`--features bench-alloc`): count every heap allocation.
#[cfg(feature = "bench-alloc")]
#[global_allocator]
static ALLOC: yoctoclaw::alloc_count::Counting = yoctoclaw::alloc_count::Counting;

/// One heap for the whole process, SQLite included (store::sqlite_alloc): dlmalloc reuses
/// freed blocks where musl's allocator unmapped and remapped pages on every message
/// (docs/DECISIONS.md, 60).
#[cfg(not(feature = "bench-alloc"))]
#[global_allocator]
static ALLOC: yoctoclaw::heap::Heap = yoctoclaw::heap::Heap;

fn main() {
    #[cfg(feature = "bench-alloc")]
    yoctoclaw::alloc_count::start_reporter();
    // SAFETY: the main thread, before anything else starts; the only other thread that may
    // exist is bench-alloc's reporter, which never reads or changes the environment.
    std::process::exit(unsafe { yoctoclaw::cli::main() });
}
