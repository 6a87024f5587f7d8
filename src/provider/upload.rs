//! Request bodies streamed from files: base64 written chunk by chunk into a JSON body
//! (an image for a vision model), `multipart/form-data` with one file part (speech to
//! text, Telegram uploads), each with its `Content-Length` computed before the first
//! byte is sent; and the OpenAI-compatible transcription call (`POST
//! {transcription.base_url}/audio/transcriptions`).
//!
//! Why it exists: a 20 MB voice note or photo must never sit in RAM (a 64 MB board).
//! Everything here reads the file through a buffer of `UPLOAD_CHUNK_BYTES` while ureq
//! writes it out (docs/DECISIONS.md 97).
//!
//! A JSON body marks where a file's base64 goes with [`FILE_MARK`] (a raw control
//! byte, which the JSON writer always escapes, so text cannot forge one) around the
//! file's path: [`Spliced`] sends the text between marks as is and the file in place of
//! each mark.
//!
//! # Bounds
//! Reads of `UPLOAD_CHUNK_BYTES`; answers up to `MAX_TRANSCRIPT_RESPONSE_BYTES`; a
//! transcript is cut to `MAX_USER_MESSAGE_BYTES`.
//!
//! # Threads
//! Worker threads; the body's length and parts are computed there too.
//!
//! # Blocking
//! [`post_body`] and [`transcribe`] block for the whole exchange: worker threads only.

use super::http::{self, HttpError, HttpReply};
use std::fs::File;
use std::io::{self, Cursor, Read};
use std::path::{Path, PathBuf};

/// Bytes of a file read at a time (base64 turns 3 into 4).
pub const UPLOAD_CHUNK_BYTES: usize = 12 * 1024;
/// Largest transcription answer read.
pub const MAX_TRANSCRIPT_RESPONSE_BYTES: u64 = 256 * 1024;
/// Marks the start and the end of a file's path inside a JSON body (never in text:
/// the JSON writer escapes control characters).
pub const FILE_MARK: char = '\u{1}';

pub use crate::security::base64::{encode_into as base64_into, encoded_len as base64_len};

/// The bytes of a base64 text (RFC 4648, the standard alphabet; padding optional, ASCII
/// whitespace between symbols skipped); `None` when it is not base64 (`-` and `_`, the
/// URL-safe symbols, included).
pub fn base64_decode(text: &str) -> Option<Vec<u8>> {
    crate::security::base64::decode(text, crate::security::base64::Alphabet::Standard)
}

/// A reader that gives exactly `len` bytes of `inner` and fails when it has fewer (a
/// file that shrank while being sent: the declared `Content-Length` would be a lie).
struct Exact<R> {
    inner: R,
    left: u64,
}

impl<R: Read> Read for Exact<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.left == 0 {
            return Ok(0);
        }
        let max = buf.len().min(self.left.min(usize::MAX as u64) as usize);
        let n = self.inner.read(&mut buf[..max])?;
        if n == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "file shrank"));
        }
        self.left -= n as u64;
        Ok(n)
    }
}

/// The base64 of a file, produced a chunk at a time.
struct Base64File {
    file: Exact<File>,
    raw: Vec<u8>,
    out: Vec<u8>,
    at: usize,
}

