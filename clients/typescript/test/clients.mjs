// One request through the proxy with each Node client, pointed at it the
// way the README says; each resolves to the answer or the error, which is
// what the tests look at.
import http from "node:http";
import tls from "node:tls";

import axios from "axios";
import { HttpsProxyAgent } from "https-proxy-agent";
import { ProxyAgent } from "undici";

const catching = async (fn) => { try { return await fn(); } catch (e) { return e; } };

// node:http has no proxy support: an absolute-URI request to the proxy for
// http://, and for https:// a CONNECT (whose "connect" event's res is the
// answer when the daemon refuses) with TLS over the tunnel.
export function nodeHTTP(url, proxy, { timeoutMs = 10000, ca } = {}) {
  return new Promise((resolve) => {
    const p = new URL(proxy);
    const u = new URL(url);
    const giveUp = (destroy) => setTimeout(() => { destroy(); resolve(new Error(`gave up after ${timeoutMs} ms`)); }, timeoutMs);
    if (u.protocol === "http:") {
      const req = http.request({ host: p.hostname, port: p.port, path: url, headers: { host: u.host } });
      const timer = giveUp(() => req.destroy());
      req.on("response", (res) => { res.resume(); res.on("end", () => { clearTimeout(timer); resolve(res); }); });
      req.on("error", (e) => { clearTimeout(timer); resolve(e); });
      req.end();
      return;
    }
    const req = http.request({ host: p.hostname, port: p.port, method: "CONNECT", path: `${u.hostname}:${u.port}` });
    let tunnel;
    const timer = giveUp(() => { req.destroy(); tunnel?.destroy(); });
    req.on("error", (e) => { clearTimeout(timer); resolve(e); });
    req.on("connect", (res, socket) => {
      tunnel = socket;
      if (res.statusCode !== 200) {
        clearTimeout(timer);
        socket.destroy();
        resolve(res);
        return;
      }
      const s = tls.connect({ socket, ca, servername: u.hostname === "127.0.0.1" ? undefined : u.hostname });
      s.on("error", (e) => { clearTimeout(timer); resolve(e); });
      s.on("secureConnect", () => {
        s.write(`GET ${u.pathname} HTTP/1.1\r\nHost: ${u.host}\r\nConnection: close\r\n\r\n`);
        const res = new http.IncomingMessage(s);
        let head = "";
        s.on("data", (d) => {
          head += d;
          const m = /^HTTP\/1\.1 (\d{3})/.exec(head);
          if (m && head.includes("\r\n\r\n")) {
            clearTimeout(timer);
            s.destroy();
            res.statusCode = Number(m[1]);
            resolve(res);
          }
        });
      });
    });
    req.end();
  });
}

// fetch with undici's ProxyAgent: every request is a CONNECT. The agent
// is destroyed after its request: after an aborted request undici opens
// another tunnel that sends nothing, which would blur a count of the
// connections the target accepted.
export async function fetchProxyAgent(url, proxy, { timeoutMs = 10000, ca } = {}) {
  const dispatcher = new ProxyAgent({ uri: proxy, requestTls: { ca } });
  try {
    return await catching(async () => {
      const res = await fetch(url, { dispatcher, signal: AbortSignal.timeout(timeoutMs) });
      await res.arrayBuffer();
      return res;
    });
  } finally {
    await dispatcher.destroy();
  }
}

// axios reads http_proxy and https_proxy (honouring no_proxy; see
// setProxyEnv), and sends https:// URLs to the proxy as absolute URIs too:
// no CONNECT, the daemon makes the TLS connection and checks the
// certificate.
export function axiosEnv(url, _proxy, { timeoutMs = 10000, validateStatus } = {}) {
  return catching(() => axios.get(url, { timeout: timeoutMs, ...(validateStatus ? { validateStatus } : {}) }));
}

// axios through https-proxy-agent: every request is a CONNECT, and a
// refused one is replayed as the answer.
export function axiosTunnel(url, proxy, { timeoutMs = 10000, ca } = {}) {
  const agent = new HttpsProxyAgent(proxy, { ca });
  return catching(() => axios.get(url, { proxy: false, timeout: timeoutMs, httpAgent: agent, httpsAgent: agent }));
}

// The README's environment, without no_proxy (the targets here are on
// loopback too), for the whole test file: node:http and undici ignore it,
// axios reads it. Returns the function that puts the old one back.
export function setProxyEnv(proxy) {
  const saved = { ...process.env };
  for (const k of Object.keys(process.env)) if (/^(no|http|https|all)_proxy$/i.test(k)) delete process.env[k];
  process.env.http_proxy = proxy;
  process.env.https_proxy = proxy;
  return () => {
    for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
    Object.assign(process.env, saved);
  };
}
