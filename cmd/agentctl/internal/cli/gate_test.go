package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest"
	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/natsauth"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/roles/policy"
)

// newSecureHarness is newHarness on a server in operator mode, as agentd
// runs NATS: its control line takes an operator's NATS user JWT (the
// 4 KiB of an open server's default no longer does).
func newSecureHarness(t *testing.T) *harness {
	t.Helper()
	h, _ := secureHarness(t)
	return h
}

// secureHarness is newSecureHarness and the identities it issued from,
// for tests that sign events as other operators or nodes.
func secureHarness(t *testing.T) (*harness, *bustest.Identities) {
	t.Helper()
	ids := bustest.NewIdentities(t)
	srv := bustest.SecureServer(t, ids.Root)
	op := ids.Node(t, "alice", event.RoleOperator)
	creds := filepath.Join(t.TempDir(), "operator.creds")
	if err := natsauth.WriteOperatorCreds(creds, ids.Root, op); err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, url: srv.ClientURL(), conn: bustest.ConnectHarness(t, srv, ids.Root), root: ids.Root, creds: creds}, ids
}

// gateServer answers gates.list from a list the test sets, one gate per
// page (so that every listing takes several pages), and policy.show with
// the shipped default policy as version 1: a stand-in for a ledger node,
// served by a real api.Server on the harness's NATS.
type gateServer struct {
	mu    sync.Mutex
	gates []api.Gate
	asked []api.GatesRequest
}

func (h *harness) withGates(gs ...api.Gate) *gateServer {
	h.t.Helper()
	s := &gateServer{gates: gs}
	srv := api.NewServer(h.conn.NC, "gates-node", nil)
	srv.Sign(h.signer(h.t, "gates-node"))
	api.HandleTyped(srv, api.MethodGatesList, s.list)
	api.HandleTyped(srv, api.MethodPolicyShow, func(_ context.Context, req api.PolicyRequest) (api.PolicyVersion, error) {
		if req.Version > 1 {
			return api.PolicyVersion{}, fmt.Errorf("%w: policy version %d", api.ErrNotFound, req.Version)
		}
		p := policy.Default()
		return api.PolicyVersion{PolicyRef: event.PolicyRef{Version: 1, Hash: p.Hash()}, Name: p.Name, Text: string(policy.DefaultYAML())}, nil
	})
	if err := srv.Start(); err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(srv.Stop)
	return s
}

func (s *gateServer) list(_ context.Context, req api.GatesRequest) (api.Page[api.Gate], error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked = append(s.asked, req)
	var match []api.Gate
	for _, g := range s.gates {
		if (req.Run == "" || strings.HasPrefix(g.Run, req.Run)) && (req.Step == "" || g.Step == req.Step) {
			match = append(match, g)
		}
	}
	if req.Run != "" && !strings.HasPrefix(runC, req.Run) && len(match) == 0 {
		return api.Page[api.Gate]{}, api.WithHint(fmt.Errorf("%w: no run matches %q", api.ErrNotFound, req.Run), "agentctl run list")
	}
	from := 0
	if req.Cursor != "" {
		from, _ = strconv.Atoi(req.Cursor)
	}
	if from >= len(match) {
		return api.Page[api.Gate]{Items: []api.Gate{}, End: true}, nil
	}
	return api.Page[api.Gate]{Items: match[from : from+1], Next: strconv.Itoa(from + 1), End: from+1 == len(match)}, nil
}

