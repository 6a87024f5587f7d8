//! Typed access to a tool call's JSON arguments, with errors the model can act on.
//!
//! # Threads
//! Any thread: pure functions over their arguments, no I/O.

use super::ToolError;
use crate::json;
use crate::limits::MAX_TOOL_ARGS_BYTES;
use miniserde::json::Value;

pub struct Args {
    v: Value,
}

impl Args {
    /// Parse the arguments text. Empty text means no arguments. A JSON string holding an
    /// object (double-encoded arguments, seen from some servers) is unwrapped once.
    pub fn parse(text: &str) -> Result<Args, ToolError> {
        if text.len() > MAX_TOOL_ARGS_BYTES {
            return Err(ToolError::BadArgs(format!(
                "arguments are larger than {MAX_TOOL_ARGS_BYTES} bytes"
            )));
        }
        if text.trim().is_empty() {
            return Ok(Args {
                v: json::object::<_, &str>([]),
            });
        }
        let v = json::parse_value(text)
            .map_err(|e| ToolError::BadArgs(format!("arguments are not valid JSON ({e})")))?;
        let v = match v {
            Value::String(inner) => json::parse_value(&inner)
                .map_err(|e| ToolError::BadArgs(format!("arguments are not valid JSON ({e})")))?,
            v => v,
        };
        if json::as_object(&v).is_none() {
            return Err(ToolError::BadArgs("arguments must be a JSON object".into()));
        }
        Ok(Args { v })
    }

    pub fn opt_str(&self, key: &str) -> Result<Option<&str>, ToolError> {
        match json::get(&self.v, key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(ToolError::BadArgs(format!("\"{key}\" must be a string"))),
        }
    }

    pub fn str(&self, key: &str) -> Result<&str, ToolError> {
        self.opt_str(key)?
            .ok_or_else(|| ToolError::BadArgs(format!("\"{key}\" is required")))
    }

    /// A whole number; numeric strings are accepted (models send "10" as often as 10).
    pub fn opt_u64(&self, key: &str) -> Result<Option<u64>, ToolError> {
        match json::get(&self.v, key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => s
                .trim()
                .parse()
                .map(Some)
                .map_err(|_| ToolError::BadArgs(format!("\"{key}\" must be a whole number"))),
            Some(v) => json::as_u64(v)
                .map(Some)
                .ok_or_else(|| ToolError::BadArgs(format!("\"{key}\" must be a whole number"))),
        }
    }

    pub fn opt_bool(&self, key: &str) -> Result<Option<bool>, ToolError> {
        match json::get(&self.v, key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(Value::String(s)) if s == "true" || s == "false" => Ok(Some(s == "true")),
            Some(_) => Err(ToolError::BadArgs(format!(
                "\"{key}\" must be true or false"
            ))),
        }
    }

    pub fn value(&self) -> &Value {
        &self.v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_as_object_or_string() {
        let a = Args::parse(r#"{"path":"x","n":"5","m":3}"#).unwrap();
        assert_eq!(a.str("path").unwrap(), "x");
        assert_eq!(a.opt_u64("n").unwrap(), Some(5));
        assert_eq!(a.opt_u64("m").unwrap(), Some(3));
        let a = Args::parse(r#""{\"path\":\"y\"}""#).unwrap();
        assert_eq!(a.str("path").unwrap(), "y");
        assert!(Args::parse("").unwrap().opt_str("path").unwrap().is_none());
    }

    #[test]
    fn bad_arguments_are_clear_errors() {
        assert!(matches!(Args::parse("{"), Err(ToolError::BadArgs(_))));
        assert!(matches!(Args::parse("[1]"), Err(ToolError::BadArgs(_))));
        let a = Args::parse(r#"{"path":5}"#).unwrap();
        assert!(
            a.str("path")
                .unwrap_err()
                .to_string()
                .contains("must be a string")
        );
        assert!(a.str("nope").unwrap_err().to_string().contains("required"));
        let big = format!("{{\"a\":\"{}\"}}", "x".repeat(MAX_TOOL_ARGS_BYTES));
        assert!(Args::parse(&big).is_err());
    }
}
