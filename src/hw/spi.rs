//! SPI through `/dev/spidevB.C` (linux/spi/spidev.h): one full-duplex transfer per call,
//! with the clock mode, speed and word size given by the caller each time.
//!
//! The mode (CPOL/CPHA, 0-3) is a property of the device, not of a transfer: it is read
//! (`SPI_IOC_RD_MODE`), its two low bits replaced and written back (`SPI_IOC_WR_MODE`), so
//! flags set by the device tree (CS_HIGH, 3-wire, LSB first) stay as they are. Speed and
//! bits per word travel in the transfer itself (`SPI_IOC_MESSAGE(1)`); the controller
//! clamps a speed above its maximum.
//!
//! # Bounds
//! [`MAX_TRANSFER_BYTES`] per transfer; speeds [`MIN_SPEED_HZ`]..=[`MAX_SPEED_HZ`]; bits
//! per word 1..=32 (the kernel refuses what the controller cannot do).
//!
//! # Threads
//! Worker threads (`tools::hardware` hands each call there).
//!
//! # Blocking
//! The transfer blocks until the bytes are clocked out (4 KiB at 100 kHz is about 0.3 s):
//! run on a worker thread.

use super::{HwError, ioctl, ioctl_is, open_rw};
use rustix::fs::OFlags;
use rustix::io::Errno;
use rustix::ioctl::{Opcode, opcode};
use std::ffi::c_void;

/// Most bytes in one transfer (spidev's default buffer is 4096).
pub const MAX_TRANSFER_BYTES: usize = 4096;
/// Slowest clock accepted.
pub const MIN_SPEED_HZ: u32 = 1_000;
/// Fastest clock accepted.
pub const MAX_SPEED_HZ: u32 = 100_000_000;

/// `struct spi_ioc_transfer`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct Transfer {
    pub tx_buf: u64,
    pub rx_buf: u64,
    pub len: u32,
    pub speed_hz: u32,
    pub delay_usecs: u16,
    pub bits_per_word: u8,
    pub cs_change: u8,
    pub tx_nbits: u8,
    pub rx_nbits: u8,
    pub word_delay_usecs: u8,
    pub pad: u8,
}

const SPI_IOC_MAGIC: u8 = b'k';
/// `SPI_IOC_MESSAGE(1)`: `_IOW('k', 0, char[sizeof(struct spi_ioc_transfer)])`.
pub const SPI_IOC_MESSAGE_1: Opcode = opcode::write::<Transfer>(SPI_IOC_MAGIC, 0);
pub const SPI_IOC_RD_MODE: Opcode = opcode::read::<u8>(SPI_IOC_MAGIC, 1);
pub const SPI_IOC_WR_MODE: Opcode = opcode::write::<u8>(SPI_IOC_MAGIC, 1);

// The layout of linux/spi/spidev.h, checked when this file compiles, for every target
// (the header makes it the same for 32- and 64-bit userspace: the buffers are u64s):
// sizeof and offsetof printed by a C program including it (Linux 6.x).
const _: () = {
    use std::mem::offset_of;
    assert!(size_of::<Transfer>() == 32);
    assert!(offset_of!(Transfer, len) == 16);
    assert!(offset_of!(Transfer, speed_hz) == 20);
    assert!(offset_of!(Transfer, bits_per_word) == 26);
    assert!(offset_of!(Transfer, word_delay_usecs) == 30);
};

// The request numbers, as the header's macros give them (super::ioctl_is).
const _: () = {
    assert!(ioctl_is(SPI_IOC_MESSAGE_1, 0x4020_6b00));
    assert!(ioctl_is(SPI_IOC_RD_MODE, 0x8001_6b01));
    assert!(ioctl_is(SPI_IOC_WR_MODE, 0x4001_6b01));
};
/// The CPOL and CPHA bits of the mode.
const MODE_MASK: u8 = 0x03;

/// One transfer's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// SPI mode 0-3 (CPOL << 1 | CPHA).
    pub mode: u8,
    pub speed_hz: u32,
    pub bits_per_word: u8,
}

