//! A fake OpenAI-compatible provider for smoke tests (the same server the test suite uses).
//! Prints `PORT <n>` on stdout, then answers every POST .../chat/completions with "pong"
//! (or the text given as the argument) until killed. Listens on 127.0.0.1, so a qemu
//! guest with user-mode networking reaches it as 10.0.2.2.
//!
//! `--tls`: HTTPS instead, with a certificate for 127.0.0.1, localhost and yc-host from a
//! CA made for this run (`tests/support/tls.rs`, valid from a day before the build, so a
//! board clock in 1970 accepts it too); the CA certificate is written to a temporary
//! file, named on a second line `CA <path>` for `tls.ca_file`.
//!
//! `--tool NAME ARGS_JSON`: a model that uses one tool. A request whose last message is
//! not a tool result is answered with a native call of tool NAME with those arguments; a
//! request whose last message is the tool's result is answered with a sentence quoting
//! that result and, when it ends in a byte (`0x21`), reading the byte as degrees Celsius
//! against 30 (the hardware VM's scheduled sensor job). Each request is printed as
//! `REQUEST <n> tool-call` or `REQUEST <n> tool-result <result>` (one line).
//!
//! Usage: `fake_provider [--tls] [--tool NAME ARGS_JSON] [REPLY]`.
//!
//! # Bounds
//! One thread per connection (the test suite's `fake_http`); runs until killed. A printed
//! tool result is cut to `MAX_PRINTED_CHARS`.
#[path = "../tests/support/fake_http.rs"]
mod fake_http;
#[path = "../tests/support/tls.rs"]
mod tls;

use fake_http::{FakeServer, Request, Response, json_str, openai_text, openai_tool_call};
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use yoctoclaw::json;

/// Longest tool result printed on a `REQUEST` line.
const MAX_PRINTED_CHARS: usize = 300;

fn usage() -> ! {
    eprintln!("usage: fake_provider [--tls] [--tool NAME ARGS_JSON] [REPLY]");
    std::process::exit(2)
}

/// The last message's content when it is a tool result.
fn tool_result(body: &str) -> Option<String> {
    let v = json::parse_value(body).ok()?;
    let last = json::get(&v, "messages").and_then(json::as_array)?.last()?;
    (json::str_at(last, "role")? == "tool")
        .then(|| json::str_at(last, "content").unwrap_or("").to_string())
}

/// The answer to a tool result: it quoted, and its last `0xNN` byte read as °C.
fn judge(result: &str) -> String {
    let byte = result
        .split(|c: char| c.is_whitespace() || c == ',' || c == ']' || c == '[')
        .filter_map(|w| w.strip_prefix("0x"))
        .filter_map(|h| u8::from_str_radix(h, 16).ok())
        .next_back();
    match byte {
        Some(b) if b > 30 => {
            format!("The sensor at 0x48 reads {b} °C: above 30 °C. (tool result: {result})")
        }
        Some(b) => {
            format!("The sensor at 0x48 reads {b} °C: not above 30 °C. (tool result: {result})")
        }
        None => format!("The tool gave no reading. (tool result: {result})"),
    }
}

fn main() {
    let mut tls_on = false;
    let mut reply = "pong".to_string();
    let mut tool: Option<(String, String)> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--tls" => tls_on = true,
            "--tool" => {
                let (Some(name), Some(json_args)) = (args.next(), args.next()) else {
                    usage()
                };
                if json::parse_value(&json_args).is_err() {
                    usage()
                }
                tool = Some((name, json_args));
            }
            s if s.starts_with("--") => usage(),
            _ => reply = a,
        }
    }
    let seen = AtomicU64::new(0);
    let handler = move |req: &Request| {
        if req.method != "POST" || !req.path.ends_with("/chat/completions") {
            return Response::json(404, r#"{"error":{"message":"not found"}}"#);
        }
        let Some((name, json_args)) = &tool else {
            return Response::json(200, &openai_text(&reply));
        };
        let n = seen.fetch_add(1, Ordering::SeqCst) + 1;
        let answer = match tool_result(&req.body) {
            Some(result) => {
                let shown: String = result.chars().take(MAX_PRINTED_CHARS).collect();
                println!("REQUEST {n} tool-result {}", shown.replace('\n', " "));
                openai_text(&judge(&result))
            }
            None => {
                println!("REQUEST {n} tool-call");
                openai_tool_call(&format!("call_{n}"), name, &json_str(json_args))
            }
        };
        let _ = std::io::stdout().flush();
        Response::json(200, &answer)
    };
    // The CA must outlive the server: keep both until the process is killed.
    let (server, _ca) = if tls_on {
        let ca = tls::TestCa::new("yoctoclaw fake provider CA");
        let path =
            std::env::temp_dir().join(format!("yc-fake-provider-ca-{}.pem", std::process::id()));
        ca.write_pem(&path);
        let (server, _switch) = tls::serve(handler, false, &ca);
        println!("PORT {}", server.port());
        println!("CA {}", path.display());
        (server, Some(ca))
    } else {
        let server = FakeServer::start(handler);
        println!("PORT {}", server.port());
        (server, None)
    };
    let _ = std::io::stdout().flush();
    let _keep = server;
    loop {
        std::thread::sleep(std::time::Duration::from_secs(3600));
    }
}
