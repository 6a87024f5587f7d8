//! A fake OpenAI-compatible provider for smoke tests (the same server the test suite uses).
//! Prints `PORT <n>` on stdout, then answers every POST .../chat/completions with "pong"
//! (or the text given as the first argument) until killed.
#[path = "../tests/support/fake_http.rs"]
mod fake_http;

use fake_http::{FakeServer, Response, openai_text};
use std::io::Write;

fn main() {
    let reply = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "pong".to_string());
    let server = FakeServer::start(move |req| {
        if req.method == "POST" && req.path.ends_with("/chat/completions") {
            Response::json(200, &openai_text(&reply))
        } else {
            Response::json(404, r#"{"error":{"message":"not found"}}"#)
        }
    });
    println!("PORT {}", server.port());
    let _ = std::io::stdout().flush();
    loop {
        std::thread::sleep(std::time::Duration::from_secs(3600));
    }
}
