// Package logtest collects log output for tests.
package logtest

import (
	"bytes"
	"sync"
)

// A Buffer collects what loggers write, from any number of goroutines,
// for the test to read while they still write. The zero Buffer is empty
// and ready for use; a Buffer must not be copied after first use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p; it never fails.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
