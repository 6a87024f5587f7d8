//! GPIO through the character device uAPI v2 (`/dev/gpiochipN`, linux/gpio.h): chip and
//! line information, one line requested as an input or output with bias and active-low,
//! its value read or set, and one edge waited for. Never the deprecated sysfs interface.
//!
//! A requested line belongs to us until its [`Line`] is dropped (its file descriptor
//! closes); callers request, act and release within one call. After release the kernel
//! keeps most controllers' output level, but does not promise it.
//!
//! The structures below mirror linux/gpio.h field for field; unit tests check their sizes
//! and the ioctl numbers against values taken from the header (see the test).
//!
//! # Bounds
//! - One line per request (`num_lines = 1`); the kernel's own limit is 64.
//! - [`MAX_WAIT_MS`] for an edge; [`MAX_PULSE_MS`], the longest pulse callers may hold.
//! - [`MAX_LINES_SCANNED`] lines per chip when looking a line up by name.
//!
//! # Threads
//! Worker threads (`tools::hardware` hands each call there).
//!
//! # Blocking
//! Every function blocks (ioctls, `poll` up to [`MAX_WAIT_MS`]): run on a worker thread.

use super::{HwError, c_name, ioctl, ioctl_is, open_rw};
use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::fd::OwnedFd;
use rustix::fs::OFlags;
use rustix::io::Errno;
use rustix::ioctl::{Opcode, opcode};
use std::ffi::c_void;
use std::time::{Duration, Instant};

/// Longest wait for an edge.
pub const MAX_WAIT_MS: u64 = 60_000;
/// Longest pulse.
pub const MAX_PULSE_MS: u64 = 10_000;
/// Most lines read when looking a line up by name on one chip.
pub const MAX_LINES_SCANNED: u32 = 1024;
/// Consumer label shown by `gpioinfo` while we hold a line.
pub const CONSUMER: &[u8] = b"yoctoclaw";

const NAME_BYTES: usize = 32;
const LINES_MAX: usize = 64;
const NUM_ATTRS_MAX: usize = 10;

// enum gpio_v2_line_flag
pub const FLAG_USED: u64 = 1 << 0;
pub const FLAG_ACTIVE_LOW: u64 = 1 << 1;
pub const FLAG_INPUT: u64 = 1 << 2;
pub const FLAG_OUTPUT: u64 = 1 << 3;
pub const FLAG_EDGE_RISING: u64 = 1 << 4;
pub const FLAG_EDGE_FALLING: u64 = 1 << 5;
pub const FLAG_BIAS_PULL_UP: u64 = 1 << 8;
pub const FLAG_BIAS_PULL_DOWN: u64 = 1 << 9;
pub const FLAG_BIAS_DISABLED: u64 = 1 << 10;
// enum gpio_v2_line_attr_id
const ATTR_ID_OUTPUT_VALUES: u32 = 2;
// enum gpio_v2_line_event_id
const EVENT_RISING_EDGE: u32 = 1;

/// `struct gpiochip_info`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ChipInfoRaw {
    pub name: [u8; NAME_BYTES],
    pub label: [u8; NAME_BYTES],
    pub lines: u32,
}

/// `struct gpio_v2_line_attribute` (the union is its largest member, a u64).
#[repr(C, align(8))]
#[derive(Clone, Copy)]
pub struct LineAttribute {
    pub id: u32,
    pub padding: u32,
    pub value: u64,
}

/// `struct gpio_v2_line_config_attribute`.
#[repr(C, align(8))]
#[derive(Clone, Copy)]
pub struct ConfigAttribute {
    pub attr: LineAttribute,
    pub mask: u64,
}

/// `struct gpio_v2_line_config`.
#[repr(C, align(8))]
#[derive(Clone, Copy)]
pub struct LineConfig {
    pub flags: u64,
    pub num_attrs: u32,
    pub padding: [u32; 5],
    pub attrs: [ConfigAttribute; NUM_ATTRS_MAX],
}

