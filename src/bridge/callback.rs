//! The addon's raw N-API callbacks, the functions OpenClaw calls on every
//! tool call and tool result (`tiers.rs`), and their one prologue: read the
//! two arguments and the callback's data, run the callback with a panic
//! caught, and throw where it fails or panics, so OpenClaw blocks the call
//! (fail closed). A `#[napi]` function costs about 80-100 ns more per call
//! (BENCHMARKS.md), so these are made by hand, here alone.

use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};

use napi::bindgen_prelude::*;
use napi::sys;

use super::js::Js;
use claw_identity_core::redact;

/// The most arguments a raw callback reads.
pub const MAX_ARGS: usize = 8;

/// A raw callback's data, and what the callback does with its first
/// [`Callback::ARGS`] arguments (`undefined` where the caller passed fewer).
pub trait Callback: 'static {
    /// What the callback is, for the error thrown if it can't start.
    const WHAT: &'static str;
    /// How many arguments it reads, at most [`MAX_ARGS`]; N-API fills each
    /// slot, so a hook reads its two alone.
    const ARGS: usize = 2;

    /// The callback's result; `None` is `undefined`. `args` holds
    /// [`Callback::ARGS`] values.
    fn call<'e>(&self, env: &'e Env, args: &[Js<'e>]) -> Result<Option<Js<'e>>>;
}

/// A JS function `name` that runs `data.call`, and frees `data` when it is
/// collected.
pub fn make<'e, D: Callback>(env: &'e Env, name: &str, data: D) -> Result<Js<'e>> {
    let data = Box::into_raw(Box::new(data));
    let cannot = || Error::from_reason(format!("claw-identity: cannot create {name}()"));
    let mut f = std::ptr::null_mut();
    // SAFETY: a plain N-API call; `data` lives until the finalizer below.
    let status = unsafe {
        sys::napi_create_function(
            env.raw(),
            name.as_ptr().cast(),
            name.len() as isize,
            Some(raw_callback::<D>),
            data.cast(),
            &mut f,
        )
    };
    if status != sys::Status::napi_ok {
        // SAFETY: never handed to N-API.
        drop(unsafe { Box::from_raw(data) });
        return Err(cannot());
    }
    // SAFETY: `f` is a live function of this env; the finalizer owns `data`.
    let status = unsafe {
        sys::napi_add_finalizer(
            env.raw(),
            f,
            data.cast(),
            Some(free::<D>),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        )
    };
    if status != sys::Status::napi_ok {
        return Err(cannot());
    }
    // SAFETY: `f` was just made in this env.
    Ok(unsafe { Js::from_raw(env.raw(), f) })
}

/// The one prologue.
unsafe extern "C" fn raw_callback<D: Callback>(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> sys::napi_value {
    const { assert!(D::ARGS <= MAX_ARGS) };
    let (mut argc, mut argv, mut data) = (
        D::ARGS,
        [std::ptr::null_mut(); MAX_ARGS],
        std::ptr::null_mut(),
    );
    // SAFETY: `info` is this callback's; N-API fills missing args with undefined.
    let status = unsafe {
        sys::napi_get_cb_info(
            env,
            info,
            &mut argc,
            argv.as_mut_ptr(),
            std::ptr::null_mut(),
            &mut data,
        )
    };
    if status != sys::Status::napi_ok || data.is_null() {
        return throw(env, &format!("cannot read {}", D::WHAT));
    }
    // SAFETY: `data` is the `D` this function was made with (`make`), freed
    // only by the function's finalizer.
    let data = unsafe { &*(data as *const D) };
    let env = Env::from_raw(env);
    let r = catch_unwind(AssertUnwindSafe(|| -> Result<sys::napi_value> {
        // SAFETY: the first `D::ARGS` arguments are live for this callback.
        let args = argv.map(|a| unsafe { Js::from_raw(env.raw(), a) });
        // No value is `undefined` to the caller, as N-API defines it.
        Ok(data
            .call(&env, &args[..D::ARGS])?
            .map_or(std::ptr::null_mut(), |v| v.raw()))
    }));
    match r {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => throw(env.raw(), &e.reason),
        Err(_) => throw(env.raw(), "a panic"),
    }
}

/// Only when not even the callback's own answer could be built: OpenClaw
/// blocks a call whose hook throws.
fn throw(env: sys::napi_env, why: &str) -> sys::napi_value {
    let msg = std::ffi::CString::new(format!("claw-identity: {}", redact::scrub(why)))
        .unwrap_or_default();
    // SAFETY: a plain N-API call on this callback's env.
    unsafe { sys::napi_throw_error(env, std::ptr::null(), msg.as_ptr()) };
    std::ptr::null_mut()
}

unsafe extern "C" fn free<D>(_env: sys::napi_env, data: *mut c_void, _hint: *mut c_void) {
    // SAFETY: `data` is the `Box<D>` `make` leaked for this function; its
    // finalizer runs once.
    drop(unsafe { Box::from_raw(data as *mut D) });
}
