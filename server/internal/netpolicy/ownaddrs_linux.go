package netpolicy

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// The multicast groups of rtnetlink(7) for address changes, which the
// syscall package does not name.
const (
	rtmgrpIPv4IfAddr = 0x10
	rtmgrpIPv6IfAddr = 0x100
)

// watchAddrChanges subscribes to the kernel's IPv4 and IPv6 address
// events on a netlink route socket and calls changed after each batch. It
// never parses the messages: any of them means the list is stale. The
// socket is non-blocking and read through an *os.File, so the runtime's
// poller wakes the reader and closing the file ends it.
func watchAddrChanges(changed func()) (stop func(), err error) {
	fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_RAW|syscall.SOCK_CLOEXEC|syscall.SOCK_NONBLOCK, syscall.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("netlink socket: %w", err)
	}
	sa := &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK, Groups: rtmgrpIPv4IfAddr | rtmgrpIPv6IfAddr}
	if err := syscall.Bind(fd, sa); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("netlink bind: %w", err)
	}
	f := os.NewFile(uintptr(fd), "netlink-route")
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 16<<10)
		for {
			_, err := f.Read(buf)
			switch {
			case err == nil:
				changed()
			case errors.Is(err, syscall.ENOBUFS):
				// The socket overflowed: events were lost, so the
				// list is stale whatever they said.
				changed()
			default:
				return // closed by stop, or the socket is unusable
			}
		}
	}()
	return func() {
		f.Close()
		<-done
	}, nil
}
