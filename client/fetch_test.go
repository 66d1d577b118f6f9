package client_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/hostguard/hostguard/client"
	"github.com/hostguard/hostguard/guard"
	"github.com/hostguard/hostguard/server"
)

func TestFetchTellsTheDaemonsAnswersFromTheUpstreams(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			b, _ := io.ReadAll(r.Body)
			w.Write(append([]byte(r.Header.Get("X-Echo")+":"), b...))
			return
		}
		// An upstream's own refusal, with an error body of its own.
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"error":"busy","endpoint":"elsewhere"}`))
	}))
	defer up.Close()
	c := connect(t, func(cfg *server.Config) { cfg.AllowPrivate = true; cfg.Guard = guard.Config{Threshold: 1} })
	ctx := context.Background()

	resp, err := c.Fetch(ctx, up.URL+"/x?q=1", client.FetchParams{})
	if err != nil {
		t.Fatalf("Fetch of an upstream 503: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || string(b) != `{"error":"busy","endpoint":"elsewhere"}` {
		t.Fatalf("the upstream's answer: %d %s", resp.StatusCode, b)
	}
	resp, err = c.Fetch(ctx, up.URL, client.FetchParams{Method: http.MethodPost, Body: []byte("hello"), Header: http.Header{"X-Echo": {"e"}}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(b) != "e:hello" {
		t.Fatalf("POST: %d %s", resp.StatusCode, b)
	}

	dead := "http://" + closedPort(t) + "/"
	_, err = c.Fetch(ctx, dead, client.FetchParams{})
	e := wantCode(t, "Fetch of a closed port", err, http.StatusBadGateway, client.CodeUpstreamFailed, client.ErrUpstreamFailed)
	if e.Body.Class != "refused" || e.ProxyError == "" {
		t.Fatalf("refused: class %q, Proxy-Status error %q", e.Body.Class, e.ProxyError)
	}
	_, err = c.Fetch(ctx, dead, client.FetchParams{})
	e = wantCode(t, "Fetch of an open endpoint", err, http.StatusServiceUnavailable, client.CodeFastFail, client.ErrFastFail)
	if e.ProxyError != "destination_unavailable" || e.RetryAfter <= 0 {
		t.Fatalf("fast-fail: Proxy-Status error %q, retry after %v", e.ProxyError, e.RetryAfter)
	}
	if _, err := c.Fetch(ctx, up.URL, client.FetchParams{Method: http.MethodPut}); err == nil || errors.Is(err, client.ErrBadRequest) {
		t.Fatalf("Fetch with PUT: %v, want the client's own refusal", err)
	}
}

func TestFetchOfAPrivateAddress(t *testing.T) {
	c := connect(t, nil)
	_, err := c.Fetch(context.Background(), "http://127.0.0.1:1/", client.FetchParams{})
	e := wantCode(t, "Fetch of loopback without AllowPrivate", err, http.StatusForbidden, client.CodePolicyRefused, client.ErrPolicyRefused)
	if !errors.Is(err, client.ErrUpstreamFailed) || e.ProxyError != "destination_ip_prohibited" {
		t.Fatalf("policy refusal: Is upstream failed %v, Proxy-Status error %q", errors.Is(err, client.ErrUpstreamFailed), e.ProxyError)
	}
}
