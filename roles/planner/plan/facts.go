package plan

import (
	"fmt"

	"github.com/agentic-dev/agentic/bus/event"
	"gopkg.in/yaml.v3"
)

// Memory 2.0 in plan files (docs/memory.md): a plan's family and the
// facts a step writes.
//
//	family: nightly
//	steps:
//	  - id: probe
//	    run: nginx -v 2>&1 | cut -d/ -f2
//	    facts:
//	      - {key: nginx.version, from: stdout, scope: family, ttl: 24h, tags: [infra]}

// factFields are the fields of one of a step's facts.
var factFields = []string{"key", "from", "path", "scope", "ttl", "tags"}

// family decodes the plan's family.
func (w *walker) family(d *draft, n *yaml.Node, p pos) {
	name, ok := w.str(n, p)
	if !ok {
		return
	}
	if err := event.ValidFamily(name); err != nil {
		w.ps.add(p, "%v", err)
		return
	}
	d.family = name
}

// facts decodes a step's facts: a list of {key, from, path, scope, ttl,
// tags}, checked by event.CheckFactSpecs.
func (w *walker) facts(s *draftStep, n *yaml.Node, p pos) bool {
	items, ok := w.list(n, p, "e.g. - {key: nginx.version, from: stdout, scope: family}")
	if !ok {
		return false
	}
	for j, item := range items {
		ip := at(item, p.index(j).path)
		key := fmt.Sprintf("facts[%d]", j)
		s.field[key] = ip
		entries, good := w.mapping(item, ip, factFields)
		if !good {
			ok = false
			continue
		}
		var f event.FactSpec
		for _, e := range entries {
			fp := at(e.val, ip.child(e.name).path)
			s.field[key+"."+e.name] = fp
			var good bool
			switch e.name {
			case "ttl":
				f.TTL, good = w.duration(e.val, fp)
			case "tags":
				var tags []ref
				tags, good = w.refs(e.val, fp)
				for _, t := range tags {
					f.Tags = append(f.Tags, t.id)
				}
			default:
				var v string
				v, good = w.str(e.val, fp)
				switch e.name {
				case "key":
					f.Key = v
				case "from":
					f.From = v
				case "path":
					f.Path = v
				case "scope":
					f.Scope = v
				}
			}
			ok = ok && good
		}
		if f.Scope == "" {
			f.Scope = event.FactScopeRun
		}
		if err := event.CheckFactSpecs([]event.FactSpec{f}); err != nil {
			w.ps.add(ip, "%v", err)
			ok = false
		}
		s.step.Facts = append(s.step.Facts, f)
	}
	return ok
}

// releases decodes a step's releases: a list of "SCOPE/KEY" references.
func (w *walker) releases(s *draftStep, n *yaml.Node, p pos) bool {
	items, ok := w.list(n, p, "e.g. releases: [shared/deploy.region]")
	if !ok {
		return false
	}
	for j, item := range items {
		ip := at(item, p.index(j).path)
		s.field[fmt.Sprintf("releases[%d]", j)] = ip
		ref, good := w.str(item, ip)
		if good {
			if err := event.ValidFactRef(ref); err != nil {
				w.ps.add(ip, "%v", err)
				good = false
			}
		}
		ok = ok && good
		s.step.Releases = append(s.step.Releases, ref)
	}
	return ok
}

// checkFacts checks the plan's family and each step's facts as a whole
// (a key written twice), for plans decoded from files and plans given
// whole (Normalize: a model's); a step whose facts did not decode was
// reported already.
func checkFacts(d *draft, ps *problems) {
	if d.family != "" {
		if err := event.ValidFamily(d.family); err != nil {
			ps.add(d.root.child("family"), "%v", err)
		}
	}
	for _, s := range d.steps {
		if len(s.step.Facts) > 0 && !s.bad["facts"] {
			if err := event.CheckFactSpecs(s.step.Facts); err != nil {
				ps.add(s.pos("facts"), "%v", err)
			}
		}
		if s.bad["releases"] {
			continue
		}
		if len(s.step.Releases) > event.MaxFactsPerStep {
			ps.add(s.pos("releases"), "%d releases: at most %d", len(s.step.Releases), event.MaxFactsPerStep)
		}
		for _, ref := range s.step.Releases {
			if err := event.ValidFactRef(ref); err != nil {
				ps.add(s.pos("releases"), "%v", err)
			}
		}
	}
}
