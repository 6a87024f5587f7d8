//! Streamed replies (`provider.stream = true`): the body is read in small chunks, parsed
//! as Server-Sent Events (`sse`), and assembled into the same [`ChatReply`] the
//! non-streamed path produces, while visible text is handed out as it arrives.
//!
//! OpenAI-compatible deltas: `delta.content` text; `delta.tool_calls` assembled by
//! `index` (id and name from the first delta, `arguments` fragments concatenated; an
//! object, as Ollama sends, replaces them); the legacy `delta.function_call`;
//! `finish_reason` (`stop`, `length`, `tool_calls`, `function_call`, or null until the
//! end); `usage` from the last chunk (requested with `stream_options.include_usage`);
//! `reasoning_content`/`reasoning` never shown, only its last paragraph kept for when the
//! answer is found nowhere else (`openai::answer_from_reasoning`); an `error` object (OpenRouter reports
//! upstream failures that way) becomes a typed error. Anthropic events are assembled
//! by `anthropic::AnthropicStream`.
//!
//! A stream must end properly: `data: [DONE]` (OpenAI) or `message_stop` (Anthropic). A
//! body that ends before that is [`ProviderError::StreamCut`], never a truncated
//! answer presented as complete, unless the finish reason had already arrived (only
//! the usage figures can be missing then).
//!
//! # Bounds
//! Reads of `STREAM_READ_CHUNK_BYTES`; the whole body is capped at
//! `MAX_PROVIDER_RESPONSE_BYTES` (ureq's body limit), so the assembled text is too;
//! `MAX_SSE_LINE_BYTES` per line; at most `MAX_STREAM_TOOL_CALLS` tool calls.
//!
//! # Threads
//! Worker threads (with the model call that opened the stream).
//!
//! # Blocking
//! [`read_stream`] blocks on the reader: run it on a worker thread. The `on_text`
//! callback runs there too (the agent forwards the text over a bounded channel).

use super::anthropic::AnthropicStream;
use super::http::{self, HttpError};
use super::openai::{
    ReasoningTail, answer_from_reasoning, arguments_text, body_error, content_text, reasoning_text,
};
use super::sse::{SseEvent, SseParser};
use super::{ChatReply, ProviderError, ToolCall, Usage};
use crate::config::{ProviderConfig, ProviderKind};
use crate::json;
use crate::limits::{MAX_STREAM_TOOL_CALLS, STREAM_READ_CHUNK_BYTES};
use miniserde::json::Value;
use std::io::Read;

/// The slot used for a legacy `function_call` delta.
const FUNCTION_CALL_INDEX: u64 = u64::MAX;

/// A tool call being assembled from OpenAI deltas.
#[derive(Debug)]
struct PartialCall {
    index: u64,
    id: String,
    name: String,
    /// Concatenated string fragments.
    args: String,
    /// Arguments sent as an object (Ollama, llama.cpp), serialized.
    args_object: Option<String>,
}

/// Assembles an OpenAI-compatible streamed answer from its chunks.
#[derive(Debug, Default)]
pub struct OpenAiStream {
    content: String,
    calls: Vec<PartialCall>,
    finish_reason: Option<String>,
    usage: Option<Usage>,
    saw_choice: bool,
    done: bool,
    reasoning: ReasoningTail,
}

