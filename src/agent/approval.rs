//! Approvals: under `supervised` autonomy, a call that changes files, runs a command or
//! changes what runs unattended (`tools::needs_approval`) waits for the user's `/yes`,
//! `/no` or `/always` on the channel the turn came from.
//!
//! How the pieces meet:
//! - [`Agent::authorize`] runs before every tool call that needs approval (an MCP
//!   server's tool does unless its entry says `"trust": true`): `full` lets it through
//!   (but for an opaque call, refused), `read_only` refuses it, `supervised` calls
//!   [`Approvals::request`] with the tool's one-line summary (`Tools::approval_summary`,
//!   which also validates the call).
//! - `request` registers the session's pending approval, puts the question to the user
//!   through the channel's [`Asker`], and waits for an answer or the timeout
//!   (`agent.approval_timeout_secs`). No answer means no.
//! - The channel passes `/yes` `/no` `/always` to [`Approvals::answer`] as they arrive,
//!   *without* queueing them behind the session's running turn (which is the very turn
//!   waiting for the answer). With nothing pending, the channel says so.
//! - `/always` approves this call and every later one in the session, until `/new` or
//!   the flag is evicted (then the user is simply asked again). A call the tools mark
//!   opaque (an `exec` command that hides what it runs, `Approval::opaque`) is asked
//!   about even then, with a warning, and refused outright under `full` autonomy.
//! - The question shows the whole summary on one line: line breaks as ⏎, control
//!   characters and Unicode bidi and invisible formatting characters escaped
//!   (`\u{202e}`), so what is shown is what runs. A summary longer than
//!   `MAX_APPROVAL_COMMAND_CHARS` as shown is refused, not cut.
//! - A denial reaches the model as a tool error; the turn goes on.
//!
//! # Channel hook (`Asker`)
//! Each channel registers one asker with [`Approvals::set_asker`] before it runs turns:
//! Telegram sends the question to the chat; the terminal prints it and reads the answer
//! from stdin; a serial line would write it to the line and pass the answer lines it
//! reads to [`Approvals::answer`] (the same three commands; see `commands::approval_reply`).
//! A channel with no asker (heartbeat and cron runs) gets every such call denied: there
//! is nobody to ask. An asker that cannot ask (e.g. `agent -m` without a terminal) returns
//! `false` and the call is denied at once.
//!
//! # Bounds
//! At most one pending approval per session and at most `agent.max_sessions` in all
//! (more are denied); `/always` flags for at most `agent.max_sessions` sessions (least
//! recently used evicted). Questions show summaries of at most
//! `MAX_APPROVAL_COMMAND_CHARS` characters. The wait ends after the timeout, or when the turn is dropped (the
//! pending entry is removed either way).
//!
//! # Threads
//! Executor thread: the registry is shared by the sessions' turns; asking awaits the
//! channel's asker, answers arrive from the channels on the same thread.

use super::Agent;
use super::session::SessionTable;
use crate::chat::ChannelKind;
use crate::chat::ToolCall;
use crate::config::Autonomy;
use crate::limits::MAX_APPROVAL_COMMAND_CHARS;
use crate::security::scrub::scrub;
use crate::store::audit::Verdict;
use crate::tools::{CallContext, ToolError};
use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::time::Duration;

/// What [`Asker::ask`] returns: resolves to `true` once the question is on its way.
pub type AskFuture = Pin<Box<dyn Future<Output = bool>>>;

/// A channel's way of putting a question to the user of a session.
pub trait Asker {
    /// Show `question` (one paragraph, already scrubbed) to the user of `session`.
    /// Resolves to `false` when nobody can be asked (the call is then denied). Must not
    /// wait for the answer: answers come back through [`Approvals::answer`].
    fn ask(&self, session: &str, question: &str) -> AskFuture;
}

/// The user's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Yes,
    No,
    /// Yes, and do not ask again in this session.
    Always,
}

struct Pending {
    session: String,
    summary: String,
    tx: async_channel::Sender<Decision>,
}

/// The approvals of one running program (owned by the [`Agent`]; executor thread only).
pub struct Approvals {
    pending: RefCell<Vec<Pending>>,
    always: RefCell<SessionTable<()>>,
    askers: RefCell<Vec<(ChannelKind, Rc<dyn Asker>)>>,
    capacity: usize,
    timeout: Duration,
}

