//! `yoctoclaw workers` lists the saved workers (`spawn_worker` with `save`);
//! `yoctoclaw workers remove NAME` deletes one (`store::workers`).
//!
//! # Bounds
//! At most `MAX_SAVED_WORKERS` lines, each cut to about 100 bytes of instructions.
//!
//! # Threads
//! Main thread: one command, SQLite and stdout.

use super::AppError;
use crate::store::Db;
use std::io::Write;

/// List, or remove with `["remove", NAME]`, printing to `out`.
pub fn run(db: &Db, words: &[String], out: &mut impl Write) -> Result<(), AppError> {
    let rt = |e: crate::store::StoreError| AppError::Runtime(e.to_string());
    let text = match words {
        [] => crate::tools::workers::list(db).map_err(|e| AppError::Runtime(e.to_string()))?,
        [r, name] if r == "remove" => {
            if !db.remove_worker(name).map_err(rt)? {
                return Err(AppError::Usage(format!("no saved worker {name:?}")));
            }
            format!("Removed worker {name}.")
        }
        _ => {
            return Err(AppError::Usage(
                "usage: yoctoclaw workers [remove NAME]".into(),
            ));
        }
    };
    writeln!(out, "{text}").map_err(|e| AppError::Runtime(e.to_string()))
}