impl OpenAiStream {
    /// One event's data; visible text is appended to `text`.
    pub fn event(
        &mut self,
        data: &str,
        text: &mut String,
        cfg: &ProviderConfig,
    ) -> Result<(), ProviderError> {
        let data = data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        if data.is_empty() {
            return Ok(());
        }
        let v = super::read_json(data, "a stream event is not JSON")?;
        if let Some(e) = body_error(&v, cfg) {
            return Err(e);
        }
        if let Some(u) = json::get(&v, "usage")
            && let Some(p) = json::get(u, "prompt_tokens").and_then(json::as_u64)
        {
            self.usage = Some(Usage {
                prompt_tokens: p,
                completion_tokens: json::get(u, "completion_tokens")
                    .and_then(json::as_u64)
                    .unwrap_or(0),
                estimated: false,
            });
        }
        let choices = json::get(&v, "choices").and_then(json::as_array);
        let Some(choice) = choices.and_then(|c| {
            c.iter()
                .find(|c| json::get(c, "index").and_then(json::as_u64) == Some(0))
                .or_else(|| c.first())
        }) else {
            return Ok(());
        };
        self.saw_choice = true;
        let delta = json::get(choice, "delta").or_else(|| json::get(choice, "message"));
        if let Some(delta) = delta {
            if let Some(c) = json::get(delta, "content") {
                let t = content_text(c);
                self.content.push_str(&t);
                text.push_str(&t);
            }
            if let Some(r) = reasoning_text(delta) {
                self.reasoning.push(r);
            }
            if let Some(calls) = json::get(delta, "tool_calls").and_then(json::as_array) {
                for (pos, tc) in calls.iter().enumerate() {
                    let index = json::get(tc, "index").and_then(json::as_u64);
                    let id = json::str_at(tc, "id").unwrap_or("");
                    if let Some(slot) = self.slot(index, id, pos) {
                        merge_fragment(slot, id, json::get(tc, "function"));
                    }
                }
            }
            if let Some(fc) =
                json::get(delta, "function_call").filter(|f| json::as_object(f).is_some())
                && let Some(slot) = self.slot(Some(FUNCTION_CALL_INDEX), "", 0)
            {
                merge_fragment(slot, "", Some(fc));
            }
        }
        if let Some(r) = json::str_at(choice, "finish_reason") {
            self.finish_reason = Some(r.to_string());
        }
        Ok(())
    }

    /// The call a delta belongs to: by `index`; without one, by `id`, else a new call when
    /// an id starts one, else the last call.
    fn slot(&mut self, index: Option<u64>, id: &str, pos: usize) -> Option<&mut PartialCall> {
        let found = match index {
            Some(i) => self.calls.iter().position(|c| c.index == i),
            None if !id.is_empty() => self.calls.iter().position(|c| c.id == id),
            None => self.calls.len().checked_sub(1),
        };
        if let Some(k) = found {
            return self.calls.get_mut(k);
        }
        if self.calls.len() >= MAX_STREAM_TOOL_CALLS {
            return None;
        }
        let index = index.unwrap_or(u64::MAX - 1 - (self.calls.len() + pos) as u64);
        self.calls.push(PartialCall {
            index,
            id: String::new(),
            name: String::new(),
            args: String::new(),
            args_object: None,
        });
        self.calls.last_mut()
    }

    pub fn is_done(&self) -> bool {
        self.done
    }

    /// The body ended: the reply, or why it is not complete.
    pub fn finish(self, cfg: &ProviderConfig) -> Result<ChatReply, ProviderError> {
        if !self.done && self.finish_reason.is_none() {
            return Err(ProviderError::StreamCut {
                detail: "no [DONE]".into(),
            });
        }
        if !self.saw_choice {
            return Err(ProviderError::BadResponse {
                detail: "no choices in the answer".into(),
            });
        }
        // A server that sends both `tool_calls` and the legacy `function_call` for one
        // call (llama-cpp-python does) means one call: the legacy one counts only alone.
        let modern = self
            .calls
            .iter()
            .any(|c| c.index != FUNCTION_CALL_INDEX && !c.name.is_empty());
        let tool_calls = self
            .calls
            .into_iter()
            .filter(|c| !(modern && c.index == FUNCTION_CALL_INDEX))
            .enumerate()
            .filter(|(_, c)| !c.name.is_empty())
            .map(|(i, c)| ToolCall {
                id: if c.id.is_empty() {
                    format!("call_{i}")
                } else {
                    c.id
                },
                name: c.name,
                arguments: if !c.args.trim().is_empty() {
                    c.args
                } else {
                    c.args_object.unwrap_or_else(|| "{}".to_string())
                },
            })
            .collect();
        let mut reply = ChatReply {
            content: self.content,
            tool_calls,
            finish_reason: self.finish_reason.unwrap_or_default(),
            usage: self.usage,
        };
        answer_from_reasoning(&mut reply, &self.reasoning, cfg);
        Ok(reply)
    }
}

fn merge_fragment(slot: &mut PartialCall, id: &str, function: Option<&Value>) {
    if slot.id.is_empty() && !id.is_empty() {
        slot.id = id.to_string();
    }
    let Some(f) = function else {
        return;
    };
    if slot.name.is_empty()
        && let Some(n) = json::str_at(f, "name")
    {
        slot.name = n.to_string();
    }
    match json::get(f, "arguments") {
        Some(Value::String(s)) => slot.args.push_str(s),
        Some(v @ Value::Object(_)) => slot.args_object = Some(arguments_text(Some(v))),
        _ => {}
    }
}

