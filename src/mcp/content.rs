//! A `tools/call` result (MCP 2025-06-18, `CallToolResult`) turned into the text the
//! model (or `mcp call`) reads, and the images a model that can see is shown with it.
//!
//! Each part of `content`, in order, one after the other on its own lines:
//! - `text`: its text;
//! - `resource` (an embedded resource): its `text`; for a binary one (`blob`) a short
//!   reference `[resource: URI, MIME, SIZE]`;
//! - `resource_link`: `[resource link: NAME, URI, MIME]` (the model can name it; nothing
//!   is fetched);
//! - `image` and `audio`: a one-line placeholder `[image: image/png, 12 KB]` (the size
//!   decoded from the base64 length). For a model that can see ([`render_seeing`]) an
//!   image is also decoded and handed back to be shown beside the text, when it is a
//!   PNG, JPEG, GIF or WebP by its bytes, valid base64, at most `MCP_MAX_IMAGE_BYTES`,
//!   and within `MCP_MAX_IMAGES_PER_RESULT` and the round's room; otherwise its
//!   placeholder says why it is not shown (`[image: image/bmp, 3 KB, not shown: ...]`);
//! - any other type: `[TYPE content]`.
//!
//! `structuredContent` is added as compact JSON when no part carried text (the spec asks
//! servers to repeat it as text, and most do). `isError: true` marks the whole as the
//! tool's error, which the model sees as a failed call (with no image). A result with
//! nothing in it says so rather than being empty.
//!
//! # Bounds
//! The text is at most about the size of the message it came from (itself at most
//! `MCP_MAX_MESSAGE_BYTES`): placeholders replace binary data, and the caller caps it
//! (`agent.max_tool_result_bytes`). Images handed back: at most
//! `MCP_MAX_IMAGES_PER_RESULT` of at most `MCP_MAX_IMAGE_BYTES` each.
//!
//! # Threads
//! Any thread: pure functions (the images' base64 is decoded on the caller's thread,
//! the executor's: at most one message's worth, as its JSON was parsed there).

use crate::chat::media::sniff_image;
use crate::json;
use crate::limits::{MAX_TOOL_IMAGES_PER_ROUND, MCP_MAX_IMAGE_BYTES, MCP_MAX_IMAGES_PER_RESULT};
use crate::provider::upload::base64_decode;
use miniserde::json::Value;

/// What a tool call answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    pub text: String,
    /// The tool reported an error (`isError: true`).
    pub is_error: bool,
}

/// What a result with no content says.
pub const EMPTY_RESULT: &str = "(the tool returned nothing)";

/// An image of a result to show the model: its type by its bytes, and the bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    pub mime: &'static str,
    pub bytes: Vec<u8>,
}

/// `result` (the `result` member of a `tools/call` response) as text.
pub fn render(result: &Value) -> Rendered {
    render_with(result, &mut |kind, mime, data| {
        placeholder(kind, mime, data, None)
    })
}

/// `result` as text, and its images for a model that can see: at most `room` of them
/// (what the round has left of `MAX_TOOL_IMAGES_PER_ROUND`) and
/// `MCP_MAX_IMAGES_PER_RESULT`; each image not shown says why in its placeholder. A tool
/// error has no image.
pub fn render_seeing(result: &Value, room: usize) -> (Rendered, Vec<Decoded>) {
    if is_error(result) {
        return (render(result), Vec::new());
    }
    let mut images = Vec::new();
    let rendered = render_with(result, &mut |kind, mime, data| {
        let why = if kind != "image" {
            return placeholder(kind, mime, data, None);
        } else if images.len() >= MCP_MAX_IMAGES_PER_RESULT {
            format!("a result shows at most {MCP_MAX_IMAGES_PER_RESULT} images")
        } else if images.len() >= room {
            format!("a round of tool calls shows at most {MAX_TOOL_IMAGES_PER_ROUND} images")
        } else {
            match decode_image(mime, data) {
                Ok(image) => {
                    let line = placeholder(kind, image.mime, data, None);
                    images.push(image);
                    return line;
                }
                Err(why) => why,
            }
        };
        placeholder(kind, mime, data, Some(&why))
    });
    (rendered, images)
}

