//! JS values in and out of the layer: the only module besides `lib.rs` that
//! touches N-API. `js` wraps the raw calls; `params` reads a call's params
//! exactly and builds its rewrite; `host` calls OpenClaw's logger and
//! session store.

pub mod host;
#[cfg(target_os = "wasi")]
pub mod host_fs;
pub mod js;
pub mod params;
