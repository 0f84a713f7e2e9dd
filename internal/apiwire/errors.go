package apiwire

import (
	"errors"
	"fmt"
)

// Errors callers test for with errors.Is. A handler returns them (wrapped,
// with the identifying value) and the client gets them back through
// Reply.Code.
var (
	// ErrNotFound: the thing asked for does not exist.
	ErrNotFound = errors.New("api: not found")
	// ErrAmbiguous: an id prefix matches more than one thing.
	ErrAmbiguous = errors.New("api: ambiguous id prefix")
	// ErrBadRequest: the request could not be decoded or is invalid.
	ErrBadRequest = errors.New("api: bad request")
	// ErrTooLarge: the answer (or the request) does not fit in the NATS
	// connection's max payload.
	ErrTooLarge = errors.New("api: too large for one message")
	// ErrBusy: the node's long-poll budget is full; ask again shortly.
	ErrBusy = errors.New("api: node busy")
	// ErrNoNode: no node answers the method (NATS "no responders").
	ErrNoNode = errors.New("api: no node answers")
	// ErrTimeout: a node took the request but did not answer in time.
	ErrTimeout = errors.New("api: timeout")
	// ErrStopped: Start was called on a stopped Server.
	ErrStopped = errors.New("api: server stopped")
)

// Reply codes (Reply.Code).
const (
	CodeNotFound   = "not_found"
	CodeAmbiguous  = "ambiguous"
	CodeBadRequest = "bad_request"
	CodeTooLarge   = "too_large"
	CodeBusy       = "busy"
)

var codes = []struct {
	code string
	err  error
}{
	{CodeNotFound, ErrNotFound},
	{CodeAmbiguous, ErrAmbiguous},
	{CodeBadRequest, ErrBadRequest},
	{CodeTooLarge, ErrTooLarge},
	{CodeBusy, ErrBusy},
}

// CodeOf is the Reply code for err ("" when it is none of the sentinels).
func CodeOf(err error) string {
	for _, c := range codes {
		if errors.Is(err, c.err) {
			return c.code
		}
	}
	return ""
}

// HintError attaches a hint for the user to an error: what to do about it.
// A handler returns one to set Reply.Hint; a CLI prints the hint under the
// error.
type HintError struct {
	Err  error
	Hint string
}

// Error is the wrapped error's text.
func (e *HintError) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *HintError) Unwrap() error { return e.Err }

// WithHint wraps err with a hint; nil stays nil.
func WithHint(err error, hint string) error {
	if err == nil {
		return nil
	}
	return &HintError{Err: err, Hint: hint}
}

// RemoteError is an error answered by a node.
type RemoteError struct {
	// Method is the API method asked.
	Method string
	// Node is the node that answered, when it said.
	Node string
	// Message is Reply.Error.
	Message string
	// Hint is Reply.Hint.
	Hint string
	// Code is Reply.Code.
	Code string
}

// Error is the node's message.
func (e *RemoteError) Error() string { return e.Message }

// Unwrap returns the sentinel matching Code, so errors.Is(err, ErrNotFound)
// works across the wire.
func (e *RemoteError) Unwrap() error {
	for _, c := range codes {
		if c.code == e.Code {
			return c.err
		}
	}
	return nil
}

// NoResponderError says that no node serves a method.
type NoResponderError struct {
	// Subject is the request subject.
	Subject string
	// URL is the NATS server the client is connected to.
	URL string
}

// Error reads: no agentd node answers agentic.api.runs.list on
// nats://127.0.0.1:4222: is agentd running? (start one with: agentd --data
// ./data).
func (e *NoResponderError) Error() string {
	return fmt.Sprintf("no agentd node answers %s on %s: is agentd running? (start one with: agentd --data ./data)", e.Subject, e.URL)
}

// Unwrap returns ErrNoNode.
func (e *NoResponderError) Unwrap() error { return ErrNoNode }

// HintOf returns the first hint found along err's chain (HintError or
// RemoteError), or "".
func HintOf(err error) string {
	for err != nil {
		switch e := err.(type) {
		case *HintError:
			if e.Hint != "" {
				return e.Hint
			}
		case *RemoteError:
			if e.Hint != "" {
				return e.Hint
			}
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if h := HintOf(e); h != "" {
					return h
				}
			}
			return ""
		default:
			return ""
		}
	}
	return ""
}
