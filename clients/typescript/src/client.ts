import { BadRequest, DaemonUnreachable, errorFromResponse, HostguardError, NotFound, parseProxyStatus } from "./errors.js";
import type { Route } from "./errors.js";
import type * as S from "./schema.js";
import type {
  AddResult,
  BudgetReport,
  Endpoint,
  Extension,
  Grant,
  GrantSettlement,
  Host,
  HostPage,
  HostView,
  Item,
  ItemPage,
  ItemState,
  Kind,
  Lease,
  NewItem,
  ObserveResult,
  Outcome,
  QueueStats,
  ReportResult,
  SettleOutcome,
  SettleResult,
  SourceConfig,
  SourceSettings,
  StatusReport,
  Ticket,
  TicketExtension,
  TouchResult,
} from "./types.js";

export const DEFAULT_ADDR = "http://127.0.0.1:7411";
/** Seconds every call may take, but a blocking claim, whose wait is added. */
export const DEFAULT_TIMEOUT = 30;

export interface ClientOptions {
  /** A URL or host:port; default HOSTGUARD_ADDR, else http://127.0.0.1:7411. */
  addr?: string;
  /** Bearer token; default HOSTGUARD_TOKEN. */
  token?: string;
  /** Seconds; default 30. */
  timeout?: number;
  /** The fetch to use; default the platform's (Node 18+, Electron, browsers). */
  fetch?: typeof globalThis.fetch;
}

function env(name: string): string | undefined {
  // process exists in Node and Electron's main process, not in a renderer.
  const p = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process;
  const v = p?.env?.[name];
  return v === "" ? undefined : v;
}

function normalizeAddr(addr: string): string {
  let raw = addr.trim();
  if (!raw.includes("://")) raw = "http://" + raw;
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new TypeError(`hostguard: address ${JSON.stringify(addr)} is not http(s)://host:port`);
  }
  if ((u.protocol !== "http:" && u.protocol !== "https:") || !u.host) {
    throw new TypeError(`hostguard: address ${JSON.stringify(addr)} is not http(s)://host:port`);
  }
  return `${u.protocol}//${u.host}${u.pathname.replace(/\/+$/, "")}`;
}

const seg = encodeURIComponent;

function b64(p: Uint8Array | string): string {
  const bytes = typeof p === "string" ? new TextEncoder().encode(p) : p;
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s);
}

/** The bytes of a lease's or item's payload (empty when it has none). */
export function decodePayload(x: { payload?: string }): Uint8Array {
  if (!x.payload) return new Uint8Array();
  const s = atob(x.payload);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

function compact<T extends Record<string, unknown>>(o: T): Partial<T> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) if (v !== undefined && v !== null) out[k] = v;
  return out as Partial<T>;
}

function seconds(v: number): string {
  return String(Math.round(v * 1000) / 1000);
}

interface CallOptions {
  query?: Record<string, string>;
  route?: Route;
  timeout?: number;
}

/** Tells the daemon's own error answers from an upstream's answers. */
export async function daemonMade(resp: Response): Promise<boolean> {
  if (resp.status < 400) return false;
  if (parseProxyStatus(resp.headers.get("proxy-status"))?.["error"] !== undefined) return true;
  // Daemons that predate Proxy-Status: their error bodies are JSON objects
  // of a known shape (an "error" text; the endpoint and seconds to wait on
  // a fast-fail; the class on a failure).
  if (!(resp.headers.get("content-type") ?? "").includes("json")) return false;
  let body: unknown;
  try {
    body = JSON.parse(await resp.clone().text());
  } catch {
    return false;
  }
  if (!body || typeof body !== "object" || Array.isArray(body)) return false;
  const b = body as Record<string, unknown>;
  if (typeof b["error"] !== "string") return false;
  if (b["fast_fail"] === true) return true;
  if (resp.status === 503) return "endpoint" in b && "retry_after_seconds" in b;
  if ([403, 502, 504].includes(resp.status)) return typeof b["class"] === "string";
  return [400, 401, 405, 413].includes(resp.status) && (b["error"] as string).startsWith("server: ");
}

/** Maps a thrown error of a request to a failure class, "answered", or undefined. */
export type Classifier = (err: unknown) => string | undefined;

