// The daemon's JSON bodies, as the OpenAPI document describes them
// (src/schema.ts is generated from it). Field names are the wire's
// (snake_case), so a body prints and logs as the daemon sent it.
import type * as S from "./schema.js";

export type { S as Schema };

export type Outcome = S.GuardReportRequest["outcome"];
export type FailureClass = S.FailureClass;
export type GuardState = S.GuardState;
export type Ticket = S.Ticket;
export type ReportResult = S.GuardReportResponse;
export type Endpoint = S.Endpoint;
export type Host = S.Host;
export type TouchResult = S.HostTouchResponse;
export type HostPage = S.HostListResponse;
export type HostView = S.HostView;
/** One item to add; payload may be bytes, or text sent as its UTF-8 bytes. */
export type NewItem = Omit<S.NewItem, "payload"> & { payload?: Uint8Array | string };
export type AddResult = S.ItemsAddResponse;
export type Lease = S.Lease;
export type Item = S.Item;
export type ItemPage = S.ItemsListResponse;
export type ItemState = S.ItemState;
export type Extension = S.ItemExtendResponse;
export type ObserveResult = S.ObserveResult;
export type SettleOutcome = S.ItemsSettleRequest["outcomes"][number];
export type SettleResult = S.ItemsSettleResponse["results"][number];
export type QueueStats = S.QueueStats;
export type Kind = S.BudgetKind;
export type Grant = S.Grant;
export type GrantSettlement = S.BudgetSettleResponse;
export type BudgetReport = S.BudgetReport;
export type SourceSettings = S.BudgetSetSourceRequest;
export type SourceConfig = S.SourceConfig;
export type StatusReport = S.StatusReport;

/** The answer of POST /v1/guard/tickets/{id}/extend, on daemons that have it. */
export interface TicketExtension {
  ticket?: string;
  expires_at?: string;
  lease_seconds?: number;
}
