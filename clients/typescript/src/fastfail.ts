// Telling the daemon's fast-fail apart in what a Node HTTP client hands
// back. A program pointed at hostguard's forward proxy meets a fast-fail
// (the endpoint is open, so the daemon answered at once without contacting
// the host) in a different shape in each client:
//
// - an answer: 503 with `Proxy-Status: hostguard;
//   error=destination_unavailable` (node:http's IncomingMessage, also the
//   `res` of a CONNECT's "connect" event; a fetch Response; an axios
//   response, or an AxiosError's `response`);
// - undici's ProxyAgent, which tunnels every request (http:// too unless
//   `proxyTunnel: false`), keeps only the CONNECT's status:
//   `TypeError("fetch failed")` whose `cause.cause.message` is
//   "Proxy response (503) !== 200 when HTTP Tunneling".
//
// isFastFail takes any of these by duck typing, so that this package
// depends on none of those clients. An answer found on the chain decides by
// its header alone, since an upstream chooses its own status line but never
// the daemon's Proxy-Status member. A status or sentence is believed only
// where no answer exists, on a refused CONNECT, whose status line only the
// proxy writes.

import { FastFail, parseProxyStatus } from "./errors.js";

// undici's error for a CONNECT answered with 503. The daemon answers a
// CONNECT 503 for a fast-fail, and also, rarely, at its connection cap or
// with its store failing: all three say "not now, try later", and undici
// shows nothing that tells them apart.
const undiciTunnel503 = /^Proxy response \(503\) !== 200 when HTTP Tunneling$/;
// The daemon's reason phrase for a CONNECT refused as a fast-fail, for
// clients that put the status line into an error. The endpoint is an
// origin: no spaces.
const tunnelRefusal = /(?:^|: )503 endpoint \S+ is not answering; not contacted \(fast-fail\)$/;

// How far along causes and wrapped errors to look; undici's chain is three.
const maxLinks = 16;

/**
 * Whether this error or answer is hostguard's fast-fail: a response or an
 * error of node:http, fetch (built in, or undici's with its ProxyAgent) or
 * axios, or this package's own FastFail. False for anything else: an
 * upstream's own 503, the daemon's other refusals, a timeout, undefined.
 */
export function isFastFail(errorOrResponse: unknown): boolean {
  const links = chain(errorOrResponse);
  for (const x of links) {
    if (x instanceof FastFail) return true;
    const verdict = answerVerdict(x);
    if (verdict !== undefined) return verdict;
  }
  return links.some((x) => {
    const msg = messageOf(x);
    return msg !== undefined && (undiciTunnel503.test(msg) || tunnelRefusal.test(msg));
  });
}

function isObject(x: unknown): x is Record<string, unknown> {
  return (typeof x === "object" || typeof x === "function") && x !== null;
}

// first and what it wraps (an axios error's response, causes, an
// AggregateError's errors), breadth first, each once.
function chain(first: unknown): unknown[] {
  const out: unknown[] = [];
  const seen = new Set<unknown>();
  const queue: unknown[] = [first];
  while (queue.length > 0 && out.length < maxLinks) {
    const x = queue.shift();
    if (!isObject(x) || seen.has(x)) continue;
    seen.add(x);
    out.push(x);
    if (!(x instanceof Error)) continue;
    const rec = x as unknown as Record<string, unknown>;
    queue.push(rec["response"], rec["cause"]);
    if (Array.isArray(rec["errors"])) queue.push(...(rec["errors"] as unknown[]));
  }
  return out;
}

// true or false for an HTTP answer (a status and headers), undefined when
// x is not one.
function answerVerdict(x: unknown): boolean | undefined {
  if (!isObject(x)) return undefined;
  // node:http says statusCode; fetch and axios say status.
  const status = typeof x["statusCode"] === "number" ? x["statusCode"] : x["status"];
  const headers = x["headers"];
  if (typeof status !== "number" || !isObject(headers)) return undefined;
  if (status !== 503) return false;
  return headerValues(headers, "proxy-status").some((v) => parseProxyStatus(v)?.["error"] === "destination_unavailable");
}

// Every value of a header: fetch's Headers and AxiosHeaders have get();
// node:http gives a plain object with lower-case names, and an array for a
// repeated header it does not join.
function headerValues(headers: Record<string, unknown>, name: string): string[] {
  const get = headers["get"];
  if (typeof get === "function") {
    const v: unknown = get.call(headers, name);
    if (typeof v === "string") return [v];
    if (Array.isArray(v)) return v.map(String);
  }
  for (const [k, v] of Object.entries(headers)) {
    if (k.toLowerCase() !== name) continue;
    if (typeof v === "string") return [v];
    if (Array.isArray(v)) return v.map(String);
  }
  return [];
}

function messageOf(x: unknown): string | undefined {
  if (x instanceof Error) return x.message;
  if (isObject(x) && typeof x["message"] === "string") return x["message"];
  return undefined;
}
