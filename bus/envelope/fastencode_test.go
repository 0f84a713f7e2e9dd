package envelope

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

var (
	encodeStrings = []string{"", "exec-1", "task.started", "0192f1c2-7b1e-7c3d-9f00-1a2b3c4d5e6f", "a\"b", "a\\b", "<script>", "a&b", "x\u2028y", "x\u2029", "tab\t", "nl\n",
		"\x01", "\x7f", "é", "\xff", "日本", "~!@#$%^*()_+{}|:?[];',./`"}
	encodePayloads = []string{`{}`, `[]`, `null`, `1`, `"x"`, `{"k":"v"}`, `{"step":"a","attempt":1,"node":"exec-1"}`, `{"a":[1,-2.5e+3,true,false,null,"\u00e9\n\"<"]}`,
		`{"a": 1}`, " {\"a\":1}", "{\"a\":1}\n", `{"a":"<b>"}`, `{"a":"&"}`, "{\"a\":\"\u2028\"}", "{\"a\":\"\u2029\"}", "{\"a\":\"\xe2\x80\"}", "{\"a\":\"\xe2\"}",
		"{\"a\":\"\xff\"}", `{"a":"é"}`, `{"a":1,}`, `{"a"}`, `[` + string(bytes.Repeat([]byte("["), 70)) + string(bytes.Repeat([]byte("]"), 71))}
	encodeTimes = []time.Time{{}, time.Date(2026, 11, 22, 23, 0, 0, 0, time.UTC), time.Date(2026, 11, 22, 23, 0, 0, 123456789, time.FixedZone("x", 5400)),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC), time.Unix(0, 1).In(time.FixedZone("y", -3600*30))}
)

func randomClaims(rng *rand.Rand) claims {
	// Mostly what ordinary messages hold (the first four), now and then
	// anything.
	pick := func(s []string) string {
		if rng.IntN(12) == 0 {
			return s[rng.IntN(len(s))]
		}
		return s[rng.IntN(4)]
	}
	date := func() *numericDate {
		if rng.IntN(3) == 0 {
			return nil
		}
		return newDate(time.Unix(rng.Int64N(1<<40)-1<<39, 0))
	}
	payload := func() json.RawMessage {
		if rng.IntN(4) == 0 {
			return nil
		}
		return json.RawMessage(pick(encodePayloads))
	}
	c := claims{Issuer: pick(encodeStrings), IssuedAt: date(), ExpiresAt: date(), NotBefore: date(), ID: pick(encodeStrings),
		Version: []int{0, 1, 6, -1}[rng.IntN(4)], Type: event.Type(pick(encodeStrings)), Run: pick(encodeStrings),
		At: encodeTimes[rng.IntN(len(encodeTimes))], Data: payload()}
	if rng.IntN(3) > 0 {
		c.At = encodeTimes[rng.IntN(3)]
	}
	for range rng.IntN(4) - 1 {
		c.Batch = append(c.Batch, item{ID: pick(encodeStrings), Run: pick(encodeStrings), At: encodeTimes[rng.IntN(len(encodeTimes))], Data: payload()})
	}
	return c
}

// appendClaims and appendHeader write what json.Marshal writes, or give
// up; and they do not give up on the claims of ordinary messages.
func TestEncodeMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1123, 9))
	fast := 0
	const n = 20000
	for range n {
		c := randomClaims(rng)
		want, wantErr := json.Marshal(c)
		if got, ok := appendClaims(nil, c); ok {
			fast++
			if wantErr != nil || !bytes.Equal(got, want) {
				t.Fatalf("appendClaims(%+v)\n = %s\njson.Marshal %s %v", c, got, want, wantErr)
			}
		}
		h := header{Alg: encodeStrings[rng.IntN(3)], Typ: encodeStrings[rng.IntN(len(encodeStrings))], Kid: encodeStrings[rng.IntN(len(encodeStrings))], Cred: encodeStrings[rng.IntN(len(encodeStrings))]}
		want, _ = json.Marshal(h)
		if got, ok := appendHeader(nil, h); ok && !bytes.Equal(got, want) {
			t.Fatalf("appendHeader(%+v) = %s, json.Marshal %s", h, got, want)
		}
	}
	if fast < n/100 || fast > n/2 {
		t.Fatalf("%d of %d random claims written without json.Marshal: the generator misses the cases", fast, n)
	}
	t.Logf("%d of %d random claims written without json.Marshal", fast, n)
	_, claimsDocs := parseCorpus(t)
	for _, cb := range claimsDocs[:9] {
		c, ok := parseClaims(cb)
		if !ok {
			t.Fatalf("claims %s", cb)
		}
		if got, ok := appendClaims(nil, c); !ok || !bytes.Equal(got, cb) {
			t.Fatalf("claims signed as %s written as %s (%v)", cb, got, ok)
		}
	}
}

// FuzzEncode: for any strings, payloads and times, appendClaims writes
// what json.Marshal writes, or gives up.
func FuzzEncode(f *testing.F) {
	for i, p := range encodePayloads {
		f.Add(encodeStrings[i%len(encodeStrings)], encodeStrings[(i+3)%len(encodeStrings)], []byte(p), int64(i)*1e17, i%3 == 0)
	}
	f.Fuzz(func(t *testing.T, id, run string, data []byte, at int64, batch bool) {
		c := claims{Issuer: "exec-1", IssuedAt: newDate(time.Unix(at/1e9, 0)), ID: id, Type: "task.started", Run: run, At: time.Unix(0, at).In(time.FixedZone("z", int(at%100000)))}
		if batch {
			c.Batch = []item{{ID: id, Run: run, At: c.At, Data: data}, {ID: run, Data: data}}
		} else {
			c.Data = data
		}
		want, wantErr := json.Marshal(c)
		if got, ok := appendClaims(nil, c); ok && (wantErr != nil || !bytes.Equal(got, want)) {
			t.Fatalf("appendClaims(%+v)\n = %s\njson.Marshal %s %v", c, got, want, wantErr)
		}
	})
}
