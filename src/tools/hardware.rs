//! The hardware tools: `gpio`, `i2c`, `spi` and `serial_port`, over the device layer in
//! `hw`, limited to what `hardware.allow` lists.
//!
//! Each call is first turned into a [`Plan`]: arguments checked, the device name
//! normalised and its symlinks resolved, a GPIO line name looked up, and the allowlist
//! decision made (`hw::allow`). A call nothing covers is refused before any device is
//! opened; a write covered only by a `read` entry needs the user's approval
//! ([`needs_approval`], [`approval_summary`]); the `serial_port` tool never touches the
//! serial chat console's own device (`serial.device`). With an empty allowlist the tools
//! are not offered at all ([`offered`]).
//!
//! Every access is logged at info with what it touched and how it ended.
//!
//! # Bounds
//! Those of the device layer: transfers of `hw::i2c::MAX_TRANSFER_BYTES`,
//! `hw::spi::MAX_TRANSFER_BYTES`, `hw::uart::MAX_WRITE_BYTES`/`MAX_READ_BYTES`; waits of
//! `hw::gpio::MAX_WAIT_MS`, pulses of `hw::gpio::MAX_PULSE_MS`, serial calls of
//! `hw::uart::MAX_TIMEOUT_MS`; at most [`MAX_INFO_LINES`] lines listed by `gpio info`.
//!
//! # Blocking
//! The device work runs on a worker (`Workers::run`), one call at a time per worker, and
//! ends within the bounds above. Planning runs on the caller's thread: it resolves
//! symlinks under `/dev` and, for a line named rather than numbered, reads the line names
//! of the allowed GPIO chips (in-kernel ioctls, no bus traffic).

use super::{Args, ToolError, Tools};
use crate::config::Config;
use crate::hw::allow::{self, Decision, Kind};
use crate::hw::{HwError, gpio, i2c, spi, uart};
use crate::json;
use crate::provider::ToolSpec;
use miniserde::json::Value;
use std::fmt::Write as _;
use std::time::Duration;

pub const GPIO: ToolSpec = ToolSpec {
    name: "gpio",
    description: "Read or drive one GPIO line of this board (Linux GPIO character device), only lines listed in hardware.allow. Actions: info (a chip's lines and names), read, write (set value 0 or 1, then release the line), pulse (value for duration_ms, then the opposite), wait_edge (wait up to timeout_ms for an edge). Give chip and line offset (on a Raspberry Pi, gpiochip0 line 17 is BCM GPIO17) or the line's kernel name.",
    parameters: r#"{"type":"object","properties":{"action":{"type":"string","enum":["info","read","write","pulse","wait_edge"]},"chip":{"type":"string","description":"GPIO chip, e.g. gpiochip0"},"line":{"type":"integer","minimum":0,"description":"line offset on the chip"},"name":{"type":"string","description":"the line's kernel name (e.g. GPIO17), instead of line"},"value":{"type":"integer","enum":[0,1],"description":"level for write and pulse"},"duration_ms":{"type":"integer","minimum":1,"maximum":10000,"description":"pulse length"},"edge":{"type":"string","enum":["rising","falling","both"],"description":"for wait_edge, default both"},"timeout_ms":{"type":"integer","minimum":1,"maximum":60000,"description":"for wait_edge, default 10000"},"bias":{"type":"string","enum":["pull_up","pull_down","disabled"],"description":"pull resistor; default: leave as is"},"active_low":{"type":"boolean","description":"1 means the line is low"}},"required":["action"]}"#,
};

pub const I2C: ToolSpec = ToolSpec {
    name: "i2c",
    description: "Talk to I2C devices on a bus listed in hardware.allow. Actions: scan (which addresses answer, like i2cdetect), read_reg (length bytes from a register), write_reg (data to a register), read and write (raw bytes, no register). 7-bit addresses 0x08-0x77; bytes are in bus order (the device's datasheet order).",
    parameters: r#"{"type":"object","properties":{"action":{"type":"string","enum":["scan","read_reg","write_reg","read","write"]},"bus":{"type":"string","description":"I2C bus, e.g. i2c-1"},"address":{"type":"string","description":"device address, e.g. 0x48"},"register":{"type":"string","description":"register, e.g. 0x00"},"length":{"type":"integer","minimum":1,"maximum":32,"description":"bytes to read, default 1"},"data":{"type":"array","items":{"type":"integer","minimum":0,"maximum":255},"description":"bytes to write (1 to 32)"}},"required":["action","bus"]}"#,
};

