//! The counters behind `GET /metrics`, and [`render`]: their text in the Prometheus text
//! exposition format 0.0.4 (`Content-Type: text/plain; version=0.0.4`).
//!
//! Counting is one call where the thing happens, and costs one or two relaxed atomic
//! adds: nothing is locked, built or allocated per event (a tool's or a provider's name
//! is copied once, the first time it is counted). Nobody scraping costs nothing more:
//! the text is made only by [`render`].
//!
//! # Families
//! - `yoctoclaw_build_info{version,target}` 1; `yoctoclaw_uptime_seconds` (since the
//!   gateway started, [`start`]); `process_resident_memory_bytes` and
//!   `yoctoclaw_resident_memory_peak_bytes` (VmRSS, VmHWM); `yoctoclaw_open_sessions`;
//!   `yoctoclaw_queue_depth`. The last four come from the caller ([`Gauges`]).
//! - `yoctoclaw_messages_received_total{channel}`: messages from people the assistant
//!   took (Telegram: from an allowed user; serial: a non-empty line; http: a completion
//!   request with a usable session);
//!   `yoctoclaw_messages_sent_total{channel}`: texts and files the channel delivered (a
//!   Telegram reply split in parts is one, a notice such as the busy reply is one, an
//!   API answer is one once given whole or its stream ended; heartbeat and cron results
//!   count under the channel they went to).
//! - `yoctoclaw_turns_total{channel,outcome}`: turns the agent ran, `ok` or `error`
//!   (a turn refused by a used-up budget never ran).
//! - `yoctoclaw_tool_calls_total{tool,outcome}`: `ok`, `error` (bad arguments, the tool
//!   failed: an MCP call that timed out among them; `exec` reports a command's exit code
//!   or timeout in its result, an `ok` call), `denied` (a deny list, autonomy, the user
//!   said no), `unknown` (no such tool: counted under `tool="other"`, so a name a model
//!   made up is never a label).
//! - `yoctoclaw_provider_requests_total{provider}`, `yoctoclaw_provider_errors_total`,
//!   the histogram `yoctoclaw_provider_request_duration_seconds` (each HTTP exchange
//!   with the model, a retry is one more, a failure included, timed on the worker) and
//!   `yoctoclaw_provider_tokens_total{provider,type="input"|"output"}` (what the usage
//!   table records: the server's count, or the estimate when it gave none). `provider`
//!   is `kind:model` (`openai:gpt-4o-mini`), never a URL or a key.
//! - `yoctoclaw_cron_runs_total{outcome}`: cron jobs run and delivered (`ok`) or not.
//!
//! # Channels
//! `telegram`, `serial` and `http` take messages from people; `heartbeat` and `cron`
//! start turns of their own and have no messages (what they send is counted under the
//! channel it goes to). The terminal (`yoctoclaw agent`) is a process of its own that
//! nobody scrapes: it is not counted. Every channel's series are shown from the start,
//! at 0, so a rate works from the first scrape.
//!
//! # Bounds
//! Statics of fixed size (about 10 KiB, all zeroed: no file space, and pages never
//! touched are never resident): the channels and outcomes are fixed lists; tool names take at most
//! `METRICS_MAX_TOOLS` slots and provider labels `METRICS_MAX_PROVIDERS`, and what comes
//! after is counted under `other`. A slot, once taken, is kept for the process's life.
//!
//! # Threads
//! Any thread. Provider requests are counted on the worker threads, Telegram deliveries
//! on the sender thread, everything else on the executor; [`render`] runs wherever the
//! route does. Each counter is read once per render: a scrape during a turn may show a
//! request whose tokens come in the next one.

use crate::chat::ChannelKind;
use crate::limits::{METRICS_MAX_PROVIDERS, METRICS_MAX_TOOLS};
use std::fmt::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

/// The channels counted, as labelled: the first `MESSAGE_CHANNELS` take messages from
/// people, the rest only start turns.
pub const CHANNELS: [&str; 5] = ["telegram", "serial", "http", "heartbeat", "cron"];
const MESSAGE_CHANNELS: usize = 3;

