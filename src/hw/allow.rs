//! `hardware.allow`: which devices, lines and addresses the hardware tools may touch, and
//! whether they may write.
//!
//! An entry is `"DEVICE[:WHICH] MODE"`:
//! - DEVICE: a device node, with or without `/dev/` (`gpiochip0` is `/dev/gpiochip0`);
//!   symlinks such as `/dev/serial/by-id/…` are allowed and resolved when a request is
//!   matched, so an entry and a request naming the same node by different paths match.
//! - WHICH (GPIO chips and I2C buses only): line offsets or 7-bit addresses, as a comma
//!   list of numbers or ranges, decimal or `0x` hex: `gpiochip0:17,27`, `i2c-1:0x48`,
//!   `i2c-1:0x40-0x4f`. Without it the entry covers every line or address.
//! - MODE: `read` (inputs, reads, scans) or `write` (also outputs and writes).
//!
//! A request is [`Decision::Allowed`] when an entry covers it with enough mode,
//! [`Decision::NeedsApproval`] when only `read` entries cover a write (the user is asked),
//! and [`Decision::Refused`] when nothing covers it. Paths with `.` or `..` components,
//! and paths that resolve outside `/dev/`, are refused: the list names device nodes only.
//!
//! # Bounds
//! At most [`MAX_ALLOW_ENTRIES`] entries, each at most [`MAX_ENTRY_BYTES`] long with at
//! most [`MAX_WHICH_RANGES`] ranges.
//!
//! # Threads
//! Any thread: parsing at config load (main thread); matching on the executor thread when a
//! hardware tool plans a call.
//!
//! # Blocking
//! Parsing is pure. Matching resolves symlinks through the resolver it is given
//! ([`canonical`] in production: `realpath` on `/dev`, quick but a filesystem call); the
//! tools call it on a worker or accept its cost as they do for file paths.

use std::fmt;

/// Most entries in `hardware.allow`.
pub const MAX_ALLOW_ENTRIES: usize = 64;
/// Longest entry accepted.
pub const MAX_ENTRY_BYTES: usize = 256;
/// Most comma-separated numbers or ranges in one WHICH.
pub const MAX_WHICH_RANGES: usize = 64;
/// Largest GPIO line offset accepted in WHICH (no chip has this many lines).
pub const MAX_GPIO_OFFSET: u32 = 65_535;
/// Largest 7-bit I2C address.
pub const MAX_I2C_ADDRESS: u32 = 0x7f;

/// What kind of device a node is, by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Gpio,
    I2c,
    Spi,
    /// Anything else: a serial port (`ttyUSB0`, `ttyAMA0`, `ttyS0`, …).
    Serial,
}

impl Kind {
    /// The kind of a device node, from the last component of its path.
    pub fn of(path: &str) -> Kind {
        let name = path.rsplit('/').next().unwrap_or(path);
        let numbered = |prefix: &str| {
            name.strip_prefix(prefix)
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        };
        if numbered("gpiochip") {
            Kind::Gpio
        } else if numbered("i2c-") {
            Kind::I2c
        } else if name.starts_with("spidev") {
            Kind::Spi
        } else {
            Kind::Serial
        }
    }
}

/// One parsed entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The device path as written, normalised (`/dev/` added); not resolved.
    pub device: String,
    /// Inclusive ranges of lines or addresses; empty means all of them.
    pub which: Vec<(u32, u32)>,
    /// `write` mode.
    pub write: bool,
}

/// The parsed `hardware.allow` list.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Allowlist {
    entries: Vec<Entry>,
}

/// What may happen to a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Allowed,
    /// A write covered only by `read` entries: ask the user first.
    NeedsApproval,
    /// Not listed.
    Refused,
}

/// A malformed entry or device name, with the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowError {
    pub entry: String,
    pub reason: &'static str,
}

impl fmt::Display for AllowError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{}\": {}", self.entry, self.reason)
    }
}

impl std::error::Error for AllowError {}

fn err(entry: &str, reason: &'static str) -> AllowError {
    let mut shown: String = entry.chars().take(80).collect();
    if shown.len() < entry.len() {
        shown.push('…');
    }
    AllowError {
        entry: shown,
        reason,
    }
}