// gatedDeploy is a policy gate on `sudo rm -rf /var/www`, approved by bob,
// needing two approvers.
func gatedDeploy() api.Gate {
	cmd := "sudo rm -rf /var/www"
	v := policy.Default().Judge(cmd)
	ev := &event.Verdict{Action: v.Action.String(), Level: v.Level.String(), Rule: v.Rule, Why: v.Why, Reversible: v.Reversible}
	for _, h := range v.Highlights {
		ev.Highlights = append(ev.Highlights, event.Highlight{Text: h.Text, Flags: h.Flags, Start: h.Span.Start, End: h.Span.End, Rule: h.Rule, Why: h.Why})
	}
	spec := &event.Step{ID: "deploy", Kind: event.KindShell, Run: cmd, Cwd: "/srv", Env: map[string]string{"TOKEN": "x"}}
	ref := event.PolicyRef{Version: 1, Hash: policy.Default().Hash()}
	return api.Gate{Run: runC, Goal: "deploy", Step: "deploy", Attempt: 1, Kind: event.GatePolicy, Subject: event.GateSubject(*spec, ref), Policy: ref,
		Verdict: ev, Spec: spec, Approvals: 2, Approvers: []string{"bob"}, Submitter: "carol", Opened: time.Now().Add(-5 * time.Minute), Reason: v.Why}
}

// gatedPatch is a needs-decision gate on a file patch.
func gatedPatch() api.Gate {
	spec := &event.Step{ID: "config", Kind: event.KindFilePatch, Path: "app.conf", Patch: "--- a/app.conf\n+++ b/app.conf\n@@ -1 +1 @@\n-port 80\n+port 8080\n"}
	return api.Gate{Run: runC, Step: "config", Attempt: 2, Kind: event.GateNeedsDecision, Subject: event.GateSubject(*spec, event.PolicyRef{}), Spec: spec,
		Approvals: 1, Opened: time.Now().Add(-time.Hour), Reason: "attempt 1 on node-b may have partly run: the node was lost"}
}

// decided returns the gate.decided events published, as (run, payload).
func decided(t *testing.T, evs []*envelope.Envelope) (runs []string, ds []event.GateDecidedData) {
	t.Helper()
	for _, env := range evs {
		for _, ev := range env.Events {
			if ev.Type != event.GateDecided {
				continue
			}
			var d event.GateDecidedData
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				t.Fatal(err)
			}
			runs, ds = append(runs, ev.Run), append(ds, d)
		}
	}
	return runs, ds
}

func TestGateLsAndShow(t *testing.T) {
	h := newSecureHarness(t).withNode()
	gs := h.withGates()
	if r := h.run("gate", "ls"); r.code != 0 || r.stdout != "no open gates\n" {
		t.Fatalf("gate ls without gates = %+v", r)
	}
	gs.mu.Lock()
	gs.gates = []api.Gate{gatedPatch(), gatedDeploy()}
	gs.mu.Unlock()

	r := h.run("gate", "ls")
	if r.code != 0 || !containsRow(r.stdout, runC, "config", "needs-decision", "-", "-", "1h0m0s", "0/1") ||
		!containsRow(r.stdout, runC, "deploy", "policy", "high", gatedDeploy().Verdict.Rule, "5m0s", "1/2") {
		t.Fatalf("gate ls = %+v", r)
	}
	r = h.run("gate", "ls", "--run", "0190bb", "-o", "json")
	got := decodeJSON[[]api.Gate](t, r.stdout)
	if r.code != 0 || len(got) != 2 || got[1].Subject != gatedDeploy().Subject || got[1].Verdict == nil || len(got[1].Verdict.Highlights) == 0 {
		t.Fatalf("gate ls -o json = %+v", r)
	}

	r = h.run("gate", "show", "0190bb", "deploy")
	g := gatedDeploy()
	for _, want := range []string{
		"run         " + runC + " (deploy)",
		"step        deploy (attempt 1)",
		"command     [sudo] rm [-rf] [/var/www]",
		"cwd         /srv",
		"env         TOKEN",
		"verdict     confirm (level high)",
		"why         " + g.Verdict.Why,
		"approvals   1 of 2",
		"approved by bob",
		"subject     " + g.Subject,
		"policy      version 1 " + policy.Default().Hash(),
		"risky parts",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("gate show lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "x\n") || strings.Contains(r.stdout, "TOKEN=") {
		t.Errorf("gate show prints an environment value:\n%s", r.stdout)
	}
	r = h.run("gate", "show", runC, "config")
	for _, want := range []string{"file        app.conf (file.patch)", "why         attempt 1 on node-b may have partly run", "diff\n--- a/app.conf", "+port 8080"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("gate show of a patch lacks %q:\n%s", want, r.stdout)
		}
	}
	// No such gate, no such run: clear errors.
	if r := h.run("gate", "show", runC, "nowhere"); r.code != ExitError ||
		!strings.Contains(r.stderr, "step nowhere of run "+runC+" has no open gate") || !strings.Contains(r.stderr, "hint: agentctl gate ls") {
		t.Fatalf("gate show of no gate = %+v", r)
	}
	if r := h.run("gate", "show", "ffff", "deploy"); r.code != ExitError || !strings.Contains(r.stderr, `no run matches "ffff"`) {
		t.Fatalf("gate show of no run = %+v", r)
	}
	if r := h.run("gate", "show", runC); r.code != ExitError || !strings.Contains(r.stderr, "run "+runC+" has no open plan gate") {
		t.Fatalf("gate show of no plan gate = %+v", r)
	}
}

