package executor_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/nodetest"
)

// gluedE2E are provider tokens (fakes made for the test) a step prints
// glued to the text before them, as `printf abc; cat token` does.
var gluedE2E = []struct{ glue, token string }{
	{"abc", "ghp_Ab3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5"},
	{"123", "github_pat_11ABCDEFG0123456789_abcdefghijklmnop"},
	{"_", "glpat-xR4nD0mT0k3nV4lu3zzZ9"},
	{"abc", "sk_live_51H8xQ2LkdIwHu7ixyzAbCdEf0123"},
	{"x_", "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"},
	{"abc", "npm_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5"},
	{"key", "AKIAIOSFODNN7EXAMPLE"},
	{"abc", "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY"},
	{"abc", "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"},
	{"MSG", "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"},
	{"abc", "sk-proj-Ab3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW"},
	{"9", "hvs.CAESIJ1x7Y0qL3b2Zk9Rq2Lx7Tb4Wv8Ne1Hc"},
}

// A step prints provider tokens glued to text (the plan carries them only
// as base64, which the shell decodes), on stdout and stderr, some split
// across writes with a pause, and fails: no piece of any token is found
// in any file of the node's data directory (the ledger's and the run
// index's Pebble files, the outbox, the JetStream store with the logs and
// events streams), in the logs stream, or in the query answers.
func TestGluedTokensInNoSink(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node and runs a step for seconds")
	}
	var script strings.Builder
	for i, g := range gluedE2E {
		fd := ""
		if i%3 == 1 {
			fd = " >&2"
		}
		b64 := base64.StdEncoding.EncodeToString([]byte(g.token))
		if i%4 == 2 {
			// Split across writes with a pause longer than the runner's
			// idle flush: the glue and the first bytes go out first.
			half := len(b64) / 2 / 4 * 4
			fmt.Fprintf(&script, "      { printf '%s'; echo %s | base64 -d; sleep 0.4; echo %s | base64 -d; echo; }%s\n", g.glue, b64[:half], b64[half:], fd)
			continue
		}
		fmt.Fprintf(&script, "      { printf '%s'; echo %s | base64 -d; echo ' done'; }%s\n", g.glue, b64, fd)
	}
	// The last one without a line break, at the end of the output.
	last := gluedE2E[0]
	fmt.Fprintf(&script, "      printf 'tail%s'; echo %s | base64 -d; exit 3\n", last.glue, base64.StdEncoding.EncodeToString([]byte(last.token)))
	plan := "goal: print glued tokens\nsteps:\n  - id: glued\n    timeout: 60s\n    run: |\n" + script.String()
	goal := event.MustDraft(event.GoalSubmitted, event.NewID(), event.GoalSubmittedData{Goal: "e2e", PlanFile: plan})
	if err := envelope.CheckDraft(goal); err != nil {
		t.Fatalf("the plan itself is refused: %v", err)
	}

	dir := t.TempDir()
	tn := nodetest.Start(t, nodetest.Config(dir))
	stopped := false
	defer func() {
		if !stopped {
			tn.Stop(t)
		}
	}()
	run := tn.Submit(t, "glued", plan)
	r := tn.WaitRun(t, run, 90*time.Second)
	if r.Status != event.RunFailed {
		t.Fatalf("run %s: status %s, want failed", run, r.Status)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var seen strings.Builder
	answer, _ := json.Marshal(r)
	seen.Write(answer)
	tails := 0
	for l, err := range tn.API.AuditLines(ctx, api.AuditRequest{}) {
		if err != nil {
			t.Fatal(err)
		}
		seen.Write(l.Data)
		seen.WriteString(jwsClaims(t, l.JWS))
		if l.Type == string(event.TaskFinished) {
			var fin event.TaskFinishedData
			if err := json.Unmarshal(l.Data, &fin); err != nil {
				t.Fatal(err)
			}
			if strings.Count(fin.OutputTail, "[REDACTED:") < len(gluedE2E) || !strings.Contains(fin.OutputTail, "abc[REDACTED:github-token]") {
				t.Errorf("task.finished output tail: %q", fin.OutputTail)
			}
			t.Logf("output tail: %q", fin.OutputTail)
			tails++
		}
	}
	if tails != 1 {
		t.Fatalf("%d task.finished events, want 1", tails)
	}
	logs := logText(ctx, t, tn.JS, run)
	if strings.Count(logs, "[REDACTED:") < len(gluedE2E) {
		t.Errorf("the logs show too few redactions: %q", logs)
	}
	seen.WriteString(logs)
	// Every file the node wrote, after it stopped (Pebble's WAL and
	// tables, the outbox, JetStream's message blocks).
	tn.Stop(t)
	stopped = true
	files := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		for _, g := range gluedE2E {
			if p := tokenPiece(string(b), secretOf(g.token)); p != "" {
				rel, _ := filepath.Rel(dir, path)
				t.Errorf("%s holds %q of %q", rel, p, g.token)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 5 {
		t.Fatalf("%d files in the data directory", files)
	}
	all := seen.String()
	for _, g := range gluedE2E {
		if p := tokenPiece(all, secretOf(g.token)); p != "" {
			t.Errorf("%q of %q reached the ledger, the logs or the API", p, g.token)
		}
	}
}

// secretOf is the part of token no sink may show: a JWT's signature (its
// header and claims, base64 of {"alg":"HS256","typ":"JWT"}, occur in every
// signed message).
func secretOf(token string) string {
	if strings.HasPrefix(token, "eyJ") {
		return token[strings.LastIndexByte(token, '.')+1:]
	}
	return token
}

// tokenPiece returns a piece (12 bytes) of token that s holds, or "".
// Pieces rather than the whole token: a compressed table may copy part of
// a string from earlier bytes.
func tokenPiece(s, token string) string {
	const n = 12
	for i := 0; i+n <= len(token); i++ {
		if p := token[i : i+n]; strings.Contains(s, p) {
			return p
		}
	}
	return ""
}
