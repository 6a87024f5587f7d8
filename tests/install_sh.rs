//! `scripts/install.sh` and `scripts/package.sh`, run for real on fake dist trees: the
//! binary picked for each machine (`uname -m` and `/proc/cpuinfo` faked with YC_UNAME_M
//! and YC_CPUINFO, which only the script reads), the refusals (ARMv5, an ARMv6 without VFP, an ARMv7 without VFPv3,
//! a RISC-V without RV64GC, an unknown machine, a binary for another CPU, a bad checksum,
//! a folder it cannot write, a full disk, a failed copy) leaving nothing half-installed,
//! release archives from package.sh (by path, unpacked, and over HTTP), and onboard.
//!
//! Every case runs under the system `sh` and under BusyBox (`busybox sh` with only
//! BusyBox's applets on PATH). A machine without BusyBox (or shellcheck, curl/wget,
//! setpriv as root) skips that part through `support::skipped`: a `SKIPPED:` line, or a
//! failure with `YOCTOCLAW_NO_SKIP=1` (`.ci/run` installs them).

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use support::{skipped, text};

const AARCH64: &str = "aarch64-unknown-linux-musl";
const ARMV7: &str = "armv7-unknown-linux-musleabihf";
const ARMV6: &str = "arm-unknown-linux-musleabihf";
const RISCV: &str = "riscv64gc-unknown-linux-musl";
const X86: &str = "x86_64-unknown-linux-musl";

const CORTEX_A7: &str = "processor\t: 0\nmodel name\t: ARMv7 Processor rev 5 (v7l)\nBogoMIPS\t: 48.00\nFeatures\t: half thumb fastmult vfp edsp neon vfpv3 tls vfpv4 idiva idivt vfpd32 lpae evtstrm \nCPU implementer\t: 0x41\nCPU architecture: 7\nCPU variant\t: 0x0\n";
const CORTEX_A8: &str = "processor\t: 0\nmodel name\t: ARMv7 Processor rev 2 (v7l)\nFeatures\t: half thumb fastmult vfp edsp thumbee neon vfpv3 tls vfpd32 \nCPU architecture: 7\n";
const TEGRA2_D16: &str = "processor\t: 0\nmodel name\t: ARMv7 Processor rev 0 (v7l)\nFeatures\t: swp half thumb fastmult vfp edsp thumbee vfpv3 vfpv3d16 tls \nCPU architecture: 7\n";
const ARMV8L: &str = "processor\t: 0\nmodel name\t: ARMv8 Processor rev 4 (v8l)\nFeatures\t: half thumb fastmult vfp edsp neon vfpv3 tls vfpv4 idiva idivt vfpd32 lpae evtstrm crc32\nCPU architecture: 8\n";
const PI_ZERO_W: &str = "processor\t: 0\nmodel name\t: ARMv6-compatible processor rev 7 (v6l)\nBogoMIPS\t: 697.95\nFeatures\t: half thumb fastmult vfp edsp java tls \nCPU implementer\t: 0x41\nCPU architecture: 7\nHardware\t: BCM2835\n";
const NO_VFP3: &str = "processor\t: 0\nmodel name\t: ARMv7 Processor rev 1 (v7l)\nFeatures\t: half thumb fastmult vfp edsp tls \nCPU architecture: 7\n";
const C906: &str = "processor\t: 0\nhart\t\t: 0\nisa\t\t: rv64imafdcvsu\nmmu\t\t: sv39\n";
const RV_NEW: &str =
    "processor\t: 0\nhart\t\t: 0\nisa\t\t: rv64imafdc_zicntr_zicsr_zifencei_zihpm\nmmu\t\t: sv39\n";
const RV_IMAC: &str =
    "processor\t: 0\nhart\t\t: 0\nisa\t\t: rv64imac_zicsr_zifencei\nmmu\t\t: sv39\n";

