package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/hostguard/hostguard/internal/strictjson"
)

// decodeJSON reads one JSON object from the request body into dst with
// strictjson's rules: unknown, case-variant and duplicate keys, null for
// the body, trailing data and text that is not valid UTF-8 are all
// refused, with the field to blame. A body over Config.MaxBodyBytes
// answers 413.
func (s *Server) decodeJSON(w http.ResponseWriter, r *http.Request, dst any) error {
	return s.decode(w, r, dst, false)
}

// decodeOptionalJSON is decodeJSON for routes whose body may be empty.
func (s *Server) decodeOptionalJSON(w http.ResponseWriter, r *http.Request, dst any) error {
	return s.decode(w, r, dst, true)
}

func (s *Server) decode(w http.ResponseWriter, r *http.Request, dst any, optional bool) error {
	limit := s.cfg.MaxBodyBytes
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		if mbe, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return &apiError{Status: http.StatusRequestEntityTooLarge,
				Message: fmt.Sprintf("server: request body is larger than %d bytes", mbe.Limit)}
		}
		return badRequest("", "the request body could not be read")
	}
	liftDeadlines(w)
	if optional && len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	return strictjson.Decode(body, dst)
}

// bodyError answers a body strictjson refused. The field is the path the
// client wrote, as items[3].id.
func bodyError(e *strictjson.Error) *apiError {
	switch {
	case e.Syntax:
		return badRequest("", "%s", e.Error())
	case e.Path == "":
		return badRequest("", "request body %s", e.Reason)
	}
	return badRequest(e.Path, "%s: %s", e.Path, e.Reason)
}

// liftDeadlines ends Config.BodyTimeout's hold on a request whose body is
// in: what follows may be a wait (a budget admission, a claim) or a
// stream (fetch), which the timeout must not cut. A client that trickles
// its body has already been bounded by then.
func liftDeadlines(w http.ResponseWriter) {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
}
