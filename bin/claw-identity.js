#!/usr/bin/env node
// claw-identity: the operator commands for hosts without OpenClaw. The same
// commands run as `openclaw claw-identity ...` (see cli.js).
import { run, STANDALONE } from '../cli.js';

run(process.argv.slice(2), STANDALONE).then((code) => {
  process.exitCode = code;
});
