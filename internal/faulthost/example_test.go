package faulthost_test

import (
	"fmt"
	"net/http"

	"github.com/hostguard/hostguard/internal/faulthost"
)

func Example() {
	h := faulthost.Status(http.StatusBadGateway)
	defer h.Close()

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get(h.URL())
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, h.Requests())
	// Output: 502 1
}
