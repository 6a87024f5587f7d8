//! A fake Telegram Bot API that drives the soak: private messages from `chats` users,
//! one turn in flight per chat, the next message of a chat sent as soon as the bot's
//! reply to the previous one (its `done #N` marker) arrives, until `total` are answered.
//! In a burst, every message is there at once (a board back from a reboot or a Wi-Fi
//! outage): the gateway collects what waits for a chat into one turn, whose reply's
//! `done #N` (the newest message it read) answers every message of that chat up to N.
//!
//! `getUpdates` behaves like Telegram's: updates from the requested offset at once, or
//! the request is held until one arrives (or the poll timeout, capped at
//! `MAX_HOLD_SECS`, passes) and answered with an empty list.
//!
//! # Bounds
//! At most `chats` messages in flight; at most `MAX_BATCH` updates per `getUpdates`;
//! per-turn latencies are kept (one number per message).

use crate::fake_http::{FakeServer, Request, Response, json_str};
use crate::plan::{parse_done, user_text};
use crate::tls::TestCa;
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};
use yoctoclaw::json;

/// Longest a `getUpdates` with nothing to return is held.
const MAX_HOLD_SECS: u64 = 50;
/// Most updates in one `getUpdates` answer (Telegram's own limit).
const MAX_BATCH: usize = 100;
/// The first chat's (and user's) id; the others follow.
pub const FIRST_CHAT_ID: i64 = 10_001;

/// Counters and the turn table, under one lock.
#[derive(Default)]
pub struct State {
    /// Messages to answer in all.
    pub total: u64,
    /// Messages sent to the bot so far.
    pub issued: u64,
    /// Turns whose final reply arrived.
    pub done: u64,
    /// Per chat: the message in flight and when it was sent.
    chats: Vec<Option<(u64, Instant)>>,
    /// Burst: every message queued at once; per chat, the messages answered so far.
    burst: bool,
    answered: Vec<u64>,
    queue: VecDeque<(i64, String)>,
    next_update_id: i64,
    traffic: bool,
    stopping: bool,
    /// Turn latencies (send to final reply part).
    pub latencies: Vec<Duration>,
    pub polls: u64,
    pub empty_polls: u64,
    pub sends: u64,
    pub send_bytes: u64,
    pub unmarked_sends: u64,
    pub typing: u64,
}

pub struct FakeBot {
    pub server: FakeServer,
    shared: Arc<(Mutex<State>, Condvar)>,
}

impl FakeBot {
    /// `burst`: every message arrives at once; `tls`: serve HTTPS with a certificate from
    /// that CA.
    pub fn start(chats: usize, total: u64, burst: bool, tls: Option<&TestCa>) -> FakeBot {
        let shared = Arc::new((
            Mutex::new(State {
                total,
                chats: vec![None; chats],
                burst,
                answered: vec![0; chats],
                next_update_id: 1,
                ..State::default()
            }),
            Condvar::new(),
        ));
        let sh = shared.clone();
        let handler = move |req: &Request| handle(&sh, req);
        let server = match tls {
            Some(ca) => crate::tls::serve(handler, true, ca).0,
            None => FakeServer::start_keep_alive(handler),
        };
        FakeBot { server, shared }
    }

    /// User (and private chat) ids, for `telegram.allow_from`.
    pub fn user_ids(&self) -> Vec<i64> {
        let n = self.with(|s| s.chats.len());
        (0..n as i64).map(|c| FIRST_CHAT_ID + c).collect()
    }

    pub fn with<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        let mut g = match self.shared.0.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        f(&mut g)
    }

    /// Send the first message of every chat.
    pub fn start_traffic(&self) {
        self.with(|s| {
            s.traffic = true;
            let n = if s.burst {
                s.total
            } else {
                s.chats.len() as u64
            };
            for i in 0..n {
                issue(s, i as usize % s.chats.len().max(1));
            }
        });
        self.shared.1.notify_all();
    }

    /// Release held polls and stop feeding.
    pub fn stop(&self) {
        self.with(|s| s.stopping = true);
        self.shared.1.notify_all();
    }
}

