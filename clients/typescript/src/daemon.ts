/// <reference types="node" />
// A daemon the program owns: started for it, stopped with it.
//
//   const hg = await startDaemon({ stateDir: "state" });   // a connected Client
//   await hg.items.add(["job-1"]);
//   await hg.stop();
//
// Node's modules are imported inside the functions, so that importing the
// client in a browser or an Electron renderer never loads them.

import { Client } from "./client.js";

/** Options of {@link startDaemon}. */
export interface DaemonOptions {
  /** Holds the SQLite file (hostguard.db) and, by default, the log; made if
   * missing. Default: a temporary directory removed on stop. */
  stateDir?: string;
  /** The program to run; default {@link findBinary}'s choice. */
  binary?: string;
  /** Where the daemon's log goes (appended); default stateDir/hostguard.log. */
  logFile?: string;
  /** Also start the forward proxy on a free port (`proxy`); default true. */
  proxy?: boolean;
  /** More `hostguard serve` flags. */
  args?: string[];
  /** The environment it runs in; default this process's. */
  env?: Record<string, string | undefined>;
  /** Seconds to wait for it to be ready; default 30. */
  readyTimeout?: number;
  /** Seconds between SIGTERM and a kill on stop; default 15. */
  stopTimeout?: number;
}

/** The daemon could not be started or did not become ready. */
export class DaemonError extends Error {
  /** Where its log went, and the last lines of it. */
  readonly logFile: string | undefined;
  readonly logTail: string;
  constructor(message: string, logFile?: string, logTail = "") {
    super(logTail ? `${message}\nlast lines of ${logFile}:\n${logTail}` : message);
    this.name = new.target.name;
    this.logFile = logFile;
    this.logTail = logTail;
  }
}
/** No hostguard binary: not given, not installed with the package, not on PATH. */
export class BinaryNotFound extends DaemonError {}
/** Other processes kept taking the free ports chosen for the daemon. */
export class PortInUse extends DaemonError {}
/** Another daemon runs on this state directory, and sharing it is not safe. */
export class StateDirInUse extends DaemonError {}
/** The daemon exited, or did not answer ready in time. */
export class DaemonNotReady extends DaemonError {}

const TAIL_LINES = 20;
// Fresh ports tried when another process takes the chosen one first.
const PORT_ATTEMPTS = 3;

function exeName(): string {
  return process.platform === "win32" ? "hostguard.exe" : "hostguard";
}

/**
 * The hostguard binary to run: `binary` when given, else HOSTGUARD_BIN,
 * else the one of the `@hostguard/<os>-<cpu>` package npm installed with
 * this one, else the first on PATH.
 */
export async function findBinary(binary?: string): Promise<string> {
  const fs = await import("node:fs");
  const path = await import("node:path");
  const { createRequire } = await import("node:module");
  const runnable = (p: string) => {
    try {
      fs.accessSync(p, fs.constants.X_OK);
      return fs.statSync(p).isFile();
    } catch {
      return false;
    }
  };
  const onPath = (name: string) => {
    for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
      if (dir && runnable(path.join(dir, name))) return path.join(dir, name);
    }
    return undefined;
  };
  if (binary) {
    if (runnable(binary)) return path.resolve(binary);
    const found = binary.includes(path.sep) ? undefined : onPath(binary);
    if (found) return found;
    throw new BinaryNotFound(`hostguard: the binary ${JSON.stringify(binary)} does not exist or is not executable`);
  }
  if (process.env.HOSTGUARD_BIN) return findBinary(process.env.HOSTGUARD_BIN);
  const pkg = `@hostguard/${process.platform}-${process.arch}`;
  try {
    const dir = path.dirname(createRequire(import.meta.url).resolve(`${pkg}/package.json`));
    const p = path.join(dir, "bin", exeName());
    if (runnable(p)) return p;
  } catch {
    // Not installed: npm skips it on systems it does not fit.
  }
  const found = onPath(exeName());
  if (found) return found;
  throw new BinaryNotFound(
    `hostguard: no hostguard binary found (no ${pkg} package, none on PATH): reinstall hostguard ` +
      `with its optional dependencies (npm install hostguard, without --omit=optional), or put a release ` +
      `binary on PATH, or pass startDaemon({binary}) or HOSTGUARD_BIN`,
  );
}

async function freePort(): Promise<number> {
  const net = await import("node:net");
  const srv = net.createServer();
  await new Promise<void>((resolve, reject) => {
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => resolve());
  });
  const addr = srv.address();
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  if (addr === null || typeof addr === "string") throw new DaemonError("hostguard: no free loopback port");
  return addr.port;
}

