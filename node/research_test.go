package node_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/nodetest"
	"github.com/agentic-dev/agentic/roles/memory"
	"github.com/agentic-dev/agentic/roles/orchestrator/replay"
	"github.com/agentic-dev/agentic/roles/planner/llm/llmtest"
)

// Two pages on two hosts (127.0.0.1 and localhost): independent sources.
const (
	portsPage   = "<html><body><h1>Ports</h1><p>The service listens on port 8443 and speaks HTTP/2 to its clients.</p></body></html>"
	servicePage = "Service notes\n\nIt binds port 8443 (TLS) on every interface.\n"
)

// notesAnswer is the model's synthesis: a claim cited by both sources
// (its question critical), one cited once, one the model raises to
// critical with one source, and one whose only quote is made up.
const notesAnswer = `{"notes": [
 {"question": 0, "claim": "The service listens on port 8443.", "confidence": 0.9, "critical": false,
  "citations": [{"source": 0, "quote": "The service listens on port 8443"}, {"source": 1, "quote": "It binds port 8443 (TLS)"}]},
 {"question": 1, "claim": "Clients speak HTTP/2 to the service.", "confidence": 0.7,
  "citations": [{"source": 0, "quote": "speaks HTTP/2 to its clients"}]},
 {"question": 1, "claim": "The service also speaks gRPC-7c1d.", "confidence": 0.6, "critical": true,
  "citations": [{"source": 0, "quote": "speaks HTTP/2 to its clients"}, {"source": 0, "quote": "listens on port 8443"}]},
 {"question": 0, "claim": "The service listens on port 9999.", "confidence": 0.8,
  "citations": [{"source": 1, "quote": "It binds port 9999 on every interface"}]}
]}`

