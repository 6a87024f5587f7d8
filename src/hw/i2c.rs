//! I2C through `/dev/i2c-N` (linux/i2c-dev.h, linux/i2c.h): the adapter's functionality
//! (`I2C_FUNCS`), SMBus transfers (`I2C_SMBUS`: quick, byte, byte data, word data),
//! plain I2C messages (`I2C_RDWR`) when the adapter can do them, register reads and
//! writes that pick whichever of those the adapter supports, and a scan that follows
//! i2cdetect's rules.
//!
//! Register data is returned and taken in bus order (the order the bytes travel on the
//! wire): SMBus words are little-endian on the wire, many sensors send big-endian values;
//! the caller decides what the bytes mean.
//!
//! Scan (as `i2cdetect -y BUS` in its default "auto" mode): addresses 0x08..=0x77 only (the
//! reserved 0x00-0x07 and 0x78-0x7f are never touched); a read byte probe for 0x30-0x37 and
//! 0x50-0x5f (EEPROMs, where a quick write can corrupt an AT24RF08) and an SMBus quick
//! write elsewhere (a read can lock up some write-only chips); an address whose probe the
//! adapter cannot do is skipped; an address a kernel driver holds is reported busy (EBUSY
//! from `I2C_SLAVE`, `UU` in i2cdetect) and not probed.
//!
//! # Bounds
//! [`MAX_TRANSFER_BYTES`] per read or write (the SMBus block size, 32); one or two
//! messages per `I2C_RDWR`. The kernel's adapter timeout (usually 1 s per transfer) bounds
//! each transfer; a scan makes at most 112 of them.
//!
//! # Threads
//! Worker threads (`tools::hardware` hands each call there).
//!
//! # Blocking
//! Every function blocks on the bus: run on a worker thread.

use super::{HwError, ioctl, open_rw};
use rustix::fd::OwnedFd;
use rustix::fs::OFlags;
use rustix::ioctl::Opcode;
use std::ffi::c_void;

const NOT_7_BIT: &str = "I2C addresses are 7-bit: 0x00 to 0x7f";
const SMBUS_ONLY: &str =
    "the I2C adapter speaks SMBus only: register reads and writes of 1 or 2 bytes";

/// Most bytes read or written in one call.
pub const MAX_TRANSFER_BYTES: usize = 32;
/// First and last addresses a scan probes (i2cdetect's defaults).
pub const SCAN_FIRST: u16 = 0x08;
pub const SCAN_LAST: u16 = 0x77;

pub const I2C_SLAVE: Opcode = 0x0703;
pub const I2C_FUNCS: Opcode = 0x0705;
pub const I2C_RDWR: Opcode = 0x0707;
pub const I2C_SMBUS: Opcode = 0x0720;

pub const FUNC_I2C: u64 = 0x0000_0001;
pub const FUNC_SMBUS_QUICK: u64 = 0x0001_0000;
pub const FUNC_SMBUS_READ_BYTE: u64 = 0x0002_0000;
pub const FUNC_SMBUS_WRITE_BYTE: u64 = 0x0004_0000;
pub const FUNC_SMBUS_READ_BYTE_DATA: u64 = 0x0008_0000;
pub const FUNC_SMBUS_WRITE_BYTE_DATA: u64 = 0x0010_0000;
pub const FUNC_SMBUS_READ_WORD_DATA: u64 = 0x0020_0000;
pub const FUNC_SMBUS_WRITE_WORD_DATA: u64 = 0x0040_0000;

const SMBUS_READ: u8 = 1;
const SMBUS_WRITE: u8 = 0;
const SMBUS_QUICK: u32 = 0;
const SMBUS_BYTE: u32 = 1;
const SMBUS_BYTE_DATA: u32 = 2;
const SMBUS_WORD_DATA: u32 = 3;
const M_RD: u16 = 0x0001;
/// `I2C_SMBUS_BLOCK_MAX + 2`: the size of `union i2c_smbus_data`.
const SMBUS_DATA_BYTES: usize = 34;

/// `union i2c_smbus_data`: `byte`, `word` and `block[34]` share its start.
#[repr(C, align(2))]
pub struct SmbusData(pub [u8; SMBUS_DATA_BYTES]);

