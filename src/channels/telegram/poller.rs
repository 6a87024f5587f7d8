//! The `getUpdates` long-poll loop, on its own thread, feeding updates to the executor
//! over a bounded channel. It never dies on an error and never spins.
//!
//! Why it exists: this is the one place the polling rules live.
//! - 409 Conflict (another poller, or a webhook): wait `Backoff::conflict` (30 s) each
//!   time, with a single warning for the whole episode (and at most one per
//!   `CONFLICT_WARN_INTERVAL_SECS` when two instances keep taking turns).
//! - 429: wait what Telegram's `retry_after` says.
//! - 5xx, network errors, garbage bodies, cut connections: exponential backoff with
//!   jitter (1 s → 60 s); one warning when a streak starts (then one every
//!   `WARN_EVERY_FAILURES`), one info line when polling works again.
//! - A poll that brings nothing new faster than `Backoff::min_poll_interval` (servers
//!   that do not hold the long poll) is followed by a pause up to that interval.
//!
//! Duplicates: an update whose id is below the next offset is dropped here; the
//! executor checks again against the offset it persisted (restarts).
//!
//! # Bounds
//! At most `POLL_BATCH_UPDATES` updates per poll; the channel to the executor holds
//! `INBOUND_QUEUE_LEN` (when full, the poller waits: back-pressure, nothing dropped).
//!
//! # Threads
//! The `yc-tg-poll` thread, started once by the gateway: [`poll_loop`] runs there for the
//! process's life.
//!
//! # Blocking
//! [`poll_loop`] blocks (HTTP, sleeps, full channel): run it on its own thread. It ends
//! when [`Stop`] is set (checked between polls; an in-flight long poll is not
//! interrupted: the process exits without waiting for it) or the executor's end of the
//! channel is dropped.

use super::api::{ApiError, Update};
use super::backoff::{Backoff, ErrorDelay, Stop};
use std::time::{Duration, Instant};

/// Updates asked for per `getUpdates` call.
pub const POLL_BATCH_UPDATES: u64 = 16;
/// Added to the long-poll timeout for the HTTP request's overall timeout.
pub const POLL_MARGIN_SECS: u64 = 15;
/// During a long failure streak, one warning per this many failures.
pub const WARN_EVERY_FAILURES: u32 = 60;
/// Least time between two conflict warnings.
pub const CONFLICT_WARN_INTERVAL_SECS: u64 = 15 * 60;

