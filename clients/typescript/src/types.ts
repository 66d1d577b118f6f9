// The daemon's JSON bodies. Field names are the wire's (snake_case), so a
// body prints and logs as the daemon sent it.

export type Outcome = "answered" | "failed" | "inconclusive";

export interface Ticket {
  ticket: string;
  endpoint: string;
  trial: boolean;
  exempt: boolean;
  expires_at: string;
  lease_seconds: number;
}

export interface ReportResult {
  endpoint: string;
  state: string;
}

export interface TicketExtension {
  ticket?: string;
  expires_at?: string;
  lease_seconds?: number;
}

export interface Endpoint {
  endpoint: string;
  state: string;
  failures: number;
  retry_after_seconds: number;
  open_until?: string;
  tickets_out: number;
  trial_out: boolean;
  last_failure?: string;
  last_failure_at?: string;
}

export interface Host {
  name: string;
  display: string;
  consecutive_fails: number;
  backoff_until?: string;
  last_failure?: string;
  last_success?: string;
  successes: number;
  failures: number;
  ignored_failures: number;
  known: boolean;
  healthy: boolean;
  available: boolean;
  retry_in_seconds: number;
}

export interface TouchResult extends Host {
  counted: boolean;
}

export interface HostPage {
  hosts: Host[];
  next?: string;
}

export interface NewItem {
  id: string;
  priority?: number;
  /** Bytes, or text sent as its UTF-8 bytes; the client base64-encodes it. */
  payload?: Uint8Array | string;
  not_before?: string;
}

export interface AddResult {
  added: number;
  existing: number;
}

export interface Lease {
  id: string;
  lease: string;
  until: string;
  attempt: number;
  failures: number;
  priority: number;
  /** Standard base64; decodePayload gives the bytes. */
  payload?: string;
  last_class?: string;
}

export interface HistoryEntry {
  at: string;
  class: string;
  note?: string;
  source?: string;
}

export interface Item {
  id: string;
  priority: number;
  state: string;
  next_at?: string;
  attempts: number;
  failures: number;
  expiries: number;
  last_class?: string;
  history?: HistoryEntry[];
  observations: number;
  last_seen?: string;
  created_at: string;
  updated_at: string;
  payload?: string;
}

export interface Extension {
  id: string;
  until: string;
}

export interface ObserveResult {
  id?: string;
  unknown?: boolean;
  added: boolean;
  state: string;
  priority: number;
  next_at?: string;
}

export interface SettleOutcome {
  id: string;
  lease: string;
  op: "succeed" | "fail" | "release";
  class?: string;
  note?: string;
}

export interface SettleResult {
  id: string;
  ok: boolean;
  error?: "lease_lost" | "not_found";
}

export interface QueueStats {
  total: number;
  by_state: Record<string, number>;
  by_class?: Record<string, number>;
  due_now: number;
  oldest_due_lag_seconds: number;
}

export interface Grant {
  id?: string;
  source?: string;
  kind: string;
  cost: number;
  day: string;
  at: string;
}

export interface GrantSettlement {
  id: string;
  actual: number;
}
