package natsauth_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/natsauth"
	"github.com/agentic-dev/agentic/bus/trust"
)

// operatorCreds writes an operator's creds file, as agentd does, and
// returns its path, its bytes and the identity.
func operatorCreds(t *testing.T) (string, []byte, *trust.Identity) {
	t.Helper()
	root, auth, _ := newAuthority(t)
	id, err := trust.NewIdentity(root, "alice", trust.KindOperator, []string{trust.OperatorRole}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "operator.creds")
	if err := auth.WriteCreds(path, root, id); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, raw, id
}

// TestCredsOptionsReadTheUserCheaply: a client reads from its creds file
// only what it needs to connect (the key, the expiry, the tags), not the
// user JWT's ~150 permission subjects, whose signature the server checks
// at CONNECT anyway: agentctl does this before it can connect. The
// decoding in full allocated 228 times (now 54).
func TestCredsOptionsReadTheUserCheaply(t *testing.T) {
	path, raw, _ := operatorCreds(t)
	allocs := testing.AllocsPerRun(20, func() {
		if _, _, err := natsauth.CredsOptionsFrom(path, raw); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 120 {
		t.Errorf("CredsOptionsFrom allocates %.0f times per read of an operator's creds file, want at most 120", allocs)
	}
}

// TestCredsOptionsUser: the user read without decoding the JWT in full is
// the one the file was issued for.
func TestCredsOptionsUser(t *testing.T) {
	path, raw, id := operatorCreds(t)
	_, u, err := natsauth.CredsOptionsFrom(path, raw)
	if err != nil {
		t.Fatal(err)
	}
	c, err := trust.ReadCredential(id.Credential)
	if err != nil {
		t.Fatal(err)
	}
	if u.Kind != trust.KindOperator || u.ID != "alice" || !slices.Equal(u.Roles, []string{trust.OperatorRole}) || !u.Expires.Equal(c.Expires.Truncate(time.Second)) {
		t.Errorf("user = %s %s %v until %s; want operator alice %v until %s", u.Kind, u.ID, u.Roles, u.Expires, []string{trust.OperatorRole}, c.Expires)
	}
	if !strings.HasPrefix(u.Inbox(), "_INBOX_operator_alice") {
		t.Errorf("inbox %q", u.Inbox())
	}
}

// TestCredsOptionsRefuseABrokenJWT: a user JWT that is not one says so,
// naming the file, before any connection.
func TestCredsOptionsRefuseABrokenJWT(t *testing.T) {
	path, raw, _ := operatorCreds(t)
	s := string(raw)
	start := strings.Index(s, "-----BEGIN NATS USER JWT-----\n") + len("-----BEGIN NATS USER JWT-----\n")
	end := start + strings.Index(s[start:], "\n")
	j := s[start:end]
	header, rest, _ := strings.Cut(j, ".")
	_, sig, _ := strings.Cut(rest, ".")
	for name, bad := range map[string]string{
		"claims not base64": header + ".e." + sig,
		"claims not JSON":   header + ".bm90IGpzb24." + sig,
		"two parts":         header + "." + sig,
		"not a user":        header + ".eyJuYXRzIjp7InR5cGUiOiJhY2NvdW50In19." + sig, // {"nats":{"type":"account"}}
	} {
		broken := s[:start] + bad + s[end:]
		if _, _, err := natsauth.CredsOptionsFrom(path, []byte(broken)); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "user JWT") {
			t.Errorf("%s: err = %v, want one naming %s and its user JWT", name, err, path)
		}
	}
}
