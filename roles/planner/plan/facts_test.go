package plan_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/planner/plan"
)

func TestFamilyAndFacts(t *testing.T) {
	p, err := plan.Parse("probe.yaml", []byte(`goal: probe
family: nightly
steps:
  - id: probe
    run: nginx -v
    facts:
      - {key: nginx.version, from: stdout, scope: family, ttl: 24h, tags: [infra]}
      - {key: build.id, from: json, path: build.id}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []event.FactSpec{
		{Key: "nginx.version", From: "stdout", Scope: "family", TTL: event.Duration(24 * time.Hour), Tags: []string{"infra"}},
		{Key: "build.id", From: "json", Path: "build.id", Scope: "run"},
	}
	if p.Family != "nightly" || len(p.Steps[0].Facts) != 2 {
		t.Fatalf("plan = %+v", p)
	}
	for i, f := range p.Steps[0].Facts {
		if f.Key != want[i].Key || f.From != want[i].From || f.Path != want[i].Path || f.Scope != want[i].Scope || f.TTL != want[i].TTL || strings.Join(f.Tags, ",") != strings.Join(want[i].Tags, ",") {
			t.Errorf("fact %d = %+v, want %+v", i, f, want[i])
		}
	}
}

func TestBadFactsAreLocated(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"family: no/slash\nsteps:\n  - id: a\n    run: x\n", `probe.yaml:1:9: family: family "no/slash" has '/'`},
		{"steps:\n  - id: a\n    run: x\n    facts:\n      - {key: k, from: file}\n", "probe.yaml:5:9: steps[0].facts[0]: facts[0]: from file needs a path"},
		{"steps:\n  - id: a\n    run: x\n    facts:\n      - {key: k, from: disk}\n", `from "disk": use stdout, file or json`},
		{"steps:\n  - id: a\n    run: x\n    facts:\n      - {key: k, from: stdout, scope: world}\n", `scope "world": use shared, run or family`},
		{"steps:\n  - id: a\n    run: x\n    facts:\n      - {key: k, from: stdout, colour: red}\n", "colour"},
		{"steps:\n  - id: a\n    run: x\n    facts:\n      - {key: k, from: stdout}\n      - {key: k, from: stdout}\n", `key "k" is written twice`},
	} {
		_, err := plan.Parse("probe.yaml", []byte(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q) = %v; want an error with %q", c.in, err, c.want)
		}
	}
}

// TestNormalizeKeepsFamilyAndFacts: a planner normalizes every plan it
// proposes; the family and the steps' facts survive, and a bad family
// from a model's plan is refused.
func TestNormalizeKeepsFamilyAndFacts(t *testing.T) {
	p := &event.Plan{Goal: "g", Family: "nightly", Steps: []event.Step{{ID: "a", Run: "echo 1",
		Facts: []event.FactSpec{{Key: "k", From: "stdout", Scope: "shared"}}}}}
	if err := plan.Normalize(p); err != nil {
		t.Fatal(err)
	}
	if p.Family != "nightly" || len(p.Steps[0].Facts) != 1 {
		t.Fatalf("normalized plan lost its family or facts: %+v", p)
	}
	bad := &event.Plan{Goal: "g", Family: "no/slash", Steps: []event.Step{{ID: "a", Run: "echo 1",
		Facts: []event.FactSpec{{Key: "k", From: "disk"}}}}}
	err := plan.Normalize(bad)
	if err == nil || !strings.Contains(err.Error(), `family "no/slash"`) || !strings.Contains(err.Error(), `from "disk"`) {
		t.Fatalf("Normalize(bad) = %v", err)
	}
}

func TestReleases(t *testing.T) {
	p, err := plan.Parse("v.yaml", []byte("steps:\n  - id: check\n    run: curl -fs http://x/health\n    releases: [shared/deploy.region, family/nginx.version]\n"))
	if err != nil || strings.Join(p.Steps[0].Releases, ",") != "shared/deploy.region,family/nginx.version" {
		t.Fatalf("releases = %+v %v", p, err)
	}
	_, err = plan.Parse("v.yaml", []byte("steps:\n  - id: check\n    run: x\n    releases: [deploy.region]\n"))
	if err == nil || !strings.Contains(err.Error(), `v.yaml:4:16: steps[0].releases[0]: "deploy.region" is not SCOPE/KEY`) {
		t.Fatalf("bad release = %v", err)
	}
	bad := &event.Plan{Steps: []event.Step{{ID: "a", Run: "x", Releases: []string{"a b/c"}}}}
	if err := plan.Normalize(bad); err == nil || !strings.Contains(err.Error(), "is not SCOPE/KEY") {
		t.Fatalf("Normalize(bad release) = %v", err)
	}
}
