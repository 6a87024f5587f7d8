//! Shared helpers for the integration tests: temporary homes and running the binary.
#![allow(dead_code)]

pub mod binary;
pub mod fake_http;
pub mod fake_telegram;
pub mod gateway;
pub mod http_client;
pub mod tls;

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A temporary yoctoclaw home, removed on drop.
pub struct TempHome {
    pub dir: PathBuf,
}

impl TempHome {
    pub fn new(tag: &str) -> TempHome {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "yc-it-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        TempHome { dir }
    }

    /// Onboarded home with `config.json` replaced by `config`.
    pub fn onboarded(tag: &str, config: &str) -> TempHome {
        let h = TempHome::new(tag);
        let out = h.cmd(&["onboard"]).output().expect("run onboard");
        assert!(
            out.status.success(),
            "onboard failed: {}",
            text(&out.stderr)
        );
        h.write_config(config);
        h
    }

    pub fn write_config(&self, config: &str) {
        std::fs::write(self.dir.join("config.json"), config).expect("write config");
    }

    pub fn workspace(&self) -> PathBuf {
        self.dir.join("workspace")
    }

    /// The binary with `--home` set and a clean environment.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = binary::command();
        c.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .arg("--home")
            .arg(&self.dir)
            .args(args)
            .stdin(Stdio::null());
        c
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().expect("run yoctoclaw")
    }
}

impl Drop for TempHome {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[allow(unused_imports)]
pub use binary::{bin, hook};

/// The stdout of a run that must have succeeded (else a panic showing both streams).
pub fn succeeded(out: &std::process::Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A config pointing the provider at a fake server.
pub fn config_for(provider_url: &str, extra: &str) -> String {
    let sep = if extra.trim().is_empty() { "" } else { "," };
    format!(r#"{{"provider":{{"base_url":"{provider_url}/v1","model":"fake-model"}}{sep}{extra}}}"#)
}

/// The unit tests' helpers, compiled from the same file (`src/testkit.rs`): [`skipped`]
/// is the one way a test says it cannot run here (loud; a failure with
/// `YOCTOCLAW_NO_SKIP=1`).
#[path = "../../src/testkit.rs"]
pub mod testkit;
#[allow(unused_imports)] // not every test file skips
pub use testkit::skipped;

/// The Python interpreter that has the MCP SDK, by its real path (the gateway's servers
/// get a minimal environment, where a version manager's shim may not find its
/// versions), or `None` after a loud skip.
pub fn sdk_python(what: &str) -> Option<String> {
    let out = Command::new("python3")
        .args(["-c", "import sys, mcp.server; print(sys.executable)"])
        .stderr(Stdio::null())
        .output();
    match out {
        Ok(o) if o.status.success() => Some(String::from_utf8_lossy(&o.stdout).trim().to_string()),
        Ok(_) => {
            skipped(what, "python3 cannot `import mcp.server`: pip install mcp");
            None
        }
        Err(_) => {
            skipped(what, "python3 is not installed");
            None
        }
    }
}

/// A tool result as the model got it, without the fence untrusted results come in
/// (`<untrusted source="…">`, the screen's flag line, `</untrusted>`): what the tool
/// said. An error (our own words) is not fenced; anything else that is not shows as
/// `NOT FENCED: …`, so a test comparing results fails on it.
#[allow(dead_code)] // Not every test binary has untrusted tools.
pub fn unfence(content: &str) -> String {
    if content.starts_with("error: ") {
        return content.to_string();
    }
    let inner = content
        .strip_prefix("<untrusted source=\"")
        .and_then(|c| c.split_once("\">\n"))
        .and_then(|(_, c)| c.strip_suffix("\n</untrusted>"));
    let Some(inner) = inner else {
        return format!("NOT FENCED: {content}");
    };
    match inner.split_once('\n') {
        Some((first, rest)) if first.starts_with("[screen: ") => rest.to_string(),
        _ => inner.to_string(),
    }
}
