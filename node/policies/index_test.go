package policies

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/ledger/ledgertest"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/roles/policy"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fixture is a real ledger store with the index attached, and signers.
type fixture struct {
	t     *testing.T
	kit   *ledgertest.Kit
	dir   string
	st    *ledger.Store
	x     *Index
	admin *trust.Identity
	seq   uint64
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{t: t, kit: ledgertest.NewKit(t), dir: t.TempDir()}
	f.admin = f.kit.Identity("root-admin", trust.KindOperator, event.RoleOperator, event.RoleAdmin)
	f.open()
	return f
}

// open (re)opens the store in the fixture's directory with a new index.
func (f *fixture) open() {
	f.t.Helper()
	f.st = ledgertest.OpenDir(f.t, f.dir)
	f.x = New(ledgertest.Logger(f.t))
	if err := f.x.Attach(f.st); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) append(signer *trust.Identity, drafts ...event.Draft) {
	f.t.Helper()
	f.seq++
	if _, err := f.st.Append([]ledger.Message{f.kit.Message(f.seq, signer, drafts...)}); err != nil {
		f.t.Fatal(err)
	}
}

// applied is a policy.applied draft of text on base.
func applied(t *testing.T, base int64, source, text string) event.Draft {
	t.Helper()
	p, err := policy.Parse([]byte(text), "test")
	if err != nil {
		t.Fatal(err)
	}
	return event.MustDraft(event.PolicyApplied, "", event.PolicyAppliedData{Base: base, Name: p.Name, Hash: p.Hash(), Text: text, Source: source, Reason: "test " + source})
}

// recorded makes d a leader's policy.recorded.
func recorded(d event.Draft) event.Draft {
	d.Type = event.PolicyRecorded
	return d
}

// policyText is a small valid policy, distinct per n.
func policyText(n int) string {
	return fmt.Sprintf("name: p%d\nrules:\n  - pattern: \"rm -rf\"\n    level: high\n  - pattern: \"tool%d\"\n    action: deny\n", n, n)
}

func (f *fixture) show(v int64) (api.PolicyVersion, error) {
	return f.x.Show(context.Background(), api.PolicyRequest{Version: v})
}

func (f *fixture) versions() []int64 {
	f.t.Helper()
	var out []int64
	for v, err := range api.Walk(context.Background(), "", func(ctx context.Context, c string) (*api.Page[api.PolicyVersion], error) {
		raw, err := f.x.List(ctx, api.PolicyListRequest{Limit: 2, Cursor: c})
		if err != nil {
			return nil, err
		}
		page := &api.Page[api.PolicyVersion]{Next: raw.Next, End: raw.End}
		for _, it := range raw.Items {
			var v api.PolicyVersion
			if err := json.Unmarshal(it, &v); err != nil {
				return nil, err
			}
			page.Items = append(page.Items, v)
		}
		return page, nil
	}) {
		if err != nil {
			f.t.Fatal(err)
		}
		if v.Text != "" {
			f.t.Errorf("policy.list item %d carries its text", v.Version)
		}
		out = append(out, v.Version)
	}
	return out
}

func TestShowEmptyLedger(t *testing.T) {
	f := newFixture(t)
	_, err := f.show(0)
	if !errors.Is(err, api.ErrNotFound) || !strings.Contains(api.HintOf(err), "agentd records the default policy when its leader starts; or agentctl policy apply") {
		t.Fatalf("show on an empty ledger = %v (hint %q)", err, api.HintOf(err))
	}
	if _, err := f.show(1); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("show version 1 on an empty ledger = %v", err)
	}
	if got := f.versions(); len(got) != 0 {
		t.Fatalf("list on an empty ledger = %v", got)
	}
}

