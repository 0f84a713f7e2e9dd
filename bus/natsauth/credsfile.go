package natsauth

import (
	"bytes"
	"fmt"
	"os"
	"sync"

	"github.com/nats-io/nats.go"
)

// credsFile presents the NATS user of a creds file at each connection, as
// nats.UserCredentials does — the file is read again every time, so a
// renewed file is presented at the next (re)connection — but parses it
// again only when its bytes changed: a decorated creds file is parsed with
// a regular expression over the whole file, and nats.UserCredentials did
// that twice per connection (once for the JWT, once for the key) after
// ReadCreds had already done it, most of a CLI invocation's parsing.
type credsFile struct {
	path string
	mu   struct {
		sync.Mutex
		raw  []byte
		user *User
	}
}

// newCredsFile starts from the user ReadCreds read from raw.
func newCredsFile(path string, raw []byte, u *User) *credsFile {
	c := &credsFile{path: path}
	c.mu.raw, c.mu.user = raw, u
	return c
}

// load returns the file's user, parsing the file only if it changed.
func (c *credsFile) load() (*User, error) {
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

// option is the nats.go option presenting the file's user JWT and signing
// the server's nonce with its key.
func (c *credsFile) option() nats.Option {
	return nats.UserJWT(func() (string, error) {
		u, err := c.load()
		if err != nil {
			return "", err
		}
		return u.JWT, nil
	}, func(nonce []byte) ([]byte, error) {
		u, err := c.load()
		if err != nil {
			return nil, err
		}
		return u.Key.Sign(nonce)
	})
}
