package newznab_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/hostguard/hostguard/feed/newznab"
	"github.com/hostguard/hostguard/internal/fakeindexer"
)

func Example() {
	// A local stand-in for an indexer such as https://indexer.example/api.
	x := fakeindexer.New(fakeindexer.Options{APIKey: "my-key", MaxLimit: 50})
	defer x.Close()
	x.Publish(120, time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c, err := newznab.New(newznab.Config{
		URL:        x.URL(),
		APIKey:     "my-key",
		HTTPClient: &http.Client{Transport: tr}, // nil: hostguard's guarded transport
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	caps, _ := c.Caps(ctx)
	fmt.Println("page size limit:", caps.MaxLimit)

	items, _ := c.Page(ctx, 0) // the newest releases, as a feed.Source
	fmt.Println(len(items), "items; newest:", items[0].ID, items[0].Size, items[0].Attrs["category"])

	x.Fail(fakeindexer.Fault{Offset: -1, Code: 500, Description: "Request limit reached"})
	_, err = c.Page(ctx, 50)
	fmt.Println(errors.Is(err, newznab.ErrAPILimit))
	// Output:
	// page size limit: 50
	// 50 items; newest: rel000120 1073741944 5000,5040
	// true
}
