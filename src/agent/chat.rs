//! One model request of a turn, made reliable: each provider (the primary, then every
//! fallback in order) is tried with retries and backoff for transient failures
//! (`provider::retry`); streamed answers are read on a worker thread and their visible
//! text passed to the channel's [`StreamSink`] as it arrives; the tokens used are
//! recorded under the provider that actually answered.
//!
//! When every provider fails, the turn fails with [`AgentError::Providers`]: one short,
//! secret-free sentence per provider that says what failed and what to do.
//!
//! A streamed attempt that already gave the sink text and then fails (a `StreamCut`, a
//! stall) is retried like any other failure when the sink can take that text back
//! (`StreamSink::retract`: Telegram shows it in a draft or a message the next attempt
//! overwrites). Otherwise it is not retried or handed to a fallback: the user has seen
//! part of an answer that cannot be taken back, so the turn ends with the error.
//!
//! The injection screen's judge ([`Agent::judge`]) is one request of its own: the first
//! provider with the judge's model, no retry, no fallback, no tools, cut off at
//! `security.injection.judge.timeout_secs`.
//!
//! # Bounds
//! At most `PROVIDER_ATTEMPTS` attempts per provider within `RETRY_BUDGET_SECS`; text
//! deltas wait in a channel of `STREAM_QUEUE_LEN` (the reading thread waits when full).
//! A request body exists only while its attempt holds one of the agent's model-call
//! slots (one per worker thread): with 8 chats waiting for 2 workers, 2 bodies of about
//! 17 KB exist, not 8 (docs/DECISIONS.md, "A model request is built when a worker can
//! send it"). The judge's body (at most `untrusted::JUDGE_INPUT_BYTES` of content) does
//! not wait for a slot.
//!
//! # Threads
//! Runs on the executor; HTTP runs on `Workers`; backoff waits are `smol::Timer`s.

use super::streaming::{MarkupFilter, StreamSink};
use super::think::{self, ThinkStart};
use super::{Agent, AgentError, fit, untrusted};
use crate::chat::{Message, Role, ToolSpec, Usage};
use crate::config::security::JudgeConfig;
use crate::limits::STREAM_QUEUE_LEN;
use crate::provider::retry::Jitter;
use crate::provider::{ChatReply, ChatRequest, Provider, ProviderError};
use crate::security::injection;
use crate::time::now as now_secs;
use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How one provider failed, for the user.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    /// `kind:model`, never a URL or a key.
    pub provider: String,
    pub error: ProviderError,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.provider, self.error)
    }
}

/// The Display of [`AgentError::Providers`]: the error alone when only one provider was
/// tried, else every provider's failure in order.
pub fn failures_text(failures: &[Failure]) -> String {
    match failures {
        [] => "no provider is configured: check provider in config.json".to_string(),
        [one] => one.error.to_string(),
        many => {
            let list: Vec<String> = many.iter().map(Failure::to_string).collect();
            format!(
                "every provider failed (the primary and {} fallback{}); {}",
                many.len() - 1,
                if many.len() == 2 { "" } else { "s" },
                list.join("; ")
            )
        }
    }
}

/// One attempt's outcome, whether any of its text reached the sink, and whether any
/// text arrived at all (some may be held back: markup, a start that may be thinking).
struct Attempt {
    result: Result<ChatReply, ProviderError>,
    shown: bool,
    received: bool,
}

impl Agent {
    /// One model request offering `tools`, with retries and fallbacks. Returns the reply
    /// and the index of the provider that gave it. Its outcome is kept for
    /// [`Agent::last_provider_result`]: a server that answered (a refusal of tools or an
    /// overflowing request included) is a success, every provider failing a failure.
    pub(super) async fn chat(
        &self,
        system: &str,
        history: &[Message],
        tools: &[ToolSpec],
        sink: &mut dyn StreamSink,
    ) -> Result<(ChatReply, usize), AgentError> {
        let r = self.chat_tries(system, history, tools, sink).await;
        let ok = match &r {
            Ok(_) | Err(AgentError::Provider(_)) => true,
            Err(AgentError::Providers(_)) => false,
            Err(_) => return r,
        };
        self.last_provider.set(Some((Instant::now(), ok)));
        r
    }