/// Upper bounds of the provider latency buckets, in milliseconds (a board's local model
/// may take minutes; a cloud model a few seconds).
pub const LATENCY_BUCKETS_MS: [u64; 10] = [
    500, 1_000, 2_000, 5_000, 10_000, 20_000, 30_000, 60_000, 120_000, 300_000,
];

/// How a tool call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolOutcome {
    Ok,
    /// Bad arguments, or the tool ran and failed.
    Error,
    /// Refused: a deny list, autonomy, the user said no.
    Denied,
    /// No such tool.
    Unknown,
}

const TOOL_OUTCOMES: [&str; 4] = ["ok", "error", "denied", "unknown"];
const OUTCOMES: [&str; 2] = ["ok", "error"];

// A provider's counters: the latency buckets (each its own count; the last one is above
// the largest bound), then the rest.
const P_BUCKETS: usize = LATENCY_BUCKETS_MS.len() + 1;
const P_SUM_MICROS: usize = P_BUCKETS;
const P_ERRORS: usize = P_BUCKETS + 1;
const P_TOKENS_IN: usize = P_BUCKETS + 2;
const P_TOKENS_OUT: usize = P_BUCKETS + 3;
const P_FIELDS: usize = P_BUCKETS + 4;

/// `K` counters for each of at most `N` names, then for `other`: the bounded label set of
/// a family whose label values are only known at run time. The names are behind a lock
/// (taken to find a name's slot: once per provider, once per tool call; and to render),
/// the counters are not. All of it starts zeroed, so a static table costs no file space.
pub struct Table<const N: usize, const K: usize> {
    names: Mutex<[Option<Box<str>>; N]>,
    counts: [[AtomicU64; K]; N],
    other: [AtomicU64; K],
}

impl<const N: usize, const K: usize> Default for Table<N, K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize, const K: usize> Table<N, K> {
    pub const fn new() -> Self {
        Table {
            names: Mutex::new([const { None }; N]),
            counts: [const { [const { AtomicU64::new(0) }; K] }; N],
            other: [const { AtomicU64::new(0) }; K],
        }
    }

    /// The slot of `name`, taking the first free one the first time; `N` (`other`) once
    /// all are taken.
    pub fn slot(&self, name: &str) -> usize {
        let mut names = self.names.lock().unwrap_or_else(PoisonError::into_inner);
        for (i, s) in names.iter_mut().enumerate() {
            match s {
                Some(n) if **n == *name => return i,
                Some(_) => {}
                None => {
                    *s = Some(name.into());
                    return i;
                }
            }
        }
        N
    }

    fn counters(&self, slot: usize) -> &[AtomicU64; K] {
        self.counts.get(slot).unwrap_or(&self.other)
    }

    /// Add `n` to counter `k` of `slot` (`N` or more: `other`).
    pub fn add(&self, slot: usize, k: usize, n: u64) {
        if let Some(c) = self.counters(slot).get(k) {
            c.fetch_add(n, Relaxed);
        }
    }

    /// Counter `k` of `slot`.
    pub fn get(&self, slot: usize, k: usize) -> u64 {
        self.counters(slot).get(k).map_or(0, |c| c.load(Relaxed))
    }

    /// The labels to show and their slots: the named slots in order, then `other` when
    /// anything was counted there.
    fn labels(&self) -> Vec<(String, usize)> {
        let other = (0..K).any(|k| self.get(N, k) > 0);
        let names = self.names.lock().unwrap_or_else(PoisonError::into_inner);
        labels_of(&names[..], other.then_some(N))
    }
}

/// [`Table::labels`], the same code for every table.
fn labels_of(names: &[Option<Box<str>>], other: Option<usize>) -> Vec<(String, usize)> {
    let named = names.iter().map_while(|n| n.as_deref()).map(str::to_string);
    let other = other.map(|slot| ("other".to_string(), slot));
    named.zip(0..).chain(other).collect()
}