impl Approvals {
    /// At most `capacity` sessions; unanswered questions are denied after `timeout`.
    pub fn new(capacity: usize, timeout: Duration) -> Approvals {
        Approvals {
            pending: RefCell::new(Vec::new()),
            always: RefCell::new(SessionTable::new(capacity)),
            askers: RefCell::new(Vec::new()),
            capacity: capacity.max(1),
            timeout,
        }
    }

    /// The configured timeout (`agent.approval_timeout_secs`).
    pub fn timeout_from(configured_secs: u64) -> Duration {
        Duration::from_secs(configured_secs.max(1))
    }

    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Register (or replace) the asker of a channel.
    pub fn set_asker(&self, channel: ChannelKind, asker: Rc<dyn Asker>) {
        let mut a = self.askers.borrow_mut();
        a.retain(|(c, _)| *c != channel);
        a.push((channel, asker));
    }

    fn asker(&self, channel: ChannelKind) -> Option<Rc<dyn Asker>> {
        self.askers
            .borrow()
            .iter()
            .find(|(c, _)| *c == channel)
            .map(|(_, a)| a.clone())
    }

    /// An approval is waiting in `session`.
    pub fn is_pending(&self, session: &str) -> bool {
        self.pending.borrow().iter().any(|p| p.session == session)
    }

    /// `/always` was given in `session`.
    pub fn is_always(&self, session: &str) -> bool {
        self.always.borrow_mut().get_mut(session).is_some()
    }

    /// Forget `/always` for `session` (`/new`).
    pub fn forget(&self, session: &str) {
        self.always.borrow_mut().remove(session);
    }

    /// Pass the user's answer to the approval waiting in `session`. Returns the reply
    /// for the user, or `None` when nothing is waiting.
    pub fn answer(&self, session: &str, d: Decision) -> Option<String> {
        let p = {
            let mut list = self.pending.borrow_mut();
            let i = list.iter().position(|p| p.session == session)?;
            list.swap_remove(i)
        };
        if d == Decision::Always {
            self.set_always(session);
        }
        // The waiting call may be gone already (its turn was dropped): nothing to do then.
        let _ = p.tx.try_send(d);
        let reply = match d {
            Decision::Yes => format!("Approved: {}", p.summary),
            Decision::Always => format!(
                "Approved, and I won't ask again in this session (until /new): {}",
                p.summary
            ),
            Decision::No => format!("Denied: {}", p.summary),
        };
        Some(scrub(&reply).into_owned())
    }

    fn set_always(&self, session: &str) {
        self.always
            .borrow_mut()
            .get_or_insert(session, || (), |_| true);
    }

    /// Ask the user of `session` on `channel` to approve `summary`; `Ok` when approved.
    /// `opaque` (why the call cannot be read) asks even after `/always`, with a warning.
    pub async fn request(
        &self,
        session: &str,
        channel: ChannelKind,
        summary: &str,
        opaque: Option<&str>,
    ) -> Result<(), ToolError> {
        self.request_verdict(session, channel, summary, opaque)
            .await
            .map_err(|(_, e)| e)
    }

