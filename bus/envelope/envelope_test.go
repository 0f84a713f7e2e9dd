package envelope_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest"
	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/golang-jwt/jwt/v5"
)

func draft(t event.Type) event.Draft {
	return event.MustDraft(t, "run-1", map[string]string{"k": "v"})
}

func TestRoundTripSingleAndBatch(t *testing.T) {
	ids := bustest.NewIdentities(t)
	ex := ids.Node(t, "exec-1", event.RoleExecutor)
	v := envelope.NewVerifier(ids.Root)

	d := draft(event.TaskStarted)
	raw, jti, err := envelope.Sign(ex, []event.Draft{d})
	if err != nil {
		t.Fatal(err)
	}
	if jti != d.ID {
		t.Fatalf("single-event jti = %s, want the event id %s", jti, d.ID)
	}
	env, err := v.Verify(raw, d.Subject(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(env.Events) != 1 || env.Events[0].ID != d.ID || env.Events[0].Node != "exec-1" || env.Events[0].Run != "run-1" || string(env.Events[0].Data) != string(d.Data) {
		t.Fatalf("round trip lost data: %+v", env.Events)
	}

	batch := []event.Draft{draft(event.TaskStarted), draft(event.TaskStarted), draft(event.TaskStarted)}
	raw, jti, err = envelope.Sign(ex, batch)
	if err != nil {
		t.Fatal(err)
	}
	env, err = v.Verify(raw, batch[0].Subject(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if env.ID != jti || len(env.Events) != 3 {
		t.Fatalf("batch: id %s events %d", env.ID, len(env.Events))
	}
	for i := range batch {
		if env.Events[i].ID != batch[i].ID {
			t.Fatalf("batch item %d id %s, want %s", i, env.Events[i].ID, batch[i].ID)
		}
	}
}

func TestSignRefusesMixedSubjects(t *testing.T) {
	ids := bustest.NewIdentities(t)
	ex := ids.Node(t, "exec-1", event.RoleExecutor)
	if _, _, err := envelope.Sign(ex, []event.Draft{draft(event.TaskStarted), draft(event.TaskFinished)}); err == nil {
		t.Fatal("mixed subjects signed")
	}
}

func TestPeek(t *testing.T) {
	ids := bustest.NewIdentities(t)
	ex := ids.Node(t, "exec-1", event.RoleExecutor)
	d := draft(event.TaskStarted)
	raw, _, _ := envelope.Sign(ex, []event.Draft{d})
	c := envelope.Peek(raw)
	if c.Signer != "exec-1" || c.Type != string(event.TaskStarted) || c.ID != d.ID {
		t.Fatalf("peek = %+v", c)
	}
	if c := envelope.Peek([]byte("junk")); c != (envelope.Claimed{}) {
		t.Fatalf("peek junk = %+v", c)
	}
}

func TestSecretsAreRefused(t *testing.T) {
	ids := bustest.NewIdentities(t)
	op := ids.Node(t, "operator", "operator")
	leaky := event.MustDraft(event.GoalSubmitted, "r", map[string]string{"plan_file": "steps:\n  - run: mysql --password=hunter2\n"})
	if _, _, err := envelope.Sign(op, []event.Draft{leaky}); !errors.Is(err, envelope.ErrSecret) {
		t.Fatalf("sign: %v, want ErrSecret", err)
	}
	if err := envelope.CheckDraft(leaky); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("CheckDraft: %v (must refuse without repeating the secret)", err)
	}
	ref := event.MustDraft(event.GoalSubmitted, "r", map[string]string{"plan_file": "steps:\n  - run: mysql --password=$DB_PASSWORD\n"})
	if _, _, err := envelope.Sign(op, []event.Draft{ref}); err != nil {
		t.Fatalf("a reference to a secret was refused: %v", err)
	}
	// A message signed outside Sign (a misbehaving node) is refused on
	// receipt.
	tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.MapClaims{
		"iss": "operator", "jti": leaky.ID, "typ": string(event.GoalSubmitted), "run": "r",
		"iat": time.Now().Unix(), "exp": time.Now().Add(time.Minute).Unix(), "data": json.RawMessage(leaky.Data),
	})
	tok.Header["kid"] = "operator"
	tok.Header["cred"] = op.Credential
	raw, err := tok.SignedString(op.Key)
	if err != nil {
		t.Fatal(err)
	}
	_, err = envelope.NewVerifier(ids.Root).Verify([]byte(raw), leaky.Subject(), time.Now())
	if !errors.Is(err, envelope.ErrRejected) || envelope.AsRejection(err).Code != event.RejectSecret {
		t.Fatalf("verify: %v, want a secret rejection", err)
	}
}

// Any payload CheckDraft accepts can be signed alone: the size limit leaves
// room for base64 and the credential in the header.
func TestLargestEventSigns(t *testing.T) {
	ids := bustest.NewIdentities(t)
	pl := ids.Node(t, "planner-with-a-long-node-name", event.RolePlanner)
	// A JSON string of exactly MaxEventBytes bytes.
	data := `"` + strings.Repeat("a", envelope.MaxEventBytes-2) + `"`
	d := event.Draft{ID: event.NewID(), Type: event.PlanProposed, Run: event.NewID(), Time: time.Now(), Data: json.RawMessage(data)}
	if err := envelope.CheckDraft(d); err != nil {
		t.Fatal(err)
	}
	raw, _, err := envelope.Sign(pl, []event.Draft{d})
	if err != nil {
		t.Fatalf("sign largest event: %v", err)
	}
	if _, err := envelope.NewVerifier(ids.Root).Verify(raw, d.Subject(), time.Now()); err != nil {
		t.Fatal(err)
	}
	d.Data = json.RawMessage(`"` + strings.Repeat("a", envelope.MaxEventBytes-1) + `"`)
	if err := envelope.CheckDraft(d); !errors.Is(err, envelope.ErrTooLarge) {
		t.Fatalf("one byte over: %v", err)
	}
}

// SignChecked signs what CheckDraft accepted as Sign does (the receiver
// verifies it alike) and still refuses what is too large or mixes
// subjects: only the secret scan, done by CheckDraft, is not repeated.
func TestSignChecked(t *testing.T) {
	ids := bustest.NewIdentities(t)
	ex := ids.Node(t, "exec-1", event.RoleExecutor)
	v := envelope.NewVerifier(ids.Root)
	batch := []event.Draft{draft(event.TaskStarted), draft(event.TaskStarted)}
	for _, d := range batch {
		if err := envelope.CheckDraft(d); err != nil {
			t.Fatal(err)
		}
	}
	raw, jti, err := envelope.SignChecked(ex, batch, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	env, err := v.Verify(raw, batch[0].Subject(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if env.ID != jti || len(env.Events) != 2 || env.Events[1].ID != batch[1].ID {
		t.Fatalf("verified %s with %d events", env.ID, len(env.Events))
	}
	if _, _, err := envelope.SignChecked(ex, []event.Draft{draft(event.TaskStarted), draft(event.TaskFinished)}, time.Now()); err == nil {
		t.Fatal("mixed subjects signed")
	}
	big := event.Draft{ID: event.NewID(), Type: event.TaskStarted, Run: "run-1", Time: time.Now(),
		Data: json.RawMessage(`"` + strings.Repeat("a", envelope.MaxEventBytes-1) + `"`)}
	if _, _, err := envelope.SignChecked(ex, []event.Draft{big}, time.Now()); !errors.Is(err, envelope.ErrTooLarge) {
		t.Fatalf("too large: %v, want ErrTooLarge", err)
	}
}