/// Every counter of a process (one static, [`counters`]; tests make their own).
pub struct Registry {
    received: [AtomicU64; MESSAGE_CHANNELS],
    sent: [AtomicU64; MESSAGE_CHANNELS],
    turns: [[AtomicU64; 2]; CHANNELS.len()],
    cron_runs: [AtomicU64; 2],
    tools: Table<METRICS_MAX_TOOLS, 4>,
    providers: Table<METRICS_MAX_PROVIDERS, P_FIELDS>,
}

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}

/// Where `c` is in [`CHANNELS`] (`None`: the terminal, not counted).
fn channel(c: ChannelKind) -> Option<usize> {
    let name = c.as_str();
    CHANNELS.iter().position(|n| *n == name)
}

fn bump(list: &[AtomicU64], i: Option<usize>) {
    if let Some(c) = i.and_then(|i| list.get(i)) {
        c.fetch_add(1, Relaxed);
    }
}

impl Registry {
    pub const fn new() -> Registry {
        Registry {
            received: [const { AtomicU64::new(0) }; MESSAGE_CHANNELS],
            sent: [const { AtomicU64::new(0) }; MESSAGE_CHANNELS],
            turns: [const { [const { AtomicU64::new(0) }; 2] }; CHANNELS.len()],
            cron_runs: [const { AtomicU64::new(0) }; 2],
            tools: Table::new(),
            providers: Table::new(),
        }
    }

    pub fn message_in(&self, c: ChannelKind) {
        bump(&self.received, channel(c));
    }

    pub fn message_out(&self, c: ChannelKind) {
        bump(&self.sent, channel(c));
    }

    pub fn turn(&self, c: ChannelKind, ok: bool) {
        if let Some(i) = channel(c) {
            bump(&self.turns[i], Some(usize::from(!ok)));
        }
    }

    pub fn cron_run(&self, ok: bool) {
        bump(&self.cron_runs, Some(usize::from(!ok)));
    }

    /// A tool call: `tool` is its name when it is a tool (`None`, or an `Unknown`
    /// outcome: counted under `other`).
    pub fn tool_call(&self, tool: Option<&str>, outcome: ToolOutcome) {
        let slot = match tool {
            Some(name) if outcome != ToolOutcome::Unknown => self.tools.slot(name),
            _ => METRICS_MAX_TOOLS,
        };
        self.tools.add(slot, outcome as usize, 1);
    }

    /// The slot of provider `label` (`kind:model`), for [`Registry::provider_request`]
    /// and [`Registry::tokens`]; taking it makes the provider's series show, at 0.
    pub fn provider_slot(&self, label: &str) -> usize {
        self.providers.slot(label)
    }

    /// One HTTP exchange with a provider, `took` from sending to its outcome.
    pub fn provider_request(&self, slot: usize, took: Duration, ok: bool) {
        let ms = u64::try_from(took.as_millis()).unwrap_or(u64::MAX);
        let bucket = LATENCY_BUCKETS_MS
            .iter()
            .position(|&b| ms <= b)
            .unwrap_or(LATENCY_BUCKETS_MS.len());
        let p = &self.providers;
        p.add(slot, bucket, 1);
        let micros = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        p.add(slot, P_SUM_MICROS, micros);
        if !ok {
            p.add(slot, P_ERRORS, 1);
        }
    }

    /// Tokens a provider's answer used (as recorded in the usage table).
    pub fn tokens(&self, slot: usize, input: u64, output: u64) {
        self.providers.add(slot, P_TOKENS_IN, input);
        self.providers.add(slot, P_TOKENS_OUT, output);
    }