func TestMarkRisky(t *testing.T) {
	hs := []event.Highlight{{Start: 0, End: 4}, {Start: 5, End: 8}, {Start: -1, End: 0}, {Start: 3, End: 99}, {Text: "-rf", Start: 9, End: 12}}
	if got := markRisky("sudo rm -rf /", hs, false); got != "[sudo] [rm ]-rf /" {
		t.Errorf("brackets = %q", got)
	}
	if got := markRisky("sudo rm", hs[:1], true); got != "\x1b[1;7msudo\x1b[0m rm" {
		t.Errorf("terminal = %q", got)
	}
}

// TestGateAnswers: approve, edit, skip and deny read the gate and publish
// gate.decided naming its run, step and subject; answers the leader would
// ignore, and bad command lines, publish nothing.
func TestGateAnswers(t *testing.T) {
	h := newSecureHarness(t).withNode()
	h.node.with(func(f *fakeNode) { f.streamAudit = true })
	h.withGates(gatedDeploy(), gatedPatch())
	subject := gatedDeploy().Subject

	refused := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"gate", "skip", runC, "deploy"}, ExitUsage, "gate skip: --reason is required"},
		{[]string{"gate", "deny", runC, "deploy", "--reason", " "}, ExitUsage, "gate deny: --reason is required"},
		{[]string{"gate", "edit", runC, "deploy"}, ExitUsage, "gate edit: --command is required"},
		{[]string{"gate", "approve", runC, "nowhere"}, ExitError, "step nowhere of run " + runC + " has no open gate (nothing was published)"},
		{[]string{"gate", "edit", runC, "config", "--command", "true"}, ExitError, "step config of run " + runC + " is not a shell command"},
		{[]string{"gate", "edit", runC, "deploy", "--command", "sudo rm -rf /var/www"}, ExitError, "the new command is the gated one"},
		{[]string{"gate", "review"}, ExitError, "standard input is not a terminal"},
	}
	for _, tt := range refused {
		r := h.run(tt.args...)
		if r.code != tt.code || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("%v = %+v, want exit %d and %q", tt.args, r, tt.code, tt.want)
		}
	}
	if n := len(h.events()); n != 0 {
		t.Fatalf("%d events published by refused answers", n)
	}

	// sudo wraps the command: no rule names it exactly, so --remember
	// is refused before anything is published.
	if r := h.run("gate", "approve", "0190bb", "deploy", "--remember"); r.code != ExitError || !strings.Contains(r.stderr, "--remember: no allow rule can name exactly") {
		t.Fatalf("gate approve --remember of a sudo command = %+v", r)
	}
	r := h.run("gate", "approve", "0190bb", "deploy")
	if r.code != 0 || !strings.Contains(r.stdout, "accept of step deploy of run "+runC+" recorded (event ") {
		t.Fatalf("gate approve = %+v", r)
	}
	r = h.run("gate", "edit", runC, "deploy", "--command", "rm ./build/app", "--reason", "narrower")
	for _, want := range []string{"--- gated command\n+++ new command\n- sudo rm -rf /var/www\n+ rm ./build/app\n",
		"policy version 1 judges the new command: allow (level low, rule default)", "edit of step deploy of run " + runC + " recorded"} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("gate edit lacks %q: %+v", want, r)
		}
	}
	r = h.run("gate", "skip", runC, "config", "--reason", "done by hand", "-o", "json")
	res := decodeJSON[gateResult](t, r.stdout)
	if r.code != 0 || res.Action != event.GateSkip || res.Step != "config" || res.Subject != gatedPatch().Subject || res.Event == "" {
		t.Fatalf("gate skip -o json = %+v", r)
	}
	// The edit closed deploy's gate (the fake's gate stays listed): a deny
	// after it is published, and counts for nothing.
	if r := h.run("gate", "deny", runC, "deploy", "--reason", "not in the freeze"); r.code != ExitError ||
		!strings.Contains(r.stderr, "error: edit of step deploy of run "+runC+" by alice came first") {
		t.Fatalf("gate deny after the edit = %+v", r)
	}

	evs := h.events()
	runs, ds := decided(t, evs)
	want := []event.GateDecidedData{
		{Step: "deploy", Subject: subject, Action: event.GateAccept},
		{Step: "deploy", Subject: subject, Action: event.GateEdit, Command: "rm ./build/app", Reason: "narrower"},
		{Step: "config", Subject: gatedPatch().Subject, Action: event.GateSkip, Reason: "done by hand"},
		{Step: "deploy", Subject: subject, Action: event.GateDeny, Reason: "not in the freeze"},
	}
	if len(ds) != len(want) || len(evs) != len(want) {
		t.Fatalf("published %d events, %d gate.decided: %+v", len(evs), len(ds), ds)
	}
	for i := range want {
		if ds[i] != want[i] || runs[i] != runC || evs[i].Signer.ID != "alice" {
			t.Errorf("answer %d = run %s %+v by %s, want %+v", i, runs[i], ds[i], evs[i].Signer.ID, want[i])
		}
	}
}

