//! Chat channels: how the agent reaches its owner.

pub mod telegram;