const codeClass: Record<string, string> = {
  ECONNREFUSED: "refused",
  EHOSTUNREACH: "host_unreachable",
  ENETUNREACH: "network_unreachable",
  ECONNABORTED: "aborted",
  ECONNRESET: "reset",
  EPIPE: "reset",
  ETIMEDOUT: "timeout",
  ESOCKETTIMEDOUT: "timeout",
  ENOTFOUND: "dns_not_found",
  EAI_NONAME: "dns_not_found",
  EAI_AGAIN: "dns_temporary",
  UND_ERR_CONNECT_TIMEOUT: "timeout",
  UND_ERR_HEADERS_TIMEOUT: "timeout",
  UND_ERR_SOCKET: "reset",
  CERT_HAS_EXPIRED: "tls",
  DEPTH_ZERO_SELF_SIGNED_CERT: "tls",
  SELF_SIGNED_CERT_IN_CHAIN: "tls",
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: "tls",
  ERR_TLS_CERT_ALTNAME_INVALID: "tls",
};

/**
 * The failure class of an error thrown by an HTTP request: "answered" when
 * it carries an HTTP response (axios and similar), a class such as
 * "timeout" or "refused" for network errors found anywhere on its cause
 * chain (fetch's `TypeError: fetch failed` wraps the socket error), and
 * undefined when it is no network error at all, an abort included.
 */
export function classifyError(err: unknown): string | undefined {
  const seen = new Set<unknown>();
  const stack: unknown[] = [err];
  while (stack.length > 0) {
    const e = stack.pop();
    if (!e || typeof e !== "object" || seen.has(e)) continue;
    seen.add(e);
    const o = e as { name?: unknown; code?: unknown; response?: { status?: unknown }; cause?: unknown; errors?: unknown };
    if (o.response && typeof o.response.status === "number") return "answered";
    if (o.name === "TimeoutError") return "timeout";
    if (typeof o.code === "string" && o.code in codeClass) return codeClass[o.code];
    if (o.cause !== undefined) stack.push(o.cause);
    if (Array.isArray(o.errors)) stack.push(...o.errors);
  }
  return undefined;
}

export interface GuardedOptions {
  exempt?: boolean;
  classify?: Classifier;
}

export interface FetchOptions {
  method?: "GET" | "POST";
  body?: BodyInit;
  headers?: HeadersInit;
  exempt?: boolean;
  /** The daemon's header timeout for this request, in seconds (the timeout hint). */
  upstreamTimeout?: number;
  /** Seconds this client waits. */
  timeout?: number;
}

/**
 * A client of one hostguard daemon. Capabilities are grouped:
 * `client.guard`, `client.hosts`, `client.items`, `client.budget`;
 * `client.fetch` and `client.guarded` are at the top. Every failure
 * rejects with a subclass of HostguardError.
 */
export class Client {
  readonly addr: string;
  readonly token: string;
  readonly timeout: number;
  readonly guard: GuardAPI;
  readonly hosts: HostsAPI;
  readonly items: ItemsAPI;
  readonly budget: BudgetAPI;
  private readonly fetchImpl: typeof globalThis.fetch;

  constructor(opts: ClientOptions = {}) {
    this.addr = normalizeAddr(opts.addr ?? env("HOSTGUARD_ADDR") ?? DEFAULT_ADDR);
    this.token = opts.token ?? env("HOSTGUARD_TOKEN") ?? "";
    this.timeout = opts.timeout ?? DEFAULT_TIMEOUT;
    const f = opts.fetch ?? globalThis.fetch;
    if (typeof f !== "function") throw new TypeError("hostguard: no fetch in this runtime; pass options.fetch");
    this.fetchImpl = f.bind(globalThis);
    this.guard = new GuardAPI(this);
    this.hosts = new HostsAPI(this);
    this.items = new ItemsAPI(this);
    this.budget = new BudgetAPI(this);
  }

  /** @internal */
  async send(method: string, path: string, init: { query?: Record<string, string>; body?: BodyInit; headers?: HeadersInit; timeout?: number }): Promise<Response> {
    let url = this.addr + path;
    if (init.query && Object.keys(init.query).length > 0) url += "?" + new URLSearchParams(init.query).toString();
    const headers = new Headers(init.headers);
    if (this.token) headers.set("Authorization", "Bearer " + this.token);
    const req: RequestInit = {
      method,
      headers,
      redirect: "manual",
      signal: AbortSignal.timeout((init.timeout ?? this.timeout) * 1000),
    };
    if (init.body !== undefined) req.body = init.body;
    try {
      return await this.fetchImpl(url, req);
    } catch (err) {
      throw new DaemonUnreachable(`hostguard: the daemon at ${this.addr} did not answer`, { status: 0, cause: err });
    }
  }

