// Loopback hosts for the proxy tests: one that answers its own 503 (over
// http:// or TLS), one that accepts connections and never says a word, and
// the one polling helper these tests use.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

/** A self-signed certificate for 127.0.0.1, made with openssl. */
export function makeCert() {
  const dir = mkdtempSync(join(tmpdir(), "hostguard-cert-"));
  const cert = join(dir, "cert.pem");
  const key = join(dir, "key.pem");
  execFileSync("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key, "-out", cert], { stdio: "ignore" });
  const out = { cert: readFileSync(cert), key: readFileSync(key) };
  rmSync(dir, { recursive: true, force: true });
  return out;
}

/** A host answering every request with its own 503 and no Proxy-Status. */
export async function upstream503(tls) {
  const handler = (req, res) => {
    res.writeHead(503, { "Retry-After": "30", "Content-Type": "text/plain" });
    res.end("busy");
  };
  const srv = tls ? https.createServer(tls, handler) : http.createServer(handler);
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  return {
    url: `${tls ? "https" : "http"}://127.0.0.1:${srv.address().port}/`,
    close: () => { srv.closeAllConnections?.(); return new Promise((r) => srv.close(r)); },
  };
}

/** Accepts connections, reads what comes and never answers; counts them. */
export async function silentHost() {
  const held = [];
  let accepted = 0;
  const srv = net.createServer((c) => {
    accepted++;
    held.push(c);
    c.on("error", () => {});
    c.resume();
  });
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  return {
    port: srv.address().port,
    get accepted() { return accepted; },
    close() {
      for (const c of held) c.destroy();
      return new Promise((r) => srv.close(r));
    },
  };
}

/**
 * Answers every request with 200 after delayMs; down() stops it listening
 * and closes its connections (connections are then refused), up() listens
 * again on the same port. events() is what it heard: "in" and "out" for
 * each request, so a test sees which requests overlapped.
 */
export async function comebackHost(delayMs) {
  const log = [];
  const handler = (req, res) => {
    log.push("in");
    setTimeout(() => {
      log.push("out");
      res.writeHead(200, { "Content-Type": "text/plain", Connection: "close" });
      res.end("ok");
    }, delayMs);
  };
  let srv = http.createServer(handler);
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  const port = srv.address().port;
  const down = () => { srv.closeAllConnections(); return new Promise((r) => srv.close(r)); };
  return {
    port,
    events: () => [...log],
    forget: () => { log.length = 0; },
    down,
    async up() {
      srv = http.createServer(handler);
      await new Promise((r) => srv.listen(port, "127.0.0.1", r));
    },
    close: down,
  };
}

/** Polls cond until it holds, for state only the daemon knows. */
export async function waitFor(cond, what, timeoutMs = 10000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}
