//! File tools: `read_file` and `list_dir`, confined to the workspace.
//!
//! # Bounds
//! `read_file` reads at most `MAX_READ_FILE_BYTES`; `list_dir` lists at most
//! `MAX_LIST_DIR_ENTRIES` entries. Both say when they cut.
//!
//! # Threads
//! Worker threads: `tools` runs the file tools there, with a deadline of
//! `FILE_TOOL_DEADLINE_SECS`, so a hung mount never holds the executor.

use super::{Args, ToolError};
use crate::chat::ToolSpec;
use crate::files::{ReadError, read_regular};
use crate::limits::{MAX_LIST_DIR_ENTRIES, MAX_READ_FILE_BYTES};
use crate::security::confine::{self, ConfineError};
use std::borrow::Cow;
use std::path::{Path, PathBuf};

pub const READ_FILE: ToolSpec = ToolSpec {
    name: Cow::Borrowed("read_file"),
    description: Cow::Borrowed(
        "Read a UTF-8 text file from the workspace. Paths are relative to the workspace.",
    ),
    parameters: Cow::Borrowed(
        r#"{"type":"object","properties":{"path":{"type":"string","description":"File path relative to the workspace"}},"required":["path"]}"#,
    ),
};

pub const LIST_DIR: ToolSpec = ToolSpec {
    name: Cow::Borrowed("list_dir"),
    description: Cow::Borrowed(
        "List the entries of a folder in the workspace (folders end with /).",
    ),
    parameters: Cow::Borrowed(
        r#"{"type":"object","properties":{"path":{"type":"string","description":"Folder path relative to the workspace; default is the workspace itself"}}}"#,
    ),
};

fn confine_err(e: ConfineError) -> ToolError {
    match e {
        ConfineError::NotFound(_) => ToolError::Failed(e.to_string()),
        _ => ToolError::Denied(e.to_string()),
    }
}

/// Resolve a tool path: confined to the workspace unless confinement is off.
pub fn resolve(
    workspace: &Path,
    restrict: bool,
    requested: &str,
    must_exist: bool,
) -> Result<PathBuf, ToolError> {
    if restrict {
        return confine::resolve(workspace, requested, must_exist).map_err(confine_err);
    }
    let p = Path::new(requested.trim());
    let joined = if p.is_absolute() {
        p.to_path_buf()
    } else {
        workspace.join(p)
    };
    if must_exist && !joined.exists() {
        return Err(ToolError::Failed(format!(
            "no such file or folder: {requested:?}"
        )));
    }
    Ok(joined)
}

pub fn read_file(workspace: &Path, restrict: bool, args: &Args) -> Result<String, ToolError> {
    let requested = args.str("path")?;
    let path = resolve(workspace, restrict, requested, true)?;
    // Confinement resolved every link: the last component is opened without following
    // one (a link swapped in since is refused), and only a regular file is read (a FIFO
    // or a device would block).
    let (buf, total) = match read_regular(&path, MAX_READ_FILE_BYTES as usize, !restrict) {
        Ok(r) => r,
        Err(ReadError::NotRegular("folder")) => {
            return Err(ToolError::Failed(format!(
                "{requested:?} is a folder: use list_dir"
            )));
        }
        Err(e @ ReadError::NotRegular(_)) => {
            return Err(ToolError::Denied(format!("cannot read {requested:?}: {e}")));
        }
        Err(e) => return Err(ToolError::Failed(format!("cannot read {requested:?}: {e}"))),
    };
    if buf.contains(&0) {
        return Err(ToolError::Failed(format!(
            "{requested:?} is a binary file, not text"
        )));
    }
    let mut text = String::from_utf8_lossy(&buf).into_owned();
    if total > MAX_READ_FILE_BYTES {
        text.push_str(&format!(
            "\n[… file is {total} bytes; only the first {MAX_READ_FILE_BYTES} were read]"
        ));
    }
    Ok(text)
}

pub fn list_dir(workspace: &Path, restrict: bool, args: &Args) -> Result<String, ToolError> {
    let requested = args.opt_str("path")?.unwrap_or(".");
    let requested = if requested.trim().is_empty() {
        "."
    } else {
        requested
    };
    let path = resolve(workspace, restrict, requested, true)?;
    let rd = std::fs::read_dir(&path)
        .map_err(|e| ToolError::Failed(format!("cannot list {requested:?}: {e}")))?;
    let mut entries = Vec::new();
    let mut more = 0usize;
    for entry in rd.flatten() {
        if entries.len() >= MAX_LIST_DIR_ENTRIES {
            more += 1;
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        let meta = entry.metadata().ok();
        let line = match meta {
            Some(m) if m.is_dir() => format!("{name}/"),
            Some(m) => format!("{name}  ({} bytes)", m.len()),
            None => name,
        };
        entries.push(line);
    }
    entries.sort();
    let mut out = if entries.is_empty() {
        "(empty folder)".to_string()
    } else {
        entries.join("\n")
    };
    if more > 0 {
        out.push_str(&format!("\n[… {more} more entries not shown]"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_and_list_inside_the_workspace() {
        let d = std::env::temp_dir().join(format!("yc-fs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("ws/notes")).unwrap();
        std::fs::write(d.join("ws/notes/a.md"), "hello").unwrap();
        std::fs::write(d.join("ws/bin"), [0u8, 1, 2]).unwrap();
        std::fs::write(d.join("outside.txt"), "secret").unwrap();
        let ws = d.join("ws");
        let a = Args::parse(r#"{"path":"notes/a.md"}"#).unwrap();
        assert_eq!(read_file(&ws, true, &a).unwrap(), "hello");
        let a = Args::parse(r#"{"path":"../outside.txt"}"#).unwrap();
        assert!(matches!(
            read_file(&ws, true, &a),
            Err(ToolError::Denied(_))
        ));
        let a = Args::parse(r#"{"path":"bin"}"#).unwrap();
        assert!(
            read_file(&ws, true, &a)
                .unwrap_err()
                .to_string()
                .contains("binary")
        );
        let a = Args::parse(r#"{}"#).unwrap();
        let listing = list_dir(&ws, true, &a).unwrap();
        assert!(listing.contains("notes/"), "{listing}");
        let a = Args::parse(r#"{"path":".."}"#).unwrap();
        assert!(matches!(list_dir(&ws, true, &a), Err(ToolError::Denied(_))));
        let _ = std::fs::remove_dir_all(&d);
    }
}