  /** @internal */
  async call<T>(method: string, path: string, body?: unknown, opts: CallOptions = {}): Promise<T> {
    const headers: Record<string, string> = { Accept: "application/json" };
    const init: { query?: Record<string, string>; body?: BodyInit; headers: HeadersInit; timeout?: number } = { headers };
    if (opts.query) init.query = opts.query;
    if (opts.timeout !== undefined) init.timeout = opts.timeout;
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const resp = await this.send(method, path, init);
    let text: string;
    try {
      text = await resp.text();
    } catch (err) {
      throw new DaemonUnreachable("hostguard: the daemon's answer was cut short", { status: resp.status, cause: err });
    }
    if (resp.status >= 400) throw errorFromResponse(resp.status, resp.headers, text, opts.route ?? "");
    if (resp.status === 204 || text === "") return undefined as T;
    try {
      return JSON.parse(text) as T;
    } catch (err) {
      throw new HostguardError("hostguard: the daemon's answer is not JSON", { status: resp.status, headers: resp.headers, cause: err });
    }
  }

  healthz(): Promise<{ status: string }> {
    return this.call("GET", "/healthz");
  }

  /** The status page's figures (GET /v1/status). */
  status(): Promise<StatusReport> {
    return this.call("GET", "/v1/status");
  }

  /**
   * Performs one request through the daemon's guard (/v1/fetch). Any
   * upstream answer resolves, a 5xx included; when there is none the
   * daemon's own answer rejects: FastFail (the endpoint is open; nothing
   * was sent), PolicyRefused, or UpstreamFailed with the failure class.
   */
  async fetch(url: string, opts: FetchOptions = {}): Promise<Response> {
    const method = opts.method ?? "GET";
    const query: Record<string, string> = { url };
    if (opts.exempt) query["exempt"] = "1";
    if (opts.upstreamTimeout !== undefined) query["timeout"] = seconds(opts.upstreamTimeout);
    const init: { query: Record<string, string>; body?: BodyInit; headers?: HeadersInit; timeout: number } = {
      query,
      timeout: opts.timeout ?? Math.max(this.timeout, (opts.upstreamTimeout ?? 0) + 5),
    };
    if (opts.headers) init.headers = opts.headers;
    if (method === "POST" && opts.body !== undefined) init.body = opts.body;
    const resp = await this.send(method, "/v1/fetch", init);
    if (await daemonMade(resp)) throw errorFromResponse(resp.status, resp.headers, await resp.text(), "fetch");
    return resp;
  }

  /**
   * Runs fn (your own request to url) under a guard ticket: acquires one
   * (FastFail without calling fn when the endpoint is open), extends its
   * lease while fn runs, and reports how it went — "answered" when fn
   * resolves or fails with an HTTP answer, "failed" with the class of a
   * network error, "inconclusive" for anything else. fn's result or error
   * is passed on.
   */
  guarded<T>(url: string, fn: () => Promise<T> | T, opts: GuardedOptions = {}): Promise<T> {
    return this.guard.run(url, fn, opts);
  }
}

export class GuardAPI {
  constructor(private readonly c: Client) {}

  /** Takes a ticket for url's endpoint; FastFail when it is open. */
  acquire(url: string, opts: { exempt?: boolean } = {}): Promise<Ticket> {
    const body: S.GuardAcquireRequest = opts.exempt ? { url, exempt: true } : { url };
    return this.c.call("POST", "/v1/guard/acquire", body, { route: "acquire" });
  }

  /** Says how the ticket's request went. */
  report(ticket: string | Ticket, outcome: Outcome, errorClass?: S.FailureClass): Promise<ReportResult> {
    const body: S.GuardReportRequest = { ticket: typeof ticket === "string" ? ticket : ticket.ticket, outcome };
    if (errorClass) body.error_class = errorClass;
    return this.c.call("POST", "/v1/guard/report", body);
  }

  /** Renews a ticket's lease, by the daemon's lease length, while its request still runs. */
  extend(ticket: string | Ticket): Promise<TicketExtension> {
    const id = typeof ticket === "string" ? ticket : ticket.ticket;
    return this.c.call("POST", `/v1/guard/tickets/${seg(id)}/extend`);
  }

