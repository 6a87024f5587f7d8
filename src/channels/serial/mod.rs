//! The serial console: chat with the assistant over a UART line (a USB serial adapter or
//! the board's own `/dev/ttyS0`), for a board with no network yet and no screen.
//!
//! `start` opens the device and starts one reader thread that assembles lines (see
//! `line`), echoes like a terminal when asked, and hands finished lines to the executor
//! over a bounded channel. `run_console` answers each line through the agent loop in
//! session `serial:<device>` (slash commands included) and writes the reply with CRLF
//! line endings through the `SerialWriter`. `yoctoclaw serial` runs just that; the
//! gateway can run the same pair beside Telegram when `serial.device` is set.
//!
//! The device may disappear (a USB adapter unplugged): on a read error or end of file the
//! reader closes it and tries to open it again, waiting `RETRY_MIN_SECS` doubling up to
//! `RETRY_MAX_SECS`. An outage is logged once (a warning when it starts, info when the
//! line is back); each failed attempt in between only at debug level.
//!
//! # Bounds
//! Lines are cut at `MAX_SERIAL_LINE_BYTES` (the user is told). At most
//! `SERIAL_QUEUE_LEN` lines wait behind a running turn; a line arriving when the queue is
//! full gets a "busy" note on the line instead of being queued. Reads are
//! `READ_CHUNK_BYTES` at a time. One reader thread per device.
//!
//! # Threads
//! One `yc-serial` thread per device (started by [`start`]) reads, echoes and reopens the
//! device; [`run_console`] runs on the executor thread and writes replies through a worker
//! thread.
//!
//! # Blocking
//! The reader thread blocks in `read`. `SerialWriter::write_blocking` blocks until the
//! kernel took the bytes (at 115200 baud a 4 KiB reply drains in about 0.4 s);
//! `SerialWriter::write` runs it on a worker thread.

pub mod line;
pub mod port;

use crate::agent::Agent;
use crate::chat::ChannelKind;
use crate::limits::MAX_USER_MESSAGE_BYTES;
use crate::runtime::{Workers, spawn_thread};
use crate::security::scrub::scrub;
use async_channel::{Receiver, Sender, TrySendError};
use line::LineEditor;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::fmt;
use std::fs::File;
use std::io::{Read, Write};
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Longest line accepted from the serial line; the rest of the line is dropped.
pub const MAX_SERIAL_LINE_BYTES: usize = MAX_USER_MESSAGE_BYTES;
/// Lines waiting for the agent; more get a "busy" note.
pub const SERIAL_QUEUE_LEN: usize = 4;
/// Bytes read from the device per `read` call.
pub const READ_CHUNK_BYTES: usize = 256;
/// First wait before reopening a device that went away.
pub const RETRY_MIN_SECS: u64 = 1;
/// Longest wait between reopening attempts.
pub const RETRY_MAX_SECS: u64 = 30;
/// Written after the banner and after every reply.
pub const PROMPT: &str = "> ";

/// The session name for a device: `serial:<device>`.
pub fn session_id(device: &str) -> String {
    format!("serial:{device}")
}

/// Why the serial console could not start.
#[derive(Debug)]
pub enum SerialError {
    /// The baud rate is outside `port::MIN_BAUD..=port::MAX_BAUD`.
    BadBaud(u32),
    /// No device path given.
    NoDevice,
    /// The reader thread could not be started.
    Thread(std::io::Error),
}

impl fmt::Display for SerialError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SerialError::BadBaud(b) => write!(
                f,
                "baud rate {b} is not supported: use {} to {} (usually 115200)",
                port::MIN_BAUD,
                port::MAX_BAUD
            ),
            SerialError::NoDevice => f.write_str("no serial device given: use --device PATH"),
            SerialError::Thread(e) => write!(f, "cannot start the serial reader: {e}"),
        }
    }
}

impl std::error::Error for SerialError {}

/// Writes to the serial line that is currently open (clone it freely). While the device is
/// away, writes fail with `NotConnected` and the text is lost (and logged by the caller).
#[derive(Clone)]
pub struct SerialWriter {
    port: Arc<Mutex<Option<File>>>,
}

