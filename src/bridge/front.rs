//! The WebAssembly build's front: a tool call decided with no N-API call.
//!
//! On the WebAssembly build each N-API call crosses into emnapi's JS, and
//! a decision made through N-API made about fourteen of them. Here the
//! front (`lib/wasm-front.cjs`, one per JS thread, made by `lib/wasi.cjs`
//! with the instance's memory and exports) reads a call's fields in JS,
//! writes them into linear memory as UTF-16, and calls the plain wasm
//! exports below, which decide with the same pipeline and write the answer
//! back into linear memory; the front builds OpenClaw's hook result from it
//! with `rewrite.js`'s functions. An owned call is three plain wasm calls
//! and no N-API call.
//!
//! Rust decides everything, JS reads and renders:
//! - `enter(tier)`: the tier's part (`tiers.rs`), and the layer the call
//!   is decided on;
//! - `route(layer, tool)`: which fields the front reads next, or the
//!   answer for a tool no rule concerns;
//! - `decide(layer, tool, agent, session, call id)`: the verdict.
//!
//! Any answer is [`SLOW`] where this can't give it with no N-API call: a
//! route that reads params, a decision that needs OpenClaw's session store,
//! a verdict beyond a pass, a block or an owned call's token and
//! conversation, a field longer than [`FIELD_UNITS`]. The front then hands
//! the call, with what it read, to the slow function ([`Slow`]), which is
//! today's N-API path (`JsLayer::hook_read`) and reads nothing twice.
//!
//! The contract is the native build's: each field is read once or not at
//! all (the front reads them, in the order the N-API path reads them); the
//! token is defined in the result by `rewrite.js`, never set; a read that
//! throws is decided by Rust as the N-API path decides it. A panic traps,
//! as everywhere in WebAssembly: the front's call throws, and OpenClaw
//! blocks the call (docs/platforms.md).

use std::borrow::Cow;
use std::cell::RefCell;
use std::rc::{Rc, Weak};

use napi::bindgen_prelude::*;

use super::callback::{make, Callback};
use super::host::function_ref;
use super::js::Js;
use super::layer::{JsLayer, Read, PANIC_TEST};
use super::tiers::{Enter, TierData};
use claw_identity_core::log::LineBuf;
use claw_identity_core::pipeline;
use claw_identity_core::proxy;
use claw_identity_core::route::Route;
use claw_identity_core::rules::{Decision, Params, Slot, ToolCall, Verdict};

/// Room for one field, in UTF-16 units; a longer one goes the slow way.
/// The same as `lib/wasm-front.cjs`'s.
pub const FIELD_UNITS: usize = 256;
/// The fields' places in the field area, in units of [`FIELD_UNITS`].
const TOOL: usize = 0;
const AGENT: usize = 1;
const SESSION: usize = 2;
const CALL_ID: usize = 3;

/// A field's length as the front passes it: not a string, or not read.
const NOT_A_STRING: i32 = -1;
const NOT_READ: i32 = -2;

/// [`Slow`]'s stage for a result that could not be built.
const RENDER_THREW: i32 = -4;

/// Answers. The front hands the call to the slow function.
pub const SLOW: i32 = -1;
/// `undefined`, with nothing to log.
const UNDEFINED: i32 = 0;
/// Go on: the front reads `ctx.agentId` and `ctx.sessionKey`, and with
/// [`GO_CALL_ID`] `ctx.toolCallId` too.
const GO: i32 = 1;
const GO_CALL_ID: i32 = 2;
/// Verdicts, with the header filled: `undefined` (and the line); OpenClaw's
/// block; an owned call's params.
const PASS: i32 = 3;
const BLOCK: i32 = 4;
const OWNED: i32 = 5;

