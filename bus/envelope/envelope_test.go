package envelope_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest"
	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
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

func TestRejections(t *testing.T) {
	ids := bustest.NewIdentities(t)
	ex := ids.Node(t, "exec-1", event.RoleExecutor)
	v := envelope.NewVerifier(ids.Root)
	d := draft(event.TaskFinished)
	good, _, err := envelope.Sign(ex, []event.Draft{d})
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(string(good), ".")

	other := bustest.NewIdentities(t)
	stranger := other.Node(t, "exec-1", event.RoleExecutor)
	strangerMsg, _, _ := envelope.Sign(stranger, []event.Draft{d})

	planD := event.MustDraft(event.PlanProposed, "run-1", map[string]int{"revision": 1})
	wrongRole, _, _ := envelope.Sign(ex, []event.Draft{planD})

	// alg:none with the same claims.
	noneHdr := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT","kid":"exec-1"}`))
	algNone := noneHdr + "." + parts[1] + "."

	// Tampered payload: change the run id in the claims, keep the signature.
	claims, _ := base64.RawURLEncoding.DecodeString(parts[1])
	tampered := parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(strings.Replace(string(claims), "run-1", "run-2", 1))) + "." + parts[2]

	// Expired: sign with a credential that expired long ago.
	expiredID, err := trust.NewIdentity(ids.Root, "exec-old", trust.KindNode, []string{event.RoleExecutor}, -time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	expiredCred, _, _ := envelope.Sign(expiredID, []event.Draft{d})

	// An HS256 token using the public key bytes as secret (key confusion).
	hs := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"iss": "exec-1", "jti": "x", "typ": "task.finished", "exp": time.Now().Add(time.Minute).Unix(), "iat": time.Now().Unix()})
	hs.Header["kid"] = "exec-1"
	hsRaw, _ := hs.SignedString([]byte("secret"))

	cases := []struct {
		name, subject string
		raw           []byte
		at            time.Time
		want          string
	}{
		{"unsigned garbage", d.Subject(), []byte(`{"typ":"task.finished"}`), time.Now(), ""},
		{"alg none", d.Subject(), []byte(algNone), time.Now(), ""},
		{"hs256", d.Subject(), []byte(hsRaw), time.Now(), ""},
		{"tampered", d.Subject(), []byte(tampered), time.Now(), "signature"},
		{"unknown root", d.Subject(), strangerMsg, time.Now(), "credential"},
		{"wrong role", planD.Subject(), wrongRole, time.Now(), "may not emit"},
		{"wrong subject", event.Subject(event.TaskStarted, ""), good, time.Now(), "sent on subject"},
		{"expired message", d.Subject(), good, time.Now().Add(envelope.TTL + 2*envelope.Leeway), "token is expired"},
		{"expired credential", d.Subject(), expiredCred, time.Now(), "credential"},
		{"oversized", d.Subject(), make([]byte, envelope.MaxMessageBytes+1), time.Now(), "limit"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := v.Verify(c.raw, c.subject, c.at)
			if !errors.Is(err, envelope.ErrRejected) {
				t.Fatalf("err = %v, want ErrRejected", err)
			}
			if c.want != "" && !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to mention %q", err, c.want)
			}
		})
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
	if !errors.Is(err, envelope.ErrRejected) || !strings.Contains(err.Error(), "secret") {
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
