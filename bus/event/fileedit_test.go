package event_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// fileEditHeading introduces, in the task.finished section of
// docs/protocol.md, the second example: a file edit's result.
const fileEditHeading = "A `file.write`'s task.finished:"

// TestFileEditDocs: the file edit example of docs/protocol.md is what the
// type marshals to, and it decodes back unchanged.
func TestFileEditDocs(t *testing.T) {
	at := time.Date(2026, 11, 22, 16, 39, 23, 201479010, time.UTC)
	v := event.TaskFinishedData{
		Step: "conf", Attempt: 1, Node: "node-b", Status: event.TaskSucceeded, Started: at,
		Duration: event.Duration(3 * time.Millisecond), Cwd: "/srv/app",
		OutputTail: "--- a/etc/app.conf\n+++ b/etc/app.conf\n@@ -1,1 +1,1 @@\n-port = 80\n+port = 8080\n",
		Edits: []event.FileEdit{{
			Path:   "/srv/app/etc/app.conf",
			Before: "sha256:5b2f7c1e0a9d4e3c8b6a7f1d2e0c9b8a7f6e5d4c3b2a19080706050403020100",
			After:  "sha256:0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0",
			Mode:   "0640",
		}},
	}
	want := marshalExample(t, v)
	doc, err := os.ReadFile(protocolDoc)
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(doc), fileEditHeading)
	if !ok {
		t.Fatalf("docs/protocol.md lacks %q followed by:\n%s", fileEditHeading, want)
	}
	_, block, ok := strings.Cut(after, "```json\n")
	if ok {
		block, _, ok = strings.Cut(block, "```")
	}
	if !ok || block != want {
		t.Fatalf("docs/protocol.md shows after %q:\n%s\nthe type marshals to:\n%s", fileEditHeading, block, want)
	}
	back := event.TaskFinishedData{}
	ev := event.Event{Type: event.TaskFinished}
	d := event.MustDraft(event.TaskFinished, "r", v)
	ev.Data = d.Data
	if err := ev.Decode(&back); err != nil || len(back.Edits) != 1 || back.Edits[0] != v.Edits[0] {
		t.Fatalf("decode: %v %+v", err, back)
	}
}