impl SerialWriter {
    fn new() -> SerialWriter {
        SerialWriter {
            port: Arc::new(Mutex::new(None)),
        }
    }

    fn set(&self, file: Option<File>) {
        if let Ok(mut p) = self.port.lock() {
            *p = file;
        }
    }

    /// True while the device is open.
    pub fn is_connected(&self) -> bool {
        self.port.lock().map(|p| p.is_some()).unwrap_or(false)
    }

    /// Write `text` with every line ending turned into CRLF. Blocks until written.
    pub fn write_blocking(&self, text: &str) -> std::io::Result<()> {
        // Write through a duplicate so the lock is not held while the line drains.
        let file = match self.port.lock() {
            Ok(p) => match p.as_ref() {
                Some(f) => f.try_clone()?,
                None => return Err(std::io::ErrorKind::NotConnected.into()),
            },
            Err(_) => return Err(std::io::ErrorKind::NotConnected.into()),
        };
        write_all(&file, to_crlf(text).as_bytes())
    }

    /// `write_blocking` on a worker thread.
    pub async fn write(&self, workers: &Workers, text: &str) -> std::io::Result<()> {
        let me = self.clone();
        let text = text.to_string();
        workers
            .run(move || me.write_blocking(&text))
            .await
            .map_err(|_| std::io::Error::other("worker threads stopped"))?
    }
}

fn write_all(mut file: &File, bytes: &[u8]) -> std::io::Result<()> {
    file.write_all(bytes)?;
    file.flush()
}

/// Every line ending (LF, CRLF) as CRLF, which every serial terminal shows correctly.
pub fn to_crlf(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 16 + 2);
    let mut prev_cr = false;
    for c in text.chars() {
        if c == '\n' && !prev_cr {
            out.push('\r');
        }
        prev_cr = c == '\r';
        out.push(c);
    }
    out
}

fn banner(device: &str) -> String {
    format!(
        "\r\nyoctoclaw {} serial console on {device}. /help for commands.\r\n{PROMPT}",
        env!("CARGO_PKG_VERSION")
    )
}

/// Start the reader thread for `device`. Lines arrive on the receiver; replies go through
/// the writer. The thread keeps reopening the device while the receiver lives, and ends
/// once it is dropped (noticed at the next byte or retry).
pub fn start(
    device: &str,
    baud: u32,
    echo: bool,
) -> Result<(Receiver<String>, SerialWriter), SerialError> {
    if device.trim().is_empty() {
        return Err(SerialError::NoDevice);
    }
    if !(port::MIN_BAUD..=port::MAX_BAUD).contains(&baud) {
        return Err(SerialError::BadBaud(baud));
    }
    let (tx, rx) = async_channel::bounded::<String>(SERIAL_QUEUE_LEN);
    let writer = SerialWriter::new();
    let w = writer.clone();
    let device = device.to_string();
    spawn_thread("yc-serial", move || {
        reader_loop(&device, baud, echo, &tx, &w)
    })
    .map_err(SerialError::Thread)?;
    Ok((rx, writer))
}

/// `start` for the gateway's console when `serial.device` is set; `None` when it is not.
///
/// ```ignore
/// if let Some(started) = serial::start_from_config(&cfg.serial) {
///     let (lines, writer) = started?;
///     let (agent, device) = (agent.clone(), cfg.serial.device.clone());
///     ex.spawn(async move { serial::run_console(&agent, &device, lines, writer).await }).detach();
/// }
/// ```
pub fn start_from_config(
    cfg: &crate::config::SerialConfig,
) -> Option<Result<(Receiver<String>, SerialWriter), SerialError>> {
    if cfg.device.trim().is_empty() {
        return None;
    }
    let baud = u32::try_from(cfg.baud).unwrap_or(u32::MAX);
    Some(start(&cfg.device, baud, cfg.echo))
}

/// How one connection ended.
enum Ended {
    /// The console went away: stop.
    Closed,
    /// The device failed or hung up.
    Lost(String),
}

