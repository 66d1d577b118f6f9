// Error bodies and Proxy-Status headers into typed errors, without a daemon.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  BadRequest,
  BudgetExhausted,
  BudgetPaced,
  FastFail,
  HostguardError,
  LeaseLost,
  PolicyRefused,
  UpstreamFailed,
  classifyError,
  daemonMade,
  errorFromResponse,
  parseProxyStatus,
} from "../build/index.js";

const h = (o = {}) => new Headers(o);
const body = (o) => JSON.stringify(o);
const JSON_TYPE = { "content-type": "application/json" };

test("Proxy-Status parsing", () => {
  assert.deepEqual(parseProxyStatus('hostguard; error=destination_unavailable; details="open, 30 s; wait"'),
    { error: "destination_unavailable", details: "open, 30 s; wait" });
  assert.deepEqual(parseProxyStatus('cdn; error=http_response_timeout, "hostguard"; error=dns_error'), { error: "dns_error" });
  assert.equal(parseProxyStatus("othercache; error=dns_error"), undefined);
  assert.equal(parseProxyStatus(null), undefined);
});

test("today's fast-fail body", () => {
  const e = errorFromResponse(503, h({ "retry-after": "30" }),
    body({ error: "server: endpoint x (fast-fail)", endpoint: "https://a.example", retry_after_seconds: 30 }));
  assert.ok(e instanceof FastFail);
  assert.equal(e.endpoint, "https://a.example");
  assert.equal(e.retryAfter, 30);
});

test("the fast-fail marker and Proxy-Status", () => {
  const ps = { "proxy-status": "hostguard; error=destination_unavailable", "retry-after": "7" };
  const e = errorFromResponse(503, h(ps), body({ error: "...", endpoint: "https://a.example:8443", fast_fail: true }));
  assert.ok(e instanceof FastFail);
  assert.equal(e.retryAfter, 7);
  // Proxy-Status alone: a CONNECT answer whose body a client lost.
  assert.ok(errorFromResponse(503, h(ps), "") instanceof FastFail);
});

test("budget refusals", () => {
  assert.ok(errorFromResponse(429, h({ "retry-after": "3" }), body({ error: "p", retry_after_seconds: 3 }), "budget") instanceof BudgetPaced);
  const e = errorFromResponse(429, h(), body({ error: "x", reason: "exhausted", resets_at: "2026-12-02T00:00:00Z" }), "budget");
  assert.ok(e instanceof BudgetExhausted);
  assert.equal(e.resetsAt.toISOString(), "2026-12-02T00:00:00.000Z");
  // No reason: a Retry-After that happens to end at midnight is not taken
  // for an exhausted day.
  const now = new Date();
  const midnight = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1);
  const secs = String(Math.floor((midnight - now.getTime()) / 1000));
  assert.ok(errorFromResponse(429, h({ "retry-after": secs }), body({ error: "x" }), "budget") instanceof BudgetPaced);
  assert.ok(errorFromResponse(429, h(), body({ error: "x", reason: "paced", retry_after_seconds: 2 }), "budget") instanceof BudgetPaced);
});

test("lease, field, upstream and policy", () => {
  assert.ok(errorFromResponse(409, h(), body({ error: "lost", field: "lease" }), "item") instanceof LeaseLost);
  const bad = errorFromResponse(400, h(), body({ error: "bad", field: "items[3].id" }));
  assert.ok(bad instanceof BadRequest);
  assert.equal(bad.field, "items[3].id");
  const up = errorFromResponse(504, h({ "proxy-status": "hostguard; error=http_response_timeout" }), body({ error: "x", class: "timeout" }));
  assert.ok(up instanceof UpstreamFailed);
  assert.equal(up.errorClass, "timeout");
  assert.equal(up.proxyError, "http_response_timeout");
  assert.ok(errorFromResponse(403, h(), body({ error: "x", class: "policy" })) instanceof PolicyRefused);
  const other = errorFromResponse(500, h(), "<html>");
  assert.equal(other.constructor, HostguardError);
});

test("the daemon's answers are told from an upstream's", async () => {
  const r = (status, headers, text) => new Response(text, { status, headers });
  assert.equal(await daemonMade(r(503, JSON_TYPE, body({ error: "busy" }))), false);
  assert.equal(await daemonMade(r(503, { "content-type": "text/html" }, "<h1>503</h1>")), false);
  assert.equal(await daemonMade(r(502, { "proxy-status": "nginx; error=connection_refused" }, "")), false);
  assert.equal(await daemonMade(r(404, JSON_TYPE, body({ error: "server: not here" }))), false);
  assert.equal(await daemonMade(r(503, { "proxy-status": "hostguard; error=destination_unavailable" }, "")), true);
  assert.equal(await daemonMade(r(503, JSON_TYPE, body({ error: "x", endpoint: "http://a", retry_after_seconds: 30 }))), true);
  assert.equal(await daemonMade(r(502, JSON_TYPE, body({ error: "x", class: "refused" }))), true);
});

test("network errors into failure classes", () => {
  const wrapped = new TypeError("fetch failed", { cause: Object.assign(new Error("connect"), { code: "ECONNREFUSED" }) });
  assert.equal(classifyError(wrapped), "refused");
  assert.equal(classifyError(new TypeError("fetch failed", { cause: new AggregateError([Object.assign(new Error(), { code: "ETIMEDOUT" })]) })), "timeout");
  assert.equal(classifyError(Object.assign(new Error("dns"), { code: "ENOTFOUND" })), "dns_not_found");
  assert.equal(classifyError(new DOMException("t", "TimeoutError")), "timeout");
  assert.equal(classifyError(Object.assign(new Error("axios 500"), { response: { status: 500 } })), "answered");
  assert.equal(classifyError(new DOMException("a", "AbortError")), undefined);
  assert.equal(classifyError(new RangeError("bug")), undefined);
});