/// `struct i2c_smbus_ioctl_data`.
#[repr(C)]
pub struct SmbusIoctlData {
    pub read_write: u8,
    pub command: u8,
    pub size: u32,
    pub data: *mut SmbusData,
}

/// `struct i2c_msg`.
#[repr(C)]
pub struct Msg {
    pub addr: u16,
    pub flags: u16,
    pub len: u16,
    pub buf: *mut u8,
}

/// `struct i2c_rdwr_ioctl_data`.
#[repr(C)]
pub struct RdwrIoctlData {
    pub msgs: *mut Msg,
    pub nmsgs: u32,
}

// The layouts of linux/i2c.h and linux/i2c-dev.h, checked when this file compiles, for
// every target: sizeof and offsetof printed by a C program including the headers (Linux
// 6.x). The structs holding a pointer differ with its width: 64-bit (x86_64, aarch64,
// riscv64) and 32-bit (armv7, where a pointer aligns to 4 like a u32).
const _: () = {
    use std::mem::offset_of;
    const PTR: usize = size_of::<*mut u8>();
    assert!(size_of::<SmbusData>() == 34);
    assert!(offset_of!(SmbusIoctlData, size) == 4);
    assert!(offset_of!(SmbusIoctlData, data) == 8);
    assert!(size_of::<SmbusIoctlData>() == 8 + PTR);
    assert!(offset_of!(Msg, buf) == 8);
    assert!(size_of::<Msg>() == 8 + PTR);
    assert!(offset_of!(RdwrIoctlData, nmsgs) == PTR);
    assert!(size_of::<RdwrIoctlData>() == 2 * PTR);
};

/// What a scan found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scan {
    /// Addresses that answered.
    pub found: Vec<u16>,
    /// Addresses held by a kernel driver (not probed).
    pub busy: Vec<u16>,
    /// Addresses skipped because the adapter cannot do their probe.
    pub skipped: Vec<u16>,
}

/// The probe i2cdetect uses for `addr` in its default mode: `true` for read byte.
pub fn probe_reads(addr: u16) -> bool {
    (0x30..=0x37).contains(&addr) || (0x50..=0x5f).contains(&addr)
}

/// An open I2C adapter and what it can do.
pub struct Bus {
    fd: OwnedFd,
    path: String,
    funcs: u64,
}

fn check_len(n: usize) -> Result<(), HwError> {
    if n == 0 || n > MAX_TRANSFER_BYTES {
        return Err(HwError::Invalid("an I2C transfer is 1 to 32 bytes"));
    }
    Ok(())
}

impl Bus {
    pub fn open(path: &str) -> Result<Bus, HwError> {
        let fd = open_rw(path, OFlags::empty())?;
        let mut funcs: std::ffi::c_ulong = 0;
        // SAFETY: I2C_FUNCS writes one `unsigned long` through its argument.
        unsafe { ioctl(&fd, I2C_FUNCS, &mut funcs as *mut _ as *mut c_void) }
            .map_err(|e| HwError::from_errno(e, path, ""))?;
        Ok(Bus {
            fd,
            path: path.to_string(),
            funcs: funcs as u64,
        })
    }

    /// The adapter's `I2C_FUNC_*` bits.
    pub fn funcs(&self) -> u64 {
        self.funcs
    }

    fn at(&self, addr: u16) -> String {
        format!("address 0x{addr:02x} on {}", self.path)
    }

    /// `Unsupported(why)` unless the adapter has every bit of `func`.
    fn need(&self, func: u64, why: &'static str) -> Result<(), HwError> {
        if self.funcs & func == func {
            Ok(())
        } else {
            Err(HwError::Unsupported(why))
        }
    }

    fn set_addr(&self, addr: u16) -> Result<(), HwError> {
        if addr > 0x7f {
            return Err(HwError::Invalid(NOT_7_BIT));
        }
        // SAFETY: I2C_SLAVE takes the address itself as the argument, not a pointer.
        unsafe { ioctl(&self.fd, I2C_SLAVE, addr as usize as *mut c_void) }
            .map(drop)
            .map_err(|e| HwError::from_errno(e, &self.path, &self.at(addr)))
    }

