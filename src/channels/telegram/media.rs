//! Media a user sends, made into text for a turn: a voice note, audio or video note is
//! downloaded to a spool file and transcribed; a photo or a file is downloaded and saved
//! under the workspace's `inbox/` (a photo is then sent to a model that can see by the
//! provider, from its placeholder: `chat::media`). Every failure is one sentence for the
//! user; the spool file is removed whatever happens (docs/DECISIONS.md 97).
//!
//! Why it exists: the bytes never pass through RAM. `Api::download` writes the file in
//! `HTTP_INPUT_BUFFER_BYTES` pieces, `upload` streams it out again.
//!
//! # Bounds
//! One file of at most `media.max_file_mb` (Telegram lets bots download 20 MB); the inbox
//! at most `media.inbox_max_mb` (counted over at most `MAX_INBOX_SCAN` entries); one
//! spool file per message being prepared, removed when done, the spool emptied at start.
//! Each step has its timeout (`MEDIA_DOWNLOAD_TIMEOUT_SECS`, `transcription.timeout_secs`).
//!
//! # Threads
//! [`prepare`] runs on a worker thread (`bot` hands it there); [`clean_spool`] runs on the
//! main thread at start-up; the rest is pure.
//!
//! # Blocking
//! [`prepare`] downloads and uploads: run it on a worker thread (`bot` does).

use super::api::{Api, ApiError, FetchError, MediaKind, MediaRef};
pub use crate::chat::media::sniff_image;
use crate::chat::media::{file_line, photo_line, size_text, transcript_line};
use crate::provider::upload::Transcriber;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Overall timeout of one download (20 MB over a slow link).
pub const MEDIA_DOWNLOAD_TIMEOUT_SECS: u64 = 300;
/// Most inbox entries looked at to count its size.
pub const MAX_INBOX_SCAN: usize = 10_000;
/// A transcript up to this many characters is quoted back to the user.
pub const HEARD_QUOTE_CHARS: usize = 300;
/// Longest name kept from a sender's file name.
pub const MAX_SAFE_NAME_BYTES: usize = 64;
/// The folder of the workspace files are saved in (defined low: the agent screens what
/// is read from it).
pub use crate::chat::media::INBOX_DIR;

/// The sentence for a voice note when `transcription` is not set.
pub const NO_TRANSCRIPTION: &str = "I can't listen to voice notes yet: set transcription.base_url (OpenAI-compatible speech to text) in config.json and its key in YOCTOCLAW_TRANSCRIPTION_API_KEY.";

/// What media handling needs; cheap to share between threads.
pub struct Media {
    /// A Bot API client with the download timeout.
    pub api: Api,
    pub spool: PathBuf,
    pub workspace: PathBuf,
    pub max_file: u64,
    pub inbox_max: u64,
    pub transcriber: Option<Transcriber>,
}

/// A message's media as text for the turn, and what to tell the user first.
#[derive(Debug)]
pub struct Prepared {
    pub text: String,
    /// `Heard: "…"` for a short transcript.
    pub heard: Option<String>,
}

/// Removes the spool file when dropped (every return path).
struct Spooled(PathBuf);

impl Drop for Spooled {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.0);
    }
}

static SEQ: AtomicU64 = AtomicU64::new(0);

/// Empty the spool folder (at start: what a crash left).
pub fn clean_spool(spool: &Path) {
    if let Ok(dir) = fs::read_dir(spool) {
        for e in dir.flatten().take(MAX_INBOX_SCAN) {
            let _ = fs::remove_file(e.path());
        }
    }
}

/// The chat action shown while this kind is handled.
pub fn action_for(kind: MediaKind) -> &'static str {
    match kind {
        MediaKind::Voice | MediaKind::Audio | MediaKind::VideoNote => "typing",
        _ => "upload_document",
    }
}

