package outbox_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest"
	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/outbox"
)

// Events are redacted when they are created: what Emit queues, signs and
// publishes carries labels, never the planted secrets, and the caller's
// drafts are left as they were.
func TestEmitRedactsSecrets(t *testing.T) {
	srv := bustest.Server(t)
	c := bustest.Connect(t, srv)
	ids := bustest.NewIdentities(t)
	ob, err := outbox.Open(t.TempDir(), ids.Node(t, "n1", event.RoleExecutor), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	ob.Start(c.JS)
	secrets := []string{"S3cretPW", "glpat-xR4nD0mT0k3nV4lu3zzZ9", "Pa55word9"}
	d := event.MustDraft(event.TaskFinished, "r1", event.TaskFinishedData{
		Step: "s", Status: event.TaskFailed,
		Error:      "exit 1: mysql -u root -pS3cretPW app",
		OutputTail: "pushing with glpat-xR4nD0mT0k3nV4lu3zzZ9\nsshpass -p Pa55word9 ssh host\n",
	})
	orig := string(d.Data)
	ctx := context.Background()
	if err := ob.Emit(ctx, d); err != nil {
		t.Fatal(err)
	}
	if string(d.Data) != orig {
		t.Fatal("Emit changed the caller's draft")
	}
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := ob.WaitDrained(wctx); err != nil {
		t.Fatal(err)
	}
	got := collect(t, c.JS, envelope.NewVerifier(ids.Root), 1)
	if len(got) != 1 || got[0].ID != d.ID {
		t.Fatalf("published %+v", got)
	}
	data := string(got[0].Data)
	for _, s := range secrets {
		if strings.Contains(data, s) {
			t.Errorf("%q published: %s", s, data)
		}
	}
	var fin event.TaskFinishedData
	if err := got[0].Decode(&fin); err != nil {
		t.Fatal(err)
	}
	if fin.Error != "exit 1: mysql -u root -p[REDACTED:cli-password] app" || !strings.Contains(fin.OutputTail, "pushing with [REDACTED:gitlab-token]\n") {
		t.Errorf("published %+v", fin)
	}
}
