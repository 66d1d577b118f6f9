// Runs the real hostguard binary for the tests: built once per run from
// this repository (go build into a temporary directory), or taken from
// HOSTGUARD_BIN; each daemon listens on free loopback ports (port 0, read
// from its JSON "listening" log line) over an SQLite file of its own.
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
let built;

export function binary() {
  if (built) return built;
  if (process.env.HOSTGUARD_BIN) return (built = process.env.HOSTGUARD_BIN);
  const dir = mkdtempSync(join(tmpdir(), "hostguard-bin-"));
  process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
  const out = join(dir, "hostguard");
  const r = spawnSync("go", ["build", "-o", out, "./cmd/hostguard"], { cwd: repo, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`go build failed:\n${r.stdout}${r.stderr}${r.error ?? ""}`);
  return (built = out);
}

/** A loopback port nothing listens on: connecting to it is refused. */
export async function deadPort() {
  const srv = net.createServer();
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  const { port } = srv.address();
  await new Promise((r) => srv.close(r));
  return port;
}

// tuned: false runs the daemon with its defaults, as the README starts it,
// plus the ports, the file and --allow-private.
export async function startDaemon(args = [], token = "", { tuned = true } = {}) {
  const dir = mkdtempSync(join(tmpdir(), "hostguard-test-"));
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("HOSTGUARD_")));
  if (token) env.HOSTGUARD_TOKEN = token;
  const argv = ["serve", "--listen", "127.0.0.1:0", "--proxy-listen", "127.0.0.1:0", "--db", join(dir, "hostguard.db"),
    "--log-format", "json", "--allow-private", ...(tuned ? ["--header-timeout", "2s"] : []), ...args];
  const proc = spawn(binary(), argv, { env, stdio: ["ignore", "ignore", "pipe"] });
  const logs = [];
  const exited = new Promise((r) => proc.once("exit", r));
  const listening = new Promise((resolveLine, reject) => {
    const rl = createInterface({ input: proc.stderr });
    rl.on("line", (line) => {
      logs.push(line);
      try {
        const rec = JSON.parse(line);
        if (rec.msg === "hostguard: listening") resolveLine(rec);
      } catch {}
    });
    exited.then(() => reject(new Error("the daemon exited before listening:\n" + logs.join("\n"))));
    setTimeout(() => reject(new Error("the daemon did not start:\n" + logs.join("\n"))), 30000).unref();
  });
  const rec = await listening;
  return {
    api: "http://" + rec.api,
    proxy: rec.proxy,
    logs,
    async stop() {
      if (proc.exitCode === null) {
        proc.kill("SIGTERM");
        const t = setTimeout(() => proc.kill("SIGKILL"), 15000);
        await exited;
        clearTimeout(t);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