/// `gpiochip0` → `/dev/gpiochip0`; refuses empty names, `.`/`..` components, empty
/// components, control characters and whitespace, and absolute paths outside `/dev/`.
pub fn normalize(name: &str) -> Result<String, AllowError> {
    let name = name.trim();
    if name.is_empty() {
        return Err(err(name, "empty device name"));
    }
    if name.len() > MAX_ENTRY_BYTES {
        return Err(err(name, "device name too long"));
    }
    if name.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(err(name, "device name has spaces or control characters"));
    }
    let path = if name.starts_with('/') {
        name.to_string()
    } else {
        format!("/dev/{name}")
    };
    let Some(rest) = path.strip_prefix("/dev/") else {
        return Err(err(name, "device must be under /dev/"));
    };
    if rest
        .split('/')
        .any(|c| c.is_empty() || c == "." || c == "..")
    {
        return Err(err(name, "device path must not have empty, . or .. parts"));
    }
    Ok(path)
}

/// The real node behind `path` (symlinks resolved), which must still be under `/dev/`;
/// `None` when it does not exist or resolves elsewhere.
pub fn canonical(path: &str) -> Option<String> {
    let real = std::fs::canonicalize(path).ok()?;
    let real = real.to_str()?;
    real.starts_with("/dev/").then(|| real.to_string())
}

/// `72` or `0x48` (also used by the tools for numeric arguments given as strings).
pub fn parse_num(s: &str) -> Option<u32> {
    let s = s.trim();
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) if !h.is_empty() => u32::from_str_radix(h, 16).ok(),
        Some(_) => None,
        None if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => s.parse().ok(),
        None => None,
    }
}

fn parse_which(entry: &str, which: &str, max: u32) -> Result<Vec<(u32, u32)>, AllowError> {
    let mut out = Vec::new();
    for part in which.split(',') {
        if out.len() >= MAX_WHICH_RANGES {
            return Err(err(entry, "too many lines or addresses"));
        }
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (parse_num(a), parse_num(b)),
            None => (parse_num(part), parse_num(part)),
        };
        let (Some(a), Some(b)) = (a, b) else {
            return Err(err(
                entry,
                "lines or addresses must be numbers or ranges like 17,27 or 0x40-0x4f",
            ));
        };
        if a > b || b > max {
            return Err(err(entry, "line or address out of range"));
        }
        out.push((a, b));
    }
    Ok(out)
}

/// Parse one entry.
pub fn parse_entry(text: &str) -> Result<Entry, AllowError> {
    let text = text.trim();
    if text.len() > MAX_ENTRY_BYTES {
        return Err(err(text, "entry too long"));
    }
    let mut words = text.split_whitespace();
    let (Some(spec), Some(mode), None) = (words.next(), words.next(), words.next()) else {
        return Err(err(text, "expected \"DEVICE[:WHICH] read\" or \"… write\""));
    };
    let write = match mode {
        "read" => false,
        "write" => true,
        _ => return Err(err(text, "mode must be read or write")),
    };
    // WHICH only follows GPIO chips and I2C buses; other paths may contain ':'
    // (`/dev/serial/by-path/…:1.0-port0`).
    let (device, which) = match spec.rsplit_once(':') {
        Some((d, w)) if matches!(Kind::of(d), Kind::Gpio | Kind::I2c) => (d, Some(w)),
        _ => (spec, None),
    };
    let device = normalize(device).map_err(|e| err(text, e.reason))?;
    let which = match which {
        None => Vec::new(),
        Some(w) => {
            let max = match Kind::of(&device) {
                Kind::I2c => MAX_I2C_ADDRESS,
                _ => MAX_GPIO_OFFSET,
            };
            parse_which(text, w, max)?
        }
    };
    Ok(Entry {
        device,
        which,
        write,
    })
}

impl Allowlist {
    /// Parse every entry; the first malformed one is the error.
    pub fn parse<S: AsRef<str>>(entries: &[S]) -> Result<Allowlist, AllowError> {
        if entries.len() > MAX_ALLOW_ENTRIES {
            return Err(err("(the list)", "more than 64 entries"));
        }
        let entries = entries
            .iter()
            .map(|e| parse_entry(e.as_ref()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Allowlist { entries })
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The entries that name `device` (a resolved path), with their own paths resolved by
    /// `resolve` (an entry whose node is missing is compared as written).
    pub fn for_device<'a>(
        &'a self,
        device: &str,
        resolve: &dyn Fn(&str) -> Option<String>,
    ) -> DeviceRules<'a> {
        let rules = self
            .entries
            .iter()
            .filter(|e| e.device == device || resolve(&e.device).as_deref() == Some(device))
            .collect();
        DeviceRules { rules }
    }

