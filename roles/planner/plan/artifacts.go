package plan

import (
	"fmt"

	"github.com/agentic-dev/agentic/bus/event"
	"gopkg.in/yaml.v3"
)

// Artifacts in plan files (docs/artifacts.md): the files a step stores
// when it succeeds, and the artifacts it reads before it runs.
//
//	steps:
//	  - id: make
//	    run: make dist
//	    outputs: [report.md, "dist/*.tar.gz"]
//	  - id: ship
//	    run: ./ship dist/app.tar.gz
//	    inputs:
//	      - {step: make, name: dist/app.tar.gz}   # adds make to depends_on
//	      - {family: nightly, name: report.md, as: last-report.md}

// inputFields are the fields of one of a step's inputs.
var inputFields = []string{"step", "run", "family", "name", "as"}

// outputs decodes a step's outputs: a list of globs.
func (w *walker) outputs(s *draftStep, n *yaml.Node, p pos) bool {
	items, ok := w.list(n, p, `e.g. outputs: [report.md, "dist/*.tar.gz"]`)
	if !ok {
		return false
	}
	for j, item := range items {
		ip := at(item, p.index(j).path)
		s.field[fmt.Sprintf("outputs[%d]", j)] = ip
		o, good := w.str(item, ip)
		if good {
			if err := event.CheckArtifactPath(o); err != nil {
				w.ps.add(ip, "%v", err)
				good = false
			}
		}
		ok = ok && good
		s.step.Outputs = append(s.step.Outputs, o)
	}
	return ok
}

// inputs decodes a step's inputs: a list of {step|run|family, name, as}.
func (w *walker) inputs(s *draftStep, n *yaml.Node, p pos) bool {
	items, ok := w.list(n, p, "e.g. - {step: make, name: out.bin}")
	if !ok {
		return false
	}
	for j, item := range items {
		ip := at(item, p.index(j).path)
		key := fmt.Sprintf("inputs[%d]", j)
		s.field[key] = ip
		entries, good := w.mapping(item, ip, inputFields)
		if !good {
			ok = false
			continue
		}
		var in event.ArtifactInput
		for _, e := range entries {
			fp := at(e.val, ip.child(e.name).path)
			s.field[key+"."+e.name] = fp
			v, good := w.str(e.val, fp)
			ok = ok && good
			switch e.name {
			case "step":
				in.Step = v
			case "run":
				in.Run = v
			case "family":
				in.Family = v
			case "name":
				in.Name = v
			case "as":
				in.As = v
			}
		}
		if err := event.CheckArtifactSpecs(nil, []event.ArtifactInput{in}); err != nil {
			w.ps.add(ip, "%v", err)
			ok = false
		}
		s.step.Inputs = append(s.step.Inputs, in)
	}
	return ok
}

// checkArtifacts checks each step's outputs and inputs as a whole (the
// same for plans decoded from files and plans given whole), and makes an
// input from a step of the plan a dependency on that step.
func checkArtifacts(d *draft, ps *problems) {
	for _, s := range d.steps {
		if s.bad["outputs"] || s.bad["inputs"] {
			continue
		}
		if len(s.step.Outputs) == 0 && len(s.step.Inputs) == 0 {
			continue
		}
		if err := event.CheckArtifactSpecs(s.step.Outputs, s.step.Inputs); err != nil {
			ps.add(s.pos("inputs"), "%v", err)
			continue
		}
		// The executor stores outputs and writes inputs for the steps it
		// runs in a working directory: shell steps and file edits.
		switch kind := effectiveKind(&s.step); kind {
		case event.KindNoop, event.KindCritique, event.KindTool:
			if len(s.step.Outputs) > 0 {
				ps.add(s.pos("outputs"), "a %s step stores no outputs: outputs are for shell steps and file edits", kind)
			}
			if len(s.step.Inputs) > 0 {
				ps.add(s.pos("inputs"), "a %s step reads no inputs: inputs are for shell steps and file edits", kind)
			}
			continue
		}
		for j, in := range s.step.Inputs {
			if in.Step == "" || hasRef(s.deps, in.Step) {
				continue
			}
			s.deps = append(s.deps, ref{id: in.Step, at: s.pos(fmt.Sprintf("inputs[%d]", j)).child("step")})
		}
	}
}

func hasRef(refs []ref, id string) bool {
	for _, r := range refs {
		if r.id == id {
			return true
		}
	}
	return false
}
