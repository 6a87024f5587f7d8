//! The agent: one turn = user message in, tool rounds, final answer out, with every
//! message appended to SQLite as it happens (a tool round, the call with its results,
//! in one commit once its tools ran, so history never holds a call without its result).
//! [`Agent::answer_pending`] answers a session whose history already ends with what is
//! to be answered (a channel stored the message itself, or a crash cut a turn short).
//!
//! Runs on the executor thread; provider calls go to the worker threads. Many sessions
//! may run turns concurrently (interleaved at await points); each session runs one turn
//! at a time (each channel guarantees it, see `router`).
//!
//! # Bounds
//! At most `agent.max_tool_iterations` tool rounds per turn, then one last request without
//! tools forces a final answer. History sent per request: `agent.history_messages`.
//! Tool results: cut to `agent.max_tool_result_bytes`, then scrubbed
//! (`tools::output::scrub_capped`); the images a result shows a model that can see are
//! apart from that cap: at most `MAX_TOOL_IMAGES_PER_ROUND` per round, held (as spool
//! files) only until the next round's tools run or the turn ends. Provider retries, fallbacks and streaming: `chat`;
//! token budgets: `budget`; approvals and autonomy: `approval`.
//!
//! # Scrubbing
//! The final answer is scrubbed here, once, in [`Agent::finish`] (so every channel's
//! reply and the stored history are clean), and a streamed answer passes through
//! `scrub_sink::ScrubSink` before any channel sees it. What the model says around its
//! tool calls and the calls' arguments are scrubbed before they are stored
//! (`tools::output::scrub_json` keeps arguments valid JSON); the calls themselves run
//! with the arguments as given.
//!
//! # Threads
//! Executor thread: turns of many sessions interleave there at await points; model calls
//! run on the worker threads (`runtime::Workers`), a streamed answer's text comes back over
//! a bounded channel.

pub mod approval;
pub mod budget;
pub mod chat;
pub mod commands;
pub mod compact;
pub mod fit;
pub mod prompt;
pub mod router;
pub mod scrub_sink;
pub mod session;
pub mod streaming;
pub mod think;
pub mod toolcall;
pub mod untrusted;
pub mod workers;

use crate::chat::ChannelKind;
use crate::chat::media::ToolImage;
use crate::chat::{Message, Role, ToolCall, ToolSpec};
use crate::config::{Config, ToolMode};
use crate::limits::MAX_USER_MESSAGE_BYTES;
use crate::provider::retry::Backoff;
use crate::provider::{Provider, ProviderError};
use crate::runtime::Workers;
use crate::security::injection::{Finding, Layer};
use crate::security::scrub::scrub;
use crate::store::{Db, StoreError, audit};
use crate::text::cap_text;
use crate::time::now as now_secs;
use crate::tools::{CallContext, Tools};
use approval::Approvals;
use std::cell::{Cell, RefCell};
use std::fmt;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;
use streaming::StreamSink;

/// Said to the model on the last allowed round.
const LOOP_NOTE: &str = "\n\nYou called the same tool with the same arguments several times. Do not call tools now: answer the user with what you have.";
const FORCE_FINAL_NOTE: &str = "\n\nYou have used all tool rounds for this message. Do not call tools now: answer the user with what you have.";

/// Why a turn failed.
#[derive(Debug)]
pub enum AgentError {
    Provider(ProviderError),
    /// Every provider failed (primary first, then the fallbacks in order).
    Providers(Vec<chat::Failure>),
    /// A token budget is used up; the turn was refused before any request.
    Budget(budget::BudgetExceeded),
    Store(StoreError),
    Stopped,
}

impl fmt::Display for AgentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AgentError::Provider(e) => e.fmt(f),
            AgentError::Providers(list) => f.write_str(&chat::failures_text(list)),
            AgentError::Budget(b) => b.fmt(f),
            AgentError::Store(e) => e.fmt(f),
            AgentError::Stopped => f.write_str("yoctoclaw is shutting down"),
        }
    }
}

impl std::error::Error for AgentError {}

impl From<ProviderError> for AgentError {
    fn from(e: ProviderError) -> Self {
        AgentError::Provider(e)
    }
}

impl From<StoreError> for AgentError {
    fn from(e: StoreError) -> Self {
        AgentError::Store(e)
    }
}