/// The header's words.
const H_LAYER: usize = 0;
const H_TOKEN: usize = 1;
const H_CONVERSATION: usize = 2;
/// The line's level as `write` takes it (0 info, 1 warn, 2 error), or -1: no line.
const H_LEVEL: usize = 3;
/// 1: lines logged before the call's own wait; the front delivers them first.
const H_FLUSH: usize = 4;
/// Where the text is, and its three parts' lengths in bytes (UTF-8), one
/// after the other: the token or the block reason, the conversation, the line.
const H_TEXT: usize = 5;
const H_FIRST: usize = 6;
const H_SECOND: usize = 7;
const H_LINE: usize = 8;
const HEADER_WORDS: usize = 9;

/// What a slot of an owned call's result does.
const KEEP: i32 = 0;
const SET: i32 = 1;
/// Takes the param out if the call holds it (`layer.rs`'s `slot_value`).
const CLEAR: i32 = 2;
/// Sets the conversation to the caller's own session key, as the front read it.
const YOURS: i32 = 3;

/// This JS thread's front: where the fields and the answer are, and the
/// tiers and layers the front names by number.
struct Front {
    fields: Box<[u16; 4 * FIELD_UNITS]>,
    header: Box<[i32; HEADER_WORDS]>,
    text: Vec<u8>,
    tiers: Vec<Weak<TierData>>,
    layers: Vec<Weak<JsLayer>>,
}

thread_local! {
    static FRONT: RefCell<Front> = RefCell::new(Front {
        fields: Box::new([0; 4 * FIELD_UNITS]),
        header: Box::new([0; HEADER_WORDS]),
        text: Vec::with_capacity(1024),
        tiers: Vec::new(),
        layers: Vec::new(),
    });
}

/// A free place in `slots` (a dead one, or a new one) for `item`.
fn place<T>(slots: &mut Vec<Weak<T>>, item: &Rc<T>) -> u32 {
    let at = match slots.iter().position(|w| w.strong_count() == 0) {
        Some(i) => i,
        None => {
            slots.push(Weak::new());
            slots.len() - 1
        }
    };
    slots[at] = Rc::downgrade(item);
    at as u32
}

/// The front's JS functions (`lib/wasm-front.cjs`): `layer(i, owned,
/// write, tokenParam, conversationParam)` records a layer's functions,
/// `hook(tier, slow, flush, name)` makes a hook; and [`Flush`]. Kept in
/// the thread's state.
pub struct FrontFns {
    layer: FunctionRef<Js<'static>, Js<'static>>,
    hook: FunctionRef<Js<'static>, Js<'static>>,
    flush: FunctionRef<Js<'static>, Js<'static>>,
}

impl FrontFns {
    /// The front `lib/wasi.cjs` made, `{ layer, hook }`.
    pub fn new(env: &Env, front: Js<'_>) -> Result<FrontFns> {
        let get = |name: &std::ffi::CStr| -> Result<FunctionRef<Js<'static>, Js<'static>>> {
            function_ref(env, front.get_unchecked(name)?)
        };
        Ok(FrontFns {
            layer: get(c"layer")?,
            hook: get(c"hook")?,
            flush: function_ref(env, make(env, "clawIdentityFlush", Flush)?)?,
        })
    }

    /// Records `layer`'s functions with the front: returns its number.
    pub fn add_layer(
        &self,
        env: &Env,
        layer: &Rc<JsLayer>,
        owned: Js<'_>,
        write: Js<'_>,
    ) -> Result<u32> {
        let at = FRONT.with_borrow_mut(|f| place(&mut f.layers, layer));
        let opts = layer.layer.engine().options();
        let raw = env.raw();
        Js::of(env, self.layer.borrow_back(env)?)?
            .call(
                Js::undefined_in(env)?,
                &[
                    Js::from_u32(raw, at)?,
                    owned,
                    write,
                    Js::string(raw, &opts.token_param)?,
                    Js::string(raw, &opts.rules.conversation_id.param)?,
                ],
            )
            .map_err(Error::from_reason)?;
        Ok(at)
    }

