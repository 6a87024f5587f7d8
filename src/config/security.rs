//! `security.injection`: how untrusted content (web pages, search results, MCP tool
//! results, files in the Telegram inbox) is screened for prompt injection
//! (`security::injection`): what a hit does (`action`), the layer-2 score at which text
//! is a hit (`threshold`), the user's own patterns (`extra_patterns`, regexes
//! matched against folded text: lower case, look-alike letters mapped to ASCII), and the
//! optional judge for borderline scores (`judge`: a cheap model on the first provider).
//!
//! # Bounds
//! At most `MAX_EXTRA_PATTERNS` user patterns (more are refused); `threshold` 0..=1
//! (the screen uses at least 0.05).
//!
//! # Threads
//! Any thread: pure functions over their arguments, no I/O.

use super::ConfigError;
use super::fields::Fields;
use crate::security::injection::{self, Action, DEFAULT_THRESHOLD, MAX_EXTRA_PATTERNS};

#[derive(Debug, Clone, PartialEq)]
pub struct InjectionConfig {
    /// Screen and fence untrusted content; defaults to true.
    pub enabled: bool,
    /// `flag` (the default) or `withhold`.
    pub action: Action,
    /// The layer-2 score at which text is a hit; defaults to 0.6.
    pub threshold: f32,
    /// The user's patterns, checked to compile.
    pub extra_patterns: Vec<String>,
    /// Layer 3: a model asked about content scored from `judge.floor` up to `threshold`;
    /// `None` (no `judge.model`): off.
    pub judge: Option<JudgeConfig>,
}

/// `security.injection.judge`: a model on the first provider (its endpoint and key)
/// asked whether content with a borderline score tries to give instructions.
#[derive(Debug, Clone, PartialEq)]
pub struct JudgeConfig {
    /// The model's name at the first provider (a small, cheap one).
    pub model: String,
    /// The lowest layer-2 score the judge is asked about; defaults to 0.3.
    pub floor: f32,
    /// How long a verdict may take before layer 2's stands; defaults to 10 s.
    pub timeout_secs: u64,
}

/// `security.injection.judge.floor`'s default.
pub const DEFAULT_JUDGE_FLOOR: f32 = 0.3;

impl Default for InjectionConfig {
    fn default() -> Self {
        InjectionConfig {
            enabled: true,
            action: Action::Flag,
            threshold: DEFAULT_THRESHOLD,
            extra_patterns: Vec::new(),
            judge: None,
        }
    }
}

/// `security`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SecurityConfig {
    pub injection: InjectionConfig,
}

/// Reads the `security` section.
pub(super) fn read(s: &mut Fields<'_>) -> Result<SecurityConfig, ConfigError> {
    let d = InjectionConfig::default();
    let mut i = s.section("injection")?;
    let action = match i.choice("action", "flag", &["flag", "withhold"])?.as_str() {
        "withhold" => Action::Withhold,
        _ => Action::Flag,
    };
    let injection = InjectionConfig {
        enabled: i.bool("enabled", d.enabled)?,
        action,
        threshold: i.fraction("threshold", d.threshold)?,
        extra_patterns: i.string_list_sep("extra_patterns", '\n')?,
        judge: None,
    };
    let mut j = i.section("judge")?;
    let model = j.string("model", "")?;
    let floor = j.fraction("floor", DEFAULT_JUDGE_FLOOR)?;
    let timeout_secs = j.uint("timeout_secs", 10, 1, 120)?;
    j.finish()?;
    i.finish()?;
    let injection = InjectionConfig {
        judge: (!model.trim().is_empty()).then(|| JudgeConfig {
            model: model.trim().to_string(),
            floor,
            timeout_secs,
        }),
        ..injection
    };
    if injection.judge.is_some() && floor >= injection.threshold {
        return Err(ConfigError::BadValue {
            key: "security.injection.judge.floor".into(),
            expected: format!(
                "a score below security.injection.threshold ({}), where the judge is asked",
                injection.threshold
            ),
        });
    }
    let bad = |expected: String| ConfigError::BadValue {
        key: "security.injection.extra_patterns".into(),
        expected,
    };
    if injection.extra_patterns.len() > MAX_EXTRA_PATTERNS {
        return Err(bad(format!(
            "a list of at most {MAX_EXTRA_PATTERNS} regular expressions"
        )));
    }
    injection::check_patterns(&injection.extra_patterns).map_err(|e| {
        bad(format!(
            "a list of regular expressions (entry {} does not compile: {})",
            e.index, e.detail
        ))
    })?;
    Ok(SecurityConfig { injection })
}