pub const SPI: ToolSpec = ToolSpec {
    name: "spi",
    description: "One full-duplex SPI transfer on a spidev device listed in hardware.allow as write: clocks data out and returns the bytes clocked in at the same time (as many).",
    parameters: r#"{"type":"object","properties":{"device":{"type":"string","description":"e.g. spidev0.0"},"data":{"type":"array","items":{"type":"integer","minimum":0,"maximum":255},"description":"bytes to send (1 to 4096)"},"mode":{"type":"integer","enum":[0,1,2,3],"description":"SPI mode, default 0"},"speed_hz":{"type":"integer","minimum":1000,"description":"clock, default 500000"},"bits_per_word":{"type":"integer","minimum":1,"maximum":32,"description":"default 8"}},"required":["device","data"]}"#,
};

pub const SERIAL_PORT: ToolSpec = ToolSpec {
    name: "serial_port",
    description: "Write to and read from a serial port listed in hardware.allow (not the chat console's). Actions: write, read, exchange (write, then read the answer). A read stops after the until text (default a newline; empty: none), max_bytes, or timeout_ms. The port is opened and closed on each call.",
    parameters: r#"{"type":"object","properties":{"action":{"type":"string","enum":["write","read","exchange"]},"device":{"type":"string","description":"e.g. ttyUSB0 or /dev/serial/by-id/..."},"baud":{"type":"integer","minimum":50,"description":"default 115200"},"data":{"type":"string","description":"text to send"},"hex":{"type":"boolean","description":"data is hex bytes, e.g. \"0d 0a\""},"end":{"type":"string","enum":["none","lf","cr","crlf"],"description":"appended to data, default none"},"until":{"type":"string","description":"stop reading after this text, default \"\\n\""},"max_bytes":{"type":"integer","minimum":1,"maximum":4096,"description":"default 1024"},"timeout_ms":{"type":"integer","minimum":1,"maximum":30000,"description":"for the whole call, default 2000"}},"required":["action","device"]}"#,
};

/// The four tools, in the order they are offered.
pub const SPECS: [ToolSpec; 4] = [GPIO, I2C, SPI, SERIAL_PORT];

/// Most lines `gpio info` lists (named or in-use lines only).
pub const MAX_INFO_LINES: usize = 128;
/// Bytes of data shown in a summary before it is shortened.
const SUMMARY_DATA_BYTES: usize = 16;

/// True for the names of the hardware tools.
pub fn is_tool(name: &str) -> bool {
    SPECS.iter().any(|s| s.name == name)
}

/// The tools are offered (and callable) only when `hardware.allow` lists something.
pub fn offered(cfg: &Config) -> bool {
    !cfg.hardware.allow.is_empty()
}

/// Device work, ready for a worker: everything owned and checked.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    GpioInfo {
        chip: String,
    },
    GpioRead {
        chip: String,
        line: u32,
        s: gpio::Settings,
    },
    GpioWrite {
        chip: String,
        line: u32,
        level: bool,
        s: gpio::Settings,
    },
    GpioPulse {
        chip: String,
        line: u32,
        level: bool,
        ms: u64,
        s: gpio::Settings,
    },
    GpioWait {
        chip: String,
        line: u32,
        edge: gpio::Edge,
        ms: u64,
        s: gpio::Settings,
    },
    I2cScan {
        bus: String,
        addrs: Vec<u16>,
    },
    I2cReadReg {
        bus: String,
        addr: u16,
        reg: u8,
        len: usize,
    },
    I2cWriteReg {
        bus: String,
        addr: u16,
        reg: u8,
        data: Vec<u8>,
    },
    I2cRead {
        bus: String,
        addr: u16,
        len: usize,
    },
    I2cWrite {
        bus: String,
        addr: u16,
        data: Vec<u8>,
    },
    Spi {
        device: String,
        s: spi::Settings,
        data: Vec<u8>,
    },
    Serial {
        device: String,
        baud: u32,
        data: Vec<u8>,
        until: Option<uart::Until>,
        ms: u64,
    },
}

/// A checked call: what to do, what the allowlist says, and one line saying what it
/// touches (logged, and shown to the user when approval is needed).
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub op: Op,
    pub decision: Decision,
    pub summary: String,
}

fn bad(m: impl Into<String>) -> ToolError {
    ToolError::BadArgs(m.into())
}

fn failed(e: HwError) -> ToolError {
    ToolError::Failed(e.to_string())
}

/// `72`, `"72"` or `"0x48"`.
fn num(args: &Args, key: &str) -> Result<Option<u64>, ToolError> {
    if let Some(Value::String(s)) = json::get(args.value(), key) {
        let s = s.trim();
        let v = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
            Some(h) => u64::from_str_radix(h, 16).ok(),
            None => s.parse().ok(),
        };
        return v
            .map(Some)
            .ok_or_else(|| bad(format!("\"{key}\" must be a number like 72 or 0x48")));
    }
    args.opt_u64(key)
}