/** @internal The process under a {@link DaemonClient}. */
export interface DaemonProcess {
  pid(): number | undefined;
  stop(): Promise<void>;
}

// The daemons of this process still running, stopped when it exits.
const live = new Set<import("node:child_process").ChildProcess>();
let exitHook = false;

/**
 * A {@link Client} connected to a daemon this program started and owns.
 * `stop()` (or `close()`) stops it; so does this
 * process's end, however it ends: the daemon watches the pipe on its
 * standard input (`--exit-with-stdin`).
 */
export class DaemonClient extends Client {
  /** The proxy's host:port ("" without one); addr and token are the API's. */
  readonly proxy: string;
  readonly stateDir: string;
  readonly logFile: string;
  readonly #proc: DaemonProcess;
  readonly #temp: boolean;
  #stopping: Promise<void> | undefined;

  /** @internal */
  constructor(
    init: { addr: string; proxy: string; token: string; stateDir: string; logFile: string; temp: boolean },
    proc: DaemonProcess,
  ) {
    super({ addr: init.addr, token: init.token });
    this.proxy = init.proxy;
    this.stateDir = init.stateDir;
    this.logFile = init.logFile;
    this.#temp = init.temp;
    this.#proc = proc;
  }

  /** The daemon's process id while it runs. */
  get pid(): number | undefined {
    return this.#proc.pid();
  }

  /** Stops the daemon: SIGTERM (on Windows, its stdin closing), then a kill
   * after stopTimeout seconds. Safe to call more than once. */
  stop(): Promise<void> {
    this.#stopping ??= (async () => {
      await this.#proc.stop();
      if (this.#temp) (await import("node:fs")).rmSync(this.stateDir, { recursive: true, force: true });
    })();
    return this.#stopping;
  }

  /** The same as {@link stop}. */
  close(): Promise<void> {
    return this.stop();
  }
}

async function stopProcess(
  proc: import("node:child_process").ChildProcess,
  exited: Promise<void>,
  graceSeconds: number,
): Promise<void> {
  if (proc.exitCode === null && proc.signalCode === null) {
    if (process.platform === "win32") proc.stdin?.end();
    else proc.kill("SIGTERM");
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<"late">((resolve) => {
      timer = setTimeout(() => resolve("late"), graceSeconds * 1000);
    });
    if ((await Promise.race([exited, late])) === "late") {
      proc.kill("SIGKILL");
      await exited;
    }
    clearTimeout(timer);
  }
  proc.stdin?.destroy();
  live.delete(proc);
}

