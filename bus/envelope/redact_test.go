package envelope_test

import (
	"errors"
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
