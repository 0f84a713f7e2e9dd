package envelope

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// The compact JWS is read and written here rather than by a JWT library, so
// that a verdict depends on the protocol's rules alone: a library's next
// release can neither change what verifies nor leak its error text into a
// ledger.

// header is the JWS protected header.
type header struct {
	Alg  string `json:"alg"`
	Typ  string `json:"typ,omitempty"`
	Kid  string `json:"kid,omitempty"`
	Cred string `json:"cred,omitempty"`
}

// item is one event of a batch.
type item struct {
	ID   string          `json:"id"`
	Run  string          `json:"run,omitempty"`
	At   time.Time       `json:"at"`
	Data json.RawMessage `json:"data,omitempty"`
}

// claims are the JWS payload.
type claims struct {
	Issuer    string       `json:"iss,omitempty"`
	IssuedAt  *numericDate `json:"iat,omitempty"`
	ExpiresAt *numericDate `json:"exp,omitempty"`
	NotBefore *numericDate `json:"nbf,omitempty"`
	ID        string       `json:"jti,omitempty"`
	// Version is the protocol version the message was made under; absent
	// (0) in messages of builds before versions.
	Version int             `json:"pv,omitempty"`
	Type    event.Type      `json:"typ"`
	Run     string          `json:"run,omitempty"`
	At      time.Time       `json:"at,omitzero"`
	Data    json.RawMessage `json:"data,omitempty"`
	Batch   []item          `json:"batch,omitempty"`
}

// numericDate is a JWT time: seconds since the epoch, a JSON number.
// Fractions are dropped.
type numericDate struct{ time.Time }

func newDate(t time.Time) *numericDate { return &numericDate{t.Truncate(time.Second).UTC()} }

func (d numericDate) MarshalJSON() ([]byte, error) {
	return strconv.AppendInt(nil, d.Unix(), 10), nil
}

// maxSeconds bounds a time claim to what a float64 holds exactly.
const maxSeconds = 1 << 53

func (d *numericDate) UnmarshalJSON(b []byte) error {
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	if math.Abs(f) > maxSeconds {
		return errors.New("time out of range")
	}
	d.Time = time.Unix(int64(f), 0).UTC()
	return nil
}

// time returns the claim's time, zero when absent.
func (d *numericDate) time() time.Time {
	if d == nil {
		return time.Time{}
	}
	return d.Time
}

var b64 = base64.RawURLEncoding

// jws is a parsed compact JWS, not yet verified.
type jws struct {
	header  header
	claims  claims
	signing []byte // header.claims, the signed input
	sig     []byte
}

// errMalformed is the one parse failure: its detail goes to logs only.
var errMalformed = errors.New("not a compact JWS with a JSON header and JSON claims")

// parse reads a compact JWS. Nothing is verified.
func parse(raw []byte) (*jws, error) {
	first := bytes.IndexByte(raw, '.')
	last := bytes.LastIndexByte(raw, '.')
	if first < 0 || first == last || bytes.IndexByte(raw[first+1:last], '.') >= 0 {
		return nil, fmt.Errorf("%w: want three dot-separated parts", errMalformed)
	}
	j := &jws{signing: raw[:last]}
	hb, err := b64.AppendDecode(nil, raw[:first])
	if err != nil {
		return nil, fmt.Errorf("%w: header: %w", errMalformed, err)
	}
	if h, ok := parseHeader(hb); ok {
		j.header = h
	} else if err := json.Unmarshal(hb, &j.header); err != nil {
		return nil, fmt.Errorf("%w: header: %w", errMalformed, err)
	}
	cb, err := b64.AppendDecode(nil, raw[first+1:last])
	if err != nil {
		return nil, fmt.Errorf("%w: claims: %w", errMalformed, err)
	}
	if c, ok := parseClaims(cb); ok {
		j.claims = c
	} else if err := json.Unmarshal(cb, &j.claims); err != nil {
		return nil, fmt.Errorf("%w: claims: %w", errMalformed, err)
	}
	if j.sig, err = b64.AppendDecode(nil, raw[last+1:]); err != nil {
		return nil, fmt.Errorf("%w: signature: %w", errMalformed, err)
	}
	return j, nil
}

// encode signs h and c with key into a compact JWS.
func encode(h header, c claims, key ed25519.PrivateKey) ([]byte, error) {
	hb, ok := appendHeader(nil, h)
	if !ok {
		var err error
		if hb, err = json.Marshal(h); err != nil {
			return nil, err
		}
	}
	cb, ok := appendClaims(make([]byte, 0, 256+payloadBytes(&c)), c)
	if !ok {
		var err error
		if cb, err = json.Marshal(c); err != nil {
			return nil, err
		}
	}
	n := b64.EncodedLen(len(hb)) + 1 + b64.EncodedLen(len(cb))
	out := make([]byte, n, n+1+b64.EncodedLen(ed25519.SignatureSize))
	b64.Encode(out, hb)
	out[b64.EncodedLen(len(hb))] = '.'
	b64.Encode(out[b64.EncodedLen(len(hb))+1:], cb)
	sig := ed25519.Sign(key, out)
	out = append(out, '.')
	return b64.AppendEncode(out, sig), nil
}
