//! Which `yoctoclaw` binary the end-to-end tests run, and how.
//!
//! - [`bin`]: `YOCTOCLAW_BIN` when set (another build: a board's, a release build), else
//!   the binary cargo built for these tests (with the `test-hooks` feature).
//! - [`command`]: a `Command` that runs it; a binary for another machine runs under
//!   qemu-user (`qemu-aarch64`, `qemu-riscv64`, `qemu-arm`, from the ELF header), or under
//!   `YOCTOCLAW_BIN_RUNNER` when set (words split on spaces, e.g.
//!   `qemu-aarch64 -cpu cortex-a53`; empty: run it directly, e.g. with binfmt_misc).
//! - [`hook`]: the name of a test hook (`YOCTOCLAW_TEST_*`) for a test that cannot work
//!   without it. Shipped builds have no hooks: against one, the test fails at once, saying
//!   so, unless the run excludes it (scripts/e2e-board.sh keeps that list). Whether the
//!   binary has a hook is read from its bytes (the hook's name is in a binary that reads
//!   it, and in no other: CI checks every board build for `YOCTOCLAW_TEST_`).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The fixed clock (`time::clock`): `YOCTOCLAW_TEST_NOW=<unix seconds>`.
pub const TEST_NOW: &str = "YOCTOCLAW_TEST_NOW";
/// Telegram's backoff waits multiplied (`channels::telegram::backoff`).
pub const TEST_BACKOFF_SCALE: &str = "YOCTOCLAW_TEST_BACKOFF_SCALE";

/// The binary under test.
pub fn bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| match std::env::var_os("YOCTOCLAW_BIN") {
        Some(p) if !p.is_empty() => {
            let p = PathBuf::from(p);
            assert!(p.is_file(), "YOCTOCLAW_BIN={} is not a file", p.display());
            p
        }
        _ => PathBuf::from(env!("CARGO_BIN_EXE_yoctoclaw")),
    })
}

/// The program (and its first arguments) that runs [`bin`]: nothing for a binary of this
/// machine, `qemu-<arch>` for another's, or `YOCTOCLAW_BIN_RUNNER`.
pub fn runner() -> &'static [String] {
    static RUNNER: OnceLock<Vec<String>> = OnceLock::new();
    RUNNER
        .get_or_init(|| {
            if let Some(r) = std::env::var_os("YOCTOCLAW_BIN_RUNNER") {
                return r
                    .to_string_lossy()
                    .split_whitespace()
                    .map(str::to_string)
                    .collect();
            }
            if arch() == std::env::consts::ARCH {
                Vec::new()
            } else {
                vec![format!("qemu-{}", arch())]
            }
        })
        .as_slice()
}

/// The machine the binary under test is for (`std::env::consts::ARCH`'s names), from its
/// ELF header: tests whose expectations depend on the machine ask this, not the host.
pub fn arch() -> &'static str {
    static ARCH: OnceLock<&'static str> = OnceLock::new();
    ARCH.get_or_init(|| {
        let head = std::fs::File::open(bin())
            .and_then(|mut f| {
                let mut h = [0u8; 20];
                std::io::Read::read_exact(&mut f, &mut h).map(|_| h)
            })
            .unwrap_or_else(|e| panic!("read {}: {e}", bin().display()));
        elf_arch(&head).unwrap_or(std::env::consts::ARCH)
    })
}

/// `prog` as a path: found on this process's `PATH` when it has no slash (a test may give
/// the child another `PATH`, and `Command` looks the program up on the child's).
fn resolve(prog: &str) -> PathBuf {
    if prog.contains('/') {
        return PathBuf::from(prog);
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|d| d.join(prog))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{prog} (the runner of {}) is not on PATH", bin().display()))
}

/// The machine an ELF header is for, as `std::env::consts::ARCH` and qemu-user name it.
fn elf_arch(h: &[u8; 20]) -> Option<&'static str> {
    if &h[..4] != b"\x7fELF" {
        return None;
    }
    let machine = if h[5] == 2 {
        u16::from_be_bytes([h[18], h[19]])
    } else {
        u16::from_le_bytes([h[18], h[19]])
    };
    let wide = h[4] == 2;
    Some(match (machine, wide) {
        (62, _) => "x86_64",
        (3, _) => "i386",
        (183, _) => "aarch64",
        (40, _) => "arm",
        (243, true) => "riscv64",
        (243, false) => "riscv32",
        _ => return None,
    })
}

/// A `Command` that runs the binary under test (through its runner, if any).
pub fn command() -> Command {
    match runner().split_first() {
        Some((prog, args)) => {
            let mut c = Command::new(resolve(prog));
            c.args(args).arg(bin());
            c
        }
        None => Command::new(bin()),
    }
}

/// True when the binary under test reads the test hook `name`.
pub fn has_hook(name: &str) -> bool {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    let bytes = BYTES.get_or_init(|| {
        std::fs::read(bin()).unwrap_or_else(|e| panic!("read {}: {e}", bin().display()))
    });
    bytes.windows(name.len()).any(|w| w == name.as_bytes())
}

/// `name`, for a test that needs the test hook `name`. Against a binary without it (a
/// shipped build), panics: such a test must be on scripts/e2e-board.sh's list of tests
/// that need hooks, so it is excluded from that run instead of passing without checking
/// anything.
pub fn hook(name: &'static str) -> &'static str {
    assert!(
        has_hook(name),
        "this test needs the test hook {name}, and {} has none (a release or board build: \
         hooks exist only in `cargo test` builds). Add the test to the list of tests that \
         need hooks in scripts/e2e-board.sh.",
        bin().display()
    );
    name
}

/// The warning the binary logs at start on a kernel without Landlock (an old board kernel,
/// or qemu-user, which has no Landlock system calls): what a machine says, not the run.
pub const LANDLOCK_MISSING_LOG: &str = "exec: Landlock is not available";

/// `stderr` without the line [`LANDLOCK_MISSING_LOG`] starts, for a test that a quiet run
/// logs nothing on any kernel.
pub fn without_landlock_notice(stderr: &str) -> String {
    stderr
        .split_inclusive('\n')
        .filter(|l| !l.contains(LANDLOCK_MISSING_LOG))
        .collect()
}
