package envelope

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
)

// refParse is parse as it was: encoding/json for the header and claims.
// parse must give what it gives, for every input.
func refParse(raw []byte) (*jws, error) {
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
	if err := json.Unmarshal(hb, &j.header); err != nil {
		return nil, fmt.Errorf("%w: header: %w", errMalformed, err)
	}
	cb, err := b64.AppendDecode(nil, raw[first+1:last])
	if err != nil {
		return nil, fmt.Errorf("%w: claims: %w", errMalformed, err)
	}
	if err := json.Unmarshal(cb, &j.claims); err != nil {
		return nil, fmt.Errorf("%w: claims: %w", errMalformed, err)
	}
	if j.sig, err = b64.AppendDecode(nil, raw[last+1:]); err != nil {
		return nil, fmt.Errorf("%w: signature: %w", errMalformed, err)
	}
	return j, nil
}

// checkParse fails t unless parse and refParse agree on the message made
// of header and claims.
func checkParse(t *testing.T, hb, cb []byte) {
	t.Helper()
	raw := []byte(b64.EncodeToString(hb) + "." + b64.EncodeToString(cb) + ".c2ln")
	got, err := parse(raw)
	want, wantErr := refParse(raw)
	if (err == nil) != (wantErr == nil) || fmt.Sprint(err) != fmt.Sprint(wantErr) {
		t.Fatalf("parse(%q, %q): error %v, encoding/json %v", hb, cb, err, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("parse(%q, %q)\n = %+v\nencoding/json %+v", hb, cb, got, want)
	}
}

// parseCorpus are headers and claims of every form: as this package
// writes them, and as others may.
func parseCorpus(t testing.TB) (headers, claimsDocs [][]byte) {
	root, err := trust.NewRoot()
	if err != nil {
		t.Fatal(err)
	}
	id, err := trust.NewIdentity(root, "exec-1", trust.KindNode, []string{event.RoleExecutor}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 22, 23, 0, 0, 123456789, time.FixedZone("x", 3600))
	var msgs [][]byte
	for _, n := range []int{1, 2, 5} {
		var drafts []event.Draft
		for i := range n {
			d := event.MustDraft(event.TaskStarted, "run-1", event.TaskStartedData{Step: fmt.Sprint("s<&>\u2028", i), Attempt: 1, Node: "exec-1"})
			if i == 1 {
				d.Run, d.Time = "", time.Time{}
			}
			if i == 2 {
				d.Time = at
			}
			drafts = append(drafts, d)
		}
		for _, v := range []int{0, 1, Version} {
			raw, _, err := SignAt(id, drafts, time.Now(), v)
			if err != nil {
				t.Fatal(err)
			}
			msgs = append(msgs, raw)
		}
	}
	for _, raw := range msgs {
		parts := bytes.Split(raw, []byte("."))
		hb, _ := b64.DecodeString(string(parts[0]))
		cb, _ := b64.DecodeString(string(parts[1]))
		headers = append(headers, hb)
		claimsDocs = append(claimsDocs, cb)
	}
	for _, h := range []string{
		`{}`, `null`, `[]`, `{"alg":"EdDSA"}`, `{"alg":"none","typ":"JWT"}`, `{"ALG":"EdDSA"}`, `{"Alg":"EdDSA","alg":"x"}`,
		`{"alg":"EdDSA","alg":"x"}`, `{"alg":null}`, `{"alg":1}`, `{"alg":"Ed\u0044SA"}`, `{"alg":"EdDSA","x":{"y":[1,2]}}`,
		` {"alg":"EdDSA"}`, `{"alg":"EdDSA"} `, `{"alg":"EdDSA"}x`, "{\"kid\":\"\xff\"}", "{\"kid\":\"é\"}", `{"kid":"a"`, `{"kid":"a",}`,
	} {
		headers = append(headers, []byte(h))
	}
	for _, c := range []string{
		`{}`, `null`, `{"typ":"task.started"}`, `{"iat":1,"exp":2,"nbf":3}`, `{"iat":1.5}`, `{"iat":1e3}`, `{"iat":-7}`, `{"iat":-0}`,
		`{"iat":9007199254740993}`, `{"iat":99999999999999999999}`, `{"iat":123456789012345}`, `{"iat":1234567890123456}`, `{"iat":null}`, `{"iat":"1"}`, `{"iat":01}`,
		`{"pv":1}`, `{"pv":-1}`, `{"pv":1.0}`, `{"pv":99999999999999999999}`, `{"pv":"1"}`,
		`{"at":"2026-11-22T23:00:00Z"}`, `{"at":"2026-11-22T23:00:00.5+01:00"}`, `{"at":"2026-13-22T23:00:00Z"}`, `{"at":null}`, `{"at":"x"}`, `{"at":"2026-11-22 23:00:00Z"}`,
		`{"data":null}`, `{"data":{}}`, `{"data":[]}`, `{"data":{"a":[1,-2.5e+3,true,false,null,"\u00e9\n\"<"]}}`, `{"data":{"a":}}`, `{"data":{"a":1,}}`,
		`{"data":"x"}`, `{"data":1}`, `{"data":{"a" :1}}`, `{"data":{"a":1},"data":{"b":2}}`, `{"Data":{"a":1}}`, "{\"data\":\"\x01\"}", "{\"data\":\"\xff\"}",
		`{"data":` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `}`, `{"data":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`,
		`{"batch":null}`, `{"batch":[]}`, `{"batch":[{}]}`, `{"batch":[{"id":"a"},{"id":"b","run":"r","at":"2026-11-22T23:00:00Z","data":{"k":"v"}}]}`,
		`{"batch":[{"id":"a","id":"b"}]}`, `{"batch":[{"id":"a","x":1}]}`, `{"batch":[{"id":"a"},]}`, `{"batch":[{"id":"a"}],"data":{}}`, `{"batch":{}}`,
		`{"iss":"exec-1","jti":"x","typ":"task.started","run":"r","unknown":1}`, `{"iss":"a\"b"}`, `{"iss":"a\/b"}`, `{"iss":""}`,
	} {
		claimsDocs = append(claimsDocs, []byte(c))
	}
	return headers, claimsDocs
}

// parse reads every header and claims as encoding/json reads them.
func TestParseMatchesEncodingJSON(t *testing.T) {
	headers, claimsDocs := parseCorpus(t)
	for _, hb := range headers {
		checkParse(t, hb, claimsDocs[0])
	}
	for _, cb := range claimsDocs {
		checkParse(t, headers[0], cb)
	}
	// Messages this package signs are read by the fast path.
	if _, ok := parseHeader(headers[0]); !ok {
		t.Fatalf("header %s left to encoding/json", headers[0])
	}
	for _, cb := range claimsDocs[:9] {
		if _, ok := parseClaims(cb); !ok {
			t.Fatalf("claims %s left to encoding/json", cb)
		}
	}
	// Damaged claims, at random.
	rng := rand.New(rand.NewPCG(1123, 7))
	const changes = `{}[],:"\ 0159.-eEnulltrue`
	fast := 0
	for range 5000 {
		cb := bytes.Clone(claimsDocs[rng.IntN(9)])
		for range 1 + rng.IntN(3) {
			i := rng.IntN(len(cb))
			switch rng.IntN(3) {
			case 0:
				cb[i] = changes[rng.IntN(len(changes))]
			case 1:
				cb = append(cb[:i], cb[i+1:]...)
			default:
				cb = append(cb[:i], append([]byte{changes[rng.IntN(len(changes))]}, cb[i:]...)...)
			}
		}
		checkParse(t, headers[0], cb)
		if _, ok := parseClaims(cb); ok {
			fast++
		}
	}
	if fast < 100 || fast > 4500 {
		t.Fatalf("%d of 5000 damaged claims read by the fast path: the damage misses the cases", fast)
	}
}

// FuzzParse: on any header and claims, parse gives what encoding/json
// gives.
func FuzzParse(f *testing.F) {
	headers, claimsDocs := parseCorpus(f)
	for i, cb := range claimsDocs {
		f.Add(headers[i%len(headers)], cb)
	}
	f.Fuzz(func(t *testing.T, hb, cb []byte) { checkParse(t, hb, cb) })
}