// TestFoldRule: versions are Base+1, taken only on the version in force;
// an orchestrator's only into an empty history or for a remembered rule;
// a text that does not load or hash to its hash changes nothing.
func TestFoldRule(t *testing.T) {
	f := newFixture(t)
	orch := f.kit.Node // every node role
	// The leader signs leader.elected before its bootstrap policy.
	f.append(orch, event.MustDraft(event.LeaderElected, "", event.LeaderElectedData{Decision: event.Decision{Epoch: 1}, Leader: orch.ID}))
	f.append(orch, recorded(applied(t, 0, event.PolicyFromBootstrap, string(policy.DefaultYAML()))))
	// A second leader's bootstrap, on the same empty base: a lost race.
	f.append(orch, recorded(applied(t, 0, event.PolicyFromBootstrap, policyText(9))))
	// An administrator's apply on the version in force.
	f.append(f.admin, applied(t, 1, event.PolicyFromApply, policyText(2)))
	// Two applies raced on base 1: the second is ignored.
	f.append(f.admin, applied(t, 1, event.PolicyFromApply, policyText(3)))
	// An orchestrator may not replace a held policy…
	f.append(orch, recorded(applied(t, 2, event.PolicyFromBootstrap, policyText(4))))
	f.append(orch, recorded(applied(t, 2, event.PolicyFromApply, policyText(4))))
	// …but may add a remembered approval's rule.
	rem := recorded(applied(t, 2, event.PolicyFromRemember, policyText(5)))
	rem.Run = event.NewID()
	var rd event.PolicyAppliedData
	if err := json.Unmarshal(rem.Data, &rd); err != nil {
		t.Fatal(err)
	}
	rd.Step = "deploy"
	rem.Data, _ = json.Marshal(rd)
	f.append(orch, rem)
	// A hash that is not the text's, and a text that does not load.
	bad := applied(t, 3, event.PolicyFromApply, policyText(6))
	bad.Data = []byte(strings.Replace(string(bad.Data), `"hash":"sha256:`, `"hash":"sha256:00`, 1))
	f.append(f.admin, bad)
	f.append(f.admin, event.MustDraft(event.PolicyApplied, "", event.PolicyAppliedData{Base: 3, Hash: "sha256:x", Text: "rules: [{levle: high}]", Source: event.PolicyFromApply}))

	in, err := f.show(0)
	if err != nil {
		t.Fatal(err)
	}
	p5, _ := policy.Parse([]byte(policyText(5)), "")
	if in.Version != 3 || in.Hash != p5.Hash() || in.Text != policyText(5) || in.Source != event.PolicyFromRemember ||
		in.Signer != orch.ID || in.Run != rem.Run || in.Step != "deploy" || in.Name != "p5" || in.Seq != 8 || in.Time.IsZero() {
		t.Fatalf("in force = %+v", in)
	}
	v2, err := f.show(2)
	if err != nil || v2.Text != policyText(2) || v2.Signer != "root-admin" || v2.Source != event.PolicyFromApply || v2.Reason != "test apply" || v2.Run != "" {
		t.Fatalf("version 2 = %+v, %v", v2, err)
	}
	v1, err := f.show(1)
	if err != nil || v1.Text != string(policy.DefaultYAML()) || v1.Hash != policy.Default().Hash() || v1.Source != event.PolicyFromBootstrap {
		t.Fatalf("version 1 = %+v, %v", v1, err)
	}
	_, err = f.show(4)
	if !errors.Is(err, api.ErrNotFound) || !strings.Contains(err.Error(), "the ledger holds versions 1 to 3") {
		t.Fatalf("show 4 = %v", err)
	}
	if _, err := f.show(-1); !errors.Is(err, api.ErrBadRequest) {
		t.Fatalf("show -1 = %v", err)
	}
	if got := f.versions(); !reflect.DeepEqual(got, []int64{3, 2, 1}) {
		t.Fatalf("versions = %v", got)
	}
	if _, err := f.x.List(context.Background(), api.PolicyListRequest{Cursor: "x"}); !errors.Is(err, api.ErrBadRequest) {
		t.Fatalf("bad cursor = %v", err)
	}

	// The same entries after a restart (snapshot) and after a rebuild.
	want := entries(t, f.st)
	if err := f.st.Close(); err != nil {
		t.Fatal(err)
	}
	f.open()
	if got := entries(t, f.st); !reflect.DeepEqual(got, want) {
		t.Fatalf("after restart: %v, want %v", keys(got), keys(want))
	}
	// Folding goes on from the restored state: base 3 is the one in force.
	f.append(f.admin, applied(t, 3, event.PolicyFromApply, policyText(7)))
	if in, err := f.show(0); err != nil || in.Version != 4 {
		t.Fatalf("after restart, apply on 3 = %+v, %v", in, err)
	}
	// A leader's bootstrap still changes nothing after a restart.
	f.append(orch, recorded(applied(t, 4, event.PolicyFromBootstrap, policyText(8))))
	if in, _ := f.show(0); in.Version != 4 {
		t.Fatalf("an orchestrator's bootstrap replaced a held policy after a restart: %+v", in)
	}
	want = entries(t, f.st)
	if err := f.st.Close(); err != nil {
		t.Fatal(err)
	}
	// A stored index of another layout version is rebuilt from the ledger.
	f.st = ledgertest.OpenDir(t, f.dir)
	rebuilt := &versioned{x: New(ledgertest.Logger(t)), v: Version + 1}
	if err := f.st.AttachIndexer(rebuilt); err != nil {
		t.Fatal(err)
	}
	if got := entries(t, f.st); !reflect.DeepEqual(got, want) {
		t.Fatalf("after rebuild: %v, want %v", keys(got), keys(want))
	}
}

