//! The terminal channel: `agent -m TEXT` (one turn) and the interactive chat.
//!
//! stdin is read on its own thread (blocking reads) and handed to the executor over a
//! bounded channel, the same shape as every other channel. With `provider.stream = true`
//! answers are printed as they are written ([`TerminalSink`]); otherwise in one piece.
//!
//! # Bounds
//! Lines longer than `MAX_USER_MESSAGE_BYTES` are cut; at most `STDIN_QUEUE_LEN` lines wait.

use crate::agent::streaming::StreamSink;
use crate::agent::{Agent, AgentError};
use crate::channels::ChannelKind;
use crate::limits::MAX_USER_MESSAGE_BYTES;
use crate::runtime::spawn_thread;
use std::io::{BufRead, IsTerminal, Write};

/// Lines read ahead of the agent.
pub const STDIN_QUEUE_LEN: usize = 4;

/// The session name used by the terminal for `-s NAME`.
pub fn session_id(name: &str) -> String {
    format!("stdio:{}", name)
}

/// Chat commands and the `/status` text (shared with every channel).
pub use crate::agent::commands::{handle as handle_command, status_text};

/// Prints a streamed answer on stdout as it arrives. Leading blank space is skipped and
/// trailing blank space held back, so a plain answer prints exactly as the non-streamed
/// path prints it; text said before a tool round is kept, on its own line.
#[derive(Debug, Default)]
pub struct TerminalSink {
    /// Anything printed yet.
    started: bool,
    /// Anything printed in the current model request.
    printed_this_round: bool,
    /// Blank space waiting for more text (never printed at the end).
    held_space: String,
}

impl TerminalSink {
    pub fn new() -> TerminalSink {
        TerminalSink::default()
    }

    fn print(&mut self, s: &str) {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(s.as_bytes());
        let _ = out.flush();
    }

    /// The turn ended with `answer`: end the line, or print the answer when the last
    /// request showed nothing (e.g. the "no answer" placeholder).
    pub fn finish(&mut self, answer: &str) {
        if self.printed_this_round {
            self.print("\n");
        } else {
            let sep = if self.started { "\n" } else { "" };
            self.print(&format!("{sep}{answer}\n"));
        }
    }

    /// The turn failed: end a started line so the error starts on its own.
    pub fn abort(&mut self) {
        if self.started {
            self.print("\n");
        }
    }
}

impl StreamSink for TerminalSink {
    fn text(&mut self, delta: &str) {
        let delta = if self.printed_this_round {
            delta
        } else {
            delta.trim_start()
        };
        let body = delta.trim_end();
        if !body.is_empty() {
            let space = std::mem::take(&mut self.held_space);
            self.print(&format!("{space}{body}"));
            self.started = true;
            self.printed_this_round = true;
        }
        self.held_space.push_str(&delta[body.len()..]);
    }

    fn round_end(&mut self, more: bool) {
        if more && self.printed_this_round {
            // What comes next starts on a line of its own.
            self.held_space = "\n".into();
            self.printed_this_round = false;
        }
    }
}

/// Run one turn and print its answer: streamed when the provider streams.
pub async fn one_turn(agent: &Agent, session: &str, text: &str) -> Result<(), AgentError> {
    if !agent.cfg.provider.stream {
        let reply = agent.run_turn(session, ChannelKind::Terminal, text).await?;
        println!("{reply}");
        return Ok(());
    }
    let mut sink = TerminalSink::new();
    match agent
        .run_turn_streamed(session, ChannelKind::Terminal, text, &mut sink)
        .await
    {
        Ok(reply) => {
            sink.finish(&reply);
            Ok(())
        }
        Err(e) => {
            sink.abort();
            Err(e)
        }
    }
}

/// Read stdin lines on a thread; the receiver closes at end of input.
fn stdin_lines() -> async_channel::Receiver<String> {
    let (tx, rx) = async_channel::bounded::<String>(STDIN_QUEUE_LEN);
    let spawned = spawn_thread("yc-stdin", move || {
        let stdin = std::io::stdin();
        let mut lock = stdin.lock();
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match lock.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let line = String::from_utf8_lossy(&buf);
                    let line = crate::tools::cap_text(
                        line.trim_end_matches(['\n', '\r']),
                        MAX_USER_MESSAGE_BYTES,
                    );
                    if tx.send_blocking(line).is_err() {
                        break;
                    }
                }
            }
        }
    });
    if let Err(e) = spawned {
        log::error!("cannot start the stdin reader: {e}");
    }
    rx
}

/// The interactive chat. Returns at end of input (Ctrl-D).
pub async fn interactive(agent: &Agent, session: &str) {
    let tty = std::io::stdin().is_terminal();
    let lines = stdin_lines();
    if tty {
        println!(
            "yoctoclaw {} — session {session}. /help for commands, Ctrl-D to quit.",
            env!("CARGO_PKG_VERSION")
        );
    }
    loop {
        if tty {
            print!("> ");
            let _ = std::io::stdout().flush();
        }
        let Ok(line) = lines.recv().await else {
            if tty {
                println!();
            }
            break;
        };
        let text = line.trim();
        if text.is_empty() {
            continue;
        }
        if let Some(reply) = handle_command(agent, session, text) {
            println!("{reply}");
            continue;
        }
        if let Err(e) = one_turn(agent, session, text).await {
            eprintln!("yoctoclaw: {e}");
        }
        let _ = std::io::stdout().flush();
    }
}