    /// When the last model request ended and whether a provider answered it (`None`
    /// before the first), for the gateway's health report.
    pub fn last_provider_result(&self) -> Option<(Instant, bool)> {
        self.last_provider.get()
    }

    async fn chat_tries(
        &self,
        system: &str,
        history: &[Message],
        tools: &[ToolSpec],
        sink: &mut dyn StreamSink,
    ) -> Result<(ChatReply, usize), AgentError> {
        let mut failures = Vec::new();
        let mut jitter = Jitter::from_clock();
        let providers = self.providers();
        for (index, p) in providers.iter().enumerate() {
            if index > 0 {
                log::warn!("trying fallback provider {}", p.label());
            }
            let mut stream = p.streams()
                && !(tools.is_empty()
                    || self
                        .unstreamed_tools
                        .borrow()
                        .get(index)
                        .copied()
                        .unwrap_or(false));
            let first = Instant::now();
            let mut attempt = 1u32;
            let mut cuts_before_text = 0u32;
            loop {
                // The body is built once a model call can start (a slot of `model_calls`,
                // one per worker thread) and dropped when it ended: turns waiting for a
                // worker hold their history, not a request body each.
                let slot = self.model_calls.acquire().await;
                let body = match self.fitted_body(index, p, system, history, tools, stream) {
                    Ok(b) => b,
                    Err(error) => {
                        failures.push(Failure {
                            provider: p.label(),
                            error,
                        });
                        break;
                    }
                };
                let a = self.attempt(index, p, &body, stream, sink).await?;
                drop(slot);
                let error = match a.result {
                    Ok(mut reply) => {
                        if reply.usage.is_none() {
                            // No usage chunk (many local servers when streaming): an
                            // estimate, recorded as one, so budgets still count.
                            let said = reply.content.len()
                                + reply
                                    .tool_calls
                                    .iter()
                                    .map(|c| c.name.len() + c.arguments.len())
                                    .sum::<usize>();
                            reply.usage = Some(Usage::estimate(body.len(), said));
                        }
                        if let Some(u) = reply.usage.filter(|u| !u.estimated) {
                            self.calibrate(index, body.len(), u.prompt_tokens);
                        }
                        if reply.finish_reason == "length" || reply.finish_reason == "max_tokens" {
                            log::info!(
                                "the answer of {} was cut at provider.max_tokens",
                                p.label()
                            );
                        }
                        return Ok((reply, index));
                    }
                    Err(e) => e,
                };
                // A model that cannot see: remembered, and asked again at once without
                // the images (photos, tools' images: their placeholder lines say what
                // they were).
                if !a.shown
                    && body.contains(crate::provider::upload::FILE_MARK)
                    && refuses_images(&error)
                {
                    log::warn!(
                        "provider {} refused a request with an image ({error}): photos go to it as their path from now on, tools' images as their placeholder line (set provider.vision to false to skip the try)",
                        p.label()
                    );
                    self.blind.borrow_mut().push(index);
                    continue;
                }
                drop(body);
                // A server that refuses tools, or a request that does not fit: retrying
                // the same request cannot help; the turn deals with it (text tool mode,
                // compaction) and asks again once.
                if matches!(error, ProviderError::ToolsRefused { .. })
                    || matches!(error, ProviderError::ContextOverflow { .. })
                {
                    if a.shown {
                        sink.retract();
                    }
                    log::warn!("provider {} failed: {error}", p.label());
                    return Err(AgentError::Provider(error));
                }
                // A stream with tools that broke off before any text twice in a row (a
                // server that cannot stream tool calls, not a network blip): asked again
                // at once without streaming, and so for the rest of the run. Text held
                // back (a start that may be thinking) counts as text: such a server sends
                // none.
                let cut_early = !a.received && matches!(error, ProviderError::StreamCut { .. });
                cuts_before_text = if cut_early { cuts_before_text + 1 } else { 0 };
                if stream && !tools.is_empty() && cuts_before_text >= 2 {
                    log::warn!(
                        "provider {} broke off a streamed answer with tools before any text ({error}): asking again without streaming, and so with tools from now on",
                        p.label()
                    );
                    if let Some(u) = self.unstreamed_tools.borrow_mut().get_mut(index) {
                        *u = true;
                    }
                    stream = false;
                    continue;
                }
                if a.shown && !sink.retract() {
                    log::warn!("provider {} failed mid-answer: {error}", p.label());
                    failures.push(Failure {
                        provider: p.label(),
                        error,
                    });
                    return Err(AgentError::Providers(failures));
                }
                match self
                    .backoff
                    .next_delay(attempt, &error, first.elapsed(), jitter.next_u64())
                {
                    Some(delay) => {
                        log::warn!(
                            "provider {} failed: {error}; retrying in {} (attempt {} of {})",
                            p.label(),
                            secs_text(delay),
                            attempt + 1,
                            self.backoff.attempts
                        );
                        smol::Timer::after(delay).await;
                        attempt += 1;
                    }
                    None => {
                        log::warn!("provider {} failed: {error}", p.label());
                        failures.push(Failure {
                            provider: p.label(),
                            error,
                        });
                        break;
                    }
                }
            }
        }
        Err(AgentError::Providers(failures))
    }