fn num_in(args: &Args, key: &str, min: u64, max: u64, default: u64) -> Result<u64, ToolError> {
    let v = num(args, key)?.unwrap_or(default);
    if (min..=max).contains(&v) {
        Ok(v)
    } else {
        Err(bad(format!("\"{key}\" must be {min} to {max}")))
    }
}

fn required(args: &Args, key: &str, max: u64) -> Result<u64, ToolError> {
    let v = num(args, key)?.ok_or_else(|| bad(format!("\"{key}\" is required")))?;
    if v > max {
        return Err(bad(format!("\"{key}\" must be at most {max}")));
    }
    Ok(v)
}

/// Bytes from a JSON array of 0..=255, or a string of hex bytes (`"0a ff"`, `"0x0a,0xff"`).
fn bytes(args: &Args, key: &str, max: usize) -> Result<Vec<u8>, ToolError> {
    let too_many = || bad(format!("\"{key}\" holds more than {max} bytes"));
    let mut out = Vec::new();
    match json::get(args.value(), key) {
        None | Some(Value::Null) => return Err(bad(format!("\"{key}\" is required"))),
        Some(Value::Array(items)) => {
            for v in items.iter() {
                let b = json::as_u64(v)
                    .filter(|b| *b <= 255)
                    .ok_or_else(|| bad(format!("\"{key}\" must hold bytes 0 to 255")))?;
                if out.len() == max {
                    return Err(too_many());
                }
                out.push(b as u8);
            }
        }
        Some(Value::String(s)) => {
            return hex_bytes(s, max).ok_or_else(|| {
                bad(format!(
                    "\"{key}\" must be an array of bytes or hex like \"0a ff\" (at most {max})"
                ))
            });
        }
        Some(_) => return Err(bad(format!("\"{key}\" must be an array of bytes"))),
    }
    if out.is_empty() {
        return Err(bad(format!("\"{key}\" is empty")));
    }
    Ok(out)
}

/// `"0a ff"`, `"0x0a,0xff"`, `"0aff"` → bytes; `None` when malformed or longer than `max`.
fn hex_bytes(s: &str, max: usize) -> Option<Vec<u8>> {
    let mut digits = Vec::new();
    for word in s.split(|c: char| c.is_whitespace() || c == ',') {
        let w = word
            .strip_prefix("0x")
            .or_else(|| word.strip_prefix("0X"))
            .unwrap_or(word);
        if w.len() % 2 == 1 && word.len() != w.len() {
            digits.push(b'0'); // "0xa" is 0x0a
        } else if w.len() % 2 == 1 {
            return None;
        }
        digits.extend_from_slice(w.as_bytes());
    }
    if digits.is_empty() || digits.len() / 2 > max {
        return None;
    }
    digits
        .chunks(2)
        .map(|p| {
            let h = (p[0] as char).to_digit(16)?;
            let l = (p[1] as char).to_digit(16)?;
            Some((h * 16 + l) as u8)
        })
        .collect()
}

/// `0x1a 0x80 …`, shortened after `max` bytes.
fn hex(data: &[u8], max: usize) -> String {
    let mut s = String::new();
    for (i, b) in data.iter().enumerate() {
        if i == max {
            let _ = write!(s, " … ({} bytes)", data.len());
            break;
        }
        if i > 0 {
            s.push(' ');
        }
        let _ = write!(s, "0x{b:02x}");
    }
    s
}

/// Bytes as text: printable ASCII as is, `\r` `\n` `\t` and `\xNN` for the rest.
fn shown_text(data: &[u8]) -> String {
    let mut s = String::with_capacity(data.len());
    for &b in data {
        match b {
            b'\n' => s.push_str("\\n"),
            b'\r' => s.push_str("\\r"),
            b'\t' => s.push_str("\\t"),
            b'\\' => s.push_str("\\\\"),
            0x20..=0x7e => s.push(b as char),
            _ => {
                let _ = write!(s, "\\x{b:02x}");
            }
        }
    }
    s
}

/// The device an argument names, normalised and resolved; refused when the allowlist
/// does not name it at all is left to the caller. `kind` must match the node.
fn device(args: &Args, key: &str, kind: Kind) -> Result<(String, bool), ToolError> {
    let raw = match (json::get(args.value(), key), kind) {
        // `"bus": 1` and `"chip": 0` mean i2c-1 and gpiochip0.
        (Some(v), Kind::I2c | Kind::Gpio) if json::as_u64(v).is_some() => {
            let n = json::as_u64(v).unwrap_or_default();
            match kind {
                Kind::I2c => format!("i2c-{n}"),
                _ => format!("gpiochip{n}"),
            }
        }
        _ => args.str(key)?.to_string(),
    };
    let norm = allow::normalize(&raw).map_err(|e| ToolError::Denied(e.to_string()))?;
    let real = allow::canonical(&norm);
    if real.is_none() && std::path::Path::new(&norm).exists() {
        return Err(ToolError::Denied(format!(
            "{norm} does not lead to a device node under /dev/"
        )));
    }
    let exists = real.is_some();
    let dev = real.unwrap_or(norm);
    if Kind::of(&dev) != kind {
        let want = match kind {
            Kind::Gpio => "a GPIO chip (gpiochipN)",
            Kind::I2c => "an I2C bus (i2c-N)",
            Kind::Spi => "an SPI device (spidevB.C)",
            Kind::Serial => "a serial port",
        };
        return Err(bad(format!("{dev} is not {want}")));
    }
    Ok((dev, exists))
}

