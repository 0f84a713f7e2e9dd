package redact

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// knownForWalk is a value this process knows in the differential tests,
// so that judging withKnown differs from the patterns alone.
const knownForWalk = "Kn0wnV4lue-xyz"

func init() { Remember("WALK_TEST_TOKEN", knownForWalk) }

// walkCorpus are the edge cases the walker must judge as the reference:
// escapes, \u sequences and surrogates, malformed UTF-8, data that is not
// JSON, nesting at and past encoding/json's limit, duplicate keys, several
// secrets in document order unlike sorted order, numbers that overflow,
// huge strings.
func walkCorpus() []string {
	deepArr := func(n int, inner string) string {
		return strings.Repeat("[", n) + inner + strings.Repeat("]", n)
	}
	deepObj := func(n int, inner string) string {
		return strings.Repeat(`{"a":`, n) + inner + strings.Repeat("}", n)
	}
	huge := strings.Repeat("compiling module foo/bar with 12 files, cache hit\n", 8000)
	return []string{
		``, ` `, `null`, `true`, `false`, `0`, `-0.5e+3`, `"x"`, `{}`, `[]`, `[[]]`, `{"a":{}}`,
		`"ghp_abcdefghijklmnopqrstuvwxyz0123456789"`,
		`{"password":"hunter2"}`,
		`{"password":"$PW"}`,
		`{"DB_PASSWORD":"x"}`,
		`{"DB_PASSWORD":"${DB_PASSWORD}"}`,
		`{"run":"echo \"token=${TOKEN}\""}`,
		`{"run":"echo password=$PW\n"}`,
		`{"run":"mysql -pS3cretPW db"}`,
		`{"a":"AKIAIOSFODNN7EXAMPLE","b":"ghp_abcdefghijklmnopqrstuvwxyz0123456789"}`,
		`{"b":"AKIAIOSFODNN7EXAMPLE","a":"ghp_abcdefghijklmnopqrstuvwxyz0123456789"}`,
		`{"z":{"password":"p1"},"a":["x",{"token":"t1"}]}`,
		`{"a":"ghp_abcdefghijklmnopqrstuvwxyz0123456789","a":"clean"}`,
		`{"a":"clean","a":"ghp_abcdefghijklmnopqrstuvwxyz0123456789"}`,
		`{"a":"AKIAIOSFODNN7EXAMPLE","a":"ghp_abcdefghijklmnopqrstuvwxyz0123456789"}`,
		`{"a":{"password":"p1"},"a":1}`,
		`{"a":1,"a":{"password":"p1"}}`,
		`{"password":1}`, `{"password":{"x":"y"}}`, `{"AKIAIOSFODNN7EXAMPLE":null}`, `{"AKIAIOSFODNN7EXAMPLE":"v"}`,
		`{"":"MIIEowIBAAKCAQEAuQ8aeqn3u2l1"}`, `{"":"AKIAIOSFODNN7EXAMPLE"}`, `{"":""}`, `{"":{"":[""]}}`,
		`{"t":"\u0067hp_abcdefghijklmnopqrstuvwxyz0123456789"}`,
		`{"pass\u0077ord":"hunter2"}`,
		`{"k":"\ud83d\ude00 password=hunter2"}`,
		`{"k":"\ud83d password=hunter2"}`,
		`{"k":"\ude00\ud83d"}`,
		`{"k":"\ud83d\u0041"}`,
		`{"k":"\ud83d\n"}`,
		`{"k":"\ud83d"}`,
		`{"k":"\/\b\f\n\r\t\"\\"}`,
		`{"k":"\'"}`, `{"k":"\x41"}`, `{"k":"\u12"}`, `{"k":"\u12G4"}`, `{"k":"\`,
		"{\"k\":\"a\x01b\"}", "{\"k\":\"tab\there\"}",
		"{\"k\":\"\xff\xfe password=hunter2\"}",
		"{\"pass\xffword\":\"hunter2\"}",
		"{\"k\":\"\xed\xa0\x80\"}",
		"{\"k\":\"\xef\xbf\xbd\"}",
		"\xef\xbb\xbf{}",
		`{"a":1,}`, `[1,]`, `{"a"}`, `{"a":}`, `{'a':1}`, `{"a":1`, `[1 2]`, `{"a":1}{}`, `{"a":1} `, ` {"a":1}`,
		`01`, `-`, `1.`, `1e`, `1e+`, `.5`, `+1`, `tru`, `nul`, `falsey`, `NaN`,
		`{"a":1e400,"b":"x"}`, `{"password":"hunter2","n":1e400}`, `[-1e400]`, `[1e-400]`, `[1.7976931348623157e308]`, `[1.7976931348623159e308]`,
		"[" + strings.Repeat("9", 309) + "]", "[" + strings.Repeat("9", 310) + ", \"password=x\"]",
		deepArr(maxDepth, `"password=hunter2"`), deepArr(maxDepth+1, `"password=hunter2"`), deepArr(maxDepth, "1"), deepArr(maxDepth+1, "1"),
		deepObj(maxDepth, `"hunter2"`), deepObj(maxDepth+1, `"x"`), deepObj(maxDepth-1, `{"password":"hunter2"}`),
		`{"output_tail":` + jsonString(huge) + `}`,
		`{"output_tail":` + jsonString(huge+"token ghp_abcdefghijklmnopqrstuvwxyz0123456789\n") + `}`,
		`{"known":"` + knownForWalk + `"}`, `["x` + knownForWalk + `"]`, `{"` + knownForWalk + `":[]}`,
		`{"password":"` + knownForWalk + `"}`,
		" \t\n\r{ \"a\" : [ \"b\" , { \"password\" : \"hunter2\" } ] } \n",
		`{"env":{"MYSQL_PWD":"myPWvalue1"},"plan":{"steps":[{"run":"ok"},{"run":"curl -u bob:curlPW99 https://x"}]}}`,
		`{"memory":"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}`,
		`{"output_tail":"abcghp_abcdefghijklmnopqrstuvwxyz0123456789"}`,
		`{"output_tail":"x_AKIAIOSFODNN7EXAMPLE 123sk_live_51H8xQ2LkdIwHu7ixyzAbCdEf0123"}`,
		`{"env":{"MY_TOKEN_PART":"notsecret","private_key_path":"/etc/k.pem","token_id":"550e8400-e29b-41d4-a716-446655440000"}}`,
		`{"run":"key = {"private_key": private_key, "token": self.token}"}`,
	}
}

// walkValid reports whether the walker takes data as json.Unmarshal
// into an `any` does: JSON (encoding/json's grammar and nesting limit)
// whose numbers fit a float64.
func walkValid(data []byte) bool {
	w := walker{data: data}
	w.document()
	return !w.stop
}

// jsonString encodes s as encoding/json does.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// checkWalk fails t unless scan and walkValid agree with the reference on
// data, for every set, with and without the known values.
func checkWalk(t *testing.T, data []byte) {
	t.Helper()
	var v any
	want := json.Unmarshal(data, &v) == nil
	if got := walkValid(data); got != want {
		t.Fatalf("walkValid(%.200q) = %v, json.Unmarshal accepts it: %v", data, got, want)
	}
	lenient := walker{data: data, lenientNumbers: true}
	if lenient.document(); lenient.stop == json.Valid(data) {
		t.Fatalf("walker with lenient numbers on %.200q: valid %v, json.Valid %v", data, !lenient.stop, json.Valid(data))
	}
	// RedactJSON redacts as it did; when it says clean, Scan agrees.
	out, changed, clean, err := RedactJSONClean(data)
	wantOut, wantChanged, wantErr := refRedactJSON(data)
	if !bytes.Equal(out, wantOut) || changed != wantChanged || (err == nil) != (wantErr == nil) {
		t.Fatalf("RedactJSON(%.200q) = %.200q %v %v, reference %.200q %v %v", data, out, changed, err, wantOut, wantChanged, wantErr)
	}
	if f, found := Latest.refScan(out, true); clean && found {
		t.Fatalf("RedactJSONClean(%.200q) says clean, Scan finds %+v", data, f)
	}
	for _, set := range []Set{Set1, Set2, Set3} {
		for _, withKnown := range []bool{false, true} {
			want, wok := set.refScan(data, withKnown)
			got, gok := set.scan(data, withKnown)
			if got != want || gok != wok {
				t.Fatalf("set %d, known %v: scan(%.200q) = %+v %v, reference %+v %v", set, withKnown, data, got, gok, want, wok)
			}
		}
	}
}

// The walker judges every corpus document as the reference does.
func TestScanMatchesReference(t *testing.T) {
	for _, s := range walkCorpus() {
		checkWalk(t, []byte(s))
	}
}

// Random documents built from secret-looking and harmless pieces, written
// with random escapes and white space, then some of them damaged: the
// walker agrees with the reference on each (a bounded, seeded run).
func TestScanMatchesReferenceRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1123, 3))
	n := 3000
	if testing.Short() || raceEnabled {
		n = 500
	}
	var valid, found, tree, cleanRedact int
	for range n {
		doc := randomDoc(rng, 0)
		if rng.IntN(4) == 0 {
			doc = damage(rng, doc)
		}
		checkWalk(t, doc)
		if walkValid(doc) {
			valid++
		}
		if _, ok := Scan(doc); ok {
			found++
		}
		if !Latest.walkClean(doc, true) {
			tree++
		}
		if _, _, clean, _ := RedactJSONClean(doc); clean {
			cleanRedact++
		}
	}
	// The generator must reach every case: valid and not, clean and not,
	// and clean documents judged by the walk alone.
	if valid < n/2 || valid > n*9/10 || found < n/5 || found > n*9/10 || tree == n || cleanRedact < n/10 {
		t.Fatalf("of %d documents %d valid, %d with a secret, %d judged by the tree, %d clean by RedactJSONClean", n, valid, found, tree, cleanRedact)
	}
	t.Logf("of %d documents %d valid, %d with a secret, %d judged by the tree, %d clean by RedactJSONClean", n, valid, found, tree, cleanRedact)
}

