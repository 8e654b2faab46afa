// The JS half of an owned call (a tool that carries the token): OpenClaw's
// hook result `{ params: { ...p, <token param>: token, <conversation param>:
// conversation } }`, and the call's log line, in one call into V8 (the same
// copy made through N-API, and the log line as a second call, cost several
// times more: BENCHMARKS.md). Compiled once per layer by the addon
// (bridge/layer.rs), with TOKEN and CONVERSATION replaced by the layer's
// param names as string literals (constant keys let V8 build the object
// without a runtime call per key), then called with the logger's `write`
// (bridge/host.rs, `write(line, level)`, the one function that hands a
// line to the logger).
//
// Nothing here decides: the addon picks the function by the params the
// call's result defines (the token, the conversation id, or both), and
// passes each value to define, `undefined` for a param taken out (it takes
// out only a param the call holds). `line` is the call's log line, or
// `undefined`, and `level` its level, as `write` takes it.
//
// `event` is the call's event when no rule read its params: `event.params`
// is then read here, once, as the addon reads it (an object that is not an
// array, or nothing); otherwise `event` is `undefined` and `params` is the
// params object the addon read.
//
// Spread and object-literal keys both define (never set) properties, so no
// setter on Object.prototype runs and an own `__proto__` key stays an own
// key.
(write) => {
  const paramsOf = (event, params) => {
    if (event === undefined) return params;
    const p = event.params;
    return typeof p === 'object' && p !== null && !Array.isArray(p) ? p : undefined;
  };
  return [
    function ownedToken(event, params, token, _conversation, line, level) {
      const p = paramsOf(event, params);
      if (line !== undefined) write(line, level);
      return { params: { ...p, TOKEN: token } };
    },
    function ownedConversation(event, params, _token, conversation, line, level) {
      const p = paramsOf(event, params);
      if (line !== undefined) write(line, level);
      return { params: { ...p, CONVERSATION: conversation } };
    },
    function ownedBoth(event, params, token, conversation, line, level) {
      const p = paramsOf(event, params);
      if (line !== undefined) write(line, level);
      return { params: { ...p, TOKEN: token, CONVERSATION: conversation } };
    },
    // The WebAssembly build's front reads the params with it where a param
    // may be taken out (lib/wasm-front.cjs).
    paramsOf,
  ];
};
