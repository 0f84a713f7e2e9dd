package natsauth

import (
	"bytes"
	"fmt"
	"os"
	"sync"

	"github.com/nats-io/nats.go"
)

// credsFile presents the NATS user of a creds file at each connection, as
// nats.UserCredentials does — the file is read again at every connection
// after the first, so a renewed file is presented at the next
// (re)connection — but parses it again only when its bytes changed: a
// decorated creds file is parsed with a regular expression over the whole
// file, and nats.UserCredentials did that twice per connection (once for
// the JWT, once for the key) after ReadCreds had already done it, most of
// a CLI invocation's parsing.
//
// The first connection presents the bytes the file was read with when the
// options were made (a CLI connects microseconds later: reading it again
// would be its fourth read). Each connection reads the file once, for its
// JWT, and signs the server's nonce with the key of that same reading.
type credsFile struct {
	path string
	mu   struct {
		sync.Mutex
		raw  []byte
		user *User
		// fresh counts the loads still served from the reading the
		// options were made from: nats.UserJWT calls the JWT callback
		// once when nats.Connect applies the option (a smoke test), then
		// the connection calls it.
		fresh int
	}
}

// firstConnectLoads are the JWT loads of the first nats.Connect with the
// options: the option's smoke test and the connection's CONNECT.
const firstConnectLoads = 2

// newCredsFile starts from the user ReadCreds read from raw.
func newCredsFile(path string, raw []byte, u *User) *credsFile {
	c := &credsFile{path: path}
	c.mu.raw, c.mu.user, c.mu.fresh = raw, u, firstConnectLoads
	return c
}

// load returns the file's user, parsing the file only if it changed; the
// first call presents the bytes the options were made from.
func (c *credsFile) load() (*User, error) {
	c.mu.Lock()
	if c.mu.fresh > 0 {
		c.mu.fresh--
		u := c.mu.user
		c.mu.Unlock()
		return u, nil
	}
	c.mu.Unlock()
	b, err := os.ReadFile(c.path)
	if err != nil {
		return nil, fmt.Errorf("natsauth: read creds: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.user != nil && bytes.Equal(b, c.mu.raw) {
		return c.mu.user, nil
	}
	u, err := parseCreds(c.path, b)
	if err != nil {
		return nil, err
	}
	c.mu.raw, c.mu.user = b, u
	return u, nil
}

// loaded is the user the last load returned: the one whose JWT this
// connection presented.
func (c *credsFile) loaded() *User {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.user
}

// option is the nats.go option presenting the file's user JWT and signing
// the server's nonce with its key (nats.go asks the JWT first, then the
// signature, at each connection).
func (c *credsFile) option() nats.Option {
	return nats.UserJWT(func() (string, error) {
		u, err := c.load()
		if err != nil {
			return "", err
		}
		return u.JWT, nil
	}, func(nonce []byte) ([]byte, error) {
		u := c.loaded()
		if u == nil {
			return nil, fmt.Errorf("natsauth: %s: no NATS user loaded to sign with", c.path)
		}
		return u.Key.Sign(nonce)
	})
}