/// `struct gpio_v2_line_request`.
#[repr(C, align(8))]
#[derive(Clone, Copy)]
pub struct LineRequest {
    pub offsets: [u32; LINES_MAX],
    pub consumer: [u8; NAME_BYTES],
    pub config: LineConfig,
    pub num_lines: u32,
    pub event_buffer_size: u32,
    pub padding: [u32; 5],
    pub fd: i32,
}

/// `struct gpio_v2_line_info`.
#[repr(C, align(8))]
#[derive(Clone, Copy)]
pub struct LineInfoRaw {
    pub name: [u8; NAME_BYTES],
    pub consumer: [u8; NAME_BYTES],
    pub offset: u32,
    pub num_attrs: u32,
    pub flags: u64,
    pub attrs: [LineAttribute; NUM_ATTRS_MAX],
    pub padding: [u32; 4],
}

/// `struct gpio_v2_line_values`.
#[repr(C, align(8))]
#[derive(Clone, Copy)]
pub struct LineValues {
    pub bits: u64,
    pub mask: u64,
}

/// `struct gpio_v2_line_event`.
#[repr(C, align(8))]
#[derive(Clone, Copy)]
pub struct LineEventRaw {
    pub timestamp_ns: u64,
    pub id: u32,
    pub offset: u32,
    pub seqno: u32,
    pub line_seqno: u32,
    pub padding: [u32; 6],
}

const ZERO_ATTR: LineAttribute = LineAttribute {
    id: 0,
    padding: 0,
    value: 0,
};

pub const GPIO_GET_CHIPINFO_IOCTL: Opcode = opcode::read::<ChipInfoRaw>(0xB4, 0x01);
pub const GPIO_V2_GET_LINEINFO_IOCTL: Opcode = opcode::read_write::<LineInfoRaw>(0xB4, 0x05);
pub const GPIO_V2_GET_LINE_IOCTL: Opcode = opcode::read_write::<LineRequest>(0xB4, 0x07);
pub const GPIO_V2_LINE_GET_VALUES_IOCTL: Opcode = opcode::read_write::<LineValues>(0xB4, 0x0E);
pub const GPIO_V2_LINE_SET_VALUES_IOCTL: Opcode = opcode::read_write::<LineValues>(0xB4, 0x0F);

// The layouts of linux/gpio.h, checked when this file compiles, for every target: the
// uapi v2 structs have the same size and offsets on every architecture (their u64s are
// `__aligned_u64`, hence `align(8)` above even where a u64 aligns to 4, and explicit
// padding makes each a multiple of 8 bytes). The figures are sizeof and offsetof printed
// by a C program including the header (Linux 6.x).
const _: () = {
    use std::mem::offset_of;
    assert!(size_of::<ChipInfoRaw>() == 68);
    assert!(size_of::<LineAttribute>() == 16);
    assert!(size_of::<ConfigAttribute>() == 24);
    assert!(size_of::<LineConfig>() == 272);
    assert!(size_of::<LineRequest>() == 592);
    assert!(size_of::<LineInfoRaw>() == 256);
    assert!(size_of::<LineValues>() == 16);
    assert!(size_of::<LineEventRaw>() == 48);
    assert!(offset_of!(LineRequest, consumer) == 256);
    assert!(offset_of!(LineRequest, config) == 288);
    assert!(offset_of!(LineRequest, num_lines) == 560);
    assert!(offset_of!(LineRequest, fd) == 588);
    assert!(offset_of!(LineInfoRaw, offset) == 64);
    assert!(offset_of!(LineInfoRaw, flags) == 72);
    assert!(offset_of!(LineInfoRaw, attrs) == 80);
    assert!(offset_of!(LineEventRaw, id) == 8);
    assert!(offset_of!(LineEventRaw, line_seqno) == 20);
};

// The request numbers, as the header's macros give them (super::ioctl_is).
const _: () = {
    assert!(ioctl_is(GPIO_GET_CHIPINFO_IOCTL, 0x8044_b401));
    assert!(ioctl_is(GPIO_V2_GET_LINEINFO_IOCTL, 0xc100_b405));
    assert!(ioctl_is(GPIO_V2_GET_LINE_IOCTL, 0xc250_b407));
    assert!(ioctl_is(GPIO_V2_LINE_GET_VALUES_IOCTL, 0xc010_b40e));
    assert!(ioctl_is(GPIO_V2_LINE_SET_VALUES_IOCTL, 0xc010_b40f));
};

