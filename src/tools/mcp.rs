//! The seam through which MCP servers' tools are offered to the model and called: the
//! [`McpTools`] trait, defined here beside its caller ([`super::Tools`]) and implemented
//! by the composition root over the MCP manager (which sits at this layer too, so
//! `tools` cannot name it), the way `chat::Outbound` is defined low and implemented high.
//!
//! What `Tools` does with it: each [`McpTool`] is offered beside the built-in tools
//! (filtered per channel by the same deny lists, which may name `SERVER__TOOL`,
//! `SERVER__*` or the group `mcp`); a call to one is checked, its arguments scrubbed, and
//! handed to [`McpTools::call`] (which hands back, for a model that can see, the images
//! of the result beside its text); under `supervised` autonomy it is asked about first
//! unless its server is trusted, under `read_only` refused unless trusted
//! ([`approval_summary`] is the line the user sees).
//!
//! # Bounds
//! The implementation bounds the list (`MCP_MAX_TOOLS`, the bytes of descriptions and
//! schemas); an approval line shows at most `MCP_APPROVAL_ARGS_CHARS` characters of the
//! arguments.
//!
//! # Threads
//! Executor thread: the list is read and calls are awaited there.

use super::{ToolError, ToolOutput};
use crate::chat::ToolSpec;
use crate::limits::MCP_APPROVAL_ARGS_CHARS;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

/// One MCP tool as the model is offered it.
#[derive(Debug, Clone)]
pub struct McpTool {
    /// `name` is the exposed `SERVER__TOOL` (never a built-in tool's name); the
    /// description and schema as the server declared them, bounded and cleaned.
    pub spec: ToolSpec,
    /// The server's name (its `mcp.servers` key).
    pub server: String,
    /// The tool's name as the server declared it (what `tools/call` names).
    pub tool: String,
    /// The server's entry says `"trust": true`: calls are not asked about under
    /// `supervised` autonomy and run under `read_only`.
    pub trust: bool,
}

/// What [`McpTools::call`] returns.
pub type McpCall<'a> = Pin<Box<dyn Future<Output = Result<ToolOutput, ToolError>> + 'a>>;

/// The MCP tools of one running program.
pub trait McpTools {
    /// Every MCP tool offered now (the servers' own `allow_tools`/`deny_tools` applied,
    /// not yet the channels' deny lists). Called for every turn: cheap when nothing
    /// changed.
    fn tools(&self) -> Rc<[McpTool]>;

    /// `tools/call` of `tool` on `server` with `arguments` (a JSON object as text,
    /// already scrubbed): the result as text for the model, with at most `images` of its
    /// images when the model can see (`None`: it cannot; placeholders only), or a tool
    /// error (the tool said `isError`, or the server failed: one sentence).
    fn call<'a>(
        &'a self,
        server: &'a str,
        tool: &'a str,
        arguments: &'a str,
        images: Option<usize>,
    ) -> McpCall<'a>;
}

/// The line the user approves for a call: `SERVER: TOOL {arguments}`, the arguments cut
/// to `MCP_APPROVAL_ARGS_CHARS` characters (an ellipsis and the full size say so).
pub fn approval_summary(t: &McpTool, arguments: &str) -> String {
    let args = arguments.trim();
    let shown = match args.char_indices().nth(MCP_APPROVAL_ARGS_CHARS) {
        Some((i, _)) => format!("{}… ({} bytes)", &args[..i], args.len()),
        None => args.to_string(),
    };
    format!("{}: {} {shown}", t.server, t.tool)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;

    #[test]
    fn the_approval_line_names_server_tool_and_cut_arguments() {
        let t = McpTool {
            spec: ToolSpec {
                name: Cow::Borrowed("home__turn_on"),
                description: Cow::Borrowed(""),
                parameters: Cow::Borrowed("{}"),
            },
            server: "home".into(),
            tool: "turn_on".into(),
            trust: false,
        };
        assert_eq!(
            approval_summary(&t, r#" {"entity":"light.kitchen"} "#),
            r#"home: turn_on {"entity":"light.kitchen"}"#
        );
        let long = format!(r#"{{"x":"{}"}}"#, "é".repeat(1000));
        let s = approval_summary(&t, &long);
        assert!(s.ends_with(&format!("… ({} bytes)", long.len())), "{s}");
        assert!(s.chars().count() < MCP_APPROVAL_ARGS_CHARS + 40);
    }
}
