package event

import (
	"fmt"
	"path"
	"strings"
)

// Artifacts (protocol version 8): a step's durable outputs, stored by
// content in the JetStream Object Store (bus/artifact) and recorded by
// the executor that ran the step (ArtifactStored). A later step reads
// them by name (Step.Inputs), resolved by the leader to a hash at
// assignment.
const (
	// ArtifactStored records one artifact the executor that ran a step
	// stored, complete and verified (ArtifactStoredData). It is emitted
	// only after the object is whole: an object without this event is an
	// orphan no one reads.
	ArtifactStored Type = "artifact.stored"
)

// Artifact retention classes (ArtifactStoredData.Retention).
const (
	// RetentionRun keeps an artifact with the run's records: the default
	// of a step's outputs.
	RetentionRun = "run"
	// RetentionDebug marks debug data: kept for the shorter debug
	// retention (the artifacts of a run that failed are read as debug
	// whatever they were stored as; docs/artifacts.md).
	RetentionDebug = "debug"
)

// ArtifactStoredData is one stored artifact: what it is called, its size
// and sha256, and the attempt that produced it. The event's run is the
// artifact's run.
type ArtifactStoredData struct {
	// Name is the artifact's name in its run: the output's path
	// relative to the step's working directory ("dist/app.tar.gz").
	Name string `json:"name"`
	// Size is its length in bytes.
	Size int64 `json:"size"`
	// SHA256 is the lowercase hex sha256 of its bytes: what every reader
	// verifies against.
	SHA256 string `json:"sha256"`
	// Object is the object's name in the artifact bucket.
	Object string `json:"object"`
	// Step and Attempt name the attempt that produced it.
	Step    string `json:"step"`
	Attempt int    `json:"attempt"`
	// Retention is RetentionRun or RetentionDebug.
	Retention string `json:"retention"`
	// Meta holds extra facts about the artifact (a research source's
	// "url" and "fetched" time); bounded like every payload.
	Meta map[string]string `json:"meta,omitempty"`
}

// ArtifactInput is one artifact a step reads into its working directory
// before it runs (Step.Inputs). Exactly one of Step, Run and Family says
// where it comes from: a step of the same run (which adds that step to
// the dependencies), a run by id, or the latest succeeded run of a plan
// family.
type ArtifactInput struct {
	Step   string `json:"step,omitempty"`
	Run    string `json:"run,omitempty"`
	Family string `json:"family,omitempty"`
	// Name is the artifact's name in its run.
	Name string `json:"name"`
	// As is where it is written, relative to the working directory (Name
	// when empty).
	As string `json:"as,omitempty"`
}

// ResolvedInput is an input the leader resolved at assignment, recorded
// in task.assigned so that a replay sees the same bytes.
type ResolvedInput struct {
	// As is the path relative to the working directory.
	As     string `json:"as"`
	Run    string `json:"run"`
	Name   string `json:"name"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
	Object string `json:"object"`
}

// MaxOutputsPerStep and MaxInputsPerStep bound a step's declarations.
const (
	MaxOutputsPerStep = 32
	MaxInputsPerStep  = 32
)

// ValidSHA256 reports whether s is a lowercase hex sha256.
func ValidSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// CheckArtifactPath reports whether p may name an artifact or an output
// glob: a relative slash path, clean, that stays inside the working
// directory (no "..", no leading "/").
func CheckArtifactPath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("artifact path is empty")
	case len(p) > 512:
		return fmt.Errorf("artifact path %.40q… is longer than 512 bytes", p)
	case strings.HasPrefix(p, "/"):
		return fmt.Errorf("artifact path %q is absolute: it must be relative to the step's working directory", p)
	case strings.ContainsAny(p, "\\\x00\n"):
		return fmt.Errorf("artifact path %q holds a backslash, NUL or newline", p)
	case path.Clean(p) != p:
		return fmt.Errorf("artifact path %q is not clean (want %q)", p, path.Clean(p))
	case p == ".." || strings.HasPrefix(p, "../"):
		return fmt.Errorf("artifact path %q leaves the step's working directory", p)
	}
	if _, err := path.Match(p, ""); err != nil {
		return fmt.Errorf("artifact path %q: bad pattern: %w", p, err)
	}
	return nil
}

// CheckArtifactSpecs reports every problem of a step's outputs and inputs
// at once.
func CheckArtifactSpecs(outputs []string, inputs []ArtifactInput) error {
	var errs []string
	if len(outputs) > MaxOutputsPerStep {
		errs = append(errs, fmt.Sprintf("%d outputs: at most %d", len(outputs), MaxOutputsPerStep))
	}
	for _, o := range outputs {
		if err := CheckArtifactPath(o); err != nil {
			errs = append(errs, "outputs: "+err.Error())
		}
	}
	if len(inputs) > MaxInputsPerStep {
		errs = append(errs, fmt.Sprintf("%d inputs: at most %d", len(inputs), MaxInputsPerStep))
	}
	seen := map[string]bool{}
	for i, in := range inputs {
		n := 0
		for _, s := range []string{in.Step, in.Run, in.Family} {
			if s != "" {
				n++
			}
		}
		if n != 1 {
			errs = append(errs, fmt.Sprintf("inputs[%d]: name exactly one of step, run and family", i))
		}
		if strings.ContainsAny(in.Name, "*?[") {
			errs = append(errs, fmt.Sprintf("inputs[%d]: name %q is a pattern: an input names one artifact", i, in.Name))
		} else if err := CheckArtifactPath(in.Name); err != nil {
			errs = append(errs, fmt.Sprintf("inputs[%d]: %v", i, err))
		}
		as := in.As
		if as == "" {
			as = in.Name
		}
		if in.As != "" {
			if err := CheckArtifactPath(in.As); err != nil || strings.ContainsAny(in.As, "*?[") {
				errs = append(errs, fmt.Sprintf("inputs[%d]: as %q must be a plain relative path", i, in.As))
			}
		}
		if seen[as] {
			errs = append(errs, fmt.Sprintf("inputs[%d]: %q is written by two inputs", i, as))
		}
		seen[as] = true
		if in.Family != "" {
			if err := ValidFamily(in.Family); err != nil {
				errs = append(errs, fmt.Sprintf("inputs[%d]: %v", i, err))
			}
		}
		if in.Run != "" {
			if err := ValidRunID(in.Run); err != nil {
				errs = append(errs, fmt.Sprintf("inputs[%d]: %v", i, err))
			}
		}
		if in.Step != "" {
			if err := ValidStepID(in.Step); err != nil {
				errs = append(errs, fmt.Sprintf("inputs[%d]: %v", i, err))
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}