// TestGateApproveRefusedForApprover: the same approver twice, and the
// submitter of a run whose gate excludes them, are refused before
// anything is published.
func TestGateApproveRefusedForApprover(t *testing.T) {
	h := newSecureHarness(t).withNode()
	again := gatedDeploy()
	again.Approvers = []string{"alice"}
	own := gatedPatch()
	own.NotSubmitter, own.Submitter = true, "alice"
	h.withGates(again, own)
	if r := h.run("gate", "approve", runC, "deploy"); r.code != ExitError || !strings.Contains(r.stderr, "alice already approved step deploy") {
		t.Fatalf("approve twice = %+v", r)
	}
	if r := h.run("gate", "approve", runC, "config"); r.code != ExitError || !strings.Contains(r.stderr, "alice submitted run "+runC) {
		t.Fatalf("approve own run = %+v", r)
	}
	if n := len(h.events()); n != 0 {
		t.Fatalf("%d events published", n)
	}
}

// TestGateReview walks the gates with keys: the first is left open, the
// second skipped after an empty reason is asked again, and the edit of
// the next accepted after its diff; then the input ends.
func TestGateReview(t *testing.T) {
	h := newSecureHarness(t).withNode()
	h.node.with(func(f *fakeNode) { f.streamAudit = true })
	second := gatedDeploy()
	second.Step, second.Spec = "cleanup", &event.Step{ID: "cleanup", Kind: event.KindShell, Run: "rm -rf ./tmp"}
	second.Subject = event.GateSubject(*second.Spec, second.Policy)
	h.withGates(gatedPatch(), gatedDeploy(), second)
	old := stdinTerminal
	stdinTerminal = func(io.Reader) bool { return true }
	t.Cleanup(func() { stdinTerminal = old })

	r := h.runIn("n\nx\ns\n\nnot needed\ne\nrm ./build/app\ny\n", "gate", "review")
	if r.code != 0 {
		t.Fatalf("gate review = %+v", r)
	}
	for _, want := range []string{"gate 1 of 3", "gate 3 of 3", "reason to skip (required): reason to skip (required): ", "+ rm ./build/app", "2 answered, 1 left open"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("gate review lacks %q:\n%s", want, r.stdout)
		}
	}
	_, ds := decided(t, h.events())
	want := []event.GateDecidedData{
		{Step: "deploy", Subject: gatedDeploy().Subject, Action: event.GateSkip, Reason: "not needed"},
		{Step: "cleanup", Subject: event.GateSubject(*second.Spec, second.Policy), Action: event.GateEdit, Command: "rm ./build/app"},
	}
	if len(ds) != 2 || ds[0] != want[0] || ds[1] != want[1] {
		t.Fatalf("review published %+v, want %+v", ds, want)
	}
}

