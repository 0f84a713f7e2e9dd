package natsauth

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"
)

// TestParseDecoratedIsTheLibrarys: parseDecorated gives what
// jwt.ParseDecoratedJWT and jwt.ParseDecoratedNKey give — the JWT, the
// key or the same error — for agentic's creds files, nsc's, and files
// shaped otherwise (CRLF, no decoration, a bare seed line, blocks in
// another order, garbage).
func TestParseDecoratedIsTheLibrarys(t *testing.T) {
	root, err := trust.NewRoot()
	if err != nil {
		t.Fatal(err)
	}
	auth, err := NewAuthority(root)
	if err != nil {
		t.Fatal(err)
	}
	id, err := trust.NewIdentity(root, "op", trust.KindOperator, []string{trust.OperatorRole}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "op.creds")
	if err := auth.WriteCreds(path, root, id); err != nil {
		t.Fatal(err)
	}
	agentic, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	u, err := parseCreds(path, agentic)
	if err != nil {
		t.Fatal(err)
	}
	seed, err := u.Key.Seed()
	if err != nil {
		t.Fatal(err)
	}
	nsc, err := jwt.FormatUserConfig(u.JWT, seed)
	if err != nil {
		t.Fatal(err)
	}
	account, _ := nkeys.CreateAccount()
	accountSeed, _ := account.Seed()
	inputs := map[string][]byte{
		"agentic":        agentic,
		"nsc":            nsc,
		"crlf":           bytes.ReplaceAll(nsc, []byte("\n"), []byte("\r\n")),
		"bare jwt":       []byte(u.JWT + "\n"),
		"bare seed line": []byte("# a key\n  " + string(seed) + "\n"),
		"jwt only":       nsc[:bytes.Index(nsc, []byte("*****"))],
		"seed first":     append(bytes.Clone(nsc[bytes.Index(nsc, []byte("-----BEGIN USER NKEY")):]), nsc[:bytes.Index(nsc, []byte("*****"))]...),
		"account seed":   []byte(strings.Replace(string(nsc), string(seed), string(accountSeed), 1)),
		"not a seed":     []byte(strings.Replace(string(nsc), string(seed), "XX"+string(seed[2:]), 1)),
		"bad seed":       []byte(strings.Replace(string(nsc), string(seed), string(seed[:20]), 1)),
		"garbage":        []byte("not a creds file\n---\n"),
		"empty":          nil,
	}
	for name, b := range inputs {
		wantJWT, _ := jwt.ParseDecoratedJWT(b)
		wantKey, wantErr := jwt.ParseDecoratedNKey(b)
		gotJWT, gotKey, gotErr := parseDecorated(b)
		if gotJWT != wantJWT {
			t.Errorf("%s: JWT %q, the library's %q", name, gotJWT, wantJWT)
		}
		if (gotErr == nil) != (wantErr == nil) || (gotErr != nil && gotErr.Error() != wantErr.Error()) {
			t.Errorf("%s: key error %v, the library's %v", name, gotErr, wantErr)
			continue
		}
		if wantKey != nil {
			w, _ := wantKey.Seed()
			g, _ := gotKey.Seed()
			if !bytes.Equal(w, g) {
				t.Errorf("%s: key %s, the library's %s", name, g, w)
			}
		}
	}
}

// BenchmarkParseCreds: finding the NATS user of an agentic creds file, as
// every agentctl invocation does at its connection — a scan of its lines
// up to the second block — against the library's two regular-expression
// scans of the whole file.
func BenchmarkParseCreds(b *testing.B) {
	root, _ := trust.NewRoot()
	auth, _ := NewAuthority(root)
	id, _ := trust.NewIdentity(root, "op", trust.KindOperator, []string{trust.OperatorRole}, time.Hour)
	path := filepath.Join(b.TempDir(), "op.creds")
	if err := auth.WriteCreds(path, root, id); err != nil {
		b.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	b.Run("lines", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := parseDecorated(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("library", func(b *testing.B) {
		for b.Loop() {
			_, _ = jwt.ParseDecoratedJWT(raw)
			if _, err := jwt.ParseDecoratedNKey(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// FuzzParseDecorated: for any input, parseDecorated gives what the
// library's two functions give (go test -fuzz FuzzParseDecorated).
func FuzzParseDecorated(f *testing.F) {
	for _, s := range []string{
		"-----BEGIN NATS USER JWT-----\neyJ0.eyJ1.c2ln\n------END NATS USER JWT------\n\n-----BEGIN USER NKEY SEED-----\nSUAIO3FHUX5PNV2LQIIP7TZ3N4L7TX3W53MQGEIVYFIGA635OZCKEYHFLM\n------END USER NKEY SEED------\n",
		"---a---\r\ntok\r\n------\r\n",
		"x ------\ntok.en=\n------",
		"  \n\t-----\nabc\n------\n---x---\nSUAB\n---y---",
		"-----\n------\nab\n------\n",
		"------\n------\n------\n------\n",
		"--- ---\nt\n---\n",
		"---\r\r\nt\n------\n",
		"\xff---x---\nt\n------\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		wantJWT, _ := jwt.ParseDecoratedJWT(b)
		wantKey, wantErr := jwt.ParseDecoratedNKey(b)
		gotJWT, gotKey, gotErr := parseDecorated(b)
		if gotJWT != wantJWT {
			t.Fatalf("JWT %q, the library's %q", gotJWT, wantJWT)
		}
		if (gotErr == nil) != (wantErr == nil) || (gotErr != nil && gotErr.Error() != wantErr.Error()) {
			t.Fatalf("key error %v, the library's %v", gotErr, wantErr)
		}
		if wantKey != nil {
			w, _ := wantKey.Seed()
			g, _ := gotKey.Seed()
			if !bytes.Equal(w, g) {
				t.Fatalf("key %s, the library's %s", g, w)
			}
		}
	})
}
