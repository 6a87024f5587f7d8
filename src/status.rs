//! `yoctoclaw status`: what is configured and how it is doing.

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
