//! claw-identity's core: everything the layer decides and keeps, with no
//! N-API in it, so `cargo test` covers it without Node and the addon crate
//! (the repository root) is only the bridge to JS values.

#![deny(clippy::all)]

pub mod acl;
pub mod agent_fs;
pub mod call;
pub mod engine;
pub mod layer;
pub mod log;
pub mod openclaw;
pub mod ops;
pub mod options;
pub mod paths;
pub mod pipeline;
pub mod posture;
pub mod protected;
pub mod proxy;
pub mod redact;
pub mod route;
pub mod rules;
pub mod sandbox;
pub mod sessions;
pub mod sys;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod token_map;
pub mod watcher;

pub use layer::{Layer, PluginFacts, Stats};