const ARMV6_NO_VFP: &str = "processor\t: 0\nmodel name\t: ARMv6-compatible processor rev 7 (v6l)\nFeatures\t: half thumb fastmult edsp java tls \nCPU architecture: 7\n";
const ARMV5_SENTENCE: &str = "this is an ARMv5 or older machine (uname -m: armv5tel): yoctoclaw has no build for it; the oldest ARM it runs on is ARMv6 with a VFP unit (Raspberry Pi Zero, Pi 1)";

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A stand-in for a binary: an ELF header for `triple`'s CPU, then filler.
fn fake_elf(triple: &str) -> Vec<u8> {
    let (class, machine) = match triple {
        AARCH64 => (2, 0xb7),
        ARMV7 | ARMV6 => (1, 0x28),
        RISCV => (2, 0xf3),
        _ => (2, 0x3e),
    };
    let mut v = vec![0x7f, b'E', b'L', b'F', class, 1, 1, 0];
    v.resize(18, 0);
    v.extend_from_slice(&[machine, 0]);
    v.resize(64, 0);
    v.extend_from_slice(triple.as_bytes());
    v.extend(std::iter::repeat_n(0xab, 8192));
    v
}

/// How to run a shell script: the program, and the PATH it gets.
#[derive(Clone)]
struct Shell {
    name: &'static str,
    argv0: PathBuf,
    path: String,
}

fn shells() -> Vec<Shell> {
    let mut v = vec![Shell {
        name: "sh",
        argv0: "sh".into(),
        path: std::env::var("PATH").unwrap_or_default(),
    }];
    match busybox_path() {
        Some((bb, dir)) => v.push(Shell {
            name: "busybox",
            argv0: bb,
            path: dir.display().to_string(),
        }),
        None => skipped(
            "install.sh under BusyBox",
            "busybox is not installed: apt-get install busybox",
        ),
    }
    v
}

/// BusyBox and a folder holding only its applets (made once per test process); `None`
/// only when BusyBox is not installed.
fn busybox_path() -> Option<(PathBuf, PathBuf)> {
    static DIR: std::sync::OnceLock<Option<(PathBuf, PathBuf)>> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let bb = ["/bin/busybox", "/usr/bin/busybox"]
            .iter()
            .map(PathBuf::from)
            .find(|p| p.exists())?;
        let list = Command::new(&bb)
            .arg("--list")
            .output()
            .expect("run busybox --list");
        let dir = std::env::temp_dir().join(format!("yc-bbpath-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("make the BusyBox applet folder");
        for applet in text(&list.stdout).lines() {
            let _ = std::os::unix::fs::symlink(&bb, dir.join(applet));
        }
        Some((bb, dir))
    })
    .clone()
}

/// A fake source tree: scripts/install.sh, dist/<triple>/yoctoclaw for every triple,
/// dist/SHA256SUMS; and an empty scratch folder.
struct Tree {
    dir: PathBuf,
}

