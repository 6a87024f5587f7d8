//! The terminal channel: `agent -m TEXT` (one turn) and the interactive chat.
//!
//! stdin is read on its own thread (blocking reads) and handed to the executor over a
//! bounded channel, the same shape as every other channel. With `provider.stream = true`
//! answers are printed as they are written ([`TerminalSink`]); otherwise in one piece.
//!
//! # Approvals
//! While a turn runs, stdin is read only when an approval question is waiting (the
//! terminal's `Asker` prints it and wakes the reader): the next line answers it (`/yes`,
//! `/no`, `/always`, or plain `y`, `n`, `always`). Other lines typed meanwhile wait their
//! turn and are answered after the current message, in order. `agent -m` asks on the
//! terminal when stdin is one (the question goes to stderr, so stdout stays the reply);
//! otherwise nobody can answer and such actions are refused with a note on stderr.
//!
//! # Bounds
//! Lines longer than `MAX_USER_MESSAGE_BYTES` are cut; at most `STDIN_QUEUE_LEN` lines wait
//! in the reader's channel and as many more behind an approval question (further ones are
//! dropped with a note).
//!
//! # Threads
//! The executor thread (`smol::block_on` on the main thread) runs the chat and the turns;
//! the `yc-stdin` thread (one, started by [`interactive`], and by [`one_shot`] when stdin
//! is a terminal) only reads lines and hands them over.

