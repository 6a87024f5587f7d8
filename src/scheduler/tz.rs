//! Time zones (interim: UTC and fixed offsets).

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tz {
    Utc,
    Fixed(i32),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TzError(pub String);

impl std::fmt::Display for TzError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "unknown time zone {:?}", self.0)
    }
}

impl Tz {
    pub fn parse(name: &str) -> Result<Tz, TzError> {
        let n = name.trim();
        if n.eq_ignore_ascii_case("utc") || n == "Z" || n.is_empty() {
            return Ok(Tz::Utc);
        }
        let (sign, rest) = match n.as_bytes().first() {
            Some(b'+') => (1, &n[1..]),
            Some(b'-') => (-1, &n[1..]),
            _ => return Err(TzError(name.into())),
        };
        let (h, m) = rest.split_once(':').unwrap_or((rest, "0"));
        let h: i32 = h.parse().map_err(|_| TzError(name.into()))?;
        let m: i32 = m.parse().map_err(|_| TzError(name.into()))?;
        if h > 14 || m > 59 {
            return Err(TzError(name.into()));
        }
        Ok(Tz::Fixed(sign * (h * 3600 + m * 60)))
    }

    pub fn offset_at(&self, _utc: i64) -> i32 {
        match self {
            Tz::Utc => 0,
            Tz::Fixed(o) => *o,
        }
    }
}
