//! The identity rules. Each rule is a pure function from a tool call to a
//! verdict (pass, rewrite or block), with no N-API types, so `cargo test`
//! covers every rule without Node. The engine (`crate::engine`) runs them in
//! a fixed order.

pub mod auth_token;
pub mod conversation_id;
pub mod cross_user_send;
pub mod delegation_session;
pub mod layer_controls;
pub mod map_access;
pub mod sandbox_pty;
pub mod session_access;
pub mod spawn_redirect;
pub mod token_text;
pub mod workboard_scope;

pub use crate::call::{
    Decision, EnsureSession, Missing, Params, Patch, SessionRef, Set, Slot, TokenStatus, ToolCall,
    Verdict,
};
use crate::options::Options;
use crate::redact::results::Redactor;
use crate::token_map::TokenMap;

/// The state of the map at decision time.
pub struct MapView<'a> {
    pub map: &'a TokenMap,
    /// Counts the maps put in force (`Context::generation`).
    pub generation: u64,
    pub loaded: bool,
    pub stale: bool,
    /// The tokens to take out of text one agent hands another.
    pub redactor: Option<&'a Redactor>,
}

/// What a rule may consult besides the call itself: the options, the map
/// in force, and what the layer learnt of OpenClaw (who spawned which
/// session; the agents' workspaces).
/// A decision borrows from the call and the map (`'a`), never from the
/// context itself (`'c`).
pub struct Context<'c, 'a> {
    pub opts: &'c Options,
    pub view: &'c MapView<'a>,
    pub sessions: &'c crate::sessions::Known,
    pub fs: &'c crate::protected::resolved::Facts,
    /// OpenClaw and Node, for what only they know (`crate::sessions::Host`).
    pub host: &'c dyn crate::sessions::Host,
    /// How many times the map in force changed: stale facts about the
    /// map's files are made again after a change.
    pub generation: u64,
    /// Whether the agents are contained (`crate::posture`).
    pub posture: &'c crate::posture::Judged,
}

/// The params a rule decides on, as its row of the route table names them
/// (`crate::route::Route::reads`): the rule gets the row's data, not the row.
pub type Reads = &'static [&'static str];

/// A rule's decision for one call, given the params its row reads.
pub type Decide = for<'c, 'a> fn(&Context<'c, 'a>, &ToolCall<'a>, Reads) -> Decision<'a>;