enum Assembler {
    OpenAi(OpenAiStream),
    Anthropic(AnthropicStream),
}

/// Bytes in, text deltas and finally a [`ChatReply`] out, for either protocol.
pub struct StreamDecoder<'a> {
    cfg: &'a ProviderConfig,
    sse: SseParser,
    events: Vec<SseEvent>,
    asm: Assembler,
}

impl<'a> StreamDecoder<'a> {
    pub fn new(cfg: &'a ProviderConfig) -> StreamDecoder<'a> {
        StreamDecoder {
            cfg,
            sse: SseParser::new(),
            events: Vec::new(),
            asm: match cfg.kind {
                ProviderKind::OpenAi => Assembler::OpenAi(OpenAiStream::default()),
                ProviderKind::Anthropic => Assembler::Anthropic(AnthropicStream::default()),
            },
        }
    }

    /// Feed the next bytes of the body; visible text is appended to `text`. Bytes after
    /// the end of the stream are ignored.
    pub fn push(&mut self, bytes: &[u8], text: &mut String) -> Result<(), ProviderError> {
        if self.is_done() {
            return Ok(());
        }
        self.sse
            .push(bytes, &mut self.events)
            .map_err(|e| ProviderError::BadResponse {
                detail: e.to_string(),
            })?;
        for ev in self.events.drain(..) {
            match &mut self.asm {
                Assembler::OpenAi(a) if !a.is_done() => a.event(&ev.data, text, self.cfg)?,
                Assembler::Anthropic(a) if !a.is_done() => a.event(&ev.data, text, self.cfg)?,
                _ => {}
            }
        }
        Ok(())
    }

    /// The end marker has arrived.
    pub fn is_done(&self) -> bool {
        match &self.asm {
            Assembler::OpenAi(a) => a.is_done(),
            Assembler::Anthropic(a) => a.is_done(),
        }
    }

    /// The body ended (or the end marker came): the reply.
    pub fn finish(self) -> Result<ChatReply, ProviderError> {
        match self.asm {
            Assembler::OpenAi(a) => a.finish(self.cfg),
            Assembler::Anthropic(a) => a.finish(),
        }
    }
}

/// Read a streamed body to its end marker, calling `on_text` with the visible text of
/// each read (never empty). `on_text` returning false cancels the request.
pub fn read_stream(
    reader: &mut dyn Read,
    cfg: &ProviderConfig,
    host: &str,
    on_text: &mut dyn FnMut(&str) -> bool,
) -> Result<ChatReply, ProviderError> {
    let mut dec = StreamDecoder::new(cfg);
    let mut buf = [0u8; STREAM_READ_CHUNK_BYTES];
    let mut text = String::new();
    while !dec.is_done() {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(read_error(e, host)),
        };
        dec.push(buf.get(..n).unwrap_or(&[]), &mut text)?;
        if !text.is_empty() {
            if !on_text(&text) {
                return Err(ProviderError::Cancelled);
            }
            text.clear();
        }
    }
    dec.finish()
}

