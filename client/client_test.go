package client_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hostguard/hostguard/api"
	"github.com/hostguard/hostguard/client"
	"github.com/hostguard/hostguard/guard"
	"github.com/hostguard/hostguard/retry"
	"github.com/hostguard/hostguard/server"
)

// wantCode fails unless err is an *Error of the status and code, matched
// by errors.Is against sentinel.
func wantCode(t *testing.T, what string, err error, status int, code client.Code, sentinel error) *client.Error {
	t.Helper()
	var e *client.Error
	if !errors.As(err, &e) {
		t.Fatalf("%s: %v (%T), want a *client.Error", what, err, err)
	}
	if e.Status != status || e.Code != code || !errors.Is(err, sentinel) {
		t.Fatalf("%s: status %d, code %q, Is(%v) %v; want %d %q: %v", what, e.Status, e.Code, sentinel, errors.Is(err, sentinel), status, code, err)
	}
	return e
}

func TestItemsLifecycle(t *testing.T) {
	c := connect(t, nil)
	ctx := context.Background()

	add, err := c.Items.Add(ctx, api.NewItem{ID: "job/1", Priority: 2, Payload: []byte("hello"), Host: "files.example"}, api.NewItem{ID: "job-2"})
	if err != nil || add.Added != 2 || add.Existing != 0 {
		t.Fatalf("Add: %+v, %v", add, err)
	}
	leases, err := c.Items.Claim(ctx, client.ClaimParams{N: 1, Lease: time.Minute, Worker: "w1"})
	if err != nil || len(leases) != 1 || leases[0].ID != "job/1" || string(leases[0].Payload) != "hello" {
		t.Fatalf("Claim: %+v, %v", leases, err)
	}
	l := leases[0]
	if until, err := c.Items.Extend(ctx, l, 2*time.Minute); err != nil || time.Until(until) < time.Minute {
		t.Fatalf("Extend: %v, %v", until, err)
	}
	it, err := c.Items.Fail(ctx, l, client.FailParams{Class: "timeout", Note: "slow", Host: "Other.Example"})
	if err != nil || it.State != retry.Scheduled || it.LastClass != "timeout" || it.Host != "other.example" {
		t.Fatalf("Fail: %+v, %v", it, err)
	}
	// The spent lease is lost: a conflict, told apart by its code.
	_, err = c.Items.Succeed(ctx, l)
	e := wantCode(t, "Succeed with a spent lease", err, http.StatusConflict, client.CodeLeaseLost, client.ErrLeaseLost)
	if e.Field != "lease" || !errors.Is(err, client.ErrConflict) || errors.Is(err, client.ErrNotFound) {
		t.Fatalf("lost lease: field %q, Is conflict %v", e.Field, errors.Is(err, client.ErrConflict))
	}

	if moved, err := c.Items.DueNow(ctx, "job/1"); err != nil || !moved.Moved {
		t.Fatalf("DueNow: %+v, %v", moved, err)
	}
	leases, err = c.Items.Claim(ctx, client.ClaimParams{N: 10, Lease: time.Minute})
	if err != nil || len(leases) != 2 {
		t.Fatalf("second Claim: %+v, %v", leases, err)
	}
	res, err := c.Items.Settle(ctx,
		api.SettleOutcome{ID: leases[1].ID, Lease: leases[1].Token, Op: "succeed"},
		api.SettleOutcome{ID: l.ID, Lease: l.Token, Op: "succeed"})
	if err != nil || len(res) != 2 || !res[0].OK || res[1].OK || res[1].Error != api.SettleLeaseLost {
		t.Fatalf("Settle: %+v, %v", res, err)
	}
	if it, err := c.Items.Release(ctx, leases[0]); err != nil || it.State == retry.Leased || it.ID != "job/1" || it.Attempts != 1 {
		t.Fatalf("Release: %+v, %v", it, err)
	}

	obs, err := c.Items.Observe(ctx, "job-3", api.ObserveRequest{AddIfMissing: true, Priority: 5})
	if err != nil || !obs.Added {
		t.Fatalf("Observe: %+v, %v", obs, err)
	}
	many, err := c.Items.ObserveMany(ctx, api.ObserveBatchRequest{IDs: []string{"job-3", "nobody"}})
	if err != nil || len(many) != 2 || many[0].Unknown || !many[1].Unknown {
		t.Fatalf("ObserveMany: %+v, %v", many, err)
	}

	st, err := c.Items.Stats(ctx)
	if err != nil || st.Total != 3 || st.ByState["done"] != 1 || st.Due.Waiting != 2 {
		t.Fatalf("Stats: %+v, %v", st, err)
	}
	page, err := c.Items.List(ctx, client.ListParams{States: []string{"pending", "scheduled"}, Limit: 1})
	if err != nil || len(page.Items) != 1 || page.Items[0].ID != "job-3" || page.Next == "" {
		t.Fatalf("List: %+v, %v", page, err)
	}
	page, err = c.Items.List(ctx, client.ListParams{States: []string{"pending", "scheduled"}, Limit: 1, After: page.Next})
	if err != nil || len(page.Items) != 1 || page.Items[0].ID != "job/1" {
		t.Fatalf("List's second page: %+v, %v", page, err)
	}

	var ids []string
	for item, err := range c.Items.All(ctx, client.ListParams{Limit: 1}) {
		if err != nil {
			t.Fatalf("All: %v", err)
		}
		ids = append(ids, item.ID)
	}
	if strings.Join(ids, " ") != "job-2 job-3 job/1" {
		t.Fatalf("All, a page of one at a time: %q", ids)
	}
	for _, err := range c.Items.All(ctx, client.ListParams{Limit: -1}) {
		if !errors.Is(err, client.ErrBadRequest) {
			t.Fatalf("All with a bad limit: %v", err)
		}
	}

	if err := c.Items.Forget(ctx, "job/1"); err != nil {
		t.Fatalf("Forget: %v", err)
	}
	_, err = c.Items.Get(ctx, "job/1")
	wantCode(t, "Get of a forgotten item", err, http.StatusNotFound, client.CodeNotFound, client.ErrNotFound)
}