// TestResearchEndToEnd: a research step fetches two pages under
// scopes.network, each stored and hashed; its synthesise step's model
// writes notes whose quotes are checked (a fabricated one is refused), a
// critical claim with one source stays quarantined; memory search finds
// a note; a later plan's prompt cites the released notes and never the
// quarantined one; a source outside scopes.network is refused before
// assignment with a located reason.
func TestResearchEndToEnd(t *testing.T) {
	pages := map[string]string{"/ports.html": portsPage, "/service.txt": servicePage}
	serve := func() *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, ok := pages[r.URL.Path]
			if !ok {
				http.NotFound(w, r)
				return
			}
			if strings.HasSuffix(r.URL.Path, ".html") {
				w.Header().Set("Content-Type", "text/html")
			}
			_, _ = io.WriteString(w, body)
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	a, b := serve(), serve()
	srcA := a.URL + "/ports.html"
	srcB := strings.Replace(b.URL, "127.0.0.1", "localhost", 1) + "/service.txt"

	var mu sync.Mutex
	var prompts []string
	model := llmtest.Server(t, func(prompt string) string {
		mu.Lock()
		prompts = append(prompts, prompt)
		mu.Unlock()
		if strings.Contains(prompt, "You write research notes") {
			return notesAnswer
		}
		return `{"goal": "configure", "steps": [{"id": "configure", "run": "echo port 8443"}]}`
	})

	dir := t.TempDir()
	policyFile := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policyFile, []byte("name: research\nscopes:\n  network: [\"127.0.0.1\", \"localhost\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := nodetest.Config(filepath.Join(dir, "node"))
	cfg.Policy = policyFile
	cfg.Planner.BaseURL, cfg.Planner.Model = model.URL+"/v1", "test-model"
	n := nodetest.Start(t, cfg)
	ctx := context.Background()

	plan := fmt.Sprintf(`goal: research the service
steps:
  - id: read
    kind: research
    questions:
      - {q: "Which port does the service listen on?", criteria: a port number, critical: true}
      - {q: "Which protocol do clients speak?"}
    sources: [%s, %s]
  - id: notes
    kind: synthesise
    target: read
  - id: apply
    depends_on: [notes]
    run: echo configure 8443
  - id: validate
    depends_on: [apply]
    run: "true"
`, srcA, srcB)
	run := n.WaitRun(t, n.Submit(t, "research.yaml", plan), 20*time.Second)
	if run.Status != event.RunSucceeded {
		t.Fatalf("research run: %s (%s) %+v", run.Status, run.Reason, run.Steps)
	}

	// The research step's task.finished carries both sources, hashed.
	var fin event.TaskFinishedData
	for ev, err := range n.API.Events(ctx, 0, nil) {
		if err != nil {
			t.Fatal(err)
		}
		var d event.TaskFinishedData
		if ev.Type == event.TaskFinished && ev.Run == run.ID && ev.Decode(&d) == nil && d.Step == "read" {
			fin = d
		}
	}
	hash := func(s string) string { sum := sha256.Sum256([]byte(s)); return hex.EncodeToString(sum[:]) }
	if len(fin.Sources) != 2 || fin.Sources[0].SHA256 != hash(portsPage) || fin.Sources[1].SHA256 != hash(servicePage) ||
		fin.Sources[0].Host != "127.0.0.1" || fin.Sources[1].Host != "localhost" || fin.Sources[0].Fetched == "" {
		t.Fatalf("research step's sources: %+v", fin.Sources)
	}

	// Each source is an artifact of the run, with its URL.
	arts, err := n.API.ArtifactsList(ctx, api.ArtifactsRequest{Run: run.ID})
	if err != nil || len(arts.Items) != 2 || arts.Items[0].Name != "research/read/0" || arts.Items[0].SHA256 != hash(portsPage) ||
		arts.Items[0].Meta["url"] != srcA || arts.Items[1].Meta["url"] != srcB || arts.Items[1].Step != "read" {
		t.Fatalf("the sources as artifacts: %+v, %v", arts, err)
	}

	// The notes: three recorded, the fabricated one refused.
	p, err := n.API.MemoryFacts(ctx, api.MemoryFactsRequest{Scope: memory.ScopeKB})
	if err != nil {
		t.Fatal(err)
	}
	notes := map[string]api.Fact{}
	for _, f := range p.Items {
		notes[f.Value] = f
	}
	if len(notes) != 3 {
		t.Fatalf("notes: %+v", p.Items)
	}
	port := notes["The service listens on port 8443."]
	if port.Note == nil || !port.Note.Critical || port.Quarantined || len(port.Note.Citations) != 2 ||
		port.Note.Citations[0].SHA256 != hash(portsPage) || port.Note.Citations[1].SHA256 != hash(servicePage) ||
		port.Refs == nil || port.Refs.Type != string(event.KbNoted) {
		t.Errorf("the claim of two independent sources: %+v (note %+v)", port, port.Note)
	}
	if f := notes["Clients speak HTTP/2 to the service."]; f.Note == nil || f.Quarantined || f.Note.Critical {
		t.Errorf("a plain claim of one source: %+v", f)
	}
	grpc := notes["The service also speaks gRPC-7c1d."]
	if grpc.Note == nil || !grpc.Quarantined || grpc.Reason != memory.ReasonOneSource || !grpc.Note.Critical {
		t.Errorf("a critical claim of one source: %+v", grpc)
	}
	if _, ok := notes["The service listens on port 9999."]; ok {
		t.Error("a note whose quote is not in its source was recorded")
	}

	// The run replays: the synthesis request (its sources) is decided
	// again from the folded research step.
	rep, err := replay.Check(n.API.Events(ctx, 0, nil), replay.Options{Run: run.ID})
	if err != nil || rep.Diverged() || rep.Reproduced != rep.Checked {
		b, _ := json.MarshalIndent(rep, "", "  ")
		t.Fatalf("replay of the research run: %v\n%s", err, b)
	}

	// Memory search finds a note, not the quarantined one.
	hits, err := n.API.MemorySearch(ctx, api.MemorySearchRequest{Query: "port 8443 listens"})
	if err != nil || hits.Total == 0 || hits.Items[0].Fact.Scope != memory.ScopeKB || hits.Items[0].Fact.Value != port.Value {
		t.Fatalf("search: %+v %v", hits, err)
	}
	if hits, _ := n.API.MemorySearch(ctx, api.MemorySearchRequest{Query: "gRPC-7c1d"}); hits == nil || hits.Total != 0 {
		t.Fatalf("search found the quarantined note: %+v", hits)
	}

	// A later plan's prompt carries the released notes, never the
	// quarantined one.
	goal := event.NewID()
	d := event.MustDraft(event.GoalSubmitted, goal, event.GoalSubmittedData{Goal: "configure", Text: "configure the service port and protocol gRPC-7c1d"})
	if err := bus.PublishSigned(ctx, n.JS, n.Operator, d); err != nil {
		t.Fatal(err)
	}
	if r := n.WaitRun(t, goal, 60*time.Second); r.Status != event.RunSucceeded {
		t.Fatalf("later run: %s (%s)", r.Status, r.Reason)
	}
	mu.Lock()
	var planPrompt string
	for _, pr := range prompts {
		if strings.Contains(pr, "configure the service port") {
			planPrompt = pr
		}
	}
	mu.Unlock()
	if !strings.Contains(planPrompt, "The service listens on port 8443.") || !strings.Contains(planPrompt, "[note "+port.Key+"]") {
		t.Errorf("the plan's prompt does not cite the released note:\n%s", planPrompt)
	}
	if strings.Contains(planPrompt, "The service also speaks gRPC") {
		t.Fatalf("a quarantined note reached a prompt:\n%s", planPrompt)
	}

	// A source outside scopes.network: refused before assignment, located.
	blocked := n.WaitRun(t, n.Submit(t, "blocked.yaml", fmt.Sprintf(`goal: blocked
steps:
  - id: read
    kind: research
    questions: [{q: "anything"}]
    sources: [%s, "http://blocked.example:8080/x"]
`, srcA)), 30*time.Second)
	st := blocked.Steps[0]
	if blocked.Status != event.RunFailed || st.Status != "failed" || st.Attempt != 0 ||
		!strings.Contains(st.Error, "research step read, source 1") || !strings.Contains(st.Error, "blocked.example:8080") ||
		!strings.Contains(st.Error, "scopes.network") {
		b, _ := json.Marshal(blocked)
		t.Fatalf("blocked run: %s", b)
	}
}
