package memory_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/memory"
)

// Facts are judged like events: a secret in a fact is refused before it is
// published, and one folded anyway is stored redacted.
func TestFactsWithSecrets(t *testing.T) {
	facts := []struct{ key, value, secret string }{
		{"note", "password hunter2xyz", "hunter2xyz"},
		{"db", "mysql -u root -pS3cretPW", "S3cretPW"},
		{"DB_PASSWORD", "hunter2", "hunter2"},
		{"aws", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"},
		{"stripe", "sk_live_51H8xQ2LkdIwHu7ixyzAbCdEf0123", "sk_live_51H8xQ2LkdIwHu7ixyzAbCdEf0123"},
	}
	m := memory.New()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, f := range facts {
		err := memory.CheckFact(f.key, f.value)
		if !errors.Is(err, memory.ErrSecret) || strings.Contains(err.Error(), f.secret) {
			t.Fatalf("CheckFact(%s) = %v, want ErrSecret without the secret", f.key, err)
		}
		m.Fold(ev(event.MemoryPut, t0, event.MemoryPutData{Scope: "shared", Key: f.key, Value: f.value}))
		got, err := m.Get("shared", f.key, t0)
		if err != nil || strings.Contains(got.Value, f.secret) || !strings.Contains(got.Value, "[REDACTED:") {
			t.Fatalf("stored %s = %q, %v", f.key, got.Value, err)
		}
	}
	for _, ok := range [][2]string{{"deploy.target", "staging"}, {"DB_PASSWORD", "$DB_PASSWORD"}, {"note", "password reset on monday"}, {"commit", "3f2a9c1e8b7d6f5a4e3c2b1a0f9e8d7c6b5a4f3e"}} {
		if err := memory.CheckFact(ok[0], ok[1]); err != nil {
			t.Errorf("CheckFact(%s, %s) = %v", ok[0], ok[1], err)
		}
	}
}