    /// A hook `name` deciding for `tier`: the front's function, with the
    /// slow way as its fallback.
    pub fn hook<'e>(&self, env: &'e Env, name: &str, tier: TierData) -> Result<Js<'e>> {
        let tier = Rc::new(tier);
        let at = FRONT.with_borrow_mut(|f| place(&mut f.tiers, &tier));
        let slow = make(env, name, Slow(tier))?;
        Js::of(env, self.hook.borrow_back(env)?)?
            .call(
                Js::undefined_in(env)?,
                &[
                    Js::from_u32(env.raw(), at)?,
                    slow,
                    Js::of(env, self.flush.borrow_back(env)?)?,
                    Js::string(env.raw(), name)?,
                ],
            )
            .map_err(Error::from_reason)
    }
}

fn layer_at(at: u32) -> Option<Rc<JsLayer>> {
    FRONT.with_borrow(|f| f.layers.get(at as usize).and_then(Weak::upgrade))
}

/// The slow way: `slow(event, ctx, stage, layer, tool, agent, session,
/// extra)`, the N-API path for the call, given what the front read.
/// `stage` says what that is:
/// - 0: nothing (the whole hook, the tier's part included);
/// - 1: `tool`; 2: and `agent`, `session`; 3: and the call id, `extra`;
/// - -1, -2, -3: the read of stage 1, 2 or 3 threw `extra`;
/// - -4: Rust decided the call, and building its result threw `extra`
///   (a getter of its params): it fails closed.
struct Slow(Rc<TierData>);

impl Callback for Slow {
    const WHAT: &'static str = "the hook's arguments";
    const ARGS: usize = 8;

    fn call<'e>(&self, env: &'e Env, args: &[Js<'e>]) -> Result<Option<Js<'e>>> {
        let stage = args[2].number()? as i32;
        if stage == 0 {
            return self.0.call(env, &args[..2]);
        }
        let layer = layer_at(args[3].number()? as u32)
            .ok_or_else(|| Error::from_reason("the layer of this call is gone"))?;
        if stage == RENDER_THREW {
            return layer.failed_result(env, args[4], args[7]).map(Some);
        }
        let read = Read {
            tool: (stage >= 1 || stage <= -2).then_some(args[4]),
            ids: (stage >= 2 || stage == -3).then_some((args[5], args[6])),
            call_id: (stage == 3).then_some(args[7]),
            thrown: (stage < 0).then_some(args[7]),
        };
        layer.hook_read(env, args[0], args[1], read)
    }
}

/// `flush(layer)`: delivers the lines waiting before a call's own.
struct Flush;

impl Callback for Flush {
    const WHAT: &'static str = "flush's argument";
    const ARGS: usize = 1;

    fn call<'e>(&self, env: &'e Env, args: &[Js<'e>]) -> Result<Option<Js<'e>>> {
        if let Some(layer) = layer_at(args[0].number()? as u32) {
            layer.logger.flush(env, &layer.pending);
        }
        Ok(None)
    }
}

/// Field `i` as the front wrote it, in `buf` when it is ASCII (every id
/// OpenClaw makes is): `None` for not a string; `Err` for a field that is
/// too long for the fast way.
fn field<'b>(
    fields: &[u16],
    i: usize,
    len: i32,
    buf: &'b mut [u8; FIELD_UNITS],
) -> std::result::Result<Option<Cow<'b, str>>, ()> {
    let n = match len {
        NOT_A_STRING => return Ok(None),
        n if n < 0 || n as usize > FIELD_UNITS => return Err(()),
        n => n as usize,
    };
    let units = &fields[i * FIELD_UNITS..i * FIELD_UNITS + n];
    if units.iter().all(|&u| u < 0x80) {
        for (b, &u) in buf.iter_mut().zip(units) {
            *b = u as u8;
        }
        // ASCII is UTF-8 (were it not, the call would go the slow way).
        // `from_utf8` checks ASCII fast; the lossy form cost 70 ns a call.
        return std::str::from_utf8(&buf[..n])
            .map(|s| Some(Cow::Borrowed(s)))
            .map_err(|_| ());
    }
    // A lone surrogate becomes U+FFFD, as N-API's UTF-8 gives it.
    Ok(Some(Cow::Owned(String::from_utf16_lossy(units))))
}

