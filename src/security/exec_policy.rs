//! Shell command policy for the `exec` tool: refuses destructive and secret-reading commands.
//!
//! Why: the model writes the commands `exec` runs. A confused or manipulated model must not wipe
//! the board, format the SD card, power it off, fork-bomb it, or read the keys that protect the
//! owner's accounts. [`check_command`] is called on every command before it is spawned.
//!
//! What it is **not**: a sandbox. A shell is a programming language; a determined attacker with
//! arbitrary code execution can always obfuscate (`$(printf '\x72m')`, scripts written to disk
//! first, interpreters). This is a guard rail against the likely mistakes and the well-known
//! spellings of them, backed by the other layers (workspace confinement, the supervised
//! approval prompt, an environment without secrets, output scrubbing).
//!
//! # How a command is checked
//! 1. **Normalise**: quotes (`'` `"`) and backslash escapes are removed, `$'\x72m'` strings
//!    are decoded, line breaks become `;`, other whitespace and control characters become
//!    spaces, and every spelling of the home directory (`~`, `$HOME`, `${HOME}`, `"$HOME"`,
//!    `${HOME:-…}`) is replaced by its literal path (`~name` by `/home/name`).
//! 2. **Tokenise** into words and operators (`;` `&&` `||` `|` `&` `(` `)` `$(` backtick `{` `}`
//!    redirections).
//! 3. **Split** into simple commands. From one to the next, `cd` and `NAME=value` assignments
//!    are followed in order (so `cd /; rm -rf usr` and `x=/; rm -rf $x` are seen for what they
//!    are); `{a,b}` braces are expanded into words; what only prefixes a command is stripped:
//!    `VAR=x`, `sudo`, `doas`, `env`, `exec`, `nohup`, `nice`, `timeout`, `xargs`, `busybox`,
//!    shell keywords (`if`, `then`, `do`, …) and `sh -c` / `bash -c`. The command name is
//!    compared by its base name, so `/sbin/shutdown` is `shutdown`.
//! 4. **Rules** per command (rm, find, chmod, dd, mkfs, shutdown, …), for redirection targets, for
//!    every word that names a path (resolved lexically against the workspace, `..` included,
//!    with brace expansion and `*`/`?`/`[…]` globs matched against the protected names) and for
//!    fork bombs.
//!
//! # Decisions
//! - Words that only *mention* a dangerous command are fine: `echo reboot later` and
//!   `echo "rebooting is not needed"` are allowed; only the command position counts.
//! - Because quotes are removed before splitting, `echo "a; reboot"` is refused: conservative.
//! - `rm -rf *`, `rm -rf .` in the workspace are refused: they wipe the agent's own identity
//!   files. `rm -rf build`, `rm -rf build/*` are allowed.
//! - Anything under the yoctoclaw home other than `workspace/` (config, `secrets.env`, the
//!   database) is off limits to every command, including `ls ..`; a file named `secrets.env` or
//!   a private ssh key file name is refused wherever it is.
//!
//! # Known gaps
//! Anything computed at run time is invisible: `$(printf …)` or `$(cat file)` as a command or
//! path, `… | base64 -d | sh`, scripts written first and run later, interpreters' own code
//! (`python3 -c` is only seen through its words), symlinks (paths are resolved lexically, the
//! file system is never consulted), `cd` inside a subshell or a condition (followed as if it
//! always ran), and variables whose value held spaces (quotes are gone by then).
//!
//! # Bounds
//! - Commands longer than [`MAX_COMMAND_BYTES`] are refused unread.
//! - At most `MAX_TRACKED_VARS` (64) assignments are followed; later ones are not substituted.
//! - Brace expansion of one word stops at [`MAX_BRACE_EXPANSIONS`] words; a word that would
//!   expand further is refused as too complex to check.
//! - No recursion; time is roughly linear in the command length.
//!
//! # Threads
//! Any thread: pure functions over their arguments, no I/O.

use std::error::Error;
use std::fmt;
use std::sync::OnceLock;

use regex_lite::Regex;

mod shell;

use shell::{
    Op, Simple, Tok, basename, command_of, components, expand_braces, expand_home, glob_match,
    glob_prefix, has_glob, has_literal, is_assignment, is_glob_only, is_long_opt, normalise,
    positionals, short_opts_contain, split_commands, tokenise,
};

/// Commands longer than this are refused without being examined.
pub const MAX_COMMAND_BYTES: usize = 16 * 1024;

/// Brace expansion of one word yields at most this many words; beyond, the command is refused.
pub const MAX_BRACE_EXPANSIONS: usize = 256;

/// A fork-bomb function body is looked at for at most this many tokens.
const MAX_FUNCTION_BODY_TOKENS: usize = 256;

/// The command excerpt in a refusal is cut to this many characters.
const MAX_SNIPPET_CHARS: usize = 80;

/// Stands for the home directory when the context does not know it.
const UNKNOWN_HOME: &str = "/~";

/// Where a command runs and whose home it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyContext {
    /// The user's `$HOME` (absolute), if known.
    pub home_dir: Option<String>,
    /// The yoctoclaw home (absolute); commands run in its `workspace/`.
    pub app_home: String,
}

