//! What OpenClaw is about to store in a transcript, with every token the
//! layer knows redacted: the message handed to `tool_result_persist` and
//! `before_message_write`, walked whole by the same redaction as tool
//! results (`params::redact`).

use napi::Result;

use super::js::{Js, Kind};
use super::params;
use claw_identity_core::redact::results::{Hits, Redactor};

/// What replaces a part of a message that is nested too deeply to check:
/// it is not stored, rather than stored unchecked.
pub const WITHHELD: &str =
    "[claw-identity: withheld from the transcript: nested too deeply to check for tokens]";

/// A copy of `message` with every token `r` knows redacted, or `None` when
/// it holds none. When the whole message can't be walked (nested too
/// deeply), each top-level part is walked on its own and a part that still
/// can't be is withheld: `content` becomes one text block saying so, any
/// other part that text.
pub fn redact_message<'e>(
    env: napi::sys::napi_env,
    message: Js<'e>,
    r: &Redactor,
    hits: &mut Hits,
) -> Result<Option<Js<'e>>> {
    // Counted once: a message walked again part by part starts over.
    let mut whole = Hits::default();
    match params::redact(env, message, r, 0, &mut whole) {
        Ok(clean) => {
            hits.add(&whole);
            Ok(clean)
        }
        Err(_) if message.deep_kind()? == Kind::Object => withhold(env, message, r, hits).map(Some),
        Err(e) => Err(e),
    }
}

fn withhold<'e>(
    env: napi::sys::napi_env,
    message: Js<'e>,
    r: &Redactor,
    hits: &mut Hits,
) -> Result<Js<'e>> {
    let mut props = Vec::new();
    for key in message.own_keys(true)? {
        let value = message.get_key(key)?;
        let clean = match params::redact(env, value, r, 1, hits) {
            Ok(clean) => clean.unwrap_or(value),
            Err(_) if key.host_str()?.as_deref() == Some("content") => {
                let block = Js::object(env)?;
                block.define(&[
                    (Js::string(env, "type")?, Js::string(env, "text")?),
                    (Js::string(env, "text")?, Js::string(env, WITHHELD)?),
                ])?;
                let content = Js::array(env, 1)?;
                content.set_index(0, block)?;
                content
            }
            Err(_) => Js::string(env, WITHHELD)?,
        };
        let key = params::redact(env, key, r, 1, hits)?.unwrap_or(key);
        props.push((key, clean));
    }
    let out = Js::object(env)?;
    out.define(&props)?;
    Ok(out)
}
