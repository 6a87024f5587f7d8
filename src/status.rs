//! `yoctoclaw status`: what is configured and how it is doing (including the tokens
//! used today and this month, UTC, against the budgets when set).

use crate::cli::Loaded;
use std::fmt::Write as _;

pub fn report(l: &Loaded) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{}", crate::cli::version_text());
    let _ = writeln!(s, "home:      {}", l.home.dir.display());
    let _ = writeln!(
        s,
        "provider:  {} {} ({})",
        match l.cfg.provider.kind {
            crate::config::ProviderKind::OpenAi => "openai",
            crate::config::ProviderKind::Anthropic => "anthropic",
        },
        l.cfg.provider.model,
        l.cfg.provider.base_url
    );
    let key = if l.env.get(&l.cfg.provider.api_key_env).is_some() {
        "set"
    } else {
        "not set"
    };
    let _ = writeln!(s, "api key:   {} ({key})", l.cfg.provider.api_key_env);
    let _ = writeln!(
        s,
        "telegram:  {}",
        if l.cfg.telegram.enabled {
            "enabled"
        } else {
            "disabled"
        }
    );
    let db_path = l.home.db_file();
    if db_path.exists() {
        let size = std::fs::metadata(&db_path).map(|m| m.len()).unwrap_or(0);
        match crate::store::Db::open(&db_path, l.cfg.memory.cache_kib) {
            Ok(db) => {
                let _ = writeln!(
                    s,
                    "database:  {} ({} KiB, {} sessions)",
                    db_path.display(),
                    size / 1024,
                    db.session_count().unwrap_or(0)
                );
                let _ = writeln!(s, "{}", tokens_line(&db, &l.cfg.budget));
            }
            Err(e) => {
                let _ = writeln!(s, "database:  {e}");
            }
        }
    } else {
        let _ = writeln!(s, "database:  not created yet");
    }
    s.trim_end().to_string()
}

/// `tokens:    today N (P in, C out), this month M (…)`, with the budgets when set.
fn tokens_line(db: &crate::store::Db, budget: &crate::config::BudgetConfig) -> String {
    let now = crate::runtime::now_secs();
    let day = crate::store::usage::day_of(now);
    let month = day.get(..7).unwrap_or(&day);
    let (dp, dc) = db.usage_totals(&day).unwrap_or((0, 0));
    let (mp, mc) = db.usage_totals(month).unwrap_or((0, 0));
    let of = |limit: Option<u64>| limit.map(|n| format!(" of {n}")).unwrap_or_default();
    format!(
        "tokens:    today {}{} ({dp} in, {dc} out), this month {}{} ({mp} in, {mc} out)",
        dp.saturating_add(dc),
        of(budget.daily_tokens),
        mp.saturating_add(mc),
        of(budget.monthly_tokens),
    )
}