/// Everything a turn needs. Built by the composition root (`app`), which hands the agent
/// its providers and tools; what other parts need (config, store, workers) they receive
/// from the root too, not through the agent.
pub struct Agent {
    /// The configuration in use (`config::Live`: a reload swaps it).
    cfg: crate::config::Live,
    /// The workspace folder (system prompt files, skills).
    workspace: PathBuf,
    db: Rc<Db>,
    /// Primary first, then fallbacks (a reload may replace them: [`Agent::reconfigure`]).
    providers: RefCell<Rc<[Arc<Provider>]>>,
    workers: Workers,
    /// One permit per worker thread: a model request's body is built once it holds one
    /// (`chat`), so turns waiting for a worker hold no body.
    model_calls: smol::lock::Semaphore,
    tools: Tools,
    /// Retry policy for provider calls.
    backoff: Backoff,
    /// Pending approvals, `/always` flags and the channels' askers.
    approvals: Approvals,
    /// The prompt's workspace part, re-read every few seconds.
    workspace_prompt: prompt::WorkspaceCache,
    /// Per provider: tokens per KiB of request body, calibrated from answers (`fit`).
    ratios: RefCell<Vec<u32>>,
    /// Percent of the fitting budget used: lowered once after the server said a fitted
    /// request did not fit (the estimate was low).
    fit_scale: Cell<u64>,
    /// Providers (by index) that refused a request with images: photos go to them as
    /// their placeholder text from then on.
    blind: RefCell<Vec<usize>>,
    /// Per provider: the server refused native tools, so tools go as text for the rest of
    /// the run (`provider.tool_mode`).
    tools_refused: RefCell<Vec<bool>>,
    /// Per provider: a streamed request with tools broke off before any text (what
    /// llama-cpp-python's function-calling format does when the model picks a tool), so
    /// requests with tools go unstreamed for the rest of the run.
    unstreamed_tools: RefCell<Vec<bool>>,
    /// Per provider: where its answers start, as they have shown (`think`); `None` until
    /// read from the store.
    think_starts: RefCell<Vec<Option<think::ThinkStart>>>,
    /// The last model request: when it ended and whether a provider answered (`chat`).
    last_provider: Cell<Option<(std::time::Instant, bool)>>,
    /// The injection screen for untrusted tool results (`untrusted`); `None` when
    /// `security.injection.enabled` is off (results are still fenced).
    screen: RefCell<Option<Rc<crate::security::injection::Screen>>>,
    /// The workers running now (`NAME@PARENT`), at most `agent.max_workers` (`workers`).
    running_workers: RefCell<Vec<String>>,
}

impl Agent {
    /// An agent over `providers` (primary first; at least one) and `tools`.
    pub fn new(
        cfg: impl Into<crate::config::Live>,
        workspace: PathBuf,
        db: Rc<Db>,
        providers: Vec<Arc<Provider>>,
        workers: Workers,
        tools: Tools,
    ) -> Agent {
        let cfg = cfg.into();
        let c = cfg.get();
        let approvals = Approvals::new(
            c.agent.max_sessions as usize,
            Approvals::timeout_from(c.agent.approval_timeout_secs),
        );
        let n = providers.len();
        let screen = untrusted::screen(&c.security.injection).map(Rc::new);
        Agent {
            cfg,
            workspace,
            db,
            providers: RefCell::new(providers.into()),
            model_calls: smol::lock::Semaphore::new(workers.threads()),
            workers,
            tools,
            backoff: Backoff::default(),
            approvals,
            workspace_prompt: prompt::WorkspaceCache::default(),
            ratios: RefCell::new(vec![fit::INITIAL_TOKENS_PER_KIB; n]),
            fit_scale: Cell::new(100),
            blind: RefCell::new(Vec::new()),
            tools_refused: RefCell::new(vec![false; n]),
            unstreamed_tools: RefCell::new(vec![false; n]),
            think_starts: RefCell::new(vec![None; n]),
            last_provider: Cell::new(None),
            screen: RefCell::new(screen),
            running_workers: RefCell::new(Vec::new()),
        }
    }

    /// The configuration in use now.
    fn cfg(&self) -> Rc<Config> {
        self.cfg.get()
    }

    /// The providers in use now, primary first.
    fn providers(&self) -> Rc<[Arc<Provider>]> {
        self.providers.borrow().clone()
    }

