// isFastFail on what node:http, fetch (undici's ProxyAgent) and axios really
// hand back from the real daemon's proxy, over http:// and over CONNECT.
import assert from "node:assert/strict";
import http from "node:http";
import { after, before, describe, test } from "node:test";

import { ProxyAgent } from "undici";

import { FastFail, isFastFail } from "../build/index.js";
import { axiosEnv, axiosTunnel, fetchProxyAgent, nodeHTTP, setProxyEnv } from "./clients.mjs";
import { deadPort, startDaemon } from "./daemon.mjs";
import { makeCert, upstream503 } from "./targets.mjs";

let daemon, proxy, cert, upHTTP, upTLS, restoreEnv;

before(async () => {
  daemon = await startDaemon();
  proxy = `http://${daemon.proxy}`;
  restoreEnv = setProxyEnv(proxy);
  cert = makeCert();
  upHTTP = await upstream503();
  upTLS = await upstream503(cert);
});

after(async () => {
  restoreEnv();
  await upHTTP.close();
  await upTLS.close();
  await daemon.stop();
});

const catching = async (fn) => { try { return await fn(); } catch (e) { return e; } };

// Each client as the README points it at the proxy, one request.
const clients = {
  "node:http": (url) => nodeHTTP(url, proxy, { ca: cert.cert }),
  "fetch (ProxyAgent)": (url) => fetchProxyAgent(url, proxy, { ca: cert.cert }),
  axios: (url) => axiosEnv(url, proxy),
  "axios (HttpsProxyAgent)": (url) => axiosTunnel(url, proxy, { ca: cert.cert }),
};

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
    const get = (url) => axiosEnv(url, proxy, { validateStatus: () => true });
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
