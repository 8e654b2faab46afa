// What a leak of a secret looks like, for the sandbox suites: any 16
// characters of it, as written (any case), reversed, in hex (spaced or not)
// or in base64 (at each of the three alignments a file can put it at).
// `leaks` names the owners of what it finds, never the pieces.

function pieces(secrets) {
  const lower = new Map();
  const exact = new Map();
  const add = (map, text, owner) => {
    for (let i = 0; i + 16 <= text.length; i++) map.set(text.slice(i, i + 16), owner);
  };
  for (const [owner, s] of Object.entries(secrets)) {
    add(lower, s.toLowerCase(), owner);
    add(lower, [...s].reverse().join('').toLowerCase(), owner);
    add(lower, Buffer.from(s).toString('hex'), owner);
    for (let k = 0; k < 3; k++)
      add(
        exact,
        Buffer.from(' '.repeat(k) + s)
          .toString('base64')
          .slice(4, -4),
        owner,
      );
  }
  return { lower, exact };
}

/** The owners (keys of `secrets`) of the secrets `text` shows a piece of, sorted. */
export function leaks(text, secrets) {
  const { lower, exact } = pieces(secrets);
  const found = new Set();
  const scan = (t, map) => {
    for (let i = 0; i + 16 <= t.length; i++) {
      const o = map.get(t.slice(i, i + 16));
      if (o) found.add(o);
    }
  };
  const s = String(text);
  for (const t of [s, s.replace(/\s+/g, '')]) {
    scan(t.toLowerCase(), lower);
    scan(t, exact);
  }
  return [...found].sort();
}
