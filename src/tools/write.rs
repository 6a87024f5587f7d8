//! File-changing tools: `write_file` (create or replace) and `edit_file` (exact text
//! replacement), confined to the workspace and written crash-safely.
//!
//! Every path goes through `fs::resolve` (workspace confinement: `..`, absolute paths and
//! symlinks pointing out are refused). A final path component that is a symlink pointing
//! nowhere is refused (it could be aimed outside later); a symlink to a file inside the
//! workspace is followed and the real file is replaced. Missing parent folders are created
//! inside the workspace and checked again after creation. Writes go through
//! `files::write_atomic` (temporary file, fsync, rename), keeping an existing file's
//! permission bits (an edited script stays executable).
//!
//! # Bounds
//! Content written and files edited: at most `MAX_WRITE_FILE_BYTES`, before and after an
//! edit; bigger ones are refused with a tool error, nothing is written.
//!
//! # Threads
//! Worker threads (`tools` runs file tools there, with a deadline); the approval summaries
//! on the executor thread.
//!
//! # Blocking
//! Filesystem calls including two fsyncs; small files only (see Bounds).

use super::fs::resolve;
use super::{Args, ToolError};
use crate::chat::ToolSpec;
use crate::limits::MAX_WRITE_FILE_BYTES;
use crate::security::confine::display_relative;
use std::borrow::Cow;
use std::path::{Path, PathBuf};

pub const WRITE_FILE: ToolSpec = ToolSpec {
    name: Cow::Borrowed("write_file"),
    description: Cow::Borrowed(
        "Create a text file in the workspace, or replace one completely, with the given content. Missing folders on the way are created. To change part of an existing file, use edit_file instead. Paths are relative to the workspace.",
    ),
    parameters: Cow::Borrowed(
        r#"{"type":"object","properties":{"path":{"type":"string","description":"File path relative to the workspace, e.g. notes/todo.md"},"content":{"type":"string","description":"The complete new content of the file (UTF-8 text, at most 262144 bytes)"}},"required":["path","content"]}"#,
    ),
};

pub const EDIT_FILE: ToolSpec = ToolSpec {
    name: Cow::Borrowed("edit_file"),
    description: Cow::Borrowed(
        "Change part of a text file in the workspace: replace old_text, copied exactly from the file (spaces and line breaks included), with new_text. old_text must appear exactly once unless replace_all is true; read the file first if unsure.",
    ),
    parameters: Cow::Borrowed(
        r#"{"type":"object","properties":{"path":{"type":"string","description":"File path relative to the workspace"},"old_text":{"type":"string","description":"The exact text to replace; include enough surrounding lines to make it unique"},"new_text":{"type":"string","description":"The replacement text (may be empty to delete old_text)"},"replace_all":{"type":"boolean","description":"Replace every occurrence instead of requiring exactly one. Default false"}},"required":["path","old_text","new_text"]}"#,
    ),
};

/// A validated `write_file` call.
struct WriteReq<'a> {
    requested: &'a str,
    path: PathBuf,
    content: &'a str,
}

fn write_req<'a>(ws: &Path, restrict: bool, args: &'a Args) -> Result<WriteReq<'a>, ToolError> {
    let requested = args.str("path")?;
    let content = args.str("content")?;
    if content.len() > MAX_WRITE_FILE_BYTES {
        return Err(ToolError::BadArgs(format!(
            "\"content\" is {} bytes; files written by write_file are limited to {MAX_WRITE_FILE_BYTES} bytes",
            content.len()
        )));
    }
    let path = target_path(ws, restrict, requested)?;
    Ok(WriteReq {
        requested,
        path,
        content,
    })
}

