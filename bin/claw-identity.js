#!/usr/bin/env node
// claw-identity: the operator commands for hosts without OpenClaw. The same
// commands run as `openclaw claw-identity ...` (see lib/cli.js).
import { run, STANDALONE } from '../lib/cli.js';

run(process.argv.slice(2), { ...STANDALONE, lib: () => import('../index.js') }).then((code) => {
  process.exitCode = code;
});
