//! Records the build time (seconds since the Unix epoch) so the binary knows a floor
//! for the wall clock: a board that boots in 1970 is detected by comparing against it.
//! Also records the target triple the binary is built for.
fn main() {
    let secs = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0)
        });
    println!("cargo:rustc-env=YOCTOCLAW_BUILD_EPOCH={secs}");
    // The target triple, for `/metrics`' build info (`metrics`).
    let target = std::env::var("TARGET").unwrap_or_default();
    println!("cargo:rustc-env=YOCTOCLAW_TARGET={target}");
    println!("cargo:rerun-if-env-changed=SOURCE_DATE_EPOCH");
    println!("cargo:rerun-if-changed=build.rs");
}
