//! Operator tools: `claw-identity doctor`, `claw-identity explain` and the
//! atomic map writer (`writeTokenMap`, `claw-identity write-map`). Pure Rust
//! over the very gate, parser and engine the plugin uses, so what they report
//! is what the plugin does; `lib.rs` wraps them for JavaScript.

pub mod audit;
pub mod config;
pub mod doctor;
pub mod explain;
pub mod writer;
