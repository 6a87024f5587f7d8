//! Token budgets: `budget.daily_tokens` and `budget.monthly_tokens` refuse new turns once
//! the tokens recorded today (or this month) reach the limit. Days and months are UTC,
//! as the usage table records them. The check runs before the first request of a turn,
//! so a turn that started under the limit finishes (it may overshoot by one turn).
//!
//! # Bounds
//! Two indexed SUM queries per turn when a budget is set, none otherwise. Limits are
//! `1..=u64::MAX/2` tokens (config); totals saturate instead of overflowing.
//!
//! # Threads
//! Executor thread (it owns the SQLite connection); each call is one short statement or
//! read, nothing here awaits I/O of its own.

use crate::config::BudgetConfig;
use crate::store::usage::day_of;
use crate::store::{Db, StoreError};
use std::fmt;

/// Which budget is used up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Period {
    Day,
    Month,
}

/// A budget that is used up; its Display is the reply the user gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BudgetExceeded {
    pub period: Period,
    pub used: u64,
    pub limit: u64,
}

impl fmt::Display for BudgetExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (name, when, key) = match self.period {
            Period::Day => (
                "daily",
                "today; it resets at 00:00 UTC",
                "budget.daily_tokens",
            ),
            Period::Month => (
                "monthly",
                "this month; it resets on the 1st (UTC)",
                "budget.monthly_tokens",
            ),
        };
        write!(
            f,
            "the {name} token budget is used up ({} of {} tokens {when}): raise {key} to go on sooner",
            self.used, self.limit
        )
    }
}

impl std::error::Error for BudgetExceeded {}

/// Tokens used today and this month (prompt + completion), UTC.
pub fn used(db: &Db, now: i64) -> Result<(u64, u64), StoreError> {
    let day = day_of(now);
    let (p, c) = db.usage_totals(&day)?;
    let (mp, mc) = db.usage_totals(day.get(..7).unwrap_or(&day))?;
    Ok((p.saturating_add(c), mp.saturating_add(mc)))
}

/// `Ok(Err(..))` when a configured budget is used up.
pub fn check(
    db: &Db,
    cfg: &BudgetConfig,
    now: i64,
) -> Result<Result<(), BudgetExceeded>, StoreError> {
    if cfg.daily_tokens.is_none() && cfg.monthly_tokens.is_none() {
        return Ok(Ok(()));
    }
    let (day, month) = used(db, now)?;
    if let Some(limit) = cfg.daily_tokens
        && day >= limit
    {
        return Ok(Err(BudgetExceeded {
            period: Period::Day,
            used: day,
            limit,
        }));
    }
    if let Some(limit) = cfg.monthly_tokens
        && month >= limit
    {
        return Ok(Err(BudgetExceeded {
            period: Period::Month,
            used: month,
            limit,
        }));
    }
    Ok(Ok(()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::Usage;

    #[test]
    fn budgets_refuse_once_reached() {
        let db = Db::open_in_memory().unwrap();
        let now = 1_764_000_000;
        let u = Usage {
            prompt_tokens: 60,
            completion_tokens: 40,
        };
        let none = BudgetConfig::default();
        let day = BudgetConfig {
            daily_tokens: Some(150),
            monthly_tokens: None,
        };
        let month = BudgetConfig {
            daily_tokens: None,
            monthly_tokens: Some(250),
        };
        assert_eq!(check(&db, &day, now).unwrap(), Ok(()));
        db.record_usage("s", "p", "m", u, now).unwrap();
        assert_eq!(check(&db, &day, now).unwrap(), Ok(()));
        db.record_usage("s", "p", "m", u, now).unwrap();
        let e = check(&db, &day, now).unwrap().unwrap_err();
        assert_eq!((e.period, e.used, e.limit), (Period::Day, 200, 150));
        assert!(e.to_string().contains("budget.daily_tokens"), "{e}");
        // The next day the daily budget is fresh but the month counts on.
        let tomorrow = now + 86_400;
        assert_eq!(day_of(tomorrow)[..7], day_of(now)[..7]);
        assert_eq!(check(&db, &day, tomorrow).unwrap(), Ok(()));
        db.record_usage("s", "p", "m", u, tomorrow).unwrap();
        let e = check(&db, &month, tomorrow).unwrap().unwrap_err();
        assert_eq!((e.period, e.used), (Period::Month, 300));
        assert!(e.to_string().contains("monthly"), "{e}");
        assert_eq!(check(&db, &none, tomorrow).unwrap(), Ok(()));
        assert_eq!(used(&db, tomorrow).unwrap(), (100, 300));
    }
}