func TestBadInputNamesTheField(t *testing.T) {
	c := connect(t, nil)
	ctx := context.Background()
	_, err := c.Items.Claim(ctx, client.ClaimParams{N: 0, Lease: time.Minute})
	e := wantCode(t, "Claim of 0", err, http.StatusBadRequest, client.CodeBadRequest, client.ErrBadRequest)
	if e.Field != "n" || e.Message == "" {
		t.Fatalf("Claim of 0: field %q, message %q", e.Field, e.Message)
	}
	_, err = c.Items.Add(ctx)
	if e := wantCode(t, "Add of nothing", err, http.StatusBadRequest, client.CodeBadRequest, client.ErrBadRequest); e.Field != "items" {
		t.Fatalf("Add of nothing: field %q", e.Field)
	}
}

func TestGuardFastFail(t *testing.T) {
	c := connect(t, func(cfg *server.Config) { cfg.Guard = guard.Config{Threshold: 1} })
	ctx := context.Background()
	const u = "https://api.example.com/v2/items?page=3"

	tk, err := c.Guard.Acquire(ctx, u, false)
	if err != nil || tk.Endpoint != "https://api.example.com" || tk.Ticket == "" {
		t.Fatalf("Acquire: %+v, %v", tk, err)
	}
	if ext, err := c.Guard.Extend(ctx, tk.Ticket); err != nil || ext.Ticket != tk.Ticket {
		t.Fatalf("Extend: %+v, %v", ext, err)
	}
	rep, err := c.Guard.Report(ctx, tk.Ticket, api.OutcomeFailed, "refused")
	if err != nil || rep.State != "open" {
		t.Fatalf("Report: %+v, %v", rep, err)
	}
	_, err = c.Guard.Acquire(ctx, u, false)
	e := wantCode(t, "Acquire of an open endpoint", err, http.StatusServiceUnavailable, client.CodeFastFail, client.ErrFastFail)
	if e.Body.Endpoint != "https://api.example.com" || e.RetryAfter <= 0 {
		t.Fatalf("fast-fail: endpoint %q, retry after %v", e.Body.Endpoint, e.RetryAfter)
	}
	eps, err := c.Guard.Endpoints(ctx, "open")
	if err != nil || len(eps) != 1 || eps[0].Failures != 1 || eps[0].LastFailure != "refused" {
		t.Fatalf("Endpoints: %+v, %v", eps, err)
	}
	if err := c.Guard.Reset(ctx, u); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	if _, err := c.Guard.Acquire(ctx, u, false); err != nil {
		t.Fatalf("Acquire after Reset: %v", err)
	}
	if err := c.Guard.ResetAll(ctx); err != nil {
		t.Fatalf("ResetAll: %v", err)
	}
	_, err = c.Guard.Report(ctx, tk.Ticket, api.OutcomeAnswered, "")
	wantCode(t, "second Report", err, http.StatusNotFound, client.CodeNotFound, client.ErrNotFound)
}