    /// After a reload swapped the configuration: the injection screen as it now says, the
    /// search backends' keys from the new `secrets.env`,
    /// and `providers` (when the chain changed) in place of the running ones, what was
    /// learned about the old ones (token ratios, refused tools or images, where answers
    /// start) forgotten. A turn already asking a provider finishes with it.
    pub fn reconfigure(
        &self,
        providers: Option<Vec<Arc<Provider>>>,
        search_keys: crate::tools::search::SearchKeys,
    ) {
        *self.tools.search_keys.borrow_mut() = search_keys;
        *self.screen.borrow_mut() = untrusted::screen(&self.cfg().security.injection).map(Rc::new);
        let Some(providers) = providers else {
            return;
        };
        let n = providers.len();
        *self.providers.borrow_mut() = providers.into();
        *self.ratios.borrow_mut() = vec![fit::INITIAL_TOKENS_PER_KIB; n];
        self.blind.borrow_mut().clear();
        *self.tools_refused.borrow_mut() = vec![false; n];
        *self.unstreamed_tools.borrow_mut() = vec![false; n];
        *self.think_starts.borrow_mut() = vec![None; n];
    }

    /// Whether answers stream as they are written (`provider.stream`): channels then show
    /// them growing.
    pub fn streams(&self) -> bool {
        self.cfg().provider.stream
    }

    /// Pending approvals: channels register their asker and pass `/yes` `/no` `/always`
    /// here (docs/DECISIONS.md 36).
    pub fn approvals(&self) -> &Approvals {
        &self.approvals
    }

    /// Run one turn and return the final answer.
    pub async fn run_turn(
        &self,
        session: &str,
        channel: ChannelKind,
        text: &str,
    ) -> Result<String, AgentError> {
        self.run_turn_streamed(session, channel, text, &mut streaming::NoSink)
            .await
    }

    /// Run one turn; `sink` sees the answer's visible text as it is written (streamed
    /// providers) or in one piece per request (others). The returned answer is the same
    /// as [`Agent::run_turn`] gives.
    pub async fn run_turn_streamed(
        &self,
        session: &str,
        channel: ChannelKind,
        text: &str,
        sink: &mut dyn StreamSink,
    ) -> Result<String, AgentError> {
        self.check_budget()?;
        let text = cap_text(text, MAX_USER_MESSAGE_BYTES);
        // Everything up to the final answer is committed without a disk sync; the
        // answer's own commit syncs it all (Db::deferred_sync).
        self.db.deferred_sync(|| {
            self.db.append_message(
                session,
                &Message::new(Role::User, text.as_str()),
                now_secs(),
            )
        })?;
        self.answer(session, channel, Some(&text), sink, None).await
    }

    /// Answer a session whose history already ends with what is to be answered: the
    /// user's message (a channel stored it, e.g. Telegram's collected messages), or the
    /// complete tool rounds of a turn interrupted by a crash. Otherwise like
    /// [`Agent::run_turn_streamed`].
    pub async fn answer_pending(
        &self,
        session: &str,
        channel: ChannelKind,
        sink: &mut dyn StreamSink,
    ) -> Result<String, AgentError> {
        self.check_budget()?;
        self.answer(session, channel, None, sink, None).await
    }

    fn check_budget(&self) -> Result<(), AgentError> {
        match budget::check(&self.db, &self.cfg().budget, now_secs())? {
            Ok(()) => Ok(()),
            Err(b) => Err(AgentError::Budget(b)),
        }
    }

    /// The turn from the stored history on; `text` is the user's message when known
    /// (else the newest one the user typed is read from history). A server that refuses
    /// tools switches them to text and the round is asked again; a request the server
    /// says does not fit is compacted and asked again once with a smaller budget.
    async fn answer(
        &self,
        session: &str,
        channel: ChannelKind,
        text: Option<&str>,
        sink: &mut dyn StreamSink,
        w: Option<&workers::Run>,
    ) -> Result<String, AgentError> {
        let mut retried_overflow = false;
        loop {
            match self.answer_once(session, channel, text, sink, w).await {
                Err(AgentError::Provider(ProviderError::ContextOverflow { .. }))
                    if !retried_overflow =>
                {
                    retried_overflow = true;
                    log::warn!(
                        "the model's context window was exceeded in {session}: compacting and asking again"
                    );
                    self.fit_scale.set(self.fit_scale.get().min(70));
                    compact::compact_now(self, session).await;
                }
                other => {
                    crate::metrics::turn(channel, other.is_ok());
                    return other;
                }
            }
        }
    }

