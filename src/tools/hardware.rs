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
//! `hw::uart::MAX_TIMEOUT_MS`.
//!
//! # Threads
//! Executor thread for the argument checks and the plan; the device work on a worker
//! thread.
//!
//! # Blocking
//! The device work runs on a worker (`Workers::run`), one call at a time per worker, and
//! ends within the bounds above. Planning runs on the caller's thread: it resolves
//! symlinks under `/dev` and, for a line named rather than numbered, reads the line names
//! of the allowed GPIO chips (in-kernel ioctls, no bus traffic).

use super::{Args, ToolError, Tools};
use crate::chat::ToolSpec;
use crate::config::Config;
use crate::hw::allow::{self, Decision, Kind};
use crate::hw::{HwError, gpio, i2c, spi, uart};
use crate::json;
use miniserde::json::Value;
use std::borrow::Cow;
use std::fmt::Write as _;
use std::time::Duration;

pub const GPIO: ToolSpec = ToolSpec {
    name: Cow::Borrowed("gpio"),
    description: Cow::Borrowed(
        "Read or drive a GPIO line listed in hardware.allow: read, write (then release), pulse (value for duration_ms, then the opposite), wait_edge. A line is chip + offset (Raspberry Pi GPIO17: gpiochip0 line 17) or its name.",
    ),
    parameters: Cow::Borrowed(
        r#"{"type":"object","properties":{"action":{"type":"string","enum":["read","write","pulse","wait_edge"]},"chip":{"type":"string","description":"e.g. gpiochip0"},"line":{"type":"integer","minimum":0},"name":{"type":"string","description":"line name, e.g. GPIO17, instead of line"},"value":{"type":"integer","enum":[0,1]},"duration_ms":{"type":"integer","minimum":1,"maximum":10000},"edge":{"type":"string","enum":["rising","falling","both"]},"timeout_ms":{"type":"integer","minimum":1,"maximum":60000,"description":"default 10000"},"bias":{"type":"string","enum":["pull_up","pull_down","disabled"]},"active_low":{"type":"boolean"}},"required":["action"]}"#,
    ),
};

pub const I2C: ToolSpec = ToolSpec {
    name: Cow::Borrowed("i2c"),
    description: Cow::Borrowed(
        "I2C on a bus listed in hardware.allow: scan (like i2cdetect), read_reg, write_reg, raw read and write. Bytes in bus order.",
    ),
    parameters: Cow::Borrowed(
        r#"{"type":"object","properties":{"action":{"type":"string","enum":["scan","read_reg","write_reg","read","write"]},"bus":{"type":"string","description":"e.g. i2c-1"},"address":{"type":"string","description":"e.g. 0x48"},"register":{"type":"string","description":"e.g. 0x00"},"length":{"type":"integer","minimum":1,"maximum":32,"description":"default 1"},"data":{"type":"array","items":{"type":"integer","minimum":0,"maximum":255}}},"required":["action","bus"]}"#,
    ),
};

pub const SPI: ToolSpec = ToolSpec {
    name: Cow::Borrowed("spi"),
    description: Cow::Borrowed(
        "One full-duplex SPI transfer on a spidev device listed in hardware.allow; returns the bytes received.",
    ),
    parameters: Cow::Borrowed(
        r#"{"type":"object","properties":{"device":{"type":"string","description":"e.g. spidev0.0"},"data":{"type":"array","items":{"type":"integer","minimum":0,"maximum":255}},"mode":{"type":"integer","enum":[0,1,2,3]},"speed_hz":{"type":"integer","minimum":1000,"description":"default 500000"},"bits_per_word":{"type":"integer","minimum":1,"maximum":32}},"required":["device","data"]}"#,
    ),
};

