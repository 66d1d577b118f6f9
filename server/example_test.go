package server_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"

	"github.com/hostguard/hostguard/server"
)

// Example serves the API on a loopback port, acquires a guard ticket as a
// remote client would, reports that the host answered, and shuts down.
func Example() {
	srv, err := server.New(server.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln, nil) }()
	api := "http://" + ln.Addr().String()

	post := func(path, body string) string {
		resp, err := http.Post(api+path, "application/json", strings.NewReader(body))
		if err != nil {
			panic(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(b)))
	}
	acq := post("/v1/guard/acquire", `{"url":"https://api.example.com/v2/items?page=3"}`)
	ticket := acq[strings.Index(acq, `"ticket":"`)+10:][:32]
	fmt.Println(post("/v1/guard/report", `{"ticket":"`+ticket+`","outcome":"answered"}`))
	fmt.Println(post("/v1/guard/report", `{"ticket":"`+ticket+`","outcome":"answered"}`))

	stop()
	fmt.Println("serve:", <-done)
	// Output:
	// 200 {"endpoint":"https://api.example.com","state":"closed"}
	// 404 {"error":"server: unknown ticket: never issued, already reported, or its lease ended","field":"ticket"}
	// serve: <nil>
}
