//! Every fixed bound of the program in one place, with its unit in its name.
//!
//! Config keys may override some of these; overrides are clamped to the ranges noted
//! beside them in `config`. Anything that can grow (queues, buffers, caches, tables,
//! bodies) has its bound here or in a config key.
//!
//! # Threads
//! Constants only.

/// Largest `config.json` we read; a bigger file is refused.
pub const MAX_CONFIG_BYTES: u64 = 256 * 1024;
/// Largest `secrets.env` we read.
pub const MAX_SECRETS_BYTES: u64 = 64 * 1024;
/// Largest workspace bootstrap file (SOUL.md …) put into the system prompt; the rest is cut.
pub const MAX_BOOTSTRAP_FILE_BYTES: usize = 16 * 1024;
/// Largest provider response body read into memory.
pub const MAX_PROVIDER_RESPONSE_BYTES: u64 = 4 * 1024 * 1024;
/// Largest request body we send a provider (system prompt + history + tools).
pub const MAX_PROVIDER_REQUEST_BYTES: usize = 2 * 1024 * 1024;
/// ureq's input buffer per connection and layer (ureq's default is 128 KiB): a response's
/// header block must fit in it (`HTTP_MAX_HEADER_BYTES`); bodies are read in pieces of it.
pub const HTTP_INPUT_BUFFER_BYTES: usize = 16 * 1024;
/// ureq's output buffer per connection and layer (ureq's default is 128 KiB): the request
/// head and the body go out in pieces of it. Each pooled connection keeps it (4 to 6 in a
/// gateway); 4 KiB instead of 16 is 12 KiB less per connection and layer, for a few more
/// writes per request (a 17 KB model request: 5 instead of 2).
pub const HTTP_OUTPUT_BUFFER_BYTES: usize = 4 * 1024;
/// Largest response header block accepted.
pub const HTTP_MAX_HEADER_BYTES: usize = 16 * 1024;
/// Idle pooled connections kept by one HTTP agent.
pub const HTTP_MAX_IDLE_CONNECTIONS: usize = 2;
/// TCP+TLS connect timeout for every outgoing request.
pub const HTTP_CONNECT_TIMEOUT_SECS: u64 = 10;
/// Default cap on one tool result before it enters history (config `agent.max_tool_result_bytes`).
pub const DEFAULT_TOOL_RESULT_BYTES: usize = 16 * 1024;
/// Largest file `read_file` reads; longer files are cut with a marker.
pub const MAX_READ_FILE_BYTES: u64 = 256 * 1024;
/// Most entries `list_dir` returns.
pub const MAX_LIST_DIR_ENTRIES: usize = 500;
/// Largest tool-call arguments string accepted from a model.
pub const MAX_TOOL_ARGS_BYTES: usize = 256 * 1024;
/// Most tool calls accepted from one model answer; the rest are ignored with a note.
pub const MAX_TOOL_CALLS_PER_ANSWER: usize = 8;
/// Largest user message accepted from any channel; longer input is cut.
pub const MAX_USER_MESSAGE_BYTES: usize = 32 * 1024;
/// Most history messages loaded into one request before compaction exists.
pub const DEFAULT_HISTORY_MESSAGES: usize = 40;
/// Inbound queue from all channel threads to the executor.
pub const INBOUND_QUEUE_LEN: usize = 64;
/// Jobs queued for the blocking worker threads.
pub const WORKER_QUEUE_LEN: usize = 32;
/// Blocking worker threads (HTTP calls, child processes).
pub const WORKER_THREADS: usize = 2;
/// Stack of every thread we start (ring/rustls handshakes fit comfortably).
pub const THREAD_STACK_BYTES: usize = 256 * 1024;
/// SQLite page cache per connection, in KiB (negative `cache_size` pragma).
pub const DB_CACHE_KIB: i64 = 256;
/// SQLite busy timeout.
pub const DB_BUSY_TIMEOUT_MS: u64 = 5_000;
/// Prepared statements cached per connection (24 since the Telegram inbox: with 16 its
/// statements pushed others out and ~90 more allocations per message re-prepared them).
pub const DB_STATEMENT_CACHE: usize = 24;
/// Largest skills index put into the system prompt.
pub const MAX_SKILLS_INDEX_BYTES: usize = 4 * 1024;
/// Most skills listed in the prompt.
pub const MAX_SKILLS: usize = 32;
/// Seconds the prompt's workspace part (bootstrap files, skills index) is reused before
/// the files are read again.
pub const PROMPT_FILES_TTL_SECS: u64 = 5;

// Provider retries, fallbacks and streaming (`provider::retry`, `provider::stream`).