// versioned is an Index that claims another layout version (a rebuild).
type versioned struct {
	x *Index
	v uint32
}

func (v *versioned) Name() string                                            { return v.x.Name() }
func (v *versioned) Version() uint32                                         { return v.v }
func (v *versioned) Index(w *ledger.IndexWriter, r ledger.IndexRecord) error { return v.x.Index(w, r) }
func (v *versioned) Committed(err error)                                     { v.x.Committed(err) }
func (v *versioned) Snapshot() ([]byte, error)                               { return v.x.Snapshot() }
func (v *versioned) Restore(data []byte) error                               { return v.x.Restore(data) }

func entries(t *testing.T, st *ledger.Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	for e, err := range st.IndexScan(Name, nil, nil, false) {
		if err != nil {
			t.Fatal(err)
		}
		out[string(e.Key)] = string(e.Value)
	}
	return out
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, fmt.Sprintf("%q", k))
	}
	return out
}

// TestListPages: pages are cut by count, newest first, and a cursor
// continues after the last version of the previous page.
func TestListPages(t *testing.T) {
	f := newFixture(t)
	for i := range 5 {
		f.append(f.admin, applied(t, int64(i), event.PolicyFromApply, policyText(i)))
	}
	ctx := context.Background()
	p, err := f.x.List(ctx, api.PolicyListRequest{Limit: 2})
	if err != nil || len(p.Items) != 2 || p.End || p.Next != "4" {
		t.Fatalf("first page = %+v, %v", p, err)
	}
	p, err = f.x.List(ctx, api.PolicyListRequest{Limit: 2, Cursor: "2"})
	if err != nil || len(p.Items) != 1 || !p.End {
		t.Fatalf("last page = %+v, %v", p, err)
	}
	var v api.PolicyVersion
	if err := json.Unmarshal(p.Items[0], &v); err != nil || v.Version != 1 {
		t.Fatalf("last page item = %s", p.Items[0])
	}
	if got := f.versions(); !reflect.DeepEqual(got, []int64{5, 4, 3, 2, 1}) {
		t.Fatalf("versions = %v", got)
	}
}

func TestNotAttached(t *testing.T) {
	var x *Index
	if _, err := x.Show(context.Background(), api.PolicyRequest{}); !errors.Is(err, ErrNotAttached) {
		t.Fatalf("nil index: %v", err)
	}
	if _, err := New(nil).List(context.Background(), api.PolicyListRequest{}); !errors.Is(err, ErrNotAttached) {
		t.Fatalf("unattached index: %v", err)
	}
}
