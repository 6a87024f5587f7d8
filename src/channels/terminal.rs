//! The terminal channel: `agent -m TEXT` (one turn) and the interactive chat.
//!
//! stdin is read on its own thread (blocking reads) and handed to the executor over a
//! bounded channel, the same shape as every other channel.
//!
//! # Bounds
//! Lines longer than `MAX_USER_MESSAGE_BYTES` are cut; at most `STDIN_QUEUE_LEN` lines wait.

use crate::agent::Agent;
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
        match agent.run_turn(session, ChannelKind::Terminal, text).await {
            Ok(reply) => println!("{reply}"),
            Err(e) => eprintln!("yoctoclaw: {e}"),
        }
        let _ = std::io::stdout().flush();
    }
}
