package cli

import (
	"fmt"
	"os"
	"sync"

	"github.com/agentic-dev/agentic/bus/trust"
)

// readFile reads the creds file; the tests count its calls.
var readFile = os.ReadFile

// credsOnce is the creds file of an invocation, read and parsed once: the
// identity that signs, the root compared with the cluster's, the root that
// checks answers and the NATS user all come from it (before, each read and
// parsed the file again: five reads and three parses per goal submit).
// Errors are remembered too: an absent file stays absent for the
// invocation (an error wrapping fs.ErrNotExist). The read and the parse
// of the identity are guarded apart: a connection made ahead (ahead.go)
// takes the bytes for its NATS user while the identity is parsed.
type credsOnce struct {
	mu      sync.Mutex // the read
	path    string
	read    bool
	raw     []byte
	readErr error

	parseMu    sync.Mutex // the identity's parse
	parsedPath string
	parsed     bool
	creds      *trust.Creds
	err        error
}

// loadLocked reads the file at path, once per path (c.mu held).
func (c *credsOnce) loadLocked(path string) {
	if c.read && c.path == path {
		return
	}
	c.path, c.read = path, true
	c.raw, c.readErr = readFile(path)
	if c.readErr != nil {
		c.readErr = fmt.Errorf("trust: read creds: %w", c.readErr)
	}
}

// credsFile is the parsed creds file at path (trust.ReadCredsFile), from
// the invocation's one read.
func (a *app) credsFile(path string) (*trust.Creds, error) {
	raw, readErr := a.credsBytes(path)
	c := &a.credsMemo
	c.parseMu.Lock()
	defer c.parseMu.Unlock()
	if c.parsed && c.parsedPath == path {
		return c.creds, c.err
	}
	c.parsedPath, c.parsed = path, true
	if readErr != nil {
		c.creds, c.err = nil, readErr
	} else {
		c.creds, c.err = trust.ParseCredsFile(path, raw)
	}
	return c.creds, c.err
}

// credsBytes are the bytes of the creds file at path, from the
// invocation's one read: the NATS user reads them even when they are a
// plain NATS credentials file, which trust does not parse.
func (a *app) credsBytes(path string) ([]byte, error) {
	c := &a.credsMemo
	c.mu.Lock()
	defer c.mu.Unlock()
	c.loadLocked(path)
	return c.raw, c.readErr
}

// credsRoot is the root of the creds file at path without judging its
// credential (trust.ReadCredsRoot), from the invocation's one read.
func (a *app) credsRoot(path string) (*trust.Root, error) {
	c, err := a.credsFile(path)
	if err != nil {
		return nil, err
	}
	return c.Root(), nil
}