    /// One SMBus transfer to `addr`; `data` in and out.
    fn smbus(
        &self,
        addr: u16,
        read_write: u8,
        command: u8,
        size: u32,
        data: &mut SmbusData,
    ) -> Result<(), HwError> {
        self.set_addr(addr)?;
        let mut args = SmbusIoctlData {
            read_write,
            command,
            size,
            data,
        };
        // SAFETY: I2C_SMBUS takes a `struct i2c_smbus_ioctl_data *` whose `data` points
        // to a 34-byte `union i2c_smbus_data`; both live across the call.
        unsafe { ioctl(&self.fd, I2C_SMBUS, &mut args as *mut _ as *mut c_void) }
            .map(drop)
            .map_err(|e| HwError::from_errno(e, &self.path, &self.at(addr)))
    }

    fn smbus_simple(
        &self,
        addr: u16,
        rw: u8,
        command: u8,
        size: u32,
        value: u16,
    ) -> Result<u16, HwError> {
        let mut d = SmbusData([0; SMBUS_DATA_BYTES]);
        d.0[..2].copy_from_slice(&value.to_ne_bytes());
        self.smbus(addr, rw, command, size, &mut d)?;
        Ok(match size {
            SMBUS_WORD_DATA => u16::from_ne_bytes([d.0[0], d.0[1]]),
            _ => d.0[0] as u16,
        })
    }

    /// SMBus quick write (the address alone, write bit set).
    pub fn quick_write(&self, addr: u16) -> Result<(), HwError> {
        self.need(FUNC_SMBUS_QUICK, "the I2C adapter cannot do SMBus quick")?;
        self.smbus_simple(addr, SMBUS_WRITE, 0, SMBUS_QUICK, 0)
            .map(drop)
    }

    /// SMBus receive byte.
    pub fn read_byte(&self, addr: u16) -> Result<u8, HwError> {
        self.need(
            FUNC_SMBUS_READ_BYTE,
            "the I2C adapter cannot do SMBus read byte",
        )?;
        self.smbus_simple(addr, SMBUS_READ, 0, SMBUS_BYTE, 0)
            .map(|v| v as u8)
    }

    /// SMBus send byte.
    pub fn write_byte(&self, addr: u16, value: u8) -> Result<(), HwError> {
        self.need(
            FUNC_SMBUS_WRITE_BYTE,
            "the I2C adapter cannot do SMBus write byte",
        )?;
        // The byte travels in the command field.
        self.smbus_simple(addr, SMBUS_WRITE, value, SMBUS_BYTE, 0)
            .map(drop)
    }

    pub fn read_byte_data(&self, addr: u16, reg: u8) -> Result<u8, HwError> {
        self.need(
            FUNC_SMBUS_READ_BYTE_DATA,
            "the I2C adapter cannot do SMBus read byte data",
        )?;
        self.smbus_simple(addr, SMBUS_READ, reg, SMBUS_BYTE_DATA, 0)
            .map(|v| v as u8)
    }

    pub fn write_byte_data(&self, addr: u16, reg: u8, value: u8) -> Result<(), HwError> {
        self.need(
            FUNC_SMBUS_WRITE_BYTE_DATA,
            "the I2C adapter cannot do SMBus write byte data",
        )?;
        self.smbus_simple(addr, SMBUS_WRITE, reg, SMBUS_BYTE_DATA, value as u16)
            .map(drop)
    }

    /// SMBus read word data: the word as SMBus defines it (first byte on the wire low).
    pub fn read_word_data(&self, addr: u16, reg: u8) -> Result<u16, HwError> {
        self.need(
            FUNC_SMBUS_READ_WORD_DATA,
            "the I2C adapter cannot do SMBus read word data",
        )?;
        self.smbus_simple(addr, SMBUS_READ, reg, SMBUS_WORD_DATA, 0)
    }