/// Poll until stopped. `fetch(offset)` performs one `getUpdates` call.
pub fn poll_loop<F>(
    mut fetch: F,
    mut offset: i64,
    backoff: &Backoff,
    tx: &async_channel::Sender<Update>,
    stop: &Stop,
) where
    F: FnMut(i64) -> Result<Vec<Update>, ApiError>,
{
    let mut errors = ErrorDelay::new(backoff);
    let mut in_conflict = false;
    let mut conflict_warned: Option<Instant> = None;
    while !stop.is_set() {
        let started = Instant::now();
        let result = fetch(offset);
        if stop.is_set() {
            break;
        }
        let wait = match result {
            Ok(updates) => {
                if errors.failures() > 0 {
                    log::info!(
                        "telegram: polling works again after {} failed attempt(s)",
                        errors.failures()
                    );
                    errors.reset();
                }
                if in_conflict {
                    log::debug!("telegram: the conflict is over; polling again");
                    in_conflict = false;
                }
                let mut fresh = 0usize;
                for u in updates {
                    if u.update_id < offset {
                        log::debug!("telegram: ignored duplicate update {}", u.update_id);
                        continue;
                    }
                    offset = u.update_id.saturating_add(1);
                    fresh += 1;
                    if tx.send_blocking(u).is_err() {
                        return;
                    }
                }
                if fresh == 0 {
                    backoff.min_poll_interval.saturating_sub(started.elapsed())
                } else {
                    Duration::ZERO
                }
            }
            Err(ApiError::Conflict { description }) => {
                let recently = conflict_warned.is_some_and(|t| {
                    t.elapsed() < Duration::from_secs(CONFLICT_WARN_INTERVAL_SECS)
                });
                if in_conflict || recently {
                    log::debug!("telegram: still in conflict: {description}");
                } else {
                    conflict_warned = Some(Instant::now());
                    log::warn!(
                        "telegram: getUpdates conflict (http 409: {description}): another instance is polling with this token, or a webhook is set; retrying every {} s without further warnings",
                        backoff.conflict.as_secs_f64().ceil()
                    );
                }
                in_conflict = true;
                backoff.conflict
            }
            Err(ApiError::RateLimited { retry_after_secs }) => {
                log::warn!(
                    "telegram: getUpdates rate limited (http 429): retrying in {retry_after_secs} s as asked"
                );
                backoff.retry_after(retry_after_secs)
            }
            Err(e) => {
                let d = errors.next_delay();
                let n = errors.failures();
                let hint = match e {
                    ApiError::Unauthorized | ApiError::NotFound => {
                        ": check the bot token and telegram.api_base"
                    }
                    _ => "",
                };
                if n == 1 || n.is_multiple_of(WARN_EVERY_FAILURES) {
                    log::warn!(
                        "telegram: getUpdates failed ({e}){hint}; attempt {n}, retrying in {} ms",
                        d.as_millis()
                    );
                } else {
                    log::debug!("telegram: getUpdates failed ({e}); attempt {n}");
                }
                d
            }
        };
        if !wait.is_zero() && stop.sleep(wait) {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    fn upd(id: i64) -> Update {
        Update {
            update_id: id,
            message: None,
        }
    }

    /// Run the loop over a script of answers; stop when the script is done.
    fn run_script(script: Vec<Result<Vec<Update>, ApiError>>, start: i64) -> (Vec<i64>, Vec<i64>) {
        let backoff = Backoff::scaled(0.001);
        let stop = Stop::new();
        let (tx, rx) = async_channel::bounded(1000);
        let mut script: VecDeque<_> = script.into();
        let mut offsets = Vec::new();
        let s2 = stop.clone();
        poll_loop(
            |off| {
                offsets.push(off);
                match script.pop_front() {
                    Some(r) => r,
                    None => {
                        s2.set();
                        Ok(Vec::new())
                    }
                }
            },
            start,
            &backoff,
            &tx,
            &stop,
        );
        drop(tx);
        let mut got = Vec::new();
        while let Ok(u) = rx.try_recv() {
            got.push(u.update_id);
        }
        (got, offsets)
    }

    #[test]
    fn the_loop_survives_every_error_and_keeps_order() {
        let conflict = || {
            Err(ApiError::Conflict {
                description: "Conflict".into(),
            })
        };
        let (got, offsets) = run_script(
            vec![
                conflict(),
                conflict(),
                Err(ApiError::RateLimited {
                    retry_after_secs: 1,
                }),
                Err(ApiError::BadResponse { detail: "not JSON" }),
                Err(ApiError::Server { status: 502 }),
                Err(ApiError::Unauthorized),
                Ok(vec![upd(5), upd(6)]),
                Ok(vec![upd(6), upd(7)]), // 6 again: a duplicate
                Ok(vec![upd(3)]),         // old
                Ok(vec![]),
            ],
            0,
        );
        assert_eq!(got, vec![5, 6, 7]);
        assert_eq!(&offsets[..7], &[0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(offsets[7], 7);
        assert_eq!(offsets[8], 8);
    }

    #[test]
    fn the_start_offset_filters_old_updates() {
        let (got, offsets) = run_script(vec![Ok(vec![upd(9), upd(10), upd(11)])], 10);
        assert_eq!(got, vec![10, 11]);
        assert_eq!(offsets, vec![10, 12]);
    }

    #[test]
    fn instant_empty_answers_are_paced() {
        let backoff = Backoff::scaled(0.02); // 20 ms between empty polls
        let stop = Stop::new();
        let (tx, _rx) = async_channel::bounded(1);
        let mut calls = 0;
        let started = Instant::now();
        let s2 = stop.clone();
        poll_loop(
            |_| {
                calls += 1;
                if calls == 10 {
                    s2.set();
                }
                Ok(Vec::new())
            },
            0,
            &backoff,
            &tx,
            &stop,
        );
        // Nine pauses of ~20 ms: a loose lower bound, no upper bound.
        assert!(started.elapsed() >= Duration::from_millis(150));
    }

    #[test]
    fn a_closed_channel_ends_the_loop() {
        let backoff = Backoff::scaled(0.001);
        let stop = Stop::new();
        let (tx, rx) = async_channel::bounded(1);
        drop(rx);
        let mut calls = 0;
        poll_loop(
            |_| {
                calls += 1;
                Ok(vec![upd(calls)])
            },
            0,
            &backoff,
            &tx,
            &stop,
        );
        assert_eq!(calls, 1);
    }
}