/// Download, check, transcribe or save `m`; `caption`: the text sent with it.
pub fn prepare(ctx: &Media, m: &MediaRef, caption: &str) -> Result<Prepared, String> {
    let mb = ctx.max_file / (1024 * 1024);
    let too_large = || format!("That file is too large: I take files up to {mb} MB.");
    let audio = matches!(
        m.kind,
        MediaKind::Voice | MediaKind::Audio | MediaKind::VideoNote
    );
    if audio && ctx.transcriber.is_none() {
        return Err(NO_TRANSCRIPTION.into());
    }
    if audio && m.duration == Some(0) {
        return Err("That voice note is empty (0 seconds); please record it again.".into());
    }
    // A photo: the largest size under the cap (sizes unknown count as 0: Telegram lists
    // them smallest first, and the last of equals wins).
    let pick = m
        .files
        .iter()
        .filter(|(_, s)| s.is_none_or(|s| s <= ctx.max_file))
        .max_by_key(|(_, s)| s.unwrap_or(0))
        .ok_or_else(too_large)?;
    fs::create_dir_all(&ctx.spool).map_err(|_| disk_full())?;
    let spool = Spooled(ctx.spool.join(format!(
        "{}-{}.part",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    )));
    let size = ctx
        .api
        .download(&pick.0, &spool.0, ctx.max_file)
        .map_err(|e| fetch_sentence(e, &too_large))?;
    if size == 0 {
        return Err("That file is empty; please send it again.".into());
    }
    let head = read_head(&spool.0);
    let image = sniff_image(&head);
    if audio {
        if m.kind == MediaKind::Voice && !head.starts_with(b"OggS") {
            return Err(
                "That voice note is not in Telegram's Ogg format; please record it again.".into(),
            );
        }
        let t = ctx
            .transcriber
            .as_ref()
            .ok_or_else(|| NO_TRANSCRIPTION.to_string())?;
        let (name, mime) = match m.kind {
            MediaKind::Voice => ("voice.ogg", "audio/ogg"),
            MediaKind::VideoNote => ("video.mp4", "video/mp4"),
            _ => (
                "audio",
                m.mime.as_deref().unwrap_or("application/octet-stream"),
            ),
        };
        let name = m
            .name
            .as_deref()
            .map(safe_name)
            .unwrap_or_else(|| name.into());
        let said = t
            .transcribe(&spool.0, &name, mime)
            .map_err(|e| e.to_string())?;
        if said.is_empty() {
            return Err("I could not hear any words in that voice note.".into());
        }
        let heard = (said.chars().count() <= HEARD_QUOTE_CHARS).then(|| format!("Heard: “{said}”"));
        let mut text = transcript_line(m.duration.unwrap_or(0), &said);
        push_caption(&mut text, caption);
        return Ok(Prepared { text, heard });
    }
    if m.kind == MediaKind::Photo && image.is_none() {
        return Err("That photo is not an image I can read (JPEG, PNG, WebP, GIF).".into());
    }
    let inbox = ctx.workspace.join(INBOX_DIR);
    if inbox_size(&inbox).saturating_add(size) > ctx.inbox_max {
        return Err(format!(
            "My inbox is full ({} MB at most): delete files from the workspace's inbox folder, or raise media.inbox_max_mb.",
            ctx.inbox_max / (1024 * 1024)
        ));
    }
    fs::create_dir_all(&inbox).map_err(|_| disk_full())?;
    let name = match (m.kind, image, m.name.as_deref()) {
        (MediaKind::Photo, Some((ext, _)), _) | (_, Some((ext, _)), None) => {
            format!("photo-{}.{ext}", crate::time::now())
        }
        (_, _, Some(n)) => safe_name(n),
        _ => "file".into(),
    };
    let saved = place(&spool.0, &inbox, &name).map_err(|_| disk_full())?;
    let rel = format!("{INBOX_DIR}/{saved}");
    let mut text = match image {
        Some((_, mime)) => photo_line(&rel, mime, size),
        None => {
            let mime = m.mime.as_deref().unwrap_or("application/octet-stream");
            let mime = if mime.contains(|c: char| c.is_whitespace() || c == ')') {
                "application/octet-stream"
            } else {
                mime
            };
            file_line(&rel, mime, size)
        }
    };
    push_caption(&mut text, caption);
    log::info!("telegram: saved {rel} ({})", size_text(size));
    Ok(Prepared { text, heard: None })
}

fn push_caption(text: &mut String, caption: &str) {
    if !caption.trim().is_empty() {
        text.push('\n');
        text.push_str(caption.trim());
    }
}

fn disk_full() -> String {
    "I could not save that file (the disk may be full); please try again later.".into()
}

fn fetch_sentence(e: FetchError, too_large: &dyn Fn() -> String) -> String {
    match e {
        FetchError::TooLarge => too_large(),
        FetchError::SizeMismatch => {
            "That file arrived incomplete or not as announced; please send it again.".into()
        }
        FetchError::Disk(e) => {
            log::warn!("telegram: cannot write a spool file: {}", e.kind());
            disk_full()
        }
        FetchError::Api(e) => {
            log::warn!("telegram: a download failed: {e}");
            match e {
                ApiError::Rejected { .. } | ApiError::NotFound => {
                    "Telegram would not give me that file (bots may download up to 20 MB).".into()
                }
                _ => "I could not download that file from Telegram; please send it again.".into(),
            }
        }
    }
}

fn read_head(path: &Path) -> Vec<u8> {
    fs::File::open(path)
        .map(|mut f| crate::files::head(&mut f))
        .unwrap_or_default()
}

/// A file name made safe: the last path part only, `[A-Za-z0-9._-]` (others become
/// `_`), no leading dot, at most `MAX_SAFE_NAME_BYTES`; `file` when nothing is left.
pub fn safe_name(name: &str) -> String {
    let last = name.rsplit(['/', '\\']).next().unwrap_or("");
    let s: String = last
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    // Over the length: the end is kept (it holds the extension). All ASCII by now.
    let from = s.len().saturating_sub(MAX_SAFE_NAME_BYTES);
    let s = s[from..].trim_start_matches('.');
    if s.is_empty() || s.chars().all(|c| c == '_') {
        "file".into()
    } else {
        s.to_string()
    }
}

