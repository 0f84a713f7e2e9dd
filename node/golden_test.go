package node_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/natsauth"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/config"
	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/nodetest"
	"github.com/nats-io/nats.go/jetstream"
)

var goldenWrite = flag.Bool("golden-write", false, "write testdata/golden/v<protocol version> (TestGoldenWrite); never rewrites an existing one")

const goldenDir = "testdata/golden"

// goldenFutureType is the type of the event from a newer version in the
// golden history: in a category an executor publishes, and a name no
// version will give a type.
const goldenFutureType event.Type = "task.golden_future_probe"

// goldenRecord is what a golden ledger's node served and its ledger held
// (vN.json). Served views are kept as the JSON the API answered, so that a
// later version compares the fields it still serves, whatever it adds.
type goldenRecord struct {
	// Protocol is the protocol version that wrote the ledger.
	Protocol int `json:"protocol"`
	// Generated is when (information only).
	Generated time.Time `json:"generated"`
	// Node is the node's name and roles.
	Node struct {
		Name  string   `json:"name"`
		Roles []string `json:"roles"`
	} `json:"node"`
	Ledger goldenLedger `json:"ledger"`
	// Rejections are the event.rejected records, in ledger order.
	Rejections []goldenRejection `json:"rejections"`
	// UnknownTypes are the types recorded that this version did not know.
	UnknownTypes []string `json:"unknown_types"`
	// Runs is runs.list, every page, newest first; RunViews is runs.get of
	// each, every step, in the same order.
	Runs     []json.RawMessage `json:"runs"`
	RunViews []json.RawMessage `json:"run_views"`
	// Memory is memory.list of every scope.
	Memory []json.RawMessage `json:"memory"`
}

type goldenLedger struct {
	HeadSeq          uint64 `json:"head_seq"`
	HeadHash         string `json:"head_hash"`
	AppliedStreamSeq uint64 `json:"applied_stream_seq"`
	// Verify is the report of ledger.Store.Verify with the writer's
	// verifier.
	Verify struct {
		OK       bool              `json:"ok"`
		Events   uint64            `json:"events"`
		Head     string            `json:"head"`
		Versions map[string]uint64 `json:"versions"`
	} `json:"verify"`
}

type goldenRejection struct {
	Seq         uint64           `json:"seq"`
	Code        event.RejectCode `json:"code"`
	Signer      string           `json:"signer"`
	ClaimedType string           `json:"claimed_type"`
}

// The golden history's plans.
const (
	goldenShipPlan = `goal: Build and ship
subgoals:
  - id: build
    title: Build the app
    steps:
      - id: fetch
        title: Fetch the sources
        run: echo fetched
        timeout: 10s
      - id: cache
        title: Restore the cache (skipped by its check)
        run: echo never runs
        check: "true"
      - id: compile
        title: Compile (fails once, succeeds on retry)
        run: |
          if [ -f compile.once ]; then echo compiled; else touch compile.once; echo flaky >&2; exit 1; fi
        depends_on: [fetch, cache]
        retries: 2
        backoff: 100ms
        on_failure: retry
  - id: ship
    title: Ship it
    depends_on: [build]
    steps:
      - id: upload
        run: echo "uploading to $TARGET"
        env: {TARGET: staging}
        idempotent: true
      - id: notify
        kind: noop
        depends_on: [upload]
steps:
  - id: done
    kind: noop
    depends_on: [ship]
`
	goldenMigratePlan = `goal: Migrate the database
steps:
  - id: backup
    run: echo backed up
  - id: lint
    title: Lint (times out, the run continues)
    run: sleep 10
    timeout: 1s
    on_failure: continue
  - id: migrate
    run: echo "migration 42 failed" >&2; exit 2
    depends_on: [backup, lint]
  - id: verify
    run: echo verified
    depends_on: [migrate]
`
	goldenSoakPlan = `goal: Long soak
steps:
  - id: prepare
    kind: noop
  - id: soak
    run: sleep 60
    depends_on: [prepare]
`
	// goldenCarryOnPlan is what a later version runs on a golden ledger.
	goldenCarryOnPlan = `goal: Carry on
subgoals:
  - id: check
    steps:
      - id: look
        run: echo the ledger carries on
  - id: finish
    depends_on: [check]
    steps:
      - id: done
        kind: noop
`
)

