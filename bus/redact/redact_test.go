package redact

import (
	"strings"
	"testing"
)

const pemKey = `-----BEGIN RSA PRIVATE KEY-----
MIIEowIBAAKCAQEAuQ8aeqn3u2l1
Zm9vYmFyYmF6cXV4cXV1eHF1dXo=
-----END RSA PRIVATE KEY-----`

func TestRedact(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain text untouched", "building 3 targets; all tests passed", "building 3 targets; all tests passed"},
		{"password=", "mysql password=hunter2 -h db", "mysql password=[REDACTED] -h db"},
		{"PASSWORD env", "export DB_PASSWORD=s3cr3t", "export DB_PASSWORD=[REDACTED]"},
		{"passwd colon", "passwd: letmein", "passwd: [REDACTED]"},
		{"secret=", "client_secret=abc123&grant=x", "client_secret=[REDACTED]&grant=x"},
		{"token=", "curl https://x/api?token=deadbeef", "curl https://x/api?token=[REDACTED]"},
		{"api_key", "API_KEY=AbCdEf0123", "API_KEY=[REDACTED]"},
		{"apikey", "apikey: zzzyyyxxx", "apikey: [REDACTED]"},
		{"api-key header", "X-Api-Key: k-123456", "X-Api-Key: [REDACTED]"},
		{"json quoted", `{"password": "hunter 2", "user": "bob"}`, `{"password": "[REDACTED]", "user": "bob"}`},
		{"single quoted", `token='a b c'`, `token='[REDACTED]'`},
		{"yaml", "db:\n  password: hunter2\n  host: db", "db:\n  password: [REDACTED]\n  host: db"},
		{"empty value does not eat next line", "password:\nhost: db", "password:\nhost: db"},
		{"flag", "login --password hunter2 --user bob", "login --password [REDACTED] --user bob"},
		{"bearer header", "Authorization: Bearer eyJhbGciOi.JIUzI1.NiJ9", "Authorization: Bearer [REDACTED]"},
		{"basic header", "authorization: basic dXNlcjpwYXNz", "authorization: basic [REDACTED]"},
		{"bare bearer", `curl -H "X: bearer abcdefghijk123"`, `curl -H "X: bearer [REDACTED]"`},
		{"aws", "key AKIAIOSFODNN7EXAMPLE in use", "key [REDACTED] in use"},
		{"aws temp", "ASIAIOSFODNN7EXAMPLE", "[REDACTED]"},
		{"github", "push with ghp_abcdefghijklmnopqrstuvwxyz0123456789 now", "push with [REDACTED] now"},
		{"github pat", "github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "[REDACTED]"},
		{"openai", "OPENAI=sk-proj-abcdefghijklmnopqrstuvwx", "OPENAI=[REDACTED]"},
		{"openai bare", "using sk-abcdefghijklmnopqrstuvwxyz0123", "using [REDACTED]"},
		{"slack", "xoxb-123456789012-abcdefghij", "[REDACTED]"},
		{"url creds", "git clone https://bob:hunter2@git.example.com/r.git", "git clone https://bob:[REDACTED]@git.example.com/r.git"},
		{"postgres url", "postgres://app:p4ss@db:5432/app", "postgres://app:[REDACTED]@db:5432/app"},
		{"url without creds", "see https://example.com:8443/path@x", "see https://example.com:8443/path@x"},
		{"private key", "key:\n" + pemKey + "\ndone", "key:\n[REDACTED]\ndone"},
		{"unterminated private key", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\nmore", "[REDACTED]"},
		{"public key kept", "-----BEGIN PUBLIC KEY-----\nMFkw\n-----END PUBLIC KEY-----", "-----BEGIN PUBLIC KEY-----\nMFkw\n-----END PUBLIC KEY-----"},
		{"several", "token=a password=b", "token=[REDACTED] password=[REDACTED]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Redact(tc.in)
			if got != tc.want {
				t.Fatalf("Redact(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
			if again := Redact(got); again != got {
				t.Errorf("Redact is not idempotent: %q → %q", got, again)
			}
			if ContainsSecret(got) {
				t.Errorf("ContainsSecret(%q) = true after redaction", got)
			}
			if changed := tc.in != tc.want; ContainsSecret(tc.in) != changed {
				t.Errorf("ContainsSecret(%q) = %v, want %v", tc.in, !changed, changed)
			}
		})
	}
}

// The stream redactor must catch secrets split across reads and drop the
// body of a private key delivered in pieces.
func BenchmarkRedactClean(b *testing.B) {
	line := strings.Repeat("compiling module foo/bar with 12 files, cache hit\n", 600)
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		Redact(line)
	}
}

func TestHarmlessValuesAreNotSecrets(t *testing.T) {
	for _, s := range []string{
		`mysql --password $DB_PASSWORD`,
		`export PGPASSWORD=${DB_PASSWORD}`,
		`curl -H "X-Api-Key: $API_KEY" https://example.com`,
		`max_tokens: 500`,
		`{"llm_tokens":200000}`,
		`{"run":"echo password=$PW"}`,
		`{"run":"echo \"token=${TOKEN}\""}`,
	} {
		if kind, ok := Find(s); ok {
			t.Errorf("Find(%q) = %s, want no secret", s, kind)
		}
		if got := Redact(s); got != s {
			t.Errorf("Redact(%q) = %q, want unchanged", s, got)
		}
	}
	for _, s := range []string{
		`{"run":"mysql --password=hunter2"}`,
		`{"run":"curl -H \"Authorization: Bearer abcdefgh12345678\""}`,
		`{"env":{"GITHUB_TOKEN":"ghp_abcdefghijklmnopqrstuvwxyz0123456789"}}`,
	} {
		if _, ok := Find(s); !ok {
			t.Errorf("Find(%q) found no secret", s)
		}
	}
}

func TestFindJSON(t *testing.T) {
	for _, c := range []struct {
		json   string
		secret bool
	}{
		{`{"plan_file":"steps:\n  - run: mysql --password=$DB_PASSWORD\n"}`, false},
		{`{"plan_file":"steps:\n  - run: mysql --password=hunter2\n"}`, true},
		{`{"env":{"DB_PASSWORD":"$DB_PASSWORD"}}`, false},
		{`{"env":{"DB_PASSWORD":"hunter2"}}`, true},
		{`{"steps":[{"run":"echo ok"},{"env":{"GH":"ghp_abcdefghijklmnopqrstuvwxyz0123456789"}}]}`, true},
		{`{"llm_tokens":200000,"goal":"rotate the api token"}`, false},
		{`not json password=hunter2`, true},
	} {
		if _, got := FindJSON([]byte(c.json)); got != c.secret {
			t.Errorf("FindJSON(%s) = %v, want %v", c.json, got, c.secret)
		}
	}
}

// Sets only grow: every pattern of set n is in set n+1, in the same order,
// so a payload that a newer set passes passes every older set.
func TestSetsOnlyGrow(t *testing.T) {
	for n := Set1; n < Latest; n++ {
		older, newer := n.rules(), (n + 1).rules()
		if len(newer) < len(older) {
			t.Fatalf("set %d has fewer patterns than set %d", n+1, n)
		}
		for i := range older {
			if older[i].name != newer[i].name || older[i].re.String() != newer[i].re.String() {
				t.Fatalf("set %d changes pattern %q of set %d", n+1, older[i].name, n)
			}
		}
	}
	if !Set1.Known() || Set(0).Known() || (Latest + 1).Known() {
		t.Fatal("Known disagrees with the sets")
	}
	leak := `{"cmd":"mysql --password=hunter2"}`
	k1, ok1 := Set1.FindJSON([]byte(leak))
	kl, okl := (Latest + 1).FindJSON([]byte(leak))
	k, ok := FindJSON([]byte(leak))
	if !ok1 || !okl || !ok || k1 != k || kl != k {
		t.Fatalf("set 1 %q %v, unknown set %q %v, latest %q %v", k1, ok1, kl, okl, k, ok)
	}
}
