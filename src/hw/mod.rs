//! The device layer of the hardware tools: GPIO lines, I2C and SPI buses and serial ports,
//! through the kernel's character devices, and the `hardware.allow` list that says which
//! of them the assistant may touch.
//!
//! Why here: the tools (`tools::hardware`) need a few ioctls and a clear sentence for each
//! failure; keeping the kernel structures, ioctl numbers and errno mapping in one low
//! module (it imports nothing of ours but `limits` and `security`) lets them be checked
//! against the kernel headers on their own: the structures' layouts and the request
//! numbers are `const` assertions, evaluated when the code compiles, for every target.
//!
//! - [`gpio`]: the GPIO character device uAPI v2 (`/dev/gpiochipN`); never sysfs.
//! - [`i2c`]: `/dev/i2c-N` (SMBus transfers, `I2C_RDWR`, an i2cdetect-style scan).
//! - [`spi`]: `/dev/spidevB.C`, one full-duplex transfer per call.
//! - [`uart`]: a serial port opened, used and closed within one call.
//! - [`allow`]: parsing `hardware.allow` and deciding a request.
//!
//! ioctls go through `rustix::ioctl` (always compiled in rustix 1.1, no feature needed)
//! with one runtime-opcode [`rustix::ioctl::Ioctl`] type, so there is a single
//! instantiation of it and a single `unsafe` call site ([`ioctl`]).
//!
//! # Bounds
//! Every transfer length, wait and pulse has a named bound in its module's header; the
//! allowlist is bounded by `allow::MAX_ALLOW_ENTRIES`.
//!
//! # Threads
//! Worker threads, except the allowlist's parsing and matching (`allow`).
//!
//! # Blocking
//! Everything here blocks (opens, ioctls, waits up to the bounds above): callers run it on
//! the worker pool (`runtime::Workers`), never on the executor thread. Nothing here keeps
//! a device open between calls.

pub mod allow;
pub mod gpio;
pub mod i2c;
pub mod spi;
pub mod uart;

use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use rustix::ioctl::{Ioctl, IoctlOutput, Opcode};
use std::ffi::c_void;
use std::fmt;

/// Whether this target encodes ioctl requests as asm-generic/ioctl.h does (direction in
/// the top two bits, then a 14-bit size, type and number): the boards' architectures and
/// x86_64. mips, powerpc and sparc encode them otherwise (rustix's `opcode` knows how).
const ASM_GENERIC_IOCTL: bool = cfg!(any(
    target_arch = "x86_64",
    target_arch = "aarch64",
    target_arch = "arm",
    target_arch = "riscv64"
));

/// For the `const` assertions of the request numbers: `op` is `want` (the number the
/// kernel headers give) on the targets of asm-generic's encoding; true elsewhere.
pub(crate) const fn ioctl_is(op: Opcode, want: u64) -> bool {
    !ASM_GENERIC_IOCTL || op as u64 == want
}

/// Why a hardware request failed: one variant per thing the user can act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HwError {
    /// The device file does not exist (ENOENT, ENODEV at open).
    NoDevice(String),
    /// The device exists but may not be opened by this user (EACCES, EPERM).
    Permission {
        device: String,
        /// The group that usually owns such devices: gpio, i2c, spi or dialout.
        group: &'static str,
    },
    /// A line or address is held by a kernel driver or another program (EBUSY).
    Busy(String),
    /// Nothing acknowledged at an I2C address (ENXIO, EREMOTEIO; ENODEV mid-transfer).
    NoAck(String),
    /// The bus or device did not finish in time (ETIMEDOUT).
    TimedOut(String),
    /// The adapter or driver cannot do this (a missing `I2C_FUNCS` bit, ENOTTY,
    /// EOPNOTSUPP).
    Unsupported(&'static str),
    /// The request is outside the bounds or the device's range.
    Invalid(&'static str),
    /// Any other OS error, with its errno number.
    Os { device: String, errno: i32 },
}

impl fmt::Display for HwError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HwError::NoDevice(d) => write!(
                f,
                "{d} does not exist: check the name and that the interface is enabled (overlay, driver)"
            ),
            HwError::Permission { device, group } => write!(
                f,
                "no permission to open {device}: add the user to the {group} group (or a udev rule), then restart yoctoclaw"
            ),
            HwError::Busy(w) => write!(
                f,
                "{w} is busy: a kernel driver or another program holds it; free it or use another"
            ),
            HwError::NoAck(w) => write!(
                f,
                "no device answered at {w}: check the address, wiring, power and pull-ups"
            ),
            HwError::TimedOut(w) => {
                write!(f, "{w} timed out: check wiring, pull-ups and the bus speed")
            }
            HwError::Unsupported(m) | HwError::Invalid(m) => f.write_str(m),
            HwError::Os { device, errno } => write!(
                f,
                "{device} failed: {}",
                std::io::Error::from_raw_os_error(*errno)
            ),
        }
    }
}

