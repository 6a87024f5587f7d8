//! `POST /webhook/telegram` (`telegram.mode: "webhook"`): Telegram posts one `Update` per
//! request with the secret given to `setWebhook` in `X-Telegram-Bot-Api-Secret-Token`.
//!
//! - The secret is compared in constant time (`auth::ct_eq`); a wrong or missing one is
//!   401 and nothing of the request is used.
//! - The body is read as an element of a `getUpdates` result (`api::webhook_update`),
//!   then handed to the bot, which handles it exactly as a polled update (its offset
//!   check drops a repeated `update_id`; an allowed message goes to the durable inbox in
//!   one commit); the answer is 200 only once the bot says it is done and synced. Any
//!   other answer (400 for a body that is no update, 429, 503) commits nothing, and
//!   Telegram posts the update again later.
//!
//! # Bounds
//! The body as any (`http.max_body_kib`), its JSON values `HTTP_MAX_JSON_VALUES`; the
//! bot's queue of posted updates `INBOUND_QUEUE_LEN` (a post waits for room, as the
//! poller does); a post waits for the bot at most until the shutdown's grace ends.
//!
//! # Threads
//! Executor thread.

use super::openai::count_values;
use super::parse::Head;
use super::respond::Response;
use super::{Server, Webhook, auth};
use crate::channels::telegram::api::{self, Posted};
use crate::limits::HTTP_MAX_JSON_VALUES;

/// Whether the request carries the webhook's secret; `Err` is the 401.
pub fn authorize(h: &Head, w: &Webhook) -> Result<(), Response> {
    let given = h.telegram_secret.as_deref().unwrap_or("");
    if auth::ct_eq(given.as_bytes(), w.secret.as_bytes()) {
        return Ok(());
    }
    Err(Response::error(
        401,
        "A valid X-Telegram-Bot-Api-Secret-Token header is needed (the secret given to setWebhook).",
    ))
}

/// Hand the posted update to the bot and answer once it was handled.
pub async fn post(srv: &Server, w: &Webhook, body: &[u8]) -> Response {
    let Ok(text) = std::str::from_utf8(body) else {
        return Response::error(400, "The body is not UTF-8 text.");
    };
    if count_values(text) > HTTP_MAX_JSON_VALUES {
        return Response::error(
            413,
            &format!("The body holds more than {HTTP_MAX_JSON_VALUES} JSON values."),
        );
    }
    let Some(update) = api::webhook_update(text) else {
        return Response::error(
            400,
            "The body is not a Telegram Update: a JSON object with an update_id.",
        );
    };
    let id = update.update_id;
    let (done, handled) = async_channel::bounded(1);
    let handed = async {
        w.updates.send(Posted { update, done }).await.is_ok() && handled.recv().await.is_ok()
    };
    let cut = async {
        srv.cut_off().await;
        false
    };
    if smol::future::or(handed, cut).await {
        Response::json(200, "{}".into())
    } else {
        log::debug!("telegram: update {id} posted while stopping; Telegram sends it again");
        Response::error(
            503,
            "The bot is stopping: the update is taken after the restart.",
        )
        .with_header("Retry-After", "5")
    }
}