pub const SERIAL_PORT: ToolSpec = ToolSpec {
    name: Cow::Borrowed("serial_port"),
    description: Cow::Borrowed(
        "A serial port listed in hardware.allow: write, read, exchange (write, then read). Reads stop after the until text (default newline, empty for none), max_bytes or timeout_ms.",
    ),
    parameters: Cow::Borrowed(
        r#"{"type":"object","properties":{"action":{"type":"string","enum":["write","read","exchange"]},"device":{"type":"string","description":"e.g. ttyUSB0"},"baud":{"type":"integer","minimum":50,"description":"default 115200"},"data":{"type":"string"},"hex":{"type":"boolean","description":"data is hex bytes, e.g. 0d 0a"},"end":{"type":"string","enum":["none","lf","cr","crlf"],"description":"appended to data"},"until":{"type":"string"},"max_bytes":{"type":"integer","minimum":1,"maximum":4096,"description":"default 1024"},"timeout_ms":{"type":"integer","minimum":1,"maximum":30000,"description":"default 2000"}},"required":["action","device"]}"#,
    ),
};

/// The four tools, in the order they are offered.
pub const SPECS: [ToolSpec; 4] = [GPIO, I2C, SPI, SERIAL_PORT];

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

/// What to do with a requested GPIO line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpioAct {
    Read,
    Write(bool),
    /// Level, then its opposite after this many ms.
    Pulse(bool, u64),
    /// Wait up to this many ms.
    Wait(gpio::Edge, u64),
}

/// What to do on an I2C bus.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum I2cAct {
    /// Probe these addresses.
    Scan(Vec<u16>),
    ReadReg(u8, usize),
    WriteReg(u8, Vec<u8>),
    Read(usize),
    Write(Vec<u8>),
}

/// Device work, ready for a worker: everything owned and checked.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    Gpio {
        chip: String,
        line: u32,
        act: GpioAct,
        s: gpio::Settings,
    },
    I2c {
        bus: String,
        addr: u16,
        act: I2cAct,
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
/// touches (logged, shown to the user when approval is needed, and heading the result).
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
        return allow::parse_num(s)
            .map(|n| Some(n as u64))
            .ok_or_else(|| bad(format!("\"{key}\" must be a number like 72 or 0x48")));
    }
    args.opt_u64(key)
}

/// `key` within `min..=max`, `default` when absent (`None`: required).
fn num_in(
    args: &Args,
    key: &str,
    min: u64,
    max: u64,
    default: Option<u64>,
) -> Result<u64, ToolError> {
    match num(args, key)?.or(default) {
        Some(v) if (min..=max).contains(&v) => Ok(v),
        Some(_) => Err(bad(format!("\"{key}\" must be {min} to {max}"))),
        None => Err(bad(format!("\"{key}\" is required"))),
    }
}

/// Bytes from a JSON array of 0..=255, or a string of hex bytes (`"0a ff"`, `"0x0a,0xff"`).
fn bytes(args: &Args, key: &str, max: usize) -> Result<Vec<u8>, ToolError> {
    let out = match json::get(args.value(), key) {
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| json::as_u64(v).filter(|b| *b <= 255).map(|b| b as u8))
            .collect::<Option<Vec<u8>>>(),
        Some(Value::String(s)) => hex_bytes(s),
        _ => return Err(bad(format!("\"{key}\" is required"))),
    };
    match out {
        Some(v) if !v.is_empty() && v.len() <= max => Ok(v),
        _ => Err(bad(format!(
            "\"{key}\" must be 1 to {max} bytes: an array of 0-255 or hex like \"0a ff\""
        ))),
    }
}

/// `"0a ff"`, `"0x0a,0xff"` → bytes; `None` when a token is not one hex byte.
fn hex_bytes(s: &str) -> Option<Vec<u8>> {
    s.split(|c: char| c.is_whitespace() || c == ',')
        .filter(|w| !w.is_empty())
        .map(|w| {
            let h = w
                .strip_prefix("0x")
                .or_else(|| w.strip_prefix("0X"))
                .unwrap_or(w);
            if h.is_empty() || h.len() > 2 {
                return None;
            }
            u8::from_str_radix(h, 16).ok()
        })
        .collect()
}

/// Append `0x1a 0x80 …` (at most `max` bytes, then the count).
fn push_hex(s: &mut String, data: &[u8], max: usize) {
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
}

