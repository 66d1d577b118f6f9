package transport_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"

	"github.com/hostguard/hostguard/budget"
	"github.com/hostguard/hostguard/internal/faulthost"
	"github.com/hostguard/hostguard/store/sqlite"
	"github.com/hostguard/hostguard/transport"
)

// A transport with a budget admits the requests whose context carries an
// admission before any network work, and settles a bytes reservation to
// what the body really held. This is the README's admission example.
func ExampleWithAdmission() {
	dir, _ := os.MkdirTemp("", "transport-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "hostguard.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	b, err := budget.New(st, budget.Config{
		Sources: []budget.Source{{Name: "indexer-a", OwnerDailyLimit: budget.Int(500), Pace: budget.NoPace}},
		Limits:  budget.Limits{Descriptor: budget.Int(1)}, // one descriptor grab a day
	})
	if err != nil {
		log.Fatal(err)
	}
	indexer := faulthost.Status(http.StatusOK)
	defer indexer.Close()

	client := &http.Client{Transport: transport.New(transport.Config{Budget: b, Logger: slog.New(slog.DiscardHandler)})}
	actx := transport.WithAdmission(ctx, budget.AdmitParams{Source: "indexer-a", Kind: budget.KindBytes, Cost: 64 << 20})
	req, _ := http.NewRequestWithContext(actx, http.MethodGet, indexer.URL()+"/getnzb/42", nil)
	resp, err := client.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close() // settles the 64 MiB reservation to the n bytes read

	r, _ := b.Report(ctx)
	for _, l := range r.Kinds {
		if l.Kind == budget.KindBytes {
			fmt.Println("bytes charged equal the body read:", l.Used == n)
		}
	}

	// Once the day's allowance is used up, a request is refused with no
	// network work: the indexer sees the first grab only.
	for i := range 2 {
		dctx := transport.WithAdmission(ctx, budget.AdmitParams{Kind: budget.KindDescriptor})
		req, _ = http.NewRequestWithContext(dctx, http.MethodGet, fmt.Sprintf("%s/getnzb/%d", indexer.URL(), 43+i), nil)
		resp, err = client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
	}
	fmt.Printf("refused: %v; the indexer saw %d requests\n", errors.Is(err, budget.ErrExhausted), indexer.Requests())
	// Output:
	// bytes charged equal the body read: true
	// refused: true; the indexer saw 2 requests
}
