//go:build !linux

package netpolicy

import "errors"

// watchAddrChanges has no implementation outside Linux: the address list
// is re-read on use every ownAddrRefresh.
func watchAddrChanges(func()) (stop func(), err error) {
	return nil, errors.New("not supported on this system")
}