impl Settings {
    pub fn check(&self) -> Result<(), HwError> {
        if self.mode > 3 {
            return Err(HwError::Invalid("SPI mode must be 0, 1, 2 or 3"));
        }
        if !(MIN_SPEED_HZ..=MAX_SPEED_HZ).contains(&self.speed_hz) {
            return Err(HwError::Invalid("SPI speed must be 1000 to 100000000 Hz"));
        }
        if !(1..=32).contains(&self.bits_per_word) {
            return Err(HwError::Invalid("bits per word must be 1 to 32"));
        }
        Ok(())
    }
}

/// Clock `tx` out of `device` and return the bytes clocked in meanwhile (as many).
pub fn transfer(device: &str, s: &Settings, tx: &[u8]) -> Result<Vec<u8>, HwError> {
    s.check()?;
    if tx.is_empty() || tx.len() > MAX_TRANSFER_BYTES {
        return Err(HwError::Invalid("an SPI transfer is 1 to 4096 bytes"));
    }
    let fd = open_rw(device, OFlags::empty())?;
    let fail = |e: Errno| match e {
        Errno::INVAL => {
            HwError::Invalid("the SPI controller refused this mode, speed or word size")
        }
        e => HwError::from_errno(e, device, device),
    };
    let mut mode: u8 = 0;
    // SAFETY: SPI_IOC_RD_MODE writes one byte through its argument.
    unsafe { ioctl(&fd, SPI_IOC_RD_MODE, &mut mode as *mut u8 as *mut c_void) }.map_err(fail)?;
    if mode & MODE_MASK != s.mode {
        let mut new = (mode & !MODE_MASK) | s.mode;
        // SAFETY: SPI_IOC_WR_MODE reads one byte through its argument.
        unsafe { ioctl(&fd, SPI_IOC_WR_MODE, &mut new as *mut u8 as *mut c_void) }.map_err(fail)?;
    }
    let mut rx = vec![0u8; tx.len()];
    let mut t = Transfer {
        tx_buf: tx.as_ptr() as usize as u64,
        rx_buf: rx.as_mut_ptr() as usize as u64,
        len: tx.len() as u32,
        speed_hz: s.speed_hz,
        bits_per_word: s.bits_per_word,
        ..Transfer::default()
    };
    // SAFETY: SPI_IOC_MESSAGE(1) takes one `struct spi_ioc_transfer`; its buffers are
    // live for the call and both `len` bytes long (the kernel reads tx, writes rx).
    unsafe {
        ioctl(
            &fd,
            SPI_IOC_MESSAGE_1,
            &mut t as *mut Transfer as *mut c_void,
        )
    }
    .map_err(fail)?;
    Ok(rx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_bounds() {
        assert_eq!(
            (MIN_SPEED_HZ, MAX_SPEED_HZ, MAX_TRANSFER_BYTES),
            (1_000, 100_000_000, 4096)
        );
    }

    #[test]
    fn settings_and_lengths_are_checked_before_the_device_is_opened() {
        let ok = Settings {
            mode: 0,
            speed_hz: 500_000,
            bits_per_word: 8,
        };
        assert!(ok.check().is_ok());
        for bad in [
            Settings { mode: 4, ..ok },
            Settings { speed_hz: 10, ..ok },
            Settings {
                speed_hz: MAX_SPEED_HZ + 1,
                ..ok
            },
            Settings {
                bits_per_word: 0,
                ..ok
            },
            Settings {
                bits_per_word: 33,
                ..ok
            },
        ] {
            assert!(matches!(
                transfer("/dev/spidev-missing", &bad, &[1]),
                Err(HwError::Invalid(_))
            ));
        }
        assert!(matches!(
            transfer("/dev/spidev-missing", &ok, &[]),
            Err(HwError::Invalid(_))
        ));
        assert!(matches!(
            transfer("/dev/spidev-missing", &ok, &vec![0; MAX_TRANSFER_BYTES + 1]),
            Err(HwError::Invalid(_))
        ));
        assert!(matches!(
            transfer("/dev/spidev-missing", &ok, &[1, 2]),
            Err(HwError::NoDevice(_))
        ));
        // Not a spidev: the first ioctl fails with ENOTTY.
        assert!(matches!(
            transfer("/dev/null", &ok, &[1, 2]),
            Err(HwError::Unsupported(_))
        ));
    }
}