    pub fn write_word_data(&self, addr: u16, reg: u8, value: u16) -> Result<(), HwError> {
        self.need(
            FUNC_SMBUS_WRITE_WORD_DATA,
            "the I2C adapter cannot do SMBus write word data",
        )?;
        self.smbus_simple(addr, SMBUS_WRITE, reg, SMBUS_WORD_DATA, value)
            .map(drop)
    }

    /// One `I2C_RDWR` with one or two messages (a write, then a read after a repeated
    /// start).
    fn rdwr(&self, addr: u16, write: &[u8], read: &mut [u8]) -> Result<(), HwError> {
        self.need(FUNC_I2C, SMBUS_ONLY)?;
        if addr > 0x7f {
            return Err(HwError::Invalid(NOT_7_BIT));
        }
        let mut wbuf = write.to_vec();
        let mut msgs = [
            Msg {
                addr,
                flags: 0,
                len: wbuf.len() as u16,
                buf: wbuf.as_mut_ptr(),
            },
            Msg {
                addr,
                flags: M_RD,
                len: read.len() as u16,
                buf: read.as_mut_ptr(),
            },
        ];
        let (first, n) = match (write.is_empty(), read.is_empty()) {
            (false, false) => (0, 2),
            (false, true) => (0, 1),
            (true, false) => (1, 1),
            (true, true) => return Ok(()),
        };
        let mut args = RdwrIoctlData {
            msgs: msgs[first..].as_mut_ptr(),
            nmsgs: n,
        };
        // SAFETY: I2C_RDWR takes a `struct i2c_rdwr_ioctl_data *` pointing at `n` messages
        // whose buffers are live and as long as their `len` (both at most 33 bytes).
        unsafe { ioctl(&self.fd, I2C_RDWR, &mut args as *mut _ as *mut c_void) }
            .map(drop)
            .map_err(|e| HwError::from_errno(e, &self.path, &self.at(addr)))
    }

    /// Read `n` bytes straight from the device (no register).
    pub fn read(&self, addr: u16, n: usize) -> Result<Vec<u8>, HwError> {
        check_len(n)?;
        if n == 1 && self.funcs & FUNC_I2C == 0 {
            return self.read_byte(addr).map(|b| vec![b]);
        }
        let mut buf = vec![0; n];
        self.rdwr(addr, &[], &mut buf)?;
        Ok(buf)
    }

    /// Write bytes straight to the device.
    pub fn write(&self, addr: u16, data: &[u8]) -> Result<(), HwError> {
        check_len(data.len())?;
        if data.len() == 1 && self.funcs & FUNC_I2C == 0 {
            return self.write_byte(addr, data[0]);
        }
        self.rdwr(addr, data, &mut [])
    }

    /// Read `n` bytes starting at register `reg`, in bus order. One byte: SMBus read byte
    /// data; more: a write of `reg` and a read after a repeated start when the adapter
    /// speaks plain I2C, else SMBus word data (2 bytes only).
    pub fn read_reg(&self, addr: u16, reg: u8, n: usize) -> Result<Vec<u8>, HwError> {
        check_len(n)?;
        if n == 1 && self.funcs & FUNC_SMBUS_READ_BYTE_DATA != 0 {
            return self.read_byte_data(addr, reg).map(|b| vec![b]);
        }
        if self.funcs & FUNC_I2C != 0 {
            let mut buf = vec![0; n];
            self.rdwr(addr, &[reg], &mut buf)?;
            return Ok(buf);
        }
        if n != 2 {
            return Err(HwError::Unsupported(SMBUS_ONLY));
        }
        self.read_word_data(addr, reg)
            .map(|w| w.to_le_bytes().to_vec())
    }

    /// Write `data` starting at register `reg` (bus order), choosing the transfer as
    /// [`Bus::read_reg`] does.
    pub fn write_reg(&self, addr: u16, reg: u8, data: &[u8]) -> Result<(), HwError> {
        check_len(data.len())?;
        if data.len() == 1 && self.funcs & FUNC_SMBUS_WRITE_BYTE_DATA != 0 {
            return self.write_byte_data(addr, reg, data[0]);
        }
        if self.funcs & FUNC_I2C != 0 {
            let mut buf = Vec::with_capacity(data.len() + 1);
            buf.push(reg);
            buf.extend_from_slice(data);
            return self.rdwr(addr, &buf, &mut []);
        }
        match data {
            [lo, hi] => self.write_word_data(addr, reg, u16::from_le_bytes([*lo, *hi])),
            _ => Err(HwError::Unsupported(SMBUS_ONLY)),
        }
    }

