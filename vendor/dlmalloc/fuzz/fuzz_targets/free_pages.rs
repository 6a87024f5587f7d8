#![no_main]

use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;

// Random traffic with `free_pages` at random points; each run is checked and then
// overwritten, as a caller that discards its pages may leave them.
fuzz_target!(|bytes: &[u8]| {
    let _ = dlmalloc_fuzz::run_free_pages(&mut Unstructured::new(bytes), &mut |start, len| {
        // SAFETY: `run_free_pages` checked that the run is whole free pages of the
        // allocator, which it never reads again before writing.
        unsafe { start.write_bytes(0xa5, len) }
    });
});