impl Read for Base64File {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.at == self.out.len() {
            self.raw.clear();
            self.raw.resize(UPLOAD_CHUNK_BYTES, 0);
            let mut got = 0;
            while got < self.raw.len() {
                let n = self.file.read(&mut self.raw[got..])?;
                if n == 0 {
                    break;
                }
                got += n;
            }
            self.out.clear();
            self.at = 0;
            base64_into(&self.raw[..got], &mut self.out);
            if self.out.is_empty() {
                return Ok(0);
            }
        }
        let n = buf.len().min(self.out.len() - self.at);
        buf[..n].copy_from_slice(&self.out[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// A body and its exact length.
pub struct Body {
    pub reader: Parts,
    pub len: u64,
}

/// Readers read one after the other (one type for every body: no chain of generics).
pub struct Parts(Vec<Box<dyn Read + Send>>, usize);

impl Read for Parts {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while let Some(r) = self.0.get_mut(self.1) {
            let n = r.read(buf)?;
            if n > 0 || buf.is_empty() {
                return Ok(n);
            }
            self.1 += 1;
        }
        Ok(0)
    }
}

/// Text, as a part of a body.
fn text(t: impl Into<Vec<u8>>) -> Box<dyn Read + Send> {
    Box::new(Cursor::new(t.into()))
}

/// A JSON body whose file marks are replaced by the files' base64 (see the module
/// header). Fails when a marked file cannot be opened.
pub fn spliced(body: String) -> io::Result<Body> {
    let mut parts = Vec::new();
    let mut len = 0u64;
    for (i, piece) in body.split(FILE_MARK).enumerate() {
        if i % 2 == 0 {
            len += piece.len() as u64;
            parts.push(text(piece));
            continue;
        }
        let file = File::open(piece)?;
        let size = file.metadata()?.len();
        len += base64_len(size);
        parts.push(Box::new(Base64File {
            file: Exact {
                inner: file,
                left: size,
            },
            raw: Vec::new(),
            out: Vec::new(),
            at: 0,
        }));
    }
    Ok(Body {
        reader: Parts(parts, 0),
        len,
    })
}

/// A body with file marks as it goes out (the files' base64 in place of the marks), for
/// tests that check the exact bytes a provider receives.
#[cfg(test)]
pub fn spliced_text(body: &str) -> String {
    let mut b = spliced(body.to_string()).expect("the marked files exist");
    let mut out = String::new();
    b.reader.read_to_string(&mut out).expect("the body reads");
    assert_eq!(out.len() as u64, b.len, "the length announced");
    out
}

/// A `multipart/form-data` body: text fields, then one file part (RFC 7578), and the
/// `Content-Type` header value naming its boundary.
pub fn multipart(
    fields: &[(&str, &str)],
    file_field: &str,
    file_name: &str,
    mime: &str,
    path: &Path,
) -> io::Result<(Body, String)> {
    let file = File::open(path)?;
    let size = file.metadata()?.len();
    let boundary = format!(
        "yoctoclaw-{:016x}",
        crate::runtime::Jitter::from_clock().next_u64()
    );
    let mut head = String::new();
    for (k, v) in fields {
        head.push_str(&format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"{k}\"\r\n\r\n{v}\r\n"
        ));
    }
    head.push_str(&format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"{file_field}\"; filename=\"{}\"\r\nContent-Type: {mime}\r\n\r\n",
        file_name.replace(['"', '\r', '\n', '\\'], "_")
    ));
    let tail = format!("\r\n--{boundary}--\r\n");
    let len = head.len() as u64 + size + tail.len() as u64;
    let file = Box::new(Exact {
        inner: file,
        left: size,
    });
    Ok((
        Body {
            reader: Parts(vec![text(head), file, text(tail)], 0),
            len,
        },
        format!("multipart/form-data; boundary={boundary}"),
    ))
}

/// POST `body` with its `Content-Length`; read the answer up to `limit`.
pub fn post_body(
    agent: &ureq::Agent,
    url: &str,
    headers: &[(&str, String)],
    mut body: Body,
    limit: u64,
) -> Result<HttpReply, HttpError> {
    let mut req = agent
        .post(url)
        .header("Content-Length", body.len.to_string());
    for (k, v) in headers {
        req = req.header(*k, v);
    }
    let resp = req
        .send(ureq::SendBody::from_reader(&mut body.reader))
        .map_err(http::map_error)?;
    http::note_date(&resp, url);
    http::read_reply(resp, limit)
}

/// Where speech goes to become text (`transcription.*`).
#[derive(Clone)]
pub struct Transcriber {
    /// `{base_url}/audio/transcriptions`.
    pub url: String,
    pub model: String,
    pub key: Option<String>,
    pub agent: ureq::Agent,
}

/// Why a transcription failed; the Display is the user's sentence.
#[derive(Debug, Clone, PartialEq)]
pub enum TranscribeError {
    /// The spool file cannot be read.
    File,
    Transport(HttpError),
    /// A non-2xx status.
    Status(u16),
    /// 2xx, but not `{"text": …}`.
    BadAnswer,
}

impl std::fmt::Display for TranscribeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TranscribeError::File => f.write_str("I could not read the voice note I saved; please send it again."),
            TranscribeError::Transport(HttpError::Timeout) => f.write_str(
                "The transcription service did not answer in time; please try again later.",
            ),
            TranscribeError::Transport(_) => f.write_str(
                "I cannot reach the transcription service; check transcription.base_url and the network.",
            ),
            TranscribeError::Status(s) => write!(
                f,
                "The transcription service failed (HTTP {s}); check transcription.model and its key, or try again later."
            ),
            TranscribeError::BadAnswer => f.write_str(
                "The transcription service sent an answer I cannot read; check transcription.base_url.",
            ),
        }
    }
}

impl Transcriber {
    /// The text spoken in the audio file at `path` (`name`, `mime`: as sent).
    pub fn transcribe(
        &self,
        path: &Path,
        name: &str,
        mime: &str,
    ) -> Result<String, TranscribeError> {
        let (body, content_type) = multipart(
            &[("model", &self.model), ("response_format", "json")],
            "file",
            name,
            mime,
            path,
        )
        .map_err(|_| TranscribeError::File)?;
        let mut headers = vec![("Content-Type", content_type)];
        if let Some(k) = &self.key {
            headers.push(("Authorization", format!("Bearer {k}")));
        }
        let (status, text, _) = post_body(
            &self.agent,
            &self.url,
            &headers,
            body,
            MAX_TRANSCRIPT_RESPONSE_BYTES,
        )
        .map_err(|e| {
            log::warn!("transcription at {}: {e}", http::host_of(&self.url));
            TranscribeError::Transport(e)
        })?;
        if !(200..300).contains(&status) {
            log::warn!(
                "transcription at {}: http {status}",
                http::host_of(&self.url)
            );
            return Err(TranscribeError::Status(status));
        }
        let v = crate::json::parse_value(&text).map_err(|e| {
            let at = crate::json::AtByte(&e, text.len());
            log::warn!("transcription: the answer is not JSON ({at})");
            TranscribeError::BadAnswer
        })?;
        let t = crate::json::str_at(&v, "text").ok_or(TranscribeError::BadAnswer)?;
        Ok(crate::text::cap_text(
            t.trim(),
            crate::limits::MAX_USER_MESSAGE_BYTES,
        ))
    }
}