  /** Forgets the failures of url's endpoint. */
  async reset(url: string): Promise<void> {
    const body: S.GuardResetRequest = { url };
    await this.c.call("POST", "/v1/guard/reset", body);
  }

  /** Endpoints the guard knows, optionally only those in state. */
  async list(state?: S.GuardState): Promise<Endpoint[]> {
    const opts: CallOptions = state ? { query: { state } } : {};
    return (await this.c.call<{ endpoints: Endpoint[] }>("GET", "/v1/guard", undefined, opts)).endpoints;
  }

  /** See Client.guarded. */
  async run<T>(url: string, fn: () => Promise<T> | T, opts: GuardedOptions = {}): Promise<T> {
    const t = await this.acquire(url, opts.exempt ? { exempt: true } : {});
    const every = Math.max(0.5, (t.lease_seconds || 120) / 3) * 1000;
    let keeping = true;
    const timer = setInterval(() => {
      this.extend(t.ticket).catch((err: unknown) => {
        // The ticket is gone, or this daemon cannot extend: stop trying.
        if (err instanceof NotFound || err instanceof BadRequest) {
          keeping = false;
          clearInterval(timer);
        }
      });
    }, every);
    (timer as { unref?: () => void }).unref?.();
    let result: T;
    try {
      result = await fn();
    } catch (err) {
      if (keeping) clearInterval(timer);
      const cls = (opts.classify ?? classifyError)(err);
      await this.settle(t, cls).catch(() => {
        // Undeliverable: the lease releases the ticket as inconclusive,
        // and the caller's own error matters more.
      });
      throw err;
    }
    clearInterval(timer);
    await this.settle(t, "answered");
    return result;
  }

  private async settle(t: Ticket, cls: string | undefined): Promise<void> {
    if (cls === undefined) await this.report(t, "inconclusive");
    else if (cls === "answered") await this.report(t, "answered");
    else await this.report(t, "failed", cls as S.FailureClass);
  }
}

export class HostsAPI {
  constructor(private readonly c: Client) {}

  /** Records one outcome for a host: ok is true if it answered. */
  touch(name: string, ok: boolean): Promise<TouchResult> {
    const body: S.HostTouchRequest = { ok };
    return this.c.call("POST", `/v1/hosts/${seg(name)}/touch`, body);
  }

  get(name: string): Promise<Host> {
    return this.c.call("GET", `/v1/hosts/${seg(name)}`);
  }

  /** Forgets the host's failures, ending its backoff; false when the daemon held no record of it. */
  async reset(name: string): Promise<boolean> {
    const r: { reset: boolean } = await this.c.call("POST", `/v1/hosts/${seg(name)}/reset`);
    return r.reset;
  }

  /** One page of hosts in view. */
  list(view?: HostView, opts: { limit?: number; after?: string } = {}): Promise<HostPage> {
    const query: Record<string, string> = {};
    if (view) query["view"] = view;
    if (opts.limit !== undefined) query["limit"] = String(opts.limit);
    if (opts.after) query["after"] = opts.after;
    return this.c.call("GET", "/v1/hosts", undefined, { query });
  }

  /** Every host in view, page after page. */
  async *filter(view: HostView, pageSize = 1000): AsyncGenerator<Host> {
    let after: string | undefined;
    for (;;) {
      const page = await this.list(view, after ? { limit: pageSize, after } : { limit: pageSize });
      yield* page.hosts;
      after = page.next;
      if (!after) return;
    }
  }
}

type LeaseRef = string | { id: string; lease: string };

function leaseRef(item: LeaseRef, lease?: string): { id: string; token: string } {
  if (typeof item === "string") {
    if (lease === undefined) throw new TypeError("hostguard: pass the lease token with the item id, or the lease from claim");
    return { id: item, token: lease };
  }
  return { id: item.id, token: lease ?? item.lease };
}

export interface ClaimOptions {
  worker?: string;
  /** Wait this long for work when none is due (the blocking claim). */
  waitSeconds?: number;
}

export interface ObserveOptions {
  boost?: number;
  add_if_missing?: boolean;
  priority?: number;
  payload?: Uint8Array | string;
  source?: string;
}

export class ItemsAPI {
  private waitUnsupported = false;
  constructor(private readonly c: Client) {}

  /** Adds items: ids, or objects with id, priority, payload, not_before, host. */
  add(items: Array<string | NewItem>): Promise<AddResult> {
    const out = items.map((it) =>
      typeof it === "string" ? { id: it } : compact({ ...it, payload: it.payload === undefined ? undefined : b64(it.payload) }),
    );
    const body: S.ItemsAddRequest = { items: out as S.NewItem[] };
    return this.c.call("POST", "/v1/items", body);
  }

