//! Workspace confinement: every path a tool touches is resolved (symlinks included) and
//! must stay inside the workspace folder.
//!
//! A path that exists is canonicalized. A path that does not exist yet (a file about to be
//! written) is checked through its deepest existing ancestor, and the remaining parts may
//! not contain `..`. Escapes by `..`, absolute paths, or symlinks pointing out are refused.
//!
//! # Threads
//! The caller's thread: a worker for the file tools, the executor for `send_file`'s path
//! and for the photos a model request names.
//!
//! # Blocking
//! Filesystem metadata calls only.

use std::fmt;
use std::path::{Component, Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfineError {
    /// Empty path, NUL byte…
    Invalid(String),
    /// The path resolves outside the workspace.
    Outside(String),
    /// The path does not exist (when it must).
    NotFound(String),
    /// The workspace itself is missing.
    NoWorkspace(PathBuf),
}

impl fmt::Display for ConfineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfineError::Invalid(p) => write!(f, "invalid path {p:?}"),
            ConfineError::Outside(p) => write!(
                f,
                "path {p:?} is outside the workspace: only files inside the workspace can be used"
            ),
            ConfineError::NotFound(p) => write!(f, "no such file or folder: {p:?}"),
            ConfineError::NoWorkspace(w) => write!(
                f,
                "the workspace {} does not exist: run yoctoclaw onboard",
                w.display()
            ),
        }
    }
}

impl std::error::Error for ConfineError {}

/// Resolve `requested` (relative to the workspace, or absolute) to a real path inside
/// `workspace`. With `must_exist`, the target must exist.
pub fn resolve(
    workspace: &Path,
    requested: &str,
    must_exist: bool,
) -> Result<PathBuf, ConfineError> {
    let req = requested.trim();
    if req.is_empty() || req.contains('\0') {
        return Err(ConfineError::Invalid(requested.to_string()));
    }
    let root = workspace
        .canonicalize()
        .map_err(|_| ConfineError::NoWorkspace(workspace.to_path_buf()))?;
    let joined = if Path::new(req).is_absolute() {
        PathBuf::from(req)
    } else {
        root.join(req)
    };
    match joined.canonicalize() {
        Ok(real) => {
            if real.starts_with(&root) {
                Ok(real)
            } else {
                Err(ConfineError::Outside(requested.to_string()))
            }
        }
        Err(_) if must_exist => {
            // Distinguish "outside" from "missing" without revealing anything outside.
            match deepest_existing(&joined) {
                Some((base, _)) if !base.starts_with(&root) => {
                    Err(ConfineError::Outside(requested.to_string()))
                }
                _ => Err(ConfineError::NotFound(requested.to_string())),
            }
        }
        Err(_) => {
            let (base, rest) = deepest_existing(&joined)
                .ok_or_else(|| ConfineError::Outside(requested.to_string()))?;
            if !base.starts_with(&root) {
                return Err(ConfineError::Outside(requested.to_string()));
            }
            if rest
                .components()
                .any(|c| !matches!(c, Component::Normal(_)))
            {
                return Err(ConfineError::Outside(requested.to_string()));
            }
            Ok(base.join(rest))
        }
    }
}

/// Split a path into its deepest existing ancestor (canonicalized) and the rest.
fn deepest_existing(p: &Path) -> Option<(PathBuf, PathBuf)> {
    let mut rest = Vec::new();
    let mut cur = p.to_path_buf();
    loop {
        if let Ok(real) = cur.canonicalize() {
            let mut tail = PathBuf::new();
            for part in rest.iter().rev() {
                tail.push(part);
            }
            return Some((real, tail));
        }
        let name = cur.file_name()?.to_os_string();
        rest.push(name);
        cur = cur.parent()?.to_path_buf();
        if rest.len() > 256 {
            return None;
        }
    }
}

/// Show a resolved path relative to the workspace (for tool output).
pub fn display_relative(workspace: &Path, p: &Path) -> String {
    let root = workspace
        .canonicalize()
        .unwrap_or_else(|_| workspace.to_path_buf());
    match p.strip_prefix(&root) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".into(),
        Ok(rel) => rel.display().to_string(),
        Err(_) => p.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("yc-confine-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("ws/sub")).unwrap();
        std::fs::write(d.join("ws/a.txt"), "a").unwrap();
        std::fs::write(d.join("secret.txt"), "s").unwrap();
        d
    }

    #[test]
    fn inside_paths_resolve() {
        let d = tmp("in");
        let ws = d.join("ws");
        assert!(resolve(&ws, "a.txt", true).is_ok());
        assert!(resolve(&ws, "./sub/../a.txt", true).is_ok());
        assert!(resolve(&ws, ".", true).is_ok());
        assert!(resolve(&ws, "sub/new.txt", false).is_ok());
        assert!(resolve(&ws, "new/deeper/file.txt", false).is_ok());
        let abs = ws.join("a.txt");
        assert!(resolve(&ws, abs.to_str().unwrap(), true).is_ok());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn escapes_are_refused() {
        let d = tmp("out");
        let ws = d.join("ws");
        for p in [
            "../secret.txt",
            "sub/../../secret.txt",
            "/etc/passwd",
            "../nope.txt",
        ] {
            assert!(
                matches!(resolve(&ws, p, true), Err(ConfineError::Outside(_))),
                "{p}"
            );
        }
        assert!(matches!(
            resolve(&ws, "../new.txt", false),
            Err(ConfineError::Outside(_))
        ));
        assert!(matches!(
            resolve(&ws, "", true),
            Err(ConfineError::Invalid(_))
        ));
        assert!(matches!(
            resolve(&ws, "missing.txt", true),
            Err(ConfineError::NotFound(_))
        ));
        let _ = std::fs::remove_dir_all(&d);
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_pointing_out_are_refused() {
        let d = tmp("link");
        let ws = d.join("ws");
        std::os::unix::fs::symlink(d.join("secret.txt"), ws.join("link.txt")).unwrap();
        std::os::unix::fs::symlink(&d, ws.join("dirlink")).unwrap();
        assert!(matches!(
            resolve(&ws, "link.txt", true),
            Err(ConfineError::Outside(_))
        ));
        assert!(matches!(
            resolve(&ws, "dirlink/secret.txt", true),
            Err(ConfineError::Outside(_))
        ));
        assert!(matches!(
            resolve(&ws, "dirlink/new.txt", false),
            Err(ConfineError::Outside(_))
        ));
        let _ = std::fs::remove_dir_all(&d);
    }
}
