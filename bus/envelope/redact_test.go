package envelope_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest"
	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
)

// plantedFields puts a planted secret in every field of the events that
// carry user text: goal text, plan commands and env, step errors and
// output, memory facts, decisions' reasons.
var plantedFields = []struct {
	typ    event.Type
	data   any
	path   string
	secret string
}{
	{event.GoalSubmitted, event.GoalSubmittedData{Goal: "deploy with sk_live_51H8xQ2LkdIwHu7ixyzAbCdEf0123"}, "goal", "sk_live_51H8xQ2LkdIwHu7ixyzAbCdEf0123"},
	{event.GoalSubmitted, event.GoalSubmittedData{Goal: "g", Text: "log in with glpat-xR4nD0mT0k3nV4lu3zzZ9"}, "text", "glpat-xR4nD0mT0k3nV4lu3zzZ9"},
	{event.GoalSubmitted, event.GoalSubmittedData{Goal: "g", PlanFile: "steps:\n  - run: mysql -u root -pS3cretPW app\n"}, "plan_file", "S3cretPW"},
	{event.PlanProposed, map[string]any{"revision": 1, "plan": map[string]any{"steps": []any{map[string]any{"id": "a", "run": "ok"}, map[string]any{"id": "b", "run": "curl -u bob:curlPW99 https://x", "env": map[string]string{"MYSQL_PWD": "myPWvalue1"}}}}}, "plan.steps[1].env.MYSQL_PWD", "myPWvalue1"},
	{event.TaskFinished, event.TaskFinishedData{Step: "s", Error: "exit 1: sshpass -p Pa55word9 ssh host"}, "error", "Pa55word9"},
	{event.TaskFinished, event.TaskFinishedData{Step: "s", OutputTail: "token eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"}, "output_tail", "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"},
	{event.TaskFinished, event.TaskFinishedData{Step: "s", Cwd: "/srv/AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY"}, "cwd", "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY"},
	{event.MemoryPut, event.MemoryPutData{Scope: "shared", Key: "note", Value: "password hunter2xyz"}, "value", "hunter2xyz"},
	{event.MemoryPut, event.MemoryPutData{Scope: "shared", Key: "aws", Value: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}, "value", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"},
	{event.StepDecided, event.StepDecidedData{Step: "s", Action: event.StepSkip, Reason: "docker login -u bob -p dckrPW123 failed"}, "reason", "dckrPW123"},
}

// The signer refuses every planted secret, naming the rule and the field,
// never the secret; redacted at creation, the same events sign, and a
// receiver of this version accepts them.
func TestPlantedSecretsRefusedThenRedacted(t *testing.T) {
	ids := bustest.NewIdentities(t)
	op := ids.Node(t, "operator", "operator")
	v := envelope.NewVerifier(ids.Root)
	for _, p := range plantedFields {
		d := event.MustDraft(p.typ, "r1", p.data)
		_, _, err := envelope.Sign(op, []event.Draft{d})
		if !errors.Is(err, envelope.ErrSecret) {
			t.Fatalf("%s %s: Sign = %v, want ErrSecret", p.typ, p.path, err)
		}
		if msg := err.Error(); strings.Contains(msg, p.secret) || !strings.Contains(msg, "field "+p.path) || !strings.Contains(msg, "secret rule ") {
			t.Fatalf("%s: error %q must name the field %s and the rule, never the secret", p.typ, msg, p.path)
		}
		red, err := envelope.RedactDraft(d)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(red.Data), p.secret) || !strings.Contains(string(red.Data), "[REDACTED:") {
			t.Fatalf("%s: redacted payload %s", p.typ, red.Data)
		}
		if red.ID != d.ID || red.Type != d.Type || red.Run != d.Run {
			t.Fatalf("RedactDraft changed more than the payload")
		}
		if err := envelope.CheckDraft(red); err != nil {
			t.Fatalf("%s: redacted draft refused: %v", p.typ, err)
		}
		// Signed under the current version by a role allowed the type.
		signer := op
		if p.typ == event.TaskFinished {
			signer = ids.Node(t, "exec-1", event.RoleExecutor)
		}
		if p.typ == event.PlanProposed {
			signer = ids.Node(t, "planner-1", event.RolePlanner)
		}
		raw, _, err := envelope.Sign(signer, []event.Draft{red})
		if err != nil {
			t.Fatalf("%s: sign redacted: %v", p.typ, err)
		}
		if _, err := v.Verify(raw, red.Subject(), time.Now()); err != nil {
			t.Fatalf("%s: a receiver refuses the redacted event: %v", p.typ, err)
		}
	}
}

// RedactCheckDraft gives what RedactDraft then CheckDraft give: the same
// draft and the same error, for drafts with secrets, without, too large
// and not JSON.
func TestRedactCheckDraftIsRedactThenCheck(t *testing.T) {
	var drafts []event.Draft
	for _, p := range plantedFields {
		drafts = append(drafts, event.MustDraft(p.typ, "r1", p.data))
	}
	drafts = append(drafts,
		event.MustDraft(event.TaskFinished, "r1", event.TaskFinishedData{Step: "s", OutputTail: strings.Repeat("ok\n", 100)}),
		event.MustDraft(event.TaskFinished, "r1", event.TaskFinishedData{Step: "s", OutputTail: strings.Repeat("x", envelope.MaxEventBytes)}),
		event.MustDraft(event.TaskFinished, "r1", event.TaskFinishedData{Step: "s", OutputTail: strings.Repeat("password=hunter2 ", envelope.MaxEventBytes/16)}),
		event.Draft{ID: event.NewID(), Type: event.MemoryPut, Run: "r1", Data: []byte(`{"AKIAIOSFODNN7EXAMPLE":"v"}`)},
		event.Draft{ID: event.NewID(), Type: event.MemoryPut, Run: "r1", Data: []byte(`{"":"MIIEowIBAAKCAQEAuQ8aeqn3u2l1"}`)},
		event.Draft{ID: event.NewID(), Type: event.MemoryPut, Run: "r1", Data: []byte(`{"value":`)},
		event.Draft{ID: event.NewID(), Type: event.MemoryPut, Run: "r1"},
	)
	seen := map[string]bool{}
	for _, d := range drafts {
		want, wantErr := envelope.RedactDraft(d)
		if wantErr == nil {
			wantErr = envelope.CheckDraft(want)
		}
		got, err := envelope.RedactCheckDraft(d)
		if fmt.Sprint(err) != fmt.Sprint(wantErr) || errors.Is(err, envelope.ErrSecret) != errors.Is(wantErr, envelope.ErrSecret) || errors.Is(err, envelope.ErrTooLarge) != errors.Is(wantErr, envelope.ErrTooLarge) {
			t.Fatalf("%s %.80s: error %v, RedactDraft then CheckDraft %v", d.Type, d.Data, err, wantErr)
		}
		if string(got.Data) != string(want.Data) || got.ID != want.ID || got.Type != want.Type || got.Run != want.Run {
			t.Fatalf("%s %.80s: draft %.80s, RedactDraft %.80s", d.Type, d.Data, got.Data, want.Data)
		}
		seen[fmt.Sprint(err == nil, errors.Is(err, envelope.ErrSecret), errors.Is(err, envelope.ErrTooLarge), string(got.Data) != string(d.Data))] = true
	}
	// Accepted as is, accepted redacted, refused for a secret, for the
	// size, and not JSON.
	for _, k := range []string{"true false false false", "true false false true", "false true false false", "false false true false", "false false false false"} {
		if !seen[k] {
			t.Errorf("no draft with outcome %q: %v", k, seen)
		}
	}
}