/// Resolve a path to write: confined, not a folder, not a dangling symlink.
fn target_path(ws: &Path, restrict: bool, requested: &str) -> Result<PathBuf, ToolError> {
    let path = resolve(ws, restrict, requested, false)?;
    match std::fs::symlink_metadata(&path) {
        Ok(m) if m.is_dir() => Err(ToolError::Failed(format!(
            "{requested:?} is a folder, not a file"
        ))),
        Ok(m) if m.file_type().is_symlink() => Err(ToolError::Denied(format!(
            "{requested:?} is a symbolic link that points nowhere; remove it or write to another name"
        ))),
        Ok(m) if !m.is_file() => Err(ToolError::Denied(format!(
            "{requested:?} is not a regular file"
        ))),
        _ => Ok(path),
    }
}

/// One-line approval summary of a `write_file` call (validates it first).
pub fn write_summary(ws: &Path, restrict: bool, args: &Args) -> Result<String, ToolError> {
    let r = write_req(ws, restrict, args)?;
    let what = match std::fs::metadata(&r.path) {
        Ok(m) => format!("replaces a {}-byte file", m.len()),
        Err(_) => "new file".to_string(),
    };
    Ok(format!(
        "Write file {} ({} bytes, {what})",
        shown(ws, &r.path),
        r.content.len()
    ))
}

pub fn write_file(ws: &Path, restrict: bool, args: &Args) -> Result<String, ToolError> {
    let r = write_req(ws, restrict, args)?;
    let existed = r.path.exists();
    write_checked(ws, restrict, r.requested, &r.path, r.content.as_bytes())?;
    Ok(format!(
        "{} {} ({} bytes).",
        if existed { "Replaced" } else { "Created" },
        shown(ws, &r.path),
        r.content.len()
    ))
}

/// A validated `edit_file` call.
struct EditReq<'a> {
    requested: &'a str,
    path: PathBuf,
    old: &'a str,
    new: &'a str,
    all: bool,
}

/// The first of `keys` present (models also say `old_string`/`new_string`).
fn str_alias<'a>(args: &'a Args, keys: &[&str]) -> Result<&'a str, ToolError> {
    for k in keys {
        if let Some(s) = args.opt_str(k)? {
            return Ok(s);
        }
    }
    Err(ToolError::BadArgs(format!(
        "\"{}\" is required",
        keys.first().copied().unwrap_or("")
    )))
}

fn edit_req<'a>(ws: &Path, restrict: bool, args: &'a Args) -> Result<EditReq<'a>, ToolError> {
    let requested = args.str("path")?;
    let old = str_alias(args, &["old_text", "old_string"])?;
    let new = str_alias(args, &["new_text", "new_string"])?;
    let all = args.opt_bool("replace_all")?.unwrap_or(false);
    if old.is_empty() {
        return Err(ToolError::BadArgs(
            "\"old_text\" is empty: give the exact text to replace (use write_file to create a file)"
                .into(),
        ));
    }
    for (k, v) in [("old_text", old), ("new_text", new)] {
        if v.len() > MAX_WRITE_FILE_BYTES {
            return Err(ToolError::BadArgs(format!(
                "\"{k}\" is longer than {MAX_WRITE_FILE_BYTES} bytes"
            )));
        }
    }
    let path = resolve(ws, restrict, requested, true)?;
    if path.is_dir() {
        return Err(ToolError::Failed(format!(
            "{requested:?} is a folder, not a file"
        )));
    }
    Ok(EditReq {
        requested,
        path,
        old,
        new,
        all,
    })
}

/// One-line approval summary of an `edit_file` call (validates it first).
pub fn edit_summary(ws: &Path, restrict: bool, args: &Args) -> Result<String, ToolError> {
    let r = edit_req(ws, restrict, args)?;
    Ok(format!(
        "Edit file {} (replace {} bytes with {} bytes{})",
        shown(ws, &r.path),
        r.old.len(),
        r.new.len(),
        if r.all { ", every occurrence" } else { "" }
    ))
}

