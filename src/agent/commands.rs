//! Chat commands understood on every channel: `/new`, `/status`, `/help`, `/start`, and
//! `/yes` `/no` `/always` for approvals; [`handle`] answers them for any channel.
//!
//! # Threads
//! Executor thread (it owns the SQLite connection); each call is one short statement or
//! read, nothing here awaits I/O of its own.

use super::Agent;
use super::approval::Decision;
use crate::time::now as now_secs;

/// A recognised chat command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    New,
    Status,
    Help,
    Start,
    Yes,
    No,
    Always,
}

/// Recognise a command; `/cmd@botname` (Telegram groups) and trailing text are accepted.
pub fn parse(text: &str) -> Option<Command> {
    let t = text.trim();
    let word = t.strip_prefix('/')?.split_whitespace().next()?;
    let word = word.split('@').next().unwrap_or(word).to_ascii_lowercase();
    Some(match word.as_str() {
        "new" | "reset" | "clear" => Command::New,
        "status" => Command::Status,
        "help" => Command::Help,
        "start" => Command::Start,
        "yes" | "y" | "approve" => Command::Yes,
        "no" | "n" | "deny" => Command::No,
        "always" => Command::Always,
        _ => return None,
    })
}

/// Handle a chat command; `None` when `text` is not one.
pub fn handle(agent: &Agent, session: &str, text: &str) -> Option<String> {
    let cmd = parse(text)?;
    Some(match cmd {
        Command::New => match agent.db.reset_session(session, now_secs()) {
            Ok(()) => {
                agent.approvals.forget(session);
                "Started a fresh conversation.".to_string()
            }
            Err(e) => format!("Could not reset the session: {e}"),
        },
        Command::Status => status_text(agent, session),
        Command::Help | Command::Start => HELP.to_string(),
        Command::Yes | Command::No | Command::Always => {
            return approval_reply(agent, session, text);
        }
    })
}

/// Told when `/yes` `/no` `/always` find no question waiting.
pub const NOTHING_WAITING: &str = "There is nothing waiting for your approval.";

/// `/yes` `/no` `/always`: answer the approval waiting in `session` and return the
/// reply; `None` when `text` is not one of these commands. Channels call this as soon as
/// a message arrives, before queueing it behind the session's running turn (the turn is
/// what waits for the answer).
pub fn approval_reply(agent: &Agent, session: &str, text: &str) -> Option<String> {
    let d = match parse(text)? {
        Command::Yes => Decision::Yes,
        Command::No => Decision::No,
        Command::Always => Decision::Always,
        _ => return None,
    };
    Some(
        agent
            .approvals
            .answer(session, d)
            .unwrap_or_else(|| NOTHING_WAITING.to_string()),
    )
}

/// The `/status` reply.
pub fn status_text(agent: &Agent, session: &str) -> String {
    let msgs = agent.db.message_count(session).unwrap_or(0);
    let sessions = agent.db.session_count().unwrap_or(0);
    let today = crate::store::usage::day_of(now_secs());
    let (p, c) = agent.db.usage_totals(&today).unwrap_or((0, 0));
    let model = agent
        .providers()
        .first()
        .map(|p| p.label())
        .unwrap_or_default();
    format!(
        "yoctoclaw {}\nmodel: {model}\nsession: {session} ({msgs} messages)\nsessions stored: {sessions}\ntokens today: {p} in, {c} out",
        env!("CARGO_PKG_VERSION")
    )
}

pub const HELP: &str = "Commands:\n/new - start a fresh conversation (history is kept on disk)\n/status - model, session and usage figures\n/help - this text\n/yes, /no, /always - answer an approval request (always = for the rest of this session)";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_parse() {
        assert_eq!(parse("/new"), Some(Command::New));
        assert_eq!(parse("  /STATUS  "), Some(Command::Status));
        assert_eq!(parse("/help@my_bot"), Some(Command::Help));
        assert_eq!(parse("/yes please"), Some(Command::Yes));
        assert_eq!(parse("/unknown"), None);
        assert_eq!(parse("new"), None);
        assert_eq!(parse("/"), None);
    }
}
