//! Doctor's MCP checks: each enabled server started, initialized and its tools listed, one
//! line each with the time it took and the tool count, or the error. The secrets the
//! servers are given (what their `${NAME}` references and `env_from_secrets` read, and
//! literal values named like secrets) are taught to the scrubber first, so no line can
//! carry one.
//!
//! # Bounds
//! One server at a time, each within its own `timeout_secs` (the manager's); at most
//! `config::mcp::MCP_MAX_SERVERS` lines.
//!
//! # Threads
//! Main thread: the manager runs under `smol::block_on`; every server is stopped before
//! doctor goes on.

use super::{Check, Verdict};
use crate::config::{Config, Env, Home};
use crate::security::scrub::install_secret_literals;
use std::time::Instant;

/// One line per enabled server (none when there are none).
pub fn checks(cfg: &Config, env: &Env, home: &Home, emit: &mut dyn FnMut(Check)) {
    if !cfg.mcp.servers.iter().any(|s| s.enabled) {
        return;
    }
    install_secret_literals(crate::app::mcp_cmd::server_secrets(cfg, env));
    let mcp = crate::app::mcp_cmd::manager(cfg, env, home, None);
    for s in cfg.mcp.servers.iter().filter(|s| s.enabled) {
        let t0 = Instant::now();
        let started = smol::block_on(mcp.start(&s.name));
        let secs = t0.elapsed().as_secs_f64();
        let c = match started {
            Ok(_) => Check::new(
                Verdict::Ok,
                "mcp",
                format!(
                    "{} ({}): {} tool(s) in {secs:.2} s",
                    s.name,
                    s.transport_name(),
                    mcp.tools(&s.name).len()
                ),
            ),
            Err(e) => Check::new(
                Verdict::Fail,
                "mcp",
                format!(
                    "{} ({}): {e} (after {secs:.2} s); yoctoclaw mcp tools {} shows it again",
                    s.name,
                    s.transport_name(),
                    s.name
                ),
            ),
        };
        emit(c);
    }
    smol::block_on(mcp.shutdown());
}
