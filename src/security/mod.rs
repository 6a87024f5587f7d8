//! Security layer: the pure checks every tool and channel goes through.
//!
//! Why: the model decides which commands run and which URLs are fetched, and tool output flows
//! back to the model, chats and logs. These modules hold the rules that keep that safe, with no
//! I/O of their own (except DNS resolution in [`netguard::resolve_checked`]):
//!
//! - [`scrub`]: removes credentials from any text before it leaves the process.
//! - [`exec_policy`]: refuses destructive or secret-reading shell commands before `exec` runs them,
//!   and finds the ones that hide what they run.
//! - [`child_env`]: the few clean variables a child process is given from ours.
//! - [`injection`]: screens untrusted text for prompt injection and fences it as data.
//! - [`base64`]: the one base64 encoder and decoder (the screen decodes runs it finds;
//!   uploads, MCP images and WebSocket keys use it too).
//! - [`netguard`]: parses `web_fetch` URLs strictly and refuses local and private addresses.
//!
//! # Bounds
//! Each module documents its own limits; none of them keeps unbounded state.
//!
//! # Threads
//! Any thread: pure checks, except [`netguard::resolve_checked`], which blocks on the
//! system resolver and runs on a worker thread (`web_fetch`).

pub mod base64;
pub mod child_env;
pub mod confine;
pub mod exec_policy;
pub mod injection;
pub mod netguard;
pub mod scrub;
