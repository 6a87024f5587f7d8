//! The names MCP tools are offered under: `SERVER__TOOL` (two underscores), within the
//! rule every provider applies to tool names, `[A-Za-z0-9_-]{1,64}`.
//!
//! A server declares any string as a tool name (empty, 10 KB long, `../`, unicode, the
//! same name twice). [`exposed`] gives each `(server, tool)` one name:
//! 1. `SERVER__TOOL` as it is, when the tool's name is not empty, already fits the rule,
//!    and the whole is at most 64 bytes and not a reserved (built-in) name: the names a
//!    user sees in
//!    the server's documentation, and the ones deny lists name;
//! 2. otherwise the name with every other character replaced by `_`, cut, and ended
//!    with `_` and 8 hex digits of a hash of the server's and tool's own names (FNV-1a):
//!    stable from run to run, whatever else the server declares;
//! 3. a second declaration of the same `(server, tool)` is left out (a call could not
//!    tell them apart), as is, after 16 tries, a name whose hash keeps colliding.
//!
//! The clean names are handed out first, so a tool's name never depends on another
//! tool's being cut. The `SERVER__` prefix always stays whole (server names are at most
//! `config::mcp::MCP_MAX_NAME` characters of the rule's), so `SERVER__*` in a deny list
//! covers every tool of the server.
//!
//! # Bounds
//! Names of at most `MAX_TOOL_NAME` bytes; work `n log n` in the tools' count (sorted
//! lists of the names handed out and of the tools seen: kept sorted by insertion, which
//! moves at most `n` entries each time; the callers pass at most `MCP_MAX_TOOLS`).
//!
//! # Threads
//! Any thread: pure functions.

/// Longest tool name providers take.
pub const MAX_TOOL_NAME: usize = 64;
/// Hex digits of the hash ending a name that had to be changed.
const HASH_DIGITS: usize = 8;
/// Tries at a hash that does not collide before a tool is left out.
const HASH_TRIES: u32 = 16;

/// Whether `c` may appear in a tool name.
fn name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// Whether `name` fits the providers' rule.
pub fn valid(name: &str) -> bool {
    !name.is_empty() && name.len() <= MAX_TOOL_NAME && name.chars().all(name_char)
}

/// `s` with every character outside the rule replaced by `_`.
fn sanitized(s: &str) -> String {
    s.chars()
        .map(|c| if name_char(c) { c } else { '_' })
        .collect()
}