fn reader_loop(device: &str, baud: u32, echo: bool, tx: &Sender<String>, writer: &SerialWriter) {
    let mut backoff = RETRY_MIN_SECS;
    let mut in_outage = false;
    while !tx.is_closed() {
        let file = match port::open(device, baud) {
            Ok(f) => f,
            Err(e) => {
                if in_outage {
                    log::debug!("serial {device}: still cannot open: {e}");
                } else {
                    log::warn!(
                        "serial {device}: cannot open: {e}; retrying every {RETRY_MIN_SECS} to {RETRY_MAX_SECS} s"
                    );
                    in_outage = true;
                }
                sleep_unless_closed(tx, backoff);
                backoff = (backoff * 2).min(RETRY_MAX_SECS);
                continue;
            }
        };
        if in_outage {
            log::info!("serial {device}: back, {baud} baud");
        } else {
            log::info!("serial {device}: open, {baud} baud");
        }
        writer.set(file.try_clone().ok());
        let started = Instant::now();
        let mut got_data = false;
        let ended = serve(&file, device, echo, tx, &mut got_data);
        writer.set(None);
        drop(file);
        match ended {
            Ended::Closed => return,
            Ended::Lost(why) => {
                // A line that worked resets the wait; one that fails at once (a device
                // that opens but cannot be read) keeps backing off.
                if got_data || started.elapsed() >= Duration::from_secs(RETRY_MAX_SECS) {
                    backoff = RETRY_MIN_SECS;
                }
                log::warn!("serial {device}: lost ({why}); reopening");
                in_outage = true;
                sleep_unless_closed(tx, backoff);
                backoff = (backoff * 2).min(RETRY_MAX_SECS);
            }
        }
    }
}

