package breakers_test

import (
	"errors"
	"fmt"

	"github.com/hostguard/hostguard/bench/breakers"
	"github.com/sony/gobreaker/v2"
)

func ExampleGobreaker() {
	hosts := breakers.NewGobreaker(gobreaker.Settings{})
	for range 6 {
		done, _ := hosts.Allow("http://dead.example")
		done(errors.New("connection refused"))
	}
	_, err := hosts.Allow("http://dead.example")
	fmt.Println("dead:", err)
	_, err = hosts.Allow("http://alive.example")
	fmt.Println("alive:", err)
	// Output:
	// dead: circuit breaker is open
	// alive: <nil>
}
