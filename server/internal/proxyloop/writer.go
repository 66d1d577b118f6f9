package proxyloop

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// writer is the http.ResponseWriter of a request on the loop, over its
// connection's buffered writer. Like http.Server's, it sends a body of
// unknown length whole with a Content-Length when the handler finishes
// before it is flushed or outgrows a small buffer, chunked otherwise; it
// adds Date, sniffs a missing Content-Type, and keeps a HEAD answer's
// body and one that is not allowed off the wire.
type writer struct {
	pc     *conn
	req    *http.Request
	header http.Header
	watch  *clientWatch

	code       int
	sentHead   bool
	chunked    bool
	noBody     bool
	length     int64 // declared Content-Length; -1 if none
	written    int64
	pending    []byte // body held back while its length may yet be known
	closeAfter bool
	failed     error
}

// maxHeldBody is how much of a body of unknown length is held back to
// send it with a Content-Length.
const maxHeldBody = 2 << 10

var errWriteTooLong = errors.New("server: write beyond the declared Content-Length")

func (w *writer) Header() http.Header { return w.header }

func (w *writer) WriteHeader(code int) {
	if w.code != 0 || w.sentHead {
		return
	}
	if code < 200 {
		// The proxy sends no interim answers of its own.
		return
	}
	w.code = code
	w.length = -1
	if cl := w.header.Get("Content-Length"); cl != "" {
		if n, err := strconv.ParseInt(cl, 10, 64); err == nil && n >= 0 {
			w.length = n
		} else {
			w.header.Del("Content-Length")
		}
	}
	w.noBody = w.req.Method == http.MethodHead || code == http.StatusNoContent || code == http.StatusNotModified
}

func (w *writer) Write(p []byte) (int, error) {
	if w.code == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.failed != nil {
		return 0, w.failed
	}
	if w.noBody {
		if w.req.Method == http.MethodHead {
			return len(p), nil
		}
		return 0, http.ErrBodyNotAllowed
	}
	if w.length >= 0 && w.written+int64(len(p)) > w.length {
		return 0, errWriteTooLong
	}
	w.written += int64(len(p))
	if !w.sentHead && w.length < 0 && len(w.pending)+len(p) <= maxHeldBody {
		w.pending = append(w.pending, p...)
		return len(p), nil
	}
	if !w.sentHead {
		w.sendHead(false, p)
	}
	return w.body(p)
}

func (w *writer) body(p []byte) (int, error) {
	bw := w.pc.bw
	if w.chunked {
		if len(p) == 0 {
			return 0, nil
		}
		bw.WriteString(strconv.FormatInt(int64(len(p)), 16))
		bw.WriteString("\r\n")
	}
	n, err := bw.Write(p)
	if w.chunked {
		_, err = bw.WriteString("\r\n")
	}
	if err != nil {
		w.failed = err
	}
	return n, err
}

// sendHead writes the status line and headers: with the held body's
// length when final, chunked when the body is still to come and its
// length unknown.
func (w *writer) sendHead(final bool, first []byte) {
	w.watch.stop()
	w.sentHead = true
	h := w.header
	if w.pc.ps.isShutting() || w.req.Close {
		h.Set("Connection", "close")
	}
	if h.Get("Connection") == "close" {
		w.closeAfter = true
	}
	if !w.noBody && w.length < 0 {
		if final {
			h["Content-Length"] = []string{strconv.Itoa(len(w.pending))}
			w.length = int64(len(w.pending))
		} else {
			h["Transfer-Encoding"] = []string{"chunked"}
			w.chunked = true
		}
	}
	if _, ok := h["Content-Type"]; !ok && !w.noBody && w.code != http.StatusNoContent {
		sniff := w.pending
		if len(sniff) == 0 {
			sniff = first
		}
		if len(sniff) > 0 {
			h["Content-Type"] = []string{http.DetectContentType(sniff)}
		}
	}
	bw := w.pc.bw
	bw.WriteString("HTTP/1.1 ")
	bw.WriteString(strconv.Itoa(w.code))
	bw.WriteByte(' ')
	bw.WriteString(http.StatusText(w.code))
	bw.WriteString("\r\n")
	if _, ok := h["Date"]; !ok {
		var b [len(http.TimeFormat)]byte
		bw.WriteString("Date: ")
		bw.Write(time.Now().UTC().AppendFormat(b[:0], http.TimeFormat))
		bw.WriteString("\r\n")
	}
	for k, vv := range h {
		if !isToken(k) {
			continue
		}
		for _, v := range vv {
			if !isFieldValue(v) {
				continue
			}
			bw.WriteString(k)
			bw.WriteString(": ")
			bw.WriteString(v)
			bw.WriteString("\r\n")
		}
	}
	bw.WriteString("\r\n")
	if len(w.pending) > 0 {
		p := w.pending
		w.pending = nil
		w.body(p)
	}
}

// FlushError sends what is written so far; http.ResponseController finds
// it.
func (w *writer) FlushError() error {
	if w.code == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if !w.sentHead {
		w.sendHead(false, nil)
	}
	if w.failed != nil {
		return w.failed
	}
	if err := w.pc.bw.Flush(); err != nil {
		w.failed = err
	}
	return w.failed
}

func (w *writer) Flush() { _ = w.FlushError() }

// finish ends the answer after the handler returned. An answer for a
// client that left is not written.
func (w *writer) finish() error {
	if w.watch.gone {
		return errors.New("server: the client left")
	}
	if w.code == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if !w.sentHead {
		w.sendHead(true, nil)
	}
	if w.failed != nil {
		return w.failed
	}
	if w.chunked {
		w.pc.bw.WriteString("0\r\n\r\n")
	}
	if err := w.pc.bw.Flush(); err != nil {
		return err
	}
	if !w.noBody && w.length >= 0 && w.written < w.length {
		// The body is shorter than it said: the next answer would be
		// read as its end.
		return errors.New("server: the answer was shorter than its Content-Length")
	}
	return nil
}

// isToken reports whether s may be a header's name (RFC 9110's token).
func isToken(s string) bool {
	for i := range len(s) {
		if !tokenByte[s[i]] {
			return false
		}
	}
	return s != ""
}

// isFieldValue reports whether s may be written as a header's value
// without ending the line or the head: what the upstream pool writes too.
func isFieldValue(s string) bool { return !strings.ContainsAny(s, "\r\n\x00") }