    /// Append every family to `out`, the process's gauges from `g`, `uptime` since the
    /// start.
    pub fn render(&self, out: &mut String, g: &Gauges, uptime: Duration) {
        family(out, "yoctoclaw_build_info", "gauge", "The running build.");
        let build = [
            ("version", env!("CARGO_PKG_VERSION")),
            ("target", env!("YOCTOCLAW_TARGET")),
        ];
        sample(out, "yoctoclaw_build_info", &build, &1);
        let up = u64::try_from(uptime.as_micros()).unwrap_or(u64::MAX);
        gauge(
            out,
            "yoctoclaw_uptime_seconds",
            "Seconds since the gateway started.",
            &Secs(up),
        );
        if let Some(b) = g.rss_bytes {
            let help = "Resident memory of the process (VmRSS).";
            gauge(out, "process_resident_memory_bytes", help, &b);
        }
        if let Some(b) = g.peak_rss_bytes {
            let help = "Peak resident memory of the process (VmHWM).";
            gauge(out, "yoctoclaw_resident_memory_peak_bytes", help, &b);
        }
        let help = "Sessions with a turn running now.";
        gauge(out, "yoctoclaw_open_sessions", help, &g.open_sessions);
        let help = "Messages received and waiting for their turn.";
        gauge(out, "yoctoclaw_queue_depth", help, &g.queue_depth);

        for (name, list, help) in [
            (
                "yoctoclaw_messages_received_total",
                &self.received,
                "Messages from people taken by each channel.",
            ),
            (
                "yoctoclaw_messages_sent_total",
                &self.sent,
                "Texts and files delivered by each channel.",
            ),
        ] {
            family(out, name, "counter", help);
            for (ch, c) in CHANNELS.iter().zip(list) {
                sample(out, name, &[("channel", ch)], &c.load(Relaxed));
            }
        }
        let name = "yoctoclaw_turns_total";
        family(out, name, "counter", "Turns the agent ran, by channel.");
        for (ch, c) in CHANNELS.iter().zip(&self.turns) {
            for (o, v) in OUTCOMES.iter().zip(c) {
                let labels = [("channel", *ch), ("outcome", *o)];
                sample(out, name, &labels, &v.load(Relaxed));
            }
        }
        let name = "yoctoclaw_tool_calls_total";
        family(out, name, "counter", "Tool calls, by tool and outcome.");
        for (tool, slot) in self.tools.labels() {
            for (k, o) in TOOL_OUTCOMES.iter().enumerate() {
                let v = self.tools.get(slot, k);
                sample(out, name, &[("tool", &tool), ("outcome", o)], &v);
            }
        }
        let name = "yoctoclaw_cron_runs_total";
        family(out, name, "counter", "Cron jobs run, by outcome.");
        for (o, v) in OUTCOMES.iter().zip(&self.cron_runs) {
            sample(out, name, &[("outcome", o)], &v.load(Relaxed));
        }
        self.render_providers(out);
    }

    fn render_providers(&self, out: &mut String) {
        let p = &self.providers;
        let rows: Vec<(String, [u64; P_FIELDS])> = p
            .labels()
            .into_iter()
            .map(|(name, slot)| (name, std::array::from_fn(|k| p.get(slot, k))))
            .collect();
        let requests = |c: &[u64; P_FIELDS]| c[..P_BUCKETS].iter().sum::<u64>();
        let name = "yoctoclaw_provider_requests_total";
        family(out, name, "counter", "Requests to each provider.");
        for (p, c) in &rows {
            sample(out, name, &[("provider", p)], &requests(c));
        }
        let name = "yoctoclaw_provider_errors_total";
        family(
            out,
            name,
            "counter",
            "Requests to each provider that failed.",
        );
        for (p, c) in &rows {
            sample(out, name, &[("provider", p)], &c[P_ERRORS]);
        }
        let name = "yoctoclaw_provider_tokens_total";
        family(out, name, "counter", "Tokens used, by provider and type.");
        for (p, c) in &rows {
            for (t, k) in [("input", P_TOKENS_IN), ("output", P_TOKENS_OUT)] {
                sample(out, name, &[("provider", p), ("type", t)], &c[k]);
            }
        }
        let name = "yoctoclaw_provider_request_duration_seconds";
        let help = "Time from sending a request to its outcome.";
        family(out, name, "histogram", help);
        let bucket = "yoctoclaw_provider_request_duration_seconds_bucket";
        for (p, c) in &rows {
            let mut total = 0;
            for (i, ms) in LATENCY_BUCKETS_MS.iter().enumerate() {
                total += c[i];
                let le = Secs(ms * 1000).to_string();
                sample(out, bucket, &[("provider", p), ("le", &le)], &total);
            }
            total += c[P_BUCKETS - 1];
            sample(out, bucket, &[("provider", p), ("le", "+Inf")], &total);
            let sum = Secs(c[P_SUM_MICROS]);
            sample(out, &format!("{name}_sum"), &[("provider", p)], &sum);
            sample(out, &format!("{name}_count"), &[("provider", p)], &total);
        }
    }
}

