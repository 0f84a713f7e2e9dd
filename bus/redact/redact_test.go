package redact

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
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
		{"password=", "mysql password=hunter2 -h db", "mysql password=[REDACTED:secret-assignment] -h db"},
		{"PASSWORD env", "export DB_PASSWORD=s3cr3t", "export DB_PASSWORD=[REDACTED:secret-assignment]"},
		{"passwd colon", "passwd: letmein", "passwd: [REDACTED:secret-assignment]"},
		{"secret=", "client_secret=abc123&grant=x", "client_secret=[REDACTED:secret-assignment]&grant=x"},
		{"token=", "curl https://x/api?token=deadbeef", "curl https://x/api?token=[REDACTED:secret-assignment]"},
		{"api_key", "API_KEY=AbCdEf0123", "API_KEY=[REDACTED:secret-assignment]"},
		{"apikey", "apikey: zzzyyyxxx", "apikey: [REDACTED:secret-assignment]"},
		{"api-key header", "X-Api-Key: k-123456", "X-Api-Key: [REDACTED:secret-assignment]"},
		{"json quoted", `{"password": "hunter 2", "user": "bob"}`, `{"password": "[REDACTED:secret-assignment]", "user": "bob"}`},
		{"single quoted", `token='a b c'`, `token='[REDACTED:secret-assignment]'`},
		{"yaml", "db:\n  password: hunter2\n  host: db", "db:\n  password: [REDACTED:secret-assignment]\n  host: db"},
		{"empty value does not eat next line", "password:\nhost: db", "password:\nhost: db"},
		{"flag", "login --password hunter2 --user bob", "login --password [REDACTED:secret-flag] --user bob"},
		{"bearer header", "Authorization: Bearer eyJhbGciOi.JIUzI1.NiJ9", "Authorization: Bearer [REDACTED:authorization-header]"},
		{"basic header", "authorization: basic dXNlcjpwYXNz", "authorization: basic [REDACTED:authorization-header]"},
		{"bare bearer", `curl -H "X: bearer abcdefghijk123"`, `curl -H "X: bearer [REDACTED:bearer-token]"`},
		{"aws", "key AKIAIOSFODNN7EXAMPLE in use", "key [REDACTED:aws-access-key-id] in use"},
		{"aws temp", "ASIAIOSFODNN7EXAMPLE", "[REDACTED:aws-access-key-id]"},
		{"github", "push with ghp_abcdefghijklmnopqrstuvwxyz0123456789 now", "push with [REDACTED:github-token] now"},
		{"github pat", "github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "[REDACTED:github-token]"},
		{"openai", "OPENAI=sk-proj-abcdefghijklmnopqrstuvwx", "OPENAI=[REDACTED:sk-api-key]"},
		{"openai bare", "using sk-abcdefghijklmnopqrstuvwxyz0123", "using [REDACTED:sk-api-key]"},
		{"slack", "xoxb-123456789012-abcdefghij", "[REDACTED:slack-token]"},
		{"url creds", "git clone https://bob:hunter2@git.example.com/r.git", "git clone https://bob:[REDACTED:url-userinfo]@git.example.com/r.git"},
		{"postgres url", "postgres://app:p4ss@db:5432/app", "postgres://app:[REDACTED:url-userinfo]@db:5432/app"},
		{"url without creds", "see https://example.com:8443/path@x", "see https://example.com:8443/path@x"},
		{"private key", "key:\n" + pemKey + "\ndone", "key:\n[REDACTED:private-key]\ndone"},
		{"unterminated private key", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\nmore", "[REDACTED:private-key]"},
		{"public key kept", "-----BEGIN PUBLIC KEY-----\nMFkw\n-----END PUBLIC KEY-----", "-----BEGIN PUBLIC KEY-----\nMFkw\n-----END PUBLIC KEY-----"},
		{"several", "token=a password=b", "token=[REDACTED:secret-assignment] password=[REDACTED:secret-assignment]"},
		{"old label kept", "password=[REDACTED]", "password=[REDACTED]"},
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

// A PEM private key body printed without its BEGIN line (tail -n +2, a
// base64 field) is a key all the same.
var pemBody = strings.Join([]string{
	"MIIEowIBAAKCAQEAyqk8V0V8f3cZ2m5m1uZ4p9J3k7Q2wX1e0b6Hn9sT4yLkVd2a",
	"R7tGq1Pz6nF0cW3mY8eXo5Jb2KlA9sD4fH6gJ1kL3zX8cV5bN7mQ2wE4rT6yU8iO",
	"p0aS2dF4gH6jK8lZ1xC3vB5nM7qW9eR1tY3uI5oP7aS9dF1gH3jK5lZ7xC9vB1nM",
	"-----END RSA PRIVATE KEY-----",
}, "\n")

// planted are secrets of every shape the rules know, each with the part
// that must never survive redaction. They are fakes made for the test.
var planted = []struct{ name, text, secret string }{
	{"stripe", "STRIPE=sk_live_51H8xQ2LkdIwHu7ixyzAbCdEf0123", "sk_live_51H8xQ2LkdIwHu7ixyzAbCdEf0123"},
	{"stripe restricted", "using rk_test_4eC39HqLyjWDarjtT1zdp7dc now", "rk_test_4eC39HqLyjWDarjtT1zdp7dc"},
	{"google", "maps key AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY ok", "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY"},
	{"gitlab", "git push https://gitlab.com glpat-xR4nD0mT0k3nV4lu3zzZ9", "glpat-xR4nD0mT0k3nV4lu3zzZ9"},
	{"npm", "//registry.npmjs.org/:_authToken npm_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5", "npm_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5"},
	{"jwt", "cookie eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c set", "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"},
	{"jwt payload", "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c", "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIn0"},
	{"bare aws secret", "aws configure set: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"},
	{"bare aws secret alone", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"},
	{"mysql -p", "mysql -u root -pS3cretPW -h db app", "S3cretPW"},
	{"mysqldump -p quoted", "mysqldump -uroot -p'My Pw 9' app > dump.sql", "My Pw 9"},
	{"sshpass", "sshpass -p 'Pa55word!' ssh deploy@host", "Pa55word!"},
	{"sshpass attached", "sshpass -pPa55word ssh deploy@host", "Pa55word"},
	{"docker login", "docker login -u bob -p dckrPW123 registry.example.com", "dckrPW123"},
	{"podman login", "podman login --username bob -p hunter22 quay.io", "hunter22"},
	{"curl -u", "curl -u bob:curlPW99 https://api.example.com/v1", "curlPW99"},
	{"curl --user", `curl --user "bob:curl pw9" https://x`, "pw9"},
	{"redis-cli", "redis-cli -h cache -a r3d1sPW ping", "r3d1sPW"},
	{"openssl", "openssl pkcs12 -export -passout pass:expPW77 -out a.p12", "expPW77"},
	{"MYSQL_PWD", "MYSQL_PWD=myPWvalue1 mysql -u root", "myPWvalue1"},
	{"SMTP_PASS", "SMTP_PASS: 'smtp pass 1'", "smtp pass 1"},
	{"http-password flag", "wget --http-password=wg3tPW https://x", "wg3tPW"},
	{"url password only", "redis://:r3disPW@cache:6379/0", "r3disPW"},
	{"password phrase", "password hunter2xyz", "hunter2xyz"},
	{"password is", "the admin password is S3cr3t! now", "S3cr3t!"},
	{"pem body", "key:\n" + pemBody + "\nnext", "R7tGq1Pz6nF0cW3mY8eXo5Jb2KlA9sD4fH6gJ1kL3zX8cV5bN7mQ2wE4rT6yU8iO"},
	{"pem body first line", pemBody, "MIIEowIBAAKCAQEAyqk8V0V8f3cZ2m5m1uZ4p9J3k7Q2wX1e0b6Hn9sT4yLkVd2a"},
	{"pem body middle to end", strings.Join(strings.Split(pemBody, "\n")[1:], "\n"), "R7tGq1Pz6nF0cW3mY8eXo5Jb2KlA9sD4fH6gJ1kL3zX8cV5bN7mQ2wE4rT6yU8iO"},
	{"openssh body", "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtz", "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtz"},
	{"high entropy assignment", "SESSION_COOKIE=Zk9Rq2Lx7Tb4Wv8Ne1Hc5Ys3Pa6Dm0Gu", "Zk9Rq2Lx7Tb4Wv8Ne1Hc5Ys3Pa6Dm0Gu"},
	{"high entropy json", `{"signature": "Zk9Rq2Lx7Tb4Wv8Ne1Hc5Ys3Pa6Dm0Gu"}`, "Zk9Rq2Lx7Tb4Wv8Ne1Hc5Ys3Pa6Dm0Gu"},
	{"vault", "VAULT hvs.CAESIJ1x7Y0qL3b2Zk9Rq2Lx7Tb4Wv8Ne1Hc", "hvs.CAESIJ1x7Y0qL3b2Zk9Rq2Lx7Tb4Wv8Ne1Hc"},
	{"docker hub pat", "dckr_pat_2b3e36beeb386dfdaacb9b46004", "dckr_pat_2b3e36beeb386dfdaacb9b46004"},
	{"slack webhook", "https://hooks.slack.com/services/T0ABCDEF1/B0ABCDEF2/abcdefghijklmnopqrstuvwx", "abcdefghijklmnopqrstuvwx"},
}

func TestPlantedSecrets(t *testing.T) {
	for _, p := range planted {
		t.Run(p.name, func(t *testing.T) {
			got := Redact(p.text)
			if strings.Contains(got, p.secret) {
				t.Fatalf("Redact(%q) = %q: the secret survived", p.text, got)
			}
			if !strings.Contains(got, "[REDACTED:") {
				t.Fatalf("Redact(%q) = %q: no label", p.text, got)
			}
			if kind, ok := Find(p.text); !ok {
				t.Errorf("Find(%q) found nothing", p.text)
			} else if strings.Contains(kind, p.secret) {
				t.Errorf("Find names the secret: %q", kind)
			}
			if ContainsSecret(got) {
				t.Errorf("ContainsSecret(%q) after redaction", got)
			}
			if Redact(got) != got {
				t.Errorf("not idempotent: %q → %q", got, Redact(got))
			}
		})
	}
}

// Ordinary output must pass untouched: hashes, UUIDs, base64 of text in
// examples, paths, digests, version strings, prose about passwords.
func TestNoFalsePositives(t *testing.T) {
	for _, s := range []string{
		"commit 3f2a9c1e8b7d6f5a4e3c2b1a0f9e8d7c6b5a4f3e",
		"Merge: 3f2a9c1 8b7d6f5\nAuthor: Bob <bob@example.com>",
		"HEAD is now at 9fceb02d0ae598e95dc970b74767f19372d61af8 fix build",
		"sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		"run 0190a3c2-7b1e-7c3d-9f00-1a2b3c4d5e6f started",
		"request_id=550e8400-e29b-41d4-a716-446655440000 status=200",
		"echo aGVsbG8gd29ybGQsIHRoaXMgaXMganVzdCBhbiBleGFtcGxl | base64 -d",
		"data: SGVsbG8gV29ybGQgZnJvbSB0aGUgZG9jcyBleGFtcGxlIQ==",
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"GOFLAGS=-mod=mod GOPROXY=https://proxy.golang.org,direct",
		"go: downloading github.com/nats-io/nats.go v1.37.0",
		"github.com/agentic-dev/agentic v0.0.0-20261122230324-5b11f1e3d2c1",
		"ok  \tgithub.com/agentic-dev/agentic/bus/redact\t0.412s",
		"password reset required for user bob",
		"Enter password: ",
		"the password was changed yesterday",
		"psql --no-password -h db app",
		"mysql -u root -p app",
		"mysql -u root -p$MYSQL_PW app",
		"sshpass -p \"$SSH_PW\" ssh host",
		"curl -u \"$USER:$TOKEN\" https://x",
		"docker login --password-stdin -u bob",
		"max_tokens: 500",
		`{"llm_tokens":200000,"goal":"rotate the api token"}`,
		"ClassName=MyApplicationConfigurationLoader",
		"image=registry.example.com/team/app:1.4.2",
		"-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBaMQswCQYDVQQGEwJJ\n-----END CERTIFICATE-----",
		"Downloading https://files.example.com/pkg/v2/archive.tar.gz 45%",
		"npm notice created a lockfile as package-lock.json",
		"key=value",
		"[INFO] compiled 120 files in 3.2s",
		"github.com/nats-io/nats.go v1.37.0 h1:Ab3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5zA7bC9d=",
		`"Sum": "h1:Ab3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5zA7bC9d="`,
		`"integrity": "sha512-Ab3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5zA7bC9dAb3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5zA7bC9d=="`,
		`ETag: "Ab3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5"`,
	} {
		if kind, ok := Find(s); ok {
			t.Errorf("Find(%q) = %s, want no secret", s, kind)
		}
		if got := Redact(s); got != s {
			t.Errorf("Redact(%q) = %q, want unchanged", s, got)
		}
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

func TestKnownValues(t *testing.T) {
	const v = "kn0wn-Sekrit-v4lue"
	if _, ok := Find("connect " + v); ok {
		t.Fatal("found before it was remembered")
	}
	RememberEnv([]string{"DEPLOY_TOKEN=" + v, "HOME=/home/bob", "PWD=/srv/app", "SHORT_SECRET=abc", "DEBUG_PASSWORD=true", "PG_PASSWORD=postgres"})
	got := Redact("connect " + v + " and " + v)
	if want := "connect [REDACTED:known:DEPLOY_TOKEN] and [REDACTED:known:DEPLOY_TOKEN]"; got != want {
		t.Fatalf("Redact = %q, want %q", got, want)
	}
	for _, s := range []string{"cd /srv/app", "home is /home/bob", "abc", "true", "connect to postgres"} {
		if Redact(s) != s {
			t.Errorf("Redact(%q) = %q: a value that is not secret was remembered", s, Redact(s))
		}
	}
	if kind, ok := Find(v); !ok || kind != "known:DEPLOY_TOKEN" {
		t.Errorf("Find = %q, %v", kind, ok)
	}
	// Receivers judge by the set alone: known values are the signer's.
	if _, ok := Latest.Find(v); ok {
		t.Error("Set.Find judged a known value")
	}
	if !SecretName("MYSQL_PWD") || SecretName("PWD") || SecretName("OLDPWD") || SecretName("HOME") {
		t.Error("SecretName misjudges")
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
		{`{"run":"\u0041KIAIOSFODNN7EXAMPLE"}`, true},
		{`not json password=hunter2`, true},
	} {
		if _, got := FindJSON([]byte(c.json)); got != c.secret {
			t.Errorf("FindJSON(%s) = %v, want %v", c.json, got, c.secret)
		}
	}
}

// Scan names the rule and the field, never the secret.
func TestScanNamesRuleAndPath(t *testing.T) {
	f, ok := Scan([]byte(`{"step":"s1","plan":{"steps":[{"run":"ok"},{"run":"mysql -pS3cretPW db"}]}}`))
	if !ok || f.Path != "plan.steps[1].run" || f.Rule != "cli-password" {
		t.Fatalf("Scan = %+v, %v", f, ok)
	}
	f, ok = Scan([]byte(`{"env":{"MYSQL_PWD":"myPWvalue1"}}`))
	if !ok || f.Path != "env.MYSQL_PWD" || strings.Contains(f.Kind+f.Rule+f.Path, "myPWvalue1") {
		t.Fatalf("Scan = %+v, %v", f, ok)
	}
}

func TestRedactJSON(t *testing.T) {
	in := `{"step":"s1", "error":"exit 1: mysql -pS3cretPW", "env":{"MYSQL_PWD":"myPWvalue1","HOME":"/root"}, "n":12.50, "list":["ok","AKIAIOSFODNN7EXAMPLE"], "html":"<a&b>"}`
	out, changed, err := RedactJSON([]byte(in))
	if err != nil || !changed {
		t.Fatalf("RedactJSON: %v, changed %v", err, changed)
	}
	want := `{"step":"s1", "error":"exit 1: mysql -p[REDACTED:cli-password]", "env":{"MYSQL_PWD":"[REDACTED:secret-assignment]","HOME":"/root"}, "n":12.50, "list":["ok","[REDACTED:aws-access-key-id]"], "html":"<a&b>"}`
	if string(out) != want {
		t.Fatalf("RedactJSON\n got %s\nwant %s", out, want)
	}
	if _, ok := Scan(out); ok {
		t.Errorf("Scan finds a secret after RedactJSON: %s", out)
	}
	clean := []byte(`{"step":"s1","status":"succeeded"}`)
	if out, changed, err := RedactJSON(clean); err != nil || changed || string(out) != string(clean) {
		t.Errorf("clean payload: %s %v %v", out, changed, err)
	}
	if out, changed, err := RedactJSON(nil); err != nil || changed || out != nil {
		t.Errorf("no payload: %s %v %v", out, changed, err)
	}
	if _, _, err := RedactJSON([]byte(`{"password": "x"`)); err == nil {
		t.Error("no error for a payload that is not JSON")
	}
}

// fingerprint sums the names and patterns of a set's rules, in order.
func fingerprint(set Set) string {
	h := sha256.New()
	for _, r := range set.rules() {
		fmt.Fprintf(h, "%s\x00%s\x00", r.name, r.id)
		if r.re != nil {
			fmt.Fprintf(h, "%s\x00", r.re)
		}
		if r.runs != nil {
			fmt.Fprintf(h, "%d %d %v\x00", r.runs.min, r.runs.max, r.runs.assign)
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// Released sets never change; set 2 holds every pattern of set 1, in the
// same order; set 3 holds every pattern of set 2 but those it replaces,
// each of which it holds a form of under the same name.
func TestReleasedSetsKeepTheirPatterns(t *testing.T) {
	for set, want := range map[Set]string{Set1: "cb488478069d7d48", Set2: "18680bbbc7e06d74"} {
		if got := fingerprint(set); got != want {
			t.Errorf("set %d changed: fingerprint %s, released %s", set, got, want)
		}
	}
	older, newer := Set1.rules(), Set2.rules()
	for i := range older {
		if older[i].name != newer[i].name || older[i].re.String() != newer[i].re.String() {
			t.Fatalf("set 2 changes pattern %q of set 1", older[i].name)
		}
	}
	var kept2, kept3 []string
	for _, r := range Set2.rules() {
		if !slices.Contains(set3Replaces, r.name) {
			kept2 = append(kept2, r.name+" "+pattern(r))
		}
	}
	for _, r := range Set3.rules() {
		if !slices.Contains(set3Replaces, r.name) {
			kept3 = append(kept3, r.name+" "+pattern(r))
		}
	}
	if !slices.Equal(kept2, kept3) {
		t.Errorf("set 3 changes patterns of set 2 it does not replace:\n%q\n%q", kept2, kept3)
	}
	if len(kept3)+len(set3) != len(Set3.rules()) {
		t.Errorf("set 3 has %d rules, want %d kept and %d its own", len(Set3.rules()), len(kept3), len(set3))
	}
	for _, n := range set3Replaces {
		var in2, in3 bool
		for _, r := range Set2.rules() {
			in2 = in2 || r.name == n
		}
		for _, r := range set3 {
			in3 = in3 || r.name == n
		}
		if !in2 || !in3 {
			t.Errorf("set 3 replaces %q: in set 2 %v, a form in set 3 %v", n, in2, in3)
		}
	}
	if !Set1.Known() || !Set2.Known() || !Set3.Known() || Set(0).Known() || (Latest + 1).Known() {
		t.Fatal("Known disagrees with the sets")
	}
	leak := `{"cmd":"mysql --password=hunter2"}`
	k1, ok1 := Set1.FindJSON([]byte(leak))
	kl, okl := (Latest + 1).FindJSON([]byte(leak))
	k, ok := FindJSON([]byte(leak))
	if !ok1 || !okl || !ok || k1 != k || kl != k {
		t.Fatalf("set 1 %q %v, unknown set %q %v, latest %q %v", k1, ok1, kl, okl, k, ok)
	}
	// What set 2 adds, set 1 does not judge.
	if _, ok := Set1.Find("mysql -pS3cretPW"); ok {
		t.Error("set 1 judges a set-2 pattern")
	}
	if _, ok := Set2.Find("mysql -pS3cretPW"); !ok {
		t.Error("set 2 misses its own pattern")
	}
}

// pattern is a rule's regular expression, or its runs.
func pattern(r rule) string {
	if r.re != nil {
		return r.re.String()
	}
	return fmt.Sprintf("runs %d-%d assign %v", r.runs.min, r.runs.max, r.runs.assign)
}