/// An image part's data decoded when it may be shown, else why not.
fn decode_image(mime: &str, data: &str) -> Result<Decoded, String> {
    const TYPES: &str = "only PNG, JPEG, GIF and WebP images are shown";
    if !matches!(
        mime.to_ascii_lowercase().as_str(),
        "image/png" | "image/jpeg" | "image/jpg" | "image/gif" | "image/webp"
    ) {
        return Err(TYPES.into());
    }
    if decoded_len(data) > MCP_MAX_IMAGE_BYTES {
        return Err(format!(
            "larger than the {} an image may be",
            size_text(MCP_MAX_IMAGE_BYTES)
        ));
    }
    let bytes = base64_decode(data).ok_or("its data is not valid base64")?;
    // The type the bytes say (a PNG called image/jpeg is sent as the PNG it is).
    match sniff_image(&bytes) {
        Some((_, mime)) => Ok(Decoded { mime, bytes }),
        None => Err(TYPES.into()),
    }
}

fn is_error(result: &Value) -> bool {
    json::get(result, "isError").and_then(json::as_bool) == Some(true)
}

/// `[image: MIME, SIZE]`, or with `, not shown: WHY` inside the brackets.
fn placeholder(kind: &str, mime: &str, data: &str, why: Option<&str>) -> String {
    let size = size_text(decoded_len(data));
    match why {
        None => format!("[{kind}: {mime}, {size}]"),
        Some(why) => format!("[{kind}: {mime}, {size}, not shown: {why}]"),
    }
}

/// The text of `result`, each image or audio part written by `media(kind, mime, data)`.
fn render_with(result: &Value, media: &mut dyn FnMut(&str, &str, &str) -> String) -> Rendered {
    let is_error = is_error(result);
    let mut parts: Vec<String> = Vec::new();
    let mut had_text = false;
    for c in json::get(result, "content")
        .and_then(json::as_array)
        .into_iter()
        .flatten()
    {
        let (part, text) = part_text(c, media);
        had_text |= text;
        parts.push(part);
    }
    if !had_text && let Some(sc) = json::get(result, "structuredContent") {
        parts.push(json::to_string(sc));
    }
    parts.retain(|p| !p.is_empty());
    let text = if parts.is_empty() {
        EMPTY_RESULT.to_string()
    } else {
        parts.join("\n")
    };
    Rendered { text, is_error }
}

/// One content part as text, and whether it carried text (rather than a reference).
fn part_text(c: &Value, media: &mut dyn FnMut(&str, &str, &str) -> String) -> (String, bool) {
    let s = |k| json::str_at(c, k);
    match s("type").unwrap_or("") {
        "text" => (s("text").unwrap_or("").to_string(), true),
        "resource" => {
            let r = json::get(c, "resource");
            let rs = |k| r.and_then(|r| json::str_at(r, k));
            match rs("text") {
                Some(t) => (t.to_string(), true),
                None => {
                    let mut fields = vec![rs("uri").unwrap_or("?").to_string()];
                    fields.extend(rs("mimeType").map(str::to_string));
                    fields.extend(rs("blob").map(|b| size_text(decoded_len(b))));
                    (format!("[resource: {}]", fields.join(", ")), false)
                }
            }
        }
        "resource_link" => {
            let fields: Vec<&str> = [s("name"), s("uri"), s("mimeType")]
                .into_iter()
                .flatten()
                .collect();
            (format!("[resource link: {}]", fields.join(", ")), false)
        }
        kind @ ("image" | "audio") => {
            let mime = s("mimeType").unwrap_or(kind);
            (media(kind, mime, s("data").unwrap_or("")), false)
        }
        other => {
            let kind: String = other
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
                .take(32)
                .collect();
            let kind = if kind.is_empty() { "unknown" } else { &kind };
            (format!("[{kind} content]"), false)
        }
    }
}

/// Bytes a base64 text decodes to.
fn decoded_len(b64: &str) -> usize {
    let data = b64.trim_end_matches('=');
    data.len() * 3 / 4
}