impl Tree {
    fn new(tag: &str, shell: &Shell) -> Tree {
        let dir = std::env::temp_dir().join(format!(
            "yc-inst-{tag}-{}-{}",
            shell.name,
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("scripts")).unwrap();
        std::fs::copy(
            repo().join("scripts/install.sh"),
            dir.join("scripts/install.sh"),
        )
        .unwrap();
        for t in [AARCH64, ARMV7, ARMV6, RISCV, X86] {
            std::fs::create_dir_all(dir.join("dist").join(t)).unwrap();
            std::fs::write(dir.join("dist").join(t).join("yoctoclaw"), fake_elf(t)).unwrap();
        }
        let t = Tree { dir };
        t.sums();
        t
    }
    fn sums(&self) {
        let out = Command::new("sh")
            .arg("-c")
            .arg("sha256sum */yoctoclaw > SHA256SUMS")
            .current_dir(self.dir.join("dist"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    /// TMPDIR of the runs: install.sh must leave it empty.
    fn tmp(&self) -> PathBuf {
        let d = self.dir.join("tmp");
        std::fs::create_dir_all(&d).unwrap();
        d
    }
    fn tmp_is_empty(&self) -> bool {
        std::fs::read_dir(self.tmp()).unwrap().next().is_none()
    }
    fn prefix(&self) -> PathBuf {
        self.dir.join("prefix")
    }
    fn file(&self, rel: &str) -> PathBuf {
        self.dir.join(rel)
    }
    /// `install.sh ARGS` with the machine faked; `extra_path` goes first on PATH.
    fn run(
        &self,
        sh: &Shell,
        machine: &str,
        cpuinfo: Option<&str>,
        args: &[&str],
        extra_path: Option<&Path>,
    ) -> Output {
        self.run_script(
            sh,
            &self.file("scripts/install.sh"),
            machine,
            cpuinfo,
            args,
            extra_path,
        )
    }
    fn run_script(
        &self,
        sh: &Shell,
        script: &Path,
        machine: &str,
        cpuinfo: Option<&str>,
        args: &[&str],
        extra_path: Option<&Path>,
    ) -> Output {
        let mut c = Command::new(&sh.argv0);
        if sh.name == "busybox" {
            c.arg("sh");
        }
        let path = match extra_path {
            Some(p) => format!("{}:{}", p.display(), sh.path),
            None => sh.path.clone(),
        };
        c.arg(script)
            .args(args)
            .env_clear()
            .env("PATH", path)
            .env("HOME", self.dir.join("home"))
            .env("YC_UNAME_M", machine)
            .env("TMPDIR", self.tmp())
            .current_dir(&self.dir)
            .stdin(Stdio::null());
        if let Some(ci) = cpuinfo {
            let f = self.dir.join("cpuinfo");
            std::fs::write(&f, ci).unwrap();
            c.env("YC_CPUINFO", f);
        } else {
            c.env("YC_CPUINFO", self.dir.join("no-cpuinfo"));
        }
        c.output().unwrap()
    }
    /// The names in the prefix folder (none when it does not exist).
    fn prefix_names(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(self.prefix())
            .map(|d| {
                d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::set_permissions(&self.dir, std::fs::Permissions::from_mode(0o755));
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn ok(out: &Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "{what}: exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

fn refused(out: &Output, sentence: &str, what: &str) {
    assert_eq!(out.status.code(), Some(1), "{what}: {}", text(&out.stdout));
    let err = text(&out.stderr);
    assert!(
        err.contains(sentence),
        "{what}: expected {sentence:?} in stderr:\n{err}"
    );
    assert_eq!(err.lines().count(), 1, "{what}: one sentence, got:\n{err}");
}

#[test]
fn each_machine_gets_its_binary() {
    let cases: &[(&str, Option<&str>, &str)] = &[
        ("aarch64", None, AARCH64),
        ("arm64", None, AARCH64),
        ("armv7l", Some(CORTEX_A7), ARMV7),
        ("armv7l", Some(CORTEX_A8), ARMV7),
        ("armv7l", Some(TEGRA2_D16), ARMV7),
        ("armv8l", Some(ARMV8L), ARMV7),
        ("armv6l", Some(PI_ZERO_W), ARMV6),
        ("armv6l", None, ARMV6),
        // An ARMv6 CPU whose kernel says armv7l: its cpuinfo gives it away.
        ("armv7l", Some(PI_ZERO_W), ARMV6),
        ("riscv64", Some(C906), RISCV),
        ("riscv64", Some(RV_NEW), RISCV),
        ("x86_64", None, X86),
    ];
    for sh in shells() {
        for (m, ci, triple) in cases {
            let t = Tree::new("machines", &sh);
            let what = format!("{} {m}", sh.name);
            let p = t.prefix().display().to_string();
            let out = ok(
                &t.run(&sh, m, *ci, &["--prefix", &p, "--no-onboard"], None),
                &what,
            );
            assert!(
                out.contains(&format!("checked the {triple} binary")),
                "{what}: {out}"
            );
            let installed = t.prefix().join("yoctoclaw");
            assert_eq!(
                std::fs::read(&installed).unwrap(),
                fake_elf(triple),
                "{what}"
            );
            assert_eq!(
                std::fs::metadata(&installed).unwrap().permissions().mode() & 0o777,
                0o755,
                "{what}"
            );
            assert_eq!(t.prefix_names(), ["yoctoclaw"], "{what}: no temp file left");
        }
    }
}

#[test]
fn machines_without_a_build_are_refused_with_one_sentence() {
    let cases: &[(&str, Option<&str>, &str)] = &[
        (
            "armv6l",
            Some(ARMV6_NO_VFP),
            "this ARMv6 CPU has no VFP floating-point unit",
        ),
        ("armv5tel", None, ARMV5_SENTENCE),
        (
            "armv7l",
            Some(NO_VFP3),
            "has no VFPv3 or VFPv4 floating-point unit",
        ),
        ("riscv64", Some(RV_IMAC), "lacks part of RV64GC"),
        (
            "mips",
            None,
            "there is no yoctoclaw build for this machine (uname -m: mips)",
        ),
        (
            "i686",
            None,
            "builds exist for aarch64, armv7l, armv6l, riscv64 and x86_64",
        ),
    ];
    for sh in shells() {
        for (m, ci, sentence) in cases {
            let t = Tree::new("refuse", &sh);
            let p = t.prefix().display().to_string();
            let what = format!("{} {m}", sh.name);
            refused(
                &t.run(&sh, m, *ci, &["--prefix", &p], None),
                sentence,
                &what,
            );
            assert!(!t.prefix().exists(), "{what}: nothing is created");
        }
    }
}

#[test]
fn a_bad_checksum_or_a_binary_for_another_cpu_installs_nothing() {
    for sh in shells() {
        let t = Tree::new("badsum", &sh);
        std::fs::create_dir_all(t.prefix()).unwrap();
        std::fs::write(t.prefix().join("yoctoclaw"), "the old version").unwrap();
        let mut bin = fake_elf(AARCH64);
        bin[100] ^= 1;
        std::fs::write(t.file("dist").join(AARCH64).join("yoctoclaw"), &bin).unwrap();
        let p = t.prefix().display().to_string();
        refused(
            &t.run(&sh, "aarch64", None, &["--prefix", &p], None),
            "does not match SHA256SUMS: the file is damaged or altered; fetch it again (nothing was installed)",
            sh.name,
        );
        assert_eq!(
            std::fs::read(t.prefix().join("yoctoclaw")).unwrap(),
            b"the old version"
        );
        assert_eq!(t.prefix_names(), ["yoctoclaw"]);

        // The aarch64 binary where the armv7 one belongs, checksum and all.
        let t = Tree::new("wrongcpu", &sh);
        std::fs::write(
            t.file("dist").join(ARMV7).join("yoctoclaw"),
            fake_elf(AARCH64),
        )
        .unwrap();
        t.sums();
        let p = t.prefix().display().to_string();
        refused(
            &t.run(&sh, "armv7l", Some(CORTEX_A7), &["--prefix", &p], None),
            "is built for another CPU than this armv7l machine: use the build for armv7-unknown-linux-musleabihf",
            sh.name,
        );
        // Not a program at all.
        std::fs::write(
            t.file("dist").join(ARMV7).join("yoctoclaw"),
            "#!/bin/sh\necho hi\n",
        )
        .unwrap();
        t.sums();
        refused(
            &t.run(&sh, "armv7l", Some(CORTEX_A7), &["--prefix", &p], None),
            "is not a Linux program (no ELF header)",
            sh.name,
        );
        // No SHA256SUMS to check against.
        std::fs::remove_file(t.file("dist/SHA256SUMS")).unwrap();
        refused(
            &t.run(&sh, "aarch64", None, &["--prefix", &p], None),
            "no SHA256SUMS beside",
            sh.name,
        );
        assert!(!t.prefix().exists());
    }
}

#[test]
fn a_folder_it_cannot_write_says_so() {
    for sh in shells() {
        let t = Tree::new("readonly", &sh);
        std::fs::create_dir_all(t.prefix()).unwrap();
        let p = t.prefix().display().to_string();
        let out = if rustix::process::geteuid().is_root() {
            // Root writes anywhere: run as nobody, with a root-owned prefix.
            let Some(setpriv) = ["/usr/bin/setpriv", "/bin/setpriv"]
                .into_iter()
                .find(|p| Path::new(p).exists())
            else {
                skipped(
                    "read-only prefix as root",
                    "setpriv (util-linux) is missing to drop to nobody",
                );
                return;
            };
            for d in [&t.dir, &t.file("dist"), &t.file("scripts")] {
                std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
            }
            let mut c = Command::new(setpriv);
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                .arg(&sh.argv0);
            if sh.name == "busybox" {
                c.arg("sh");
            }
            c.arg(t.file("scripts/install.sh"))
                .args(["--prefix", &p, "--no-onboard"])
                .env_clear()
                .env("PATH", &sh.path)
                .env("HOME", "/nonexistent")
                .env("YC_UNAME_M", "aarch64")
                .current_dir("/")
                .output()
                .unwrap()
        } else {
            std::fs::set_permissions(t.prefix(), std::fs::Permissions::from_mode(0o555)).unwrap();
            t.run(
                &sh,
                "aarch64",
                None,
                &["--prefix", &p, "--no-onboard"],
                None,
            )
        };
        refused(
            &out,
            &format!(
                "cannot write to {p}: run as root (sudo sh install.sh) or choose a folder with --prefix"
            ),
            sh.name,
        );
        let _ = std::fs::set_permissions(t.prefix(), std::fs::Permissions::from_mode(0o755));
        assert!(t.prefix_names().is_empty());
    }
}

#[test]
fn a_full_disk_leaves_nothing_half_installed() {
    for sh in shells() {
        let t = Tree::new("full", &sh);
        let fake = t.file("fakebin");
        std::fs::create_dir_all(&fake).unwrap();
        let script = |name: &str, body: &str| {
            let p = fake.join(name);
            std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        };
        std::fs::create_dir_all(t.prefix()).unwrap();
        std::fs::write(t.prefix().join("yoctoclaw"), "the old version").unwrap();
        let p = t.prefix().display().to_string();
        // df says 3 KiB are free.
        script(
            "df",
            "echo 'Filesystem 1024-blocks Used Available Capacity Mounted on'; echo '/dev/mmcblk0p2 100 97 3 97% /'",
        );
        refused(
            &t.run(
                &sh,
                "aarch64",
                None,
                &["--prefix", &p, "--no-onboard"],
                Some(&fake),
            ),
            &format!(
                "not enough space in {p}: 3 KiB free, 9 KiB needed; free some space and run this again (nothing was installed)"
            ),
            sh.name,
        );
        assert_eq!(t.prefix_names(), ["yoctoclaw"]);
        // df has room but the copy runs out of space half way.
        std::fs::remove_file(fake.join("df")).unwrap();
        script(
            "cp",
            "head -c 1000 \"$1\" > \"$2\"; echo 'cp: write error: No space left on device' >&2; exit 1",
        );
        refused(
            &t.run(
                &sh,
                "aarch64",
                None,
                &["--prefix", &p, "--no-onboard"],
                Some(&fake),
            ),
            &format!("could not copy the binary to {p} (is the disk full?): nothing was installed"),
            sh.name,
        );
        assert_eq!(
            t.prefix_names(),
            ["yoctoclaw"],
            "the temporary file is removed"
        );
        assert_eq!(
            std::fs::read(t.prefix().join("yoctoclaw")).unwrap(),
            b"the old version"
        );
        // A copy that "succeeds" but is short (a filesystem that lies): caught by the checksum.
        script("cp", "head -c 1000 \"$1\" > \"$2\"");
        refused(
            &t.run(
                &sh,
                "aarch64",
                None,
                &["--prefix", &p, "--no-onboard"],
                Some(&fake),
            ),
            "could not copy the binary to",
            sh.name,
        );
        assert_eq!(t.prefix_names(), ["yoctoclaw"]);
    }
}

#[test]
fn dry_run_changes_nothing() {
    for sh in shells() {
        let t = Tree::new("dry", &sh);
        let p = t.prefix().display().to_string();
        let out = ok(
            &t.run(
                &sh,
                "riscv64",
                Some(C906),
                &[
                    "--prefix",
                    &p,
                    "--dry-run",
                    "--config",
                    "scripts/install.sh",
                ],
                None,
            ),
            sh.name,
        );
        assert!(
            out.contains(&format!(
                "would install {}",
                t.file("dist").join(RISCV).join("yoctoclaw").display()
            )),
            "{out}"
        );
        assert!(
            out.contains(&format!("would run: {p}/yoctoclaw onboard")),
            "{out}"
        );
        assert!(!t.prefix().exists());
        assert!(!t.file("home").exists());
    }
}

/// Run package.sh over a fake dist with the aarch64 and riscv64 binaries.
fn package(t: &Tree, epoch: &str) -> (PathBuf, String) {
    let dist = t.file("pkgdist");
    let _ = std::fs::remove_dir_all(&dist);
    for tr in [AARCH64, RISCV] {
        std::fs::create_dir_all(dist.join(tr)).unwrap();
        std::fs::write(dist.join(tr).join("yoctoclaw"), fake_elf(tr)).unwrap();
    }
    std::fs::write(
        dist.join(AARCH64).join("config-aarch64-generic.json"),
        "{\"log_level\":\"info\"}\n",
    )
    .unwrap();
    let out = Command::new("bash")
        .arg(repo().join("scripts/package.sh"))
        .env("BOARDS_DIST", &dist)
        .env("SOURCE_DATE_EPOCH", epoch)
        .output()
        .unwrap();
    assert!(out.status.success(), "package.sh: {}", text(&out.stderr));
    (dist, text(&out.stderr))
}

fn version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}

#[test]
fn package_makes_per_board_archives_that_install_sh_checks_and_installs() {
    let sh0 = shells().remove(0);
    let t = Tree::new("package", &sh0);
    let (dist, log) = package(&t, "1767225600");
    let v = version();
    // armv7 was not built: named, with the command that builds it.
    assert!(
        log.contains("missing: armv7-generic: no ")
            && log.contains("scripts/build-boards.sh armv7-generic"),
        "{log}"
    );
    assert!(
        log.contains("milkv-duo-64mb: no ")
            && log.contains("writing it from boards/milkv-duo-64mb.conf"),
        "{log}"
    );
    let names: Vec<String> = {
        let mut v: Vec<String> = std::fs::read_dir(&dist)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".tar.gz"))
            .collect();
        v.sort();
        v
    };
    assert_eq!(
        names,
        [
            format!("yoctoclaw-{v}-aarch64-generic.tar.gz"),
            format!("yoctoclaw-{v}-licheerv-nano.tar.gz"),
            format!("yoctoclaw-{v}-milkv-duo-64mb.tar.gz"),
        ]
    );
    let sums = std::fs::read_to_string(dist.join("SHA256SUMS")).unwrap();
    for n in &names {
        assert!(sums.contains(&format!("  {n}\n")), "{sums}");
    }
    assert!(
        sums.contains(&format!("  {AARCH64}/yoctoclaw\n"))
            && sums.contains(&format!("  {RISCV}/yoctoclaw\n"))
    );
    let check = Command::new("sha256sum")
        .args(["-c", "SHA256SUMS"])
        .current_dir(&dist)
        .output()
        .unwrap();
    assert!(check.status.success(), "{}", text(&check.stdout));

    // What one archive holds.
    let list = Command::new("tar")
        .arg("-tzf")
        .arg(dist.join(&names[2]))
        .output()
        .unwrap();
    let top = format!("yoctoclaw-{v}-milkv-duo-64mb/");
    let mut files: Vec<String> = text(&list.stdout)
        .lines()
        .map(|l| l.trim_start_matches(&top).to_string())
        .filter(|l| !l.is_empty())
        .collect();
    files.sort();
    assert_eq!(
        files,
        [
            "README.txt",
            "SHA256SUMS",
            "board.conf",
            "config-milkv-duo-64mb.json",
            "install.sh",
            "yoctoclaw",
            "yoctoclaw.service"
        ]
    );

    // Same commit, same bytes.
    let first = std::fs::read(dist.join(&names[0])).unwrap();
    package(&t, "1767225600");
    assert_eq!(
        first,
        std::fs::read(dist.join(&names[0])).unwrap(),
        "archives are reproducible"
    );

    for sh in shells() {
        let what = sh.name;
        let p = t.prefix().display().to_string();
        let _ = std::fs::remove_dir_all(t.prefix());
        let archive = dist.join(&names[0]).display().to_string();
        // By path, on the right machine: checked twice (the archive, then its binary).
        let out = ok(
            &t.run(
                &sh,
                "aarch64",
                None,
                &["--prefix", &p, "--no-onboard", &archive],
                None,
            ),
            what,
        );
        assert!(out.contains(&format!("checked {}", names[0])), "{out}");
        assert_eq!(
            std::fs::read(t.prefix().join("yoctoclaw")).unwrap(),
            fake_elf(AARCH64)
        );
        // On the wrong machine.
        let _ = std::fs::remove_dir_all(t.prefix());
        refused(
            &t.run(
                &sh,
                "riscv64",
                Some(C906),
                &["--prefix", &p, &archive],
                None,
            ),
            "this archive is for 64-bit ARM, 512 MB+: Raspberry Pi Zero 2 W, Pi 3/4/5, Orange Pi Zero 3 (aarch64-unknown-linux-musl), but this machine is riscv64 (riscv64gc-unknown-linux-musl): download the archive for riscv64gc-unknown-linux-musl instead",
            what,
        );
        assert!(!t.prefix().exists());
        // Unpacked, then `sh install.sh` inside it, as README.txt says.
        let unpack = t.file("unpacked");
        let _ = std::fs::remove_dir_all(&unpack);
        std::fs::create_dir_all(&unpack).unwrap();
        let tar = Command::new("tar")
            .arg("-xzf")
            .arg(dist.join(&names[1]))
            .current_dir(&unpack)
            .output()
            .unwrap();
        assert!(tar.status.success());
        let script = unpack.join(format!("yoctoclaw-{v}-licheerv-nano/install.sh"));
        ok(
            &t.run_script(
                &sh,
                &script,
                "riscv64",
                Some(RV_NEW),
                &["--prefix", &p, "--no-onboard"],
                None,
            ),
            what,
        );
        assert_eq!(
            std::fs::read(t.prefix().join("yoctoclaw")).unwrap(),
            fake_elf(RISCV)
        );
        // A damaged archive, next to the SHA256SUMS that covers it.
        let bad = t.file("pkgdist-bad");
        let _ = std::fs::remove_dir_all(&bad);
        std::fs::create_dir_all(&bad).unwrap();
        let mut bytes = std::fs::read(dist.join(&names[0])).unwrap();
        let n = bytes.len() / 2;
        bytes[n] ^= 0x55;
        std::fs::write(bad.join(&names[0]), bytes).unwrap();
        std::fs::copy(dist.join("SHA256SUMS"), bad.join("SHA256SUMS")).unwrap();
        let _ = std::fs::remove_dir_all(t.prefix());
        refused(
            &t.run(
                &sh,
                "aarch64",
                None,
                &["--prefix", &p, &bad.join(&names[0]).display().to_string()],
                None,
            ),
            "does not match SHA256SUMS: the download is damaged or altered; fetch it again",
            what,
        );
        assert!(!t.prefix().exists());
        assert!(
            t.tmp_is_empty(),
            "{what}: install.sh left a temporary folder"
        );
    }
}

/// Serve the files of `dir` over HTTP on 127.0.0.1 until dropped.
struct Server {
    port: u16,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Server {
    fn start(dir: PathBuf) -> Server {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let s2 = stop.clone();
        std::thread::spawn(move || {
            for conn in l.incoming() {
                if s2.load(std::sync::atomic::Ordering::SeqCst) {
                    break;
                }
                let Ok(mut conn) = conn else { continue };
                let mut line = String::new();
                let mut r = BufReader::new(conn.try_clone().unwrap());
                if r.read_line(&mut line).is_err() {
                    continue;
                }
                loop {
                    let mut h = String::new();
                    if r.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" || h == "\n" {
                        break;
                    }
                }
                let path = line
                    .split_whitespace()
                    .nth(1)
                    .unwrap_or("/")
                    .trim_start_matches('/');
                let resp = match std::fs::read(dir.join(path))
                    .ok()
                    .filter(|_| !path.contains(".."))
                {
                    Some(body) => {
                        let mut r = format!(
                            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                            body.len()
                        )
                        .into_bytes();
                        r.extend(body);
                        r
                    }
                    None => {
                        b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                            .to_vec()
                    }
                };
                let _ = conn.write_all(&resp);
            }
        });
        Server { port, stop }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        let _ = std::net::TcpStream::connect(("127.0.0.1", self.port));
    }
}

#[test]
fn a_url_is_fetched_and_checked() {
    let sh0 = shells().remove(0);
    let t = Tree::new("url", &sh0);
    let (dist, _) = package(&t, "1767225600");
    let server = Server::start(dist.clone());
    let v = version();
    for sh in shells() {
        // BusyBox brings wget; the host shell uses curl or wget, whichever is there.
        let host_has = |c: &str| {
            Command::new("sh")
                .arg("-c")
                .arg(format!("command -v {c}"))
                .output()
                .is_ok_and(|o| o.status.success())
        };
        if sh.name == "sh" && !host_has("curl") && !host_has("wget") {
            skipped("install.sh from a URL under sh", "neither curl nor wget");
            continue;
        }
        let p = t.prefix().display().to_string();
        let _ = std::fs::remove_dir_all(t.prefix());
        let url = format!(
            "http://127.0.0.1:{}/yoctoclaw-{v}-aarch64-generic.tar.gz",
            server.port
        );
        let out = ok(
            &t.run(
                &sh,
                "arm64",
                None,
                &["--prefix", &p, "--no-onboard", &url],
                None,
            ),
            sh.name,
        );
        assert!(
            out.contains("downloading ")
                && out.contains(&format!("checked yoctoclaw-{v}-aarch64-generic.tar.gz")),
            "{out}"
        );
        assert_eq!(
            std::fs::read(t.prefix().join("yoctoclaw")).unwrap(),
            fake_elf(AARCH64)
        );
        // A binary by URL, checked against the SHA256SUMS one folder up (dist's layout).
        let _ = std::fs::remove_dir_all(t.prefix());
        let url = format!("http://127.0.0.1:{}/{RISCV}/yoctoclaw", server.port);
        let out = t.run(
            &sh,
            "riscv64",
            Some(C906),
            &["--prefix", &p, "--no-onboard", &url],
            None,
        );
        ok(&out, sh.name);
        assert_eq!(
            std::fs::read(t.prefix().join("yoctoclaw")).unwrap(),
            fake_elf(RISCV)
        );
        // Nothing at that address.
        let url = format!("http://127.0.0.1:{}/nothing.tar.gz", server.port);
        refused(
            &t.run(&sh, "aarch64", None, &["--prefix", &p, &url], None),
            "could not download",
            sh.name,
        );
    }
    assert!(t.tmp_is_empty(), "install.sh left a temporary folder");
}

#[test]
fn onboard_runs_after_install_with_the_board_config() {
    // The host's own binary stands in for the board's: it has to run here.
    let machine = match std::env::consts::ARCH {
        "x86_64" => "x86_64",
        "aarch64" => "aarch64",
        "riscv64" => "riscv64",
        other => {
            skipped(
                "install.sh onboard",
                &format!("install.sh has no machine for this host's {other}"),
            );
            return;
        }
    };
    let triple = match machine {
        "x86_64" => X86,
        "aarch64" => AARCH64,
        _ => RISCV,
    };
    for sh in shells() {
        let t = Tree::new("onboard", &sh);
        std::fs::copy(
            support::bin(),
            t.file("dist").join(triple).join("yoctoclaw"),
        )
        .unwrap();
        t.sums();
        let cfg = t.file("board.json");
        std::fs::write(
            &cfg,
            "{\"log_level\":\"warn\",\"agent\":{\"max_sessions\":4}}\n",
        )
        .unwrap();
        let p = t.prefix().display().to_string();
        let out = ok(
            &t.run(
                &sh,
                machine,
                Some(C906),
                &["--prefix", &p, "--config", &cfg.display().to_string()],
                None,
            ),
            sh.name,
        );
        assert!(
            out.contains("installed ") && out.contains("yoctoclaw service install"),
            "{out}"
        );
        let home = t.file("home/.yoctoclaw");
        assert_eq!(
            std::fs::read_to_string(home.join("config.json")).unwrap(),
            std::fs::read_to_string(&cfg).unwrap(),
            "onboard keeps the board's config"
        );
        assert_eq!(
            std::fs::metadata(home.join("config.json"))
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o600
        );
        assert!(
            home.join("workspace/SOUL.md").exists(),
            "onboard made the workspace"
        );
        // Again: the binary is replaced in place, the home is left as it is.
        ok(
            &t.run(&sh, machine, Some(C906), &["--prefix", &p], None),
            sh.name,
        );
        assert_eq!(t.prefix_names(), ["yoctoclaw"]);
    }
}

#[test]
fn install_sh_is_posix_and_says_how_to_use_it() {
    for sh in shells() {
        let t = Tree::new("help", &sh);
        let out = ok(&t.run(&sh, "aarch64", None, &["--help"], None), sh.name);
        assert!(
            out.contains("sh install.sh [options] [SOURCE]") && out.contains("YC_UNAME_M"),
            "{out}"
        );
        let out = t.run(&sh, "aarch64", None, &["--bogus"], None);
        refused(&out, "unknown option --bogus (see --help)", sh.name);
    }
    if let Ok(o) = Command::new("shellcheck")
        .args(["-s", "sh", "-e", "SC2015"])
        .arg(repo().join("scripts/install.sh"))
        .output()
    {
        assert!(o.status.success(), "shellcheck: {}", text(&o.stdout));
    } else {
        skipped(
            "shellcheck of install.sh",
            "shellcheck is not installed: apt-get install shellcheck",
        );
    }
    let mut f = std::fs::File::open(repo().join("scripts/install.sh")).unwrap();
    let mut head = String::new();
    f.read_to_string(&mut head).unwrap();
    assert!(head.starts_with("#!/bin/sh\n"));
    for l in head.lines().filter(|l| !l.trim_start().starts_with('#')) {
        let l = l.replace("[[:space:]]", "");
        assert!(
            !l.contains("[[")
                && !l.contains("local ")
                && !l.contains("$'")
                && !l.contains("function "),
            "a bashism in install.sh: {l}"
        );
    }
}