/// Whether the fast way takes calls of `route`: its rule reads no params.
fn fast(route: &Route) -> bool {
    route.reads.is_empty() && route.scans.is_empty() && !route.derived
}

/// The panic test's tool (`layer.rs`'s `PANIC_TEST`) goes the slow way, which panics.
fn panic_test(tool: &str) -> bool {
    PANIC_TEST.load(std::sync::atomic::Ordering::Relaxed) && tool == "claw-os____panic__"
}

fn enter(tier: u32) -> i32 {
    let Some(tier) = FRONT.with_borrow(|f| f.tiers.get(tier as usize).and_then(Weak::upgrade))
    else {
        return SLOW;
    };
    match tier.enter() {
        Enter::Skip => UNDEFINED,
        Enter::WithEnv => SLOW,
        Enter::Go(layer) => match layer.front() {
            Some(at) => {
                FRONT.with_borrow_mut(|f| f.header[H_LAYER] = at as i32);
                GO
            }
            None => SLOW,
        },
    }
}

fn route(layer: u32, tool: i32) -> i32 {
    let Some(layer) = layer_at(layer) else {
        return SLOW;
    };
    let mut buf = [0; FIELD_UNITS];
    let tool = match FRONT.with_borrow(|f| field(&f.fields[..], TOOL, tool, &mut buf)) {
        Ok(t) => t,
        Err(()) => return SLOW,
    };
    let engine = layer.layer.engine();
    let Some(route) = tool.as_deref().and_then(|t| engine.route(t)) else {
        layer.layer.note_unowned();
        return UNDEFINED;
    };
    let tool = tool.unwrap_or_default();
    if !fast(route) || panic_test(&tool) {
        return SLOW;
    }
    match proxy::server_of(engine.options(), &tool) {
        Some(_) => GO_CALL_ID,
        None => GO,
    }
}

fn decide(layer: u32, lens: [i32; 4]) -> i32 {
    let Some(js) = layer_at(layer) else {
        return SLOW;
    };
    let mut bufs = [[0; FIELD_UNITS]; 4];
    let [b0, b1, b2, b3] = &mut bufs;
    let read = FRONT.with_borrow(|f| -> std::result::Result<_, ()> {
        let fields = &f.fields[..];
        Ok([
            field(fields, TOOL, lens[0], b0)?,
            field(fields, AGENT, lens[1], b1)?,
            field(fields, SESSION, lens[2], b2)?,
            match lens[3] {
                NOT_READ => None,
                n => field(fields, CALL_ID, n, b3)?,
            },
        ])
    });
    let Ok([Some(tool), agent, session, call_id]) = read else {
        return SLOW;
    };
    let l = &js.layer;
    let engine = l.engine();
    let Some(route) = engine.route(&tool).filter(|r| fast(r)) else {
        return SLOW;
    };
    // The call id was read where the route says a proxied server's is.
    if proxy::server_of(engine.options(), &tool).is_some() && lens[3] == NOT_READ {
        return SLOW;
    }
    let params = Params::new();
    let call = ToolCall {
        tool: &tool,
        agent_id: agent.as_deref(),
        session_key: session.as_deref(),
        params: &params,
        derived_paths: &[],
        call_id: call_id.as_deref(),
    };
    // Lines logged from here on wait, and go out before the call's own.
    js.pending.hold();
    let code = pipeline::decide_offline(
        l,
        route,
        &call,
        |d| shape(d).is_some(),
        |d, line| write_answer(&js, d, call.session_key, line),
    )
    .unwrap_or(SLOW);
    let waiting = js.pending.release();
    FRONT.with_borrow_mut(|f| f.header[H_FLUSH] = waiting as i32);
    code
}