/// Pull resistor setting of a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bias {
    /// Leave it as it is.
    AsIs,
    PullUp,
    PullDown,
    Disabled,
}

/// Which edges to wait for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edge {
    Rising,
    Falling,
    Both,
}

/// How to request a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// `Some(level)`: an output starting at `level` (logical, after active-low).
    pub output: Option<bool>,
    pub bias: Bias,
    pub active_low: bool,
    /// Edge detection (inputs only).
    pub edge: Option<Edge>,
}

impl Settings {
    pub const INPUT: Settings = Settings {
        output: None,
        bias: Bias::AsIs,
        active_low: false,
        edge: None,
    };

    /// The `gpio_v2_line_config.flags` of these settings.
    pub fn flags(&self) -> u64 {
        let mut f = if self.output.is_some() {
            FLAG_OUTPUT
        } else {
            FLAG_INPUT
        };
        if self.active_low {
            f |= FLAG_ACTIVE_LOW;
        }
        f |= match self.bias {
            Bias::AsIs => 0,
            Bias::PullUp => FLAG_BIAS_PULL_UP,
            Bias::PullDown => FLAG_BIAS_PULL_DOWN,
            Bias::Disabled => FLAG_BIAS_DISABLED,
        };
        if self.output.is_none() {
            f |= match self.edge {
                None => 0,
                Some(Edge::Rising) => FLAG_EDGE_RISING,
                Some(Edge::Falling) => FLAG_EDGE_FALLING,
                Some(Edge::Both) => FLAG_EDGE_RISING | FLAG_EDGE_FALLING,
            };
        }
        f
    }
}

/// What a chip says about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChipInfo {
    pub name: String,
    pub label: String,
    pub lines: u32,
}

/// What a chip says about one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineInfo {
    pub offset: u32,
    pub name: String,
    pub consumer: String,
    pub flags: u64,
}

impl LineInfo {
    pub fn used(&self) -> bool {
        self.flags & FLAG_USED != 0
    }
    pub fn output(&self) -> bool {
        self.flags & FLAG_OUTPUT != 0
    }
}

/// One edge seen on a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EdgeEvent {
    pub rising: bool,
    /// Time from the start of the wait to the edge, as we measured it.
    pub after: Duration,
}

/// An open GPIO chip.
pub struct Chip {
    fd: OwnedFd,
    path: String,
}

/// A requested line; released when dropped.
pub struct Line {
    fd: OwnedFd,
    what: String,
    device: String,
}

impl Chip {
    pub fn open(path: &str) -> Result<Chip, HwError> {
        Ok(Chip {
            fd: open_rw(path, OFlags::empty())?,
            path: path.to_string(),
        })
    }

    fn line_what(&self, offset: u32) -> String {
        format!("line {offset} of {}", self.path)
    }

    pub fn info(&self) -> Result<ChipInfo, HwError> {
        let mut raw = ChipInfoRaw {
            name: [0; NAME_BYTES],
            label: [0; NAME_BYTES],
            lines: 0,
        };
        // SAFETY: GPIO_GET_CHIPINFO_IOCTL takes a `struct gpiochip_info *`; `raw` mirrors it.
        unsafe {
            ioctl(
                &self.fd,
                GPIO_GET_CHIPINFO_IOCTL,
                &mut raw as *mut _ as *mut c_void,
            )
        }
        .map_err(|e| HwError::from_errno(e, &self.path, ""))?;
        Ok(ChipInfo {
            name: c_name(&raw.name),
            label: c_name(&raw.label),
            lines: raw.lines,
        })
    }