    /// [`Approvals::request`], with what the audit trail calls the outcome when it is
    /// not a yes: `Refused` when the user said no or did not answer, `Denied` when the
    /// question could not be put.
    pub async fn request_verdict(
        &self,
        session: &str,
        channel: ChannelKind,
        summary: &str,
        opaque: Option<&str>,
    ) -> Result<(), (Verdict, ToolError)> {
        let denied = |e: ToolError| (Verdict::Denied, e);
        if opaque.is_none() && self.is_always(session) {
            return Ok(());
        }
        let summary = one_line(summary);
        let shown = summary.chars().count();
        if shown > MAX_APPROVAL_COMMAND_CHARS {
            return Err(denied(ToolError::Denied(format!(
                "this is too long to show for approval ({shown} characters, at most {MAX_APPROVAL_COMMAND_CHARS}), so it was not done; split it into shorter steps, or write a script with write_file first and run that"
            ))));
        }
        let Some(asker) = self.asker(channel) else {
            return Err(denied(ToolError::Denied(format!(
                "this needs the user's approval, but a {} run has nobody to ask, so it was not done ({summary}); the owner can set agent.autonomy to full to allow such actions without asking",
                channel.as_str()
            ))));
        };
        let rx = {
            let mut list = self.pending.borrow_mut();
            if list.iter().any(|p| p.session == session) {
                return Err(denied(ToolError::Denied(
                    "another approval is already waiting in this session".into(),
                )));
            }
            if list.len() >= self.capacity {
                return Err(denied(ToolError::Denied(
                    "too many approvals are waiting; try again later".into(),
                )));
            }
            let (tx, rx) = async_channel::bounded(1);
            list.push(Pending {
                session: session.to_string(),
                summary: summary.clone(),
                tx,
            });
            rx
        };
        let _guard = PendingGuard {
            approvals: self,
            session,
        };
        let warning = match opaque {
            Some(why) => format!("\nWarning: {why}; /always does not cover it."),
            None => String::new(),
        };
        let question = scrub(&format!(
            "Approve? {summary}{warning}\nReply /yes, /no, or /always (yes to everything for the rest of this session). No answer within {} means no.",
            secs_text(self.timeout)
        ))
        .into_owned();
        log::info!("approval asked in {session}: {summary}");
        if !asker.ask(session, &question).await {
            return Err(denied(ToolError::Denied(format!(
                "the user could not be asked to approve this, so it was not done ({summary})"
            ))));
        }
        let answer = async { rx.recv().await.ok() };
        let timeout = async {
            smol::Timer::after(self.timeout).await;
            None
        };
        match smol::future::or(answer, timeout).await {
            Some(Decision::Yes | Decision::Always) => {
                log::info!("approval given in {session}");
                Ok(())
            }
            Some(Decision::No) => {
                log::info!("approval refused in {session}");
                Err((
                    Verdict::Refused,
                    ToolError::Denied(format!(
                        "the user said no to this, so it was not done ({summary}); ask them what to do instead"
                    )),
                ))
            }
            None => {
                log::info!("approval timed out in {session}");
                Err((
                    Verdict::Refused,
                    ToolError::Denied(format!(
                        "the user did not answer within {}, so it was not done ({summary})",
                        secs_text(self.timeout)
                    )),
                ))
            }
        }
    }
}

/// Removes a session's pending entry when its wait ends, however it ends.
struct PendingGuard<'a> {
    approvals: &'a Approvals,
    session: &'a str,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        if let Ok(mut list) = self.approvals.pending.try_borrow_mut() {
            list.retain(|p| p.session != self.session);
        }
    }
}

/// `120 s`, `0.5 s`.
fn secs_text(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

/// The summary on one line, all of it: line breaks shown as ⏎, control characters,
/// whitespace other than a plain space, and invisible or bidi formatting characters
/// escaped as `\u{…}`, so the text shown cannot differ from what runs.
pub fn one_line(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.trim().chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' if chars.peek() == Some(&'\n') => {}
            '\n' | '\r' => out.push_str(" ⏎ "),
            c if c == ' ' || !(c.is_control() || c.is_whitespace() || is_invisible(c)) => {
                out.push(c)
            }
            c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
        }
    }
    out
}

/// Characters that show as nothing or reorder what is around them: the bidi controls
/// (U+061C, U+200E/F, U+202A–U+202E, U+2066–U+2069), zero-width and joiner characters,
/// fillers, variation selectors, tags and the other default-ignorable code points.
fn is_invisible(c: char) -> bool {
    matches!(
        c as u32,
        0xAD | 0x34F
            | 0x61C
            | 0x115F..=0x1160
            | 0x17B4..=0x17B5
            | 0x180B..=0x180F
            | 0x200B..=0x200F
            | 0x202A..=0x202E
            | 0x2060..=0x206F
            | 0x3164
            | 0xFE00..=0xFE0F
            | 0xFEFF
            | 0xFFA0
            | 0xFFF0..=0xFFFB
            | 0x1BCA0..=0x1BCA3
            | 0x1D173..=0x1D17A
            | 0xE0000..=0xE0FFF
    )
}