/// Attempts per provider for a transient failure (429, 5xx, 529, network) before the
/// next fallback is tried.
pub const PROVIDER_ATTEMPTS: u32 = 3;
/// First backoff delay; each retry doubles it, with jitter (50–100 % of the value).
pub const RETRY_BASE_DELAY_MS: u64 = 1_000;
/// Longest single backoff delay.
pub const RETRY_MAX_DELAY_MS: u64 = 10_000;
/// Longest `Retry-After` we wait for; a provider asking for more is skipped for this
/// request (the next fallback is tried at once).
pub const RETRY_AFTER_MAX_SECS: u64 = 30;
/// No new attempt on one provider once this much time has passed since its first
/// attempt (requests and sleeps included).
pub const RETRY_BUDGET_SECS: u64 = 60;
/// Longest SSE line (and longest event data) accepted; a longer one is an error.
pub const MAX_SSE_LINE_BYTES: usize = 512 * 1024;
/// Bytes read from a streamed body per read call (a stack buffer on the worker thread).
pub const STREAM_READ_CHUNK_BYTES: usize = 4 * 1024;
/// Text deltas queued from the worker thread to the executor; the reader waits when full.
pub const STREAM_QUEUE_LEN: usize = 16;
/// Overall cap on one streamed request (the per-read stall guard is `provider.timeout_secs`).
pub const STREAM_MAX_SECS: u64 = 900;
/// Most distinct tool calls assembled from one streamed answer; further ones are dropped.
pub const MAX_STREAM_TOOL_CALLS: usize = 32;

// Tools and safety (`tools`, `agent::approval`).

/// Largest file `write_file` writes and `edit_file` edits (before and after the edit).
pub const MAX_WRITE_FILE_BYTES: usize = 256 * 1024;
/// Extra bytes kept beyond a cut before scrubbing, then dropped, so a secret cut in two
/// at the cap is still recognised whole (see `tools::output`).
pub const SCRUB_MARGIN_BYTES: usize = 1024;
/// Longest approval summary (the command, escaped as shown) a user is asked about: an
/// approval shows the whole of it, so a longer one is refused, never cut.
pub const MAX_APPROVAL_COMMAND_CHARS: usize = 2000;
/// Redirects `web_fetch` follows, each re-checked; one more is an error.
pub const MAX_FETCH_REDIRECTS: usize = 5;
/// Results `web_search` returns at most (`tools.web_search.max_results`, the call's
/// `max_results`).
pub const MAX_SEARCH_RESULTS: usize = 10;
/// Longest query `web_search` sends (Brave takes 400 characters, DuckDuckGo 499).
pub const MAX_SEARCH_QUERY_BYTES: usize = 400;
/// Bytes of a search backend's answer read; the rest is not read (a DuckDuckGo page is
/// 15-60 KB, a Brave answer of 10 web results about 30 KB).
pub const MAX_SEARCH_RESPONSE_BYTES: u64 = 512 * 1024;
/// After an `exec` command's shell exits, its output is read for at most this long
/// (processes it left behind are killed first).
pub const EXEC_DRAIN_AFTER_EXIT_MS: u64 = 1_000;
/// Bytes read from a file under /proc or /sys by `system_info`.
pub const MAX_SYSINFO_FILE_BYTES: u64 = 64 * 1024;
/// Thermal zones `system_info` reports.
pub const MAX_THERMAL_ZONES: usize = 16;

// Metrics (`metrics`, what `GET /metrics` shows).

/// Tool names counted each under a label of its own: the built-in tools and the most MCP
/// tools offered at once (128) fit, with room for tool lists that change. Calls of tools
/// past it are counted under `tool="other"`.
pub const METRICS_MAX_TOOLS: usize = 160;
/// Providers counted each under a label of their own (`kind:model`: the primary and its
/// fallbacks); more are counted under `provider="other"`.
pub const METRICS_MAX_PROVIDERS: usize = 8;

// MCP servers (`mcp`).