    /// Decide one request: `device` resolved, `which` the line or address (None for
    /// devices without one), `write` whether it changes anything.
    pub fn decide(
        &self,
        device: &str,
        which: Option<u32>,
        write: bool,
        resolve: &dyn Fn(&str) -> Option<String>,
    ) -> Decision {
        self.for_device(device, resolve).decide(which, write)
    }
}

/// The entries of one device, to decide many lines or addresses (an I2C scan) at once.
#[derive(Debug)]
pub struct DeviceRules<'a> {
    rules: Vec<&'a Entry>,
}

impl DeviceRules<'_> {
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    pub fn decide(&self, which: Option<u32>, write: bool) -> Decision {
        let mut covered = false;
        for e in &self.rules {
            let hit = e.which.is_empty()
                || which.is_some_and(|w| e.which.iter().any(|&(a, b)| (a..=b).contains(&w)));
            if hit {
                if e.write || !write {
                    return Decision::Allowed;
                }
                covered = true;
            }
        }
        if covered {
            Decision::NeedsApproval
        } else {
            Decision::Refused
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_links(_: &str) -> Option<String> {
        None
    }

    /// Entry text, device, ranges, write.
    type EntryCase<'a> = (&'a str, &'a str, &'a [(u32, u32)], bool);

    #[test]
    fn entries_parse_with_and_without_dev_and_which() {
        let cases: &[EntryCase] = &[
            (
                "gpiochip0:17,27 write",
                "/dev/gpiochip0",
                &[(17, 17), (27, 27)],
                true,
            ),
            ("/dev/gpiochip0 read", "/dev/gpiochip0", &[], false),
            ("i2c-1:0x48 read", "/dev/i2c-1", &[(0x48, 0x48)], false),
            (
                "i2c-1:0x40-0x4f,0x76 write",
                "/dev/i2c-1",
                &[(0x40, 0x4f), (0x76, 0x76)],
                true,
            ),
            ("gpiochip4:5-7 read", "/dev/gpiochip4", &[(5, 7)], false),
            ("/dev/spidev0.0 write", "/dev/spidev0.0", &[], true),
            ("spidev1.2 read", "/dev/spidev1.2", &[], false),
            ("/dev/ttyUSB0 write", "/dev/ttyUSB0", &[], true),
            (
                "/dev/serial/by-path/platform-3f980000.usb-usb-0:1.3:1.0-port0 write",
                "/dev/serial/by-path/platform-3f980000.usb-usb-0:1.3:1.0-port0",
                &[],
                true,
            ),
            ("  ttyAMA0   read  ", "/dev/ttyAMA0", &[], false),
        ];
        for (text, device, which, write) in cases {
            let e = parse_entry(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(e.device, *device, "{text}");
            assert_eq!(e.which, *which, "{text}");
            assert_eq!(e.write, *write, "{text}");
        }
    }

    #[test]
    fn malformed_entries_are_errors_naming_the_entry() {
        let cases: &[(&str, &str)] = &[
            ("gpiochip0", "expected"),
            ("gpiochip0 rw", "mode must be"),
            ("gpiochip0 read write", "expected"),
            ("", "expected"),
            ("gpiochip0:x read", "numbers or ranges"),
            ("gpiochip0: read", "numbers or ranges"),
            ("gpiochip0:5-3 read", "out of range"),
            ("i2c-1:0x80 read", "out of range"),
            ("i2c-1:0x48,,0x49 read", "numbers or ranges"),
            ("gpiochip0:0x read", "numbers or ranges"),
            ("/etc/passwd read", "under /dev/"),
            ("/dev/../etc/passwd write", ". or .."),
            ("../etc/shadow read", ". or .."),
            ("/dev/./ttyS0 read", ". or .."),
            ("/dev//ttyS0 read", ". or .."),
            ("/dev/ read", ". or .."),
        ];
        for (text, words) in cases {
            let e = parse_entry(text).expect_err(text);
            assert!(e.reason.contains(words), "{text}: {e}");
            assert_eq!(e.entry, text.trim(), "{text}");
        }
        let many: Vec<String> = (0..=MAX_ALLOW_ENTRIES)
            .map(|i| format!("ttyS{i} read"))
            .collect();
        assert!(Allowlist::parse(&many).is_err());
        let long = format!("gpiochip0:{} read", "1,".repeat(MAX_WHICH_RANGES) + "1");
        assert!(parse_entry(&long).is_err());
        let e = Allowlist::parse(&["gpiochip0 read", "i2c-1:zz write"]).unwrap_err();
        assert_eq!(e.entry, "i2c-1:zz write");
    }

    #[test]
    fn decisions_follow_the_most_permissive_covering_entry() {
        let list = Allowlist::parse(&[
            "gpiochip0:17,27 write",
            "gpiochip0 read",
            "i2c-1:0x48 read",
            "i2c-1:0x40-0x43 write",
            "/dev/spidev0.0 write",
            "ttyUSB0 read",
        ])
        .unwrap();
        use Decision::*;
        let cases: &[(&str, Option<u32>, bool, Decision)] = &[
            ("/dev/gpiochip0", Some(17), true, Allowed),
            ("/dev/gpiochip0", Some(27), false, Allowed),
            ("/dev/gpiochip0", Some(5), false, Allowed),
            ("/dev/gpiochip0", Some(5), true, NeedsApproval),
            ("/dev/gpiochip1", Some(17), false, Refused),
            ("/dev/i2c-1", Some(0x48), false, Allowed),
            ("/dev/i2c-1", Some(0x48), true, NeedsApproval),
            ("/dev/i2c-1", Some(0x42), true, Allowed),
            ("/dev/i2c-1", Some(0x44), false, Refused),
            ("/dev/i2c-1", None, false, Refused),
            ("/dev/i2c-0", Some(0x48), false, Refused),
            ("/dev/spidev0.0", None, true, Allowed),
            ("/dev/spidev0.1", None, true, Refused),
            ("/dev/ttyUSB0", None, false, Allowed),
            ("/dev/ttyUSB0", None, true, NeedsApproval),
            ("/dev/ttyUSB1", None, false, Refused),
        ];
        for (dev, which, write, want) in cases {
            assert_eq!(
                list.decide(dev, *which, *write, &no_links),
                *want,
                "{dev} {which:?} write={write}"
            );
        }
        assert_eq!(
            Allowlist::default().decide("/dev/gpiochip0", Some(1), false, &no_links),
            Refused
        );
    }

    #[test]
    fn symlinked_entries_match_the_node_they_resolve_to() {
        let list = Allowlist::parse(&["/dev/serial/by-id/usb-FTDI_X-if00-port0 write"]).unwrap();
        let resolve = |p: &str| {
            (p == "/dev/serial/by-id/usb-FTDI_X-if00-port0").then(|| "/dev/ttyUSB0".to_string())
        };
        assert_eq!(
            list.decide("/dev/ttyUSB0", None, true, &resolve),
            Decision::Allowed
        );
        assert_eq!(
            list.decide("/dev/ttyUSB1", None, true, &resolve),
            Decision::Refused
        );
        // Unplugged: the entry is compared as written.
        assert_eq!(
            list.decide("/dev/ttyUSB0", None, true, &no_links),
            Decision::Refused
        );
    }

    #[test]
    fn names_normalise_and_path_tricks_are_refused() {
        assert_eq!(normalize("gpiochip0").unwrap(), "/dev/gpiochip0");
        assert_eq!(normalize("/dev/i2c-1").unwrap(), "/dev/i2c-1");
        assert_eq!(normalize(" i2c-1 ").unwrap(), "/dev/i2c-1");
        for bad in [
            "",
            "../etc/passwd",
            "/dev/../etc/passwd",
            "/etc/passwd",
            "gpio chip",
            "tty\0S0",
            "/dev/a/./b",
            "/devx/ttyS0",
        ] {
            assert!(normalize(bad).is_err(), "{bad:?}");
        }
        // A resolved path outside /dev/ is not a device.
        assert_eq!(canonical("/proc/self/root/etc/hostname"), None);
        assert_eq!(canonical("/dev/yoctoclaw-missing"), None);
        assert_eq!(canonical("/dev/null").as_deref(), Some("/dev/null"));
    }

    #[test]
    fn kinds_come_from_the_node_name() {
        assert_eq!(Kind::of("/dev/gpiochip0"), Kind::Gpio);
        assert_eq!(Kind::of("/dev/i2c-10"), Kind::I2c);
        assert_eq!(Kind::of("/dev/spidev0.1"), Kind::Spi);
        assert_eq!(Kind::of("/dev/ttyUSB0"), Kind::Serial);
        assert_eq!(Kind::of("/dev/gpiochipX"), Kind::Serial);
        assert_eq!(Kind::of("/dev/i2c-"), Kind::Serial);
    }
}
