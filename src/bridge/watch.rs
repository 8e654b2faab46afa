//! The WebAssembly build's watcher (core `watcher/node.rs`): `watch.js`
//! runs Node's `fs.watch` and an unref'd heartbeat timer on the JS thread,
//! and forwards what they see to the layer's watcher, which says what to
//! watch. Both stop once that watcher is closed or replaced, or the layer
//! is gone.

use std::rc::Rc;

use claw_identity_core::watcher::{Input, Watch};
use napi::bindgen_prelude::*;

use super::js::Js;
use super::layer::JsLayer;

/// `watch.js`'s kinds of input.
const TICK: u32 = 0;
const EVENTS: u32 = 1;
const LOST: u32 = 2;
const FAILED: u32 = 3;

pub fn start(env: &Env, js: &Rc<JsLayer>) -> Result<()> {
    let Some(generation) = js.layer.watching() else {
        return Ok(());
    };
    let weak = Rc::downgrade(js);
    let check = Js::of(
        env,
        env.create_function_from_closure::<(), Js, _>("clawIdentityWatch", move |cx| {
            let arg =
                |i| -> Result<String> { Ok(cx.get::<Js>(i)?.host_str()?.unwrap_or_default()) };
            let (code, path);
            let names: Vec<(usize, Option<String>)>;
            let events: Vec<(usize, Option<&str>)>;
            let input = match cx.get::<u32>(0)? {
                TICK => Input::Tick,
                EVENTS => {
                    // `[watch index, name or null, ...]`
                    let list = cx.get::<Js>(1)?;
                    let mut read = Vec::new();
                    for i in (0..list.array_len()?.saturating_sub(1)).step_by(2) {
                        let at = list.get_index(i)?.number()?;
                        read.push((at as usize, list.get_index(i + 1)?.host_str()?));
                    }
                    names = read;
                    events = names.iter().map(|(i, n)| (*i, n.as_deref())).collect();
                    Input::Events(&events)
                }
                LOST => Input::Lost,
                FAILED => {
                    (code, path) = (arg(1)?, arg(2)?);
                    Input::Failed {
                        code: &code,
                        path: &path,
                    }
                }
                k => return Err(Error::from_reason(format!("watch.js: unknown input {k}"))),
            };
            let env = cx.env.raw();
            match weak
                .upgrade()
                .and_then(|js| js.layer.watcher_input(generation, input))
            {
                None => Js::boolean(env, false),
                Some(Watch::Keep) => Js::undefined(env),
                Some(Watch::Set(paths)) => {
                    let out = Js::array(env, paths.len() as u32)?;
                    for (i, p) in paths.iter().enumerate() {
                        out.set_index(i as u32, Js::string(env, p)?)?;
                    }
                    Ok(out)
                }
            }
        })?,
    )?;
    let every = Js::from_f64(env.raw(), js.layer.poll_every().as_millis() as f64)?;
    let watch: Js<'_> = env.run_script(include_str!("watch.js"))?;
    let global = Js::global(env)?;
    watch
        .call(global, &[check, every])
        .map_err(Error::from_reason)?;
    Ok(())
}