/// Largest JSON-RPC message taken from, or sent to, an MCP server (stdio line, HTTP body,
/// one event of an event stream); a larger one is an error.
pub const MCP_MAX_MESSAGE_BYTES: usize = 4 * 1024 * 1024;
/// Most JSON-RPC messages an MCP server may send in answer to one message over HTTP
/// (notifications and requests before the response); more is an error.
pub const MCP_MAX_MESSAGES_PER_SEND: usize = 256;
/// Largest total of the messages an MCP server sends in answer to one message over HTTP:
/// one full-size message and 1 MiB of notifications before it.
pub const MCP_MAX_ANSWER_BYTES: usize = MCP_MAX_MESSAGE_BYTES + 1024 * 1024;
/// Events of a legacy (HTTP+SSE) MCP server's stream queued between its reader thread and
/// the call waiting for them; the reader waits when it is full (and the server with it).
pub const MCP_SSE_QUEUE_LEN: usize = 4;
/// Bytes of an MCP stdio server's stderr logged per run of the server (the rest is read
/// and dropped, with one line saying so).
pub const MCP_STDERR_LOG_BYTES: usize = 32 * 1024;
/// Most notifications an MCP server may send in one second; more is a flood: the server
/// is stopped and restarted under the backoff.
pub const MCP_MAX_NOTIFICATIONS_PER_SEC: u32 = 200;
/// Most `tools/list` pages read from one server (each `nextCursor` one more).
pub const MCP_MAX_TOOL_PAGES: usize = 16;
/// Longest tool description kept from a server (cut at a character boundary).
pub const MCP_MAX_DESCRIPTION_BYTES: usize = 8 * 1024;
/// Longest tool input schema kept from a server (a longer one is replaced by an empty
/// object schema, with one log line).
pub const MCP_MAX_SCHEMA_BYTES: usize = 32 * 1024;
/// Responses to cancelled requests still recognised per server (a late answer to one of
/// these is dropped, not a protocol fault).
pub const MCP_CANCELLED_IDS: usize = 16;
/// Bytes of an MCP tool's description offered to the model (the rest cut, marked).
pub const MCP_OFFER_DESCRIPTION_BYTES: usize = 2048;
/// Bytes of an MCP tool's input schema offered to the model: a larger one loses its
/// descriptions, and if still larger is offered as `{"type":"object"}` (one log line).
pub const MCP_OFFER_SCHEMA_BYTES: usize = 8 * 1024;
/// Nesting of an MCP tool's input schema walked when cleaning it; a deeper schema is
/// offered as `{"type":"object"}` (one log line).
pub const MCP_MAX_SCHEMA_DEPTH: usize = 32;
/// Bytes of all MCP tools' names, descriptions and schemas offered in one request: the
/// tools past it are left out (one log line per tool-list change). Every request carries
/// them, and a board's model has a small window.
pub const MCP_MAX_OFFER_BYTES: usize = 64 * 1024;
/// Characters of a call's arguments shown when an MCP call is asked about.
pub const MCP_APPROVAL_ARGS_CHARS: usize = 300;

// Images of tool results (MCP `image` parts) shown to a model that can see.

/// Largest image of an MCP tool result shown to the model (decoded bytes); a larger one
/// is only its placeholder line, with the reason. Any screenshot a model makes use of
/// fits (Anthropic scales an image down past 1.15 megapixels anyway).
pub const MCP_MAX_IMAGE_BYTES: usize = 2 * 1024 * 1024;
/// Most images of one MCP tool result shown to the model (as photos of one message).
pub const MCP_MAX_IMAGES_PER_RESULT: usize = 4;
/// Most tool-result images shown in one request (one round of tool calls): with
/// `MCP_MAX_IMAGE_BYTES` each, at most 16 MiB in the spool and about 21 MiB of base64
/// in the body, under Anthropic's 32 MB request limit.
pub const MAX_TOOL_IMAGES_PER_ROUND: usize = 8;

// The gateway's HTTP server (`channels::http`); the rest of its bounds are `http.*` keys.