    /// How tools reach the model now: `provider.tool_mode`, or text once the server
    /// refused native tools.
    fn tool_mode(&self) -> ToolMode {
        let mode = self.cfg().provider.tool_mode;
        let refused = self
            .tools_refused
            .borrow()
            .first()
            .copied()
            .unwrap_or(false);
        if mode == ToolMode::Native && refused {
            ToolMode::Text
        } else {
            mode
        }
    }

    async fn answer_once(
        &self,
        session: &str,
        channel: ChannelKind,
        text: Option<&str>,
        sink: &mut dyn StreamSink,
        w: Option<&workers::Run>,
    ) -> Result<String, AgentError> {
        let sink = &mut scrub_sink::ScrubSink::new(sink);
        compact::maybe_compact(self, session).await;
        let small = self
            .cfg()
            .provider
            .window()
            .is_some_and(|w| w <= fit::SMALL_WINDOW_TOKENS);
        let (base_system, mut history) = self.db.read_batch(|| -> Result<_, AgentError> {
            let limit = self.cfg().agent.history_messages as usize;
            let history = self.db.recent_messages(session, limit)?;
            let typed = history
                .iter()
                .rev()
                .find(|m| m.role == Role::User && !m.content.starts_with("<tool_result"));
            let text = text.or(typed.map(|m| m.content.as_str())).unwrap_or("");
            let system = match w {
                Some(w) => w.prompt(),
                None => self.system_prompt_sized(session, channel, text, small),
            };
            Ok((system, history))
        })?;
        // A worker's tools act for its parent's chat (approvals, send_message).
        let ctx = CallContext {
            session: w.map_or(session, |w| &w.parent).to_string(),
            channel,
        };
        let cfg = self.cfg();
        let a = &cfg.agent;
        let max_rounds = w.map_or(a.max_tool_iterations, |_| a.worker_max_turns) as usize;
        let mut mode = self.tool_mode();
        let mut all_specs = match mode {
            ToolMode::None => Vec::new(),
            _ => self.tools.specs(channel),
        };
        if let Some(w) = w {
            all_specs.retain(|t| w.refuses(&t.name).is_none());
        }
        if small {
            // A window this small has no room for a worker's own turn: no worker tools.
            all_specs.retain(|t| !crate::config::tool_rules::WORKER_TOOLS.contains(&&*t.name));
            all_specs = fit::small_specs(&all_specs);
        }
        let mut system = with_tools_text(&base_system, mode, &all_specs);
        let mut repeats = Repeats::default();
        let mut force_final = false;
        let mut final_note = FORCE_FINAL_NOTE;
        let mut asked_again_empty = false;
        let mut round = 0;
        // Untrusted results that were hits this turn (the answer says so once).
        let mut hits: Vec<untrusted::Hit> = Vec::new();
        while round <= max_rounds {
            let last = round == max_rounds || force_final;
            let native: &[ToolSpec] = if mode == ToolMode::Native {
                &all_specs
            } else {
                &[]
            };
            let asked = if last {
                let sys = format!("{system}{final_note}");
                self.chat(&sys, &history, &[], sink).await
            } else {
                self.chat(&system, &history, native, sink).await
            };
            let (mut reply, answered_by) = match asked {
                Err(AgentError::Provider(ProviderError::ToolsRefused { detail }))
                    if mode == ToolMode::Native && !last =>
                {
                    log::warn!(
                        "the server refused native tools ({detail}): describing them in the prompt for the rest of this run (provider.tool_mode text)"
                    );
                    if let Some(r) = self.tools_refused.borrow_mut().first_mut() {
                        *r = true;
                    }
                    self.db.deferred_sync(|| {
                        self.db
                            .set_state(TOOLS_REFUSED_KEY, &format!("{} {detail}", now_secs()))
                    })?;
                    mode = ToolMode::Text;
                    system = with_tools_text(&base_system, mode, &all_specs);
                    continue;
                }
                other => other?,
            };
            let start = self.think_start(answered_by);
            think::clean_reply(&mut reply, &|n| self.tools.is_tool(n), start);
            let (calls, text_mode) = if last || mode == ToolMode::None {
                (Vec::new(), false)
            } else if !reply.tool_calls.is_empty() {
                (reply.tool_calls.clone(), false)
            } else {
                let found = toolcall::extract(&reply.content, &|n| self.tools.is_tool(n));
                (found.calls, true)
            };
            // An empty answer with tools offered (a small model under llama-cpp-python's
            // function-calling grammar chose neither text nor a call): asked once more
            // without tools rather than shown as nothing.
            if calls.is_empty()
                && !last
                && !asked_again_empty
                && !native.is_empty()
                && reply.content.trim().is_empty()
            {
                log::info!(
                    "{session}: the model answered nothing with tools offered; asking again without them"
                );
                asked_again_empty = true;
                force_final = true;
                final_note = "";
                continue;
            }
            sink.round_end(!calls.is_empty());
            if calls.is_empty() {
                // The usage row and the answer in one commit, the turn's only disk sync.
                let notice = untrusted::notice(&hits);
                if let Some(n) = &notice {
                    // A streamed answer shows it too, so what was shown is the answer.
                    sink.text(&["\n\n", n].concat());
                }
                return self.db.write_batch(|| {
                    self.record_usage(session, answered_by, &reply);
                    self.finish(session, &reply.content, notice.as_deref())
                });
            }
            self.db
                .deferred_sync(|| self.record_usage(session, answered_by, &reply));
            let calls: Vec<ToolCall> = calls
                .into_iter()
                .take(crate::limits::MAX_TOOL_CALLS_PER_ANSWER)
                .collect();
            // The same call three times in a row: a small model in a loop. It gets one
            // last request without tools instead of a fourth run.
            if calls.iter().any(|c| repeats.seen(c)) {
                log::warn!(
                    "{session}: the model called {} with the same arguments {} times in a row; asking for a final answer",
                    calls[0].name,
                    MAX_SAME_CALLS
                );
                force_final = true;
                final_note = LOOP_NOTE;
                continue;
            }
            // A round is stored whole once its tools ran (one commit): a crash never
            // leaves a call without its result in history. What the model said and the
            // arguments it gave are stored (and sent back on every later request)
            // scrubbed; the calls run with their own arguments.
            let content = scrub(&reply.content);
            let mut said = Message::new(Role::Assistant, content.as_ref());
            let mut round_msgs = Vec::with_capacity(calls.len() + 1);
            let mut trail = Vec::with_capacity(calls.len());
            // The previous round's images were shown in the request just answered: their
            // files go now. This round's results may bring up to the round's bound.
            history.iter_mut().for_each(|m| m.images.clear());
            let mut room = self
                .sees()
                .then_some(crate::limits::MAX_TOOL_IMAGES_PER_ROUND);
            if text_mode {
                round_msgs.push(said);
                let mut results = String::new();
                let mut images = Vec::new();
                for call in &calls {
                    let (r, mut shown, entry) =
                        self.run_tool(call, &ctx, &mut room, &mut hits, w).await;
                    trail.push(entry);
                    results.push_str(&format!(
                        "<tool_result name=\"{}\">\n{}\n</tool_result>\n",
                        call.name, r
                    ));
                    images.append(&mut shown);
                }
                let mut m = Message::new(Role::User, results);
                m.images = images;
                round_msgs.push(m);
            } else {
                said.tool_calls = calls
                    .iter()
                    .map(|c| ToolCall {
                        arguments: crate::tools::output::scrub_json(&c.arguments),
                        ..c.clone()
                    })
                    .collect();
                round_msgs.push(said);
                for call in &calls {
                    let (r, images, entry) =
                        self.run_tool(call, &ctx, &mut room, &mut hits, w).await;
                    trail.push(entry);
                    let mut m = Message::new(Role::Tool, r);
                    m.tool_call_id = Some(call.id.clone());
                    m.images = images;
                    round_msgs.push(m);
                }
            }
            // The calls' audit rows go in the round's own commit (no sync of their own).
            self.db.deferred_sync(|| {
                self.db
                    .append_round(session, &round_msgs, &trail, now_secs())
            })?;
            history.append(&mut round_msgs);
            round += 1;
        }
        // The last round never returns tool calls, so this is not reached; answer anyway.
        self.finish(session, "", None)
    }