    /// Probe the addresses for which `allowed` is true, by i2cdetect's rules (module
    /// documentation). An error other than "nobody answered" or "busy" stops the scan.
    pub fn scan(&self, allowed: &dyn Fn(u16) -> bool) -> Result<Scan, HwError> {
        if self.funcs & (FUNC_SMBUS_QUICK | FUNC_SMBUS_READ_BYTE) == 0 {
            return Err(HwError::Unsupported(
                "the I2C adapter can do neither SMBus quick nor read byte, so it cannot be scanned",
            ));
        }
        let mut out = Scan::default();
        for addr in SCAN_FIRST..=SCAN_LAST {
            if !allowed(addr) {
                continue;
            }
            let reads = probe_reads(addr);
            let func = if reads {
                FUNC_SMBUS_READ_BYTE
            } else {
                FUNC_SMBUS_QUICK
            };
            if self.funcs & func == 0 {
                out.skipped.push(addr);
                continue;
            }
            match self.set_addr(addr) {
                Ok(()) => {}
                Err(HwError::Busy(_)) => {
                    out.busy.push(addr);
                    continue;
                }
                Err(e) => return Err(e),
            }
            let probe = if reads {
                self.read_byte(addr).map(drop)
            } else {
                self.quick_write(addr)
            };
            // i2cdetect counts any failed probe as "nobody there".
            if probe.is_ok() {
                out.found.push(addr);
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustix::io::Errno;

    fn transfer_error(e: Errno, device: &str, addr: u16) -> HwError {
        HwError::from_errno(e, device, &format!("address 0x{addr:02x} on {device}"))
    }

    #[test]
    fn scan_probes_follow_i2cdetect() {
        let reads: Vec<u16> = (SCAN_FIRST..=SCAN_LAST)
            .filter(|&a| probe_reads(a))
            .collect();
        let want: Vec<u16> = (0x30..=0x37).chain(0x50..=0x5f).collect();
        assert_eq!(reads, want);
        assert_eq!((SCAN_FIRST, SCAN_LAST), (0x08, 0x77));
        assert_eq!((SCAN_FIRST..=SCAN_LAST).count(), 112);
    }

    #[test]
    fn a_nack_is_reported_as_nobody_answering() {
        for e in [Errno::NXIO, Errno::REMOTEIO, Errno::NODEV] {
            let got = transfer_error(e, "/dev/i2c-1", 0x48);
            assert_eq!(got, HwError::NoAck("address 0x48 on /dev/i2c-1".into()));
        }
        assert_eq!(
            transfer_error(Errno::BUSY, "/dev/i2c-1", 0x1a),
            HwError::Busy("address 0x1a on /dev/i2c-1".into())
        );
    }

    #[test]
    fn lengths_are_bounded() {
        assert_eq!(MAX_TRANSFER_BYTES, 32, "the messages say 32");
        assert!(check_len(0).is_err());
        assert!(check_len(MAX_TRANSFER_BYTES + 1).is_err());
        assert!(check_len(1).is_ok() && check_len(MAX_TRANSFER_BYTES).is_ok());
    }

    #[test]
    fn a_file_that_is_not_an_adapter_is_refused_clearly() {
        assert!(matches!(
            Bus::open("/dev/null"),
            Err(HwError::Unsupported(_))
        ));
        assert!(matches!(
            Bus::open("/dev/i2c-yoctoclaw-missing"),
            Err(HwError::NoDevice(_))
        ));
    }

    // A real adapter (the i2c-stub module with a chip at 0x48: scan, SMBus byte and word
    // transfers, the refusal of plain I2C, no answer at 0x49) is checked where one exists:
    // scripts/hw-vm.sh, scripts/vm/hw-amd64.cmds (a unit test here could only skip: no
    // test machine has i2c-stub loaded).
}