/// Largest request head (request line and headers); past it: 431, and the connection is
/// closed.
pub const HTTP_SERVER_MAX_HEAD_BYTES: usize = 16 * 1024;
/// Most header lines in one request head; more: 431.
pub const HTTP_SERVER_MAX_HEADERS: usize = 48;
/// Requests served on one kept-alive connection; the last answer closes it.
pub const HTTP_SERVER_MAX_REQUESTS_PER_CONN: usize = 100;
/// Seconds a kept-alive connection may wait for its next request's first byte.
pub const HTTP_SERVER_IDLE_SECS: u64 = 15;
/// Seconds one write of an answer may wait for the client to take it (a client that
/// stops reading is dropped).
pub const HTTP_SERVER_WRITE_TIMEOUT_SECS: u64 = 30;
/// After an answer given before the request was read whole (an error), the client's
/// bytes still arriving are read and dropped, up to this many...
pub const HTTP_SERVER_LINGER_BYTES: usize = 256 * 1024;
/// ...for at most this long, before the connection is closed: the client then reads the
/// answer instead of a reset.
pub const HTTP_SERVER_LINGER_MS: u64 = 1_000;
/// Longest chunk-size line of a chunked request body (its extensions included).
pub const HTTP_SERVER_MAX_CHUNK_LINE_BYTES: usize = 1024;
/// Connections past `http.max_connections` answered 503 at once (each for at most
/// `HTTP_SERVER_REFUSE_LINGER_MS`); more than that are closed without an answer.
pub const HTTP_SERVER_MAX_REFUSING: usize = 64;
/// How long the 503 of a connection past the cap lingers (reading what the client sends)
/// before the connection closes.
pub const HTTP_SERVER_REFUSE_LINGER_MS: u64 = 100;
/// Pause after a failed `accept` (no file descriptor left) before the next one.
pub const HTTP_SERVER_ACCEPT_PAUSE_MS: u64 = 100;
/// Request bodies held in RAM at once, in multiples of `http.max_body_kib`; past it a
/// request is answered 503 (busy) before its body is read.
pub const HTTP_BODIES_IN_RAM: usize = 2;
/// JSON values (containers and scalars) in one request body; more: 413. A value costs
/// about 50 bytes once parsed, so a body of tiny values cannot grow tenfold in RAM.
pub const HTTP_MAX_JSON_VALUES: usize = 10_000;
/// Client addresses the rate limiter tracks; a new one past it replaces the one seen
/// least recently (those idle for two minutes are dropped first).
pub const HTTP_RATE_TABLE_ENTRIES: usize = 256;
/// Turns of the HTTP API running at once (each session runs one at a time), besides
/// Telegram's `agent.max_sessions`.
pub const HTTP_MAX_RUNNING_TURNS: usize = 2;
/// Requests of the HTTP API waiting for their session's or a free turn; more: 429.
pub const HTTP_MAX_WAITING_TURNS: usize = 16;
/// Longest session key (`X-Session-Id` or the request's `user`).
pub const HTTP_MAX_SESSION_KEY_BYTES: usize = 64;
/// Seconds between keep-alive comments on a streamed answer while nothing is written
/// (tools running), so proxies and clients keep the connection.
pub const HTTP_SSE_PING_SECS: u64 = 15;

/// Bytes of a tool call's arguments the audit trail keeps (scrubbed first, then cut).
pub const MAX_AUDIT_ARGS_BYTES: usize = 1024;
/// Bytes of a tool call's error the audit trail keeps (its first line).
pub const MAX_AUDIT_ERROR_BYTES: usize = 240;
/// Bytes of a tool name the audit trail keeps.
pub const MAX_AUDIT_TOOL_BYTES: usize = 128;
/// Audit rows kept at most (the newest); `memory.audit_days` deletes older ones daily.
/// About 1.5 KiB each at worst: at most ~15 MB on disk, usually a tenth of that.
pub const MAX_AUDIT_ROWS: usize = 10_000;
/// Most rows `yoctoclaw audit` prints at once (`--limit`).
pub const MAX_AUDIT_LIST_ROWS: usize = 1000;
/// Rows `yoctoclaw audit` prints when not told (`--limit`).
pub const DEFAULT_AUDIT_LIST_ROWS: usize = 50;
/// Status page logins (`yc_session` cookies) held at once; a new login past it replaces
/// the one that expires first (`channels::http::login`).
pub const HTTP_PAGE_LOGINS: usize = 16;
/// How long a status page login lasts (the cookie's `Max-Age`).
pub const HTTP_PAGE_LOGIN_SECS: u64 = 12 * 3600;
/// Rows the status page lists in each of its tables (sessions, cron jobs, tool calls).
pub const HTTP_PAGE_MAX_ROWS: usize = 20;
/// A wrong token given to the status page's login counts as this many requests against
/// the address's rate limit (`http.rate_per_minute`), so guessing is slower still.
pub const HTTP_LOGIN_FAILURE_WEIGHT: usize = 10;
/// Largest WebSocket message (`GET /ws`), its fragments joined; past it the connection
/// is closed with 1009.
pub const WS_MAX_MESSAGE_BYTES: usize = 64 * 1024;
/// Seconds a WebSocket may stay quiet before the server pings it...
pub const WS_IDLE_SECS: u64 = 30;
/// ...and seconds after that ping within which something must come back, else the
/// connection is closed.
pub const WS_PONG_SECS: u64 = 15;

/// Saved worker definitions (`spawn_worker` with `save`) kept at most; saving one more
/// is refused until one is removed.
pub const MAX_SAVED_WORKERS: usize = 32;
/// Longest worker name (`[a-z0-9_-]`).
pub const MAX_WORKER_NAME_BYTES: usize = 32;
/// Longest worker instructions (its system prompt's own part).
pub const MAX_WORKER_INSTRUCTIONS_BYTES: usize = 4096;
