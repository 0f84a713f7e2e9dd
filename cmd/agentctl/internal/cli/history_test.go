package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/nodetest"
	"github.com/nats-io/nats.go/jetstream"
)

const onePlan = `goal: one step
steps:
  - id: hello
    run: echo hello
`

// history is a real node whose ledger holds a finished run, thousands of
// events of that run over several pages, a ~1 MiB rejected message (a raw
// message that is no envelope) and a 600 KB event of the run: two records
// whose lines are larger than a page.
type history struct {
	t     *testing.T
	n     *nodetest.Node
	run   string
	creds string
	// lastStream is the stream seq of the last message published.
	lastStream uint64
}

func newHistory(t *testing.T) *history {
	t.Helper()
	n := nodetest.Start(t, nodetest.Config(t.TempDir()))
	h := &history{t: t, n: n, creds: filepath.Join(n.Dir, trust.OperatorCredsFile)}
	h.run = n.Submit(t, "one.yaml", onePlan)
	n.WaitRun(t, h.run, 30*time.Second)
	return h
}

// cancels publishes count run.cancel events of the finished run (which the
// orchestrator ignores) in batches of 10, with reason.
func (h *history) cancels(count int, reason string) {
	h.t.Helper()
	for count > 0 {
		var ds []event.Draft
		for range min(count, 10) {
			ds = append(ds, event.MustDraft(event.RunCancel, h.run, event.RunCancelData{Reason: reason}))
		}
		count -= len(ds)
		raw, jti, err := envelope.Sign(h.n.Operator, ds)
		if err != nil {
			h.t.Fatal(err)
		}
		h.publish(ds[0].Subject(), raw, jetstream.WithMsgID(jti))
	}
}

func (h *history) publish(subject string, raw []byte, opts ...jetstream.PublishOpt) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ack, err := h.n.JS.Publish(ctx, subject, raw, opts...)
	if err != nil {
		h.t.Fatalf("publish %d bytes on %s: %v", len(raw), subject, err)
	}
	h.lastStream = ack.Sequence
}

// garbage publishes a ~1 MiB raw message that is no envelope: the ledger
// records it as event.rejected, carrying the start of the raw message
// (ledger.RejectRawMax bytes).
func (h *history) garbage() {
	h.publish(event.Subject(event.GoalSubmitted, ""), bytes.Repeat([]byte("<not a jws> "), 85_000))
}

// settled waits for the node's ledger to hold everything published and
// returns the whole audit, read through the API.
func (h *history) settled() []api.AuditLine {
	h.t.Helper()
	ctx := context.Background()
	var all []api.AuditLine
	poll.Eventually(h.t, 30*time.Second, "the ledger to hold every message", func() bool {
		all = all[:0]
		for l, err := range h.n.API.AuditLines(ctx, api.AuditRequest{}) {
			if err != nil {
				h.t.Logf("audit: %v", err)
				return false
			}
			all = append(all, l)
		}
		return len(all) > 0 && all[len(all)-1].StreamSeq >= h.lastStream
	})
	for i, l := range all {
		if l.Seq != uint64(i+1) || l.JWSSize != 0 {
			h.t.Fatalf("audit line %d has seq %d, jws_size %d", i, l.Seq, l.JWSSize)
		}
	}
	return all
}

// ctl runs agentctl against the node.
func (h *history) ctl(ctx context.Context, stdout *syncBuffer, args ...string) result {
	h.t.Helper()
	if stdout == nil {
		stdout = new(syncBuffer)
	}
	var stderr syncBuffer
	full := append([]string{"--server", h.n.NATSURL(), "--creds", h.creds, "--timeout", "10s"}, args...)
	code := Run(ctx, full, Env{Stdin: strings.NewReader(""), Stdout: stdout, Stderr: &stderr, Getenv: func(string) string { return "" }, Version: "test"})
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// jsonl is each line as the API client gives it, encoded as agentctl
// prints it with -o jsonl.
func jsonl(t *testing.T, lines []api.AuditLine) string {
	t.Helper()
	var b strings.Builder
	for _, l := range lines {
		j, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(j, '\n'))
	}
	return b.String()
}