/// What only the caller knows, read when the scrape comes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Gauges {
    /// Sessions with a turn running now.
    pub open_sessions: u64,
    /// Messages received and waiting for their turn.
    pub queue_depth: u64,
    /// VmRSS; `None` (not shown) when it cannot be read.
    pub rss_bytes: Option<u64>,
    /// VmHWM.
    pub peak_rss_bytes: Option<u64>,
}

static COUNTERS: Registry = Registry::new();
static STARTED: OnceLock<Instant> = OnceLock::new();

/// The process's counters.
pub fn counters() -> &'static Registry {
    &COUNTERS
}

/// The gateway started now (the uptime counts from here; later calls change nothing).
pub fn start() {
    STARTED.get_or_init(Instant::now);
}

/// Append the process's metrics to `out`, in the Prometheus text exposition format
/// 0.0.4; `g` carries what only the caller knows. What `GET /metrics` answers, with
/// `Content-Type: text/plain; version=0.0.4; charset=utf-8`.
pub fn render(out: &mut String, g: &Gauges) {
    let uptime = STARTED.get().map(Instant::elapsed).unwrap_or_default();
    COUNTERS.render(out, g, uptime);
}

/// A message from a person, taken by channel `c`.
pub fn message_in(c: ChannelKind) {
    COUNTERS.message_in(c);
}

/// A text or file delivered by channel `c`.
pub fn message_out(c: ChannelKind) {
    COUNTERS.message_out(c);
}

/// A turn on channel `c` ended.
pub fn turn(c: ChannelKind, ok: bool) {
    COUNTERS.turn(c, ok);
}

/// A cron job ran (`ok`: its result was delivered).
pub fn cron_run(ok: bool) {
    COUNTERS.cron_run(ok);
}

/// A tool call ended (see [`Registry::tool_call`]).
pub fn tool_call(tool: Option<&str>, outcome: ToolOutcome) {
    COUNTERS.tool_call(tool, outcome);
}

/// The slot of provider `label` (`kind:model`), taken once when the provider is built.
pub fn provider_slot(label: &str) -> usize {
    COUNTERS.provider_slot(label)
}

/// One HTTP exchange with provider `slot`, begun at `started`.
pub fn provider_request(slot: usize, started: Instant, ok: bool) {
    COUNTERS.provider_request(slot, started.elapsed(), ok);
}

/// Tokens an answer of provider `slot` used.
pub fn tokens(slot: usize, input: u64, output: u64) {
    COUNTERS.tokens(slot, input, output);
}

/// `# HELP` and `# TYPE` of a family.
fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = write!(out, "# HELP {name} {help}\n# TYPE {name} {kind}\n");
}

/// A family of one unlabelled gauge.
fn gauge(out: &mut String, name: &str, help: &str, value: &dyn fmt::Display) {
    family(out, name, "gauge", help);
    sample(out, name, &[], value);
}

/// One line: `name{label="value",…} value`.
fn sample(out: &mut String, name: &str, labels: &[(&str, &str)], value: &dyn fmt::Display) {
    out.push_str(name);
    for (i, (k, v)) in labels.iter().enumerate() {
        out.push(if i == 0 { '{' } else { ',' });
        out.push_str(k);
        out.push_str("=\"");
        escape_label(out, v);
        out.push('"');
    }
    if !labels.is_empty() {
        out.push('}');
    }
    let _ = writeln!(out, " {value}");
}

