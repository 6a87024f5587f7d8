//! Environment lookups: the process environment first, then `secrets.env`.
//!
//! # Threads
//! Main thread, at start-up, before the executor runs (small bounded file reads).

use super::ConfigError;
use crate::limits::MAX_SECRETS_BYTES;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

/// Where secrets and overrides come from. Holding `secrets.env` here (instead of setting
/// process variables) keeps its values out of every child process.
#[derive(Default, Clone)]
pub struct Env {
    file: BTreeMap<String, String>,
    /// Secrets taken out of the process environment at start (`app::load`, which wipes
    /// them from the environment block): looked up as the process environment was.
    taken: BTreeMap<String, String>,
    /// Test hook: when set, the process environment is not consulted.
    isolated: Option<BTreeMap<String, String>>,
}

impl std::fmt::Debug for Env {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print values: they are secrets.
        f.debug_struct("Env")
            .field("secrets_file_keys", &self.file.keys().collect::<Vec<_>>())
            .field("taken_keys", &self.taken.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Env {
    /// The process environment plus the given `secrets.env` entries.
    pub fn new(file: BTreeMap<String, String>) -> Env {
        Env {
            file,
            taken: BTreeMap::new(),
            isolated: None,
        }
    }

    /// An environment with no variable at all, the process's ignored (`migrate` reads a
    /// peer's values alone). [`Env::isolated`] with none, without building a map.
    pub fn empty() -> Env {
        Env {
            file: BTreeMap::new(),
            taken: BTreeMap::new(),
            isolated: Some(BTreeMap::new()),
        }
    }

    /// An environment that ignores the process's variables (tests).
    pub fn isolated(vars: &[(&str, &str)]) -> Env {
        Env {
            file: BTreeMap::new(),
            taken: BTreeMap::new(),
            isolated: Some(
                vars.iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
        }
    }

    pub fn get(&self, name: &str) -> Option<String> {
        let from_process = match &self.isolated {
            Some(m) => m.get(name).cloned(),
            None => self
                .taken
                .get(name)
                .cloned()
                .or_else(|| std::env::var(name).ok()),
        };
        from_process
            .filter(|v| !v.is_empty())
            .or_else(|| self.file.get(name).cloned())
    }

    /// This environment with `secrets.env`'s entries replaced by `file` (a reload).
    pub fn with_file(&self, file: BTreeMap<String, String>) -> Env {
        Env {
            file,
            ..self.clone()
        }
    }

    /// Keep variables taken out of the process environment (their values stay what
    /// [`Env::get`] answers for them).
    pub fn keep_taken(&mut self, vars: impl IntoIterator<Item = (String, String)>) {
        self.taken.extend(vars);
    }

    /// Names of the variables defined by `secrets.env` (stripped from child processes).
    pub fn secret_file_keys(&self) -> impl Iterator<Item = &str> {
        self.file.keys().map(String::as_str)
    }

    /// Values from `secrets.env` (for the log and reply scrubber).
    pub fn secret_file_values(&self) -> impl Iterator<Item = &str> {
        self.file.values().map(String::as_str)
    }
}

/// Read `secrets.env` if present. Refused unless its mode is 0600 or stricter.
pub fn load_secrets_file(path: &Path) -> Result<BTreeMap<String, String>, ConfigError> {
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(e) => return Err(ConfigError::Read(path.to_path_buf(), e)),
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = file
            .metadata()
            .map_err(|e| ConfigError::Read(path.to_path_buf(), e))?
            .permissions()
            .mode();
        if mode & 0o077 != 0 {
            return Err(ConfigError::SecretsMode(path.to_path_buf(), mode));
        }
    }
    let mut buf = Vec::new();
    file.take(MAX_SECRETS_BYTES + 1)
        .read_to_end(&mut buf)
        .map_err(|e| ConfigError::Read(path.to_path_buf(), e))?;
    if buf.len() as u64 > MAX_SECRETS_BYTES {
        return Err(ConfigError::TooLarge(path.to_path_buf()));
    }
    let text = String::from_utf8_lossy(&buf);
    parse_secrets(&text).map_err(|line| ConfigError::SecretsLine(path.to_path_buf(), line))
}

/// Parse `KEY=VALUE` lines (`export ` prefix, `#` comments and surrounding quotes allowed).
/// Returns the 1-based number of the first bad line on error.
pub fn parse_secrets(text: &str) -> Result<BTreeMap<String, String>, usize> {
    let mut out = BTreeMap::new();
    for (n, raw) in text.lines().enumerate() {
        match secret_line(raw) {
            None => {}
            Some(None) => return Err(n + 1),
            Some(Some((k, v))) => {
                out.insert(k.to_string(), v.to_string());
            }
        }
    }
    Ok(out)
}

/// One `secrets.env` line: `None` for a blank or comment line, `Some(None)` for a line
/// that is not `KEY=VALUE`, else the key and the value (without its quotes).
pub fn secret_line(raw: &str) -> Option<Option<(&str, &str)>> {
    let line = raw.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let line = line.strip_prefix("export ").unwrap_or(line).trim_start();
    let Some((k, v)) = line.split_once('=') else {
        return Some(None);
    };
    let k = k.trim();
    if k.is_empty() || !k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Some(None);
    }
    let v = v.trim();
    let quoted = v.len() >= 2
        && ((v.starts_with('"') && v.ends_with('"')) || (v.starts_with('\'') && v.ends_with('\'')));
    Some(Some((k, if quoted { &v[1..v.len() - 1] } else { v })))
}