async function tail(file: string, start: number): Promise<string> {
  const fs = await import("node:fs");
  try {
    const fd = fs.openSync(file, "r");
    try {
      const size = fs.fstatSync(fd).size;
      const buf = Buffer.alloc(Math.max(0, size - start));
      fs.readSync(fd, buf, 0, buf.length, start);
      return buf.toString("utf8").split(/\r?\n/).filter(Boolean).slice(-TAIL_LINES).join("\n");
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return "";
  }
}

/**
 * Starts a private hostguard daemon and returns a client connected to it,
 * once it is ready: on free loopback ports, with a token made for it, its
 * state in `stateDir`. Two daemons on one state directory are refused by
 * the second with {@link StateDirInUse}; a daemon given a shared store
 * (`args: ["--db", "postgres://..."]`) may share it.
 */
export async function startDaemon(opts: DaemonOptions = {}): Promise<DaemonClient> {
  const fs = await import("node:fs");
  const os = await import("node:os");
  const path = await import("node:path");
  const crypto = await import("node:crypto");
  const binary = await findBinary(opts.binary);
  let stateDir: string;
  let temp = false;
  if (opts.stateDir) {
    stateDir = path.resolve(opts.stateDir);
    fs.mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  } else {
    stateDir = fs.mkdtempSync(path.join(os.tmpdir(), "hostguard-"));
    temp = true;
  }
  const logFile = path.resolve(opts.logFile ?? path.join(stateDir, "hostguard.log"));
  const token = crypto.randomBytes(32).toString("base64url");
  const readyTimeout = opts.readyTimeout ?? 30;
  const stopTimeout = opts.stopTimeout ?? 15;
  try {
    for (let attempt = 1; ; attempt++) {
      const r = await launch(binary, stateDir, logFile, token, opts, readyTimeout, stopTimeout, attempt === PORT_ATTEMPTS);
      if (r) {
        const { proc, exited } = r;
        return new DaemonClient({ ...r.init, token, stateDir, logFile, temp }, {
          pid: () => (proc.exitCode === null && proc.signalCode === null ? proc.pid : undefined),
          stop: () => stopProcess(proc, exited, stopTimeout),
        });
      }
    }
  } catch (err) {
    if (temp) fs.rmSync(stateDir, { recursive: true, force: true });
    throw err;
  }
}

async function launch(
  binary: string,
  stateDir: string,
  logFile: string,
  token: string,
  opts: DaemonOptions,
  readyTimeout: number,
  stopTimeout: number,
  last: boolean,
): Promise<{ init: { addr: string; proxy: string }; proc: import("node:child_process").ChildProcess; exited: Promise<void> } | undefined> {
  const fs = await import("node:fs");
  const path = await import("node:path");
  const { spawn } = await import("node:child_process");
  const api = await freePort();
  const proxy = opts.proxy === false ? "" : `127.0.0.1:${await freePort()}`;
  const listen = `127.0.0.1:${api}`;
  const argv = ["serve", "--listen", listen, "--db", path.join(stateDir, "hostguard.db"), "--exit-with-stdin",
    "--proxy-listen", proxy, ...(opts.args ?? [])];
  // In the environment, the token stays out of the process list.
  const env = { ...(opts.env ?? process.env), HOSTGUARD_TOKEN: token };
  const log = fs.openSync(logFile, "a");
  const start = fs.fstatSync(log).size;
  let proc: import("node:child_process").ChildProcess;
  try {
    proc = spawn(binary, argv, {
      env,
      stdio: ["pipe", log, log],
      // Its own process group: a Ctrl-C meant for the program does not
      // stop the daemon under it; the program stops it.
      detached: process.platform !== "win32",
      windowsHide: true,
    });
  } finally {
    fs.closeSync(log);
  }
  let spawnError: Error | undefined;
  const exited = new Promise<void>((resolve) => {
    proc.once("error", (err) => {
      spawnError = err;
      resolve();
    });
    proc.once("exit", () => resolve());
  });
  live.add(proc);
  if (!exitHook) {
    exitHook = true;
    process.once("exit", () => {
      for (const p of live) p.kill("SIGTERM");
    });
  }
  // Neither the daemon nor its pipe keeps this process alive: a program
  // that ends without stop() takes its daemon with it.
  proc.unref();
  (proc.stdin as unknown as { unref?: () => void } | null)?.unref?.();
  const running = () => proc.exitCode === null && proc.signalCode === null && spawnError === undefined;
  const deadline = Date.now() + readyTimeout * 1000;
  for (;;) {
    if (!running()) {
      await exited;
      live.delete(proc);
      if (spawnError) throw new BinaryNotFound(`hostguard: cannot run ${binary}: ${spawnError.message}`);
      const t = await tail(logFile, start);
      const low = t.toLowerCase();
      if (low.includes("address already in use") || low.includes("only one usage of each socket address")) {
        if (!last) return undefined;
        throw new PortInUse(
          `hostguard: the daemon could not listen on ${listen}: other processes took ${PORT_ATTEMPTS} free loopback ports in a row; try again`,
          logFile,
          t,
        );
      }
      if (t.includes(" is in use by ")) {
        throw new StateDirInUse(
          `hostguard: another daemon runs on the state directory ${stateDir} and sharing it is not safe: ` +
            "stop that one, use its address instead of starting a second, or give this one another stateDir",
          logFile,
          t,
        );
      }
      throw new DaemonNotReady(`hostguard: the daemon exited with status ${proc.exitCode ?? proc.signalCode} before it was ready`, logFile, t);
    }
    if (await ready(api)) return { init: { addr: `http://${listen}`, proxy }, proc, exited };
    if (Date.now() > deadline) {
      const t = await tail(logFile, start);
      await stopProcess(proc, exited, stopTimeout);
      throw new DaemonNotReady(`hostguard: the daemon did not become ready within ${readyTimeout}s; raise readyTimeout, or see its log`, logFile, t);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

// /readyz answers 200 once the store answers; a refused connection means
// the daemon is still opening it.
async function ready(port: number): Promise<boolean> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/readyz`, { signal: AbortSignal.timeout(2000) });
    await res.arrayBuffer();
    return res.status === 200;
  } catch {
    return false;
  }
}
