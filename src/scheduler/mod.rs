//! Time and scheduling (interim: civil time and fixed-offset zones; the full scheduler
//! lands with the cron module).
pub mod civil;
pub mod tz;