    pub fn line_info(&self, offset: u32) -> Result<LineInfo, HwError> {
        let mut raw = LineInfoRaw {
            name: [0; NAME_BYTES],
            consumer: [0; NAME_BYTES],
            offset,
            num_attrs: 0,
            flags: 0,
            attrs: [ZERO_ATTR; NUM_ATTRS_MAX],
            padding: [0; 4],
        };
        // SAFETY: GPIO_V2_GET_LINEINFO_IOCTL takes a `struct gpio_v2_line_info *` with
        // `offset` set and the rest zero; `raw` mirrors it.
        unsafe {
            ioctl(
                &self.fd,
                GPIO_V2_GET_LINEINFO_IOCTL,
                &mut raw as *mut _ as *mut c_void,
            )
        }
        .map_err(|e| match e {
            Errno::INVAL => out_of_range(&self.path, offset),
            e => HwError::from_errno(e, &self.path, &self.line_what(offset)),
        })?;
        Ok(LineInfo {
            offset,
            name: c_name(&raw.name),
            consumer: c_name(&raw.consumer),
            flags: raw.flags,
        })
    }

    /// The offset of the line the kernel calls `name` (exact match, as `gpiofind`), among
    /// the chip's first [`MAX_LINES_SCANNED`] lines.
    pub fn find_line(&self, name: &str) -> Result<Option<u32>, HwError> {
        let lines = self.info()?.lines.min(MAX_LINES_SCANNED);
        for offset in 0..lines {
            if self.line_info(offset)?.name == name {
                return Ok(Some(offset));
            }
        }
        Ok(None)
    }

    /// Request line `offset` with `s`.
    pub fn request(&self, offset: u32, s: &Settings) -> Result<Line, HwError> {
        let mut req = LineRequest {
            offsets: [0; LINES_MAX],
            consumer: [0; NAME_BYTES],
            config: LineConfig {
                flags: s.flags(),
                num_attrs: 0,
                padding: [0; 5],
                attrs: [ConfigAttribute {
                    attr: ZERO_ATTR,
                    mask: 0,
                }; NUM_ATTRS_MAX],
            },
            num_lines: 1,
            event_buffer_size: 0,
            padding: [0; 5],
            fd: -1,
        };
        req.offsets[0] = offset;
        req.consumer[..CONSUMER.len()].copy_from_slice(CONSUMER);
        if let Some(level) = s.output {
            // The starting level goes in with the request: no glitch to the old level.
            req.config.num_attrs = 1;
            req.config.attrs[0] = ConfigAttribute {
                attr: LineAttribute {
                    id: ATTR_ID_OUTPUT_VALUES,
                    padding: 0,
                    value: level as u64,
                },
                mask: 1,
            };
        }
        // SAFETY: GPIO_V2_GET_LINE_IOCTL takes a `struct gpio_v2_line_request *`; `req`
        // mirrors it, zero-filled where the header asks for zeroes.
        unsafe { ioctl(&self.fd, GPIO_V2_GET_LINE_IOCTL, &mut req as *mut _ as *mut c_void) }
            .map_err(|e| match e {
                Errno::INVAL if offset >= self.info().map(|i| i.lines).unwrap_or(u32::MAX) => {
                    out_of_range(&self.path, offset)
                }
                Errno::INVAL => HwError::Invalid(
                    "the GPIO controller refused these line settings (bias or edge detection may be unsupported)",
                ),
                e => HwError::from_errno(e, &self.path, &self.line_what(offset)),
            })?;
        if req.fd < 0 {
            return Err(HwError::Os {
                device: self.path.clone(),
                errno: Errno::BADF.raw_os_error(),
            });
        }
        // SAFETY: on success the kernel put a new descriptor, owned by nobody else, in `fd`.
        let fd = unsafe { <OwnedFd as rustix::fd::FromRawFd>::from_raw_fd(req.fd) };
        Ok(Line {
            fd,
            what: self.line_what(offset),
            device: self.path.clone(),
        })
    }
}

fn out_of_range(_path: &str, _offset: u32) -> HwError {
    HwError::Invalid("the GPIO chip has no such line (gpioinfo shows its lines)")
}