    /// The request body for provider `index`, fitted into its context window when it has
    /// one (`fit`): old exchanges left out, large tool results cut, then the tools, while
    /// the estimate is over the budget.
    fn fitted_body(
        &self,
        index: usize,
        p: &Provider,
        system: &str,
        history: &[Message],
        tools: &[ToolSpec],
        stream: bool,
    ) -> Result<Arc<str>, ProviderError> {
        let mut msgs: Cow<'_, [Message]> = Cow::Borrowed(history);
        let mut tools = tools;
        let media_root =
            (!self.blind.borrow().contains(&index)).then_some(self.workspace.as_path());
        // No window (a cloud provider without provider.context_window): built once, as is.
        let window = p.cfg.window();
        let ratio = self.ratio(index);
        let mut steps = 0;
        loop {
            let body = p.build_body_as(
                &ChatRequest {
                    system,
                    messages: &msgs,
                    tools,
                    media_root,
                },
                stream,
            )?;
            // Shared with the worker thread that sends it, not copied for it; built once
            // the turn holds a model-call slot (`chat`).
            let Some(window) = window else {
                return Ok(body.into());
            };
            let budget = fit::budget(window, p.cfg.max_tokens) * self.fit_scale.get() / 100;
            let tokens = fit::estimate(body.len(), ratio);
            if tokens <= budget || steps >= fit::MAX_FIT_STEPS {
                if steps > 0 {
                    log::debug!(
                        "request fitted into {window} tokens: {} of {} messages, ~{tokens} tokens",
                        msgs.len(),
                        history.len()
                    );
                }
                return Ok(body.into());
            }
            steps += 1;
            if !fit::shrink(&mut msgs) {
                if tools.is_empty() {
                    return Ok(body.into()); // nothing left to take: the server will say
                }
                // With fewer tools (the built-in ones, then none), as much of the history
                // as fits comes back.
                let fewer = fit::fewer_tools(tools);
                if fewer.is_empty() {
                    log::info!(
                        "the tools do not fit the context window of {window} tokens: asking without them"
                    );
                } else {
                    log::info!(
                        "the MCP servers' tools do not fit the context window of {window} tokens: asking with the built-in tools only"
                    );
                }
                tools = fewer;
                msgs = Cow::Borrowed(history);
            }
        }
    }

    /// Tokens per KiB of request body for provider `index`.
    fn ratio(&self, index: usize) -> u32 {
        self.ratios
            .borrow()
            .get(index)
            .copied()
            .unwrap_or(fit::INITIAL_TOKENS_PER_KIB)
    }

    fn calibrate(&self, index: usize, bytes: usize, tokens: u64) {
        if let Some(r) = self.ratios.borrow_mut().get_mut(index) {
            *r = fit::calibrate(*r, bytes, tokens);
        }
    }

