//! The system prompt: workspace bootstrap files, the skills index, relevant memories, what
//! untrusted content looks like (`untrusted::PROMPT_NOTE`), the current time and the channel.
//!
//! # Bounds
//! Each bootstrap file contributes at most `MAX_BOOTSTRAP_FILE_BYTES`; the skills index at
//! most `MAX_SKILLS` entries and `MAX_SKILLS_INDEX_BYTES`.
//!
//! # Caching
//! The files and the skills index are read again when the cached text is older than
//! `PROMPT_FILES_TTL_SECS`: an edit to `SOUL.md` applies within seconds, and a busy
//! gateway does not open six files and list a folder for every message.
//!
//! # Threads
//! Executor thread: the workspace files are small regular files read at most every
//! `PROMPT_FILES_TTL_SECS`, capped (see `read_capped`).

use crate::chat::ChannelKind;
use crate::limits::{
    MAX_BOOTSTRAP_FILE_BYTES, MAX_SKILLS, MAX_SKILLS_INDEX_BYTES, PROMPT_FILES_TTL_SECS,
};
use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// Bootstrap files, in prompt order.
pub const BOOTSTRAP_FILES: &[&str] =
    &["IDENTITY.md", "SOUL.md", "USER.md", "AGENTS.md", "TOOLS.md"];

/// What the prompt needs to know about this turn.
pub struct PromptContext<'a> {
    /// The workspace part: bootstrap files and skills index ([`workspace_part`]).
    pub workspace_part: &'a str,
    pub session: &'a str,
    pub channel: ChannelKind,
    /// Local time already formatted, e.g. `2026-11-22 18:40 (Europe/Berlin, +01:00)`.
    pub now_text: &'a str,
    /// The memory section (already bounded), if any.
    pub memory: Option<&'a str>,
}

/// The bootstrap files, then the skills index, as they stand in `workspace` now.
pub fn workspace_part(workspace: &Path) -> String {
    let mut out = String::with_capacity(4 * 1024);
    for name in BOOTSTRAP_FILES {
        if let Some(text) = read_capped(&workspace.join(name), MAX_BOOTSTRAP_FILE_BYTES) {
            let t = text.trim();
            if !t.is_empty() {
                out.push_str(t);
                out.push_str("\n\n");
            }
        }
    }
    if out.is_empty() {
        out.push_str(
            "You are yoctoclaw, a helpful personal assistant running on a small Linux board.\n\n",
        );
    }
    let skills = skills_index(workspace);
    if !skills.is_empty() {
        out.push_str("## Skills\nRead a skill's SKILL.md with read_file before using it.\n");
        out.push_str(&skills);
        out.push('\n');
    }
    out
}

/// [`workspace_part`], read at most once per `PROMPT_FILES_TTL_SECS`.
#[derive(Default)]
pub struct WorkspaceCache {
    cached: RefCell<Option<(Instant, Rc<str>)>>,
}

impl WorkspaceCache {
    pub fn get(&self, workspace: &Path) -> Rc<str> {
        let ttl = Duration::from_secs(PROMPT_FILES_TTL_SECS);
        if let Some((at, text)) = self.cached.borrow().as_ref()
            && at.elapsed() < ttl
        {
            return text.clone();
        }
        let text: Rc<str> = workspace_part(workspace).into();
        *self.cached.borrow_mut() = Some((Instant::now(), text.clone()));
        text
    }
}

pub fn build(ctx: &PromptContext<'_>) -> String {
    let mut out = String::with_capacity(ctx.workspace_part.len() + 2 * 1024);
    out.push_str(ctx.workspace_part);
    if let Some(mem) = ctx.memory.filter(|m| !m.trim().is_empty()) {
        out.push_str("## Memory\n<memory>\n");
        out.push_str(mem.trim());
        out.push_str("\n</memory>\n\n");
    }
    out.push_str(super::untrusted::PROMPT_NOTE);
    out.push('\n');
    out.push_str("## Context\n");
    out.push_str(&format!(
        "Current time: {}\nChannel: {}\nSession: {}\n",
        ctx.now_text,
        ctx.channel.as_str(),
        ctx.session
    ));
    out
}

