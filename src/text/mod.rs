//! Text reduction helpers for what tools bring back (web pages today).
//!
//! Why: fetched pages are mostly markup; the model needs the readable text, and the board needs
//! it small.
//!
//! # Bounds
//! Every function here takes an output cap in bytes; see each module.

pub mod html;