    /// The answer as stored and returned: cleaned of tool-call markup, scrubbed, and
    /// ended with `notice` (untrusted content this turn was a hit) when there is one.
    fn finish(
        &self,
        session: &str,
        content: &str,
        notice: Option<&str>,
    ) -> Result<String, AgentError> {
        let cleaned = toolcall::extract(content, &|n| self.tools.is_tool(n)).text;
        let mut answer = if cleaned.trim().is_empty() {
            "(I have no answer to that; try rephrasing.)".to_string()
        } else {
            scrub(&cleaned).into_owned()
        };
        if let Some(n) = notice {
            answer.push_str("\n\n");
            answer.push_str(n);
        }
        self.db.append_message(
            session,
            &Message::new(Role::Assistant, answer.as_str()),
            now_secs(),
        )?;
        Ok(answer)
    }

    /// Run one call: its result scrubbed and capped, the images it shows a model that
    /// can see (`room`: how many more this round may show, `None` when the model cannot
    /// see; lowered by those returned), and its audit trail row (stored with the round).
    /// An untrusted result (`untrusted::source`) is fenced and screened; a hit is pushed
    /// on `hits` and noted in the row (`blocked` when withheld).
    async fn run_tool(
        &self,
        call: &ToolCall,
        ctx: &CallContext,
        room: &mut Option<usize>,
        hits: &mut Vec<untrusted::Hit>,
        w: Option<&workers::Run>,
    ) -> (String, Vec<ToolImage>, audit::Entry) {
        // A worker's calls are logged and audited under its own session.
        let session = w.map_or(&ctx.session, |w| &w.session);
        log::info!("tool {} in {session}", call.name);
        let mut entry = audit::Entry::new(
            now_secs(),
            ctx.channel.as_str(),
            session,
            &call.name,
            &crate::tools::output::scrub_json(&call.arguments),
        );
        let refused = w.and_then(|w| w.refuses(&call.name));
        let authorized = match refused {
            Some(e) => Err((audit::Verdict::Denied, e)),
            None => self.authorize(call, ctx).await,
        };
        let result = match authorized {
            Ok(verdict) => {
                entry.verdict = verdict;
                let (name, args) = (&call.name, &call.arguments);
                let started = std::time::Instant::now();
                let r = if matches!(name.as_str(), "spawn_worker" | "delegate") {
                    self.run_worker(call, ctx)
                        .await
                        .map(|text| crate::tools::ToolOutput {
                            text,
                            images: Vec::new(),
                        })
                } else {
                    self.tools.call_seeing(name, args, ctx, *room).await
                };
                entry.ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
                r
            }
            Err((verdict, e)) => {
                entry.verdict = verdict;
                Err(e)
            }
        };
        let known = self.tools.is_tool(&call.name).then_some(call.name.as_str());
        crate::metrics::tool_call(known, crate::tools::outcome(&result));
        let ran = result.is_ok();
        let (out, mut images) = match result {
            Ok(o) => {
                entry.bytes = o.text.len() as u64;
                (o.text, o.images)
            }
            Err(e) => {
                log::info!("tool {} in {}: {e}", call.name, ctx.session);
                let out = format!("error: {e}");
                entry.set_error(&out);
                (out, Vec::new())
            }
        };
        if let Some(left) = room {
            images.truncate(*left);
            *left -= images.len();
        } else {
            images.clear();
        }
        let max = self.cfg().agent.max_tool_result_bytes as usize;
        let mcp = self.tools.mcp_tool(&call.name).is_some();
        let Some(source) = untrusted::source(&call.name, &call.arguments, mcp).filter(|_| ran)
        else {
            return (crate::tools::output::scrub_capped(&out, max), images, entry);
        };
        // Fenced after the cap (so the closing marker is never cut off), the cap lowered
        // by what the fence adds (so the fenced result stays within it).
        let max = max.saturating_sub(crate::security::injection::FENCE_RESERVE_BYTES);
        let out = crate::tools::output::scrub_capped(&out, max);
        let screen = self.screen.borrow().clone();
        let Some(screen) = screen else {
            return (
                crate::security::injection::fence(&source, &out, None),
                images,
                entry,
            );
        };
        let injection = self.cfg().security.injection.clone();
        let found = match (screen.verdict(&out), &injection.judge) {
            (Ok(hit), _) => Some(hit),
            // Layer 3: a borderline score is the judge's to call.
            (Err((score, what)), Some(j)) if score >= j.floor => self
                .judge(j, session, &source, &out)
                .await
                .filter(|&injected| injected)
                .map(|_| Finding {
                    layer: Layer::Judge,
                    what,
                    score,
                }),
            (Err(_), _) => None,
        };
        let action = injection.action;
        let (out, hit) = untrusted::wrap_found(action, &source, &ctx.session, &out, found);
        if let Some(hit) = hit {
            if action == crate::security::injection::Action::Withhold {
                images.clear();
                entry.block(&format!(
                    "withheld by the injection screen: {}",
                    hit.finding
                ));
            } else {
                // The model saw it, flagged: the call ran; the row says what was found.
                entry.set_error(&format!("flagged by the injection screen: {}", hit.finding));
            }
            hits.push(hit);
        }
        (out, images, entry)
    }

