//! Chat commands understood on every channel: `/new`, `/status`, `/help`, `/start`, and
//! `/yes` `/no` `/always` for approvals.

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
