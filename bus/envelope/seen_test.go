package envelope_test

import (
	"bytes"
	"encoding/base64"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest"
	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
)

// A message verified again by the same verifier gets the same verdict
// and the same envelope, with payloads of its own: writing to one
// caller's events changes neither the next caller's nor what a caller's
// reuse of its buffer does to the verifier's memory.
func TestVerifyAgainIsVerifyOnce(t *testing.T) {
	ids := bustest.NewIdentities(t)
	exec := ids.Node(t, "exec-1", event.RoleExecutor)
	v := envelope.NewVerifier(ids.Root)
	drafts := []event.Draft{
		event.MustDraft(event.TaskStarted, "run-1", event.TaskStartedData{Step: "a", Attempt: 1, Node: "exec-1"}),
		event.MustDraft(event.TaskStarted, "run-1", event.TaskStartedData{Step: "b", Attempt: 1, Node: "exec-1"}),
	}
	for _, batch := range [][]event.Draft{drafts[:1], drafts} {
		raw, _, err := envelope.Sign(exec, batch)
		if err != nil {
			t.Fatal(err)
		}
		subject, now := batch[0].Subject(), time.Now()
		buf := bytes.Clone(raw)
		first, err := v.Verify(buf, subject, now)
		if err != nil {
			t.Fatal(err)
		}
		want := string(first.Events[0].Data)
		first.Events[0].Data[2] = 'X' // a caller writing to its payload
		for i := range buf {
			buf[i] = '.' // and reusing its buffer
		}
		for range 3 {
			again, err := v.Verify(raw, subject, now)
			if err != nil {
				t.Fatalf("verified again: %v", err)
			}
			if got := string(again.Events[0].Data); got != want {
				t.Fatalf("payload verified again %s, want %s", got, want)
			}
			fresh, err := envelope.NewVerifier(ids.Root).Verify(raw, subject, now)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(again, fresh) {
				t.Fatalf("verified again %+v, by a new verifier %+v", again, fresh)
			}
			again.Events[len(again.Events)-1].Data[2] = 'Y'
		}
		// The checks that depend on more than the bytes run again: the
		// same message past its exp is refused.
		if _, err := v.Verify(raw, subject, now.Add(envelope.TTL+envelope.Leeway+time.Second)); envelope.AsRejection(err).Code != event.RejectExpired {
			t.Fatalf("verified again after exp: %v", err)
		}
		if _, err := v.Verify(raw, "wrong.subject", now); envelope.AsRejection(err).Code != event.RejectWrongSubject {
			t.Fatalf("verified again on another subject: %v", err)
		}
	}
}

// A message that carries the signature of one the verifier accepted, with
// other claims, is refused: the verifier's memory answers only for the
// same bytes.
func TestVerifyAgainNeedsTheSameBytes(t *testing.T) {
	ids := bustest.NewIdentities(t)
	exec := ids.Node(t, "exec-1", event.RoleExecutor)
	other := ids.Node(t, "exec-2", event.RoleExecutor)
	v := envelope.NewVerifier(ids.Root)
	d := event.MustDraft(event.TaskStarted, "run-1", event.TaskStartedData{Step: "a", Attempt: 1, Node: "exec-1"})
	raw, _, err := envelope.Sign(exec, []event.Draft{d})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if _, err := v.Verify(raw, d.Subject(), now); err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(string(raw), ".")
	b64 := base64.RawURLEncoding
	claims, _ := b64.DecodeString(parts[1])
	tampered := parts[0] + "." + b64.EncodeToString(bytes.Replace(claims, []byte(`"step":"a"`), []byte(`"step":"z"`), 1)) + "." + parts[2]
	if _, err := v.Verify([]byte(tampered), d.Subject(), now); envelope.AsRejection(err).Code != event.RejectBadSignature {
		t.Fatalf("claims changed under a remembered signature: %v", err)
	}
	// The same claims and signature under another signer's header.
	raw2, _, err := envelope.Sign(other, []event.Draft{d})
	if err != nil {
		t.Fatal(err)
	}
	swapped := strings.Split(string(raw2), ".")[0] + "." + parts[1] + "." + parts[2]
	if _, err := v.Verify([]byte(swapped), d.Subject(), now); err == nil {
		t.Fatal("a remembered signature accepted under another signer's header")
	}
	if _, err := v.Verify(raw, d.Subject(), now); err != nil {
		t.Fatalf("the original after the forgeries: %v", err)
	}
}

// A message this process signed with a key other than its credential's
// is refused as before: the memory of what was signed here answers only
// for the key it was signed with.
func TestSignedHereWithAnotherKeyIsRefused(t *testing.T) {
	ids := bustest.NewIdentities(t)
	exec := ids.Node(t, "exec-1", event.RoleExecutor)
	impostor := ids.Node(t, "exec-2", event.RoleExecutor)
	mixed := *exec
	mixed.Key = impostor.Key // exec-1's credential, exec-2's key
	d := event.MustDraft(event.TaskStarted, "run-1", event.TaskStartedData{Step: "a", Attempt: 1, Node: "exec-1"})
	raw, _, err := envelope.Sign(&mixed, []event.Draft{d})
	if err != nil {
		t.Fatal(err)
	}
	v := envelope.NewVerifier(ids.Root)
	for range 2 {
		if _, err := v.Verify(raw, d.Subject(), time.Now()); envelope.AsRejection(err).Code != event.RejectBadSignature {
			t.Fatalf("signed here with another key than the credential's: %v", err)
		}
	}
	good, _, err := envelope.Sign(exec, []event.Draft{d})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(good, d.Subject(), time.Now()); err != nil {
		t.Fatal(err)
	}
}
