//! yoctoclaw: a personal AI assistant in one small binary.

pub mod security;
pub mod text;