/// Read a text file, at most `max` bytes, lossily decoded. `None` when absent.
pub fn read_capped(path: &Path, max: usize) -> Option<String> {
    // A FIFO or device named SOUL.md would block the executor on every turn: only
    // regular files are read, and whatever else is there is skipped with a warning.
    match crate::files::read_regular(path, max, true) {
        Ok((buf, _)) => Some(String::from_utf8_lossy(&buf).into_owned()),
        Err(crate::files::ReadError::NotFound) => None,
        Err(e) => {
            log::warn!("{} skipped: {e}", path.display());
            None
        }
    }
}

/// `- name: description` for each `skills/<name>/SKILL.md`, from its front matter.
pub fn skills_index(workspace: &Path) -> String {
    let Ok(rd) = std::fs::read_dir(workspace.join("skills")) else {
        return String::new();
    };
    let mut items: Vec<String> = Vec::new();
    for entry in rd.flatten().take(MAX_SKILLS * 4) {
        if items.len() >= MAX_SKILLS {
            break;
        }
        let dir = entry.path();
        let Some(text) = read_capped(&dir.join("SKILL.md"), 4096) else {
            continue;
        };
        let fallback = entry.file_name().to_string_lossy().into_owned();
        let (name, desc) = front_matter(&text);
        let name = name.unwrap_or(fallback);
        let desc = desc.unwrap_or_default();
        items.push(format!(
            "- {name}: {desc} (skills/{}/SKILL.md)",
            entry.file_name().to_string_lossy()
        ));
    }
    items.sort();
    let mut out = String::new();
    for i in items {
        if out.len() + i.len() + 1 > MAX_SKILLS_INDEX_BYTES {
            break;
        }
        out.push_str(&i);
        out.push('\n');
    }
    out
}

/// `name:` and `description:` from a `---` front matter block.
fn front_matter(text: &str) -> (Option<String>, Option<String>) {
    let mut lines = text.lines();
    if lines.next().map(str::trim) != Some("---") {
        return (None, None);
    }
    let (mut name, mut desc) = (None, None);
    for line in lines.take(50) {
        let line = line.trim();
        if line == "---" {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            let v = v.trim().trim_matches('"').trim_matches('\'').to_string();
            match k.trim() {
                "name" if !v.is_empty() => name = Some(v),
                "description" if !v.is_empty() => desc = Some(v),
                _ => {}
            }
        }
    }
    (name, desc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompt_has_files_skills_time_and_channel() {
        let d = std::env::temp_dir().join(format!("yc-prompt-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("skills/weather")).unwrap();
        std::fs::write(d.join("SOUL.md"), "Be kind.").unwrap();
        std::fs::write(d.join("USER.md"), "Owner is Ada.").unwrap();
        std::fs::write(
            d.join("skills/weather/SKILL.md"),
            "---\nname: weather\ndescription: Get the forecast\n---\nbody",
        )
        .unwrap();
        let part = workspace_part(&d);
        let p = build(&PromptContext {
            workspace_part: &part,
            session: "stdio:default",
            channel: ChannelKind::Terminal,
            now_text: "2026-11-22 10:00 (UTC)",
            memory: Some("- likes tea"),
        });
        assert!(p.find("Be kind.").unwrap() < p.find("Owner is Ada.").unwrap());
        assert!(p.contains("- weather: Get the forecast"));
        assert!(p.contains("<memory>\n- likes tea\n</memory>"));
        assert!(p.contains("Current time: 2026-11-22 10:00 (UTC)"));
        assert!(p.contains("Channel: terminal"));
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn workspace_cache_serves_the_text_it_read_until_it_expires() {
        let d = std::env::temp_dir().join(format!("yc-prompt-cache-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("SOUL.md"), "First soul.").unwrap();
        let cache = WorkspaceCache::default();
        assert!(cache.get(&d).contains("First soul."));
        std::fs::write(d.join("SOUL.md"), "Second soul.").unwrap();
        // Within the TTL the cached text stands (no file is read per message)...
        assert!(cache.get(&d).contains("First soul."));
        // ...and once it has expired the edit shows.
        let old = Instant::now()
            .checked_sub(Duration::from_secs(PROMPT_FILES_TTL_SECS + 1))
            .unwrap();
        if let Some((at, _)) = cache.cached.borrow_mut().as_mut() {
            *at = old;
        }
        assert!(cache.get(&d).contains("Second soul."));
        let _ = std::fs::remove_dir_all(&d);
    }
}
