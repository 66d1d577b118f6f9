// Typed errors built from the daemon's answers: the status, the route, the
// JSON error object's fields and the RFC 9209 Proxy-Status header, never
// the message text, which is for people.

/** The decoded JSON error object: `{"error": ..., "field": ...}` and more. */
export interface ErrorBody {
  error?: string;
  field?: string;
  endpoint?: string;
  class?: string;
  retry_after_seconds?: number;
  fast_fail?: boolean;
  reason?: string;
  resets_at?: string;
  [key: string]: unknown;
}

export interface ErrorInit {
  status: number;
  field?: string | undefined;
  body?: ErrorBody;
  headers?: Headers;
  cause?: unknown;
}

/** An answer of the daemon that is not a success (status 0: no answer). */
export class HostguardError extends Error {
  readonly status: number;
  /** The input to blame, as the daemon's JSON spells it (`n`, `items[3].id`). */
  readonly field: string | undefined;
  readonly body: ErrorBody;
  readonly headers: Headers;

  constructor(message: string, init: ErrorInit) {
    super(message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = new.target.name;
    this.status = init.status;
    this.field = init.field;
    this.body = init.body ?? {};
    this.headers = init.headers ?? new Headers();
  }
}

/** The daemon could not be reached, or its answer was cut short. */
export class DaemonUnreachable extends HostguardError {}
/** 400: the daemon refused an input; `field` names it when it can. */
export class BadRequest extends HostguardError {}
/** 413: the JSON body is over the daemon's limit. */
export class RequestTooLarge extends BadRequest {}
/** 401 (407 from the proxy): a missing or wrong token. */
export class Unauthorized extends HostguardError {}
/** 404: an unknown ticket, item, host, grant, source, feed or route. */
export class NotFound extends HostguardError {}
/** 409: the request conflicts with what is stored. */
export class Conflict extends HostguardError {}
/** 409 on a lease: another worker owns the item now; drop the work. */
export class LeaseLost extends Conflict {}
/** 501: the daemon runs without the capability this route needs. */
export class NotConfigured extends HostguardError {}

/** The endpoint is open: refused without any network work. */
export class FastFail extends HostguardError {
  /** The origin the guard keys, `https://host:port`. */
  readonly endpoint: string;
  /** Seconds until a trial request may go, when the daemon said. */
  readonly retryAfter: number | undefined;
  constructor(message: string, init: ErrorInit & { endpoint: string; retryAfter: number | undefined }) {
    super(message, init);
    this.endpoint = init.endpoint;
    this.retryAfter = init.retryAfter;
  }
}

/** 429 from acquire: the daemon holds as many remote tickets as it allows. */
export class TooManyTickets extends HostguardError {
  readonly retryAfter: number | undefined;
  constructor(message: string, init: ErrorInit & { retryAfter: number | undefined }) {
    super(message, init);
    this.retryAfter = init.retryAfter;
  }
}

/** The budget refused an admission; nothing was charged. */
export class BudgetRefused extends HostguardError {
  readonly retryAfter: number | undefined;
  constructor(message: string, init: ErrorInit & { retryAfter: number | undefined }) {
    super(message, init);
    this.retryAfter = init.retryAfter;
  }
}

/** 429: today's allowance is used up until `resetsAt` (the next UTC midnight). */
export class BudgetExhausted extends BudgetRefused {
  readonly resetsAt: Date;
  constructor(message: string, init: ErrorInit & { retryAfter: number | undefined; resetsAt: Date }) {
    super(message, init);
    this.resetsAt = init.resetsAt;
  }
}
/** 429: the source was asked too recently; `retryAfter` is the wait. */
export class BudgetPaced extends BudgetRefused {}
/** 503: the owner paused all background work. */
export class BudgetPaused extends BudgetRefused {}
/** 403: the allowance for this kind of work is zero. */
export class BudgetDisabled extends BudgetRefused {}

/** No upstream answer through fetch: 502, 504 or a refused address. */
export class UpstreamFailed extends HostguardError {
  /** The failure class: `timeout`, `refused`, `dns_not_found`, ... */
  readonly errorClass: string | undefined;
  /** The RFC 9209 error type, when the daemon sent Proxy-Status. */
  readonly proxyError: string | undefined;
  constructor(message: string, init: ErrorInit & { errorClass: string | undefined; proxyError: string | undefined }) {
    super(message, init);
    this.errorClass = init.errorClass;
    this.proxyError = init.proxyError;
  }
}
/** 403: the destination policy refused the address. */
export class PolicyRefused extends UpstreamFailed {}

function splitOutsideQuotes(s: string, sep: string): string[] {
  const out: string[] = [];
  let cur = "";
  let quoted = false;
  let escaped = false;
  for (const ch of s) {
    if (escaped) {
      cur += ch;
      escaped = false;
    } else if (ch === "\\" && quoted) {
      cur += ch;
      escaped = true;
    } else if (ch === '"') {
      cur += ch;
      quoted = !quoted;
    } else if (ch === sep && !quoted) {
      out.push(cur);
      cur = "";
    } else {
      cur += ch;
    }
  }
  out.push(cur);
  return out.filter((p) => p.trim() !== "");
}

function unquote(s: string): string {
  if (s.length >= 2 && s.startsWith('"') && s.endsWith('"')) {
    return s.slice(1, -1).replace(/\\"/g, '"').replace(/\\\\/g, "\\");
  }
  return s;
}

/**
 * The parameters of `proxy`'s member of a Proxy-Status value, e.g.
 * `{error: "destination_unavailable"}`; undefined when the header names no
 * such proxy (an upstream's own answer passes through without it).
 */
export function parseProxyStatus(value: string | null | undefined, proxy = "hostguard"): Record<string, string> | undefined {
  if (!value) return undefined;
  for (const member of splitOutsideQuotes(value, ",")) {
    const parts = splitOutsideQuotes(member, ";");
    if (parts.length === 0 || unquote(parts[0]!.trim()) !== proxy) continue;
    const params: Record<string, string> = {};
    for (const p of parts.slice(1)) {
      const t = p.trim();
      const eq = t.indexOf("=");
      if (eq < 0) params[t.toLowerCase()] = "?1";
      else params[t.slice(0, eq).trim().toLowerCase()] = unquote(t.slice(eq + 1).trim());
    }
    return params;
  }
  return undefined;
}

function retryAfter(body: ErrorBody, headers: Headers): number | undefined {
  if (typeof body.retry_after_seconds === "number") return body.retry_after_seconds;
  const h = headers.get("retry-after")?.trim();
  if (!h) return undefined;
  if (/^\d+$/.test(h)) return Number(h);
  const when = Date.parse(h);
  return Number.isNaN(when) ? undefined : Math.max(0, (when - Date.now()) / 1000);
}

function nextUTCMidnight(now: Date): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1));
}