// RedactJSONClean proves ordinary payloads clean, and leaves to Scan
// what its pass judged otherwise than Scan.
func TestRedactJSONClean(t *testing.T) {
	for _, p := range scanPayloads(t) {
		if out, changed, clean, err := RedactJSONClean(p.data); err != nil || changed || !clean || !bytes.Equal(out, p.data) {
			t.Errorf("%s: changed %v, clean %v, err %v", p.name, changed, clean, err)
		}
	}
	for _, s := range []string{
		`{"":"MIIEowIBAAKCAQEAuQ8aeqn3u2l1"}`, // Scan judges =MII…, redaction MII…
		`{"":"x"}`,
		`{"a":"x","n":1e400}`,          // Scan judges it as text
		"{\"a\":\"\xff\"}",             // Scan judges U+FFFD
		`{"AKIAIOSFODNN7EXAMPLE":"v"}`, // a secret in a key is not redacted
		`{"password":"hunter2"}`,       // redacted
	} {
		if _, _, clean, _ := RedactJSONClean([]byte(s)); clean {
			t.Errorf("RedactJSONClean(%q) says clean", s)
		}
	}
}

// FuzzScan: on any input, the walker reports what the reference reports.
func FuzzScan(f *testing.F) {
	for _, s := range walkCorpus() {
		if len(s) < 4096 {
			f.Add([]byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkWalk(t, data) })
}

// appendUnquoted decodes every valid JSON string as encoding/json does.
func FuzzUnquote(f *testing.F) {
	for _, s := range []string{`"a"`, `"\ud83d\ude00"`, `"\ud83d"`, `"\ud83dx"`, `"\ud83d\u0041"`, "\"\xff\"", `"\/\b\f\n\r\t\"\\"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var want string
		data = bytes.TrimRight(data, " \t\r\n")
		if json.Unmarshal(data, &want) != nil || len(data) < 2 || data[0] != '"' {
			return
		}
		w := walker{data: data}
		lo, hi, raw := w.str()
		if w.stop || w.pos != len(data) {
			t.Fatalf("walker refuses the string %q", data)
		}
		got := string(data[lo:hi])
		if !raw {
			got = string(appendUnquoted(nil, data[lo:hi]))
		}
		if got != want {
			t.Fatalf("decoded %q as %q, encoding/json as %q", data, got, want)
		}
	})
}

var (
	walkKeys = []string{"a", "b", "run", "env", "password", "DB_PASSWORD", "token", "api_key", "MYSQL_PWD", "", "z", "AKIAIOSFODNN7EXAMPLE", "output_tail", "pass\x00word", "ключ", "\xff"}
	walkVals = []string{"", "x", "hello world", "$PW", "${TOKEN}", "hunter2", "S3cretPW", "[REDACTED:jwt]", "500",
		"ghp_abcdefghijklmnopqrstuvwxyz0123456789", "AKIAIOSFODNN7EXAMPLE", "mysql -u root -pS3cretPW app",
		"curl -u bob:curlPW99 https://x", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "line1\nline2 password=abc\n",
		"MIIEowIBAAKCAQEAuQ8aeqn3u2l1", knownForWalk, "😀 emoji", "\u2028", "tab\there", "\xff\xfe", "eyJhbGciOiJIUzI1NiIs.eyJzdWIiOiIxMjM0NTY3.abc"}
)

// randomDoc returns a random JSON document of the walk pieces.
func randomDoc(rng *rand.Rand, depth int) []byte {
	var b []byte
	ws := func() {
		for rng.IntN(5) == 0 {
			b = append(b, " \t\n\r"[rng.IntN(4)])
		}
	}
	var value func(d int)
	value = func(d int) {
		ws()
		k := rng.IntN(10)
		if d > 4 {
			k = rng.IntN(6)
		}
		switch {
		case k < 4:
			b = appendRandomString(rng, b, walkVals[rng.IntN(len(walkVals))])
		case k == 4:
			b = append(b, []string{"0", "-1.5e3", "true", "false", "null", "1e400", "12345678901234567890"}[rng.IntN(7)]...)
		case k == 5:
			b = append(b, `"`+strings.Repeat("word ", rng.IntN(200))+`"`...)
		case k < 8:
			b = append(b, '{')
			for i := range rng.IntN(5) {
				if i > 0 {
					b = append(b, ',')
				}
				ws()
				b = appendRandomString(rng, b, walkKeys[rng.IntN(len(walkKeys))])
				ws()
				b = append(b, ':')
				value(d + 1)
				ws()
			}
			b = append(b, '}')
		default:
			b = append(b, '[')
			for i := range rng.IntN(5) {
				if i > 0 {
					b = append(b, ',')
				}
				value(d + 1)
				ws()
			}
			b = append(b, ']')
		}
	}
	value(depth)
	ws()
	return b
}

// appendRandomString appends s as a JSON string, some characters escaped
// (\uXXXX, surrogate pairs, short escapes) at random.
func appendRandomString(rng *rand.Rand, b []byte, s string) []byte {
	b = append(b, '"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b = append(b, '\\', byte(r))
		case r == '\n':
			b = append(b, `\n`...)
		case r == '\t' && rng.IntN(2) == 0:
			b = append(b, `\t`...)
		case r < ' ':
			b = append(b, []byte(`\u00`)...)
			b = append(b, "0123456789abcdef"[r>>4], "0123456789abcdef"[r&15])
		case r > 0xffff && rng.IntN(2) == 0:
			r -= 0x10000
			b = appendU4(appendU4(b, 0xd800+(r>>10)), 0xdc00+(r&0x3ff))
		case r < 0x10000 && rng.IntN(8) == 0:
			b = appendU4(b, r)
		case rng.IntN(40) == 0:
			b = appendU4(b, 0xd800+rune(rng.IntN(0x800))) // a lone or reversed surrogate
			b = append(b, string(r)...)
		default:
			b = append(b, string(r)...)
		}
	}
	return append(b, '"')
}

func appendU4(b []byte, r rune) []byte {
	const hex = "0123456789ABCDEF"
	return append(b, '\\', 'u', hex[r>>12&15], hex[r>>8&15], hex[r>>4&15], hex[r&15])
}

// damage changes doc at random: a byte changed, dropped or inserted, or
// the document cut short.
func damage(rng *rand.Rand, doc []byte) []byte {
	if len(doc) == 0 {
		return []byte{'{'}
	}
	i := rng.IntN(len(doc))
	switch rng.IntN(4) {
	case 0:
		doc[i] = `{}[],:"\ 0a-eE.u`[rng.IntN(16)]
	case 1:
		doc = append(doc[:i], doc[i+1:]...)
	case 2:
		doc = append(doc[:i], append([]byte{`{}[],:"\`[rng.IntN(8)]}, doc[i:]...)...)
	default:
		doc = doc[:i]
	}
	return doc
}

// findTexts are texts for the differential test of find: secrets of every
// rule, near misses, runs of random-looking characters, several lines.
func findTexts(rng *rand.Rand) string {
	pieces := append(append([]string{}, walkVals...),
		"password=", "DB_PASSWORD=", "token: ", "--password ", "-p", "mysql -u root -p", "sshpass -p ", "docker login -u bob -p ",
		"curl -u ", "bob:", "https://", "://:", "@host", "Authorization: Bearer ", "bearer ", " ", " ", "\n", "\n", "=", "==", ".", "/", "\"", "'",
		"AbCdEfGhIjKlMnOpQrStUvWxYz0123456789+/", "aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5zA7b", "h1:", "sha256-", "sk_live_51H8xQ2LkdIwHu7ixyzAbCdEf0123",
		"AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY", "glpat-xR4nD0mT0k3nV4lu3zzZ9", "-----BEGIN RSA PRIVATE KEY-----\n", "-----END RSA PRIVATE KEY-----",
		"xoxb-123456789012-abcdefghij", "sk-proj-abcdefghijklmnopqrstuvwx", "npm_", "hvs.", "password is ", "Pa55word9", "module-12 && go build ./...",
		"abc", "_", "task", "MY_TOKEN_PART=", "private_key", ":= ", "self.token", "load_key(path)", "None", "notsecret", "SG.", "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.",
		"3f2a9c1e8b7d6f5a4e3c2b1a0f9e8d7c", "550e8400-e29b-41d4-a716-446655440000", "Xk9mP2vL5nQ8wR4t")
	var b strings.Builder
	for range rng.IntN(12) {
		b.WriteString(pieces[rng.IntN(len(pieces))])
	}
	return b.String()
}

// find reports the spans the reference reports, on random texts, for
// every set, with and without the known values, first or all.
func TestFindMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1123, 5))
	n := 8000
	if testing.Short() || raceEnabled {
		n = 800
	}
	found := 0
	for range n {
		s := findTexts(rng)
		for _, set := range []Set{Set1, Set2, Set3} {
			for _, withKnown := range []bool{false, true} {
				for _, first := range []bool{false, true} {
					got, want := find(s, set, withKnown, first), refFind(s, set, withKnown, first)
					if !slices.Equal(got, want) {
						t.Fatalf("set %d known %v first %v: find(%q) = %v, reference %v", set, withKnown, first, s, got, want)
					}
					if len(got) > 0 {
						found++
					}
				}
			}
		}
	}
	if found < n*3/2 || found > n*11 {
		t.Fatalf("%d findings in %d texts × 12: the generator misses the cases", found, n)
	}
	t.Logf("%d findings in %d texts × 12", found, n)
}

// FuzzFind: on any text, find reports what the reference reports.
func FuzzFind(f *testing.F) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		f.Add(findTexts(rng))
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, set := range []Set{Set1, Set2, Set3} {
			for _, first := range []bool{false, true} {
				if got, want := find(s, set, true, first), refFind(s, set, true, first); !slices.Equal(got, want) {
					t.Fatalf("set %d first %v: find(%q) = %v, reference %v", set, first, s, got, want)
				}
			}
		}
	})
}