/// Queue the next message for chat `c`, if any is left.
fn issue(s: &mut State, c: usize) {
    if !s.traffic || s.issued >= s.total {
        return;
    }
    let i = s.issued;
    s.issued += 1;
    let id = FIRST_CHAT_ID + c as i64;
    let uid = s.next_update_id;
    s.next_update_id += 1;
    let msg = format!(
        r#"{{"update_id":{uid},"message":{{"message_id":{},"from":{{"id":{id},"is_bot":false,"first_name":"User{c}","username":"user{c}"}},"chat":{{"id":{id},"type":"private","first_name":"User{c}"}},"date":1700000000,"text":{}}}}}"#,
        i + 1,
        json_str(&user_text(i))
    );
    s.queue.push_back((uid, msg));
    if let Some(slot) = s.chats.get_mut(c) {
        *slot = Some((i, Instant::now()));
    }
}

fn ok(result: &str) -> Response {
    Response::json(200, &format!(r#"{{"ok":true,"result":{result}}}"#))
}

fn handle(shared: &(Mutex<State>, Condvar), req: &Request) -> Response {
    let method = req.path.rsplit('/').next().unwrap_or("");
    let body = json::parse_value(&req.body).ok();
    let int = |k: &str| {
        body.as_ref()
            .and_then(|v| json::get(v, k))
            .and_then(json::as_i64)
    };
    let (lock, cv) = shared;
    let mut s = match lock.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    };
    match method {
        "getMe" => ok(r#"{"id":7000001,"is_bot":true,"first_name":"Soak","username":"soak_bot"}"#),
        "getUpdates" => {
            s.polls += 1;
            let offset = int("offset").unwrap_or(0);
            let hold = Duration::from_secs(
                int("timeout").unwrap_or(0).clamp(0, MAX_HOLD_SECS as i64) as u64,
            );
            let until = Instant::now() + hold;
            loop {
                while s.queue.front().is_some_and(|(id, _)| *id < offset) {
                    s.queue.pop_front();
                }
                if !s.queue.is_empty() || s.stopping {
                    break;
                }
                let now = Instant::now();
                if now >= until {
                    break;
                }
                s = match cv.wait_timeout(s, until - now) {
                    Ok((g, _)) => g,
                    Err(p) => p.into_inner().0,
                };
            }
            if s.queue.is_empty() {
                s.empty_polls += 1;
            }
            let batch: Vec<&str> = s
                .queue
                .iter()
                .take(MAX_BATCH)
                .map(|(_, u)| u.as_str())
                .collect();
            ok(&format!("[{}]", batch.join(",")))
        }
        "sendMessage" => {
            s.sends += 1;
            let text = body
                .as_ref()
                .and_then(|v| json::str_at(v, "text"))
                .unwrap_or("")
                .to_string();
            s.send_bytes += text.len() as u64;
            let chat = int("chat_id").unwrap_or(0);
            let c = (chat - FIRST_CHAT_ID).max(0) as usize;
            if s.burst {
                // Chat c's messages are c, c + chats, …: those up to `done #n` are answered.
                let chats = s.chats.len() as u64;
                if let (Some(n), Some(prev)) = (parse_done(&text), s.answered.get(c).copied()) {
                    let upto = if n % chats == c as u64 {
                        n / chats + 1
                    } else {
                        prev
                    };
                    if upto > prev {
                        s.done += upto - prev;
                        s.answered[c] = upto;
                        return ok(&format!(
                            r#"{{"message_id":{},"chat":{{"id":{chat},"type":"private"}},"date":1700000000,"text":"ok"}}"#,
                            s.sends
                        ));
                    }
                }
            }
            let finished = match (parse_done(&text), s.chats.get(c).copied().flatten()) {
                (Some(n), Some((want, at))) if n == want => Some(at),
                _ => None,
            };
            match finished {
                Some(at) => {
                    s.latencies.push(at.elapsed());
                    s.done += 1;
                    if let Some(slot) = s.chats.get_mut(c) {
                        *slot = None;
                    }
                    issue(&mut s, c);
                    cv.notify_all();
                }
                None => s.unmarked_sends += 1,
            }
            ok(&format!(
                r#"{{"message_id":{},"chat":{{"id":{chat},"type":"private"}},"date":1700000000,"text":"ok"}}"#,
                s.sends
            ))
        }
        "sendChatAction" => {
            s.typing += 1;
            ok("true")
        }
        _ => Response::json(
            404,
            r#"{"ok":false,"error_code":404,"description":"Not Found"}"#,
        ),
    }
}
