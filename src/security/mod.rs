//! The security layer: credential scrubbing and workspace confinement.

pub mod confine;
pub mod scrub;