/// FNV-1a, 64 bits: a stable hash (the standard library's is seeded per process).
fn fnv(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for b in p.iter().chain(&[0xff]) {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// The changed name of `tool` of `server` (try `n`): the sanitized name cut to leave
/// room for `_` and the hash.
fn hashed(server: &str, tool: &str, n: u32) -> String {
    let h = fnv(&[server.as_bytes(), tool.as_bytes(), &n.to_le_bytes()]);
    let mut name = format!("{}__{}", sanitized(server), sanitized(tool));
    // Only ASCII is left, so any byte index is a char boundary.
    name.truncate(MAX_TOOL_NAME - 1 - HASH_DIGITS);
    let hex = format!("{h:016x}");
    name.push('_');
    name.push_str(&hex[..HASH_DIGITS]);
    name
}

/// Put `x` into the sorted `v`; `false` when it was there already.
fn insert_new<T: Ord>(v: &mut Vec<T>, x: T) -> bool {
    match v.binary_search(&x) {
        Ok(_) => false,
        Err(i) => {
            v.insert(i, x);
            true
        }
    }
}

/// The name the model is offered for each `(server, tool)` of `tools`, in order; `None`
/// for one left out (a repeated declaration, an unresolvable collision). No two names
/// are equal, none is in `reserved`, each fits [`valid`].
pub fn exposed(tools: &[(&str, &str)], reserved: &[&str]) -> Vec<Option<String>> {
    let mut taken: Vec<String> = Vec::with_capacity(reserved.len() + tools.len());
    for r in reserved {
        insert_new(&mut taken, r.to_string());
    }
    let mut seen: Vec<(&str, &str)> = Vec::with_capacity(tools.len());
    let repeated: Vec<bool> = tools.iter().map(|&t| !insert_new(&mut seen, t)).collect();
    let mut out: Vec<Option<String>> = vec![None; tools.len()];
    // The names that need no change first.
    for (i, &(server, tool)) in tools.iter().enumerate() {
        let plain = format!("{server}__{tool}");
        if !repeated[i]
            && !tool.is_empty()
            && valid(&plain)
            && insert_new(&mut taken, plain.clone())
        {
            out[i] = Some(plain);
        }
    }
    for (i, &(server, tool)) in tools.iter().enumerate() {
        if repeated[i] || out[i].is_some() {
            continue;
        }
        // The first try not taken yet, taken now.
        out[i] = (0..HASH_TRIES)
            .map(|n| hashed(server, tool, n))
            .find(|name| insert_new(&mut taken, name.clone()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    const BUILTIN: &[&str] = &["read_file", "exec"];

    fn names(tools: &[(&str, &str)]) -> Vec<Option<String>> {
        let out = exposed(tools, BUILTIN);
        let given: Vec<&String> = out.iter().flatten().collect();
        let unique: HashSet<&String> = given.iter().copied().collect();
        assert_eq!(unique.len(), given.len(), "a name given twice: {out:?}");
        for n in given {
            assert!(valid(n), "{n:?}");
            assert!(!BUILTIN.contains(&n.as_str()), "{n}");
        }
        out
    }

    fn one(server: &str, tool: &str) -> String {
        names(&[(server, tool)])[0].clone().unwrap()
    }

    #[test]
    fn clean_names_are_offered_as_they_are() {
        assert_eq!(one("home", "turn_on"), "home__turn_on");
        assert_eq!(one("a-b", "get-state_2"), "a-b__get-state_2");
        let at_limit = "t".repeat(MAX_TOOL_NAME - 6);
        assert_eq!(one("home", &at_limit), format!("home__{at_limit}"));
    }

    #[test]
    fn hostile_names_are_replaced_cut_and_hashed_stably() {
        let empty = one("home", "");
        assert!(
            empty.starts_with("home___") && empty.len() == 6 + 1 + 8,
            "{empty}"
        );
        let big = "x".repeat(10 * 1024);
        let long = one("home", &big);
        assert_eq!(long.len(), MAX_TOOL_NAME);
        assert!(long.starts_with("home__xxxx"), "{long}");
        let dots = one("fs", "../../etc/passwd");
        assert!(
            dots.starts_with(&format!("fs__{}etc_passwd_", "_".repeat(6))),
            "{dots}"
        );
        let uni = one("home", "lumière_cuisine");
        assert!(uni.starts_with("home__lumi_re_cuisine_"), "{uni}");
        let rtl = one("home", "on\u{202e}ffo");
        assert!(rtl.starts_with("home__on_ffo_"), "{rtl}");
        // Stable: the same input gives the same name, in any company.
        assert_eq!(one("home", &big), long);
        let crowd = names(&[("home", "a"), ("home", &big), ("zz", "b")]);
        assert_eq!(crowd[1].as_deref(), Some(long.as_str()));
        // Different servers or tools give different hashes.
        assert_ne!(one("home", "x.y"), one("home", "x,y"));
        assert_ne!(one("a", "x.y")[3..], one("b", "x.y")[3..]);
    }

    #[test]
    fn names_equal_after_cutting_stay_distinct() {
        let p = "p".repeat(70);
        let a = format!("{p}a");
        let b = format!("{p}b");
        let out = names(&[
            ("home", "get.weather"),
            ("home", "get_weather"),
            ("home", "get weather"),
            ("home", &a),
            ("home", &b),
        ]);
        // The clean one keeps its name though declared after one that cuts to it.
        assert_eq!(out[1].as_deref(), Some("home__get_weather"));
        assert!(out[0].as_ref().unwrap().starts_with("home__get_weather_"));
        assert!(out[2].as_ref().unwrap().starts_with("home__get_weather_"));
        assert!(out.iter().all(Option::is_some));
        assert_ne!(out[3], out[4]);
    }

    #[test]
    fn a_repeated_tool_is_left_out_and_builtins_and_joins_never_collide() {
        let out = names(&[("home", "on"), ("home", "on"), ("nas", "on")]);
        assert_eq!(out, [Some("home__on".into()), None, Some("nas__on".into())]);
        // `a__b` + `c` and `a` + `b__c` join the same way: the second is changed.
        let out = names(&[("a__b", "c"), ("a", "b__c")]);
        assert_eq!(out[0].as_deref(), Some("a__b__c"));
        assert!(out[1].as_ref().unwrap().starts_with("a__b__c_"));
        // A reserved name is never given (built-in names hold no `__`, but the rule is
        // the rule).
        let out = exposed(&[("x", "y")], &["x__y"]);
        assert!(out[0].as_ref().unwrap().starts_with("x__y_"));
    }

    #[test]
    fn many_random_names_stay_valid_and_unique() {
        let mut x = crate::testkit::XorShift(0x5EED_0000_1234_0042);
        let alphabet: Vec<char> = "ab_-./ é\u{0}Z9".chars().collect();
        let tools: Vec<(String, String)> = (0..2000)
            .map(|_| {
                let n = (x.next() % 80) as usize;
                let t: String = (0..n)
                    .map(|_| alphabet[(x.next() % alphabet.len() as u64) as usize])
                    .collect();
                (format!("s{}", x.next() % 3), t)
            })
            .collect();
        let refs: Vec<(&str, &str)> = tools
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        let out = names(&refs);
        let distinct: HashSet<&(&str, &str)> = refs.iter().collect();
        assert_eq!(out.iter().flatten().count(), distinct.len());
    }
}
