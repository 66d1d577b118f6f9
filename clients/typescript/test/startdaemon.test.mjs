// startDaemon against the real binary: a daemon the program owns.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, test } from "node:test";

import { BinaryNotFound, Client, DaemonNotReady, PortInUse, StateDirInUse, Unauthorized, startDaemon } from "../build/index.js";
import { binary } from "./daemon.mjs";

const build = resolve(dirname(fileURLToPath(import.meta.url)), "../build/index.js");
let dir;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "hostguard-startdaemon-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** The process has exited (a zombie no one reaped yet counts as gone). */
function gone(pid) {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if (err.code === "ESRCH") return true;
    throw err;
  }
  try {
    return readFileSync(`/proc/${pid}/stat`, "utf8").split(")").pop().trim().startsWith("Z");
  } catch {
    return false;
  }
}

// The one polling loop of these tests: another process's end is seen
// only by polling; bounded in time.
async function waitUntil(cond, what, seconds = 20) {
  const deadline = Date.now() + seconds * 1000;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${seconds}s waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test("ready, and stopped by stop()", async () => {
  const hg = await startDaemon({ stateDir: dir, binary: binary() });
  const pid = hg.pid;
  try {
    assert.ok(pid > 0);
    assert.match(hg.addr, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.match(hg.proxy, /^127\.0\.0\.1:\d+$/);
    await hg.items.add(["job-1"]);
    const leases = await hg.items.claim(1, 60);
    assert.deepEqual(leases.map((l) => l.id), ["job-1"]);
    await hg.items.succeed(leases[0]);
    // The token was made for this daemon: a client without it is refused.
    await assert.rejects(new Client({ addr: hg.addr, token: "wrong" }).items.stats(), Unauthorized);
  } finally {
    await hg.stop();
  }
  assert.ok(gone(pid), "the daemon still runs after stop()");
  assert.equal(hg.pid, undefined);
  await hg.close(); // stopped twice is stopped
  const log = readFileSync(join(dir, "hostguard.log"), "utf8");
  assert.match(log, /hostguard: listening/);
  assert.match(log, /server: stopped/);
  assert.ok(existsSync(join(dir, "hostguard.db")));
});

test("state survives a restart; the log goes where named", async () => {
  const logFile = join(dir, "elsewhere.log");
  let hg = await startDaemon({ stateDir: dir, binary: binary(), logFile, proxy: false });
  assert.equal(hg.proxy, "");
  await hg.items.add(["kept"]);
  await hg.stop();
  hg = await startDaemon({ stateDir: dir, binary: binary(), logFile, proxy: false });
  try {
    assert.deepEqual((await hg.items.claim(5, 60)).map((l) => l.id), ["kept"]);
  } finally {
    await hg.stop();
  }
  assert.equal(readFileSync(logFile, "utf8").match(/hostguard: listening/g).length, 2);
  assert.ok(!existsSync(join(dir, "hostguard.log")));
});

test("a killed parent leaves no daemon", async () => {
  const prog = `
    const { startDaemon } = await import(${JSON.stringify(build)});
    const hg = await startDaemon({ stateDir: process.argv[1], binary: process.argv[2] });
    console.log(hg.pid);
    setInterval(() => {}, 1000);
  `;
  const child = spawn(process.execPath, ["--input-type=module", "-e", prog, dir, binary()], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const exited = new Promise((r) => child.once("exit", r));
  try {
    const line = await new Promise((resolveLine, reject) => {
      createInterface({ input: child.stdout }).once("line", resolveLine);
      exited.then(() => reject(new Error("the child exited before starting its daemon")));
    });
    const pid = Number(line);
    assert.ok(pid > 0 && !gone(pid));
    child.kill("SIGKILL");
    await exited;
    await waitUntil(() => gone(pid), "the daemon of a killed parent to stop");
  } finally {
    child.kill("SIGKILL");
  }
  const log = readFileSync(join(dir, "hostguard.log"), "utf8");
  assert.match(log, /standard input closed/);
  assert.match(log, /server: stopped/);
});

test("a missing binary is a clear error", async () => {
  const missing = join(dir, "no-such-hostguard");
  await assert.rejects(startDaemon({ stateDir: dir, binary: missing }), (err) => {
    assert.ok(err instanceof BinaryNotFound);
    assert.ok(err.message.includes(missing), err.message);
    return true;
  });
  const saved = { PATH: process.env.PATH, HOSTGUARD_BIN: process.env.HOSTGUARD_BIN };
  process.env.PATH = dir;
  delete process.env.HOSTGUARD_BIN;
  try {
    await assert.rejects(startDaemon({ stateDir: dir }), (err) => {
      assert.ok(err instanceof BinaryNotFound);
      assert.match(err.message, /npm install hostguard/);
      return true;
    });
  } finally {
    process.env.PATH = saved.PATH;
    if (saved.HOSTGUARD_BIN !== undefined) process.env.HOSTGUARD_BIN = saved.HOSTGUARD_BIN;
  }
});

test("two daemons on one state directory: the second is refused", async () => {
  const hg = await startDaemon({ stateDir: dir, binary: binary(), proxy: false });
  try {
    await assert.rejects(startDaemon({ stateDir: dir, binary: binary(), proxy: false }), (err) => {
      assert.ok(err instanceof StateDirInUse, String(err));
      assert.ok(err.message.includes(dir), err.message);
      assert.match(err.message, /another daemon/);
      return true;
    });
    // The first one is untouched.
    await hg.items.add(["still-here"]);
    assert.equal((await hg.items.stats()).total, 1);
  } finally {
    await hg.stop();
  }
});

test("a port taken by another process every time", async () => {
  const srv = net.createServer();
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  const { port } = srv.address();
  // A daemon told to listen where another listens fails as a port race does.
  try {
    await assert.rejects(startDaemon({ stateDir: dir, binary: binary(), proxy: false, args: ["--listen", `127.0.0.1:${port}`] }), (err) => {
      assert.ok(err instanceof PortInUse, String(err));
      assert.match(err.logTail, /address already in use/);
      return true;
    });
  } finally {
    await new Promise((r) => srv.close(r));
  }
});

test("a daemon that does not become ready, or exits", { skip: process.platform === "win32" }, async () => {
  const fake = join(dir, "fake-hostguard");
  writeFileSync(fake, "#!/bin/sh\necho 'opening the store' >&2\nexec sleep 600\n");
  chmodSync(fake, 0o755);
  await assert.rejects(startDaemon({ stateDir: dir, binary: fake, readyTimeout: 2, stopTimeout: 1 }), (err) => {
    assert.ok(err instanceof DaemonNotReady, String(err));
    assert.match(err.message, /did not become ready within 2s/);
    assert.match(err.logTail, /opening the store/);
    return true;
  });
  writeFileSync(fake, "#!/bin/sh\necho 'hostguard serve: bad flag' >&2\nexit 2\n");
  await assert.rejects(startDaemon({ stateDir: dir, binary: fake }), (err) => {
    assert.ok(err instanceof DaemonNotReady, String(err));
    assert.match(err.message, /exited with status 2/);
    assert.match(err.message, /bad flag/);
    return true;
  });
});
