package upstream

import (
	"errors"
	"net"
	"syscall"
)

// connAlive reports whether an idle connection is still open, without
// waiting: a peek that would block says so; end of stream, an error or
// bytes nobody asked for say it is not.
func connAlive(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	var b [1]byte
	var perr error
	err = rc.Read(func(fd uintptr) bool {
		_, _, perr = syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		if perr == nil {
			// End of stream or unasked-for bytes.
			perr = errors.New("not idle")
		}
		return true
	})
	return err == nil && (errors.Is(perr, syscall.EAGAIN) || errors.Is(perr, syscall.EWOULDBLOCK))
}
