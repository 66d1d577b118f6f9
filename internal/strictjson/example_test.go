package strictjson_test

import (
	"errors"
	"fmt"

	"github.com/hostguard/hostguard/internal/strictjson"
)

func ExampleDecode() {
	var req struct {
		Items []struct {
			ID string `json:"id"`
		} `json:"items"`
	}
	err := strictjson.Decode([]byte(`{"items":[{"id":"a"},{"ID":"b"}]}`), &req)
	var e *strictjson.Error
	if errors.As(err, &e) {
		fmt.Println(e.Path)
		fmt.Println(e.Reason)
	}
	// Output:
	// items[1].ID
	// unknown field; did you mean "id"?
}
