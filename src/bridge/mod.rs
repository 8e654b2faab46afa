//! JS values in and out of the layer: every `unsafe` N-API call of the
//! addon lives in this module. `js` wraps the raw calls; `layer` is one
//! layer as JS sees it (what happens to a call, start to end, and its
//! result); `callback` makes the raw callbacks, with their one prologue;
//! `tiers` holds the hooks and the middleware those are; `params` reads a
//! call's params exactly and copies and redacts JS values; `persist`
//! redacts what OpenClaw is about to store; `host` calls OpenClaw's logger
//! (every line goes through its `write`) and session store. On the
//! WebAssembly build, `front` decides a call with no N-API call, from the
//! fields `lib/wasm-front.cjs` writes into linear memory.

pub mod callback;
#[cfg(target_os = "wasi")]
pub mod front;
pub mod host;
#[cfg(target_os = "wasi")]
pub mod host_fs;
pub mod js;
pub mod layer;
pub mod params;
pub mod persist;
pub mod tiers;
#[cfg(target_os = "wasi")]
pub mod watch;