use crate::agent::approval::{AskFuture, Asker, Decision};
use crate::agent::commands::{self, Command};
use crate::agent::streaming::StreamSink;
use crate::agent::{Agent, AgentError};
use crate::chat::ChannelKind;
use crate::limits::MAX_USER_MESSAGE_BYTES;
use crate::runtime::spawn_thread;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::io::{BufRead, IsTerminal, Write};
use std::rc::Rc;
use std::time::Duration;

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

    fn retract(&mut self) -> bool {
        // Nothing of this request printed yet: the retried one's text simply follows.
        !self.printed_this_round
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
    if !agent.streams() {
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
                    let line = crate::text::cap_text(
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

/// How often the answer reader checks whether a question is still waiting (it may have
/// timed out).
const APPROVAL_CHECK_MS: u64 = 50;

/// Prints approval questions and wakes the answer reader.
struct TerminalAsker {
    asked: async_channel::Sender<()>,
    /// `agent -m`: stdout carries only the reply.
    to_stderr: bool,
    /// Streamed text may have left the cursor mid-line.
    streaming: bool,
}

impl Asker for TerminalAsker {
    fn ask(&self, _session: &str, question: &str) -> AskFuture {
        let lead = if self.streaming { "\n" } else { "" };
        let text = format!("{lead}{question}\n");
        if self.to_stderr {
            let mut e = std::io::stderr().lock();
            let _ = e.write_all(text.as_bytes());
            let _ = e.flush();
        } else {
            let mut o = std::io::stdout().lock();
            let _ = o.write_all(text.as_bytes());
            let _ = o.flush();
        }
        // Full means the reader is already woken and will see this question too.
        let reader_alive = !matches!(
            self.asked.try_send(()),
            Err(async_channel::TrySendError::Closed(_))
        );
        Box::pin(async move { reader_alive })
    }
}

/// `agent -m` without a terminal: nobody can answer.
struct NoTerminal;

impl Asker for NoTerminal {
    fn ask(&self, _session: &str, _question: &str) -> AskFuture {
        eprintln!(
            "yoctoclaw: an action needed your approval, but stdin is not a terminal, so it was refused. Use the interactive chat (yoctoclaw agent), or set agent.autonomy to \"full\"."
        );
        Box::pin(async { false })
    }
}

/// An answer to an approval question: the commands, or a plain word.
pub fn approval_word(line: &str) -> Option<Decision> {
    match commands::parse(line) {
        Some(Command::Yes) => return Some(Decision::Yes),
        Some(Command::No) => return Some(Decision::No),
        Some(Command::Always) => return Some(Decision::Always),
        _ => {}
    }
    match line.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Some(Decision::Yes),
        "n" | "no" => Some(Decision::No),
        "a" | "always" => Some(Decision::Always),
        _ => None,
    }
}

/// The terminal's side of approvals during one turn: each time a question is asked,
/// read lines until one answers it (or it is no longer waiting). Never completes: race
/// it with the turn.
async fn answer_approvals(
    agent: &Agent,
    session: &str,
    lines: &async_channel::Receiver<String>,
    asked: &async_channel::Receiver<()>,
    held: &RefCell<VecDeque<String>>,
) -> Result<(), AgentError> {
    loop {
        if asked.recv().await.is_err() {
            smol::future::pending::<()>().await;
        }
        loop {
            let next = smol::future::or(async { Some(lines.recv().await.ok()) }, async {
                while agent.approvals().is_pending(session) {
                    smol::Timer::after(Duration::from_millis(APPROVAL_CHECK_MS)).await;
                }
                None
            })
            .await;
            let line = match next {
                // The question timed out (or was answered elsewhere).
                None => break,
                // End of input: nobody will answer.
                Some(None) => {
                    if let Some(reply) = agent.approvals().answer(session, Decision::No) {
                        println!("{reply} (end of input)");
                    }
                    break;
                }
                Some(Some(line)) => line,
            };
            if let Some(d) = approval_word(&line) {
                if let Some(reply) = agent.approvals().answer(session, d) {
                    println!("{reply}");
                }
                break;
            }
            if line.trim().is_empty() {
                continue;
            }
            let mut h = held.borrow_mut();
            if h.len() < STDIN_QUEUE_LEN {
                h.push_back(line);
                println!(
                    "(Please answer /yes, /no or /always first; I'll get to that message after.)"
                );
            } else {
                println!("{}", crate::agent::router::BUSY_REPLY);
            }
        }
    }
}

/// Run one turn while answering its approval questions from stdin.
async fn turn_with_approvals(
    agent: &Agent,
    session: &str,
    text: &str,
    lines: &async_channel::Receiver<String>,
    asked: &async_channel::Receiver<()>,
    held: &RefCell<VecDeque<String>>,
) -> Result<(), AgentError> {
    smol::future::or(
        one_turn(agent, session, text),
        answer_approvals(agent, session, lines, asked, held),
    )
    .await
}

/// `agent -m TEXT`: one turn; approval questions are asked on the terminal if stdin is
/// one, else refused.
pub async fn one_shot(agent: &Agent, session: &str, text: &str) -> Result<(), AgentError> {
    if !std::io::stdin().is_terminal() {
        agent
            .approvals()
            .set_asker(ChannelKind::Terminal, Rc::new(NoTerminal));
        return one_turn(agent, session, text).await;
    }
    let lines = stdin_lines();
    let (tx, asked) = async_channel::bounded(1);
    agent.approvals().set_asker(
        ChannelKind::Terminal,
        Rc::new(TerminalAsker {
            asked: tx,
            to_stderr: true,
            streaming: agent.streams(),
        }),
    );
    let held = RefCell::new(VecDeque::new());
    turn_with_approvals(agent, session, text, &lines, &asked, &held).await
}

/// The interactive chat. Returns at end of input (Ctrl-D).
pub async fn interactive(agent: &Agent, session: &str) {
    let tty = std::io::stdin().is_terminal();
    let lines = stdin_lines();
    let (tx, asked) = async_channel::bounded(1);
    agent.approvals().set_asker(
        ChannelKind::Terminal,
        Rc::new(TerminalAsker {
            asked: tx,
            to_stderr: false,
            streaming: agent.streams(),
        }),
    );
    let held: RefCell<VecDeque<String>> = RefCell::new(VecDeque::new());
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
        let waiting = held.borrow_mut().pop_front();
        let line = match waiting {
            Some(l) => l,
            None => match lines.recv().await {
                Ok(l) => l,
                Err(_) => {
                    if tty {
                        println!();
                    }
                    break;
                }
            },
        };
        let text = line.trim();
        if text.is_empty() {
            continue;
        }
        if let Some(reply) = handle_command(agent, session, text) {
            println!("{reply}");
            continue;
        }
        if let Err(e) = turn_with_approvals(agent, session, text, &lines, &asked, &held).await {
            eprintln!("yoctoclaw: {e}");
        }
        let _ = std::io::stdout().flush();
    }
}