fn resolver(p: &str) -> Option<String> {
    allow::canonical(p)
}

fn refused(what: &str, example: &str) -> ToolError {
    ToolError::Denied(format!(
        "{what} is not in hardware.allow; the owner can add an entry like \"{example}\" to config.json"
    ))
}

/// Check a call and decide it against `cfg`'s allowlist (see the module documentation).
pub fn plan(name: &str, args: &Args, cfg: &Config) -> Result<Plan, ToolError> {
    match name {
        "gpio" => plan_gpio(args, cfg),
        "i2c" => plan_i2c(args, cfg),
        "spi" => plan_spi(args, cfg),
        "serial_port" => plan_serial(args, cfg),
        other => Err(ToolError::Unknown(other.to_string())),
    }
}

fn gpio_settings(args: &Args) -> Result<gpio::Settings, ToolError> {
    let bias = match args.opt_str("bias")? {
        None | Some("as_is") => gpio::Bias::AsIs,
        Some("pull_up") => gpio::Bias::PullUp,
        Some("pull_down") => gpio::Bias::PullDown,
        Some("disabled") => gpio::Bias::Disabled,
        Some(_) => return Err(bad("\"bias\" must be pull_up, pull_down or disabled")),
    };
    Ok(gpio::Settings {
        bias,
        active_low: args.opt_bool("active_low")?.unwrap_or(false),
        ..gpio::Settings::INPUT
    })
}

/// The chip and offset of a line named by the kernel, among the allowed chips (or the one
/// given).
fn find_named(cfg: &Config, chip: Option<&str>, name: &str) -> Result<(String, u32), ToolError> {
    let mut chips: Vec<String> = Vec::new();
    match chip {
        Some(c) => chips.push(c.to_string()),
        None => {
            for e in cfg.hardware.allow.entries() {
                let dev = resolver(&e.device).unwrap_or_else(|| e.device.clone());
                if Kind::of(&dev) == Kind::Gpio && !chips.contains(&dev) {
                    chips.push(dev);
                }
            }
        }
    }
    for c in &chips {
        if cfg.hardware.allow.for_device(c, &resolver).is_empty() {
            continue;
        }
        let found = gpio::Chip::open(c).and_then(|chip| chip.find_line(name));
        if let Ok(Some(offset)) = found {
            return Ok((c.clone(), offset));
        }
    }
    Err(bad(format!(
        "no line named {name:?} on the allowed GPIO chips (gpio action info lists the names)"
    )))
}