    /// One HTTP exchange on a worker thread; streamed text goes through the markup filter
    /// to the sink as it arrives (its start held back unless provider `index`'s answers
    /// are known to start outside thinking). A complete reply teaches where they start.
    async fn attempt(
        &self,
        index: usize,
        p: &Arc<Provider>,
        body: &Arc<str>,
        stream: bool,
        sink: &mut dyn StreamSink,
    ) -> Result<Attempt, AgentError> {
        let is_tool = |n: &str| self.tools.is_tool(n);
        let start = self.think_start(index);
        let mut filter = MarkupFilter::new(start);
        let mut shown = false;
        let mut received = false;
        let mut show = |text: &str, sink: &mut dyn StreamSink| {
            if !text.is_empty() {
                shown = true;
                sink.text(text);
            }
        };
        let p2 = p.clone();
        let body = Arc::clone(body);
        let result = if stream {
            let (tx, rx) = async_channel::bounded::<String>(STREAM_QUEUE_LEN);
            let job = self.workers.run(move || {
                p2.chat_stream_blocking(&body, &mut |t| tx.send_blocking(t.to_string()).is_ok())
            });
            let drain = async {
                while let Ok(t) = rx.recv().await {
                    received |= !t.is_empty();
                    let visible = filter.push(&t, &is_tool);
                    show(&visible, sink);
                }
            };
            let (ran, ()) = smol::future::zip(job, drain).await;
            ran.map_err(|_| AgentError::Stopped)?
        } else {
            let r = self
                .workers
                .run(move || p2.chat_blocking(&body))
                .await
                .map_err(|_| AgentError::Stopped)?;
            if let Ok(reply) = &r {
                let visible = filter.push(&reply.content, &is_tool);
                show(&visible, sink);
            }
            r
        };
        if let Ok(reply) = &result {
            let rest = if think::cut_in_thought(reply, start) {
                filter.finish_in_thought(&is_tool)
            } else {
                filter.finish_with(&is_tool)
            };
            show(&rest, sink);
            self.learn_think_start(index, reply);
        }
        Ok(Attempt {
            result,
            shown,
            received,
        })
    }

    /// Where provider `index`'s answers start (read from the store the first time).
    pub(super) fn think_start(&self, index: usize) -> ThinkStart {
        if let Some(Some(known)) = self.think_starts.borrow().get(index) {
            return *known;
        }
        let providers = self.providers();
        let Some(p) = providers.get(index) else {
            return ThinkStart::Unknown;
        };
        let known = match think::recall(&self.db, &p.cfg) {
            Ok(known) => known,
            Err(e) => {
                log::warn!("cannot read what {} answers start with: {e}", p.label());
                ThinkStart::Unknown
            }
        };
        if let Some(slot) = self.think_starts.borrow_mut().get_mut(index) {
            *slot = Some(known);
        }
        known
    }

    /// Remember what `reply` showed of where provider `index`'s answers start (kept in
    /// the store when it changed).
    fn learn_think_start(&self, index: usize, reply: &ChatReply) {
        let Some(now) = think::learned(reply) else {
            return;
        };
        let before = self.think_start(index);
        let providers = self.providers();
        let Some(p) = providers.get(index).filter(|_| now != before) else {
            return;
        };
        if let Some(slot) = self.think_starts.borrow_mut().get_mut(index) {
            *slot = Some(now);
        }
        if now == ThinkStart::Inside {
            log::info!(
                "{} starts its answers inside thinking its template opened: streamed answers are held until its </think>",
                p.label()
            );
        } else {
            log::debug!(
                "{} answers outside thinking: streamed answers show as they come",
                p.label()
            );
        }
        if let Err(e) = think::remember(&self.db, &p.cfg, now) {
            log::warn!("cannot remember what {} answers start with: {e}", p.label());
        }
    }

    /// Record a reply's tokens under the provider that gave it (and in `/metrics`).
    pub(super) fn record_usage(&self, session: &str, provider: usize, reply: &ChatReply) {
        if let Some(p) = self.providers().get(provider) {
            self.record_usage_of(session, p, reply);
        }
    }

