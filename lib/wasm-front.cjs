// The WebAssembly build's front (src/bridge/front.rs says why and how): a
// tool call decided with no N-API call. Each N-API call of the WebAssembly
// build crosses into emnapi's JS; this reads the call's fields in JS, writes
// them into the instance's linear memory, and calls three plain wasm exports
// that decide in Rust and write the answer back. Made once per instance by
// lib/wasi.cjs, which hands it to Rust (`__useFront`); Rust then makes every
// hook through `hook` and tells it each layer's functions through `layer`.
//
// Nothing here decides. It reads `event.toolName`, then, if Rust asks,
// `ctx.agentId`, `ctx.sessionKey` and `ctx.toolCallId`, each once, as the
// N-API path reads them; it builds the result Rust describes with the
// layer's rewrite.js functions (which define the token, never set it); and
// whatever Rust answers SLOW, and any read that throws, it hands to `slow`,
// the N-API path, with what it read, so that nothing is read twice.
'use strict';

// The layout and the codes, as src/bridge/front.rs defines them.
const FIELD_UNITS = 256;
const [TOOL, AGENT, SESSION, CALL_ID] = [0, 1, 2, 3];
const NOT_A_STRING = -1;
const NOT_READ = -2;
const SLOW = -1;
const UNDEFINED = 0;
const GO_CALL_ID = 2;
const PASS = 3;
const BLOCK = 4;
const [H_LAYER, H_TOKEN, H_CONVERSATION, H_LEVEL, H_FLUSH, H_TEXT, H_FIRST, H_SECOND, H_LINE] = [0, 1, 2, 3, 4, 5, 6, 7, 8];
const [SET, CLEAR, YOURS] = [1, 2, 3];
// `slow`'s stages beyond what was read: the result could not be built.
const RENDER_THREW = -4;

/** What N-API's typeof calls an object or a function: something with properties to read. */
const isObject = (v) => (typeof v === 'object' && v !== null) || typeof v === 'function';

module.exports = function makeFront(exports, memory) {
  const { claw_identity_front_enter: enter, claw_identity_front_route: route, claw_identity_front_decide: decide } = exports;
  const fieldsAt = exports.claw_identity_front_fields() >>> 1;
  const headerAt = exports.claw_identity_front_header() >>> 2;
  const layers = [];

  // Views of the memory, made again when it grew (a grown shared memory is
  // a new buffer). Called after every wasm call and every read that may
  // have run JS, before the memory is touched.
  let buffer, u16, i32, bytes;
  function views() {
    if (memory.buffer === buffer) return;
    buffer = memory.buffer;
    u16 = new Uint16Array(buffer);
    i32 = new Int32Array(buffer);
    bytes = Buffer.from(buffer);
  }

  /** Writes field `i`; its length, NOT_A_STRING, or a length Rust takes as too long. */
  function put(i, v) {
    if (typeof v !== 'string') return NOT_A_STRING;
    const n = v.length;
    if (n > FIELD_UNITS) return n;
    const at = fieldsAt + i * FIELD_UNITS;
    for (let k = 0; k < n; k++) u16[at + k] = v.charCodeAt(k);
    return n;
  }

  /** An owned call's result, as layer.rs's `owned` builds it: `slot_value` says where a param is taken out. */
  function owned(L, event, tokenSlot, token, conversationSlot, conversation, line, level) {
    const read = tokenSlot === CLEAR || conversationSlot === CLEAR;
    const p = read ? L.paramsOf(event) : undefined;
    const holds = (name) => p !== undefined && Object.hasOwn(p, name);
    const hasToken = tokenSlot === SET || (tokenSlot === CLEAR && holds(L.tokenParam));
    const hasConversation = conversationSlot === SET || conversationSlot === YOURS || (conversationSlot === CLEAR && holds(L.conversationParam));
    if (!hasToken && !hasConversation) {
      if (line !== undefined) L.write(line, level);
      return undefined;
    }
    const f = hasToken ? (hasConversation ? L.both : L.token) : L.conversation;
    return f(read ? undefined : event, p, token, conversation, line, level);
  }

  return {
    /** Rust records layer `i`'s functions: rewrite.js's (its three and `paramsOf`), the logger's `write`, its param names. */
    layer(i, fns, write, tokenParam, conversationParam) {
      const [token, conversation, both, paramsOf] = fns;
      layers[i] = { token, conversation, both, paramsOf, write, tokenParam, conversationParam };
    },

    /** The hook `name` for Rust's `tier`, with `slow` (the N-API path) and `flush` (waiting lines). */
    hook(tier, slow, flush, name) {
      const hook = function beforeToolCall(event, ctx) {
        const entered = enter(tier);
        if (entered === UNDEFINED) return undefined;
        if (entered === SLOW) return slow(event, ctx, 0);
        views();
        const at = i32[headerAt + H_LAYER];

        let tool;
        try {
          tool = isObject(event) ? event.toolName : undefined;
        } catch (e) {
          return slow(event, ctx, -1, at, undefined, undefined, undefined, e);
        }
        views();
        const routed = route(at, put(TOOL, tool));
        if (routed === UNDEFINED) return undefined;
        if (routed === SLOW) return slow(event, ctx, 1, at, tool);

        const withCallId = routed === GO_CALL_ID;
        let agent, session, callId;
        let reading = -2;
        try {
          if (isObject(ctx)) {
            agent = ctx.agentId;
            session = ctx.sessionKey;
            reading = -3;
            if (withCallId) callId = ctx.toolCallId;
          }
        } catch (e) {
          return slow(event, ctx, reading, at, tool, agent, session, e);
        }
        const stage = withCallId ? 3 : 2;
        views();
        const code = decide(at, put(TOOL, tool), put(AGENT, agent), put(SESSION, session), withCallId ? put(CALL_ID, callId) : NOT_READ);
        if (code === SLOW) return slow(event, ctx, stage, at, tool, agent, session, callId);

        // Everything is taken out of the memory before any JS runs again
        // (a logger or a getter may make a call of its own).
        views();
        const h = headerAt;
        const [tokenSlot, conversationSlot, level, flushFirst] = [i32[h + H_TOKEN], i32[h + H_CONVERSATION], i32[h + H_LEVEL], i32[h + H_FLUSH]];
        const from = i32[h + H_TEXT];
        const second = from + i32[h + H_FIRST];
        const end = second + i32[h + H_SECOND];
        const first = from === second ? '' : bytes.toString('utf8', from, second);
        const conversation = conversationSlot === YOURS ? session : bytes.toString('utf8', second, end);
        const line = level < 0 ? undefined : bytes.toString('utf8', end, end + i32[h + H_LINE]);
        // The token was in the memory for this call alone.
        bytes.fill(0, from, second);

        const L = layers[at];
        try {
          if (flushFirst) flush(at);
          if (code === PASS || code === BLOCK) {
            if (line !== undefined) L.write(line, level);
            return code === PASS ? undefined : { block: true, blockReason: first };
          }
          return owned(
            L,
            event,
            tokenSlot,
            tokenSlot === SET ? first : undefined,
            conversationSlot,
            conversationSlot === SET || conversationSlot === YOURS ? conversation : undefined,
            line,
            level,
          );
        } catch (e) {
          return slow(event, ctx, RENDER_THREW, at, tool, undefined, undefined, e);
        }
      };
      Object.defineProperty(hook, 'name', { value: name });
      return hook;
    },
  };
};