/** Which kind of call an answer belongs to: some statuses differ by route. */
export type Route = "" | "acquire" | "budget" | "item" | "fetch";

/** Builds the typed error for one non-success answer of the daemon. */
export function errorFromResponse(status: number, headers: Headers, text: string, route: Route = ""): HostguardError {
  let body: ErrorBody = {};
  try {
    const v: unknown = text ? JSON.parse(text) : {};
    if (v && typeof v === "object" && !Array.isArray(v)) body = v as ErrorBody;
  } catch {
    // Not JSON: keep the status and headers.
  }
  const message = typeof body.error === "string" && body.error ? body.error : `hostguard: HTTP status ${status}`;
  const field = typeof body.field === "string" ? body.field : undefined;
  const init: ErrorInit = { status, field, body, headers };
  const wait = retryAfter(body, headers);
  const psError = parseProxyStatus(headers.get("proxy-status"))?.["error"];

  if (body.fast_fail === true || psError === "destination_unavailable" || (status === 503 && typeof body.endpoint === "string")) {
    return new FastFail(message, { ...init, endpoint: String(body.endpoint ?? ""), retryAfter: wait });
  }
  if (route === "budget" && (status === 403 || status === 429 || status === 503)) {
    if (status === 503) return new BudgetPaused(message, { ...init, retryAfter: wait });
    if (status === 403) return new BudgetDisabled(message, { ...init, retryAfter: wait });
    // Exhausted and paced are both 429; the body's reason says which, and
    // resets_at when an exhausted one comes back. Without a reason nothing
    // is guessed from Retry-After: the refusal is treated as paced, and
    // honouring Retry-After is right either way.
    if (body.reason === "exhausted") {
      const resetsAt =
        typeof body.resets_at === "string" && !Number.isNaN(Date.parse(body.resets_at))
          ? new Date(body.resets_at)
          : nextUTCMidnight(new Date());
      return new BudgetExhausted(message, { ...init, retryAfter: wait, resetsAt });
    }
    return new BudgetPaced(message, { ...init, retryAfter: wait });
  }
  switch (status) {
    case 401:
    case 407:
      return new Unauthorized(message, init);
    case 413:
      return new RequestTooLarge(message, init);
    case 400:
      return new BadRequest(message, init);
    case 404:
      return new NotFound(message, init);
    case 409:
      return field === "lease" ? new LeaseLost(message, init) : new Conflict(message, init);
    case 501:
      return new NotConfigured(message, init);
  }
  if (status === 429 && route === "acquire") return new TooManyTickets(message, { ...init, retryAfter: wait });
  const cls = typeof body.class === "string" ? body.class : undefined;
  if (status === 403 && (cls === "policy" || psError === "destination_ip_prohibited")) {
    return new PolicyRefused(message, { ...init, errorClass: cls, proxyError: psError });
  }
  if (status === 502 || status === 504 || (psError !== undefined && status >= 400)) {
    return new UpstreamFailed(message, { ...init, errorClass: cls, proxyError: psError });
  }
  return new HostguardError(message, init);
}
