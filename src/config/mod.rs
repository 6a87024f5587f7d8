//! Configuration: the home folder, `config.json`, environment overrides and `secrets.env`.
//!
//! Every key is optional and defaults as `types` sets it (`yoctoclaw onboard` writes every
//! default into `config.json`; README, "Configuration"). Unknown keys are errors that name the
//! key; a malformed file is an error naming file, line and column; values of the wrong type
//! name the key and the expected type. `YOCTOCLAW_<SECTION>_<KEY>` environment variables
//! override file values (`YOCTOCLAW_TOOLS_EXEC_TIMEOUT_SECS` for nested sections).
//! Numeric values are clamped to the ranges documented beside each field.
//!
//! Secrets (API keys, the bot token) never live in `config.json`: the config names the
//! environment variable that holds each one, and [`Env`] looks them up in the process
//! environment first, then in `secrets.env`. `secrets.env` is not copied into the process
//! environment, so child processes never inherit it.
//!
//! # Bounds
//! `config.json` is read up to `MAX_CONFIG_BYTES`, `secrets.env` up to `MAX_SECRETS_BYTES`;
//! larger files are refused with an error.
//!
//! # Threads
//! Main thread, at start-up, before the executor runs (small bounded file reads); a
//! reload ([`reload`], `live`) on the gateway's executor thread.

mod env;
mod fields;
pub mod live;
pub mod mcp;
pub mod security;
pub mod tool_rules;
mod types;
pub mod web_search;

pub use env::{Env, load_secrets_file, parse_secrets, secret_line};
pub use live::Live;
pub use tool_rules::ToolSet;
pub use types::*;
pub use web_search::{SafeSearch, SearchBackend, WebSearchConfig};

use crate::limits::MAX_CONFIG_BYTES;
use fields::Fields;
use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

/// A configuration problem. All of these map to exit status 2.
#[derive(Debug)]
pub enum ConfigError {
    /// No home folder could be determined.
    NoHome,
    /// The file could not be read.
    Read(PathBuf, std::io::Error),
    /// The file is larger than allowed.
    TooLarge(PathBuf),
    /// JSON syntax error at a position.
    Syntax(PathBuf, crate::json::SyntaxError),
    /// A key the program does not know (`provider.modle`).
    UnknownKey(String),
    /// A key with a value of the wrong type or out of its allowed set.
    BadValue { key: String, expected: String },
    /// `secrets.env` is readable by group or others.
    SecretsMode(PathBuf, u32),
    /// A malformed line in `secrets.env`.
    SecretsLine(PathBuf, usize),
    /// `config.json` is empty or missing when it is read again (a reload): a file being
    /// written, never taken for the defaults.
    Empty(PathBuf),
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::NoHome => write!(
                f,
                "cannot find a home folder: set HOME, YOCTOCLAW_HOME or pass --home DIR"
            ),
            ConfigError::Read(p, e) => write!(f, "cannot read {}: {e}", p.display()),
            ConfigError::TooLarge(p) => write!(
                f,
                "{} is larger than {} KiB: is it the right file?",
                p.display(),
                MAX_CONFIG_BYTES / 1024
            ),
            ConfigError::Syntax(p, e) => write!(
                f,
                "{} is not valid JSON at line {}, column {}: {}",
                p.display(),
                e.line,
                e.column,
                e.message
            ),
            ConfigError::UnknownKey(k) => write!(
                f,
                "unknown config key \"{k}\": check its spelling (see README, Configuration)"
            ),
            ConfigError::BadValue { key, expected } => {
                write!(f, "config key \"{key}\" must be {expected}")
            }
            ConfigError::SecretsMode(p, mode) => write!(
                f,
                "{} has mode {:o}, readable by others: run chmod 600 {}",
                p.display(),
                mode & 0o777,
                p.display()
            ),
            ConfigError::SecretsLine(p, n) => write!(
                f,
                "{} line {n} is not KEY=VALUE: fix or remove it",
                p.display()
            ),
            ConfigError::Empty(p) => write!(
                f,
                "{} is empty or missing: write the whole file, then reload",
                p.display()
            ),
        }
    }
}