// audit tail prints every entry of its selection, across pages cut by
// count and by size, and with records larger than a page; --follow goes on
// after such a record; ledger export is byte for byte Store.Export.
func TestHistoryAgainstANode(t *testing.T) {
	h := newHistory(t)
	h.cancels(1500, "")
	h.garbage()
	h.cancels(1, strings.Repeat("lorem ipsum ", 50_000)) // 600 KB
	h.cancels(1200, "")
	all := h.settled()
	var big, mine, rejected []api.AuditLine
	for _, l := range all {
		if len(l.JWS) > 512<<10 {
			big = append(big, l)
		}
		if l.Run == h.run {
			mine = append(mine, l)
		}
		if l.Type == string(event.Rejected) {
			rejected = append(rejected, l)
		}
	}
	if len(big) != 1 || big[0].Type != string(event.RunCancel) || len(mine) < 2701 {
		t.Fatalf("ledger of %d records: %d larger than a page, %d of the run", len(all), len(big), len(mine))
	}
	if len(rejected) != 1 || len(rejected[0].JWS) != ledger.RejectRawMax {
		t.Fatalf("the refused 1 MiB message: %d records, want one keeping %d bytes", len(rejected), ledger.RejectRawMax)
	}
	ctx := context.Background()

	t.Run("all", func(t *testing.T) {
		r := h.ctl(ctx, nil, "audit", "tail", "-o", "jsonl")
		if r.code != 0 || r.stdout != jsonl(t, all) {
			t.Fatalf("audit tail -o jsonl: exit %d, %d lines, want %d; stderr %s", r.code, strings.Count(r.stdout, "\n"), len(all), r.stderr)
		}
		r = h.ctl(ctx, nil, "audit", "tail")
		if n := strings.Count(r.stdout, "\n"); r.code != 0 || n != len(all) {
			t.Fatalf("audit tail: exit %d, %d lines, want %d", r.code, n, len(all))
		}
		r = h.ctl(ctx, nil, "audit", "tail", "-o", "json")
		var got []api.AuditLine
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || len(got) != len(all) || got[big[0].Seq-1].JWS != big[0].JWS {
			t.Fatalf("audit tail -o json: %d lines, %v", len(got), err)
		}
	})

	t.Run("run", func(t *testing.T) {
		r := h.ctl(ctx, nil, "audit", "tail", "--run", h.run[:13], "-o", "jsonl")
		if r.code != 0 || r.stdout != jsonl(t, mine) {
			t.Fatalf("audit tail --run: exit %d, %d lines, want %d; stderr %s", r.code, strings.Count(r.stdout, "\n"), len(mine), r.stderr)
		}
		r = h.ctl(ctx, nil, "audit", "tail", "--run", "ffffffff")
		if r.code == 0 || !strings.Contains(r.stderr, "not found") {
			t.Fatalf("audit tail of an unknown run = %+v", r)
		}
	})

	t.Run("since", func(t *testing.T) {
		// From the large message on, by stream time.
		at := big[0].StreamTime
		from := 0
		for from < len(all) && all[from].StreamTime.Before(at) {
			from++
		}
		if all[from].Seq != big[0].Seq {
			t.Fatalf("stream times out of order: %v at seq %d", all[from].StreamTime, all[from].Seq)
		}
		fixed := time.Now()
		defer func(f func() time.Time) { now = f }(now)
		now = func() time.Time { return fixed }
		r := h.ctl(ctx, nil, "audit", "tail", "--since", fixed.Sub(at).String(), "-o", "jsonl")
		if r.code != 0 || r.stdout != jsonl(t, all[from:]) {
			t.Fatalf("audit tail --since: exit %d, %d lines, want %d; stderr %s", r.code, strings.Count(r.stdout, "\n"), len(all)-from, r.stderr)
		}
		r = h.ctl(ctx, nil, "audit", "tail", "--since", fixed.Sub(at).String(), "--run", h.run, "-o", "jsonl")
		var want []api.AuditLine
		for _, l := range all[from:] {
			if l.Run == h.run {
				want = append(want, l)
			}
		}
		if r.code != 0 || r.stdout != jsonl(t, want) {
			t.Fatalf("audit tail --since --run: exit %d, %d lines, want %d", r.code, strings.Count(r.stdout, "\n"), len(want))
		}
	})

	t.Run("export", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "export.jsonl")
		r := h.ctl(ctx, nil, "ledger", "export", "-f", file)
		if r.code != 0 {
			t.Fatalf("ledger export = %+v", r)
		}
		got, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if n := bytes.Count(got, []byte("\n")); n != len(all) {
			t.Fatalf("export has %d lines, the ledger %d", n, len(all))
		}
		h.n.Stop(t) // to read its ledger; Stop records nothing more
		st, err := ledger.Open(filepath.Join(h.n.Dir, "ledger"), ledger.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		var want bytes.Buffer
		if err := st.Export(&want); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("agentctl ledger export (%d bytes) differs from Store.Export (%d bytes)", len(got), want.Len())
		}
	})
}

// --follow prints what is committed, then each entry as it commits, and
// goes on after a record larger than a page.
func TestFollowGoesOnAfterALargeRecord(t *testing.T) {
	h := newHistory(t)
	h.cancels(10, "")
	all := h.settled()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := new(syncBuffer)
	done := make(chan result, 1)
	go func() { done <- h.ctl(ctx, out, "audit", "tail", "--follow", "-o", "jsonl") }()
	poll.Eventually(t, 10*time.Second, "the committed entries", func() bool { return strings.Count(out.String(), "\n") == len(all) })
	h.cancels(1, strings.Repeat("lorem ipsum ", 50_000)) // 600 KB
	h.cancels(3, "")
	want := len(all) + 1 + 3
	poll.Eventually(t, 10*time.Second, "the entries after the large one", func() bool { return strings.Count(out.String(), "\n") == want })
	cancel()
	r := <-done
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("follow ended with %+v", r)
	}
	if got := out.String(); got != jsonl(t, h.settled()) {
		t.Fatalf("followed lines differ from the ledger's (%d lines)", strings.Count(got, "\n"))
	}
}
