// isFastFail on what node:http, fetch (undici's ProxyAgent) and axios really
// hand back from the real daemon's proxy, over http:// and over CONNECT.
import assert from "node:assert/strict";
import http from "node:http";
import { after, before, describe, test } from "node:test";

import axios from "axios";
import { HttpsProxyAgent } from "https-proxy-agent";
import { ProxyAgent } from "undici";

import { FastFail, isFastFail } from "../build/index.js";
import { deadPort, startDaemon } from "./daemon.mjs";
import { makeCert, upstream503 } from "./targets.mjs";

let daemon, proxy, cert, upHTTP, upTLS;

before(async () => {
  daemon = await startDaemon();
  proxy = `http://${daemon.proxy}`;
  cert = makeCert();
  upHTTP = await upstream503();
  upTLS = await upstream503(cert);
});

after(async () => {
  await upHTTP.close();
  await upTLS.close();
  await daemon.stop();
});

const catching = async (fn) => { try { return await fn(); } catch (e) { return e; } };

// A client pointed at the proxy the way the README says, one request.
const clients = {
  // node:http: an absolute-URI request to the proxy for http://, a CONNECT
  // for https:// (whose "connect" event's res is the answer).
  "node:http": (url) => new Promise((resolve) => {
    const p = new URL(proxy);
    const u = new URL(url);
    const opts = u.protocol === "http:"
      ? { host: p.hostname, port: p.port, path: url, headers: { host: u.host } }
      : { host: p.hostname, port: p.port, method: "CONNECT", path: `${u.hostname}:${u.port}` };
    const req = http.request(opts);
    req.on("response", (res) => { res.resume(); res.on("end", () => resolve(res)); });
    req.on("connect", (res, socket) => { socket.destroy(); resolve(res); });
    req.on("error", resolve);
    req.end();
  }),
  // fetch with undici's ProxyAgent: every request is a CONNECT.
  "fetch (ProxyAgent)": (url) => catching(async () => {
    const res = await fetch(url, { dispatcher: new ProxyAgent({ uri: proxy, requestTls: { ca: cert.cert } }) });
    await res.arrayBuffer();
    return res;
  }),
  // axios reads http_proxy and https_proxy, and sends https:// URLs to the
  // proxy as absolute URIs too (no CONNECT: the daemon makes the TLS).
  axios: (url) => withProxyEnv(() => catching(() => axios.get(url, { timeout: 10000 }))),
  // axios through a tunnelling agent: every request is a CONNECT.
  "axios (HttpsProxyAgent)": (url) => {
    const agent = new HttpsProxyAgent(proxy, { ca: cert.cert });
    return catching(() => axios.get(url, { proxy: false, timeout: 10000, httpAgent: agent, httpsAgent: agent }));
  },
};

async function withProxyEnv(fn) {
  const saved = { ...process.env };
  for (const k of Object.keys(process.env)) if (/^(no|http|https|all)_proxy$/i.test(k)) delete process.env[k];
  process.env.http_proxy = proxy;
  process.env.https_proxy = proxy;
  try {
    return await fn();
  } finally {
    for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
    Object.assign(process.env, saved);
  }
}

// Two requests to a refused port get the daemon's 502s (not fast-fails),
// the third is the fast-fail, and an upstream's own 503 is not one.
async function run(get, scheme) {
  const url = `${scheme}://127.0.0.1:${await deadPort()}/x`;
  for (let i = 1; i <= 2; i++) {
    const x = await get(url);
    assert.equal(isFastFail(x), false, `refused request ${i}: ${describeIt(x)}`);
  }
  const ff = await get(url);
  assert.equal(isFastFail(ff), true, `fast-fail not recognised in ${describeIt(ff)}`);
  const own = await get(scheme === "http" ? upHTTP.url : upTLS.url);
  assert.equal(isFastFail(own), false, `the upstream's own answer: ${describeIt(own)}`);
  return ff;
}

function describeIt(x) {
  if (x instanceof Error) return `${x.constructor.name}: ${x.message} (cause: ${x.cause?.message} / ${x.cause?.cause?.message})`;
  return `${x?.constructor?.name} status=${x?.statusCode ?? x?.status}`;
}

for (const [name, get] of Object.entries(clients)) {
  describe(name, () => {
    test("http://", async () => { await run(get, "http"); });
    test("https://", async () => { await run(get, "https"); });
  });
}

describe("the shapes each client shows", () => {
  test("node:http over CONNECT: the connect event's res", async () => {
    const ff = await run(clients["node:http"], "https");
    assert.equal(ff.statusCode, 503);
    assert.match(ff.headers["proxy-status"], /^hostguard; error=destination_unavailable/);
  });

  test("fetch (ProxyAgent): only the tunnel's status, two causes down", async () => {
    const ff = await run(clients["fetch (ProxyAgent)"], "http");
    assert.ok(ff instanceof TypeError);
    assert.equal(ff.cause.cause.message, "Proxy response (503) !== 200 when HTTP Tunneling");
  });

  test("fetch (ProxyAgent, proxyTunnel: false): a Response for http://", async () => {
    const get = (url) => catching(() => fetch(url, { dispatcher: new ProxyAgent({ uri: proxy, proxyTunnel: false }) }));
    const ff = await run(get, "http");
    assert.ok(ff instanceof Response);
    assert.equal(ff.status, 503);
  });

  test("axios: the error's response.status, and a response when every status is valid", async () => {
    const ff = await run(clients.axios, "http");
    assert.equal(ff.response.status, 503);
    assert.equal(ff.response.statusCode, undefined);
    const get = (url) => withProxyEnv(() => catching(() => axios.get(url, { validateStatus: () => true })));
    const res = await run(get, "https");
    assert.equal(res.status, 503);
  });

  test("axios (HttpsProxyAgent): the refused CONNECT is replayed as the answer", async () => {
    const ff = await run(clients["axios (HttpsProxyAgent)"], "https");
    assert.equal(ff.response?.status, 503);
  });
});

describe("recognition without a daemon", () => {
  const ps = (v) => new Headers(v === undefined ? {} : { "proxy-status": v });
  test("answers decide by the daemon's header", () => {
    assert.equal(isFastFail({ status: 503, headers: ps("hostguard; error=destination_unavailable") }), true);
    assert.equal(isFastFail({ statusCode: 503, headers: { "proxy-status": "hostguard; error=destination_unavailable" } }), true);
    assert.equal(isFastFail({ status: 503, headers: ps("squid; error=destination_unavailable") }), false);
    assert.equal(isFastFail({ status: 503, headers: ps(undefined) }), false);
    assert.equal(isFastFail({ status: 502, headers: ps("hostguard; error=connection_refused") }), false);
    assert.equal(isFastFail(new FastFail("x", { status: 503, endpoint: "http://h:1" })), true);
  });

  test("a message is believed only without an answer", () => {
    const line = "503 endpoint https://h:443 is not answering; not contacted (fast-fail)";
    assert.equal(isFastFail(new Error("Tunnel connection failed: " + line)), true);
    const forged = new Error(line);
    forged.response = { status: 503, headers: ps(undefined) };
    assert.equal(isFastFail(forged), false);
    assert.equal(isFastFail(new Error("Proxy response (502) !== 200 when HTTP Tunneling")), false);
    assert.equal(isFastFail(new TypeError("fetch failed", { cause: new Error("x", { cause: new Error("Proxy response (503) !== 200 when HTTP Tunneling") }) })), true);
    assert.equal(isFastFail(undefined), false);
    assert.equal(isFastFail("503"), false);
  });
});
