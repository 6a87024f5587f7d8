//! Typed reading of one config object: defaults, env overrides, range clamping and the
//! unknown-key check, so each section is a short list of `read` calls.
//!
//! # Threads
//! Any thread: pure functions over their arguments, no I/O.

use super::{ConfigError, Env};
use crate::json;
use miniserde::json::{Object, Value};

pub struct Fields<'a> {
    obj: Option<&'a Object>,
    /// Dotted path for messages: `provider`, `tools.exec`, `fallbacks[0]`.
    path: String,
    /// `YOCTOCLAW_PROVIDER`; `None` where env overrides do not apply (array items).
    env_prefix: Option<String>,
    env: &'a Env,
    seen: Vec<&'static str>,
}

fn bad(key: String, expected: &str) -> ConfigError {
    ConfigError::BadValue {
        key,
        expected: expected.to_string(),
    }
}

impl<'a> Fields<'a> {
    pub fn root(v: &'a Value, env: &'a Env) -> Result<Fields<'a>, ConfigError> {
        let obj = json::as_object(v).ok_or_else(|| bad("(top level)".into(), "a JSON object"))?;
        Ok(Fields {
            obj: Some(obj),
            path: String::new(),
            env_prefix: Some("YOCTOCLAW".into()),
            env,
            seen: Vec::new(),
        })
    }

    /// An object that is an array item: no env overrides.
    pub fn item(v: &'a Value, path: String, env: &'a Env) -> Result<Fields<'a>, ConfigError> {
        let obj = json::as_object(v).ok_or_else(|| bad(path.clone(), "a JSON object"))?;
        Ok(Fields {
            obj: Some(obj),
            path,
            env_prefix: None,
            env,
            seen: Vec::new(),
        })
    }

    fn key_path(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_string()
        } else {
            format!("{}.{}", self.path, key)
        }
    }

    fn env_value(&self, key: &str) -> Option<String> {
        let prefix = self.env_prefix.as_ref()?;
        self.env
            .get(&format!("{}_{}", prefix, key.to_ascii_uppercase()))
    }

    fn raw(&mut self, key: &'static str) -> Option<&'a Value> {
        self.seen.push(key);
        self.obj
            .and_then(|o| o.get(key))
            .filter(|v| !matches!(v, Value::Null))
    }

    /// A nested object section (may be absent: then only defaults and env apply).
    pub fn section(&mut self, key: &'static str) -> Result<Fields<'a>, ConfigError> {
        let path = self.key_path(key);
        let obj = match self.raw(key) {
            None => None,
            Some(v) => Some(json::as_object(v).ok_or_else(|| bad(path.clone(), "a JSON object"))?),
        };
        Ok(Fields {
            obj,
            env_prefix: self
                .env_prefix
                .as_ref()
                .map(|p| format!("{}_{}", p, key.to_ascii_uppercase())),
            path,
            env: self.env,
            seen: Vec::new(),
        })
    }

    pub fn string(&mut self, key: &'static str, default: &str) -> Result<String, ConfigError> {
        if let Some(v) = self.env_value(key) {
            self.seen.push(key);
            return Ok(v);
        }
        match self.raw(key) {
            None => Ok(default.to_string()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(_) => Err(bad(self.key_path(key), "a string")),
        }
    }

    /// One of a fixed set of strings.
    pub fn choice(
        &mut self,
        key: &'static str,
        default: &str,
        allowed: &[&str],
    ) -> Result<String, ConfigError> {
        let v = self.string(key, default)?;
        if allowed.contains(&v.as_str()) {
            Ok(v)
        } else {
            Err(bad(
                self.key_path(key),
                &format!("one of {}", allowed.join(", ")),
            ))
        }
    }

    pub fn bool(&mut self, key: &'static str, default: bool) -> Result<bool, ConfigError> {
        let expected = "true or false";
        if let Some(v) = self.env_value(key) {
            self.seen.push(key);
            return match v.trim().to_ascii_lowercase().as_str() {
                "1" | "true" | "yes" | "on" => Ok(true),
                "0" | "false" | "no" | "off" => Ok(false),
                _ => Err(bad(self.key_path(key), expected)),
            };
        }
        match self.raw(key) {
            None => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(bad(self.key_path(key), expected)),
        }
    }

    /// A whole number, clamped into `min..=max` (with a warning when clamped).
    pub fn uint(
        &mut self,
        key: &'static str,
        default: u64,
        min: u64,
        max: u64,
    ) -> Result<u64, ConfigError> {
        let expected = "a whole number";
        let n = if let Some(v) = self.env_value(key) {
            self.seen.push(key);
            v.trim()
                .parse::<u64>()
                .map_err(|_| bad(self.key_path(key), expected))?
        } else {
            match self.raw(key) {
                None => return Ok(default),
                Some(v) => json::as_u64(v).ok_or_else(|| bad(self.key_path(key), expected))?,
            }
        };
        let clamped = n.clamp(min, max);
        if clamped != n {
            log::warn!(
                "config key {} = {} is outside {}..={}; using {}",
                self.key_path(key),
                n,
                min,
                max,
                clamped
            );
        }
        Ok(clamped)
    }

    /// A number in `0..=1` (a JSON number, or a decimal from the environment).
    pub fn fraction(&mut self, key: &'static str, default: f32) -> Result<f32, ConfigError> {
        use miniserde::json::Number;
        let expected = "a number from 0 to 1, like 0.6";
        let n = if let Some(v) = self.env_value(key) {
            self.seen.push(key);
            v.trim().parse::<f64>().ok()
        } else {
            match self.raw(key) {
                None => return Ok(default),
                Some(Value::Number(Number::U64(n))) => Some(*n as f64),
                Some(Value::Number(Number::F64(f))) => Some(*f),
                Some(_) => None,
            }
        };
        match n {
            Some(n) if (0.0..=1.0).contains(&n) => Ok(n as f32),
            _ => Err(bad(self.key_path(key), expected)),
        }
    }

    /// An optional whole number (absent = `None`), clamped like [`Fields::uint`].
    pub fn opt_uint(
        &mut self,
        key: &'static str,
        min: u64,
        max: u64,
    ) -> Result<Option<u64>, ConfigError> {
        let present = self.env_value(key).is_some()
            || self
                .obj
                .and_then(|o| o.get(key))
                .is_some_and(|v| !matches!(v, Value::Null));
        if !present {
            self.seen.push(key);
            return Ok(None);
        }
        self.uint(key, 0, min, max).map(Some)
    }

    /// A list of strings; numbers are accepted and turned into strings (Telegram ids);
    /// from the environment, a comma-separated list.
    pub fn string_list(&mut self, key: &'static str) -> Result<Vec<String>, ConfigError> {
        self.string_list_sep(key, ',')
    }

    /// [`Fields::string_list`] whose environment form is separated by `sep`.
    pub fn string_list_sep(
        &mut self,
        key: &'static str,
        sep: char,
    ) -> Result<Vec<String>, ConfigError> {
        let expected = "a list of strings";
        if let Some(v) = self.env_value(key) {
            self.seen.push(key);
            return Ok(v
                .split(sep)
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect());
        }
        let Some(v) = self.raw(key) else {
            return Ok(Vec::new());
        };
        let arr = json::as_array(v).ok_or_else(|| bad(self.key_path(key), expected))?;
        let mut out = Vec::with_capacity(arr.len());
        for item in arr.iter() {
            match item {
                Value::String(s) => out.push(s.trim().to_string()),
                Value::Number(_) => match json::as_i64(item) {
                    Some(n) => out.push(n.to_string()),
                    None => return Err(bad(self.key_path(key), expected)),
                },
                _ => return Err(bad(self.key_path(key), expected)),
            }
        }
        Ok(out)
    }

    /// A list of objects (e.g. `fallbacks`), returned with their paths.
    pub fn object_list(
        &mut self,
        key: &'static str,
    ) -> Result<Vec<(String, &'a Value)>, ConfigError> {
        let path = self.key_path(key);
        let Some(v) = self.raw(key) else {
            return Ok(Vec::new());
        };
        let arr = json::as_array(v).ok_or_else(|| bad(path.clone(), "a list of objects"))?;
        Ok(arr
            .iter()
            .enumerate()
            .map(|(i, item)| (format!("{path}[{i}]"), item))
            .collect())
    }

    /// An object keyed by names the config chooses (`mcp.servers`, a server's `env`),
    /// returned as `(path, key, value)` in key order.
    pub fn object_map(
        &mut self,
        key: &'static str,
    ) -> Result<Vec<(String, String, &'a Value)>, ConfigError> {
        let path = self.key_path(key);
        let Some(v) = self.raw(key) else {
            return Ok(Vec::new());
        };
        let obj = json::as_object(v).ok_or_else(|| bad(path.clone(), "a JSON object"))?;
        Ok(obj
            .iter()
            .map(|(k, v)| (format!("{path}.{k}"), k.clone(), v))
            .collect())
    }

    /// Accept `key` without reading it (keys other programs write that mean nothing here).
    pub fn ignore(&mut self, key: &'static str) {
        self.seen.push(key);
    }

    pub fn env(&self) -> &'a Env {
        self.env
    }

    /// Fail on the first key that no `read` call asked for.
    pub fn finish(self) -> Result<(), ConfigError> {
        if let Some(obj) = self.obj {
            for k in obj.keys() {
                // "//" and "_comment*" keys let users annotate their config.
                if k.starts_with("//") || k.starts_with("_comment") {
                    continue;
                }
                if !self.seen.iter().any(|s| s == k) {
                    let path = if self.path.is_empty() {
                        k.clone()
                    } else {
                        format!("{}.{}", self.path, k)
                    };
                    return Err(ConfigError::UnknownKey(path));
                }
            }
        }
        Ok(())
    }
}