impl Agent {
    /// May this call run? `full` autonomy: yes, unless the call is opaque (a command that
    /// hides what it runs). `read_only`: not for tools that need approval. `supervised`:
    /// those ask the user first, opaque ones even after `/always` (see the module
    /// documentation). Other tools always may. Ok says whether it runs as asked (`Run`)
    /// or approved (`Approved`); an error carries the audit trail's verdict.
    pub async fn authorize(
        &self,
        call: &ToolCall,
        ctx: &CallContext,
    ) -> Result<Verdict, (Verdict, ToolError)> {
        let denied = |e: ToolError| (Verdict::Denied, e);
        self.tools
            .allowed(&call.name, ctx.channel)
            .map_err(denied)?;
        if !self.tools.call_needs_approval(&call.name, &call.arguments) {
            return Ok(Verdict::Run);
        }
        if self.cfg().agent.autonomy == Autonomy::ReadOnly {
            // An untrusted MCP server's tool may do anything: refused like a change.
            let what = if self.tools.mcp_tool(&call.name).is_some() {
                "an MCP server's tools may change things and its entry does not say \"trust\": true"
            } else {
                "no file changes, commands or cron changes"
            };
            return Err(denied(ToolError::Denied(format!(
                "autonomy is read_only: {} is not allowed ({what}); tell the user what you would do instead",
                call.name
            ))));
        }
        let approval = self
            .tools
            .approval_summary(&call.name, &call.arguments)
            .map_err(|e| (Verdict::Run, e))?
            .unwrap_or_else(|| crate::tools::Approval {
                summary: call.name.clone(),
                opaque: None,
            });
        let opaque = approval.opaque.as_deref();
        match (self.cfg().agent.autonomy, opaque) {
            (Autonomy::Full, None) => Ok(Verdict::Run),
            // Full autonomy has nobody to read it and the deny list cannot: refused.
            (Autonomy::Full, Some(why)) => Err(denied(ToolError::Denied(format!(
                "{why}: in full autonomy exec runs only commands whose every part it can read; write the command out plainly, or write a script with write_file and run it"
            )))),
            _ => self
                .approvals
                .request_verdict(&ctx.session, ctx.channel, &approval.summary, opaque)
                .await
                .map(|()| Verdict::Approved),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// Records questions; answers with `ok`.
    struct Recorder {
        asked: Asked,
        ok: bool,
    }

    impl Asker for Recorder {
        fn ask(&self, session: &str, question: &str) -> AskFuture {
            self.asked
                .borrow_mut()
                .push((session.to_string(), question.to_string()));
            let ok = self.ok;
            Box::pin(async move { ok })
        }
    }

    type Asked = Rc<RefCell<Vec<(String, String)>>>;

    fn setup(ok: bool, timeout_ms: u64) -> (Rc<Approvals>, Asked) {
        let a = Rc::new(Approvals::new(4, Duration::from_millis(timeout_ms)));
        let asked = Rc::new(RefCell::new(Vec::new()));
        a.set_asker(
            ChannelKind::Telegram,
            Rc::new(Recorder {
                asked: asked.clone(),
                ok,
            }),
        );
        (a, asked)
    }

    /// Run `request` while `answer` is given once the question is out.
    fn run(a: &Rc<Approvals>, session: &str, answer: Option<Decision>) -> Result<(), ToolError> {
        let ex = smol::LocalExecutor::new();
        let answered = Cell::new(false);
        smol::block_on(ex.run(async {
            let req = a.request(session, ChannelKind::Telegram, "Run command: ls -la", None);
            let answer = async {
                loop {
                    if a.is_pending(session)
                        && let Some(d) = answer
                        && !answered.get()
                    {
                        answered.set(true);
                        assert!(a.answer(session, d).is_some());
                    }
                    smol::Timer::after(Duration::from_millis(5)).await;
                }
            };
            smol::future::or(req, answer).await
        }))
    }

    #[test]
    fn yes_approves_no_denies_silence_denies() {
        let (a, asked) = setup(true, 60_000);
        assert_eq!(run(&a, "telegram:1", Some(Decision::Yes)), Ok(()));
        let q = asked.borrow()[0].clone();
        assert_eq!(q.0, "telegram:1");
        assert!(
            q.1.starts_with("Approve? Run command: ls -la\nReply /yes"),
            "{}",
            q.1
        );
        let e = run(&a, "telegram:1", Some(Decision::No)).unwrap_err();
        assert!(e.to_string().contains("said no"), "{e}");
        let (a, _) = setup(true, 50);
        let e = run(&a, "telegram:1", None).unwrap_err();
        assert!(e.to_string().contains("did not answer"), "{e}");
        assert!(!a.is_pending("telegram:1"), "the entry goes with the wait");
    }

    #[test]
    fn always_holds_for_the_session_until_forgotten() {
        let (a, asked) = setup(true, 60_000);
        assert_eq!(run(&a, "telegram:1", Some(Decision::Always)), Ok(()));
        assert_eq!(run(&a, "telegram:1", None), Ok(()));
        assert_eq!(asked.borrow().len(), 1, "not asked again");
        // Another session is still asked.
        assert_eq!(run(&a, "telegram:2", Some(Decision::Yes)), Ok(()));
        assert_eq!(asked.borrow().len(), 2);
        a.forget("telegram:1");
        assert_eq!(run(&a, "telegram:1", Some(Decision::Yes)), Ok(()));
        assert_eq!(asked.borrow().len(), 3);
    }

    #[test]
    fn nobody_to_ask_means_no() {
        let (a, _) = setup(false, 60_000);
        let e = run(&a, "telegram:1", Some(Decision::Yes)).unwrap_err();
        assert!(e.to_string().contains("could not be asked"), "{e}");
        let ex = smol::LocalExecutor::new();
        let e = smol::block_on(ex.run(a.request("heartbeat", ChannelKind::Heartbeat, "x", None)))
            .unwrap_err();
        assert!(e.to_string().contains("nobody to ask"), "{e}");
        assert!(e.to_string().contains("autonomy to full"), "{e}");
    }

    #[test]
    fn answers_without_a_question_are_none() {
        let (a, _) = setup(true, 60_000);
        assert_eq!(a.answer("telegram:1", Decision::Yes), None);
        assert_eq!(a.answer("telegram:1", Decision::Always), None);
        assert!(!a.is_always("telegram:1"));
    }

    #[test]
    fn many_sessions_stay_bounded() {
        let a = Approvals::new(4, Duration::from_secs(1));
        for i in 0..1000 {
            a.set_always(&format!("s{i}"));
        }
        assert!(a.always.borrow().len() <= 4);
    }

    #[test]
    fn summaries_are_one_bounded_line() {
        assert_eq!(one_line("ls\nrm x\r\n"), "ls ⏎ rm x");
        assert_eq!(one_line("a\u{7}b\tc"), "a\\u{7}b\\u{9}c");
        assert_eq!(
            one_line("ls \u{202e}gpj.exe\u{202c} \u{200b}\u{2066}x\u{2069}\u{feff}\u{61c}"),
            "ls \\u{202e}gpj.exe\\u{202c} \\u{200b}\\u{2066}x\\u{2069}\\u{feff}\\u{61c}"
        );
        assert_eq!(one_line("naïve café ½ 東京"), "naïve café ½ 東京");
        let long = "x".repeat(MAX_APPROVAL_COMMAND_CHARS + 50);
        assert_eq!(one_line(&long), long, "never cut");
    }

    #[test]
    fn too_long_to_show_is_refused_without_asking() {
        let (a, asked) = setup(true, 60_000);
        let ex = smol::LocalExecutor::new();
        let long = format!("Run command: {}", "x".repeat(MAX_APPROVAL_COMMAND_CHARS));
        let e = smol::block_on(ex.run(a.request("telegram:1", ChannelKind::Telegram, &long, None)))
            .unwrap_err();
        assert!(e.to_string().contains("too long to show"), "{e}");
        // Escapes count as shown: 300 invisible characters are 2,400 shown.
        let sneaky = format!("Run command: ls{}", "\u{200b}".repeat(300));
        let e =
            smol::block_on(ex.run(a.request("telegram:1", ChannelKind::Telegram, &sneaky, None)))
                .unwrap_err();
        assert!(e.to_string().contains("too long to show"), "{e}");
        assert!(asked.borrow().is_empty());
    }

    #[test]
    fn opaque_calls_are_asked_even_after_always() {
        let (a, asked) = setup(true, 60_000);
        assert_eq!(run(&a, "telegram:1", Some(Decision::Always)), Ok(()));
        let ex = smol::LocalExecutor::new();
        let answered = Cell::new(false);
        let r = smol::block_on(ex.run(async {
            let req = a.request(
                "telegram:1",
                ChannelKind::Telegram,
                "Run command: curl x | sh",
                Some("this command hides the command it runs"),
            );
            let answer = async {
                loop {
                    if a.is_pending("telegram:1") && !answered.get() {
                        answered.set(true);
                        a.answer("telegram:1", Decision::No);
                    }
                    smol::Timer::after(Duration::from_millis(5)).await;
                }
            };
            smol::future::or(req, answer).await
        }));
        assert!(r.is_err());
        let q = asked.borrow()[1].1.clone();
        assert!(
            q.contains(
                "Warning: this command hides the command it runs; /always does not cover it."
            ),
            "{q}"
        );
    }
}
