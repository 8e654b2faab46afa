//! The WebAssembly build's watcher (core `watcher/poll.rs`): an unref'd JS
//! timer that ticks the layer's watcher on the JS thread. It stops itself
//! once that watcher is closed or replaced, or the layer is gone.

use std::rc::Rc;

use napi::bindgen_prelude::*;

use super::js::Js;
use super::layer::JsLayer;

pub fn start(env: &Env, js: &Rc<JsLayer>) -> Result<()> {
    let Some(generation) = js.layer.watching() else {
        return Ok(());
    };
    let global = Js::global(env)?;
    let weak = Rc::downgrade(js);
    let tick = Js::of(
        env,
        env.create_function_from_closure::<(), (), _>("clawIdentityPoll", move |ctx| {
            let ticked = weak.upgrade().is_some_and(|js| js.layer.poll(generation));
            if !ticked {
                // Node calls a timer's callback with the timer as `this`.
                let timer: Js = ctx.this()?;
                let clear = Js::global(&ctx.env)?.get_unchecked(c"clearInterval")?;
                clear.call(timer, &[timer]).map_err(Error::from_reason)?;
            }
            Ok(())
        })?,
    )?;
    let every = Js::from_f64(env.raw(), js.layer.poll_every().as_millis() as f64)?;
    let timer = global
        .get_unchecked(c"setInterval")?
        .call(global, &[tick, every])
        .map_err(Error::from_reason)?;
    // A watching layer never keeps Node running, as on the native build.
    timer
        .get_unchecked(c"unref")?
        .call(timer, &[])
        .map_err(Error::from_reason)?;
    Ok(())
}