fn plan_gpio(args: &Args, cfg: &Config) -> Result<Plan, ToolError> {
    let action = args.str("action")?;
    let write = matches!(action, "write" | "pulse");
    if !matches!(action, "info" | "read" | "write" | "pulse" | "wait_edge") {
        return Err(bad(
            "\"action\" must be info, read, write, pulse or wait_edge",
        ));
    }
    let s = gpio_settings(args)?;
    let allow = &cfg.hardware.allow;
    let mut missing = false;
    let (chip, line) = match args.opt_str("name")?.filter(|_| action != "info") {
        Some(name) => {
            let given = match json::get(args.value(), "chip") {
                None | Some(Value::Null) => None,
                Some(_) => Some(device(args, "chip", Kind::Gpio)?.0),
            };
            let (c, l) = find_named(cfg, given.as_deref(), name)?;
            (c, Some(l))
        }
        None => {
            let (c, exists) = device(args, "chip", Kind::Gpio)?;
            let line = match action {
                "info" => None,
                _ => Some(required(args, "line", allow::MAX_GPIO_OFFSET as u64)? as u32),
            };
            missing = !exists;
            (c, line)
        }
    };
    let rules = allow.for_device(&chip, &resolver);
    let decision = match line {
        None if rules.is_empty() => Decision::Refused,
        None => Decision::Allowed,
        Some(l) => rules.decide(Some(l), write),
    };
    if decision == Decision::Refused {
        let what = match line {
            Some(l) => format!("line {l} of {chip}"),
            None => chip.clone(),
        };
        let example = format!(
            "{}:{} {}",
            chip.trim_start_matches("/dev/"),
            line.unwrap_or(0),
            if write { "write" } else { "read" }
        );
        return Err(refused(&what, &example));
    }
    if missing {
        return Err(failed(HwError::NoDevice(chip)));
    }
    let level = || -> Result<bool, ToolError> {
        match json::get(args.value(), "value") {
            Some(Value::Bool(b)) => Ok(*b),
            _ => match args.opt_u64("value") {
                Ok(Some(0)) => Ok(false),
                Ok(Some(1)) => Ok(true),
                Ok(None) => Err(bad("\"value\" is required (0 or 1)")),
                _ => Err(bad("\"value\" must be 0 or 1")),
            },
        }
    };
    let line = line.unwrap_or(0);
    let at = format!("{chip} line {line}");
    let (op, summary) = match action {
        "info" => (
            Op::GpioInfo { chip: chip.clone() },
            format!("GPIO info of {chip}"),
        ),
        "read" => (Op::GpioRead { chip, line, s }, format!("GPIO read {at}")),
        "write" => {
            let level = level()?;
            (
                Op::GpioWrite {
                    chip,
                    line,
                    level,
                    s,
                },
                format!("GPIO write {at} = {}", level as u8),
            )
        }
        "pulse" => {
            let level = level()?;
            let ms = required(args, "duration_ms", gpio::MAX_PULSE_MS)?.max(1);
            (
                Op::GpioPulse {
                    chip,
                    line,
                    level,
                    ms,
                    s,
                },
                format!("GPIO pulse {at} = {} for {ms} ms", level as u8),
            )
        }
        _ => {
            let edge = match args.opt_str("edge")? {
                None | Some("both") => gpio::Edge::Both,
                Some("rising") => gpio::Edge::Rising,
                Some("falling") => gpio::Edge::Falling,
                Some(_) => return Err(bad("\"edge\" must be rising, falling or both")),
            };
            let ms = num_in(args, "timeout_ms", 1, gpio::MAX_WAIT_MS, 10_000)?;
            (
                Op::GpioWait {
                    chip,
                    line,
                    edge,
                    ms,
                    s,
                },
                format!("GPIO wait for an edge on {at} (up to {ms} ms)"),
            )
        }
    };
    Ok(Plan {
        op,
        decision,
        summary,
    })
}

fn plan_i2c(args: &Args, cfg: &Config) -> Result<Plan, ToolError> {
    let action = args.str("action")?;
    if !matches!(action, "scan" | "read_reg" | "write_reg" | "read" | "write") {
        return Err(bad(
            "\"action\" must be scan, read_reg, write_reg, read or write",
        ));
    }
    let write = action.starts_with("write");
    let (bus, exists) = device(args, "bus", Kind::I2c)?;
    let rules = cfg.hardware.allow.for_device(&bus, &resolver);
    let short = bus.trim_start_matches("/dev/");
    if action == "scan" {
        let addrs: Vec<u16> = (i2c::SCAN_FIRST..=i2c::SCAN_LAST)
            .filter(|&a| rules.decide(Some(a as u32), false) == Decision::Allowed)
            .collect();
        if addrs.is_empty() {
            return Err(refused(&bus, &format!("{short} read")));
        }
        if !exists {
            return Err(failed(HwError::NoDevice(bus)));
        }
        let summary = format!("I2C scan of {bus} ({} addresses)", addrs.len());
        return Ok(Plan {
            op: Op::I2cScan { bus, addrs },
            decision: Decision::Allowed,
            summary,
        });
    }
    let addr = required(args, "address", allow::MAX_I2C_ADDRESS as u64)? as u16;
    let decision = rules.decide(Some(addr as u32), write);
    if decision == Decision::Refused {
        return Err(refused(
            &format!("address 0x{addr:02x} on {bus}"),
            &format!(
                "{short}:0x{addr:02x} {}",
                if write { "write" } else { "read" }
            ),
        ));
    }
    if !exists {
        return Err(failed(HwError::NoDevice(bus)));
    }
    let max = i2c::MAX_TRANSFER_BYTES;
    let at = format!("{bus} address 0x{addr:02x}");
    let reg = || required(args, "register", 255).map(|r| r as u8);
    let len = || num_in(args, "length", 1, max as u64, 1).map(|n| n as usize);
    let (op, summary) = match action {
        "read_reg" => {
            let (reg, len) = (reg()?, len()?);
            (
                Op::I2cReadReg {
                    bus,
                    addr,
                    reg,
                    len,
                },
                format!("I2C read {at} register 0x{reg:02x}, {len} bytes"),
            )
        }
        "write_reg" => {
            let (reg, data) = (reg()?, bytes(args, "data", max)?);
            let summary = format!(
                "I2C write {at} register 0x{reg:02x}: {}",
                hex(&data, SUMMARY_DATA_BYTES)
            );
            (
                Op::I2cWriteReg {
                    bus,
                    addr,
                    reg,
                    data,
                },
                summary,
            )
        }
        "read" => {
            let len = len()?;
            (
                Op::I2cRead { bus, addr, len },
                format!("I2C read {at}, {len} bytes"),
            )
        }
        _ => {
            let data = bytes(args, "data", max)?;
            let summary = format!("I2C write {at}: {}", hex(&data, SUMMARY_DATA_BYTES));
            (Op::I2cWrite { bus, addr, data }, summary)
        }
    };
    Ok(Plan {
        op,
        decision,
        summary,
    })
}