  /**
   * Leases up to n due items for leaseSeconds. With waitSeconds the call
   * waits that long for work when none is due; against a daemon without
   * the blocking claim, the client polls for the same time instead.
   */
  async claim(n: number, leaseSeconds: number, opts: ClaimOptions = {}): Promise<Lease[]> {
    const body: S.ItemsClaimRequest = { n, lease_seconds: leaseSeconds };
    if (opts.worker) body.worker = opts.worker;
    const wait = opts.waitSeconds ?? 0;
    if (wait <= 0) return this.claimOnce(body);
    if (!this.waitUnsupported) {
      try {
        return await this.claimOnce({ ...body, wait_seconds: wait }, this.c.timeout + wait);
      } catch (err) {
        if (!(err instanceof BadRequest) || err.field !== "wait_seconds") throw err;
        this.waitUnsupported = true;
      }
    }
    const deadline = Date.now() + wait * 1000;
    for (;;) {
      const leases = await this.claimOnce(body);
      const left = deadline - Date.now();
      if (leases.length > 0 || left <= 0) return leases;
      await new Promise((r) => setTimeout(r, Math.min(1000, left)));
    }
  }

  private async claimOnce(body: S.ItemsClaimRequest & { wait_seconds?: number }, timeout?: number): Promise<Lease[]> {
    const opts: CallOptions = { route: "item" };
    if (timeout !== undefined) opts.timeout = timeout;
    return (await this.c.call<{ leases: Lease[] }>("POST", "/v1/items/claim", body, opts)).leases;
  }

  private op<T>(item: LeaseRef, lease: string | undefined, op: string, extra: Record<string, unknown> = {}): Promise<T> {
    const r = leaseRef(item, lease);
    return this.c.call("POST", `/v1/items/${seg(r.id)}/${op}`, compact({ lease: r.token, ...extra }), { route: "item" });
  }

  /** The work is done. Pass the lease from claim, or an id and its token. */
  succeed(item: LeaseRef, lease?: string): Promise<Item> {
    return this.op(item, lease, "succeed");
  }

  /** The attempt failed for reason cls (it picks the delay ladder). */
  fail(item: LeaseRef, cls: string, opts: { lease?: string; note?: string; source?: string; host?: string } = {}): Promise<Item> {
    return this.op(item, opts.lease, "fail", { class: cls, note: opts.note, source: opts.source, host: opts.host });
  }

  /** Holds the lease leaseSeconds from now. */
  extend(item: LeaseRef, leaseSeconds: number, lease?: string): Promise<Extension> {
    return this.op(item, lease, "extend", { lease_seconds: leaseSeconds });
  }

  /** Gives the item back without counting an attempt. */
  release(item: LeaseRef, lease?: string): Promise<Item> {
    return this.op(item, lease, "release");
  }

  /** Fresh evidence for an item: a waiting one becomes due soon. */
  observe(id: string, opts: ObserveOptions = {}): Promise<ObserveResult> {
    const body = compact({ ...opts, payload: opts.payload === undefined ? undefined : b64(opts.payload) });
    return this.c.call("POST", `/v1/items/${seg(id)}/observe`, body, { route: "item" });
  }

  /** Sightings of many ids in one call; unknown ids say unknown. */
  async observeMany(ids: string[], opts: Omit<ObserveOptions, "payload"> = {}): Promise<ObserveResult[]> {
    return (await this.c.call<{ results: ObserveResult[] }>("POST", "/v1/items/observe", compact({ ids, ...opts }), { route: "item" })).results;
  }

  /** Many leases' results in one call; each result says ok or why not. */
  async settle(outcomes: SettleOutcome[]): Promise<SettleResult[]> {
    const body: S.ItemsSettleRequest = { outcomes: outcomes.map((o) => compact({ ...o }) as SettleOutcome) };
    return (await this.c.call<S.ItemsSettleResponse>("POST", "/v1/items/settle", body, { route: "item" })).results;
  }

  get(id: string): Promise<Item> {
    return this.c.call("GET", `/v1/items/${seg(id)}`);
  }

  /**
   * Makes a pending or scheduled item due at once, without counting an
   * attempt; moved is false for a leased, done or already due item.
   */
  dueNow(id: string): Promise<{ id: string; state: string; next_at?: string; moved: boolean }> {
    return this.c.call("POST", `/v1/items/${seg(id)}/due-now`, undefined, { route: "item" });
  }