fn read_error(e: std::io::Error, host: &str) -> ProviderError {
    match http::map_io_error(e) {
        HttpError::Timeout => ProviderError::Timeout {
            host: host.to_string(),
        },
        HttpError::TooLarge => ProviderError::TooLarge,
        HttpError::Unreachable(detail) | HttpError::Malformed(detail) => {
            ProviderError::StreamCut { detail }
        }
        HttpError::Tls(t) => ProviderError::StreamCut {
            detail: t.short().into(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::openai::parse_reply;
    use crate::testkit::XorShift;

    fn cfg(kind: ProviderKind) -> ProviderConfig {
        ProviderConfig {
            kind,
            ..ProviderConfig::default()
        }
    }

    /// Decode `chunks` as one body; the reply and the concatenated text deltas.
    fn decode(kind: ProviderKind, chunks: &[&[u8]]) -> (Result<ChatReply, ProviderError>, String) {
        let cfg = cfg(kind);
        let mut dec = StreamDecoder::new(&cfg);
        let mut all = String::new();
        for c in chunks {
            let mut t = String::new();
            if let Err(e) = dec.push(c, &mut t) {
                return (Err(e), all);
            }
            all.push_str(&t);
        }
        (dec.finish(), all)
    }

    /// An OpenRouter-shaped stream: comments, reasoning, split tool-call arguments,
    /// a usage-only final chunk.
    const OPENAI_STREAM: &str = concat!(
        ": OPENROUTER PROCESSING\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\",\"reasoning\":\"thinking…\"},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Héllo \"},\"finish_reason\":null}]}\r\n\r\n",
        ": OPENROUTER PROCESSING\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"wörld 🎉\",\"reasoning_content\":null}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_a\",\"type\":\"function\",\"function\":{\"name\":\"read_file\",\"arguments\":\"\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"pa\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"call_b\",\"function\":{\"name\":\"list_dir\",\"arguments\":\"{}\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"th\\\":\\\"x\\\"}\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}],\"usage\":null}\n\n",
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":5,\"total_tokens\":15}}\n\n",
        "data: [DONE]\n\n",
    );

    const OPENAI_BODY: &str = r#"{"choices":[{"message":{"content":"Héllo wörld 🎉","tool_calls":[{"id":"call_a","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"x\"}"}},{"id":"call_b","type":"function","function":{"name":"list_dir","arguments":"{}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":10,"completion_tokens":5}}"#;

    fn random_chunks<'b>(bytes: &'b [u8], x: &mut XorShift) -> Vec<&'b [u8]> {
        let mut chunks = Vec::new();
        let mut i = 0;
        while i < bytes.len() {
            let n = 1 + x.index(40);
            let j = (i + n).min(bytes.len());
            chunks.push(&bytes[i..j]);
            i = j;
        }
        chunks
    }

    #[test]
    fn openai_stream_equals_the_non_streamed_reply() {
        let (reply, text) = decode(ProviderKind::OpenAi, &[OPENAI_STREAM.as_bytes()]);
        let reply = reply.unwrap();
        assert_eq!(text, "Héllo wörld 🎉");
        assert_eq!(
            reply,
            parse_reply(OPENAI_BODY, &cfg(ProviderKind::OpenAi)).unwrap()
        );
        assert_eq!(reply.tool_calls[0].arguments, r#"{"path":"x"}"#);
    }

    /// A llama.cpp-shaped stream of a model that wrote its whole answer as reasoning.
    const REASONING_ONLY: &str = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null,\"reasoning_content\":\"The user wants 2+2.\\n\"}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"\\nSo: \"}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"it is 4.\\n\"}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
        "data: [DONE]\n\n",
    );

    #[test]
    fn reasoning_is_never_text_and_a_reasoning_only_answer_is_its_last_paragraph() {
        let mut x = XorShift(0x5EED_0000_7777_0001);
        for _ in 0..500 {
            let chunks = random_chunks(REASONING_ONLY.as_bytes(), &mut x);
            let (reply, text) = decode(ProviderKind::OpenAi, &chunks);
            assert_eq!(text, "", "reasoning is never streamed as text");
            assert_eq!(reply.unwrap().content, "So: it is 4.");
        }
        // With an answer of its own, the reasoning is dropped; cut off, it is no answer.
        let (reply, text) = decode(ProviderKind::OpenAi, &[OPENAI_STREAM.as_bytes()]);
        assert_eq!(reply.unwrap().content, text);
        let cut = REASONING_ONLY.replace("\"stop\"", "\"length\"");
        let (reply, _) = decode(ProviderKind::OpenAi, &[cut.as_bytes()]);
        assert_eq!(reply.unwrap().content, "");
    }

    #[test]
    fn random_chunking_gives_the_same_reply() {
        let want = decode(ProviderKind::OpenAi, &[OPENAI_STREAM.as_bytes()]);
        let want = (want.0.unwrap(), want.1);
        let mut x = XorShift(0xDEAD_BEEF_1234_5678);
        for _ in 0..2000 {
            let chunks = random_chunks(OPENAI_STREAM.as_bytes(), &mut x);
            let (r, t) = decode(ProviderKind::OpenAi, &chunks);
            assert_eq!((r.unwrap(), t), want);
        }
        let anth = anthropic_stream();
        let want = decode(ProviderKind::Anthropic, &[anth.as_bytes()]);
        let want = (want.0.unwrap(), want.1);
        for _ in 0..2000 {
            let chunks = random_chunks(anth.as_bytes(), &mut x);
            let (r, t) = decode(ProviderKind::Anthropic, &chunks);
            assert_eq!((r.unwrap(), t), want);
        }
    }

    fn anthropic_stream() -> String {
        let events = [
            (
                "message_start",
                r#"{"type":"message_start","message":{"usage":{"input_tokens":9,"output_tokens":1}}}"#,
            ),
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            ),
            ("ping", r#"{"type": "ping"}"#),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Grüße, "}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"世界"}}"#,
            ),
            (
                "content_block_stop",
                r#"{"type":"content_block_stop","index":0}"#,
            ),
            (
                "message_delta",
                r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":4}}"#,
            ),
            ("message_stop", r#"{"type":"message_stop"}"#),
        ];
        events
            .iter()
            .map(|(e, d)| format!("event: {e}\r\ndata: {d}\r\n\r\n"))
            .collect()
    }

    #[test]
    fn anthropic_stream_decodes() {
        let (r, text) = decode(ProviderKind::Anthropic, &[anthropic_stream().as_bytes()]);
        let r = r.unwrap();
        assert_eq!(text, "Grüße, 世界");
        assert_eq!(r.content, text);
        assert_eq!(r.finish_reason, "end_turn");
        assert_eq!(
            r.usage,
            Some(Usage {
                prompt_tokens: 9,
                completion_tokens: 4,
                estimated: false,
            })
        );
    }

    #[test]
    fn cut_streams_are_errors_not_short_answers() {
        let s = OPENAI_STREAM.as_bytes();
        // Cut anywhere before the finish reason: an error.
        let finish_at = OPENAI_STREAM
            .find("\"finish_reason\":\"tool_calls\"")
            .unwrap();
        let mut x = XorShift(7);
        for _ in 0..300 {
            let cut = x.index(finish_at);
            let (r, _) = decode(ProviderKind::OpenAi, &[&s[..cut]]);
            assert!(
                matches!(r, Err(ProviderError::StreamCut { .. })),
                "cut at {cut}: {r:?}"
            );
        }
        let a = anthropic_stream();
        let stop_at = a.find("event: message_delta").unwrap();
        for _ in 0..300 {
            let cut = x.index(stop_at);
            let (r, _) = decode(ProviderKind::Anthropic, &[&a.as_bytes()[..cut]]);
            assert!(matches!(r, Err(ProviderError::StreamCut { .. })), "{r:?}");
        }
        // After the finish reason only usage can be missing: complete.
        let no_done = OPENAI_STREAM.replace("data: [DONE]\n\n", "");
        let (r, _) = decode(ProviderKind::OpenAi, &[no_done.as_bytes()]);
        assert_eq!(r.unwrap().tool_calls.len(), 2);
    }

    #[test]
    fn quirks_of_real_servers() {
        // Ollama: whole tool calls with object arguments and no index; no usage.
        let ollama = concat!(
            "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{\"id\":\"call_x\",\"function\":{\"name\":\"read_file\",\"arguments\":{\"path\":\"a\"}}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"id\":\"call_y\",\"function\":{\"name\":\"list_dir\",\"arguments\":{}}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
            "data: [DONE]\n\n",
        );
        let (r, _) = decode(ProviderKind::OpenAi, &[ollama.as_bytes()]);
        let r = r.unwrap();
        assert_eq!(r.tool_calls.len(), 2);
        assert_eq!(r.tool_calls[0].arguments, r#"{"path":"a"}"#);
        assert_eq!(r.tool_calls[1].arguments, "{}");
        assert_eq!(r.usage, None);
        // The legacy function_call delta.
        let legacy = concat!(
            "data: {\"choices\":[{\"delta\":{\"function_call\":{\"name\":\"list_dir\",\"arguments\":\"{\\\"pa\"}}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"function_call\":{\"arguments\":\"th\\\":\\\".\\\"}\"}},\"finish_reason\":\"function_call\"}]}\n\n",
            "data: [DONE]\n\n",
        );
        let (r, _) = decode(ProviderKind::OpenAi, &[legacy.as_bytes()]);
        let r = r.unwrap();
        assert_eq!(r.finish_reason, "function_call");
        assert_eq!(r.tool_calls[0].id, "call_0");
        assert_eq!(r.tool_calls[0].arguments, r#"{"path":"."}"#);
        // llama-cpp-python: one call sent both as `tool_calls` and as `function_call`
        // (its name even spelled "list_dir:"): one call, not two.
        let both = concat!(
            "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"index\":0,\"id\":\"call__0_list_dir\",\"type\":\"function\",\"function\":{\"name\":\"list_dir\",\"arguments\":\"{}\"}}],\"function_call\":{\"name\":\"list_dir:\",\"arguments\":\"{}\"}}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
            "data: [DONE]\n\n",
        );
        let (r, _) = decode(ProviderKind::OpenAi, &[both.as_bytes()]);
        let r = r.unwrap();
        assert_eq!(r.tool_calls.len(), 1, "{:?}", r.tool_calls);
        assert_eq!(r.tool_calls[0].name, "list_dir");
        // Empty choices all the way: the same error as a non-streamed empty `choices`.
        let (r, _) = decode(
            ProviderKind::OpenAi,
            &[b"data: {\"choices\":[]}\n\ndata: [DONE]\n\n"],
        );
        assert!(matches!(r, Err(ProviderError::BadResponse { .. })));
        // An error in the stream (OpenRouter: upstream status as `code`).
        let (r, _) = decode(
            ProviderKind::OpenAi,
            &[b"data: {\"error\":{\"message\":\"upstream down\",\"code\":502},\"choices\":[{\"delta\":{},\"finish_reason\":\"error\"}]}\n\n"],
        );
        let e = r.unwrap_err();
        assert!(
            e.is_retryable() && e.to_string().contains("upstream down"),
            "{e}"
        );
        // Garbage data is an error, a too long line too.
        let (r, _) = decode(ProviderKind::OpenAi, &[b"data: <html>\n\n"]);
        assert!(matches!(r, Err(ProviderError::BadResponse { .. })));
        let long = format!(
            "data: {}",
            "x".repeat(crate::limits::MAX_SSE_LINE_BYTES + 1)
        );
        let (r, _) = decode(ProviderKind::OpenAi, &[long.as_bytes()]);
        assert!(matches!(r, Err(ProviderError::BadResponse { .. })));
    }

    /// A reader that hands out the body a few bytes at a time, then fails or ends.
    struct Dribble {
        data: Vec<u8>,
        at: usize,
        fail: Option<std::io::ErrorKind>,
    }

    impl Read for Dribble {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.at >= self.data.len() {
                return match self.fail {
                    Some(k) => Err(std::io::Error::new(k, "x")),
                    None => Ok(0),
                };
            }
            let n = 7.min(buf.len()).min(self.data.len() - self.at);
            buf[..n].copy_from_slice(&self.data[self.at..self.at + n]);
            self.at += n;
            Ok(n)
        }
    }

    #[test]
    fn read_stream_hands_out_text_and_maps_read_errors() {
        let c = cfg(ProviderKind::OpenAi);
        let mut r = Dribble {
            data: OPENAI_STREAM.as_bytes().to_vec(),
            at: 0,
            fail: None,
        };
        let mut seen = Vec::new();
        let reply = read_stream(&mut r, &c, "h", &mut |t| {
            seen.push(t.to_string());
            true
        })
        .unwrap();
        assert!(seen.len() > 1 && seen.iter().all(|t| !t.is_empty()));
        assert_eq!(seen.concat(), reply.content);

        let half = OPENAI_STREAM.len() / 2;
        for (kind, want_timeout) in [
            (std::io::ErrorKind::TimedOut, true),
            (std::io::ErrorKind::ConnectionReset, false),
            (std::io::ErrorKind::UnexpectedEof, false),
        ] {
            let mut r = Dribble {
                data: OPENAI_STREAM.as_bytes()[..half].to_vec(),
                at: 0,
                fail: Some(kind),
            };
            let e = read_stream(&mut r, &c, "h", &mut |_| true).unwrap_err();
            if want_timeout {
                assert!(matches!(e, ProviderError::Timeout { .. }), "{e:?}");
            } else {
                assert!(matches!(e, ProviderError::StreamCut { .. }), "{e:?}");
            }
        }
        let mut r = Dribble {
            data: OPENAI_STREAM.as_bytes().to_vec(),
            at: 0,
            fail: None,
        };
        let e = read_stream(&mut r, &c, "h", &mut |_| false).unwrap_err();
        assert_eq!(e, ProviderError::Cancelled);
    }
}
