//! The layer rule of ARCHITECTURE.md, checked on the source: every top-level module of
//! `src/` sits in one layer of the table in ARCHITECTURE.md's "Layers" section, and may
//! import (`crate::NAME`) only modules of lower layers. A new module missing from the
//! table, or an import that points up or sideways, fails here with the file that made it.
//!
//! Edges are found the way the modgraph tool that `.ci/run` runs (when the machine has
//! it) finds them: `crate::NAME` paths (and `crate::{A, B}` groups) in each file's
//! non-test code (everything before its first `#[cfg(test)]`; files named `tests.rs` are
//! skipped), comments included.
//!
//! The same file checks that every non-test file's module header has a `# Threads`
//! section (ARCHITECTURE.md, "Threads").

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn layers() -> BTreeMap<String, usize> {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("ARCHITECTURE.md"))
            .expect("read ARCHITECTURE.md");
    let mut out = BTreeMap::new();
    for line in doc.lines() {
        let Some(rest) = line.trim().strip_prefix("layer ") else {
            continue;
        };
        // Only the table's form, `layer N: a b c` (the picture has no colon).
        let Some((n, modules)) = rest.split_once(':') else {
            continue;
        };
        let Ok(n) = n.trim().parse::<usize>() else {
            continue;
        };
        for m in modules.split_whitespace() {
            out.insert(m.to_string(), n);
        }
    }
    assert!(
        !out.is_empty(),
        "no `layer N: modules` lines in ARCHITECTURE.md"
    );
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// (from module, to module) -> files making the edge.
fn edges(src: &Path, modules: &BTreeSet<String>) -> BTreeMap<(String, String), Vec<String>> {
    let single = regex_lite::Regex::new(r"\bcrate::(\w+)").unwrap();
    let group = regex_lite::Regex::new(r"\bcrate::\{([^}]*)\}").unwrap();
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut out: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for f in files {
        if f.file_name().is_some_and(|n| n == "tests.rs") {
            continue;
        }
        let rel = f.strip_prefix(src).unwrap().to_string_lossy().into_owned();
        let top = rel
            .split('/')
            .next()
            .unwrap()
            .trim_end_matches(".rs")
            .to_string();
        if !modules.contains(&top) {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap();
        let mut targets = BTreeSet::new();
        for c in single.captures_iter(code) {
            targets.insert(c[1].to_string());
        }
        for c in group.captures_iter(code) {
            for item in c[1].split(',') {
                let head = item.trim().split("::").next().unwrap().trim();
                if !head.is_empty() {
                    targets.insert(head.to_string());
                }
            }
        }
        for t in targets {
            if t != top && modules.contains(&t) {
                out.entry((top.clone(), t)).or_default().push(rel.clone());
            }
        }
    }
    out
}

#[test]
fn every_module_imports_only_lower_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut modules = BTreeSet::new();
    for e in std::fs::read_dir(&src).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if p.is_dir() {
            modules.insert(name);
        } else if let Some(m) = name.strip_suffix(".rs")
            && m != "lib"
            && m != "main"
        {
            modules.insert(m.to_string());
        }
    }
    let layer = layers();
    let missing: Vec<_> = modules.iter().filter(|m| !layer.contains_key(*m)).collect();
    assert!(
        missing.is_empty(),
        "modules missing from ARCHITECTURE.md's layer table: {missing:?}"
    );
    let stale: Vec<_> = layer.keys().filter(|m| !modules.contains(*m)).collect();
    assert!(
        stale.is_empty(),
        "ARCHITECTURE.md lists modules that do not exist: {stale:?}"
    );
    let mut bad = Vec::new();
    for ((from, to), files) in edges(&src, &modules) {
        if layer[&to] >= layer[&from] {
            bad.push(format!(
                "{from} (layer {}) -> {to} (layer {}) in {}",
                layer[&from],
                layer[&to],
                files.join(", ")
            ));
        }
    }
    assert!(
        bad.is_empty(),
        "imports that do not point down a layer (see ARCHITECTURE.md):\n{}",
        bad.join("\n")
    );
}

/// The `//!` lines a file starts with: its module header.
fn module_header(text: &str) -> Vec<&str> {
    text.lines().take_while(|l| l.starts_with("//!")).collect()
}

/// Whether a module header has a `# Threads` section with at least one line of text.
fn has_threads_section(header: &[&str]) -> bool {
    header
        .iter()
        .position(|l| l.trim_end() == "//! # Threads")
        .and_then(|i| header.get(i + 1))
        .is_some_and(|next| {
            let text = next.trim_start_matches("//!").trim();
            !text.is_empty() && !text.starts_with('#')
        })
}

#[test]
fn the_threads_check_reads_a_header_the_way_files_write_it() {
    assert!(has_threads_section(&module_header(
        "//! A module.\n//!\n//! # Threads\n//! Any thread.\n\nuse x;\n"
    )));
    // Missing, empty, or only further down the file (not in the header): all refused.
    assert!(!has_threads_section(&module_header(
        "//! A module.\n//!\n//! # Blocking\n//! It blocks.\n"
    )));
    assert!(!has_threads_section(&module_header(
        "//! A module.\n//!\n//! # Threads\n//!\n//! # Bounds\n"
    )));
    assert!(!has_threads_section(&module_header(
        "//! A module.\n\n//! # Threads\n//! Any thread.\n"
    )));
}

/// Every non-test file of `src/` says in its module header which thread runs its code
/// (ARCHITECTURE.md, "Threads"); test modules (`tests.rs`) are exempt.
#[test]
fn every_source_file_says_which_thread_runs_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut missing: Vec<String> = files
        .iter()
        .filter(|f| f.file_name().is_none_or(|n| n != "tests.rs"))
        .filter(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            !has_threads_section(&module_header(&text))
        })
        .map(|f| f.strip_prefix(&src).unwrap().to_string_lossy().into_owned())
        .collect();
    missing.sort();
    assert!(
        missing.is_empty(),
        "files whose `//!` header has no `# Threads` section (which thread runs this code?):\n{}",
        missing.join("\n")
    );
}
