//! Civil (calendar) date-times from Unix seconds (interim).

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CivilDateTime {
    pub year: i32,
    pub month: u8,
    pub day: u8,
    pub hour: u8,
    pub minute: u8,
    pub second: u8,
}

impl CivilDateTime {
    pub fn from_unix(secs: i64) -> Self {
        let secs = secs.clamp(-(1 << 40), 1 << 40);
        let days = secs.div_euclid(86_400);
        let tod = secs.rem_euclid(86_400);
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let d = doy - (153 * mp + 2) / 5 + 1;
        let m = if mp < 10 { mp + 3 } else { mp - 9 };
        let y = yoe + era * 400 + i64::from(m <= 2);
        CivilDateTime {
            year: y as i32,
            month: m as u8,
            day: d as u8,
            hour: (tod / 3600) as u8,
            minute: ((tod % 3600) / 60) as u8,
            second: (tod % 60) as u8,
        }
    }
}