func TestBudgetRefusals(t *testing.T) {
	c := connect(t, nil)
	ctx := context.Background()
	var err error
	for i := 0; i < 10 && err == nil; i++ {
		_, err = c.Budget.Admit(ctx, api.AdmitRequest{Source: "idx", Kind: "head_poll"})
	}
	e := wantCode(t, "Admit past the limit", err, http.StatusTooManyRequests, client.CodeBudgetExhausted, client.ErrBudgetExhausted)
	if !errors.Is(err, client.ErrBudgetRefused) || e.Body.ResetsAt == nil || e.RetryAfter <= 0 {
		t.Fatalf("exhausted: resets at %v, retry after %v", e.Body.ResetsAt, e.RetryAfter)
	}
	rep, err := c.Budget.Report(ctx)
	if err != nil || len(rep.Sources) != 1 || rep.Sources[0].Used != 3 {
		t.Fatalf("Report: %+v, %v", rep, err)
	}
	if p, err := c.Budget.Pause(ctx, true); err != nil || !p.Paused {
		t.Fatalf("Pause: %+v, %v", p, err)
	}
	_, err = c.Budget.Admit(ctx, api.AdmitRequest{Source: "idx", Kind: "head_poll"})
	wantCode(t, "Admit while paused", err, http.StatusServiceUnavailable, client.CodeBudgetPaused, client.ErrBudgetPaused)
	if _, err := c.Budget.Pause(ctx, false); err != nil {
		t.Fatal(err)
	}
	if p, err := c.Budget.PauseSource(ctx, "idx", true); err != nil || !p.Paused || p.Name != "idx" {
		t.Fatalf("PauseSource: %+v, %v", p, err)
	}
	src, err := c.Budget.SetSource(ctx, "new", api.SourceRequest{OwnerDailyLimit: int64p(5)})
	if err != nil || !src.Created || *src.OwnerDailyLimit != 5 {
		t.Fatalf("SetSource: %+v, %v", src, err)
	}
	if err := c.Budget.RemoveSource(ctx, "new"); err != nil {
		t.Fatalf("RemoveSource: %v", err)
	}
	_, err = c.Budget.ResetSource(ctx, "new")
	wantCode(t, "ResetSource of a removed source", err, http.StatusNotFound, client.CodeNotFound, client.ErrNotFound)
}

func int64p(n int64) *int64 { return &n }

func TestHostsAndEvidence(t *testing.T) {
	c := connect(t, nil)
	ctx := context.Background()
	// A failure counts once the tracker has seen some host answer.
	if _, err := c.Hosts.Touch(ctx, "other.example", true); err != nil {
		t.Fatal(err)
	}
	if res, err := c.Hosts.Touch(ctx, "Files.Example", false); err != nil || res.Healthy || !res.Counted {
		t.Fatalf("Touch: %+v, %v", res, err)
	}
	if h, err := c.Hosts.Get(ctx, "files.example"); err != nil || h.ConsecutiveFails != 1 {
		t.Fatalf("Get: %+v, %v", h, err)
	}
	if page, err := c.Hosts.List(ctx, "unhealthy", 10, ""); err != nil || len(page.Hosts) != 1 {
		t.Fatalf("List: %+v, %v", page, err)
	}
	n := 0
	for h, err := range c.Hosts.All(ctx, "") {
		if err != nil || h.Name == "" {
			t.Fatalf("All: %+v, %v", h, err)
		}
		n++
	}
	if n != 2 {
		t.Fatalf("All hosts: %d, want 2", n)
	}
	if r, err := c.Hosts.Reset(ctx, "files.example"); err != nil || !r.Reset {
		t.Fatalf("Reset: %+v, %v", r, err)
	}
	_, err := c.Hosts.Get(ctx, "files.example")
	wantCode(t, "Get of a reset host", err, http.StatusNotFound, client.CodeNotFound, client.ErrNotFound)

	rec, err := c.Evidence.Record(ctx, api.EvidenceRequest{Source: "dht", Subject: "abc", Verdict: "available"})
	if err != nil || rec.Verdict != "available" || rec.CheckedAt == nil {
		t.Fatalf("Record: %+v, %v", rec, err)
	}
	sum, err := c.Evidence.Get(ctx, "abc")
	if err != nil || sum.Positive != 1 || len(sum.Sources) != 1 {
		t.Fatalf("Get: %+v, %v", sum, err)
	}
	if pol, err := c.Evidence.SwitchPolicy(ctx, "v2"); err != nil || pol.Deleted != 1 {
		t.Fatalf("SwitchPolicy: %+v, %v", pol, err)
	}
	_, err = c.Evidence.Record(ctx, api.EvidenceRequest{Source: "dht", Subject: "abc", Verdict: "maybe"})
	if e := wantCode(t, "Record of a bad verdict", err, http.StatusBadRequest, client.CodeBadRequest, client.ErrBadRequest); e.Field != "verdict" {
		t.Fatalf("bad verdict: field %q", e.Field)
	}
}