impl Line {
    fn values(&self, op: Opcode, bits: u64) -> Result<u64, HwError> {
        let mut v = LineValues { bits, mask: 1 };
        // SAFETY: both value ioctls take a `struct gpio_v2_line_values *`; `v` mirrors it.
        unsafe { ioctl(&self.fd, op, &mut v as *mut _ as *mut c_void) }
            .map_err(|e| HwError::from_errno(e, &self.device, &self.what))?;
        Ok(v.bits)
    }

    /// The logical level (after active-low).
    pub fn get(&self) -> Result<bool, HwError> {
        self.values(GPIO_V2_LINE_GET_VALUES_IOCTL, 0)
            .map(|b| b & 1 == 1)
    }

    /// Set the logical level of an output line.
    pub fn set(&self, level: bool) -> Result<(), HwError> {
        self.values(GPIO_V2_LINE_SET_VALUES_IOCTL, level as u64)
            .map(drop)
    }

    /// Wait up to `timeout` (at most [`MAX_WAIT_MS`]) for one edge of a line requested with
    /// edge detection. `None` when none came in time.
    pub fn wait_edge(&self, timeout: Duration) -> Result<Option<EdgeEvent>, HwError> {
        let timeout = timeout.min(Duration::from_millis(MAX_WAIT_MS));
        let start = Instant::now();
        loop {
            let left = timeout.saturating_sub(start.elapsed());
            let ts = Timespec {
                tv_sec: left.as_secs() as i64,
                tv_nsec: left.subsec_nanos() as _,
            };
            let mut fds = [PollFd::new(&self.fd, PollFlags::IN)];
            match poll(&mut fds, Some(&ts)) {
                Ok(0) => return Ok(None),
                Ok(_) => break,
                Err(Errno::INTR) if !left.is_zero() => continue,
                Err(e) => return Err(HwError::from_errno(e, &self.device, &self.what)),
            }
        }
        let mut buf = [0u8; size_of::<LineEventRaw>()];
        let n = rustix::io::read(&self.fd, &mut buf)
            .map_err(|e| HwError::from_errno(e, &self.device, &self.what))?;
        let id = buf
            .get(8..12)
            .filter(|_| n >= 16)
            .and_then(|b| b.try_into().ok())
            .map(u32::from_ne_bytes)
            .ok_or(HwError::Invalid("short GPIO edge event"))?;
        Ok(Some(EdgeEvent {
            rising: id == EVENT_RISING_EDGE,
            after: start.elapsed(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_become_the_kernel_flags() {
        let input = Settings::INPUT;
        assert_eq!(input.flags(), FLAG_INPUT);
        let s = Settings {
            output: None,
            bias: Bias::PullUp,
            active_low: true,
            edge: Some(Edge::Both),
        };
        assert_eq!(
            s.flags(),
            FLAG_INPUT | FLAG_ACTIVE_LOW | FLAG_BIAS_PULL_UP | FLAG_EDGE_RISING | FLAG_EDGE_FALLING
        );
        let out = Settings {
            output: Some(true),
            bias: Bias::Disabled,
            active_low: false,
            edge: Some(Edge::Rising), // ignored: outputs have no edge detection
        };
        assert_eq!(out.flags(), FLAG_OUTPUT | FLAG_BIAS_DISABLED);
        let down = Settings {
            bias: Bias::PullDown,
            edge: Some(Edge::Falling),
            ..Settings::INPUT
        };
        assert_eq!(
            down.flags(),
            FLAG_INPUT | FLAG_BIAS_PULL_DOWN | FLAG_EDGE_FALLING
        );
    }

    #[test]
    fn a_file_that_is_not_a_gpio_chip_is_refused_clearly() {
        let chip = Chip::open("/dev/null").unwrap();
        assert!(matches!(chip.info(), Err(HwError::Unsupported(_))));
        assert!(matches!(
            Chip::open("/dev/yoctoclaw-no-gpiochip"),
            Err(HwError::NoDevice(_))
        ));
    }

    // A real chip's own description (GPIO_GET_CHIPINFO_IOCTL, GPIO_V2_GET_LINEINFO_IOCTL)
    // is checked where a chip exists: scripts/hw-vm.sh, scripts/vm/hw-arm64.cmds (a
    // unit test here could only skip: no test machine has /dev/gpiochip0).
}