/// Sleep `secs` in one-second steps, returning early when the console is gone.
fn sleep_unless_closed(tx: &Sender<String>, secs: u64) {
    for _ in 0..secs {
        if tx.is_closed() {
            return;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// Read one connection until it fails or the console goes away.
fn serve(file: &File, device: &str, echo: bool, tx: &Sender<String>, got_data: &mut bool) -> Ended {
    let mut reader = file;
    if let Err(e) = write_all(file, banner(device).as_bytes()) {
        return Ended::Lost(e.to_string());
    }
    let mut editor = LineEditor::new(MAX_SERIAL_LINE_BYTES, echo);
    let mut buf = [0u8; READ_CHUNK_BYTES];
    let mut out = Vec::new();
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => return Ended::Lost("hung up".into()),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Ended::Lost(e.to_string()),
        };
        *got_data = true;
        out.clear();
        for &b in buf.get(..n).unwrap_or(&[]) {
            let Some(line) = editor.feed(b, &mut out) else {
                continue;
            };
            if line.cut {
                out.extend_from_slice(
                    format!(
                        "(that line was longer than {MAX_SERIAL_LINE_BYTES} bytes: the rest was dropped)\r\n"
                    )
                    .as_bytes(),
                );
            }
            match tx.try_send(line.text) {
                Ok(()) => {}
                Err(TrySendError::Full(_)) => {
                    log::warn!("serial {device}: busy, a line was not taken");
                    out.extend_from_slice(
                        b"(busy: still answering earlier messages; send that again in a moment)\r\n",
                    );
                }
                Err(TrySendError::Closed(_)) => return Ended::Closed,
            }
        }
        if !out.is_empty()
            && let Err(e) = write_all(file, &out)
        {
            return Ended::Lost(e.to_string());
        }
    }
}

/// Answer lines from `lines` in session `serial:<device>` until the reader stops.
pub async fn run_console(
    agent: &Agent,
    workers: &Workers,
    device: &str,
    lines: Receiver<String>,
    writer: SerialWriter,
) {
    let session = session_id(device);
    agent.approvals().set_asker(
        ChannelKind::Serial,
        Rc::new(SerialAsker {
            writer: writer.clone(),
            workers: workers.clone(),
        }),
    );
    // Lines typed while a turn runs (that are not approval answers) wait here.
    let held: RefCell<VecDeque<String>> = RefCell::new(VecDeque::new());
    loop {
        let next = held.borrow_mut().pop_front();
        let line = match next {
            Some(l) => l,
            None => match lines.recv().await {
                Ok(l) => l,
                Err(_) => break,
            },
        };
        let text = line.trim();
        if !text.is_empty() {
            crate::metrics::message_in(ChannelKind::Serial);
        }
        let reply = if text.is_empty() {
            String::new()
        } else if let Some(r) = crate::channels::terminal::handle_command(agent, &session, text) {
            format!("{r}\n")
        } else {
            let turn = agent.run_turn(&session, ChannelKind::Serial, text);
            let during = read_during_turn(agent, workers, &session, &lines, &writer, &held);
            match smol::future::or(turn, during).await {
                Ok(r) => format!("{r}\n"),
                Err(e) => {
                    log::warn!("serial {device}: turn failed: {e}");
                    format!("Sorry, that failed: {}\n", scrub(&e.to_string()))
                }
            }
        };
        let out = format!("{reply}{PROMPT}");
        match writer.write(workers, &out).await {
            Ok(()) if !reply.is_empty() => crate::metrics::message_out(ChannelKind::Serial),
            Ok(()) => {}
            Err(e) => log::warn!(
                "serial {device}: a reply of {} bytes was not written: {e}",
                out.len()
            ),
        }
    }
}

/// Lines held back while a turn runs; more get a "busy" note.
const MAX_HELD_LINES: usize = 4;

/// While a turn runs: answers to approval questions go to the waiting request, other
/// lines wait for the turn to end. Never resolves (the turn wins the race).
async fn read_during_turn(
    agent: &Agent,
    workers: &Workers,
    session: &str,
    lines: &Receiver<String>,
    writer: &SerialWriter,
    held: &RefCell<VecDeque<String>>,
) -> Result<String, crate::agent::AgentError> {
    loop {
        let Ok(line) = lines.recv().await else {
            return std::future::pending().await;
        };
        let word = crate::channels::terminal::approval_word(&line);
        let note = if let (Some(d), true) = (word, agent.approvals().is_pending(session)) {
            // A plain "yes"/"no"/"always" answers a waiting question, as on a terminal.
            agent
                .approvals()
                .answer(session, d)
                .unwrap_or_else(|| crate::agent::commands::NOTHING_WAITING.to_string())
        } else if let Some(r) = crate::agent::commands::approval_reply(agent, session, &line) {
            r
        } else if held.borrow().len() < MAX_HELD_LINES {
            held.borrow_mut().push_back(line);
            continue;
        } else {
            crate::agent::router::BUSY_REPLY.to_string()
        };
        let _ = writer.write(workers, &format!("{note}\n")).await;
    }
}

/// Writes approval questions to the serial line.
struct SerialAsker {
    writer: SerialWriter,
    workers: Workers,
}

impl crate::agent::approval::Asker for SerialAsker {
    fn ask(&self, _session: &str, question: &str) -> crate::agent::approval::AskFuture {
        let (writer, workers) = (self.writer.clone(), self.workers.clone());
        let text = format!("\n{question}\n");
        Box::pin(async move { writer.write(&workers, &text).await.is_ok() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_use_crlf_everywhere() {
        assert_eq!(to_crlf("a\nb\r\nc"), "a\r\nb\r\nc");
        assert_eq!(to_crlf("\n\n"), "\r\n\r\n");
        assert_eq!(to_crlf("plain"), "plain");
        assert_eq!(to_crlf("\r"), "\r");
    }

    #[test]
    fn bad_arguments_are_refused_before_any_thread() {
        assert!(matches!(start("", 9600, false), Err(SerialError::NoDevice)));
        assert!(matches!(
            start("/dev/null", 10, false),
            Err(SerialError::BadBaud(10))
        ));
        assert!(matches!(
            start("/dev/null", 5_000_000, false),
            Err(SerialError::BadBaud(_))
        ));
    }

    #[test]
    fn the_gateway_starts_a_console_only_when_a_device_is_set() {
        let mut cfg = crate::config::SerialConfig::default();
        assert!(start_from_config(&cfg).is_none());
        cfg.device = "/dev/null".into();
        cfg.baud = 1;
        assert!(matches!(
            start_from_config(&cfg),
            Some(Err(SerialError::BadBaud(1)))
        ));
    }

    #[test]
    fn a_writer_without_a_device_says_not_connected() {
        let w = SerialWriter::new();
        assert!(!w.is_connected());
        let e = w.write_blocking("hi").unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::NotConnected);
    }
}
