//! Answers: a status, a few headers and a body with its `Content-Length` (streamed
//! answers write their own head, `Transfer-Encoding: chunked`), and errors in the shape
//! OpenAI's clients read: `{"error":{"message":…,"type":…,"param":null,"code":…}}`, the
//! message one sentence saying what to do.
//!
//! # Threads
//! Any thread: pure functions over their arguments.

use crate::json::Writer;
use std::fmt::Write as _;

/// One answer, written whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub content_type: &'static str,
    /// More headers (`Retry-After`, `WWW-Authenticate`, `Allow`; the status page's
    /// `Set-Cookie`, `Location` and security headers).
    pub more: Vec<(&'static str, String)>,
    pub body: String,
    /// Close the connection after this answer.
    pub close: bool,
}

impl Response {
    pub fn json(status: u16, body: String) -> Response {
        Response {
            status,
            content_type: "application/json",
            more: Vec::new(),
            body,
            close: false,
        }
    }

    /// An HTML page, with the headers that keep it out of frames, caches and other
    /// origins' scripts (the status page).
    pub fn html(status: u16, body: String) -> Response {
        let mut r = Response {
            content_type: "text/html; charset=utf-8",
            ..Response::json(status, body)
        };
        r.more = vec![
            ("Content-Security-Policy", PAGE_CSP.to_string()),
            ("X-Frame-Options", "DENY".to_string()),
            ("X-Content-Type-Options", "nosniff".to_string()),
            // Not `no-referrer`: with it a browser posts the form with `Origin: null`, which
            // the login refuses as another site's.
            ("Referrer-Policy", "same-origin".to_string()),
        ];
        r
    }

    /// An error in OpenAI's shape; its type follows from the status.
    pub fn error(status: u16, message: &str) -> Response {
        let (kind, code) = match status {
            401 => ("authentication_error", "invalid_api_key"),
            429 => ("rate_limit_error", "rate_limit_exceeded"),
            500..=599 => ("server_error", "server_error"),
            _ => ("invalid_request_error", "invalid_request"),
        };
        Response::json(status, error_json(message, kind, code))
    }

    /// With one more header.
    pub fn with_header(mut self, name: &'static str, value: &str) -> Response {
        self.more.push((name, value.to_string()));
        self
    }

    /// Close the connection after this answer.
    pub fn closing(mut self) -> Response {
        self.close = true;
        self
    }

    /// The head (status line and headers) for an answer on a connection kept open
    /// (`keep_alive`) or not.
    pub fn head(&self, keep_alive: bool) -> String {
        let mut h = String::with_capacity(160);
        let _ = write!(
            h,
            "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nCache-Control: no-store\r\n",
            self.status,
            reason(self.status),
            self.content_type,
            self.body.len()
        );
        for (k, v) in &self.more {
            let _ = write!(h, "{k}: {v}\r\n");
        }
        h.push_str(if keep_alive {
            "\r\n"
        } else {
            "Connection: close\r\n\r\n"
        });
        h
    }
}

/// The status page's Content-Security-Policy: no script, no outside asset, its inline
/// style, forms posted to itself only, never framed.
pub const PAGE_CSP: &str =
    "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'";

/// `{"error":{"message":…,"type":…,"param":null,"code":…}}`.
pub fn error_json(message: &str, kind: &str, code: &str) -> String {
    let mut w = Writer::with_capacity(message.len() + 96);
    w.begin_object();
    w.key("error");
    w.begin_object();
    w.field_str("message", message);
    w.field_str("type", kind);
    w.key("param");
    w.null();
    w.field_str("code", code);
    w.end_object();
    w.end_object();
    w.finish()
}

/// The reason phrase of the statuses this server gives.
pub fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        303 => "See Other",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        413 => "Content Too Large",
        417 => "Expectation Failed",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_have_openais_shape_and_a_length() {
        let r = Response::error(429, "Slow \"down\".").with_header("Retry-After", "3");
        let v = crate::json::parse_value(&r.body).unwrap();
        let e = crate::json::get(&v, "error").unwrap();
        assert_eq!(crate::json::str_at(e, "message"), Some("Slow \"down\"."));
        assert_eq!(crate::json::str_at(e, "type"), Some("rate_limit_error"));
        let head = r.head(true);
        assert!(
            head.starts_with("HTTP/1.1 429 Too Many Requests\r\n"),
            "{head}"
        );
        assert!(head.contains(&format!("Content-Length: {}\r\n", r.body.len())));
        assert!(head.contains("Retry-After: 3\r\n") && head.ends_with("\r\n\r\n"));
        assert!(!head.contains("Connection: close"));
        assert!(r.head(false).ends_with("Connection: close\r\n\r\n"));
    }
}