pub fn edit_file(ws: &Path, restrict: bool, args: &Args) -> Result<String, ToolError> {
    let r = edit_req(ws, restrict, args)?;
    let before = read_text(&r.path, r.requested)?;
    let count = before.matches(r.old).count();
    if count == 0 {
        return Err(ToolError::Failed(format!(
            "old_text was not found in {:?}: read the file and copy the text exactly, spaces and line breaks included",
            r.requested
        )));
    }
    if count > 1 && !r.all {
        return Err(ToolError::Failed(format!(
            "old_text appears {count} times in {:?}: include more surrounding text so it appears once, or set replace_all to true",
            r.requested
        )));
    }
    let grown = r
        .new
        .len()
        .saturating_sub(r.old.len())
        .saturating_mul(count);
    if before.len().saturating_add(grown) > MAX_WRITE_FILE_BYTES {
        return Err(ToolError::Failed(format!(
            "the edited file would be larger than {MAX_WRITE_FILE_BYTES} bytes"
        )));
    }
    let after = if r.all {
        before.replace(r.old, r.new)
    } else {
        before.replacen(r.old, r.new, 1)
    };
    write_checked(ws, restrict, r.requested, &r.path, after.as_bytes())?;
    Ok(format!(
        "Edited {}: replaced {count} occurrence{} ({} → {} bytes).",
        shown(ws, &r.path),
        if count == 1 { "" } else { "s" },
        before.len(),
        after.len()
    ))
}

/// Read a whole text file for editing (bounded, UTF-8, no NUL).
fn read_text(path: &Path, requested: &str) -> Result<String, ToolError> {
    // Only a regular file (a FIFO or device would block), the last component not
    // followed (the path was resolved already).
    let (bytes, len) =
        crate::files::read_regular(path, MAX_WRITE_FILE_BYTES + 1, false).map_err(|e| match e {
            crate::files::ReadError::NotRegular(_) => {
                ToolError::Denied(format!("cannot edit {requested:?}: {e}"))
            }
            _ => ToolError::Failed(format!("cannot read {requested:?}: {e}")),
        })?;
    if len > MAX_WRITE_FILE_BYTES as u64 {
        return Err(ToolError::Failed(format!(
            "{requested:?} is {len} bytes; edit_file works on files up to {MAX_WRITE_FILE_BYTES} bytes"
        )));
    }
    if bytes.len() > MAX_WRITE_FILE_BYTES || bytes.contains(&0) {
        return Err(ToolError::Failed(format!(
            "{requested:?} is not a small text file"
        )));
    }
    String::from_utf8(bytes)
        .map_err(|_| ToolError::Failed(format!("{requested:?} is not UTF-8 text")))
}

/// Create the parent folders, check them again, write atomically keeping the mode.
fn write_checked(
    ws: &Path,
    restrict: bool,
    requested: &str,
    path: &Path,
    bytes: &[u8],
) -> Result<(), ToolError> {
    let parent = path.parent().unwrap_or(ws);
    std::fs::create_dir_all(parent).map_err(|e| {
        ToolError::Failed(format!("cannot create the folder for {requested:?}: {e}"))
    })?;
    if restrict {
        // The folders now exist: a link swapped in on the way would show here.
        let root = ws
            .canonicalize()
            .map_err(|e| ToolError::Failed(format!("cannot open the workspace: {e}")))?;
        let real = parent.canonicalize().map_err(|e| {
            ToolError::Failed(format!("cannot open the folder of {requested:?}: {e}"))
        })?;
        if !real.starts_with(&root) {
            return Err(ToolError::Denied(format!(
                "path {requested:?} is outside the workspace: only files inside the workspace can be used"
            )));
        }
    }
    let mode = existing_mode(path).unwrap_or(0o644);
    crate::files::write_atomic(path, bytes, mode)
        .map_err(|e| ToolError::Failed(format!("cannot write {requested:?}: {e}")))
}

#[cfg(unix)]
fn existing_mode(path: &Path) -> Option<u32> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .ok()
        .map(|m| m.permissions().mode() & 0o7777)
}

