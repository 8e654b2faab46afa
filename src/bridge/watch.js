// The WebAssembly build's watcher, on the JS thread (core/src/watcher/node.rs
// decides; this only forwards): Node's fs.watch on the paths Rust names, each
// burst of events once (the events of one turn of the event loop are one
// check, with each event's watch and name), and an unref'd heartbeat timer.
// `check(kind, ...)` answers `false` (stop: the watcher is closed or
// replaced), `undefined` (keep watching) or the paths to watch now. Neither
// the timer nor a watch keeps Node running.
(() => {
  const fs = process.getBuiltinModule('node:fs');
  // The kinds, as src/bridge/watch.rs reads them.
  const TICK = 0;
  const EVENTS = 1;
  const LOST = 2;
  const FAILED = 3;
  // More events than this in one turn count as a lost watch (as an inotify
  // queue overflow does on the native build).
  const MAX_EVENTS = 64;
  return (check, every) => {
    let watchers = [];
    let queued = null;
    let stopped = false;
    const unwatch = () => {
      for (const w of watchers) w.close();
      watchers = [];
    };
    const stop = () => {
      stopped = true;
      clearInterval(timer);
      unwatch();
    };
    const run = (kind, a, b) => {
      if (stopped) return;
      const next = check(kind, a, b);
      if (next === false) stop();
      else if (Array.isArray(next)) rewatch(next);
    };
    // `[watch index, name, ...]` of this turn's events.
    const burst = (i, name) => {
      if (queued === null) {
        queued = [];
        setImmediate(() => {
          const events = queued;
          queued = null;
          if (events.length > 2 * MAX_EVENTS) run(LOST);
          else run(EVENTS, events);
        });
      }
      if (i !== undefined && queued.length <= 2 * MAX_EVENTS) queued.push(i, typeof name === 'string' ? name : null);
    };
    const rewatch = (paths) => {
      unwatch();
      for (const [i, path] of paths.entries()) {
        try {
          const w = fs.watch(path, { persistent: false }, (_, name) => burst(i, name));
          w.on('error', () => run(LOST));
          watchers.push(w);
        } catch (e) {
          // Told at the next turn: Rust may answer with new paths to watch.
          setImmediate(run, FAILED, String(e?.code ?? e?.message ?? e), path);
          return;
        }
      }
      // The map may have changed before the watches were in place.
      if (paths.length > 0) burst();
    };
    const timer = setInterval(() => run(TICK), every);
    timer.unref();
    run(EVENTS, []);
  };
})();
