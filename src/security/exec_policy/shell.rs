//! The shell model behind the exec policy: normalising, tokenising and splitting a command
//! line, finding the command a line really runs, lexical paths, brace expansion and globs.
//!
//! Why apart: this is the parsing half of [`super`]; the rules there read words and paths, not
//! characters. Nothing here decides what is allowed.
//!
//! # Bounds
//! - A word-initial `{` is looked at for at most [`MAX_BRACE_SCAN_CHARS`] characters.
//! - Brace expansion yields at most [`MAX_BRACE_EXPANSIONS`] words per word (and takes at most
//!   four times as many steps); beyond, [`Reason::TooComplex`].
//! - No recursion: every loop walks forward over the (already size-capped) command.
//!
//! # Threads
//! Any thread: pure functions over their arguments, no I/O.

use super::{MAX_BRACE_EXPANSIONS, Reason};

/// How far the tokeniser looks for the `}` of a word-initial `{`.
pub(super) const MAX_BRACE_SCAN_CHARS: usize = 1024;

// ---------------------------------------------------------------------------------------------
// Normalisation and tokenising

pub(super) fn normalise(cmd: &str, home: &str) -> String {
    let stripped = strip_quoting(cmd);
    let expanded = expand_home(&stripped, home);
    expanded.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Removes quotes and backslash escapes; line breaks become `;`, other blanks a space.
pub(super) fn strip_quoting(cmd: &str) -> String {
    let mut out = String::with_capacity(cmd.len());
    let mut it = cmd.chars().peekable();
    while let Some(c) = it.next() {
        match c {
            '\\' => match it.next() {
                None | Some('\n') => {}
                Some('\r') => {
                    if it.peek() == Some(&'\n') {
                        it.next();
                    }
                }
                Some(n) if n.is_whitespace() || n.is_control() => out.push(' '),
                Some(n) => out.push(n),
            },
            '$' if it.peek() == Some(&'\'') => {
                it.next();
                ansi_c_string(&mut it, &mut out);
            }
            '\'' | '"' => {}
            '$' if it.peek() == Some(&'"') => {}
            '\n' | '\r' => out.push_str(" ; "),
            c if c.is_whitespace() || c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// Decodes the body of a `$'…'` string up to its closing quote (`\x72`, `\162`, `\u0072` …).
pub(super) fn ansi_c_string(it: &mut std::iter::Peekable<std::str::Chars<'_>>, out: &mut String) {
    let mut push = |c: char| {
        if c.is_whitespace() || c.is_control() {
            out.push(' ');
        } else {
            out.push(c);
        }
    };
    while let Some(c) = it.next() {
        match c {
            '\'' => return,
            '\\' => {
                let Some(e) = it.next() else { return };
                let (radix, max_digits) = match e {
                    'x' => (16, 2),
                    'u' => (16, 4),
                    'U' => (16, 8),
                    '0'..='7' => (8, 2),
                    'n' | 't' | 'r' | 'a' | 'b' | 'e' | 'E' | 'f' | 'v' => {
                        push(' ');
                        continue;
                    }
                    other => {
                        push(other);
                        continue;
                    }
                };
                let mut value = if radix == 8 {
                    e.to_digit(8).unwrap_or(0)
                } else {
                    0
                };
                let mut digits = 0;
                while digits < max_digits
                    && let Some(d) = it.peek().and_then(|c| c.to_digit(radix))
                {
                    value = value.saturating_mul(radix).saturating_add(d);
                    it.next();
                    digits += 1;
                }
                push(char::from_u32(value).unwrap_or('\u{FFFD}'));
            }
            c => push(c),
        }
    }
}

/// Characters after which a `~` starts a word (tilde expansion applies).
pub(super) const TILDE_BEFORE: &[char] =
    &[' ', '=', ':', ';', '&', '|', '(', '<', '>', '{', ',', '`'];
/// Characters that may follow a home-directory `~`.
pub(super) const TILDE_AFTER: &[char] =
    &['/', ' ', ';', '&', '|', ')', '>', '<', '}', ',', ':', '`'];

/// Replaces `${HOME}`, `$HOME` and a word-initial `~` (and `~name`, taken as `/home/name`, or
/// `/root`) by literal paths.
pub(super) fn expand_home(s: &str, home: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len() + home.len());
    let mut i = 0;
    while let Some(&c) = chars.get(i) {
        if c == '$' {
            if starts_at(&chars, i, "${HOME")
                && matches!(
                    chars.get(i + 6),
                    Some('}' | ':' | '%' | '#' | '/' | '^' | ',')
                )
            {
                // `${HOME}`, and `${HOME:-x}`, `${HOME%/}` … which are the home too.
                let close = (i + 6..chars.len()).find(|&j| chars.get(j) == Some(&'}'));
                out.push_str(home);
                i = close.map_or(chars.len(), |j| j + 1);
                continue;
            }
            if starts_at(&chars, i, "$HOME")
                && !chars
                    .get(i + 5)
                    .is_some_and(|n| n.is_ascii_alphanumeric() || *n == '_')
            {
                out.push_str(home);
                i += 5;
                continue;
            }
        }
        if c == '~' && (i == 0 || chars.get(i - 1).is_some_and(|p| TILDE_BEFORE.contains(p))) {
            let ends_at = |j: usize| chars.get(j).is_none_or(|n| TILDE_AFTER.contains(n));
            if ends_at(i + 1) {
                out.push_str(home);
                i += 1;
                continue;
            }
            // `~name`: another user's home; assume the usual places.
            let mut j = i + 1;
            while chars
                .get(j)
                .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
            {
                j += 1;
            }
            if j > i + 1 && ends_at(j) {
                let name: String = chars.get(i + 1..j).unwrap_or(&[]).iter().collect();
                out.push_str(if name == "root" { "/root" } else { "/home/" });
                if name != "root" {
                    out.push_str(&name);
                }
                i = j;
                continue;
            }
        }
        out.push(c);
        i += 1;
    }
    out
}

pub(super) fn starts_at(chars: &[char], i: usize, pat: &str) -> bool {
    (i..)
        .zip(pat.chars())
        .all(|(j, p)| chars.get(j) == Some(&p))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Op {
    Semi,
    Amp,
    AndAnd,
    OrOr,
    Pipe,
    LParen,
    RParen,
    LBrace,
    RBrace,
    Subst,
    Backtick,
    RedirOut,
    RedirIn,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Tok {
    Word(String),
    Op(Op),
}

pub(super) fn tokenise(s: &str) -> Vec<Tok> {
    let chars: Vec<char> = s.chars().collect();
    let mut toks = Vec::new();
    let mut word = String::new();
    let mut brace_depth = 0usize;
    let mut i = 0;
    while let Some(&c) = chars.get(i) {
        let next = chars.get(i + 1).copied();
        let op = match c {
            c if c.is_whitespace() => {
                flush_word(&mut word, &mut toks, &mut brace_depth);
                i += 1;
                continue;
            }
            ';' => Some((Op::Semi, 1)),
            '&' => match next {
                Some('&') => Some((Op::AndAnd, 2)),
                Some('>') => Some((Op::RedirOut, 2)),
                _ => Some((Op::Amp, 1)),
            },
            '|' => match next {
                Some('|') => Some((Op::OrOr, 2)),
                Some('&') => Some((Op::Pipe, 2)),
                _ => Some((Op::Pipe, 1)),
            },
            '(' => Some((Op::LParen, 1)),
            ')' => Some((Op::RParen, 1)),
            '`' => Some((Op::Backtick, 1)),
            '$' if next == Some('(') => Some((Op::Subst, 2)),
            '>' => {
                let mut n = 1;
                while matches!(chars.get(i + n), Some('>' | '|' | '&')) {
                    n += 1;
                }
                Some((Op::RedirOut, n))
            }
            '<' => {
                let mut n = 1;
                while matches!(chars.get(i + n), Some('<' | '&')) {
                    n += 1;
                }
                Some((Op::RedirIn, n))
            }
            '{' if word.is_empty() && brace_is_group(&chars, i) => Some((Op::LBrace, 1)),
            '}' if brace_depth == 0 => Some((Op::RBrace, 1)),
            _ => None,
        };
        match op {
            Some((op, n)) => {
                flush_word(&mut word, &mut toks, &mut brace_depth);
                toks.push(Tok::Op(op));
                i += n;
            }
            None => {
                if c == '{' {
                    brace_depth += 1;
                } else if c == '}' {
                    brace_depth = brace_depth.saturating_sub(1);
                }
                word.push(c);
                i += 1;
            }
        }
    }
    flush_word(&mut word, &mut toks, &mut brace_depth);
    toks
}

pub(super) fn flush_word(word: &mut String, toks: &mut Vec<Tok>, brace_depth: &mut usize) {
    if !word.is_empty() {
        toks.push(Tok::Word(std::mem::take(word)));
    }
    *brace_depth = 0;
}

/// A `{` at the start of a word opens a group unless it is a brace expansion (`{a,b}`, `{1..3}`).
/// Looks at most [`MAX_BRACE_SCAN_CHARS`] ahead.
pub(super) fn brace_is_group(chars: &[char], i: usize) -> bool {
    let mut j = i + 1;
    let mut expansion = false;
    while let Some(&c) = chars.get(j) {
        if j - i > MAX_BRACE_SCAN_CHARS {
            return true;
        }
        if c.is_whitespace() {
            return true;
        }
        if c == '}' {
            return !expansion;
        }
        if c == ',' || (c == '.' && chars.get(j + 1) == Some(&'.')) {
            expansion = true;
        }
        j += 1;
    }
    true
}

/// One simple command: its words and redirection targets.
#[derive(Debug, Default)]
pub(super) struct Simple {
    pub(super) words: Vec<String>,
    pub(super) redir_out: Vec<String>,
    pub(super) redir_in: Vec<String>,
}

impl Simple {
    pub(super) fn is_empty(&self) -> bool {
        self.words.is_empty() && self.redir_out.is_empty() && self.redir_in.is_empty()
    }

    pub(super) fn text(&self) -> String {
        let mut t = self.words.join(" ");
        for r in &self.redir_out {
            t.push_str(" > ");
            t.push_str(r);
        }
        for r in &self.redir_in {
            t.push_str(" < ");
            t.push_str(r);
        }
        t.trim().to_string()
    }
}

pub(super) fn split_commands(toks: &[Tok]) -> Vec<Simple> {
    let mut cmds = Vec::new();
    let mut cur = Simple::default();
    let mut i = 0;
    while let Some(t) = toks.get(i) {
        match t {
            Tok::Word(w) => cur.words.push(w.clone()),
            Tok::Op(op @ (Op::RedirOut | Op::RedirIn)) => {
                if let Some(Tok::Word(w)) = toks.get(i + 1) {
                    if *op == Op::RedirOut {
                        cur.redir_out.push(w.clone());
                    } else {
                        cur.redir_in.push(w.clone());
                    }
                    i += 1;
                }
            }
            Tok::Op(_) => {
                if !cur.is_empty() {
                    cmds.push(std::mem::take(&mut cur));
                }
            }
        }
        i += 1;
    }
    if !cur.is_empty() {
        cmds.push(cur);
    }
    cmds
}

// ---------------------------------------------------------------------------------------------
// Command position

/// Shell keywords that may precede a command.
pub(super) const KEYWORDS: &[&str] = &[
    "if", "then", "else", "elif", "do", "while", "until", "!", "coproc",
];

/// Shells (and `su`) whose `-c` argument is itself a command.
pub(super) const SHELLS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "ash", "ksh", "mksh", "fish", "su",
];

/// Commands that run the rest of their arguments as a command, with the options that take a
/// separate argument.
pub(super) fn wrapper_options(name: &str) -> Option<&'static [&'static str]> {
    Some(match name {
        "sudo" => &[
            "-u", "-g", "-p", "-C", "-h", "-U", "-r", "-t", "-D", "-R", "-T",
        ],
        "doas" => &["-u", "-C"],
        "env" => &["-u", "-C", "--unset", "--chdir"],
        "nice" => &["-n", "--adjustment"],
        "ionice" => &["-c", "-n", "-p"],
        "timeout" => &["-s", "-k", "--signal", "--kill-after"],
        "stdbuf" => &["-i", "-o", "-e"],
        "xargs" => &["-I", "-n", "-P", "-L", "-s", "-d", "-E", "-a"],
        "watch" => &["-n", "--interval"],
        "exec" => &["-a"],
        "flock" => &["-w", "-E", "--timeout"],
        "nohup" | "time" | "command" | "builtin" | "busybox" | "setsid" | "eval" | "unbuffer"
        | "chroot" | "taskset" | "chrt" | "nsenter" => &[],
        _ => return None,
    })
}

/// Wrappers followed by one positional argument before the command.
pub(super) const WRAPPERS_WITH_POSITIONAL: &[&str] =
    &["timeout", "chroot", "taskset", "chrt", "flock"];

/// Finds the command actually run by `words` and its arguments.
pub(super) fn command_of(words: &[String]) -> Option<(&str, &[String])> {
    let mut i = 0;
    loop {
        while words.get(i).is_some_and(|w| is_assignment(w)) {
            i += 1;
        }
        let name = basename(words.get(i)?);
        if KEYWORDS.contains(&name) {
            i += 1;
            continue;
        }
        if let Some(with_arg) = wrapper_options(name) {
            i += 1;
            while let Some(w) = words.get(i) {
                if w == "--" {
                    i += 1;
                    break;
                }
                if w.len() > 1 && w.starts_with('-') {
                    i += if with_arg.contains(&w.as_str()) { 2 } else { 1 };
                    continue;
                }
                if is_assignment(w) {
                    i += 1;
                    continue;
                }
                break;
            }
            if WRAPPERS_WITH_POSITIONAL.contains(&name) {
                i += 1;
            }
            continue;
        }
        if SHELLS.contains(&name) {
            let rest = words.get(i + 1..).unwrap_or(&[]);
            let dash_c = rest.iter().position(|w| {
                w.len() > 1
                    && w.starts_with('-')
                    && !w.starts_with("--")
                    && w.chars().skip(1).all(|c| c.is_ascii_alphabetic())
                    && w.contains('c')
            });
            if let Some(k) = dash_c {
                i += 1 + k + 1;
                continue;
            }
        }
        return Some((name, words.get(i + 1..).unwrap_or(&[])));
    }
}

pub(super) fn is_assignment(w: &str) -> bool {
    match w.split_once('=') {
        Some((name, _)) => {
            let mut cs = name.chars();
            cs.next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && cs.all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

pub(super) fn basename(w: &str) -> &str {
    w.rsplit('/').next().unwrap_or(w)
}

/// `a` is an abbreviation (GNU getopt accepts unique prefixes) of the long option `full`.
pub(super) fn is_long_opt(a: &str, full: &str) -> bool {
    a.len() >= 3 && full.starts_with(a)
}

/// Short-option cluster (`-rf`) containing one of `letters`.
pub(super) fn short_opts_contain(a: &str, letters: &[char]) -> bool {
    a.len() > 1
        && a.starts_with('-')
        && !a.starts_with("--")
        && a.get(1..).is_some_and(|f| f.contains(letters))
}

pub(super) fn positionals(args: &[String]) -> Vec<&String> {
    let mut out = Vec::new();
    let mut opts = true;
    for a in args {
        if opts && a == "--" {
            opts = false;
        } else if opts && a.len() > 1 && a.starts_with('-') {
            continue;
        } else {
            out.push(a);
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Paths, braces and globs

/// Lexical path components of `word`, relative words joined to `base`; `.` and `..` resolved.
pub(super) fn components(word: &str, base: &[String]) -> Vec<String> {
    let mut comps = if word.starts_with('/') {
        Vec::new()
    } else {
        base.to_vec()
    };
    for c in word.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                comps.pop();
            }
            c => comps.push(c.to_string()),
        }
    }
    comps
}

/// Expands `{a,b}` groups as the shell does (outermost first, so `{a,{b,c}}` gives `a b c`),
/// iteratively. Too many results is an error.
pub(super) fn expand_braces(word: &str) -> Result<Vec<String>, Reason> {
    let mut done = Vec::new();
    let mut work = vec![word.to_string()];
    let mut steps = 0usize;
    while let Some(w) = work.pop() {
        steps += 1;
        if done.len() + work.len() > MAX_BRACE_EXPANSIONS || steps > 4 * MAX_BRACE_EXPANSIONS {
            return Err(Reason::TooComplex);
        }
        let Some(group) = first_brace_group(&w) else {
            done.push(w);
            continue;
        };
        let head = w.get(..group.open).unwrap_or("");
        let tail = w.get(group.close + 1..).unwrap_or("");
        let mut alts = Vec::with_capacity(group.commas.len() + 1);
        let mut from = group.open + 1;
        for &c in group.commas.iter().chain(std::iter::once(&group.close)) {
            alts.push(w.get(from..c).unwrap_or(""));
            from = c + 1;
        }
        if group.commas.is_empty() {
            // `{x}` or a `{1..3}` range: keep the text without braces (ranges name no paths).
            work.push(format!("{head}{}{tail}", alts.concat()));
        } else {
            // Pushed in reverse so that the words come out in the shell's order.
            for alt in alts.iter().rev() {
                work.push(format!("{head}{alt}{tail}"));
            }
        }
    }
    Ok(done)
}

/// A `{…}` group: byte offsets of its braces and of its top-level commas.
struct BraceGroup {
    open: usize,
    close: usize,
    commas: Vec<usize>,
}

/// The first `{` that has a matching `}`, with the commas at its own level. One pass with a
/// stack of open braces, then one over the group: linear.
fn first_brace_group(w: &str) -> Option<BraceGroup> {
    let b = w.as_bytes();
    let mut stack = Vec::new();
    let mut first: Option<(usize, usize)> = None;
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'{' => stack.push(i),
            b'}' => {
                if let Some(o) = stack.pop()
                    && first.is_none_or(|(fo, _)| o < fo)
                {
                    first = Some((o, i));
                }
            }
            _ => {}
        }
    }
    let (open, close) = first?;
    let mut depth = 0usize;
    let mut commas = Vec::new();
    for (i, &c) in b.iter().enumerate().take(close).skip(open + 1) {
        match c {
            b'{' => depth += 1,
            b'}' => depth = depth.saturating_sub(1),
            b',' if depth == 0 => commas.push(i),
            _ => {}
        }
    }
    Some(BraceGroup {
        open,
        close,
        commas,
    })
}

pub(super) fn has_glob(c: &str) -> bool {
    c.contains(['*', '?', '['])
}

/// A component such as `*`, `.*`, `*.*`: it names everything in its directory.
pub(super) fn is_glob_only(c: &str) -> bool {
    c.contains(['*', '?']) && c.chars().all(|ch| matches!(ch, '*' | '?' | '.'))
}

/// Has a character other than the wildcards `*` and `?`.
pub(super) fn has_literal(c: &str) -> bool {
    c.chars().any(|ch| ch != '*' && ch != '?')
}

/// `p` (with globs) matches the first `p.len()` components of `target`.
pub(super) fn glob_prefix(p: &[String], target: &[String]) -> bool {
    p.len() <= target.len() && p.iter().zip(target).all(|(a, b)| glob_match(a, b))
}

/// Shell-style match of one path component: `*`, `?`, `[...]` (with `!`/`^` and ranges).
/// A leading `.` in `name` must be matched by a literal `.`, as in the shell.
pub(super) fn glob_match(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    if n.first() == Some(&'.') && p.first() != Some(&'.') {
        return false;
    }
    let (mut pi, mut ni) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while let Some(&nc) = n.get(ni) {
        let step = match p.get(pi) {
            Some('*') => {
                star = Some((pi, ni));
                pi += 1;
                continue;
            }
            Some('?') => Some(1),
            Some('[') => match class_match(p.get(pi..).unwrap_or(&[]), nc) {
                Some((true, len)) => Some(len),
                Some((false, _)) => None,
                None => (nc == '[').then_some(1),
            },
            Some(&pc) if pc == nc => Some(1),
            _ => None,
        };
        match (step, star) {
            (Some(len), _) => {
                pi += len;
                ni += 1;
            }
            (None, Some((sp, sn))) => {
                pi = sp + 1;
                ni = sn + 1;
                star = Some((sp, sn + 1));
            }
            (None, None) => return false,
        }
    }
    while p.get(pi) == Some(&'*') {
        pi += 1;
    }
    pi == p.len()
}

/// Matches `c` against the class at the start of `p` (`p[0] == '['`). Returns whether it
/// matched and the class length, or `None` when the class is not closed (a literal `[`).
pub(super) fn class_match(p: &[char], c: char) -> Option<(bool, usize)> {
    let mut i = 1;
    let negate = matches!(p.get(1), Some('!' | '^'));
    if negate {
        i += 1;
    }
    let mut matched = false;
    let mut first = true;
    loop {
        let &pc = p.get(i)?;
        if pc == ']' && !first {
            return Some((matched != negate, i + 1));
        }
        first = false;
        if p.get(i + 1) == Some(&'-')
            && let Some(&hi) = p.get(i + 2)
            && hi != ']'
        {
            if pc <= c && c <= hi {
                matched = true;
            }
            i += 3;
            continue;
        }
        if pc == c {
            matched = true;
        }
        i += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(cmd: &str) -> Vec<Vec<String>> {
        split_commands(&tokenise(&normalise(cmd, "/home/u")))
            .into_iter()
            .map(|s| s.words)
            .collect()
    }

    #[test]
    fn normalising() {
        assert_eq!(normalise("  'r'\"m\"  -rf   \\/ ", "/h"), "rm -rf /");
        assert_eq!(
            normalise("ls ~ ~/x a~b $HOME ${HOME}/y $HOMEX", "/h"),
            "ls /h /h/x a~b /h /h/y $HOMEX"
        );
        assert_eq!(normalise("cat ~root/x ~bob", "/h"), "cat /root/x /home/bob");
        assert_eq!(normalise("$'\\x72\\155' x", "/h"), "rm x");
        assert_eq!(normalise("a\nb\\\nc", "/h"), "a ; bc");
    }

    #[test]
    fn splitting_and_command_position() {
        assert_eq!(
            words("a 1; b && c || d | e & f $(g) `h` (i) { j; }"),
            [
                ["a", "1"].as_slice(),
                &["b"],
                &["c"],
                &["d"],
                &["e"],
                &["f"],
                &["g"],
                &["h"],
                &["i"],
                &["j"]
            ]
        );
        let w = words("cat x > out 2>&1 < in");
        assert_eq!(w, [["cat", "x", "2"]]);
        let all = split_commands(&tokenise("echo a > /dev/sda"));
        assert_eq!(
            all.first().map(|s| s.redir_out.clone()),
            Some(vec!["/dev/sda".to_string()])
        );
        for (cmd, name) in [
            (
                "sudo -u root env A=1 nice -n 5 timeout 3 /sbin/reboot now",
                "reboot",
            ),
            ("bash -lc rm x", "rm"),
            ("X=1 Y=2 busybox rm", "rm"),
            ("then exec nohup reboot", "reboot"),
            ("xargs -I x rm", "rm"),
        ] {
            let w: Vec<String> = cmd.split(' ').map(String::from).collect();
            assert_eq!(command_of(&w).map(|(n, _)| n), Some(name), "{cmd}");
        }
    }

    #[test]
    fn braces_and_paths() {
        assert_eq!(expand_braces("a{b,c}d").unwrap(), ["abd", "acd"]);
        assert_eq!(
            expand_braces("{x,y}{1,2}").unwrap(),
            ["x1", "x2", "y1", "y2"]
        );
        assert_eq!(expand_braces("{a,{b,c}}").unwrap(), ["a", "b", "c"]);
        assert_eq!(expand_braces("{1..3}").unwrap(), ["1..3"]);
        assert_eq!(expand_braces("x{").unwrap(), ["x{"]);
        assert_eq!(expand_braces("{{a,b}").unwrap(), ["{a", "{b"]);
        assert_eq!(expand_braces("{rm,-rf,/}").unwrap(), ["rm", "-rf", "/"]);
        let base = vec!["w".to_string()];
        assert_eq!(components("../../..//a/./b", &base), ["a", "b"]);
        assert_eq!(components("/x/../y/", &base), ["y"]);
        assert_eq!(components("z", &base), ["w", "z"]);
    }

    #[test]
    fn glob_matching() {
        assert!(glob_match("*", "abc"));
        assert!(!glob_match("*", ".ssh"));
        assert!(glob_match(".*", ".ssh"));
        assert!(glob_match(".s?h", ".ssh"));
        assert!(glob_match("[a-c]x", "bx"));
        assert!(!glob_match("[!a-c]x", "bx"));
        assert!(glob_match("a*b*c", "aXXbYYc"));
        assert!(!glob_match("a*b*c", "aXXbYY"));
        assert!(glob_match("[", "["));
        assert!(glob_match("[]]", "]"));
        assert!(glob_match("", ""));
        assert!(!glob_match("", "a"));
    }
}
