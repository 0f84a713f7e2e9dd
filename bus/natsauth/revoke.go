package natsauth

import (
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/agentic-dev/agentic/bus/trust"
	gjwt "github.com/golang-jwt/jwt/v5"
	"github.com/nats-io/jwt/v2"
)

// ErrNoUserFound marks a file from which UsersOf learnt no NATS user of the
// identity it was asked about.
var ErrNoUserFound = errors.New("natsauth: no NATS user found")

// UsersOf returns the NATS user keys (U…) that a file holding one of
// identity kind/id's credentials names, for its revocation: what
// revoking an identity whose credentials never signed an event needs, as
// the ledger then knows no NATS user of it (credentials.list). The file
// may be
//
//   - a creds file (agentctl keys operator, WriteCreds): its NATS user JWT
//     and the `nats` claim of its agentic credential;
//   - a NATS credentials file or user JWT (a node's node.nats.jwt);
//   - an agentic credential JWT (a node's node.cred);
//   - an API token the identity made (agentctl keys api-token): the
//     `nats` claim of the credential it carries.
//
// Nothing in it is verified but that it names kind/id: the file is the
// administrator's word, and a revocation only takes away. A file naming
// another identity is an error, and so is one naming no NATS user of it
// (ErrNoUserFound: a credential issued before credentials named their
// NATS user; give the key itself then).
func UsersOf(path, kind, id string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("natsauth: read %s: %w", path, err)
	}
	var users []string
	add := func(u, what, k, i string) error {
		if k != kind || i != id {
			return fmt.Errorf("natsauth: %s: its %s names %s %q, not %s %q", path, what, orNone(k), i, kind, id)
		}
		if u != "" && !slices.Contains(users, u) {
			users = append(users, u)
		}
		return nil
	}
	var creds []string // agentic credential JWTs
	rest := b
	for {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			break
		}
		if blk.Type == "AGENTIC CREDENTIAL" {
			creds = append(creds, string(blk.Bytes))
		}
	}
	text := strings.TrimSpace(string(b))
	if j, err := jwt.ParseDecoratedJWT(b); err == nil && strings.HasPrefix(strings.TrimSpace(j), "ey") {
		if uc, err := jwt.DecodeUserClaims(strings.TrimSpace(j)); err == nil {
			k, i := tagsOf(uc)
			if err := add(uc.Subject, "NATS user", k, i); err != nil {
				return nil, err
			}
		}
	}
	if len(creds) == 0 && strings.HasPrefix(text, "ey") && !strings.ContainsAny(text, " \n") {
		// One JWT: a credential, or an API token carrying one.
		var tok struct {
			gjwt.RegisteredClaims
			Credential string `json:"cred"`
		}
		if _, _, err := gjwt.NewParser().ParseUnverified(text, &tok); err == nil && tok.Credential != "" {
			creds = append(creds, tok.Credential)
		} else if err == nil {
			creds = append(creds, text)
		}
	}
	for _, raw := range creds {
		c, err := trust.ReadCredential(raw)
		if err != nil {
			continue // a NATS JWT, or not a credential at all
		}
		if err := add(c.NATSUser, "credential", c.Kind, c.ID); err != nil {
			return nil, err
		}
	}
	if len(users) == 0 {
		return nil, fmt.Errorf("%w of %s %q in %s (want its creds file, node.cred, node.nats.jwt or an API token it made)", ErrNoUserFound, kind, id, path)
	}
	slices.Sort(users)
	return users, nil
}

// tagsOf reads the kind and id tags of an agentic user JWT ("" when not
// one).
func tagsOf(uc *jwt.UserClaims) (kind, id string) {
	for _, tag := range uc.Tags {
		k, v, _ := strings.Cut(tag, ":")
		switch k {
		case "kind":
			kind = v
		case "id":
			id = v
		}
	}
	return kind, id
}

// orNone names a kind in an error ("no kind" for a NATS user not issued
// by agentic).
func orNone(kind string) string {
	if kind == "" {
		return "no kind,"
	}
	return kind
}