#[cfg(not(unix))]
fn existing_mode(_path: &Path) -> Option<u32> {
    None
}

fn shown(ws: &Path, p: &Path) -> String {
    display_relative(ws, p)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Dir(PathBuf);
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn tmp(tag: &str) -> (Dir, PathBuf) {
        let d = std::env::temp_dir().join(format!("yc-write-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("ws")).unwrap();
        std::fs::write(d.join("outside.txt"), "outside").unwrap();
        let ws = d.join("ws");
        (Dir(d), ws)
    }

    fn args(json: &str) -> Args {
        Args::parse(json).unwrap()
    }

    #[test]
    fn write_creates_parents_and_replaces() {
        let (_d, ws) = tmp("create");
        let out = write_file(&ws, true, &args(r#"{"path":"a/b/c.md","content":"hi"}"#)).unwrap();
        assert!(out.starts_with("Created a/b/c.md (2 bytes)"), "{out}");
        assert_eq!(std::fs::read_to_string(ws.join("a/b/c.md")).unwrap(), "hi");
        let out = write_file(&ws, true, &args(r#"{"path":"a/b/c.md","content":"two"}"#)).unwrap();
        assert!(out.starts_with("Replaced"), "{out}");
        assert_eq!(std::fs::read_to_string(ws.join("a/b/c.md")).unwrap(), "two");
        let s = write_summary(&ws, true, &args(r#"{"path":"a/b/c.md","content":"xyz1"}"#)).unwrap();
        assert_eq!(s, "Write file a/b/c.md (4 bytes, replaces a 3-byte file)");
    }

    #[test]
    fn writes_outside_the_workspace_are_refused() {
        let (d, ws) = tmp("escape");
        let abs = d.0.join("outside.txt");
        for p in [
            "../outside.txt",
            "../new.txt",
            "a/../../x.txt",
            abs.to_str().unwrap(),
        ] {
            let a = args(&format!(
                r#"{{"path":{},"content":"x"}}"#,
                crate::json::quote(p)
            ));
            let e = write_file(&ws, true, &a).unwrap_err();
            assert!(matches!(e, ToolError::Denied(_)), "{p}: {e}");
        }
        assert_eq!(std::fs::read_to_string(&abs).unwrap(), "outside");
        assert!(!d.0.join("new.txt").exists());
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_out_and_dangling_links_are_refused() {
        let (d, ws) = tmp("links");
        std::os::unix::fs::symlink(d.0.join("outside.txt"), ws.join("out.txt")).unwrap();
        std::os::unix::fs::symlink(&d.0, ws.join("outdir")).unwrap();
        std::os::unix::fs::symlink(d.0.join("nothing-yet.txt"), ws.join("dangling.txt")).unwrap();
        for p in [
            "out.txt",
            "outdir/new.txt",
            "outdir/outside.txt",
            "dangling.txt",
        ] {
            let a = args(&format!(r#"{{"path":"{p}","content":"x"}}"#));
            assert!(
                matches!(write_file(&ws, true, &a), Err(ToolError::Denied(_))),
                "{p}"
            );
            let a = args(&format!(
                r#"{{"path":"{p}","old_text":"outside","new_text":"x"}}"#
            ));
            assert!(edit_file(&ws, true, &a).is_err(), "{p}");
        }
        assert_eq!(
            std::fs::read_to_string(d.0.join("outside.txt")).unwrap(),
            "outside"
        );
        assert!(!d.0.join("nothing-yet.txt").exists());
        // A link to a file inside the workspace is followed.
        std::fs::write(ws.join("real.md"), "old").unwrap();
        std::os::unix::fs::symlink(ws.join("real.md"), ws.join("alias.md")).unwrap();
        write_file(&ws, true, &args(r#"{"path":"alias.md","content":"new"}"#)).unwrap();
        assert_eq!(std::fs::read_to_string(ws.join("real.md")).unwrap(), "new");
    }

    #[test]
    fn bad_arguments_are_clear() {
        let (_d, ws) = tmp("badargs");
        let e = write_file(&ws, true, &args(r#"{"path":"x.md"}"#)).unwrap_err();
        assert!(e.to_string().contains("\"content\" is required"), "{e}");
        let e = write_file(&ws, true, &args(r#"{"path":3,"content":"x"}"#)).unwrap_err();
        assert!(matches!(e, ToolError::BadArgs(_)), "{e}");
        let big = format!(
            r#"{{"path":"x.md","content":"{}"}}"#,
            "a".repeat(MAX_WRITE_FILE_BYTES + 1)
        );
        // Larger than the tool-argument cap too: refused either way, never written.
        assert!(Args::parse(&big).is_err() || write_file(&ws, true, &args(&big)).is_err());
        assert!(!ws.join("x.md").exists());
        std::fs::create_dir(ws.join("dir")).unwrap();
        let e = write_file(&ws, true, &args(r#"{"path":"dir","content":"x"}"#)).unwrap_err();
        assert!(e.to_string().contains("folder"), "{e}");
        let e = edit_file(
            &ws,
            true,
            &args(r#"{"path":"x.md","old_text":"","new_text":"a"}"#),
        )
        .unwrap_err();
        assert!(matches!(e, ToolError::BadArgs(_)), "{e}");
    }

    #[test]
    fn edit_replaces_exactly_once_or_explains() {
        let (_d, ws) = tmp("edit");
        std::fs::write(ws.join("f.txt"), "alpha beta\nalpha gamma\n").unwrap();
        let e = edit_file(
            &ws,
            true,
            &args(r#"{"path":"f.txt","old_text":"delta","new_text":"x"}"#),
        )
        .unwrap_err();
        assert!(e.to_string().contains("not found"), "{e}");
        let e = edit_file(
            &ws,
            true,
            &args(r#"{"path":"f.txt","old_text":"alpha","new_text":"x"}"#),
        )
        .unwrap_err();
        assert!(e.to_string().contains("appears 2 times"), "{e}");
        let out = edit_file(
            &ws,
            true,
            &args(r#"{"path":"f.txt","old_text":"alpha beta","new_text":"ALPHA"}"#),
        )
        .unwrap();
        assert!(out.contains("replaced 1 occurrence"), "{out}");
        assert_eq!(
            std::fs::read_to_string(ws.join("f.txt")).unwrap(),
            "ALPHA\nalpha gamma\n"
        );
        let out = edit_file(
            &ws,
            true,
            &args(r#"{"path":"f.txt","old_string":"a","new_string":"4","replace_all":true}"#),
        )
        .unwrap();
        assert!(out.contains("replaced 4 occurrences"), "{out}");
        assert_eq!(
            std::fs::read_to_string(ws.join("f.txt")).unwrap(),
            "ALPHA\n4lph4 g4mm4\n"
        );
        let e = edit_file(
            &ws,
            true,
            &args(r#"{"path":"missing.txt","old_text":"a","new_text":"b"}"#),
        )
        .unwrap_err();
        assert!(e.to_string().contains("no such file"), "{e}");
        std::fs::write(ws.join("bin"), [0u8, 159, 146, 150]).unwrap();
        let e = edit_file(
            &ws,
            true,
            &args(r#"{"path":"bin","old_text":"a","new_text":"b"}"#),
        )
        .unwrap_err();
        assert!(e.to_string().contains("text"), "{e}");
    }

    #[cfg(unix)]
    #[test]
    fn edits_keep_the_file_mode() {
        use std::os::unix::fs::PermissionsExt;
        let (_d, ws) = tmp("mode");
        let p = ws.join("run.sh");
        std::fs::write(&p, "echo one\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        edit_file(
            &ws,
            true,
            &args(r#"{"path":"run.sh","old_text":"one","new_text":"two"}"#),
        )
        .unwrap();
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o755
        );
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "echo two\n");
    }
}