/// A label value as the format writes it: backslash, double quote and newline escaped.
pub fn escape_label(out: &mut String, v: &str) {
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

/// Microseconds written as seconds, with no trailing zeros (`0.5`, `2`, `1.000001`).
struct Secs(u64);

impl fmt::Display for Secs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (s, us) = (self.0 / 1_000_000, self.0 % 1_000_000);
        if us == 0 {
            return write!(f, "{s}");
        }
        let mut frac = us;
        let mut width = 6;
        while frac % 10 == 0 {
            frac /= 10;
            width -= 1;
        }
        write!(f, "{s}.{frac:0width$}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(r: &Registry, g: &Gauges) -> String {
        let mut out = String::new();
        r.render(&mut out, g, Duration::from_millis(1500));
        out
    }

    /// The value of the sample line that starts with `head` (`name{labels}`).
    fn value(text: &str, head: &str) -> Option<String> {
        text.lines()
            .find_map(|l| l.strip_prefix(head)?.strip_prefix(' '))
            .map(str::to_string)
    }

    #[test]
    fn label_values_are_escaped_as_the_format_says() {
        let mut out = String::new();
        escape_label(&mut out, "a\\b\"c\nd é");
        assert_eq!(out, r#"a\\b\"c\nd é"#);
        let r = Registry::new();
        r.tool_call(Some("srv__say \"hi\"\n\\"), ToolOutcome::Ok);
        let t = text(&r, &Gauges::default());
        let line = r#"yoctoclaw_tool_calls_total{tool="srv__say \"hi\"\n\\",outcome="ok"} 1"#;
        assert!(t.lines().any(|l| l == line), "{t}");
        // Every line is a comment or a sample: no raw newline got out of a label.
        for l in t.lines() {
            assert!(
                l.starts_with("# ") || l.starts_with("yoctoclaw_") || l.starts_with("process_"),
                "{l}"
            );
        }
    }

    #[test]
    fn histogram_buckets_are_cumulative_with_sum_and_count() {
        let r = Registry::new();
        let p = r.provider_slot("openai:m");
        for ms in [100, 500, 501, 1_500, 3_000, 400_000] {
            r.provider_request(p, Duration::from_millis(ms), ms != 3_000);
        }
        let t = text(&r, &Gauges::default());
        let b = |le: &str| {
            let head = format!(
                "yoctoclaw_provider_request_duration_seconds_bucket{{provider=\"openai:m\",le=\"{le}\"}}"
            );
            value(&t, &head).unwrap_or_else(|| panic!("no {head} in\n{t}"))
        };
        // `le` is "less than or equal": 500 ms is in the 0.5 bucket, 501 ms is not.
        assert_eq!(b("0.5"), "2");
        assert_eq!(b("1"), "3");
        assert_eq!(b("2"), "4");
        assert_eq!(b("5"), "5");
        assert_eq!(b("300"), "5");
        assert_eq!(b("+Inf"), "6");
        let labels = "{provider=\"openai:m\"}";
        let v = |name: &str| value(&t, &format!("{name}{labels}")).unwrap();
        assert_eq!(v("yoctoclaw_provider_request_duration_seconds_count"), "6");
        assert_eq!(
            v("yoctoclaw_provider_request_duration_seconds_sum"),
            "405.601"
        );
        assert_eq!(v("yoctoclaw_provider_requests_total"), "6");
        assert_eq!(v("yoctoclaw_provider_errors_total"), "1");
        // Every bound, in order, then +Inf.
        let les: Vec<&str> = t
            .lines()
            .filter(|l| l.contains("_bucket{"))
            .filter_map(|l| l.split("le=\"").nth(1)?.split('"').next())
            .collect();
        let want: Vec<String> = LATENCY_BUCKETS_MS
            .iter()
            .map(|ms| Secs(ms * 1000).to_string())
            .chain(["+Inf".to_string()])
            .collect();
        assert_eq!(les, want);
    }

    #[test]
    fn tables_overflow_to_other_and_unknown_tools_are_never_labels() {
        let t: Table<2, 1> = Table::new();
        assert_eq!(t.slot("a"), 0);
        assert_eq!(t.slot("b"), 1);
        assert_eq!(t.slot("c"), 2);
        assert_eq!(t.slot("a"), 0);
        t.add(t.slot("c"), 0, 5);
        t.add(t.slot("d"), 0, 1);
        t.add(t.slot("b"), 0, 2);
        assert_eq!(t.get(2, 0), 6);
        let rows: Vec<(String, u64)> = t
            .labels()
            .into_iter()
            .map(|(n, slot)| (n, t.get(slot, 0)))
            .collect();
        let want = [("a", 0), ("b", 2), ("other", 6)];
        assert_eq!(rows, want.map(|(n, c)| (n.to_string(), c)));
        // `other` shows only once something is counted there.
        let quiet: Table<2, 1> = Table::new();
        quiet.slot("a");
        assert_eq!(quiet.labels(), vec![("a".to_string(), 0)]);

        let r = Registry::new();
        for i in 0..METRICS_MAX_TOOLS + 3 {
            r.tool_call(Some(&format!("srv__t{i}")), ToolOutcome::Error);
        }
        r.tool_call(Some("made_up"), ToolOutcome::Unknown);
        r.tool_call(None, ToolOutcome::Denied);
        let out = text(&r, &Gauges::default());
        let head = "yoctoclaw_tool_calls_total{tool=\"other\",outcome=";
        assert_eq!(
            value(&out, &format!("{head}\"error\"}}")).as_deref(),
            Some("3")
        );
        assert_eq!(
            value(&out, &format!("{head}\"unknown\"}}")).as_deref(),
            Some("1")
        );
        assert_eq!(
            value(&out, &format!("{head}\"denied\"}}")).as_deref(),
            Some("1")
        );
        assert!(!out.contains("made_up"));
        let tools: std::collections::BTreeSet<&str> = out
            .lines()
            .filter_map(|l| l.strip_prefix("yoctoclaw_tool_calls_total{tool=\""))
            .filter_map(|l| l.split('"').next())
            .collect();
        assert_eq!(tools.len(), METRICS_MAX_TOOLS + 1, "the bound, plus other");
    }

    #[test]
    fn threads_racing_for_slots_never_share_or_split_a_name() {
        let t: std::sync::Arc<Table<8, 1>> = std::sync::Arc::new(Table::new());
        let threads: Vec<_> = (0..4)
            .map(|k| {
                let t = t.clone();
                std::thread::spawn(move || {
                    let mut rng = crate::testkit::XorShift(0x9e37_79b9 + k);
                    for _ in 0..2000 {
                        let name = format!("n{}", rng.below(10));
                        t.add(t.slot(&name), 0, 1);
                    }
                })
            })
            .collect();
        for th in threads {
            th.join().unwrap();
        }
        let rows = t.labels();
        let named: std::collections::BTreeSet<&str> = rows
            .iter()
            .map(|(n, _)| n.as_str())
            .filter(|n| *n != "other")
            .collect();
        assert_eq!(named.len(), 8, "{rows:?}");
        let total: u64 = rows.iter().map(|&(_, slot)| t.get(slot, 0)).sum();
        assert_eq!(total, 8000);
    }

    #[test]
    fn every_family_has_help_and_type_and_counters_end_in_total() {
        let r = Registry::new();
        r.message_in(ChannelKind::Telegram);
        r.message_out(ChannelKind::Telegram);
        r.message_in(ChannelKind::Terminal);
        r.turn(ChannelKind::Cron, false);
        r.cron_run(true);
        let p = r.provider_slot("anthropic:claude");
        r.tokens(p, 120, 30);
        r.tool_call(Some("read_file"), ToolOutcome::Ok);
        let g = Gauges {
            open_sessions: 2,
            queue_depth: 3,
            rss_bytes: Some(4096),
            peak_rss_bytes: Some(8192),
        };
        let t = text(&r, &g);
        let mut types = std::collections::BTreeSet::new();
        let mut help = std::collections::BTreeSet::new();
        // The family whose samples may come now (`# TYPE` opens it).
        let mut open: Option<(&str, &str)> = None;
        for l in t.lines() {
            if let Some(rest) = l.strip_prefix("# HELP ") {
                assert!(help.insert(rest.split(' ').next().unwrap()), "{l}");
            } else if let Some(rest) = l.strip_prefix("# TYPE ") {
                let (name, kind) = rest.split_once(' ').unwrap();
                assert!(help.contains(name), "TYPE before HELP: {l}");
                assert!(types.insert(name), "twice: {l}");
                assert_eq!(kind == "counter", name.ends_with("_total"), "{l}");
                open = Some((name, kind));
            } else {
                let (family, kind) = open.unwrap_or_else(|| panic!("no TYPE before {l}"));
                let name = l.split(['{', ' ']).next().unwrap();
                let part = name.strip_prefix(family).unwrap_or("?");
                let parts: &[&str] = if kind == "histogram" {
                    &["_bucket", "_sum", "_count"]
                } else {
                    &[""]
                };
                assert!(parts.contains(&part), "{l} is not in {family}");
            }
        }
        assert!(t.ends_with('\n'));
        let v = |h: &str| value(&t, h).unwrap_or_else(|| panic!("no {h} in\n{t}"));
        assert_eq!(
            v("yoctoclaw_messages_received_total{channel=\"telegram\"}"),
            "1"
        );
        assert_eq!(
            v("yoctoclaw_messages_received_total{channel=\"http\"}"),
            "0"
        );
        assert_eq!(
            v("yoctoclaw_messages_sent_total{channel=\"telegram\"}"),
            "1"
        );
        assert_eq!(
            v("yoctoclaw_turns_total{channel=\"cron\",outcome=\"error\"}"),
            "1"
        );
        assert_eq!(v("yoctoclaw_cron_runs_total{outcome=\"ok\"}"), "1");
        assert_eq!(
            v("yoctoclaw_provider_tokens_total{provider=\"anthropic:claude\",type=\"input\"}"),
            "120"
        );
        assert_eq!(
            v("yoctoclaw_provider_requests_total{provider=\"anthropic:claude\"}"),
            "0"
        );
        assert_eq!(v("yoctoclaw_uptime_seconds"), "1.5");
        assert_eq!(v("process_resident_memory_bytes"), "4096");
        assert_eq!(v("yoctoclaw_open_sessions"), "2");
        assert_eq!(v("yoctoclaw_queue_depth"), "3");
        let build = format!(
            "yoctoclaw_build_info{{version=\"{}\",target=\"{}\"}}",
            env!("CARGO_PKG_VERSION"),
            env!("YOCTOCLAW_TARGET")
        );
        assert_eq!(v(&build), "1");
        assert!(!t.contains("terminal"), "the terminal is not counted");
        // Unknown RSS: the families are left out, not shown as 0.
        let t = text(&r, &Gauges::default());
        assert!(!t.contains("resident_memory"), "{t}");
    }

    #[test]
    fn the_counters_fit_their_stated_size() {
        // The module doc says about 10 KiB (all of it zeroed: a static costs no file space).
        let size = std::mem::size_of::<Registry>();
        assert!((8 * 1024..=11 * 1024).contains(&size), "{size} B");
    }

    #[test]
    fn seconds_are_written_without_trailing_zeros() {
        for (us, s) in [
            (0, "0"),
            (500_000, "0.5"),
            (2_000_000, "2"),
            (1_000_001, "1.000001"),
            (405_601_000, "405.601"),
        ] {
            assert_eq!(Secs(us).to_string(), s);
        }
    }
}
