//! Text helpers: cutting text to a byte cap with a marker (`cap_text`), and reducing what
//! tools bring back (`html`: web pages to readable text).
//!
//! Why: fetched pages are mostly markup; the model needs the readable text, and the board
//! needs it small. Every layer that takes text from outside caps it with [`cap_text`].
//!
//! # Bounds
//! Every function here takes an output cap in bytes; see each module.
//!
//! # Threads
//! Any thread; pure functions.

pub mod html;

/// Cut `s` to at most `max` bytes at a char boundary, with a marker saying how much went.
pub fn cap_text(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max.saturating_sub(64);
    while end > 0 && !s.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n[… truncated {} of {} bytes]",
        &s[..end],
        s.len() - end,
        s.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cap_text_cuts_at_char_boundaries() {
        let s = "é".repeat(1000);
        let c = cap_text(&s, 301);
        assert!(c.len() <= 301 + 64);
        assert!(c.contains("truncated"));
        assert_eq!(cap_text("short", 100), "short");
    }
}