fn plan_spi(args: &Args, cfg: &Config) -> Result<Plan, ToolError> {
    let (device, exists) = device(args, "device", Kind::Spi)?;
    // Every transfer clocks bytes out, which the device may take as commands: a write.
    let decision = cfg.hardware.allow.decide(&device, None, true, &resolver);
    if decision == Decision::Refused {
        return Err(refused(
            &device,
            &format!("{} write", device.trim_start_matches("/dev/")),
        ));
    }
    if !exists {
        return Err(failed(HwError::NoDevice(device)));
    }
    let s = spi::Settings {
        mode: num_in(args, "mode", 0, 3, 0)? as u8,
        speed_hz: num_in(
            args,
            "speed_hz",
            spi::MIN_SPEED_HZ as u64,
            spi::MAX_SPEED_HZ as u64,
            500_000,
        )? as u32,
        bits_per_word: num_in(args, "bits_per_word", 1, 32, 8)? as u8,
    };
    let data = bytes(args, "data", spi::MAX_TRANSFER_BYTES)?;
    let summary = format!(
        "SPI transfer on {device} (mode {}, {} Hz): {}",
        s.mode,
        s.speed_hz,
        hex(&data, SUMMARY_DATA_BYTES)
    );
    Ok(Plan {
        op: Op::Spi { device, s, data },
        decision,
        summary,
    })
}

fn plan_serial(args: &Args, cfg: &Config) -> Result<Plan, ToolError> {
    let action = args.str("action")?;
    let (writes, reads) = match action {
        "write" => (true, false),
        "read" => (false, true),
        "exchange" => (true, true),
        _ => return Err(bad("\"action\" must be write, read or exchange")),
    };
    let (device, exists) = device(args, "device", Kind::Serial)?;
    let console = cfg.serial.device.trim();
    if !console.is_empty() {
        let console = allow::normalize(console)
            .ok()
            .map(|c| resolver(&c).unwrap_or(c));
        if console.as_deref() == Some(device.as_str()) {
            return Err(ToolError::Denied(format!(
                "{device} is the serial chat console (serial.device); the serial_port tool does not use it"
            )));
        }
    }
    let decision = cfg.hardware.allow.decide(&device, None, writes, &resolver);
    if decision == Decision::Refused {
        return Err(refused(
            &device,
            &format!(
                "{} {}",
                device.trim_start_matches("/dev/"),
                if writes { "write" } else { "read" }
            ),
        ));
    }
    if !exists {
        return Err(failed(HwError::NoDevice(device)));
    }
    let baud = num_in(
        args,
        "baud",
        uart::MIN_BAUD as u64,
        uart::MAX_BAUD as u64,
        115_200,
    )? as u32;
    let ms = num_in(args, "timeout_ms", 1, uart::MAX_TIMEOUT_MS, 2000)?;
    let mut data = Vec::new();
    if writes {
        let text = args.str("data")?;
        if args.opt_bool("hex")?.unwrap_or(false) {
            data = hex_bytes(text, uart::MAX_WRITE_BYTES)
                .ok_or_else(|| bad("\"data\" must be hex bytes like \"0d 0a\""))?;
        } else {
            data.extend_from_slice(text.as_bytes());
        }
        data.extend_from_slice(match args.opt_str("end")? {
            None | Some("none") => b"",
            Some("lf") => b"\n",
            Some("cr") => b"\r",
            Some("crlf") => b"\r\n",
            Some(_) => return Err(bad("\"end\" must be none, lf, cr or crlf")),
        });
        if data.is_empty() || data.len() > uart::MAX_WRITE_BYTES {
            return Err(bad(format!(
                "\"data\" must be 1 to {} bytes",
                uart::MAX_WRITE_BYTES
            )));
        }
    }
    let until = if reads {
        let delimiter = args.opt_str("until")?.unwrap_or("\n").as_bytes().to_vec();
        if delimiter.len() > uart::MAX_DELIMITER_BYTES {
            return Err(bad(format!(
                "\"until\" is longer than {} bytes",
                uart::MAX_DELIMITER_BYTES
            )));
        }
        Some(uart::Until {
            delimiter,
            max_bytes: num_in(args, "max_bytes", 1, uart::MAX_READ_BYTES as u64, 1024)? as usize,
        })
    } else {
        None
    };
    let mut summary = format!("Serial {action} on {device} at {baud} baud");
    if writes {
        let shown = shown_text(&data);
        let cut: String = shown.chars().take(80).collect();
        let _ = write!(
            summary,
            ": \"{cut}{}\"",
            if cut.len() < shown.len() { "…" } else { "" }
        );
    }
    Ok(Plan {
        op: Op::Serial {
            device,
            baud,
            data,
            until,
            ms,
        },
        decision,
        summary,
    })
}

