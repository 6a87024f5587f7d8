//! How media reach the conversation as text: the one-line placeholders the Telegram
//! channel writes into the user's message (a saved photo or file, a voice note's
//! transcript) and the reading of a photo placeholder back by the providers, which send
//! the photo itself to a vision model (docs/DECISIONS.md 97). History keeps only these
//! lines, never bytes.
//!
//! A tool's result may carry images too (an MCP server's `image` parts): a
//! [`ToolImage`] is one, saved in a spool file for the requests of the round that made
//! it and removed when its last handle goes (the result's text keeps its placeholder).
//!
//! # Bounds
//! At most `MAX_IMAGES_PER_MESSAGE` photos per message; tool images are bounded where
//! they are made (`MCP_MAX_IMAGE_BYTES`, `MAX_TOOL_IMAGES_PER_ROUND`).
//!
//! # Threads
//! Any thread; pure but for the removal of a [`ToolImage`]'s file when it is dropped
//! (one `unlink`, on the thread that drops the last handle: the executor's).

use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The workspace's folder files sent on Telegram are saved in: what is read from it came
/// from someone else (the agent fences and screens it).
pub const INBOX_DIR: &str = "inbox";
/// Starts the placeholder of a saved photo.
pub const PHOTO_PREFIX: &str = "[Photo saved at ";
/// Most photos of one message sent to a vision model.
pub const MAX_IMAGES_PER_MESSAGE: usize = 4;
/// Largest photo sent to a vision model (what Telegram lets a bot download).
pub const MAX_IMAGE_BYTES: u64 = 20 * 1024 * 1024;

/// An image of a tool's result, in a file of the spool folder that is removed when the
/// last clone of it is dropped (the round that shows it is over).
#[derive(Debug, Clone)]
pub struct ToolImage(Arc<SpoolFile>);

#[derive(Debug)]
struct SpoolFile {
    path: PathBuf,
    mime: &'static str,
    bytes: u64,
}

impl Drop for SpoolFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

impl ToolImage {
    /// Take charge of the image file at `path` (`mime` from its bytes, `bytes` long):
    /// it is removed with the last clone.
    pub fn adopt(path: PathBuf, mime: &'static str, bytes: u64) -> ToolImage {
        ToolImage(Arc::new(SpoolFile { path, mime, bytes }))
    }
    pub fn path(&self) -> &Path {
        &self.0.path
    }
    pub fn mime(&self) -> &'static str {
        self.0.mime
    }
    pub fn bytes(&self) -> u64 {
        self.0.bytes
    }
}

impl PartialEq for ToolImage {
    fn eq(&self, other: &ToolImage) -> bool {
        self.0.path == other.0.path
    }
}

/// The extension and mime type of an image, from its first bytes (JPEG, PNG, GIF, WebP).
pub fn sniff_image(head: &[u8]) -> Option<(&'static str, &'static str)> {
    if head.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some(("jpg", "image/jpeg"))
    } else if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some(("png", "image/png"))
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some(("gif", "image/gif"))
    } else if head.len() >= 12 && head.starts_with(b"RIFF") && &head[8..12] == b"WEBP" {
        Some(("webp", "image/webp"))
    } else {
        None
    }
}

/// `1.2 MB`, `52 KB`, `7 bytes`.
pub fn size_text(n: u64) -> String {
    match n {
        0..1_000 => format!("{n} bytes"),
        1_000..1_000_000 => format!("{} KB", n.div_ceil(1_000)),
        _ => format!("{}.{} MB", n / 1_000_000, n % 1_000_000 / 100_000),
    }
}

/// The placeholder of a photo saved at `rel` (workspace-relative, no spaces).
pub fn photo_line(rel: &str, mime: &str, size: u64) -> String {
    format!("{PHOTO_PREFIX}{rel} ({mime}, {})]", size_text(size))
}

/// The placeholder of a file saved at `rel`.
pub fn file_line(rel: &str, mime: &str, size: u64) -> String {
    format!("[File saved at {rel} ({mime}, {})]", size_text(size))
}

/// The placeholder of a voice note's transcript.
pub fn transcript_line(seconds: u64, transcript: &str) -> String {
    format!("[Voice note, {seconds} s, transcribed:] {transcript}")
}

/// The photos a message's text names: `(workspace-relative path, mime)`, at most
/// `MAX_IMAGES_PER_MESSAGE`, only image types and paths without `..`.
pub fn photos_in(content: &str) -> Vec<(&str, &str)> {
    content
        .match_indices(PHOTO_PREFIX)
        .filter_map(|(at, _)| {
            let rest = &content[at + PHOTO_PREFIX.len()..];
            let (path, rest) = rest.split_once(" (")?;
            let (mime, _) = rest.split_once(", ")?;
            let ok = !path.is_empty()
                && !path.contains("..")
                && !path.starts_with('/')
                && !path.contains(char::is_whitespace)
                && matches!(
                    mime,
                    "image/jpeg" | "image/png" | "image/webp" | "image/gif"
                );
            ok.then_some((path, mime))
        })
        .take(MAX_IMAGES_PER_MESSAGE)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_read_back_and_forgeries_are_limited() {
        let line = photo_line("inbox/photo-1.jpg", "image/jpeg", 52_300);
        assert_eq!(
            line,
            "[Photo saved at inbox/photo-1.jpg (image/jpeg, 53 KB)]"
        );
        let text = format!(
            "{line}\nwhat is it?\n\n{}",
            photo_line("inbox/b.png", "image/png", 7)
        );
        assert_eq!(
            photos_in(&text),
            vec![
                ("inbox/photo-1.jpg", "image/jpeg"),
                ("inbox/b.png", "image/png")
            ]
        );
        for bad in [
            "[Photo saved at ../../etc/passwd (image/jpeg, 1 KB)]",
            "[Photo saved at /etc/x (image/jpeg, 1 KB)]",
            "[Photo saved at a.jpg (text/plain, 1 KB)]",
            "[Photo saved at a.jpg",
        ] {
            assert!(photos_in(bad).is_empty(), "{bad}");
        }
        assert_eq!(size_text(999), "999 bytes");
        assert_eq!(size_text(20_971_520), "20.9 MB");
    }
}
