// The rewrite of a tool call's params, as OpenClaw's hook result:
// `{ params: {...p} }` with up to three params defined as own properties.
// Spread and object-literal keys both define (never set) properties, so no
// setter on Object.prototype runs and an own `__proto__` key stays an own
// key. Compiled once per layer by the addon (lib.rs), with TOKEN and
// CONVERSATION replaced by the layer's two slot names as string literals:
// constant keys let V8 build the common rewrite (the token, the conversation
// id) without a runtime call per key; the same copy made through N-API cost
// about 10x more (BENCHMARKS.md).
(function copyParams(p, n, k1, v1, k2, v2, k3, v3) {
  switch (n) {
    case -1: return { params: { ...p, TOKEN: v1 } };
    case -2: return { params: { ...p, CONVERSATION: v1 } };
    case -3: return { params: { ...p, TOKEN: v1, CONVERSATION: v2 } };
    case 1: return { params: { ...p, [k1]: v1 } };
    case 2: return { params: { ...p, [k1]: v1, [k2]: v2 } };
    case 3: return { params: { ...p, [k1]: v1, [k2]: v2, [k3]: v3 } };
    default: return { params: { ...p } };
  }
})