func TestFeeds(t *testing.T) {
	c := connect(t, nil)
	ctx := context.Background()
	list, err := c.Feeds.List(ctx)
	if err != nil || len(list.Feeds) != 0 || !list.Leading {
		t.Fatalf("List: %+v, %v", list, err)
	}
	_, err = c.Feeds.Reset(ctx, "nothing")
	wantCode(t, "Reset of an unknown feed", err, http.StatusNotFound, client.CodeNotFound, client.ErrNotFound)
	_, err = c.Feeds.Items(ctx, "nothing", 5)
	wantCode(t, "Items of an unknown feed", err, http.StatusNotFound, client.CodeNotFound, client.ErrNotFound)
}

func TestTokenAndConfiguration(t *testing.T) {
	addr := daemon(t, func(cfg *server.Config) { cfg.Retry = nil })
	ctx := context.Background()
	wrong, err := client.New(client.Config{Addr: strings.TrimPrefix(addr, "http://"), Token: "wrong"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = wrong.Guard.Endpoints(ctx, "")
	wantCode(t, "a wrong token", err, http.StatusUnauthorized, client.CodeUnauthorized, client.ErrUnauthorized)
	if err := wrong.Healthz(ctx); err != nil {
		t.Fatalf("Healthz needs no token: %v", err)
	}
	c, err := client.New(client.Config{Addr: addr + "/", Token: token})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Items.Get(ctx, "x")
	wantCode(t, "items without a scheduler", err, http.StatusNotImplemented, client.CodeNotConfigured, client.ErrNotConfigured)
	st, err := c.Status(ctx)
	if err != nil || st.Items != nil || st.Hosts == nil || st.Version == "" && st.StartedAt.IsZero() {
		t.Fatalf("Status without a scheduler: %+v, %v", st, err)
	}
	if l, err := c.Leader(ctx); err != nil || !l.Leading {
		t.Fatalf("Leader: %+v, %v", l, err)
	}
	raw, err := c.Do(ctx, http.MethodGet, "/v1/guard", nil, nil)
	if err != nil || !strings.Contains(string(raw), `"endpoints"`) {
		t.Fatalf("Do: %s, %v", raw, err)
	}
}

func TestUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c, err := client.New(client.Config{Addr: addr})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Items.Get(context.Background(), "x")
	e := wantCode(t, "a closed port", err, 0, client.CodeUnreachable, client.ErrUnreachable)
	if errors.Unwrap(e) == nil || errors.Is(err, client.ErrNotFound) {
		t.Fatalf("unreachable: %v", err)
	}
}

func TestNewRefusesBadAddresses(t *testing.T) {
	for _, addr := range []string{"ftp://h:1", "http://user:pw@h:1", "http://h:1/?q=1", "http://"} {
		if _, err := client.New(client.Config{Addr: addr}); err == nil {
			t.Errorf("New(%q): no error", addr)
		} else if strings.Contains(err.Error(), "pw") {
			t.Errorf("New(%q): the error repeats the password: %v", addr, err)
		}
	}
}