func TestRunPauseResume(t *testing.T) {
	h := newSecureHarness(t).withNode()
	done := heldRun()
	done.ID, done.Status = runA, "succeeded"
	h.node.with(func(f *fakeNode) { f.runs = []api.Run{heldRun(), done} })

	if r := h.run("run", "pause", "0190bb", "--reason", "target down"); r.code != 0 || !strings.HasPrefix(r.stdout, "pause requested for run "+runC+" (event ") {
		t.Fatalf("run pause = %+v", r)
	}
	r := h.run("run", "resume", runC, "-o", "json")
	res := decodeJSON[brakeResult](t, r.stdout)
	if r.code != 0 || res.Run != runC || res.Action != "resume" || res.Event == "" {
		t.Fatalf("run resume = %+v", r)
	}
	if r := h.run("run", "pause", runA); r.code != ExitError || !strings.Contains(r.stderr, "run "+runA+" already finished (succeeded): nothing to pause") {
		t.Fatalf("pause of a finished run = %+v", r)
	}
	evs := h.events()
	if len(evs) != 2 || evs[0].Type != event.RunPause || evs[1].Type != event.RunResume {
		t.Fatalf("published %+v", evs)
	}
	if ev := evs[0].Events[0]; ev.Run != runC || string(ev.Data) != `{"reason":"target down"}` {
		t.Errorf("pause event = %+v %s", ev, ev.Data)
	}
}

// TestGateAnswerBindsToWhatWasShown: agentctl binds an answer to the hash
// it computes from the step it shows, says what it binds to before it
// sends, and refuses a gate whose listed subject is not the hash of its
// content (an answer would bind to something other than what was shown).
func TestGateAnswerBindsToWhatWasShown(t *testing.T) {
	h := newSecureHarness(t).withNode()
	lying := gatedDeploy()
	lying.Step, lying.Subject = "other", "sha256:"+strings.Repeat("0", 64)
	lying.Spec.ID = "other"
	h.withGates(gatedDeploy(), lying)

	r := h.run("gate", "approve", runC, "other")
	if r.code != ExitError || !strings.Contains(r.stderr, "is not the hash of the step it shows") || !strings.Contains(r.stderr, "nothing was published") {
		t.Fatalf("approve of a gate whose subject lies = %+v", r)
	}
	if n := len(h.events()); n != 0 {
		t.Fatalf("%d events published for a gate whose subject lies", n)
	}
	r = h.run("gate", "approve", runC, "deploy")
	subject := gatedDeploy().Subject
	for _, want := range []string{"binding the answer to step deploy of run " + runC, "command  sudo rm -rf /var/www", "subject  " + subject} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("gate approve does not say %q: %+v", want, r)
		}
	}
}