// goldenConfig is the configuration of a golden ledger's node.
func goldenConfig(dir, name string, roles []string) config.Config {
	cfg := nodetest.Config(dir)
	cfg.Name = name
	if roles != nil {
		cfg.Roles = roles
	}
	return cfg
}

// TestGoldenWrite writes the golden ledger of this protocol version N
// (envelope.Version); it runs only with -golden-write. A golden ledger is
// a data directory, committed under testdata/golden, that every later
// version must read (TestGoldenLedgers):
//
//   - vN.tar.gz is the whole data directory of a node (FORMAT, the keys —
//     test keys, root.key included —, ledger/, nats/: the JetStream store,
//     outbox/, executor/; not work/) that ran a small but rich history
//     with the real code of version N, and stopped cleanly;
//   - vN.json is what that node served and what its ledger held when it
//     stopped (goldenRecord).
//
// The history of v1:
//
//   - run "Build and ship": a plan file with two subgoals, one depending
//     on the other, a step skipped by its check guard, and a step that
//     fails once and succeeds on its retry (on_failure: retry) — succeeded;
//   - run "Migrate the database": a step that times out with on_failure:
//     continue, then one that fails for good (exit 2), whose dependent is
//     cancelled — failed (step_failed);
//   - run "Long soak": cancelled by an operator while its step runs
//     (cancelled_by_operator);
//   - memory.put facts: shared, overwritten, run-scoped, one with a TTL of
//     five minutes (expired for every later reader) and one of a hundred
//     years;
//   - raw messages on the bus that become event.rejected records with
//     codes: a memory.put signed by a stranger's root (unknown_signer), a
//     goal.submitted signed by an enrolled executor (role_not_allowed), a
//     valid memory.put published twice (replayed);
//   - an event of a type this version does not know (goldenFutureType),
//     signed by an enrolled executor under protocol version N+1: recorded
//     and skipped.
//
// A golden ledger is never rewritten. When a protocol version N+1 is
// added, extend the history with what N+1 brings and run
//
//	go test ./node -run TestGoldenWrite -golden-write
//
// which writes testdata/golden/v<N+1>.tar.gz and .json beside the older
// ones, and refuses to overwrite an existing file (delete one by hand only
// if its version was never released). The older ledgers must keep passing
// unchanged.
func TestGoldenWrite(t *testing.T) {
	if !*goldenWrite {
		t.Skip("writes a golden ledger: go test ./node -run TestGoldenWrite -golden-write")
	}
	base := filepath.Join(goldenDir, fmt.Sprintf("v%d", envelope.Version))
	for _, p := range []string{base + ".tar.gz", base + ".json"} {
		if _, err := os.Stat(p); err == nil {
			t.Fatalf("%s exists: a released golden ledger is never rewritten (delete it by hand only if protocol version %d was never released)", p, envelope.Version)
		}
	}
	dir := t.TempDir()
	cfg := goldenConfig(dir, "golden", nil)
	n := nodetest.Start(t, cfg)
	ctx := context.Background()
	root, err := trust.LoadRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	// An executor enrolled in the cluster (it signs what an executor may
	// not, and a newer version's event) and a stranger's operator.
	exec, err := trust.NewIdentity(root, "golden-exec", trust.KindNode, []string{event.RoleExecutor}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	otherRoot, err := trust.NewRoot()
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := trust.NewIdentity(otherRoot, "operator", trust.KindOperator, []string{event.RoleOperator}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}

	// Plans: retried, failed, cancelled.
	ship := n.WaitRun(t, submit(t, n, "ship.yaml", "Build and ship", goldenShipPlan), 60*time.Second)
	wantRun(t, ship, event.RunSucceeded, map[string]string{"fetch": "succeeded", "cache": "skipped", "compile": "succeeded", "upload": "succeeded", "notify": "succeeded", "done": "succeeded"})
	if s := step(t, ship, "compile"); s.Attempt != 2 {
		t.Fatalf("compile: attempt %d, want 2 (failed once, retried)", s.Attempt)
	}
	migrate := n.WaitRun(t, submit(t, n, "migrate.yaml", "Migrate the database", goldenMigratePlan), 60*time.Second)
	wantRun(t, migrate, event.RunFailed, map[string]string{"backup": "succeeded", "lint": "failed", "migrate": "failed", "verify": "cancelled"})
	soakID := submit(t, n, "soak.yaml", "Long soak", goldenSoakPlan)
	poll.Eventually(t, 30*time.Second, "step soak running", func() bool {
		r, err := n.API.RunsGet(ctx, soakID)
		return err == nil && len(r.Steps) == 2 && r.Steps[1].Status == "running"
	})
	publish(t, n, n.Operator, event.MustDraft(event.RunCancel, soakID, event.RunCancelData{Reason: "the soak is not needed"}))
	soak := n.WaitRun(t, soakID, 30*time.Second)
	wantRun(t, soak, event.RunCancelled, map[string]string{"prepare": "succeeded", "soak": "cancelled"})

	// Memory: shared, overwritten, run-scoped, with TTLs.
	puts := []event.MemoryPutData{
		{Scope: "shared", Key: "deploy.target", Value: "staging"},
		{Scope: "shared", Key: "deploy.target", Value: "production"},
		{Scope: ship.ID, Key: "artifact", Value: "app.bin"},
		{Scope: "shared", Key: "lock.soak", Value: "held", TTL: event.Duration(5 * time.Minute)},
		{Scope: "shared", Key: "release.train", Value: "2026.11", TTL: event.Duration(100 * 365 * 24 * time.Hour)},
	}
	for _, p := range puts {
		publish(t, n, n.Operator, event.MustDraft(event.MemoryPut, "", p))
	}

	// Raw messages on the bus: forged, not allowed, replayed, from the
	// future.
	var last uint64
	raw := func(subject string, msg []byte, msgID string) {
		t.Helper()
		ack, err := n.JS.Publish(ctx, subject, msg, jetstream.WithMsgID(msgID))
		if err != nil {
			t.Fatal(err)
		}
		last = ack.Sequence
	}
	sign := func(id *trust.Identity, version int, d event.Draft) []byte {
		t.Helper()
		b, _, err := envelope.SignAt(id, []event.Draft{d}, time.Now(), version)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	forged := event.MustDraft(event.MemoryPut, "", event.MemoryPutData{Scope: "shared", Key: "deploy.target", Value: "attacker"})
	raw(forged.Subject(), sign(stranger, envelope.Version, forged), "golden-forged")
	goal := event.MustDraft(event.GoalSubmitted, event.NewID(), event.GoalSubmittedData{Goal: "not an executor's to submit", PlanFile: goldenCarryOnPlan})
	raw(goal.Subject(), sign(exec, envelope.Version, goal), "golden-not-allowed")
	owner := event.MustDraft(event.MemoryPut, "", event.MemoryPutData{Scope: "shared", Key: "owner", Value: "ops"})
	ownerMsg := sign(n.Operator, envelope.Version, owner)
	raw(owner.Subject(), ownerMsg, "golden-owner")
	raw(owner.Subject(), ownerMsg, "golden-owner-replayed")
	future := event.MustDraft(goldenFutureType, ship.ID, map[string]any{"step": "compile", "note": "a type of a newer version"})
	raw(future.Subject(), sign(exec, envelope.Version+1, future), "golden-future")
	poll.Eventually(t, 20*time.Second, "the raw messages in the ledger", func() bool {
		var top uint64
		for l, err := range n.API.AuditLines(ctx, api.AuditRequest{}) {
			if err != nil {
				return false
			}
			top = max(top, l.StreamSeq)
		}
		return top >= last
	})

	// What the node serves.
	var rec goldenRecord
	rec.Protocol = envelope.Version
	rec.Generated = time.Now().UTC().Truncate(time.Second)
	rec.Node.Name, rec.Node.Roles = cfg.Name, cfg.Roles
	var runs []api.RunSummary
	if _, err := n.API.RunsListAll(ctx, api.RunsListRequest{}, 0, func(s api.RunSummary) error {
		runs = append(runs, s)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(runs) != 3 {
		t.Fatalf("%d runs, want 3 (the refused goal makes none)", len(runs))
	}
	for _, s := range runs {
		r, err := n.API.RunsGet(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		rec.Runs = append(rec.Runs, mustJSON(t, s))
		rec.RunViews = append(rec.RunViews, mustJSON(t, r))
	}
	facts, err := n.API.MemoryList(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(facts) != 5 {
		t.Fatalf("memory: %+v, want 5 facts", facts)
	}
	for _, f := range facts {
		if f.Key == "deploy.target" && f.Value != "production" {
			t.Fatalf("deploy.target = %q: the forged put or the first put won", f.Value)
		}
		rec.Memory = append(rec.Memory, mustJSON(t, f))
	}
	n.Stop(t)

	// What the ledger holds, read offline.
	st, err := ledger.Open(filepath.Join(dir, "ledger"), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := st.Verify(envelope.NewVerifier(root))
	if err != nil || !rep.OK {
		st.Close()
		t.Fatalf("verify: %+v %v", rep, err)
	}
	seq, hash := st.Head()
	rec.Ledger.HeadSeq, rec.Ledger.HeadHash, rec.Ledger.AppliedStreamSeq = seq, hex.EncodeToString(hash[:]), st.AppliedStreamSeq()
	rec.Ledger.Verify.OK, rec.Ledger.Verify.Events, rec.Ledger.Verify.Head = rep.OK, rep.Events, hex.EncodeToString(rep.Head[:])
	rec.Ledger.Verify.Versions = map[string]uint64{}
	for v, c := range rep.Versions {
		rec.Ledger.Verify.Versions[strconv.Itoa(v)] = c
	}
	rec.Rejections, rec.UnknownTypes = ledgerOddities(t, st, 1)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	codes := make([]event.RejectCode, len(rec.Rejections))
	for i, r := range rec.Rejections {
		codes[i] = r.Code
	}
	if want := []event.RejectCode{event.RejectUnknownSigner, event.RejectRoleNotAllowed, event.RejectReplayed}; !slices.Equal(codes, want) {
		t.Fatalf("rejections %+v, want codes %v", rec.Rejections, want)
	}
	if !slices.Equal(rec.UnknownTypes, []string{string(goldenFutureType)}) {
		t.Fatalf("unknown types %v, want [%s]", rec.UnknownTypes, goldenFutureType)
	}
	// Every message on the stream is in the ledger: a later reader whose
	// stream has dropped them by age must miss nothing.
	if last := streamLastSeq(t, dir, cfg.Name); last != rec.Ledger.AppliedStreamSeq {
		t.Fatalf("the stream ends at %d, the ledger has folded up to %d", last, rec.Ledger.AppliedStreamSeq)
	}

	if err := os.MkdirAll(goldenDir, 0o755); err != nil {
		t.Fatal(err)
	}
	var tgz bytes.Buffer
	if err := tarDataDir(&tgz, dir); err != nil {
		t.Fatal(err)
	}
	js, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(base+".tar.gz", tgz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(base+".json", append(js, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s.tar.gz (%d bytes) and %s.json: %d records, head %s", base, tgz.Len(), base, seq, rec.Ledger.HeadHash)
}

// TestGoldenLedgers reads every golden ledger under testdata/golden (see
// TestGoldenWrite), always, in every later version:
//
//  1. the ledger verifies with this build's verifier, with the recorded
//     head (seq and hash), event count, messages per version, rejection
//     codes and unknown types;
//  2. a node started on the directory (after the node's and operator's
//     credentials are issued again from root.key: they expire a year after
//     they were written, and new events need valid ones) serves the
//     recorded runs, steps, statuses, codes and memory facts. A recorded
//     field must be served unchanged; fields a later version adds are not
//     compared. A fact whose expiry has passed by today's clock must be
//     reported missing;
//  3. the node carries on: a new goal succeeds, and the new records chain
//     onto the recorded head, verify, and hold no rejection or gap (nothing
//     old is judged by today's clock).
//
// Steps 2 and 3 run three times: on the directory as written; after the
// events stream has dropped every message by age (its retention is 30
// days: what a reader finds after that); and with the ledger re-imported
// from its export, without snapshots or run index, so that this build
// folds every recorded event again.
func TestGoldenLedgers(t *testing.T) {
	tars, err := filepath.Glob(filepath.Join(goldenDir, "v*.tar.gz"))
	if err != nil {
		t.Fatal(err)
	}
	if len(tars) == 0 {
		t.Fatalf("no golden ledger in %s", goldenDir)
	}
	for _, tgz := range tars {
		name := strings.TrimSuffix(filepath.Base(tgz), ".tar.gz")
		t.Run(name, func(t *testing.T) {
			rec := readGoldenRecord(t, strings.TrimSuffix(tgz, ".tar.gz")+".json")
			t.Run("as written", func(t *testing.T) {
				dir := extractGolden(t, tgz)
				checkGoldenLedger(t, dir, rec)
				carryOn(t, dir, rec)
			})
			t.Run("stream expired", func(t *testing.T) {
				dir := extractGolden(t, tgz)
				// Its NATS files first: a golden data dir predates them.
				reissueCredentials(t, dir, rec)
				expireEvents(t, dir, rec.Node.Name)
				carryOn(t, dir, rec)
			})
			t.Run("refolded", func(t *testing.T) {
				dir := extractGolden(t, tgz)
				reimportLedger(t, dir, rec)
				carryOn(t, dir, rec)
			})
		})
	}
}

func readGoldenRecord(t *testing.T, path string) goldenRecord {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rec goldenRecord
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rec); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	// A record that holds nothing would make every comparison pass.
	if rec.Ledger.HeadSeq == 0 || len(rec.Runs) == 0 || len(rec.Runs) != len(rec.RunViews) || len(rec.Memory) == 0 || len(rec.Rejections) == 0 || rec.Node.Name == "" {
		t.Fatalf("%s records too little: %+v", path, rec)
	}
	return rec
}

// checkGoldenLedger opens the ledger offline: it verifies with this
// build's verifier and holds what was recorded.
func checkGoldenLedger(t *testing.T, dir string, rec goldenRecord) {
	t.Helper()
	root, err := trust.LoadRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := ledger.Open(filepath.Join(dir, "ledger"), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rep, err := st.Verify(envelope.NewVerifier(root))
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK || rep.Events != rec.Ledger.Verify.Events || hex.EncodeToString(rep.Head[:]) != rec.Ledger.HeadHash {
		t.Fatalf("verify: ok %v, %d events, head %x, first bad %d (%s); recorded %d events, head %s",
			rep.OK, rep.Events, rep.Head, rep.FirstBadSeq, rep.Err, rec.Ledger.Verify.Events, rec.Ledger.HeadHash)
	}
	versions := map[string]uint64{}
	for v, c := range rep.Versions {
		versions[strconv.Itoa(v)] = c
	}
	if !maps.Equal(versions, rec.Ledger.Verify.Versions) {
		t.Errorf("messages per version %v, recorded %v", versions, rec.Ledger.Verify.Versions)
	}
	seq, hash := st.Head()
	if seq != rec.Ledger.HeadSeq || hex.EncodeToString(hash[:]) != rec.Ledger.HeadHash || st.AppliedStreamSeq() != rec.Ledger.AppliedStreamSeq {
		t.Errorf("head %d %x, applied stream seq %d; recorded %d %s, %d", seq, hash, st.AppliedStreamSeq(), rec.Ledger.HeadSeq, rec.Ledger.HeadHash, rec.Ledger.AppliedStreamSeq)
	}
	rejections, unknown := ledgerOddities(t, st, 1)
	if !reflect.DeepEqual(rejections, rec.Rejections) {
		t.Errorf("rejections %+v, recorded %+v", rejections, rec.Rejections)
	}
	if !slices.Equal(unknown, rec.UnknownTypes) {
		t.Errorf("unknown types %v, recorded %v", unknown, rec.UnknownTypes)
	}
}

// ledgerOddities returns the event.rejected records from seq from on and
// the types recorded that this build does not know.
func ledgerOddities(t *testing.T, st *ledger.Store, from uint64) ([]goldenRejection, []string) {
	t.Helper()
	known := map[event.Type]bool{}
	for _, s := range event.Types() {
		known[s.Type] = true
	}
	var rejections []goldenRejection
	unknown := map[string]bool{}
	for r, err := range st.Scan(from) {
		if err != nil {
			t.Fatal(err)
		}
		switch ev := r.Event; {
		case ev.Type == event.Rejected:
			var d event.RejectedData
			if err := ev.Decode(&d); err != nil {
				t.Fatal(err)
			}
			rejections = append(rejections, goldenRejection{Seq: ev.Seq, Code: d.Code, Signer: d.Signer, ClaimedType: d.ClaimedType})
		case !known[ev.Type]:
			unknown[string(ev.Type)] = true
		}
	}
	return rejections, slices.Sorted(maps.Keys(unknown))
}

// carryOn starts a node on the golden directory, compares what it serves
// with the record, runs a new goal and checks the new records.
func carryOn(t *testing.T, dir string, rec goldenRecord) {
	t.Helper()
	reissueCredentials(t, dir, rec)
	n := nodetest.Start(t, goldenConfig(dir, rec.Node.Name, rec.Node.Roles))
	ctx := context.Background()
	poll.Eventually(t, 30*time.Second, "the node ready", func() bool { return n.Ready() == nil })

	// Runs: the listing and every run, step by step.
	var runs []api.RunSummary
	if _, err := n.API.RunsListAll(ctx, api.RunsListRequest{}, 0, func(s api.RunSummary) error {
		runs = append(runs, s)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(runs) != len(rec.Runs) {
		t.Fatalf("%d runs served, %d recorded", len(runs), len(rec.Runs))
	}
	for i, s := range runs {
		checkServed(t, fmt.Sprintf("runs.list[%d]", i), rec.Runs[i], s)
		r, err := n.API.RunsGet(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		checkServed(t, "runs.get "+s.ID, rec.RunViews[i], r)
	}
	checkMemory(t, n, rec.Memory)

	// A new goal, on top of the history.
	run := n.WaitRun(t, submit(t, n, "carry-on.yaml", "Carry on", goldenCarryOnPlan), 60*time.Second)
	wantRun(t, run, event.RunSucceeded, map[string]string{"look": "succeeded", "done": "succeeded"})
	n.Stop(t)

	root, err := trust.LoadRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := ledger.Open(filepath.Join(dir, "ledger"), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	head, err := st.Get(rec.Ledger.HeadSeq)
	if err != nil {
		t.Fatal(err)
	}
	if hex.EncodeToString(head.Hash[:]) != rec.Ledger.HeadHash {
		t.Fatalf("hash at the recorded head %d: %x, recorded %s", rec.Ledger.HeadSeq, head.Hash, rec.Ledger.HeadHash)
	}
	rep, err := st.Verify(envelope.NewVerifier(root))
	if err != nil || !rep.OK || rep.Events <= rec.Ledger.HeadSeq {
		t.Fatalf("verify after carrying on: %+v %v (recorded head %d)", rep, err, rec.Ledger.HeadSeq)
	}
	if rep.Versions[envelope.Version] <= rec.Ledger.Verify.Versions[strconv.Itoa(envelope.Version)] {
		t.Errorf("messages of version %d: %d, recorded %d: the new events were not verified", envelope.Version, rep.Versions[envelope.Version], rec.Ledger.Verify.Versions[strconv.Itoa(envelope.Version)])
	}
	// The history is closed: nothing new names a recorded run.
	old := map[string]bool{}
	for _, raw := range rec.Runs {
		var s api.RunSummary
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		old[s.ID] = true
	}
	var finished bool
	for r, err := range st.Scan(rec.Ledger.HeadSeq + 1) {
		if err != nil {
			t.Fatal(err)
		}
		if old[r.Event.Run] {
			t.Errorf("new record %d of recorded run %s: %s %s", r.Event.Seq, r.Event.Run, r.Event.Type, r.Event.Data)
		}
		switch ev := r.Event; ev.Type {
		case event.Rejected, event.Gap:
			t.Errorf("new record %d: %s %s", ev.Seq, ev.Type, ev.Data)
		case event.RunFinished:
			var d event.RunFinishedData
			if err := ev.Decode(&d); err != nil {
				t.Fatal(err)
			}
			finished = finished || ev.Run == run.ID && d.Status == event.RunSucceeded
		}
	}
	if !finished {
		t.Errorf("no run.finished succeeded for %s after the recorded head", run.ID)
	}
}

// reissueCredentials issues the node's and the operator's credentials
// again from the root key in dir (agentctl node enroll --force, agentctl
// keys operator): those recorded expire a year after they were written.
func reissueCredentials(t *testing.T, dir string, rec goldenRecord) {
	t.Helper()
	root, err := trust.LoadIssuer(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := natsauth.Enroll(dir, root, rec.Node.Name, rec.Node.Roles, trust.NodeCredentialTTL, true); err != nil {
		t.Fatal(err)
	}
	op, err := trust.NewIdentity(root, trust.DefaultOperator, trust.KindOperator, []string{trust.OperatorRole}, trust.OperatorCredentialTTL)
	if err != nil {
		t.Fatal(err)
	}
	if err := natsauth.WriteOperatorCreds(filepath.Join(dir, trust.OperatorCredsFile), root, op); err != nil {
		t.Fatal(err)
	}
}

// checkMemory compares the facts served with those recorded: a fact whose
// expiry has passed by now must be missing, the others served unchanged.
func checkMemory(t *testing.T, n *nodetest.Node, recorded []json.RawMessage) {
	t.Helper()
	ctx := context.Background()
	before := time.Now()
	served, err := n.API.MemoryList(ctx, "")
	after := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	byKey := map[string]api.Fact{}
	for _, f := range served {
		byKey[f.Scope+"/"+f.Key] = f
	}
	live := 0
	for _, raw := range recorded {
		var f api.Fact
		if err := json.Unmarshal(raw, &f); err != nil {
			t.Fatal(err)
		}
		key := f.Scope + "/" + f.Key
		got, ok := byKey[key]
		switch {
		case f.ExpiresAt != nil && !before.Before(*f.ExpiresAt):
			// Expired by today's clock: reported missing, by list and get.
			if ok {
				t.Errorf("memory %s expired at %s and is still listed: %+v", key, f.ExpiresAt, got)
			}
			if _, err := n.API.MemoryGet(ctx, f.Scope, f.Key); !errors.Is(err, api.ErrNotFound) {
				t.Errorf("memory.get %s, expired at %s: %v, want not found", key, f.ExpiresAt, err)
			}
		case f.ExpiresAt != nil && !after.Before(*f.ExpiresAt):
			// Expired while the list was answered: either is right.
			if ok {
				live++
			}
		default:
			if !ok {
				t.Errorf("memory %s (expires %v) not served", key, f.ExpiresAt)
				continue
			}
			live++
			checkServed(t, "memory "+key, raw, got)
			g, err := n.API.MemoryGet(ctx, f.Scope, f.Key)
			if err != nil {
				t.Errorf("memory.get %s: %v", key, err)
				continue
			}
			checkServed(t, "memory.get "+key, raw, g)
		}
	}
	if len(served) != live {
		t.Errorf("%d facts served, %d recorded and live: %+v", len(served), live, served)
	}
}

// checkServed reports where the JSON of what the node served differs from
// what was recorded. Every recorded field must be there with its value;
// fields the record does not have (a later version's additions) are not
// compared.
func checkServed(t *testing.T, what string, recorded json.RawMessage, served any) {
	t.Helper()
	var want, got any
	if err := json.Unmarshal(recorded, &want); err != nil {
		t.Fatalf("%s: recorded: %v", what, err)
	}
	if err := json.Unmarshal(mustJSON(t, served), &got); err != nil {
		t.Fatal(err)
	}
	for _, d := range jsonDiff("", want, got) {
		t.Errorf("%s: %s", what, d)
	}
}

// jsonDiff lists the differences of got from want, decoded JSON values:
// objects need want's members only, arrays the same elements.
func jsonDiff(path string, want, got any) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: %v, recorded an object", orRoot(path), got)}
		}
		var out []string
		for _, k := range slices.Sorted(maps.Keys(w)) {
			gv, ok := g[k]
			if !ok {
				out = append(out, fmt.Sprintf("%s.%s: missing, recorded %v", path, k, w[k]))
				continue
			}
			out = append(out, jsonDiff(path+"."+k, w[k], gv)...)
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{fmt.Sprintf("%s: %v, recorded %v", orRoot(path), got, want)}
		}
		var out []string
		for i := range w {
			out = append(out, jsonDiff(fmt.Sprintf("%s[%d]", path, i), w[i], g[i])...)
		}
		return out
	default:
		if !reflect.DeepEqual(want, got) {
			return []string{fmt.Sprintf("%s: %v, recorded %v", orRoot(path), got, want)}
		}
		return nil
	}
}

func orRoot(path string) string {
	if path == "" {
		return "."
	}
	return path
}

// reimportLedger replaces the ledger in dir by an import of its export:
// the same records, without the roles' snapshots or the run index, so the
// node folds every record of the history again with this build's folds.
func reimportLedger(t *testing.T, dir string, rec goldenRecord) {
	t.Helper()
	path := filepath.Join(dir, "ledger")
	src, err := ledger.Open(path, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var export bytes.Buffer
	err = src.Export(&export)
	if cerr := src.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(path); err != nil {
		t.Fatal(err)
	}
	st, err := ledger.Import(path, &export, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	seq, hash := st.Head()
	if seq != rec.Ledger.HeadSeq || hex.EncodeToString(hash[:]) != rec.Ledger.HeadHash || st.AppliedStreamSeq() != rec.Ledger.AppliedStreamSeq {
		t.Fatalf("imported head %d %x, applied stream seq %d; recorded %d %s, %d", seq, hash, st.AppliedStreamSeq(), rec.Ledger.HeadSeq, rec.Ledger.HeadHash, rec.Ledger.AppliedStreamSeq)
	}
}

// expireEvents makes the events stream of a stopped node drop every
// message by age, as its retention (30 days by default) does for a reader
// that comes later: a bare server on the store, MaxAge lowered until the
// stream is empty, then put back.
func expireEvents(t *testing.T, dir, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, closeBus := nodetest.StoppedNodeBus(t, ctx, dir, name)
	defer closeBus()
	s, err := conn.JS.Stream(ctx, bus.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	orig, last := info.Config, info.State.LastSeq
	t.Logf("events stream: %d messages, %d..%d; expiring them", info.State.Msgs, info.State.FirstSeq, last)
	short := orig
	short.MaxAge, short.Duplicates = time.Second, time.Second
	if _, err := conn.JS.UpdateStream(ctx, short); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 20*time.Second, "the events stream empty", func() bool {
		info, err := s.Info(ctx)
		return err == nil && info.State.Msgs == 0
	})
	if _, err := conn.JS.UpdateStream(ctx, orig); err != nil {
		t.Fatal(err)
	}
	if info, err := s.Info(ctx); err != nil || info.State.LastSeq != last || info.State.Msgs != 0 {
		t.Fatalf("stream after expiry: %+v %v, want empty, last seq %d", info.State, err, last)
	}
}

// streamLastSeq is the last sequence of the events stream of a stopped
// node.
func streamLastSeq(t *testing.T, dir, name string) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, closeBus := nodetest.StoppedNodeBus(t, ctx, dir, name)
	defer closeBus()
	s, err := conn.JS.Stream(ctx, bus.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.State.LastSeq
}

// tarDataDir writes the data directory dir as a gzipped tarball: every
// store and key, not the executor's work directory; sorted, with fixed
// times and owners, so the bytes depend on the contents alone.
func tarDataDir(w io.Writer, dir string) error {
	var paths []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		if rel == "." {
			return nil
		}
		if rel == "work" {
			return fs.SkipDir
		}
		if !d.IsDir() && !d.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file", p)
		}
		paths = append(paths, rel)
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(paths)
	zw, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(zw)
	for _, rel := range paths {
		p := filepath.Join(dir, rel)
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		h := &tar.Header{Name: filepath.ToSlash(rel), Mode: int64(st.Mode().Perm()), ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
		if st.IsDir() {
			h.Typeflag, h.Name = tar.TypeDir, h.Name+"/"
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			continue
		}
		h.Typeflag, h.Size = tar.TypeReg, st.Size()
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		_, err = io.Copy(tw, f)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return zw.Close()
}

// extractGolden extracts a golden tarball into a new temporary directory.
func extractGolden(t *testing.T, tgz string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	f, err := os.Open(tgz)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", tgz, err)
		}
		name := filepath.FromSlash(strings.TrimSuffix(h.Name, "/"))
		if !filepath.IsLocal(name) {
			t.Fatalf("%s: entry %q outside the directory", tgz, h.Name)
		}
		p := filepath.Join(dir, name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o700); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b, fs.FileMode(h.Mode).Perm()); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("%s: entry %q of type %c", tgz, h.Name, h.Typeflag)
		}
	}
	return dir
}

func wantRun(t *testing.T, r api.Run, status event.RunStatus, steps map[string]string) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("run %q: %s (%s %s), want %s", r.Goal, r.Status, r.Code, r.Reason, status)
	}
	for id, want := range steps {
		if s := step(t, r, id); s.Status != want {
			t.Fatalf("run %q, step %s: %s (%s %s), want %s", r.Goal, id, s.Status, s.Code, s.Error, want)
		}
	}
}

func step(t *testing.T, r api.Run, id string) api.Step {
	t.Helper()
	for _, s := range r.Steps {
		if s.ID == id {
			return s
		}
	}
	t.Fatalf("run %q has no step %s", r.Goal, id)
	return api.Step{}
}

// submit submits a plan file as agentctl goal submit does, and returns the
// run id.
func submit(t *testing.T, n *nodetest.Node, name, goal, plan string) string {
	t.Helper()
	run := event.NewID()
	publish(t, n, n.Operator, event.MustDraft(event.GoalSubmitted, run, event.GoalSubmittedData{Goal: goal, PlanFile: plan, PlanName: name}))
	return run
}

func publish(t *testing.T, n *nodetest.Node, id *trust.Identity, d event.Draft) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := bus.PublishSigned(ctx, n.JS, id, d); err != nil {
		t.Fatal(err)
	}
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