    /// Whether a provider of this process may be shown images now: `provider.vision`
    /// (or a fallback's) and not refused images since the start.
    fn sees(&self) -> bool {
        let blind = self.blind.borrow();
        let sees = |(i, p): (usize, &Arc<Provider>)| p.cfg.vision && !blind.contains(&i);
        self.providers().iter().enumerate().any(sees)
    }

    /// The system prompt for a turn answering `user_text`.
    pub fn system_prompt(&self, session: &str, channel: ChannelKind, user_text: &str) -> String {
        self.system_prompt_sized(session, channel, user_text, false)
    }

    /// The system prompt; `small` (a context window of `fit::SMALL_WINDOW_TOKENS` or
    /// less) leaves the skills index out.
    fn system_prompt_sized(
        &self,
        session: &str,
        channel: ChannelKind,
        user_text: &str,
        small: bool,
    ) -> String {
        let now_text = crate::time::clock::format_now(&self.cfg().agent.timezone);
        let memory =
            crate::memory::inject::section(&self.db, &self.cfg().memory, user_text, now_secs())
                .unwrap_or_else(|e| {
                    log::warn!("memory left out of the prompt: {e}");
                    None
                });
        let workspace_part = self.workspace_prompt.get(&self.workspace);
        let part = if small {
            workspace_part.split("## Skills\n").next().unwrap_or("")
        } else {
            &workspace_part
        };
        prompt::build(&prompt::PromptContext {
            workspace_part: part,
            session,
            channel,
            now_text: &now_text,
            memory: memory.as_deref(),
        })
    }
}