impl std::error::Error for HwError {}

/// The group that usually owns a device node, by its name (for the permission hint).
pub fn group_of(device: &str) -> &'static str {
    let name = device.rsplit('/').next().unwrap_or(device);
    if name.starts_with("gpiochip") {
        "gpio"
    } else if name.starts_with("i2c-") {
        "i2c"
    } else if name.starts_with("spidev") {
        "spi"
    } else {
        "dialout"
    }
}

impl HwError {
    /// Map an errno to its sentence. `device` is the device path; `target` names what was
    /// being addressed (`line 17 of /dev/gpiochip0`, `address 0x48 on /dev/i2c-1`), or is
    /// empty while opening (then ENOENT and ENODEV mean "no such device").
    pub fn from_errno(e: Errno, device: &str, target: &str) -> HwError {
        let what = if target.is_empty() { device } else { target };
        match e {
            Errno::NOENT => HwError::NoDevice(device.to_string()),
            Errno::NODEV if target.is_empty() => HwError::NoDevice(device.to_string()),
            Errno::ACCESS | Errno::PERM => HwError::Permission {
                device: device.to_string(),
                group: group_of(device),
            },
            Errno::BUSY => HwError::Busy(what.to_string()),
            Errno::NXIO | Errno::REMOTEIO | Errno::NODEV => HwError::NoAck(what.to_string()),
            Errno::TIMEDOUT => HwError::TimedOut(what.to_string()),
            Errno::NOTTY | Errno::OPNOTSUPP => HwError::Unsupported(
                "the device does not support this request: is it the right kind of device?",
            ),
            other => HwError::Os {
                device: device.to_string(),
                errno: other.raw_os_error(),
            },
        }
    }
}

/// Open a device node read-write, close-on-exec, never as a controlling terminal.
pub(crate) fn open_rw(path: &str, extra: OFlags) -> Result<OwnedFd, HwError> {
    rustix::fs::open(
        path,
        OFlags::RDWR | OFlags::CLOEXEC | OFlags::NOCTTY | extra,
        Mode::empty(),
    )
    .map_err(|e| HwError::from_errno(e, path, ""))
}

/// An ioctl whose opcode is known only at run time: one type for every request here, so
/// `rustix::ioctl::ioctl` is instantiated once.
struct RawIoctl {
    op: Opcode,
    arg: *mut c_void,
}

// SAFETY: `ioctl` below is the only constructor; its callers guarantee that `arg` is what
// the driver expects for `op` (see each call site), and the kernel may write through it.
unsafe impl Ioctl for RawIoctl {
    type Output = IoctlOutput;
    const IS_MUTATING: bool = true;

    fn opcode(&self) -> Opcode {
        self.op
    }

    fn as_ptr(&mut self) -> *mut c_void {
        self.arg
    }

    unsafe fn output_from_ptr(out: IoctlOutput, _: *mut c_void) -> rustix::io::Result<IoctlOutput> {
        Ok(out)
    }
}