    /// Layer 3 of the injection screen: the judge model's verdict on `text` from
    /// `source` (`Some(true)`: an injection). `None` when it gave none in time or none it
    /// could be read as (logged; the heuristic score's verdict stands). It is shown the
    /// text fenced like any untrusted content, and its tokens count for `session`.
    pub(super) async fn judge(
        &self,
        j: &JudgeConfig,
        session: &str,
        source: &str,
        text: &str,
    ) -> Option<bool> {
        let p = Arc::new(
            self.providers()
                .first()?
                .with_model(&j.model, untrusted::JUDGE_MAX_TOKENS),
        );
        let shown = injection::cut(text, untrusted::JUDGE_INPUT_BYTES);
        let messages = [Message::new(
            Role::User,
            injection::fence(source, shown, None),
        )];
        let asked = p.build_body(&ChatRequest {
            system: untrusted::JUDGE_PROMPT,
            messages: &messages,
            tools: &[],
            media_root: None,
        });
        let failed = |why: &dyn fmt::Display| -> Option<bool> {
            log::warn!(
                "injection judge {}: {why}; the heuristic score stands",
                j.model
            );
            None
        };
        let body = match asked {
            Ok(body) => body,
            Err(e) => return failed(&e),
        };
        let p2 = p.clone();
        let ask = self.workers.run(move || p2.chat_blocking(&body));
        let limit = Duration::from_secs(j.timeout_secs);
        let late = async {
            smol::Timer::after(limit).await;
            None
        };
        let reply = match smol::future::or(async { Some(ask.await) }, late).await {
            Some(Ok(Ok(reply))) => reply,
            Some(Ok(Err(e))) => return failed(&e),
            Some(Err(_)) => return None, // shutting down
            None => return failed(&format_args!("no verdict in {} s", j.timeout_secs)),
        };
        self.record_usage_of(session, &p, &reply);
        untrusted::judge_verdict(&reply.content)
            .or_else(|| failed(&"an answer other than yes or no"))
    }

    fn record_usage_of(&self, session: &str, p: &Provider, reply: &ChatReply) {
        let Some(u) = reply.usage else {
            return;
        };
        crate::metrics::tokens(p.metric(), u.prompt_tokens, u.completion_tokens);
        if let Err(e) = self
            .db
            .record_usage(session, &p.label(), &p.cfg.model, u, now_secs())
        {
            log::warn!("cannot record token usage: {e}");
        }
    }
}

/// The error of a request with images that says the model cannot take them: a 400 or
/// 422 (any detail: the images are what is new in it), or another status whose detail
/// names images (llama.cpp without a projector answers 500 "image input is not
/// supported") or is a chat template's complaint that the roles do not alternate (the
/// user message that brings a round's tool images to an OpenAI-compatible server
/// follows the tool messages; llama.cpp answers a template's exception with 500).
fn refuses_images(e: &ProviderError) -> bool {
    match e {
        ProviderError::BadRequest { status, .. } if *status == 400 || *status == 422 => true,
        ProviderError::BadRequest { detail, .. }
        | ProviderError::Status { detail, .. }
        | ProviderError::NotFound { detail, .. } => {
            let d = detail.to_ascii_lowercase();
            [
                "image",
                "vision",
                "multimodal",
                "mmproj",
                "roles must alternate",
            ]
            .iter()
            .any(|w| d.contains(w))
        }
        _ => false,
    }
}

/// `2 s`, `0.5 s`.
fn secs_text(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_text_names_each_provider_once_there_are_several() {
        let a = Failure {
            provider: "openai:m".into(),
            error: ProviderError::Status {
                status: 500,
                detail: "boom".into(),
                retry_after_secs: None,
            },
        };
        assert_eq!(failures_text(std::slice::from_ref(&a)), a.error.to_string());
        let b = Failure {
            provider: "anthropic:c".into(),
            error: ProviderError::Timeout { host: "h".into() },
        };
        let t = failures_text(&[a, b]);
        assert!(
            t.starts_with("every provider failed (the primary and 1 fallback)"),
            "{t}"
        );
        assert!(
            t.contains("openai:m: the provider failed (HTTP 500: boom)"),
            "{t}"
        );
        assert!(
            t.contains("anthropic:c: the provider did not answer"),
            "{t}"
        );
        assert!(failures_text(&[]).contains("no provider"));
        let status = |detail: &str| ProviderError::Status {
            status: 500,
            detail: detail.into(),
            retry_after_secs: None,
        };
        assert!(refuses_images(&status(
            "image input is not supported - hint: if this is unexpected, you may need to provide the mmproj"
        )));
        assert!(refuses_images(&status(
            "Conversation roles must alternate user/assistant/user/assistant/..."
        )));
        assert!(!refuses_images(&status("out of memory")));
        assert_eq!(secs_text(Duration::from_secs(2)), "2 s");
        assert_eq!(secs_text(Duration::from_millis(1500)), "1.5 s");
    }
}