/// A path for a file mark: the marks and the path, for a JSON body's `raw` text.
pub fn file_mark(path: &Path) -> Option<String> {
    let p = path.to_str()?;
    (!p.contains(FILE_MARK)).then(|| format!("{FILE_MARK}{p}{FILE_MARK}"))
}

/// The files a body marks (for checks before sending).
pub fn marked_files(body: &str) -> Vec<PathBuf> {
    body.split(FILE_MARK)
        .skip(1)
        .step_by(2)
        .map(PathBuf::from)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(s: &[u8]) -> String {
        let mut out = Vec::new();
        base64_into(s, &mut out);
        String::from_utf8(out).unwrap()
    }

    /// RFC 4648's test vectors (section 10).
    const RFC_4648: [(&str, &str); 7] = [
        ("", ""),
        ("f", "Zg=="),
        ("fo", "Zm8="),
        ("foo", "Zm9v"),
        ("foob", "Zm9vYg=="),
        ("fooba", "Zm9vYmE="),
        ("foobar", "Zm9vYmFy"),
    ];

    #[test]
    fn base64_matches_rfc_4648_vectors() {
        for (i, o) in RFC_4648 {
            assert_eq!(b64(i.as_bytes()), o);
            assert_eq!(base64_len(i.len() as u64), o.len() as u64);
        }
        assert_eq!(b64(&[0xfb, 0xff]), "+/8=");
    }

    #[test]
    fn base64_decodes_what_it_encodes_and_refuses_what_is_not_base64() {
        for (i, o) in RFC_4648 {
            assert_eq!(base64_decode(o).as_deref(), Some(i.as_bytes()), "{o}");
        }
        let bytes: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
        assert_eq!(base64_decode(&b64(&bytes)), Some(bytes));
        // Unpadded, and wrapped in lines as MIME writes it.
        assert_eq!(base64_decode("Zm9vYg").as_deref(), Some(&b"foob"[..]));
        assert_eq!(
            base64_decode("Zm9v\r\nYmFy\n").as_deref(),
            Some(&b"foobar"[..])
        );
        for bad in [
            "Zm9vY",
            "Zm9v!mFy",
            "Zm-_",
            "Zm9v\u{e9}",
            "data:image/png;base64,Zm9v",
        ] {
            assert_eq!(base64_decode(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_spliced_body_streams_the_file_in_base64_with_an_exact_length() {
        let dir = std::env::temp_dir().join(format!("yc-splice-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("x.bin");
        // Not a multiple of the chunk or of 3: every boundary is crossed.
        let data: Vec<u8> = (0..UPLOAD_CHUNK_BYTES * 3 + 7)
            .map(|i| (i * 7 % 251) as u8)
            .collect();
        std::fs::write(&path, &data).unwrap();
        let body = format!("{{\"a\":\"{}\"}}", file_mark(&path).unwrap());
        assert_eq!(marked_files(&body), vec![path.clone()]);
        let mut b = spliced(body).unwrap();
        let mut out = String::new();
        b.reader.read_to_string(&mut out).unwrap();
        assert_eq!(out, format!("{{\"a\":\"{}\"}}", b64(&data)));
        assert_eq!(out.len() as u64, b.len);
        assert!(spliced(format!("x{}y", file_mark(&dir.join("none")).unwrap())).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn multipart_bodies_have_their_declared_length() {
        let dir = std::env::temp_dir().join(format!("yc-multi-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("v.ogg");
        std::fs::write(&path, b"OggS\0data").unwrap();
        let (mut b, ct) = multipart(
            &[("model", "whisper-1")],
            "file",
            "v\".ogg",
            "audio/ogg",
            &path,
        )
        .unwrap();
        let boundary = ct.strip_prefix("multipart/form-data; boundary=").unwrap();
        let mut out = Vec::new();
        b.reader.read_to_end(&mut out).unwrap();
        assert_eq!(out.len() as u64, b.len);
        let text = String::from_utf8_lossy(&out);
        assert!(text.starts_with(&format!("--{boundary}\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nwhisper-1\r\n")), "{text}");
        assert!(
            text.contains("filename=\"v_.ogg\"\r\nContent-Type: audio/ogg\r\n\r\nOggS\0data\r\n"),
            "{text}"
        );
        assert!(text.ends_with(&format!("\r\n--{boundary}--\r\n")));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