/// A verdict the front renders: its code, and for an owned call the token
/// and conversation slots.
fn shape(d: &Decision<'_>) -> Option<i32> {
    if d.ensure_session.is_some() {
        return None;
    }
    match &d.verdict {
        Verdict::Pass => Some(PASS),
        Verdict::Block(_) => Some(BLOCK),
        Verdict::Rewrite(p) if p.params.is_empty() => Some(OWNED),
        _ => None,
    }
}

/// Writes the answer for `d` into the header and the text: its code.
fn write_answer(
    js: &JsLayer,
    d: &Decision<'_>,
    session_key: Option<&str>,
    line: Option<&LineBuf>,
) -> i32 {
    FRONT.with_borrow_mut(|f| {
        let Front { header, text, .. } = f;
        text.clear();
        let (mut token, mut conversation) = (KEEP, KEEP);
        let code = match (&d.verdict, shape(d)) {
            (Verdict::Block(reason), _) => {
                text.extend_from_slice(reason.as_bytes());
                BLOCK
            }
            (Verdict::Rewrite(p), Some(OWNED)) => {
                token = match &p.token {
                    Slot::Set(t) => {
                        let value = p.handle.as_deref().unwrap_or(t.expose());
                        text.extend_from_slice(value.as_bytes());
                        SET
                    }
                    Slot::Keep => KEEP,
                    Slot::Clear => CLEAR,
                };
                header[H_FIRST] = text.len() as i32;
                conversation = match &p.conversation {
                    Slot::Set(c) if Some(c.as_ref()) == session_key => YOURS,
                    Slot::Set(c) => {
                        text.extend_from_slice(c.as_bytes());
                        SET
                    }
                    Slot::Keep => KEEP,
                    Slot::Clear => CLEAR,
                };
                OWNED
            }
            (_, Some(code)) => code,
            // `decide_offline` keeps only what `shape` takes.
            (_, None) => unreachable!("a verdict the front does not render"),
        };
        if code != OWNED {
            header[H_FIRST] = text.len() as i32;
        }
        header[H_SECOND] = text.len() as i32 - header[H_FIRST];
        let before = text.len();
        header[H_LEVEL] = match line {
            Some(l) if js.logger.takes(l.level()) => {
                text.extend_from_slice(l.as_str().as_bytes());
                super::host::level_index(l.level()) as i32
            }
            _ => -1,
        };
        header[H_LINE] = (text.len() - before) as i32;
        header[H_TOKEN] = token;
        header[H_CONVERSATION] = conversation;
        header[H_TEXT] = text.as_ptr() as i32;
        code
    })
}

// The exports the front calls: plain wasm functions, no N-API.

/// Where the front writes the fields: four of [`FIELD_UNITS`] UTF-16 units.
#[no_mangle]
pub extern "C" fn claw_identity_front_fields() -> *mut u16 {
    FRONT.with_borrow_mut(|f| f.fields.as_mut_ptr())
}

/// Where the answer's header is: [`HEADER_WORDS`] i32 words.
#[no_mangle]
pub extern "C" fn claw_identity_front_header() -> *mut i32 {
    FRONT.with_borrow_mut(|f| f.header.as_mut_ptr())
}

/// The start of a call of hook `tier`: [`GO`] with the layer in the
/// header, [`UNDEFINED`], or [`SLOW`].
#[no_mangle]
pub extern "C" fn claw_identity_front_enter(tier: u32) -> i32 {
    enter(tier)
}

/// The route of the tool (the tool field, `tool` units long).
#[no_mangle]
pub extern "C" fn claw_identity_front_route(layer: u32, tool: i32) -> i32 {
    route(layer, tool)
}

/// The decision, for the fields written, with these lengths.
#[no_mangle]
pub extern "C" fn claw_identity_front_decide(
    layer: u32,
    tool: i32,
    agent: i32,
    session: i32,
    call_id: i32,
) -> i32 {
    decide(layer, [tool, agent, session, call_id])
}