/// `ioctl(fd, op, arg)`.
///
/// # Safety
/// `arg` must be what the driver expects for `op`: a pointer to a live, correctly laid out
/// and writable value of the size encoded in `op` (and every pointer inside it valid for
/// the lengths it states), or an integer cast to a pointer for integer-argument requests.
pub(crate) unsafe fn ioctl(fd: impl AsFd, op: Opcode, arg: *mut c_void) -> Result<i32, Errno> {
    // SAFETY: forwarded to the caller (see above).
    unsafe { rustix::ioctl::ioctl(fd, RawIoctl { op, arg }) }
}

/// Copy a NUL-terminated kernel name field into a `String` (lossy, bounded by the field).
pub(crate) fn c_name(field: &[u8]) -> String {
    let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    String::from_utf8_lossy(&field[..end]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_errno_maps_to_one_actionable_sentence() {
        let dev = "/dev/i2c-1";
        let at = "address 0x48 on /dev/i2c-1";
        let cases: &[(Errno, &str, HwError, &str)] = &[
            (
                Errno::NOENT,
                "",
                HwError::NoDevice(dev.into()),
                "does not exist",
            ),
            (
                Errno::NODEV,
                "",
                HwError::NoDevice(dev.into()),
                "does not exist",
            ),
            (
                Errno::ACCESS,
                "",
                HwError::Permission {
                    device: dev.into(),
                    group: "i2c",
                },
                "the i2c group",
            ),
            (
                Errno::PERM,
                "",
                HwError::Permission {
                    device: dev.into(),
                    group: "i2c",
                },
                "udev rule",
            ),
            (Errno::BUSY, at, HwError::Busy(at.into()), "is busy"),
            (
                Errno::NXIO,
                at,
                HwError::NoAck(at.into()),
                "no device answered",
            ),
            (
                Errno::REMOTEIO,
                at,
                HwError::NoAck(at.into()),
                "no device answered",
            ),
            (
                Errno::NODEV,
                at,
                HwError::NoAck(at.into()),
                "no device answered",
            ),
            (
                Errno::TIMEDOUT,
                at,
                HwError::TimedOut(at.into()),
                "timed out",
            ),
        ];
        for (errno, target, want, words) in cases {
            let got = HwError::from_errno(*errno, dev, target);
            assert_eq!(&got, want, "{errno:?}");
            let text = got.to_string();
            assert!(text.contains(words), "{text}");
            assert!(!text.contains('\n') && text.len() < 200, "{text}");
        }
        let other = HwError::from_errno(Errno::IO, dev, at);
        assert_eq!(
            other,
            HwError::Os {
                device: dev.into(),
                errno: Errno::IO.raw_os_error()
            }
        );
        assert!(other.to_string().contains("/dev/i2c-1 failed"));
        assert!(matches!(
            HwError::from_errno(Errno::NOTTY, "/dev/null", ""),
            HwError::Unsupported(_)
        ));
    }

    #[test]
    fn permission_hints_name_the_usual_group() {
        for (dev, group) in [
            ("/dev/gpiochip0", "gpio"),
            ("/dev/i2c-1", "i2c"),
            ("/dev/spidev0.0", "spi"),
            ("/dev/ttyUSB0", "dialout"),
            ("/dev/ttyAMA0", "dialout"),
        ] {
            assert_eq!(group_of(dev), group, "{dev}");
            let e = HwError::from_errno(Errno::ACCESS, dev, "");
            assert!(e.to_string().contains(&format!("the {group} group")), "{e}");
        }
    }

    #[test]
    fn opening_a_missing_device_says_so() {
        let e = open_rw("/dev/yoctoclaw-no-such-device", OFlags::empty()).unwrap_err();
        assert_eq!(e, HwError::NoDevice("/dev/yoctoclaw-no-such-device".into()));
    }

    #[test]
    fn kernel_names_stop_at_the_first_nul() {
        assert_eq!(c_name(b"GPIO17\0\0junk"), "GPIO17");
        assert_eq!(c_name(b"full"), "full");
        assert_eq!(c_name(b"\0"), "");
    }
}