/// The `state` key recording that the server refused native tools (time and its words),
/// for `doctor`.
pub const TOOLS_REFUSED_KEY: &str = "provider.tools_refused";
/// The same call (tool and arguments) this many times in a row ends the tool rounds.
pub const MAX_SAME_CALLS: usize = 3;

/// Counts calls repeated with the same arguments, one after another.
#[derive(Default)]
struct Repeats {
    last: Option<(String, String)>,
    count: usize,
}

impl Repeats {
    /// Note `c`; true when it is the `MAX_SAME_CALLS`th same call in a row.
    fn seen(&mut self, c: &ToolCall) -> bool {
        let args = c.arguments.split_whitespace().collect::<String>();
        match &self.last {
            Some((n, a)) if *n == c.name && *a == args => self.count += 1,
            _ => {
                self.last = Some((c.name.clone(), args));
                self.count = 1;
            }
        }
        self.count >= MAX_SAME_CALLS
    }
}

/// The system prompt with the tools described in it, for `ToolMode::Text` (a model
/// without native tool calls writes `<tool_call>` blocks, which the turn reads).
fn with_tools_text(system: &str, mode: ToolMode, specs: &[ToolSpec]) -> String {
    if mode != ToolMode::Text || specs.is_empty() {
        return system.to_string();
    }
    let mut out = String::with_capacity(system.len() + specs.len() * 200);
    out.push_str(system);
    out.push_str(
        "\n## Tools\nTo use a tool, answer with only this, then wait for its result:\n<tool_call>{\"name\": \"TOOL\", \"arguments\": {…}}</tool_call>\n",
    );
    for t in specs {
        out.push_str("- ");
        out.push_str(&t.name);
        out.push_str(": ");
        out.push_str(&t.description);
        out.push_str(" Arguments: ");
        out.push_str(&t.parameters);
        out.push('\n');
    }
    out
}
