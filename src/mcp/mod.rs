//! MCP (Model Context Protocol) client: tools from MCP servers.
//!
//! # Threads
//! See each submodule: the transports block and run on worker threads.

pub mod http;