  /** Deletes the item, whatever its state; a worker holding its lease loses it. */
  async forget(id: string): Promise<void> {
    await this.c.call("DELETE", `/v1/items/${seg(id)}`, undefined, { route: "item" });
  }

  stats(): Promise<QueueStats> {
    return this.c.call("GET", "/v1/items/stats");
  }

  /**
   * One page of items in id order, without payloads. A page may be short,
   * even empty, and still have a next: follow next until it is absent.
   */
  list(opts: ItemListOptions = {}): Promise<ItemPage> {
    const query: Record<string, string> = {};
    if (opts.state !== undefined) query["state"] = Array.isArray(opts.state) ? opts.state.join(",") : opts.state;
    if (opts.class) query["class"] = opts.class;
    if (opts.dueBefore !== undefined) query["due_before"] = opts.dueBefore instanceof Date ? opts.dueBefore.toISOString() : opts.dueBefore;
    if (opts.limit !== undefined) query["limit"] = String(opts.limit);
    if (opts.after) query["after"] = opts.after;
    return this.c.call("GET", "/v1/items", undefined, { query });
  }

  /** Every item matching opts, page after page. */
  async *iter(opts: Omit<ItemListOptions, "after" | "limit"> & { pageSize?: number } = {}): AsyncGenerator<Item> {
    const { pageSize = 1000, ...filters } = opts;
    let after: string | undefined;
    for (;;) {
      const page = await this.list(after ? { ...filters, limit: pageSize, after } : { ...filters, limit: pageSize });
      yield* page.items;
      if (!page.next) return;
      after = page.next;
    }
  }
}

/** Filters and paging of ItemsAPI.list. */
export interface ItemListOptions {
  state?: ItemState | ItemState[];
  class?: string;
  /** An RFC 3339 time or a Date: pending and scheduled items due before it. */
  dueBefore?: string | Date;
  limit?: number;
  after?: string;
}

export class BudgetAPI {
  constructor(private readonly c: Client) {}

  /**
   * May this request go now? Rejects with a BudgetRefused subclass if not.
   * wait waits for the source's next pacing slot instead of BudgetPaced;
   * an exhausted day is never waited for.
   */
  admit(kind: Kind, opts: { source?: string; cost?: number; wait?: boolean } = {}): Promise<Grant> {
    const body: S.BudgetAdmitRequest = { kind };
    if (opts.source) body.source = opts.source;
    if (opts.cost !== undefined) body.cost = opts.cost;
    if (opts.wait) body.wait = true;
    const call: CallOptions = { route: "budget" };
    if (opts.wait) call.timeout = this.c.timeout * 4;
    return this.c.call("POST", "/v1/budget/admit", body, call);
  }

  /** Settles a bytes reservation to what the transfer really used. */
  settle(grant: string | Grant, actual: number): Promise<GrantSettlement> {
    const id = typeof grant === "string" ? grant : (grant.id ?? "");
    const body: S.BudgetSettleRequest = { actual };
    return this.c.call("POST", `/v1/budget/grants/${seg(id)}/settle`, body, { route: "budget" });
  }

  /** Today's usage against the allowances (GET /v1/budget). */
  report(): Promise<BudgetReport> {
    return this.c.call("GET", "/v1/budget");
  }

  /** Adds or changes a source. */
  setSource(name: string, settings: SourceSettings): Promise<SourceConfig> {
    return this.c.call("PUT", `/v1/budget/sources/${seg(name)}`, settings);
  }

  async removeSource(name: string): Promise<void> {
    await this.c.call("DELETE", `/v1/budget/sources/${seg(name)}`);
  }

  /** Pauses (or resumes) every background admission on every node. */
  pause(paused = true): Promise<S.BudgetPauseResponse> {
    const body: S.BudgetPauseRequest = { paused };
    return this.c.call("POST", "/v1/budget/pause", body);
  }

  /**
   * Pauses (or resumes) the background admissions of one source on every
   * node; the other sources go on. An unknown source rejects with NotFound.
   */
  pauseSource(name: string, paused = true): Promise<S.BudgetPauseSourceResponse> {
    const body: S.BudgetPauseSourceRequest = { paused };
    return this.c.call("POST", `/v1/budget/sources/${seg(name)}/pause`, body);
  }
}