/// Append bytes as quoted text: printable ASCII as is, `\r` `\n` `\t` `\\` and `\xNN`.
fn push_text(s: &mut String, data: &[u8], max: usize) {
    s.push('"');
    for &b in data.iter().take(max) {
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
    s.push_str(if data.len() > max { "…\"" } else { "\"" });
}

/// The device an argument names, normalised and resolved, whether it exists; `kind` must
/// match the node. `"bus": 1` and `"chip": 0` mean i2c-1 and gpiochip0.
fn device(args: &Args, key: &str, kind: Kind) -> Result<(String, bool), ToolError> {
    let raw = match json::get(args.value(), key).and_then(json::as_u64) {
        Some(n) if kind == Kind::I2c => format!("i2c-{n}"),
        Some(n) if kind == Kind::Gpio => format!("gpiochip{n}"),
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

/// What a `plan_*` function found: the work, its summary, and what the allowlist
/// decides on.
struct Draft {
    op: Op,
    summary: String,
    device: String,
    exists: bool,
    /// The line or address; `None` for devices without one, and for the bus-wide
    /// `scan`, which probes the addresses the entries allow.
    which: Option<u32>,
    write: bool,
}

/// Check a call and decide it against `cfg`'s allowlist (see the module documentation).
pub fn plan(name: &str, args: &Args, cfg: &Config) -> Result<Plan, ToolError> {
    let mut d = match name {
        "gpio" => plan_gpio(args, cfg)?,
        "i2c" => plan_i2c(args)?,
        "spi" => plan_spi(args)?,
        "serial_port" => plan_serial(args, cfg)?,
        other => return Err(ToolError::Unknown(other.to_string())),
    };
    let rules = cfg.hardware.allow.for_device(&d.device, &resolver);
    let mut decision = rules.decide(d.which, d.write);
    if let Op::I2c {
        act: I2cAct::Scan(addrs),
        ..
    } = &mut d.op
    {
        addrs.extend(
            (i2c::SCAN_FIRST..=i2c::SCAN_LAST)
                .filter(|&a| rules.decide(Some(a as u32), false) == Decision::Allowed),
        );
        if !addrs.is_empty() {
            decision = Decision::Allowed;
        }
    }
    if decision == Decision::Refused {
        return Err(ToolError::Denied(format!(
            "{}: hardware.allow does not list this; the owner can add an entry to config.json (docs/hardware.md)",
            d.summary
        )));
    }
    if !d.exists {
        return Err(failed(HwError::NoDevice(d.device)));
    }
    Ok(Plan {
        op: d.op,
        decision,
        summary: d.summary,
    })
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
fn find_named(cfg: &Config, chip: Option<String>, name: &str) -> Result<(String, u32), ToolError> {
    let mut chips: Vec<String> = chip.into_iter().collect();
    if chips.is_empty() {
        for e in cfg.hardware.allow.entries() {
            let dev = resolver(&e.device).unwrap_or_else(|| e.device.clone());
            if Kind::of(&dev) == Kind::Gpio && !chips.contains(&dev) {
                chips.push(dev);
            }
        }
    }
    for c in chips {
        if cfg.hardware.allow.for_device(&c, &resolver).is_empty() {
            continue;
        }
        if let Ok(Some(offset)) = gpio::Chip::open(&c).and_then(|chip| chip.find_line(name)) {
            return Ok((c, offset));
        }
    }
    Err(bad(format!(
        "no line named {name:?} on the allowed GPIO chips (gpioinfo lists the names; or give chip and line)"
    )))
}

fn plan_gpio(args: &Args, cfg: &Config) -> Result<Draft, ToolError> {
    let action = args.str("action")?;
    let s = gpio_settings(args)?;
    let level = || match json::get(args.value(), "value") {
        Some(Value::Bool(b)) => Ok(*b),
        _ => num_in(args, "value", 0, 1, None).map(|v| v == 1),
    };
    let act = match action {
        "read" => GpioAct::Read,
        "write" => GpioAct::Write(level()?),
        "pulse" => GpioAct::Pulse(
            level()?,
            num_in(args, "duration_ms", 1, gpio::MAX_PULSE_MS, None)?,
        ),
        "wait_edge" => GpioAct::Wait(
            match args.opt_str("edge")? {
                None | Some("both") => gpio::Edge::Both,
                Some("rising") => gpio::Edge::Rising,
                Some("falling") => gpio::Edge::Falling,
                Some(_) => return Err(bad("\"edge\" must be rising, falling or both")),
            },
            num_in(args, "timeout_ms", 1, gpio::MAX_WAIT_MS, Some(10_000))?,
        ),
        _ => return Err(bad("\"action\" must be read, write, pulse or wait_edge")),
    };
    let named = args.opt_str("name")?;
    let given = match (named, json::get(args.value(), "chip")) {
        (Some(_), None | Some(Value::Null)) => None,
        _ => Some(device(args, "chip", Kind::Gpio)?),
    };
    let (chip, exists, line) = match (named, given) {
        (Some(name), given) => {
            let (c, l) = find_named(cfg, given.map(|g| g.0), name)?;
            (c, true, l)
        }
        (None, Some((c, exists))) => {
            let line = num_in(args, "line", 0, allow::MAX_GPIO_OFFSET as u64, None)? as u32;
            (c, exists, line)
        }
        (None, None) => return Err(bad("\"chip\" is required")),
    };
    let mut summary = String::from("GPIO ");
    let _ = match act {
        GpioAct::Read => write!(summary, "read {chip} line {line}"),
        GpioAct::Write(l) => write!(summary, "write {chip} line {line} = {}", l as u8),
        GpioAct::Pulse(l, ms) => write!(
            summary,
            "pulse {chip} line {line} = {} for {ms} ms",
            l as u8
        ),
        GpioAct::Wait(_, ms) => write!(
            summary,
            "wait for an edge on {chip} line {line} (up to {ms} ms)"
        ),
    };
    Ok(Draft {
        op: Op::Gpio {
            chip: chip.clone(),
            line,
            act,
            s,
        },
        summary,
        device: chip,
        exists,
        which: Some(line),
        write: matches!(act, GpioAct::Write(_) | GpioAct::Pulse(..)),
    })
}

fn plan_i2c(args: &Args) -> Result<Draft, ToolError> {
    let action = args.str("action")?;
    let (bus, exists) = device(args, "bus", Kind::I2c)?;
    let max = i2c::MAX_TRANSFER_BYTES;
    let reg = || num_in(args, "register", 0, 255, None).map(|r| r as u8);
    let len = || num_in(args, "length", 1, max as u64, Some(1)).map(|n| n as usize);
    let mut summary = String::from("I2C ");
    if action == "scan" {
        summary.push_str("scan ");
        summary.push_str(&bus);
        return Ok(Draft {
            op: Op::I2c {
                bus: bus.clone(),
                addr: 0,
                act: I2cAct::Scan(Vec::new()),
            },
            summary,
            device: bus,
            exists,
            which: None,
            write: false,
        });
    }
    let act = match action {
        "read_reg" => I2cAct::ReadReg(reg()?, len()?),
        "write_reg" => I2cAct::WriteReg(reg()?, bytes(args, "data", max)?),
        "read" => I2cAct::Read(len()?),
        "write" => I2cAct::Write(bytes(args, "data", max)?),
        _ => {
            return Err(bad(
                "\"action\" must be scan, read_reg, write_reg, read or write",
            ));
        }
    };
    let addr = num_in(args, "address", 0, allow::MAX_I2C_ADDRESS as u64, None)? as u16;
    let write = matches!(act, I2cAct::WriteReg(..) | I2cAct::Write(_));
    let _ = write!(
        summary,
        "{} {bus} address 0x{addr:02x}",
        if write { "write" } else { "read" }
    );
    match &act {
        I2cAct::ReadReg(r, _) | I2cAct::WriteReg(r, _) => {
            let _ = write!(summary, " register 0x{r:02x}");
        }
        _ => {}
    }
    match &act {
        I2cAct::ReadReg(_, n) | I2cAct::Read(n) => {
            let _ = write!(summary, ", {n} bytes");
        }
        I2cAct::WriteReg(_, data) | I2cAct::Write(data) => {
            summary.push_str(": ");
            push_hex(&mut summary, data, SUMMARY_DATA_BYTES);
        }
        I2cAct::Scan(_) => {}
    }
    Ok(Draft {
        op: Op::I2c {
            bus: bus.clone(),
            addr,
            act,
        },
        summary,
        device: bus,
        exists,
        which: Some(addr as u32),
        write,
    })
}

fn plan_spi(args: &Args) -> Result<Draft, ToolError> {
    let (device, exists) = device(args, "device", Kind::Spi)?;
    let s = spi::Settings {
        mode: num_in(args, "mode", 0, 3, Some(0))? as u8,
        speed_hz: num_in(
            args,
            "speed_hz",
            spi::MIN_SPEED_HZ as u64,
            spi::MAX_SPEED_HZ as u64,
            Some(500_000),
        )? as u32,
        bits_per_word: num_in(args, "bits_per_word", 1, 32, Some(8))? as u8,
    };
    let data = bytes(args, "data", spi::MAX_TRANSFER_BYTES)?;
    let mut summary = format!(
        "SPI transfer on {device} (mode {}, {} Hz): ",
        s.mode, s.speed_hz
    );
    push_hex(&mut summary, &data, SUMMARY_DATA_BYTES);
    Ok(Draft {
        op: Op::Spi {
            device: device.clone(),
            s,
            data,
        },
        summary,
        device,
        exists,
        which: None,
        // Every transfer clocks bytes out, which the device may take as commands.
        write: true,
    })
}

fn plan_serial(args: &Args, cfg: &Config) -> Result<Draft, ToolError> {
    let action = args.str("action")?;
    let (writes, reads) = match action {
        "write" => (true, false),
        "read" => (false, true),
        "exchange" => (true, true),
        _ => return Err(bad("\"action\" must be write, read or exchange")),
    };
    let (device, exists) = device(args, "device", Kind::Serial)?;
    let console = allow::normalize(&cfg.serial.device)
        .ok()
        .map(|c| resolver(&c).unwrap_or(c));
    if console.as_deref() == Some(device.as_str()) {
        return Err(ToolError::Denied(format!(
            "{device} is the serial chat console (serial.device); the serial_port tool does not use it"
        )));
    }
    let baud = num_in(
        args,
        "baud",
        uart::MIN_BAUD as u64,
        uart::MAX_BAUD as u64,
        Some(115_200),
    )? as u32;
    let ms = num_in(args, "timeout_ms", 1, uart::MAX_TIMEOUT_MS, Some(2000))?;
    let mut data = Vec::new();
    if writes {
        let text = args.str("data")?;
        if args.opt_bool("hex")?.unwrap_or(false) {
            data =
                hex_bytes(text).ok_or_else(|| bad("\"data\" must be hex bytes like \"0d 0a\""))?;
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
            max_bytes: num_in(
                args,
                "max_bytes",
                1,
                uart::MAX_READ_BYTES as u64,
                Some(1024),
            )? as usize,
        })
    } else {
        None
    };
    let mut summary = format!("Serial {action} on {device} at {baud} baud");
    if writes {
        summary.push_str(": ");
        push_text(&mut summary, &data, 80);
    }
    Ok(Draft {
        op: Op::Serial {
            device: device.clone(),
            baud,
            data,
            until,
            ms,
        },
        summary,
        device,
        exists,
        which: None,
        write: writes,
    })
}

/// Run the device work of a plan (blocking: on a worker, or the CLI's own thread) and
/// say how it ended, briefly: the plan's summary heads the result.
pub fn execute(op: Op) -> Result<String, HwError> {
    let mut out = String::new();
    match op {
        Op::Gpio {
            chip,
            line,
            act,
            mut s,
        } => {
            s.output = match act {
                GpioAct::Write(l) | GpioAct::Pulse(l, _) => Some(l),
                _ => None,
            };
            s.edge = match act {
                GpioAct::Wait(e, _) => Some(e),
                _ => None,
            };
            // A write's level goes in with the request: no glitch, nothing more to do.
            let l = gpio::Chip::open(&chip)?.request(line, &s)?;
            match act {
                GpioAct::Read => out.push(if l.get()? { '1' } else { '0' }),
                GpioAct::Write(_) => out.push_str("done; the line is released"),
                GpioAct::Pulse(level, ms) => {
                    std::thread::sleep(Duration::from_millis(ms.min(gpio::MAX_PULSE_MS)));
                    l.set(!level)?;
                    out.push_str("done");
                }
                GpioAct::Wait(_, ms) => match l.wait_edge(Duration::from_millis(ms))? {
                    Some(e) => {
                        let _ = write!(
                            out,
                            "{} edge after {} ms",
                            if e.rising { "rising" } else { "falling" },
                            e.after.as_millis()
                        );
                    }
                    None => out.push_str("no edge in time"),
                },
            }
        }
        Op::I2c { bus, addr, act } => {
            let b = i2c::Bus::open(&bus)?;
            match act {
                I2cAct::Scan(addrs) => {
                    let r = b.scan(&|a| addrs.contains(&a))?;
                    for (label, list) in [
                        ("answered:", &r.found),
                        ("; busy (held by a kernel driver):", &r.busy),
                        ("; not probed (no safe probe on this adapter):", &r.skipped),
                    ] {
                        if list.is_empty() {
                            continue;
                        }
                        out.push_str(label);
                        for a in list {
                            let _ = write!(out, " 0x{a:02x}");
                        }
                    }
                    if r.found.is_empty() {
                        out.insert_str(0, "no device answered");
                    }
                }
                I2cAct::ReadReg(reg, n) => push_hex(&mut out, &b.read_reg(addr, reg, n)?, n),
                I2cAct::WriteReg(reg, data) => {
                    b.write_reg(addr, reg, &data)?;
                    out.push_str("done");
                }
                I2cAct::Read(n) => push_hex(&mut out, &b.read(addr, n)?, n),
                I2cAct::Write(data) => {
                    b.write(addr, &data)?;
                    out.push_str("done");
                }
            }
        }
        Op::Spi { device, s, data } => {
            out.push_str("received ");
            push_hex(&mut out, &spi::transfer(&device, &s, &data)?, 256);
        }
        Op::Serial {
            device,
            baud,
            data,
            until,
            ms,
        } => match uart::exchange(
            &device,
            baud,
            &data,
            until.as_ref(),
            Duration::from_millis(ms),
        )? {
            None => out.push_str("sent"),
            Some((got, ended)) => {
                let why = match ended {
                    uart::Ended::Delimiter => "until text seen",
                    uart::Ended::Count => "max_bytes reached",
                    uart::Ended::Timeout => "timed out",
                };
                let _ = write!(out, "received {} bytes ({why}): ", got.len());
                push_text(&mut out, &got, usize::MAX);
            }
        },
    }
    Ok(out)
}

/// Run a plan's work and say how it went: `SUMMARY -> outcome`, logged at info either way.
/// Blocking (on a worker, or the CLI's own thread).
fn run_plan(p: Plan) -> Result<String, ToolError> {
    match execute(p.op) {
        Ok(out) => {
            log::info!("hardware: {}: ok", p.summary);
            Ok(format!("{} -> {out}", p.summary))
        }
        Err(e) => {
            log::info!("hardware: {}: {e}", p.summary);
            Err(failed(e))
        }
    }
}

/// Run a call (the `Tools::call` dispatch target).
pub async fn call(tools: &Tools, name: &str, args: &Args) -> Result<String, ToolError> {
    if !offered(&tools.cfg()) {
        return Err(ToolError::Unknown(name.to_string()));
    }
    let p = plan(name, args, &tools.cfg())?;
    tools
        .workers
        .run(move || run_plan(p))
        .await
        .map_err(|_| ToolError::Failed("yoctoclaw is shutting down".into()))?
}

/// Does this call need the user's approval? `Ok(true)` for a write covered only by a
/// `read` entry; a refused or malformed call is the error. `Ok(false)` for other tools.
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
pub const CLI_USAGE: &str = "usage: yoctoclaw hw TOOL JSON [--yes] (TOOL: gpio, i2c, spi or serial_port; --yes approves a write to a read entry)";

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
    let p = plan(tool, &Args::parse(json)?, cfg)?;
    if p.decision == Decision::NeedsApproval && !yes {
        return Err(ToolError::Denied(format!(
            "{}: hardware.allow lists it as read only; add --yes to approve this write",
            p.summary
        )));
    }
    run_plan(p)
}

#[cfg(test)]
mod tests;