/// Why a command was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// Longer than [`MAX_COMMAND_BYTES`].
    TooLong,
    /// Brace expansion beyond [`MAX_BRACE_EXPANSIONS`].
    TooComplex,
    /// `rm -r` (or `find -delete`) of `/`.
    DeleteRoot,
    /// Recursive delete of a directory directly under `/`.
    DeleteTopLevel,
    /// Recursive delete of a system directory or one just below it.
    DeleteSystem,
    /// Recursive delete of the home directory or one of its ancestors.
    DeleteHome,
    /// Recursive delete of the yoctoclaw home or one of its ancestors.
    DeleteAppHome,
    /// Recursive delete of the whole workspace.
    DeleteWorkspace,
    /// `rm --no-preserve-root`.
    NoPreserveRoot,
    /// `mv` of a protected directory.
    MoveProtected,
    /// `chmod -R` / `chown -R` of a protected directory.
    PermissionsProtected,
    /// `mkfs`, `wipefs`, `mkswap`, `blkdiscard` …
    Format,
    /// `fdisk`, `sfdisk`, `parted` … other than listing.
    Partition,
    /// A write to a disk device (`dd of=/dev/…`, `> /dev/sda`, `tee /dev/mmcblk0` …).
    DeviceWrite,
    /// A write to `/proc/sysrq-trigger`.
    Sysrq,
    /// `shutdown`, `reboot`, `halt`, `poweroff`, `init 0`, `systemctl reboot` …
    Power,
    /// `kill -9 -1`, `kill 1`, `killall5`.
    KillAll,
    /// A function that calls itself twice in the background, or `fork while fork`.
    ForkBomb,
    /// Any path inside `.ssh` or `.gnupg`.
    KeyDir,
    /// `secrets.env`, `id_rsa`, `.netrc` … wherever they are.
    SecretFile,
    /// The yoctoclaw home outside `workspace/`.
    AppHome,
    /// `/etc/shadow`, `/etc/gshadow`.
    PasswordHashes,
    /// `/proc/<pid>/environ` or `/proc/<pid>/mem`.
    ProcessSecrets,
    /// A recursive reader (`grep -r`, `tar`, `rsync` …) over a directory holding the yoctoclaw home.
    RecursiveRead,
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Reason::TooLong => "command too long to check",
            Reason::TooComplex => "too many brace expansions to check",
            Reason::DeleteRoot => "recursive delete of the root directory",
            Reason::DeleteTopLevel => "recursive delete of a top-level directory",
            Reason::DeleteSystem => "recursive delete of a system directory",
            Reason::DeleteHome => "recursive delete of the home directory",
            Reason::DeleteAppHome => "recursive delete of the yoctoclaw home",
            Reason::DeleteWorkspace => "recursive delete of the whole workspace",
            Reason::NoPreserveRoot => "rm --no-preserve-root",
            Reason::MoveProtected => "moving a protected directory",
            Reason::PermissionsProtected => "recursive permission change of a protected directory",
            Reason::Format => "formatting a disk",
            Reason::Partition => "rewriting a partition table",
            Reason::DeviceWrite => "writing to a disk device",
            Reason::Sysrq => "writing to /proc/sysrq-trigger",
            Reason::Power => "shutdown, reboot or suspend",
            Reason::KillAll => "killing every process or init",
            Reason::ForkBomb => "fork bomb",
            Reason::KeyDir => "reading ssh or gpg keys",
            Reason::SecretFile => "reading a secrets or private-key file",
            Reason::AppHome => "touching the yoctoclaw home outside workspace/",
            Reason::PasswordHashes => "reading password hashes",
            Reason::ProcessSecrets => "reading another process's environment or memory",
            Reason::RecursiveRead => "recursive read of a directory holding the yoctoclaw home",
        })
    }
}

/// A refused command: the excerpt that triggered the refusal and the reason.
/// Displays as `refused: rm -rf / (recursive delete of the root directory)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denied {
    reason: Reason,
    command: String,
}

impl Denied {
    fn new(reason: Reason, command: &str) -> Self {
        let mut snippet: String = command.chars().take(MAX_SNIPPET_CHARS).collect();
        if command.chars().nth(MAX_SNIPPET_CHARS).is_some() {
            snippet.push('…');
        }
        Denied {
            reason,
            command: snippet,
        }
    }

    /// Which rule refused the command.
    pub fn reason(&self) -> Reason {
        self.reason
    }

    /// The (normalised, shortened) command or simple command that was refused.
    pub fn command(&self) -> &str {
        &self.command
    }
}

impl fmt::Display for Denied {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "refused: {} ({})", self.command, self.reason)
    }
}

impl Error for Denied {}

/// Checks one shell command line against the policy. `Ok(())` means no rule matched; it does
/// not mean the command is safe (see the module documentation).
pub fn check_command(cmd: &str, ctx: &PolicyContext) -> Result<(), Denied> {
    if cmd.len() > MAX_COMMAND_BYTES {
        return Err(Denied::new(Reason::TooLong, cmd));
    }
    let mut env = Env::new(ctx);
    let norm = normalise(cmd, &env.home);
    let toks = tokenise(&norm);
    if is_fork_bomb(&toks, &norm) {
        return Err(Denied::new(Reason::ForkBomb, &norm));
    }
    let mut vars: Vec<(String, String)> = Vec::new();
    for raw in split_commands(&toks) {
        let simple = expand_simple(&raw, &vars).map_err(|r| Denied::new(r, &raw.text()))?;
        let deny = |reason| Denied::new(reason, &simple.text());
        check_simple(&simple, &env).map_err(deny)?;
        for word in simple
            .words
            .iter()
            .chain(&simple.redir_out)
            .chain(&simple.redir_in)
        {
            check_word_paths(word, &env).map_err(deny)?;
        }
        remember(&simple, &mut vars, &mut env);
    }
    Ok(())
}

/// Variables assigned earlier in the command line are substituted (`x=/; rm -rf $x`), at most
/// this many of them.
const MAX_TRACKED_VARS: usize = 64;