/// `512 bytes`, `12 KB`, `3 MB` (rounded up).
fn size_text(bytes: usize) -> String {
    if bytes < 1024 {
        format!("{bytes} bytes")
    } else if bytes < 1024 * 1024 {
        format!("{} KB", bytes.div_ceil(1024))
    } else {
        format!("{} MB", bytes.div_ceil(1024 * 1024))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(result: &str) -> Rendered {
        render(&json::parse_value(result).unwrap())
    }

    // Results shaped as the specification's own examples (2025-06-18, server/tools).
    #[test]
    fn text_parts_are_joined() {
        let out = r(
            r#"{"content":[{"type":"text","text":"Current weather in New York:\nTemperature: 72°F\nConditions: Partly cloudy"}],"isError":false}"#,
        );
        assert_eq!(
            out,
            Rendered {
                text: "Current weather in New York:\nTemperature: 72°F\nConditions: Partly cloudy"
                    .into(),
                is_error: false
            }
        );
        let two = r(r#"{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}"#);
        assert_eq!(two.text, "a\nb");
    }

    #[test]
    fn images_and_audio_become_one_line_placeholders() {
        let png = "A".repeat(16_384); // 12 KB decoded
        let out = r(&format!(
            r#"{{"content":[{{"type":"image","data":"{png}","mimeType":"image/png","annotations":{{"audience":["user"],"priority":0.9}}}},{{"type":"audio","data":"UklGRg==","mimeType":"audio/wav"}}]}}"#
        ));
        assert_eq!(
            out.text,
            "[image: image/png, 12 KB]\n[audio: audio/wav, 4 bytes]"
        );
    }

    /// The base64 of `bytes`.
    fn b64(bytes: &[u8]) -> String {
        let mut out = Vec::new();
        crate::provider::upload::base64_into(bytes, &mut out);
        String::from_utf8(out).unwrap()
    }

    fn image(data: &str, mime: &str) -> String {
        format!(r#"{{"type":"image","data":"{data}","mimeType":"{mime}"}}"#)
    }

    /// The 1x1 PNG the SDK fixture returns (tests/fixtures/mcp/image_server.py).
    const PNG_B64: &str =
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgAAACAAFUok9dAAAAAElFTkSuQmCC";

    fn seeing(parts: &[String], room: usize) -> (Rendered, Vec<Decoded>) {
        let v = json::parse_value(&format!(r#"{{"content":[{}]}}"#, parts.join(","))).unwrap();
        render_seeing(&v, room)
    }

    #[test]
    fn images_for_a_model_that_sees_are_decoded_checked_and_bounded() {
        let png = PNG_B64.to_string();
        let png_bytes = base64_decode(&png).unwrap();
        let jpeg = b64(&[0xFF, 0xD8, 0xFF, 0xE0, 0, 0x10]);
        let (out, images) = seeing(
            &[
                r#"{"type":"text","text":"The page:"}"#.into(),
                image(&png, "image/png"),
                // The type the bytes say wins over the declared one.
                image(&jpeg, "image/png"),
                image(&png, "image/bmp"),
                image("not base64!", "image/png"),
                image(&b64(b"GIF8 but not quite"), "image/gif"),
                image(&"A".repeat(MCP_MAX_IMAGE_BYTES / 3 * 4 + 4), "image/png"),
                r#"{"type":"audio","data":"UklGRg==","mimeType":"audio/wav"}"#.into(),
            ],
            MAX_TOOL_IMAGES_PER_ROUND,
        );
        assert_eq!(
            out.text,
            [
                "The page:",
                "[image: image/png, 66 bytes]",
                "[image: image/jpeg, 6 bytes]",
                "[image: image/bmp, 66 bytes, not shown: only PNG, JPEG, GIF and WebP images are shown]",
                "[image: image/png, 8 bytes, not shown: its data is not valid base64]",
                "[image: image/gif, 18 bytes, not shown: only PNG, JPEG, GIF and WebP images are shown]",
                "[image: image/png, 3 MB, not shown: larger than the 2 MB an image may be]",
                "[audio: audio/wav, 4 bytes]",
            ]
            .join("\n")
        );
        assert_eq!(
            images,
            [
                Decoded {
                    mime: "image/png",
                    bytes: png_bytes
                },
                Decoded {
                    mime: "image/jpeg",
                    bytes: vec![0xFF, 0xD8, 0xFF, 0xE0, 0, 0x10]
                }
            ]
        );
        // Four per result; fewer when the round has less room; none for an error.
        let six: Vec<String> = (0..6).map(|_| image(&png, "image/png")).collect();
        let (out, images) = seeing(&six, MAX_TOOL_IMAGES_PER_ROUND);
        assert_eq!(images.len(), MCP_MAX_IMAGES_PER_RESULT);
        assert_eq!(
            out.text
                .matches("not shown: a result shows at most 4 images")
                .count(),
            2,
            "{}",
            out.text
        );
        let (out, images) = seeing(&six[..3], 1);
        assert_eq!(images.len(), 1);
        assert_eq!(
            out.text
                .matches("not shown: a round of tool calls shows at most 8 images")
                .count(),
            2,
            "{}",
            out.text
        );
        let v =
            json::parse_value(&format!(r#"{{"content":[{}],"isError":true}}"#, six[0])).unwrap();
        let (out, images) = render_seeing(&v, 8);
        assert!(out.is_error && images.is_empty());
        assert_eq!(out.text, "[image: image/png, 66 bytes]");
    }

    #[test]
    fn resources_give_their_text_or_a_short_reference() {
        let link = r(
            r#"{"content":[{"type":"resource_link","uri":"file:///project/src/main.rs","name":"main.rs","description":"Primary application entry point","mimeType":"text/x-rust","annotations":{"audience":["assistant"],"priority":0.9,"lastModified":"2025-01-12T15:00:58Z"}}]}"#,
        );
        assert_eq!(
            link.text,
            "[resource link: main.rs, file:///project/src/main.rs, text/x-rust]"
        );
        let embedded = r(
            r#"{"content":[{"type":"resource","resource":{"uri":"file:///project/src/main.rs","title":"Project Rust Main File","mimeType":"text/x-rust","text":"fn main() {\n    println!(\"Hello world!\");\n}","annotations":{"audience":["user","assistant"],"priority":0.7,"lastModified":"2025-05-03T14:30:00Z"}}}]}"#,
        );
        assert_eq!(
            embedded.text,
            "fn main() {\n    println!(\"Hello world!\");\n}"
        );
        let blob = r(
            r#"{"content":[{"type":"resource","resource":{"uri":"file:///x.bin","mimeType":"application/octet-stream","blob":"AAAAAAAA"}}]}"#,
        );
        assert_eq!(
            blob.text,
            "[resource: file:///x.bin, application/octet-stream, 6 bytes]"
        );
    }

    #[test]
    fn structured_content_shows_when_nothing_else_is_text() {
        // The spec's example repeats it as text: the text is used, not both.
        let both = r(
            r#"{"content":[{"type":"text","text":"{\"temperature\": 22.5, \"conditions\": \"Partly cloudy\", \"humidity\": 65}"}],"structuredContent":{"temperature":22.5,"conditions":"Partly cloudy","humidity":65}}"#,
        );
        assert_eq!(
            both.text,
            r#"{"temperature": 22.5, "conditions": "Partly cloudy", "humidity": 65}"#
        );
        let only = r(r#"{"content":[],"structuredContent":{"sum":3,"ok":true}}"#);
        assert_eq!(only.text, r#"{"ok":true,"sum":3}"#);
        let beside_image = r(
            r#"{"content":[{"type":"image","data":"","mimeType":"image/png"}],"structuredContent":{"n":1}}"#,
        );
        assert_eq!(beside_image.text, "[image: image/png, 0 bytes]\n{\"n\":1}");
    }

    #[test]
    fn errors_are_marked_and_odd_results_still_read() {
        let e = r(
            r#"{"content":[{"type":"text","text":"Failed to fetch weather data: API rate limit exceeded"}],"isError":true}"#,
        );
        assert!(e.is_error);
        assert_eq!(
            e.text,
            "Failed to fetch weather data: API rate limit exceeded"
        );
        assert_eq!(r("{}").text, EMPTY_RESULT);
        assert_eq!(r(r#"{"content":"oops"}"#).text, EMPTY_RESULT);
        assert_eq!(r(r#"{"content":[{"type":"text"}]}"#).text, EMPTY_RESULT);
        assert_eq!(r("null").text, EMPTY_RESULT);
        let odd = r(r#"{"content":[{"type":"hologram\n<x>"},{"nope":1},{"type":"image"}]}"#);
        assert_eq!(
            odd.text,
            "[hologramx content]\n[unknown content]\n[image: image, 0 bytes]"
        );
        assert!(!r(r#"{"content":[],"isError":"yes"}"#).is_error);
        assert_eq!(size_text(3 * 1024 * 1024 + 1), "4 MB");
    }
}
