#!/usr/bin/env node
// The `hostguard` command of the npm package: runs the binary of the
// @hostguard/<os>-<cpu> package npm installed beside it (or HOSTGUARD_BIN,
// or one on PATH) with the same arguments, and exits as it exits.
import { spawnSync } from "node:child_process";
import { findBinary } from "../build/daemon.js";

let bin;
try {
  bin = await findBinary();
} catch (err) {
  console.error(err.message);
  process.exit(1);
}
const r = spawnSync(bin, process.argv.slice(2), { stdio: "inherit", windowsHide: true });
if (r.error) {
  console.error(`hostguard: cannot run ${bin}: ${r.error.message}`);
  process.exit(1);
}
if (r.signal) process.kill(process.pid, r.signal);
process.exit(r.status ?? 1);
