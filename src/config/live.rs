//! The running configuration behind one swap point ([`Live`]), and what a reload may
//! change while the gateway runs ([`keep_restart_only`]).
//!
//! Why it exists: the gateway reads `config.json` and `secrets.env` again on SIGHUP or
//! `yoctoclaw reload`. Every part that reads settings while it runs (the agent, its
//! tools, the scheduler) holds the same [`Live`] and takes the configuration from it when
//! it needs it, so a reload swaps one value. Settings that were used once to build
//! something that runs (a listener, a thread, a device, an open database) keep their
//! running value until a restart, and a reload names them.
//!
//! # Bounds
//! One configuration in use (and the one a turn still holds while it reads it).
//!
//! # Threads
//! Executor thread (`Rc`, not shared between threads).

use super::Config;
use std::cell::RefCell;
use std::rc::Rc;

/// The configuration in use, swapped whole by a reload. Cloning shares the swap point.
#[derive(Debug, Clone)]
pub struct Live(Rc<RefCell<Rc<Config>>>);

impl Live {
    pub fn new(cfg: Rc<Config>) -> Live {
        Live(Rc::new(RefCell::new(cfg)))
    }

    /// The configuration in use now.
    pub fn get(&self) -> Rc<Config> {
        self.0.borrow().clone()
    }

    /// Use `cfg` from now on.
    pub fn set(&self, cfg: Rc<Config>) {
        *self.0.borrow_mut() = cfg;
    }
}

impl From<Rc<Config>> for Live {
    fn from(cfg: Rc<Config>) -> Live {
        Live::new(cfg)
    }
}

impl From<Config> for Live {
    fn from(cfg: Config) -> Live {
        Live::new(Rc::new(cfg))
    }
}

/// `loaded` with every setting that only a restart can change put back to its `running`
/// value, and the names of those that differed (in the order of the README's list).
///
/// Restart-only: the Telegram connection (`enabled`, `api_base`, `token_env`, `mode`,
/// `webhook_url`, `webhook_secret_env`, `poll_timeout_secs`: its threads and clients are
/// built at start), the serial console's line (`serial.device`, `baud`, `echo`), the
/// HTTP server (`http`, but `http.deny_tools`), `watchdog`, `tls`, `mcp` (the servers'
/// manager), `media` and `transcription` (Telegram's media handling), `agent.max_sessions`
/// and `agent.approval_timeout_secs` (sized at start), `agent.timezone` (cron's planned
/// runs), `memory.cache_kib` (the open database) and `tools.exec.user` (privileges are
/// dropped once). Everything else applies at once.
pub fn keep_restart_only(running: &Config, mut loaded: Config) -> (Config, Vec<&'static str>) {
    let mut named = Vec::new();
    let (r, l) = (running, &mut loaded);
    let t = (&r.telegram, &mut l.telegram);
    keep(
        &mut named,
        "telegram.enabled",
        &mut t.1.enabled,
        &t.0.enabled,
    );
    keep(
        &mut named,
        "telegram.api_base",
        &mut t.1.api_base,
        &t.0.api_base,
    );
    keep(
        &mut named,
        "telegram.token_env",
        &mut t.1.token_env,
        &t.0.token_env,
    );
    keep(&mut named, "telegram.mode", &mut t.1.mode, &t.0.mode);
    keep(
        &mut named,
        "telegram.webhook_url",
        &mut t.1.webhook_url,
        &t.0.webhook_url,
    );
    let (secret_env, poll) = (&t.0.webhook_secret_env, &t.0.poll_timeout_secs);
    keep(
        &mut named,
        "telegram.webhook_secret_env",
        &mut t.1.webhook_secret_env,
        secret_env,
    );
    keep(
        &mut named,
        "telegram.poll_timeout_secs",
        &mut t.1.poll_timeout_secs,
        poll,
    );
    let s = (&r.serial, &mut l.serial);
    keep(&mut named, "serial.device", &mut s.1.device, &s.0.device);
    keep(&mut named, "serial.baud", &mut s.1.baud, &s.0.baud);
    keep(&mut named, "serial.echo", &mut s.1.echo, &s.0.echo);
    // The HTTP server's tool rule is read per turn; the rest built the server.
    let deny = std::mem::replace(&mut l.http.deny_tools, r.http.deny_tools.clone());
    keep(&mut named, "http", &mut l.http, &r.http);
    l.http.deny_tools = deny;
    keep(&mut named, "watchdog", &mut l.watchdog, &r.watchdog);
    keep(&mut named, "tls", &mut l.tls, &r.tls);
    keep(&mut named, "mcp", &mut l.mcp, &r.mcp);
    keep(&mut named, "media", &mut l.media, &r.media);
    keep(
        &mut named,
        "transcription",
        &mut l.transcription,
        &r.transcription,
    );
    let a = (&r.agent, &mut l.agent);
    keep(
        &mut named,
        "agent.max_sessions",
        &mut a.1.max_sessions,
        &a.0.max_sessions,
    );
    let approval = &a.0.approval_timeout_secs;
    keep(
        &mut named,
        "agent.approval_timeout_secs",
        &mut a.1.approval_timeout_secs,
        approval,
    );
    keep(
        &mut named,
        "agent.timezone",
        &mut a.1.timezone,
        &a.0.timezone,
    );
    let cache = &r.memory.cache_kib;
    keep(
        &mut named,
        "memory.cache_kib",
        &mut l.memory.cache_kib,
        cache,
    );
    keep(
        &mut named,
        "tools.exec.user",
        &mut l.tools.exec.user,
        &r.tools.exec.user,
    );
    (loaded, named)
}

/// Put `running` back into `loaded` and name it when they differ.
fn keep<T: PartialEq + Clone>(
    named: &mut Vec<&'static str>,
    name: &'static str,
    loaded: &mut T,
    running: &T,
) {
    if loaded != running {
        named.push(name);
        *loaded = running.clone();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restart_only_settings_keep_their_running_value_and_are_named() {
        let running = Config::default();
        let mut loaded = Config::default();
        loaded.telegram.allow_from = vec!["42".into()];
        loaded.telegram.api_base = "http://127.0.0.1:1".into();
        loaded.http.listen = "127.0.0.1:9".parse().unwrap();
        loaded.http.deny_tools =
            crate::config::ToolSet::parse(&["exec".into()], "http.deny_tools").unwrap();
        loaded.serial.device = "/dev/ttyS9".into();
        loaded.budget.daily_tokens = Some(1000);
        let (cfg, named) = keep_restart_only(&running, loaded);
        assert_eq!(named, ["telegram.api_base", "serial.device", "http"]);
        assert_eq!(cfg.telegram.api_base, running.telegram.api_base);
        assert_eq!(cfg.http.listen, running.http.listen);
        assert_eq!(cfg.serial.device, running.serial.device);
        // What applies live is kept from the file.
        assert_eq!(cfg.telegram.allow_from, ["42"]);
        assert_eq!(cfg.budget.daily_tokens, Some(1000));
        assert!(cfg.http.deny_tools.contains("exec"));
        // The same file again changes nothing.
        let (_, named) = keep_restart_only(&running, running.clone());
        assert!(named.is_empty());
    }
}