/// Run the device work of a plan (blocking: on a worker, or the CLI's own thread).
pub fn execute(op: Op) -> Result<String, HwError> {
    match op {
        Op::GpioInfo { chip } => gpio_info(&chip),
        Op::GpioRead { chip, line, s } => {
            let v = gpio::read(&chip, line, &s)?;
            Ok(format!("{chip} line {line}: {}", v as u8))
        }
        Op::GpioWrite {
            chip,
            line,
            level,
            s,
        } => {
            gpio::write(&chip, line, level, &s)?;
            Ok(format!(
                "{chip} line {line} set to {} and released (most controllers keep the level)",
                level as u8
            ))
        }
        Op::GpioPulse {
            chip,
            line,
            level,
            ms,
            s,
        } => {
            gpio::pulse(&chip, line, level, Duration::from_millis(ms), &s)?;
            Ok(format!(
                "{chip} line {line}: {} for {ms} ms, then {}",
                level as u8, !level as u8
            ))
        }
        Op::GpioWait {
            chip,
            line,
            edge,
            ms,
            s,
        } => match gpio::wait_edge(&chip, line, edge, Duration::from_millis(ms), &s)? {
            Some(e) => Ok(format!(
                "{} edge on {chip} line {line} after {} ms",
                if e.rising { "rising" } else { "falling" },
                e.after.as_millis()
            )),
            None => Ok(format!("no edge on {chip} line {line} within {ms} ms")),
        },
        Op::I2cScan { bus, addrs } => {
            let b = i2c::Bus::open(&bus)?;
            let r = b.scan(&|a| addrs.contains(&a))?;
            let list = |v: &[u16]| {
                v.iter()
                    .map(|a| format!("0x{a:02x}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let mut s = format!("{bus}: {} addresses probed; ", addrs.len());
            if r.found.is_empty() {
                s.push_str("no device answered");
            } else {
                let _ = write!(s, "answered: {}", list(&r.found));
            }
            if !r.busy.is_empty() {
                let _ = write!(s, "; busy (held by a kernel driver): {}", list(&r.busy));
            }
            if !r.skipped.is_empty() {
                let _ = write!(
                    s,
                    "; not probed (the adapter cannot do the safe probe): {}",
                    list(&r.skipped)
                );
            }
            Ok(s)
        }
        Op::I2cReadReg {
            bus,
            addr,
            reg,
            len,
        } => {
            let d = i2c::Bus::open(&bus)?.read_reg(addr, reg, len)?;
            Ok(format!(
                "{bus} address 0x{addr:02x} register 0x{reg:02x}: {}",
                hex(&d, usize::MAX)
            ))
        }
        Op::I2cWriteReg {
            bus,
            addr,
            reg,
            data,
        } => {
            i2c::Bus::open(&bus)?.write_reg(addr, reg, &data)?;
            Ok(format!(
                "wrote {} bytes to {bus} address 0x{addr:02x} register 0x{reg:02x}",
                data.len()
            ))
        }
        Op::I2cRead { bus, addr, len } => {
            let d = i2c::Bus::open(&bus)?.read(addr, len)?;
            Ok(format!(
                "{bus} address 0x{addr:02x}: {}",
                hex(&d, usize::MAX)
            ))
        }
        Op::I2cWrite { bus, addr, data } => {
            i2c::Bus::open(&bus)?.write(addr, &data)?;
            Ok(format!(
                "wrote {} bytes to {bus} address 0x{addr:02x}",
                data.len()
            ))
        }
        Op::Spi { device, s, data } => {
            let rx = spi::transfer(&device, &s, &data)?;
            Ok(format!(
                "{device}: sent {} bytes, received: {}",
                data.len(),
                hex(&rx, 256)
            ))
        }
        Op::Serial {
            device,
            baud,
            data,
            until,
            ms,
        } => {
            let got = uart::exchange(
                &device,
                baud,
                &data,
                until.as_ref(),
                Duration::from_millis(ms),
            )?;
            let mut s = String::new();
            if !data.is_empty() {
                let _ = write!(s, "sent {} bytes to {device}", data.len());
            }
            if let Some((bytes, ended)) = got {
                if !s.is_empty() {
                    s.push_str("; ");
                }
                let why = match ended {
                    uart::Ended::Delimiter => "until text seen",
                    uart::Ended::Count => "max_bytes reached",
                    uart::Ended::Timeout => "timed out",
                };
                let _ = write!(
                    s,
                    "received {} bytes ({why}): \"{}\"",
                    bytes.len(),
                    shown_text(&bytes)
                );
            }
            Ok(s)
        }
    }
}

/// `gpio info`: the chip, then its named or in-use lines.
fn gpio_info(chip: &str) -> Result<String, HwError> {
    let c = gpio::Chip::open(chip)?;
    let info = c.info()?;
    let mut s = format!(
        "{chip}: {} [{}], {} lines; named or in-use lines (offset name state):",
        info.name, info.label, info.lines
    );
    let mut listed = 0;
    let lines = info.lines.min(gpio::MAX_LINES_SCANNED);
    for offset in 0..lines {
        let l = c.line_info(offset)?;
        if l.name.is_empty() && !l.used() {
            continue;
        }
        if listed == MAX_INFO_LINES {
            s.push_str("\n…more lines not listed");
            break;
        }
        listed += 1;
        let dir = if l.output() { "output" } else { "input" };
        let _ = write!(
            s,
            "\n{offset} {} {dir}",
            if l.name.is_empty() { "-" } else { &l.name }
        );
        if l.used() {
            let consumer = if l.consumer.is_empty() {
                "kernel"
            } else {
                &l.consumer
            };
            let _ = write!(s, " used by {consumer}");
        }
    }
    if listed == 0 {
        s.push_str(" none (the lines have no names: use offsets)");
    }
    Ok(s)
}

/// Run a call (the `Tools::call` dispatch target).
pub async fn call(tools: &Tools, name: &str, args: &Args) -> Result<String, ToolError> {
    if !offered(&tools.cfg) {
        return Err(ToolError::Unknown(name.to_string()));
    }
    let p = plan(name, args, &tools.cfg)?;
    let summary = p.summary;
    let op = p.op;
    let res = tools
        .workers
        .run(move || execute(op))
        .await
        .map_err(|_| ToolError::Failed("yoctoclaw is shutting down".into()))?;
    log_access(&summary, &res);
    res.map_err(failed)
}

fn log_access(summary: &str, res: &Result<String, HwError>) {
    match res {
        Ok(_) => log::info!("hardware: {summary}: ok"),
        Err(e) => log::info!("hardware: {summary}: {e}"),
    }
}

/// Does this call need the user's approval? `Ok(true)` for a write covered only by a
/// `read` entry; a refused or malformed call is the error (so it fails at once, nobody is
/// asked). `Ok(false)` for other tools.
pub fn needs_approval(name: &str, args: &Args, cfg: &Config) -> Result<bool, ToolError> {
    if !is_tool(name) {
        return Ok(false);
    }
    if !offered(cfg) {
        return Err(ToolError::Unknown(name.to_string()));
    }
    Ok(plan(name, args, cfg)?.decision == Decision::NeedsApproval)
}

/// The one line the user approves (validates the call first, like [`needs_approval`]).
pub fn approval_summary(name: &str, args: &Args, cfg: &Config) -> Result<String, ToolError> {
    if !offered(cfg) {
        return Err(ToolError::Unknown(name.to_string()));
    }
    plan(name, args, cfg).map(|p| p.summary)
}

/// Usage of [`run_cli`].
pub const CLI_USAGE: &str = "usage: yoctoclaw hw TOOL JSON [--yes]   (TOOL: gpio, i2c, spi or serial_port; JSON: the tool's arguments, e.g. '{\"action\":\"read\",\"chip\":\"gpiochip0\",\"line\":17}'; --yes approves a write to a read-only entry)";

/// A command-line entry point for one tool call without a model: `TOOL JSON [--yes]`
/// (the words after the subcommand). Same checks and allowlist as the model's calls; a
/// write that would need approval needs `--yes`. Blocks on the device (a CLI command).
pub fn run_cli(cfg: &Config, words: &[String]) -> Result<String, ToolError> {
    let (tool, json, yes) = match words {
        [t, j] => (t, j, false),
        [t, j, y] if y == "--yes" => (t, j, true),
        _ => return Err(bad(CLI_USAGE)),
    };
    if !is_tool(tool) {
        return Err(bad(CLI_USAGE));
    }
    if !offered(cfg) {
        return Err(ToolError::Denied(
            "hardware.allow in config.json is empty, so no device may be used (see docs/hardware.md)"
                .into(),
        ));
    }
    let args = Args::parse(json)?;
    let p = plan(tool, &args, cfg)?;
    if p.decision == Decision::NeedsApproval && !yes {
        return Err(ToolError::Denied(format!(
            "{}: hardware.allow lists it as read only; add --yes to approve this write",
            p.summary
        )));
    }
    let res = execute(p.op);
    log_access(&p.summary, &res);
    res.map_err(failed)
}

#[cfg(test)]
mod tests;