/// Substitutes the variables assigned earlier and expands braces into separate words
/// (`{rm,-rf,/}` is `rm -rf /`), as the shell does.
fn expand_simple(raw: &Simple, vars: &[(String, String)]) -> Result<Simple, Reason> {
    let expand_all = |words: &[String]| -> Result<Vec<String>, Reason> {
        let mut out = Vec::with_capacity(words.len());
        for w in words {
            let w = substitute_vars(w, vars)?;
            out.extend(expand_braces(&w)?);
            if out.len() > MAX_BRACE_EXPANSIONS * 4 {
                return Err(Reason::TooComplex);
            }
        }
        Ok(out)
    };
    Ok(Simple {
        words: expand_all(&raw.words)?,
        redir_out: expand_all(&raw.redir_out)?,
        redir_in: expand_all(&raw.redir_in)?,
    })
}

/// Replaces `$NAME` and `${NAME}` by values assigned earlier; unknown variables stay.
fn substitute_vars(word: &str, vars: &[(String, String)]) -> Result<String, Reason> {
    if vars.is_empty() || !word.contains('$') {
        return Ok(word.to_string());
    }
    let mut out = String::with_capacity(word.len());
    let mut rest = word;
    while let Some(p) = rest.find('$') {
        out.push_str(rest.get(..p).unwrap_or(""));
        let after = rest.get(p + 1..).unwrap_or("");
        let (name, consumed) = match after.strip_prefix('{') {
            Some(inner) => match inner.find('}') {
                Some(e) => (inner.get(..e).unwrap_or(""), e + 2),
                None => ("", 0),
            },
            None => {
                let e = after
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(after.len());
                (after.get(..e).unwrap_or(""), e)
            }
        };
        match vars.iter().rev().find(|(n, _)| n == name) {
            Some((_, value)) if !name.is_empty() => {
                out.push_str(value);
                rest = after.get(consumed..).unwrap_or("");
            }
            _ => {
                out.push('$');
                rest = after;
            }
        }
        if out.len() > MAX_COMMAND_BYTES {
            return Err(Reason::TooComplex);
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// Records what a simple command changes for the ones after it: variable assignments and the
/// directory (`cd`), followed sequentially (subshells and conditions are not modelled).
fn remember(simple: &Simple, vars: &mut Vec<(String, String)>, env: &mut Env) {
    let mut words = simple.words.as_slice();
    if let Some((first, rest)) = words.split_first()
        && matches!(
            first.as_str(),
            "export" | "declare" | "local" | "readonly" | "typeset"
        )
    {
        words = rest;
    }
    for w in words.iter().take_while(|w| is_assignment(w)) {
        if let Some((name, value)) = w.split_once('=')
            && vars.len() < MAX_TRACKED_VARS
            && value.len() <= MAX_COMMAND_BYTES / 4
        {
            vars.push((name.to_string(), value.to_string()));
        }
    }
    if let Some(("cd" | "pushd", args)) = command_of(&simple.words) {
        match positionals(args).first().map(|a| a.as_str()) {
            None => env.cwd = env.home_comps.clone(),
            Some("-") => {}
            Some(dir) => env.cwd = components(dir, &env.cwd),
        }
    }
}

/// Directories whose deletion (or that of their direct children) breaks the system.
const SYSTEM_DIRS: &[&str] = &[
    "bin", "boot", "dev", "etc", "home", "lib", "lib32", "lib64", "libx32", "media", "mnt", "opt",
    "proc", "root", "run", "sbin", "snap", "srv", "sys", "usr", "var",
];

/// File names that hold credentials, refused wherever they are.
const SECRET_FILE_NAMES: &[&str] = &[
    "secrets.env",
    "id_rsa",
    "id_dsa",
    "id_ecdsa",
    "id_ed25519",
    "id_ecdsa_sk",
    "id_ed25519_sk",
    ".git-credentials",
    ".netrc",
];

/// Directories whose contents are keys.
const KEY_DIRS: &[&str] = &[".ssh", ".gnupg"];

/// `/dev` entries that are fine to write to with `dd of=`.
const HARMLESS_DEVICES: &[&str] = &["null", "zero", "full", "stdout", "stderr", "tty"];

/// `systemctl` / `loginctl` verbs and targets that stop or suspend the machine.
const POWER_VERBS: &[&str] = &[
    "poweroff",
    "reboot",
    "halt",
    "kexec",
    "soft-reboot",
    "suspend",
    "hibernate",
    "hybrid-sleep",
    "suspend-then-hibernate",
    "rescue",
    "emergency",
    "poweroff.target",
    "reboot.target",
    "halt.target",
    "kexec.target",
    "rescue.target",
    "emergency.target",
];

/// Paths the policy knows, as lexical components.
struct Env {
    /// Literal that replaces every spelling of the home directory.
    home: String,
    home_comps: Vec<String>,
    /// Empty when the app home is unknown (its rules are then off).
    app_comps: Vec<String>,
    ws_comps: Vec<String>,
    /// Where relative paths start: the workspace, or where `cd` went.
    cwd: Vec<String>,
}

impl Env {
    fn new(ctx: &PolicyContext) -> Self {
        let home = match ctx.home_dir.as_deref() {
            Some(h) if h.starts_with('/') => match h.trim_end_matches('/') {
                "" => "/".to_string(),
                t => t.to_string(),
            },
            _ => UNKNOWN_HOME.to_string(),
        };
        let app = expand_home(ctx.app_home.trim(), &home);
        let app_comps = components(&app, &[]);
        let mut ws_comps = app_comps.clone();
        ws_comps.push("workspace".to_string());
        Env {
            home_comps: components(&home, &[]),
            home,
            app_comps,
            cwd: ws_comps.clone(),
            ws_comps,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Rules per simple command

fn check_simple(simple: &Simple, env: &Env) -> Result<(), Reason> {
    for target in &simple.redir_out {
        check_write_target(target, env, false)?;
    }
    let Some((name, args)) = command_of(&simple.words) else {
        return Ok(());
    };
    match name {
        "rm" => check_rm(args, env),
        "find" => check_find(args, env),
        "chmod" | "chown" | "chgrp" => {
            let recursive = args
                .iter()
                .any(|a| short_opts_contain(a, &['R']) || is_long_opt(a, "--recursive"));
            if recursive {
                for t in positionals(args).into_iter().skip(1) {
                    map_delete(t, env, |_| Reason::PermissionsProtected)?;
                }
            }
            Ok(())
        }
        "mv" => {
            let pos = positionals(args);
            if let Some((dest, sources)) = pos.split_last() {
                for s in sources {
                    map_delete(s, env, |_| Reason::MoveProtected)?;
                }
                check_write_target(dest, env, false)?;
            }
            Ok(())
        }
        "cp" | "install" => {
            if let Some(dest) = positionals(args).last() {
                check_write_target(dest, env, false)?;
            }
            check_recursive_reader(name, args, env)
        }
        "tee" | "shred" => {
            for t in positionals(args) {
                check_write_target(t, env, false)?;
            }
            Ok(())
        }
        "dd" => {
            for a in args {
                if let Some(t) = a.strip_prefix("of=") {
                    check_write_target(t, env, true)?;
                }
            }
            Ok(())
        }
        n if n.starts_with("mkfs") => Err(Reason::Format),
        "mke2fs" | "mkswap" | "wipefs" | "blkdiscard" | "mkdosfs" | "mkntfs" | "mkexfatfs"
        | "mformat" | "flash_erase" | "flash_eraseall" => Err(Reason::Format),
        "fdisk" | "sfdisk" | "cfdisk" | "parted" | "gdisk" | "sgdisk" => {
            let listing = args.iter().any(|a| {
                matches!(
                    a.as_str(),
                    "-l" | "--list" | "-d" | "--dump" | "print" | "-p" | "--print"
                )
            });
            if listing {
                Ok(())
            } else {
                Err(Reason::Partition)
            }
        }
        "shutdown" | "reboot" | "halt" | "poweroff" | "kexec" => Err(Reason::Power),
        "init" | "telinit" => match args.first().map(String::as_str) {
            Some("0" | "1" | "6" | "s" | "S" | "single") => Err(Reason::Power),
            _ => Ok(()),
        },
        "systemctl" | "loginctl" => {
            if args.iter().any(|a| POWER_VERBS.contains(&a.as_str())) {
                Err(Reason::Power)
            } else {
                Ok(())
            }
        }
        "kill" => check_kill(args),
        "killall5" => Err(Reason::KillAll),
        _ => check_recursive_reader(name, args, env),
    }
}

fn check_rm(args: &[String], env: &Env) -> Result<(), Reason> {
    let mut recursive = false;
    let mut targets = Vec::new();
    let mut opts = true;
    for a in args {
        if opts && a == "--" {
            opts = false;
        } else if opts && a.starts_with("--") && a.len() > 2 {
            if is_long_opt(a, "--recursive") {
                recursive = true;
            }
            if is_long_opt(a, "--no-preserve-root") {
                return Err(Reason::NoPreserveRoot);
            }
        } else if opts && a.len() > 1 && a.starts_with('-') {
            if a.contains(['r', 'R']) {
                recursive = true;
            }
        } else {
            targets.push(a);
        }
    }
    if recursive {
        for t in targets {
            map_delete(t, env, |r| r)?;
        }
    }
    Ok(())
}

fn check_find(args: &[String], env: &Env) -> Result<(), Reason> {
    let runs = |w: &[String]| matches!(w, [a, _] if matches!(a.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir"));
    let deletes = args.iter().any(|a| a == "-delete")
        || args.windows(2).any(|w| {
            runs(w)
                && matches!(
                    w.get(1).map(|c| basename(c)),
                    Some("rm" | "shred" | "unlink")
                )
        });
    let executes = args.windows(2).any(runs);
    if !deletes && !executes {
        return Ok(());
    }
    let mut starts: Vec<&str> = Vec::new();
    let mut i = 0;
    while let Some(a) = args.get(i) {
        match a.as_str() {
            "-H" | "-L" | "-P" => {}
            "-D" => i += 1,
            a if a.starts_with("-O") => {}
            a if a.starts_with('-') || a == "!" || a == "(" => break,
            a => starts.push(a),
        }
        i += 1;
    }
    if starts.is_empty() {
        starts.push(".");
    }
    for s in starts {
        // find deletes what matched, not its start: starting in the workspace or in a
        // top-level scratch directory (`/tmp`) is fine, at `/`, a system directory or the
        // home it is not.
        if deletes {
            match map_delete(s, env, |r| r) {
                Err(Reason::DeleteWorkspace | Reason::DeleteTopLevel) | Ok(()) => {}
                Err(r) => return Err(r),
            }
        }
        check_not_ancestor_of_app_home(s, env)?;
    }
    Ok(())
}

fn check_kill(args: &[String]) -> Result<(), Reason> {
    let mut skip_next = false;
    for (i, a) in args.iter().enumerate() {
        if skip_next {
            skip_next = false;
            continue;
        }
        if a == "-s" || a == "-n" {
            skip_next = true;
            continue;
        }
        let last = i + 1 == args.len();
        if a == "1" || (a == "-1" && last && i > 0) {
            return Err(Reason::KillAll);
        }
    }
    Ok(())
}

/// `grep -r`, `rg`, `tar`, `rsync`, `cp -r` … over a directory that holds the yoctoclaw home would
/// read `secrets.env`.
fn check_recursive_reader(name: &str, args: &[String], env: &Env) -> Result<(), Reason> {
    let recursive_flag = |letters: &[char]| {
        args.iter().any(|a| {
            short_opts_contain(a, letters)
                || is_long_opt(a, "--recursive")
                || is_long_opt(a, "--dereference-recursive")
                || is_long_opt(a, "--archive")
        })
    };
    let (recursive, first_is_pattern) = match name {
        "grep" | "egrep" | "fgrep" | "zgrep" => (recursive_flag(&['r', 'R']), true),
        "rg" | "ag" | "ack" => (true, true),
        "tar" | "rsync" | "7z" | "bsdtar" => (true, false),
        "cp" => (recursive_flag(&['r', 'R', 'a']), false),
        "scp" | "zip" => (recursive_flag(&['r']), false),
        _ => (false, false),
    };
    if !recursive {
        return Ok(());
    }
    let mut pattern_given = false;
    let mut paths = Vec::new();
    let mut i = 0;
    while let Some(a) = args.get(i) {
        if matches!(a.as_str(), "-e" | "-f" | "--regexp" | "--file") {
            pattern_given = true;
            i += 2;
            continue;
        }
        if a.len() > 1 && a.starts_with('-') {
            i += 1;
            continue;
        }
        paths.push(a.as_str());
        i += 1;
    }
    let skip = usize::from(first_is_pattern && !pattern_given);
    for p in paths.into_iter().skip(skip) {
        check_not_ancestor_of_app_home(p, env)?;
    }
    Ok(())
}

fn check_not_ancestor_of_app_home(word: &str, env: &Env) -> Result<(), Reason> {
    if env.app_comps.is_empty() {
        return Ok(());
    }
    for candidate in expand_braces(word)? {
        let comps = components(&candidate, &env.cwd);
        if comps.len() < env.app_comps.len() && glob_prefix(&comps, &env.app_comps) {
            return Err(Reason::RecursiveRead);
        }
    }
    Ok(())
}

/// Runs the recursive-delete rule on every expansion of `word`, mapping its reason.
fn map_delete(word: &str, env: &Env, map: impl Fn(Reason) -> Reason) -> Result<(), Reason> {
    for candidate in expand_braces(word)? {
        let comps = components(&candidate, &env.cwd);
        if let Some(reason) = protected_from_delete(&comps, env) {
            return Err(map(reason));
        }
    }
    Ok(())
}

/// Why deleting `comps` recursively is refused, if it is.
fn protected_from_delete(comps: &[String], env: &Env) -> Option<Reason> {
    let mut p = comps;
    while let Some((last, rest)) = p.split_last() {
        if is_glob_only(last) {
            p = rest;
        } else {
            break;
        }
    }
    let first = match p.first() {
        None => return Some(Reason::DeleteRoot),
        Some(f) => f,
    };
    if has_glob(first) || (p.len() == 1 && !SYSTEM_DIRS.contains(&first.as_str())) {
        return Some(Reason::DeleteTopLevel);
    }
    if p.len() == 1 {
        return Some(Reason::DeleteSystem);
    }
    if p.len() <= env.home_comps.len() && glob_prefix(p, &env.home_comps) {
        return Some(Reason::DeleteHome);
    }
    if !env.app_comps.is_empty() {
        if p.len() <= env.app_comps.len() && glob_prefix(p, &env.app_comps) {
            return Some(Reason::DeleteAppHome);
        }
        if p.len() == env.ws_comps.len() && glob_prefix(p, &env.ws_comps) {
            return Some(Reason::DeleteWorkspace);
        }
    }
    if p.len() == 2 && SYSTEM_DIRS.iter().any(|d| glob_match(first, d)) {
        return Some(Reason::DeleteSystem);
    }
    None
}

fn block_device_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        // A constant pattern, covered by the tests: this cannot fail.
        Regex::new(
            r"^(?:sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|mmcblk[0-9]|nvme[0-9]|mtd|md[0-9]|md/|dm-[0-9]|loop[0-9]|ubi|ram[0-9]|nbd[0-9]|disk/|mapper/|block/|root$|mem$|kmem$|port$)",
        )
        .expect("constant device pattern compiles")
    })
}

/// Refuses writes to disk devices (any `/dev` entry but a few harmless ones when `any_device`)
/// and to `/proc/sysrq-trigger`.
fn check_write_target(word: &str, env: &Env, any_device: bool) -> Result<(), Reason> {
    for candidate in expand_braces(word)? {
        let comps = components(&candidate, &env.cwd);
        let in_dev = comps.first().is_some_and(|c| glob_match(c, "dev"));
        if in_dev && comps.len() >= 2 {
            let rest = comps.get(1..).unwrap_or(&[]).join("/");
            if rest.chars().any(|c| matches!(c, '*' | '?' | '['))
                || block_device_re().is_match(&rest)
                || (any_device && !(comps.len() == 2 && HARMLESS_DEVICES.contains(&rest.as_str())))
            {
                return Err(Reason::DeviceWrite);
            }
        }
        if comps.len() == 2
            && comps.first().is_some_and(|c| glob_match(c, "proc"))
            && comps.get(1).is_some_and(|c| glob_match(c, "sysrq-trigger"))
        {
            return Err(Reason::Sysrq);
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Path rules over every word

fn check_word_paths(word: &str, env: &Env) -> Result<(), Reason> {
    for piece in word.split(['=', ':']) {
        if piece.is_empty() {
            continue;
        }
        for candidate in expand_braces(piece)? {
            let comps = components(&candidate, &env.cwd);
            check_read_path(&comps, env)?;
        }
    }
    Ok(())
}

fn check_read_path(comps: &[String], env: &Env) -> Result<(), Reason> {
    let in_ws = comps.starts_with(&env.ws_comps) && !env.app_comps.is_empty();
    // Inside the workspace names compare literally (a `*` there only reaches workspace files);
    // outside, a glob that could name a protected entry counts as naming it.
    let names = |c: &str, lit: &str| {
        if in_ws {
            c == lit
        } else {
            c == lit || (has_literal(c) && glob_match(c, lit))
        }
    };
    if comps.iter().any(|c| KEY_DIRS.iter().any(|k| names(c, k))) {
        return Err(Reason::KeyDir);
    }
    if let Some(last) = comps.last()
        && SECRET_FILE_NAMES.iter().any(|n| names(last, n))
    {
        return Err(Reason::SecretFile);
    }
    if let [dir, file] = comps
        && names(dir, "etc")
        && ["shadow", "gshadow", "shadow-", "gshadow-"]
            .iter()
            .any(|n| names(file, n))
    {
        return Err(Reason::PasswordHashes);
    }
    if comps.len() >= 3
        && comps.first().is_some_and(|c| names(c, "proc"))
        && comps
            .last()
            .is_some_and(|c| names(c, "environ") || names(c, "mem"))
    {
        return Err(Reason::ProcessSecrets);
    }
    let app = &env.app_comps;
    let under_app = comps
        .get(..app.len())
        .is_some_and(|head| glob_prefix(head, app));
    if !in_ws && !app.is_empty() && under_app {
        match comps.get(app.len()) {
            Some(next) if next == "workspace" => {}
            _ => return Err(Reason::AppHome),
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Fork bombs

/// `NAME(){ … NAME … NAME … & … }` or `NAME(){ … NAME|NAME … }` (also `function NAME`), and
/// the `fork while fork` one-liners.
fn is_fork_bomb(toks: &[Tok], norm: &str) -> bool {
    let lower = norm.to_ascii_lowercase();
    if lower.contains("fork while fork") || (lower.contains("fork()") && lower.contains("while")) {
        return true;
    }
    let word = |i: usize| match toks.get(i) {
        Some(Tok::Word(w)) => Some(w.as_str()),
        _ => None,
    };
    let op = |i: usize| match toks.get(i) {
        Some(Tok::Op(o)) => Some(*o),
        _ => None,
    };
    for i in 0..toks.len() {
        let Some(name) = word(i) else { continue };
        // `name ( ) {` or `function name {` / `function name ( ) {`.
        let (name, mut j) = if name == "function" {
            match word(i + 1) {
                Some(n) => (n, i + 2),
                None => continue,
            }
        } else if op(i + 1) == Some(Op::LParen) && op(i + 2) == Some(Op::RParen) {
            (name, i + 3)
        } else {
            continue;
        };
        if op(j) == Some(Op::LParen) && op(j + 1) == Some(Op::RParen) {
            j += 2;
        }
        if !matches!(op(j), Some(Op::LBrace | Op::LParen)) {
            continue;
        }
        let (mut calls, mut background, mut piped) = (0usize, false, false);
        let mut k = j + 1;
        while let Some(t) = toks.get(k).filter(|_| k - j <= MAX_FUNCTION_BODY_TOKENS) {
            match t {
                Tok::Op(Op::RBrace | Op::RParen) => break,
                Tok::Op(Op::Amp) => background = true,
                Tok::Op(Op::Pipe) => piped = true,
                Tok::Word(w) if w == name => calls += 1,
                _ => {}
            }
            k += 1;
        }
        if calls >= 2 && (background || piped) {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> PolicyContext {
        PolicyContext {
            home_dir: Some("/home/u".to_string()),
            app_home: "/home/u/.yoctoclaw".to_string(),
        }
    }

    const REFUSED: &[&str] = &[
        // rm -rf and its spellings
        "rm -rf /",
        "rm  -rf   /",
        "rm -rf \"/\"",
        "rm -rf '/'",
        "rm -r -f /",
        "rm -fr /",
        "rm -R --force /",
        "rm --recursive --force /",
        "rm --rec -f /",
        "rm / -rf",
        "rm -rf -- /",
        "rm -rf /*",
        "rm -rf --no-preserve-root /",
        "rm -rf $HOME",
        "rm -rf ${HOME}/",
        "rm -rf \"$HOME\"",
        "rm -rf ~",
        "rm -rf ~/",
        "rm -rf ~/*",
        "rm -rf ~u",
        "rm -rf ${HOME:?}/",
        "rm -rf ${HOME%/}",
        "{rm,-rf,/}",
        "$'\\x72\\x6d' -rf /",
        "$'\\162\\155' -rf /",
        "x=/; rm -rf $x",
        "a=rm; $a -rf /",
        "export T=/etc; rm -rf ${T}",
        "cd /; rm -rf usr",
        "cd / && rm -rf *",
        "cd ~; rm -rf .ssh",
        "cd ~/.yoctoclaw && cat config.json",
        "rm -rf ~root",
        "rm -rf /home/u",
        "rm -rf /home/u/",
        "rm -rf /etc",
        "rm -rf /usr/",
        "rm -rf /var/lib",
        "rm -rf /boot/*",
        "rm -rf /u*",
        "rm -rf /tmp",
        "rm -rf /home/u/.yoctoclaw",
        "rm -rf ..",
        "rm -rf ../..",
        "rm -rf *",
        "rm -rf .",
        "rm -rf /usr/../",
        "rm -rf {/tmp/x,/}",
        "'rm' -rf /",
        "r\\m -rf /",
        "r\"\"m -rf /",
        "/bin/rm -rf /",
        "sudo rm -rf /",
        "sudo -u root rm -rf /",
        "env FOO=1 rm -rf /",
        "nice -n 10 rm -rf /",
        "nohup rm -rf / &",
        "echo x; rm -rf /",
        "echo x && rm -rf /",
        "false || rm -rf /",
        "x=1 rm -rf /",
        "$(rm -rf /)",
        "echo `rm -rf /`",
        "bash -c \"rm -rf /\"",
        "sh -c 'rm -rf ~'",
        "if true; then rm -rf /; fi",
        "ls | xargs rm -rf /",
        "find / -delete",
        "find ~ -exec rm -rf {} +",
        "chmod -R 777 /",
        "chown -R nobody /etc",
        "mv ~ /tmp/gone",
        // disks
        "mkfs.ext4 /dev/sda1",
        "mkfs -t vfat /dev/mmcblk0p1",
        "wipefs -a /dev/sda",
        "fdisk /dev/sda",
        "dd if=/dev/zero of=/dev/mmcblk0",
        "dd if=/dev/zero of=/dev/sda bs=1M",
        "dd if=x.img of=/dev/nvme0n1",
        "cat image.img > /dev/mmcblk0",
        "echo x > /dev/sda",
        "> /dev/sda",
        "echo x >> /dev/sdb1",
        "tee /dev/nvme0n1 < img",
        "cp img /dev/mtd0",
        "cat x | sudo tee /dev/mmcblk0p2",
        "echo b > /proc/sysrq-trigger",
        // power
        "reboot",
        "shutdown -h now",
        "/sbin/shutdown -h now",
        "sudo reboot",
        "halt",
        "poweroff",
        "init 0",
        "init 6",
        "systemctl poweroff",
        "systemctl reboot",
        "sudo systemctl --force reboot",
        "systemctl suspend",
        "echo done; reboot",
        "sh -c reboot",
        "timeout 5 reboot",
        "if true; then reboot; fi",
        "kill -9 -1",
        "kill 1",
        // fork bombs
        ":(){ :|:& };:",
        ":(){:|:&};:",
        ": ( ) { : | : & } ; :",
        "bomb(){ bomb|bomb& };bomb",
        "f() { f | f & }; f",
        "function boom { boom & boom & }; boom",
        "perl -e 'fork while fork'",
        // secrets
        "cat ~/.ssh/id_rsa",
        "cat $HOME/.ssh/id_ed25519",
        "cat ${HOME}/.ssh/config",
        "cat \"$HOME\"/.ssh/authorized_keys",
        "cat /home/u/.ssh/id_rsa",
        "ls ~/.ssh",
        "cp ~/.s*h/id_rsa /tmp/",
        "tar czf /tmp/k.tgz ~/.gnupg",
        "cat /root/.ssh/id_rsa",
        "base64 < ~/.ssh/id_ecdsa",
        "cat /home/u/.yoctoclaw/secrets.env",
        "cat ../secrets.env",
        "cat ../config.json",
        "sqlite3 ../yoctoclaw.db .dump",
        "ls ..",
        "cat /home/u/.yoctoclaw/{secrets.env,config.json}",
        "cat ~/.yoctoclaw/config.json",
        "cat /home/*/.yoctoclaw/config.json",
        "cd ~ && cat .yoctoclaw/secrets.env",
        "cat /etc/shadow",
        "sudo cat /etc/../etc/shadow",
        "cat /proc/self/environ",
        "cat /proc/1/environ",
        "grep -r sk- ~",
        "tar czf all.tgz /home/u",
        "find ~ -type f -exec cat {} +",
    ];

    const ALLOWED: &[&str] = &[
        "ls -la",
        "rm -rf build",
        "rm -rf build/",
        "rm -rf ./build/*",
        "rm -f notes.bak",
        "rm -rf /tmp/yoctoclaw-test",
        "rm -rf ~/old-project",
        "df -h",
        "cat notes.md",
        "grep -r token .",
        "grep -rn password src",
        "echo \"rebooting is not needed\"",
        "echo reboot later",
        "echo rm -rf /",
        "uptime",
        "free -m",
        "python3 script.py",
        "ls ~",
        "ls $HOME",
        "cat ~/notes.txt",
        "du -sh .",
        "git status",
        "mkdir -p out && cp a.txt out/",
        "find . -name \"*.md\"",
        "find . -name '*.tmp' -delete",
        "find /tmp -name '*.tmp' -delete",
        "tar czf backup.tgz notes",
        "cat /proc/meminfo",
        "cat /sys/class/thermal/thermal_zone0/temp",
        "ps aux | head -5",
        "dd if=/dev/zero of=test.img bs=1M count=1",
        "head -c 100 /dev/urandom | base64",
        "ls /dev",
        "ls /etc/*",
        "echo hi > /dev/null 2>&1",
        "echo AT > /dev/ttyS0",
        "chmod -R 755 build",
        "kill 1234",
        "kill -9 4321",
        "systemctl status nginx",
        "journalctl -n 20",
        "sort data.csv | uniq -c",
        "sed -i s/a/b/ notes.md",
        "echo $((1+2))",
        "for f in *.md; do wc -l $f; done",
        "ls /home/u/.yoctoclaw/workspace",
        "cat /home/u/.yoctoclaw/workspace/SOUL.md",
        "curl -s https://example.com/page",
        "fdisk -l",
        "cat /etc/passwd",
        "vcgencmd measure_temp",
        "cd build && rm -rf *",
        "x=build; rm -rf $x",
        "mkdir -p {src,tests}/data",
        "echo {1..5}",
        "cd /tmp && ls",
    ];

    #[test]
    fn refuses_the_deny_table() {
        assert!(REFUSED.len() >= 40);
        let mut failures = Vec::new();
        for cmd in REFUSED {
            if check_command(cmd, &ctx()).is_ok() {
                failures.push(*cmd);
            }
        }
        assert!(
            failures.is_empty(),
            "allowed but should be refused: {failures:#?}"
        );
    }

    #[test]
    fn allows_the_allow_table() {
        assert!(ALLOWED.len() >= 20);
        let mut failures = Vec::new();
        for cmd in ALLOWED {
            if let Err(e) = check_command(cmd, &ctx()) {
                failures.push(format!("{cmd}: {e}"));
            }
        }
        assert!(
            failures.is_empty(),
            "refused but should be allowed: {failures:#?}"
        );
    }

    #[test]
    fn reasons_and_display() {
        let e = check_command("rm -rf /", &ctx()).unwrap_err();
        assert_eq!(e.reason(), Reason::DeleteRoot);
        assert_eq!(
            e.to_string(),
            "refused: rm -rf / (recursive delete of the root directory)"
        );
        let reason = |c: &str| check_command(c, &ctx()).unwrap_err().reason();
        assert_eq!(reason("rm -rf ~"), Reason::DeleteHome);
        assert_eq!(reason("rm -rf /etc"), Reason::DeleteSystem);
        assert_eq!(reason("rm -rf .."), Reason::DeleteAppHome);
        assert_eq!(reason("rm -rf *"), Reason::DeleteWorkspace);
        assert_eq!(reason("reboot"), Reason::Power);
        assert_eq!(reason(":(){ :|:& };:"), Reason::ForkBomb);
        assert_eq!(reason("cat ~/.ssh/id_rsa"), Reason::KeyDir);
        assert_eq!(reason("cat ../config.json"), Reason::AppHome);
        assert_eq!(reason("cat x/secrets.env"), Reason::SecretFile);
        assert_eq!(reason("dd if=a of=/dev/sda"), Reason::DeviceWrite);
        assert_eq!(reason("mkfs.vfat /dev/sdb"), Reason::Format);
        assert_eq!(reason("cat /etc/shadow"), Reason::PasswordHashes);
        let long = "a".repeat(MAX_COMMAND_BYTES + 1);
        assert_eq!(reason(&long), Reason::TooLong);
        let e = check_command(&format!("echo {}; reboot", "x".repeat(200)), &ctx()).unwrap_err();
        assert!(e.command().chars().count() <= MAX_SNIPPET_CHARS + 1);
    }

    #[test]
    fn unknown_home_still_catches_home_spellings() {
        let c = PolicyContext {
            home_dir: None,
            app_home: "/srv/yc".to_string(),
        };
        for cmd in [
            "rm -rf ~",
            "rm -rf $HOME",
            "rm -rf ${HOME}/",
            "cat ~/.ssh/id_rsa",
            "cat /srv/yc/secrets.env",
            "cat ../config.json",
        ] {
            assert!(check_command(cmd, &c).is_err(), "{cmd}");
        }
        for cmd in ["ls ~", "cat notes.md", "rm -rf build"] {
            assert!(check_command(cmd, &c).is_ok(), "{cmd}");
        }
    }

    #[test]
    fn brace_bombs_are_refused_not_expanded() {
        let word = "{a,b}".repeat(20);
        let e = check_command(&format!("cat {word}"), &ctx()).unwrap_err();
        assert_eq!(e.reason(), Reason::TooComplex);
    }

    #[test]
    fn random_commands_never_panic() {
        let mut rng = crate::testkit::XorShift(0x2545_F491_4F6C_DD1Du64);
        let mut next = move || rng.next();
        let pieces = [
            "rm",
            " ",
            "-rf",
            "/",
            "~",
            "$HOME",
            "${HOME}",
            "\"",
            "'",
            "\\",
            ";",
            "&",
            "|",
            "(",
            ")",
            "{",
            "}",
            ",",
            "*",
            "?",
            "[",
            "]",
            "!",
            "..",
            ".",
            ">",
            "<",
            "$(",
            "`",
            "=",
            ":",
            "\n",
            "sudo",
            "-c",
            "sh",
            "find",
            "-delete",
            "of=",
            "/dev/sda",
            ".ssh",
            "é",
            "\u{0}",
            "function",
            "kill",
            "-1",
            "secrets.env",
            "$'",
            "\\x7",
            "\\16",
            "x=",
            "$x",
            "${x}",
            "cd ",
            "${HOME:-",
            "~u",
            "{a,b}",
            "..",
        ];
        let c = ctx();
        for _ in 0..4000 {
            let n = (next() % 30) as usize;
            let mut cmd = String::new();
            for _ in 0..n {
                cmd.push_str(pieces[(next() % pieces.len() as u64) as usize]);
            }
            // Properties: the verdict is deterministic, a refusal is one bounded line,
            // and whatever follows a complete `rm -rf /` cannot rescue it.
            let verdict = check_command(&cmd, &c);
            assert_eq!(verdict.is_ok(), check_command(&cmd, &c).is_ok());
            if let Err(e) = verdict {
                let m = e.to_string();
                assert!(!m.contains('\n') && m.len() < 1024, "{cmd:?} -> {m:?}");
            }
            assert!(
                check_command(&format!("rm -rf /; {cmd}"), &c).is_err(),
                "{cmd:?}"
            );
        }
        for _ in 0..300 {
            let len = (next() % 400) as usize;
            let bytes: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            let _ = check_command(&String::from_utf8_lossy(&bytes), &c);
        }
        let deep = "(".repeat(MAX_COMMAND_BYTES);
        let _ = check_command(&deep, &c);
        let braces = "{".repeat(5000) + &"}".repeat(5000);
        let _ = check_command(&braces, &c);
        for pathological in [
            "x{".repeat(8000),
            "{a,".repeat(5000),
            "cat ".to_string() + &"{a}".repeat(5000),
            "x=$x$x$x$x$x$x$x$x; ".repeat(600),
            "f(){ ".repeat(3000),
            "$'".repeat(8000),
        ] {
            let _ = check_command(&pathological, &c);
        }
    }
}