/// Move `from` into `dir` as `name`, or `name-2`, `name-3`… (never over an existing
/// file). Returns the name used.
fn place(from: &Path, dir: &Path, name: &str) -> std::io::Result<String> {
    let (stem, ext) = match name.rfind('.') {
        Some(i) if i > 0 => (&name[..i], &name[i..]),
        _ => (name, ""),
    };
    for n in 1..=1000u32 {
        let candidate = if n == 1 {
            name.to_string()
        } else {
            format!("{stem}-{n}{ext}")
        };
        let to = dir.join(&candidate);
        // A hard link never replaces a file; across filesystems, a copy into a file
        // created new.
        match fs::hard_link(from, &to) {
            Ok(()) => return Ok(candidate),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(_) => {}
        }
        match fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&to)
        {
            Ok(mut out) => {
                let copied =
                    fs::File::open(from).and_then(|mut f| crate::files::copy(&mut f, &mut out));
                return match copied.and_then(|_| out.sync_all()) {
                    Ok(()) => Ok(candidate),
                    Err(e) => {
                        let _ = fs::remove_file(&to);
                        Err(e)
                    }
                };
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other("too many files of that name"))
}

/// Bytes held by the files of `dir` (at most `MAX_INBOX_SCAN` entries counted).
fn inbox_size(dir: &Path) -> u64 {
    fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .take(MAX_INBOX_SCAN)
                .filter_map(|e| e.metadata().ok())
                .filter(|m| m.is_file())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sender_names_lose_their_path_parts() {
        assert_eq!(safe_name("../../etc/passwd"), "passwd");
        assert_eq!(safe_name("C:\\x\\report 2026.pdf"), "report_2026.pdf");
        assert_eq!(safe_name(".bashrc"), "bashrc");
        assert_eq!(safe_name(".."), "file");
        assert_eq!(safe_name("ünï"), "_n_");
        assert_eq!(safe_name("ü😀"), "file");
        let long = format!("{}.pdf", "a".repeat(200));
        let s = safe_name(&long);
        assert!(s.len() <= MAX_SAFE_NAME_BYTES && s.ends_with(".pdf"), "{s}");
    }

    #[test]
    fn images_are_known_by_their_bytes() {
        assert_eq!(
            sniff_image(&[0xFF, 0xD8, 0xFF, 0xE0]),
            Some(("jpg", "image/jpeg"))
        );
        assert_eq!(sniff_image(b"PK\x03\x04zip"), None);
        assert_eq!(
            sniff_image(b"RIFF\0\0\0\0WEBPVP8 "),
            Some(("webp", "image/webp"))
        );
        assert_eq!(sniff_image(&[0xFF]), None);
    }

    /// A one-shot HTTP server on 127.0.0.1 answering every request with `answers` in
    /// order (a `getFile`, then the file).
    fn serve(answers: Vec<Vec<u8>>) -> String {
        use std::io::{BufRead, BufReader, Write};
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", l.local_addr().unwrap());
        std::thread::spawn(move || {
            for a in answers {
                let Ok((c, _)) = l.accept() else { return };
                let mut r = BufReader::new(c);
                let mut len = 0;
                loop {
                    let mut line = String::new();
                    if r.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        len = v.trim().parse().unwrap_or(0);
                    }
                }
                let mut body = vec![0; len];
                let _ = std::io::Read::read_exact(&mut r, &mut body);
                let mut c = r.into_inner();
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    a.len()
                );
                let _ = c.write_all(head.as_bytes());
                let _ = c.write_all(&a);
            }
        });
        url
    }

    #[test]
    fn a_full_disk_while_spooling_is_one_sentence() {
        let file = vec![7u8; 100_000];
        let url = serve(vec![
            br#"{"ok":true,"result":{"file_id":"f","file_size":100000,"file_path":"documents/f.bin"}}"#.to_vec(),
            file,
        ]);
        let api = Api::new(&url, "1:T", 10);
        // /dev/full: every write fails with ENOSPC, as on a full disk.
        let e = api
            .download("f", Path::new("/dev/full"), 1 << 20)
            .unwrap_err();
        assert!(matches!(e, FetchError::Disk(_)), "{e:?}");
        let sentence = fetch_sentence(e, &|| String::new());
        assert!(sentence.contains("disk may be full"), "{sentence}");
    }

    #[test]
    fn placing_never_overwrites() {
        let dir = std::env::temp_dir().join(format!("yc-place-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let src = dir.join("src");
        fs::write(&src, b"new").unwrap();
        fs::write(dir.join("a.txt"), b"old").unwrap();
        assert_eq!(place(&src, &dir, "a.txt").unwrap(), "a-2.txt");
        assert_eq!(place(&src, &dir, "a.txt").unwrap(), "a-3.txt");
        assert_eq!(fs::read(dir.join("a.txt")).unwrap(), b"old");
        assert_eq!(inbox_size(&dir), 3 * 3 + 3);
        clean_spool(&dir);
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 0);
        let _ = fs::remove_dir_all(&dir);
    }
}
