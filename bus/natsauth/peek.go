package natsauth

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/jwt/v2"
)

// userClaims are the claims of a user JWT that a client reads from its
// creds file: who the user is (tags, name), for which key and until when.
type userClaims struct {
	Name    string `json:"name"`
	Subject string `json:"sub"`
	Expires int64  `json:"exp"`
	Nats    struct {
		Type string   `json:"type"`
		Tags []string `json:"tags"`
	} `json:"nats"`
}

// peekUserClaims reads the claims of the user JWT j without checking its
// signature or decoding its permissions. For a client's own creds file
// only: the server checks the signature at CONNECT, and a client needs
// no more than the key, the expiry and the tags (its inbox) to connect.
// Decoding the JWT in full (jwt.DecodeUserClaims: its ~150 permission
// subjects decoded twice and an Ed25519 verification, with the
// verification tables' first build) cost agentctl ~0.2–0.5 ms before it
// could connect.
func peekUserClaims(j string) (userClaims, error) {
	var c userClaims
	header, rest, ok := strings.Cut(j, ".")
	payload, sig, ok2 := strings.Cut(rest, ".")
	if !ok || !ok2 || header == "" || payload == "" || sig == "" || strings.Contains(sig, ".") {
		return c, errors.New("not a JWT (want three parts separated by dots)")
	}
	var h struct {
		Type      string `json:"typ"`
		Algorithm string `json:"alg"`
	}
	if err := decodeSegment(header, &h); err != nil {
		return c, fmt.Errorf("its header: %w", err)
	}
	if h.Algorithm != jwt.AlgorithmNkey {
		return c, fmt.Errorf("its algorithm is %q, want %q", h.Algorithm, jwt.AlgorithmNkey)
	}
	if err := decodeSegment(payload, &c); err != nil {
		return c, fmt.Errorf("its claims: %w", err)
	}
	if c.Nats.Type != string(jwt.UserClaim) {
		return c, fmt.Errorf("it is a %q JWT, not a user's", c.Nats.Type)
	}
	return c, nil
}

// decodeSegment decodes one base64url segment of a JWT as JSON into v.
func decodeSegment(seg string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(seg, "="))
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}