impl std::error::Error for ConfigError {}

/// Where everything lives.
#[derive(Debug, Clone)]
pub struct Home {
    pub dir: PathBuf,
}

impl Home {
    /// `--home DIR`, else `$YOCTOCLAW_HOME`, else `~/.yoctoclaw`.
    pub fn resolve(flag: Option<&Path>) -> Result<Home, ConfigError> {
        if let Some(dir) = flag {
            return Ok(Home {
                dir: dir.to_path_buf(),
            });
        }
        if let Some(dir) = std::env::var_os("YOCTOCLAW_HOME").filter(|v| !v.is_empty()) {
            return Ok(Home {
                dir: PathBuf::from(dir),
            });
        }
        match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
            Some(h) => Ok(Home {
                dir: PathBuf::from(h).join(".yoctoclaw"),
            }),
            None => Err(ConfigError::NoHome),
        }
    }
    pub fn config_file(&self) -> PathBuf {
        self.dir.join("config.json")
    }
    pub fn secrets_file(&self) -> PathBuf {
        self.dir.join("secrets.env")
    }
    pub fn db_file(&self) -> PathBuf {
        self.dir.join("yoctoclaw.db")
    }
    pub fn workspace(&self) -> PathBuf {
        self.dir.join("workspace")
    }
    /// Files being downloaded or waiting to be sent (a Telegram download, a tool
    /// result's image): each removed when done, the folder emptied when the gateway
    /// starts.
    pub fn spool(&self) -> PathBuf {
        self.dir.join("spool")
    }
}

/// Load `config.json` from the home (defaults when absent), then apply env overrides.
pub fn load(home: &Home, env: &Env) -> Result<Config, ConfigError> {
    let path = home.config_file();
    let text = match std::fs::File::open(&path) {
        Ok(f) => Some(read_bounded(f, &path)?),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(ConfigError::Read(path, e)),
    };
    parse(text.as_deref(), &path, env)
}

/// `config.json` and `secrets.env` read again for a reload, over `env` (the process's
/// variables as the gateway started with them). Like [`load`] and [`load_secrets_file`],
/// but a `config.json` that is missing or holds nothing is an error ([`ConfigError::Empty`]),
/// not the defaults: it is a file being written.
pub fn reload(home: &Home, env: &Env) -> Result<(Config, Env), ConfigError> {
    let env = env.with_file(load_secrets_file(&home.secrets_file())?);
    let path = home.config_file();
    let text = match std::fs::File::open(&path) {
        Ok(f) => read_bounded(f, &path)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ConfigError::Empty(path));
        }
        Err(e) => return Err(ConfigError::Read(path, e)),
    };
    if text.trim().is_empty() {
        return Err(ConfigError::Empty(path));
    }
    let cfg = parse(Some(&text), &path, &env)?;
    Ok((cfg, env))
}

fn read_bounded(f: std::fs::File, path: &Path) -> Result<String, ConfigError> {
    let mut buf = Vec::new();
    f.take(MAX_CONFIG_BYTES + 1)
        .read_to_end(&mut buf)
        .map_err(|e| ConfigError::Read(path.to_path_buf(), e))?;
    if buf.len() as u64 > MAX_CONFIG_BYTES {
        return Err(ConfigError::TooLarge(path.to_path_buf()));
    }
    String::from_utf8(buf).map_err(|_| {
        ConfigError::Read(
            path.to_path_buf(),
            std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8 text"),
        )
    })
}

/// Parse config text (or defaults when `None`) with env overrides from `env`.
pub fn parse(text: Option<&str>, path: &Path, env: &Env) -> Result<Config, ConfigError> {
    let root = match text {
        Some(t) if !t.trim().is_empty() => {
            crate::json::parse_value(t).map_err(|e| ConfigError::Syntax(path.to_path_buf(), e))?
        }
        _ => miniserde::json::Value::Object(Default::default()),
    };
    let mut top = Fields::root(&root, env)?;
    let cfg = types::read_config(&mut top)?;
    top.finish()?;
    Ok(cfg)
}

#[cfg(test)]
mod tests;
