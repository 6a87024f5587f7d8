//! The `send_message` tool: a message to the chat the model is talking in, or to a
//! Telegram chat that `telegram.allow_from` lists by numeric id.
//!
//! Why the allowlist: the model must not be talked into messaging strangers from the
//! owner's bot. [`allowed_chat`] is the one check; `cron_add` uses it for the chat a job
//! delivers to. Only numeric ids are accepted as targets (a `@username` in the allowlist
//! cannot be turned into a chat id without Telegram). Delivery goes through the
//! outbound seam (`chat::Outbound`), which scrubs the text; inside the gateway that is the
//! Telegram sender thread.
//!
//! "The current chat" is the Telegram chat of a `telegram:<id>` session, or stdout for
//! the terminal. Heartbeat and cron turns have no chat of their own: they name a target.
//!
//! # Bounds
//! Text up to [`MAX_MESSAGE_BYTES`]; delivery splits and caps it (`channels::deliver`).
//!
//! # Threads
//! Executor thread: the checks are pure; delivery awaits the outbound seam, which hands the
//! HTTP to the sender thread (inside the gateway) or a worker thread.

use super::{Args, CallContext, ToolError, Tools};
use crate::chat::ToolSpec;
use crate::chat::{ChannelKind, Target};
use crate::config::Config;
use std::borrow::Cow;

/// Longest text `send_message` accepts.
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024;

pub const SEND_MESSAGE: ToolSpec = ToolSpec {
    name: Cow::Borrowed("send_message"),
    description: Cow::Borrowed(
        "Send a message now, before your final answer: to the current chat by default, or to another allowed Telegram chat given as 'telegram:<numeric id>'. Use it for progress notes during long work or to notify someone on the allowlist; your final answer is sent anyway.",
    ),
    parameters: Cow::Borrowed(
        r#"{"type":"object","properties":{"text":{"type":"string","description":"The message text (markdown allowed)"},"to":{"type":"string","description":"Optional target 'telegram:<numeric chat id>' listed in telegram.allow_from. Default: the current chat"}},"required":["text"]}"#,
    ),
};

pub const SEND_FILE: ToolSpec = ToolSpec {
    name: Cow::Borrowed("send_file"),
    description: Cow::Borrowed(
        "Send a workspace file to the current Telegram chat (or 'telegram:<numeric id>' if allowed): images as photos, Ogg as voice notes, else a document (50 MB at most).",
    ),
    parameters: Cow::Borrowed(
        r#"{"type":"object","properties":{"path":{"type":"string","description":"File path relative to the workspace"},"to":{"type":"string","description":"Optional target 'telegram:<numeric chat id>' listed in telegram.allow_from. Default: the current chat"}},"required":["path"]}"#,
    ),
};

pub async fn send_file(tools: &Tools, ctx: &CallContext, args: &Args) -> Result<String, ToolError> {
    let rel = args.str("path")?;
    // Always confined, whatever agent.restrict_to_workspace says: a file leaves the
    // device.
    let path = super::fs::resolve(&tools.workspace, true, rel, true)?;
    if !path.is_file() {
        return Err(ToolError::BadArgs(format!("{rel:?} is not a file")));
    }
    let target = target(tools, ctx, args.opt_str("to")?)?;
    if !matches!(target, Target::Telegram(_)) {
        return Err(ToolError::Failed(
            "files can be sent only to Telegram chats".into(),
        ));
    }
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    tools
        .outbound
        .send_file(&target, &path)
        .await
        .map_err(|e| ToolError::Failed(e.to_string()))?;
    Ok(format!(
        "Sent {} ({}) to {}.",
        crate::security::confine::display_relative(&tools.workspace, &path),
        crate::chat::media::size_text(size),
        label(&target)
    ))
}

/// Where the message goes, checked.
pub fn target(tools: &Tools, ctx: &CallContext, to: Option<&str>) -> Result<Target, ToolError> {
    target_for(&tools.cfg(), ctx, to)
}

/// [`target`] over the config alone.
fn target_for(cfg: &Config, ctx: &CallContext, to: Option<&str>) -> Result<Target, ToolError> {
    let to = to.map(str::trim).filter(|t| !t.is_empty());
    let Some(to) = to else {
        return current_chat(ctx);
    };
    let Some(id) = to.strip_prefix("telegram:") else {
        return Err(ToolError::BadArgs(format!(
            "\"to\" must be telegram:<numeric chat id>, not {to:?}"
        )));
    };
    let id: i64 = id.trim().parse().map_err(|_| {
        ToolError::BadArgs(format!(
            "\"to\" must name a numeric chat id (telegram:123456), not {to:?}"
        ))
    })?;
    allowed_chat(cfg, ctx, id)?;
    Ok(Target::Telegram(id))
}

/// The check every delivery the model chooses goes through (`send_message`, `cron_add`):
/// a Telegram chat is allowed when `telegram.allow_from` lists its numeric id, or when it
/// is the chat this conversation happens in.
pub fn allowed_chat(cfg: &Config, ctx: &CallContext, id: i64) -> Result<(), ToolError> {
    let listed = cfg
        .telegram
        .allow_from
        .iter()
        .any(|a| a.trim().parse::<i64>() == Ok(id));
    let this_chat = ctx.channel == ChannelKind::Telegram
        && Target::parse(&ctx.session) == Some(Target::Telegram(id));
    if listed || this_chat {
        Ok(())
    } else {
        Err(ToolError::Denied(format!(
            "telegram:{id} is not in telegram.allow_from: messages go only to allowed chats"
        )))
    }
}

fn current_chat(ctx: &CallContext) -> Result<Target, ToolError> {
    match ctx.channel {
        ChannelKind::Telegram => match Target::parse(&ctx.session) {
            Some(t @ Target::Telegram(_)) => Ok(t),
            _ => Err(ToolError::Failed("this chat has no Telegram id".into())),
        },
        ChannelKind::Terminal => Ok(Target::Stdout),
        other => Err(ToolError::BadArgs(format!(
            "a {} run has no chat of its own: give \"to\" as telegram:<id>",
            other.as_str()
        ))),
    }
}

pub async fn send_message(
    tools: &Tools,
    ctx: &CallContext,
    args: &Args,
) -> Result<String, ToolError> {
    let text = args.str("text")?;
    if text.trim().is_empty() {
        return Err(ToolError::BadArgs("\"text\" is empty".into()));
    }
    if text.len() > MAX_MESSAGE_BYTES {
        return Err(ToolError::BadArgs(format!(
            "\"text\" is longer than {MAX_MESSAGE_BYTES} bytes"
        )));
    }
    let target = target(tools, ctx, args.opt_str("to")?)?;
    tools
        .outbound
        .deliver(&target, text)
        .await
        .map_err(|e| ToolError::Failed(e.to_string()))?;
    Ok(format!(
        "Sent ({} bytes) to {}.",
        text.len(),
        label(&target)
    ))
}

fn label(t: &Target) -> String {
    match t {
        Target::Stdout => "the terminal".into(),
        other => other.to_string(),
    }
}
