package executor_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/redact"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/nodetest"
	"github.com/nats-io/nats.go/jetstream"
)

// e2eSecrets are printed by a step in two pieces with a pause longer than
// the runner's idle flush between them; the plan holds only the pieces
// (the whole would be refused when the goal is signed; printf's escapes,
// \075 for "=" and \163 for "s", hide the context that makes a piece a
// secret).
var e2eSecrets = []struct{ first, rest, secret string }{
	{"STRIPE=sk_live_51H8", "xQ2LkdIwHu7ixyzAbCdEf0123", "sk_live_51H8xQ2LkdIwHu7ixyzAbCdEf0123"},
	{"maps AIzaSyD-9tSr", "ke72PouQMnMX-a7eZSW0jkFMBWY", "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY"},
	{"glpat-xR4n", "D0mT0k3nV4lu3zzZ9", "glpat-xR4nD0mT0k3nV4lu3zzZ9"},
	{"npm_aB3dE5fG7", "hI9jK1lM3nO5pQ7rS9tU1vW3xY5", "npm_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5"},
	{"jwt eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIi", "OiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c", "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"},
	{"aws wJalrXUtnFEMI/K7M", "DENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"},
	{`my\163ql -u root -pS3c`, "retPW -h db", "S3cretPW"},
	{`ssh\160ass -p Pa5`, "5word9 ssh host", "Pa55word9"},
	{`dock\145r login -u bob -p dck`, "rPW123 reg.example.com", "dckrPW123"},
	{`cur\154 -u bob:cur`, "lPW99 https://x", "curlPW99"},
	{`MYSQL_PWD\075`, "myPWvalue1 mysql", "myPWvalue1"},
	{"deploy with kn0wn-Se", "krit-e2e-v4lue", "kn0wn-Sekrit-e2e-v4lue"},
	{"MIIEowIBAAKCAQEAyqk8V0V8f3cZ2m5m1uZ4p9J", "3k7Q2wX1e0b6Hn9sT4yLkVd2a", "MIIEowIBAAKCAQEAyqk8V0V8f3cZ2m5m1uZ4p9J3k7Q2wX1e0b6Hn9sT4yLkVd2a"},
}

// A step prints planted secrets, split across writes, on stdout and
// stderr, and fails: none of them appears verbatim in the ledger (payloads
// and signed messages), the logs stream or the query answers.
func TestPlantedSecretsNeverLeaveTheNode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node and runs a step for seconds")
	}
	// A secret this process knows by value (as a configured secret).
	redact.Remember("E2E_DEPLOY_TOKEN", "kn0wn-Sekrit-e2e-v4lue")

	var script strings.Builder
	for i, s := range e2eSecrets {
		fd := ""
		if i%2 == 1 {
			fd = " >&2"
		}
		// The first piece is printf's format, so \075 stands for "=".
		fmt.Fprintf(&script, "      printf '%s'%s; sleep 0.3; printf '%%s\\n' '%s'%s\n", s.first, fd, s.rest, fd)
	}
	script.WriteString("      printf 'fatal: ssh\\160ass -p Pa55word9\\n' >&2; exit 3\n")
	plan := "goal: print planted secrets\nsteps:\n  - id: leak\n    timeout: 60s\n    run: |\n" + script.String()
	goal := event.MustDraft(event.GoalSubmitted, event.NewID(), event.GoalSubmittedData{Goal: "e2e", PlanFile: plan})
	for _, l := range strings.Split(plan, "\n") {
		if kind, ok := redact.Find(l); ok {
			t.Logf("plan line %q: %s", l, kind)
		}
	}
	if err := envelope.CheckDraft(goal); err != nil {
		t.Fatalf("the plan itself is refused (a piece is a secret on its own): %v", err)
	}

	tn := nodetest.Start(t, nodetest.Config(t.TempDir()))
	defer tn.Stop(t)
	run := tn.Submit(t, "planted", plan)
	r := tn.WaitRun(t, run, 90*time.Second)
	if r.Status != event.RunFailed {
		t.Fatalf("run %s: status %s, want failed", run, r.Status)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var seen strings.Builder
	// The query answers.
	answer, _ := json.Marshal(r)
	seen.Write(answer)
	// The ledger: every payload and the signed message it came in.
	lines, tails := 0, 0
	for l, err := range tn.API.AuditLines(ctx, api.AuditRequest{}) {
		if err != nil {
			t.Fatal(err)
		}
		lines++
		if strings.Contains(string(l.Data), "sleep 0.3") {
			continue // the plan (goal, plan, assignment): the test's own pieces, judged when signed
		}
		seen.Write(l.Data)
		seen.WriteString(jwsClaims(t, l.JWS))
		if l.Type == string(event.TaskFinished) {
			var fin event.TaskFinishedData
			if err := json.Unmarshal(l.Data, &fin); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(fin.OutputTail, "[REDACTED:") || !strings.Contains(fin.OutputTail, "fatal: sshpass -p [REDACTED:") {
				t.Errorf("task.finished output tail: %q", fin.OutputTail)
			}
			tails++
		}
	}
	if tails != 1 {
		t.Fatalf("%d task.finished events, want 1", tails)
	}
	if lines == 0 {
		t.Fatal("empty ledger")
	}
	// The logs stream.
	logs := logText(ctx, t, tn.JS, run)
	if !strings.Contains(logs, "[REDACTED:") {
		t.Errorf("the logs show no redaction: %q", logs)
	}
	seen.WriteString(logs)
	all := seen.String()
	for _, s := range e2eSecrets {
		if i := strings.Index(all, s.secret); i >= 0 {
			t.Errorf("%q reached the ledger, the logs or the API: …%s…", s.secret, all[max(0, i-80):min(len(all), i+len(s.secret)+20)])
		}
		// The plan holds the second half; what the step printed must not.
		if strings.Contains(logs, s.rest) {
			t.Errorf("the second half of %q reached the logs", s.secret)
		}
	}
}

// jwsClaims returns the decoded claims of a compact JWS.
func jwsClaims(t *testing.T, jws string) string {
	if jws == "" {
		return ""
	}
	parts := strings.Split(jws, ".")
	if len(parts) != 3 {
		t.Fatalf("JWS with %d parts", len(parts))
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// logText reads every chunk of the run's output from the logs stream.
func logText(ctx context.Context, t *testing.T, js jetstream.JetStream, run string) string {
	oc, err := js.OrderedConsumer(ctx, bus.LogsStream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{bus.LogSubject(run, ">")}})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for {
		batch, err := oc.FetchNoWait(256)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for m := range batch.Messages() {
			b.Write(m.Data())
			n++
		}
		if n == 0 {
			return b.String()
		}
	}
}
