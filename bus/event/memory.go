package event

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// Memory 2.0 (protocol version 8): facts with provenance, quarantine and
// pruning. A step writes facts (Step.Facts) that the executor which ran it
// records (MemoryRecorded); operators release or drop quarantined facts
// (MemoryReleased, MemoryDropped); the leader prunes expired facts
// (MemoryPruned). The memory fold is the only judge of what a fact is and
// whether it is quarantined (roles/memory).
const (
	// MemoryRecorded is a fact a step wrote, recorded by the executor
	// that ran the step (MemoryRecordedData).
	MemoryRecorded Type = "memory.recorded"
	// MemoryReleased is an operator's release of a quarantined fact
	// (MemoryQuarantineData).
	MemoryReleased Type = "memory.released"
	// MemoryDropped is an operator's removal of a fact, quarantined or
	// not (MemoryQuarantineData).
	MemoryDropped Type = "memory.dropped"
	// MemoryPruned is the leader's pruning of the facts expired before
	// its Before (MemoryPrunedData). A decision.
	MemoryPruned Type = "memory.pruned"
)

// Fact sources a step's fact is read from (FactSpec.From).
const (
	// FactFromStdout takes the step's standard output, trimmed.
	FactFromStdout = "stdout"
	// FactFromFile takes a file's content, trimmed (Path, relative to
	// the step's working directory).
	FactFromFile = "file"
	// FactFromJSON takes one value of the JSON object the step printed
	// on its standard output (Path, a dotted path: "build.version").
	FactFromJSON = "json"
)

// Fact scopes a step may name (FactSpec.Scope).
const (
	// FactScopeShared is the scope every run reads.
	FactScopeShared = "shared"
	// FactScopeRun is the step's own run.
	FactScopeRun = "run"
	// FactScopeFamily is the plan family of the step's run (Plan.Family):
	// the runs of the same job, so a later run finds what the last one
	// learned. A run without a family may not write to it.
	FactScopeFamily = "family"
)

// FamilyScopePrefix starts a fact scope that names a plan family:
// "family:nightly".
const FamilyScopePrefix = "family:"

// FactSpec is one fact a step writes when it ends (Step.Facts). Protocol
// version 8.
type FactSpec struct {
	// Key names the fact in its scope.
	Key string `json:"key"`
	// From is where the value comes from: FactFromStdout, FactFromFile or
	// FactFromJSON.
	From string `json:"from"`
	// Path is the file (From file) or the dotted JSON path (From json).
	Path string `json:"path,omitempty"`
	// Scope is FactScopeShared, FactScopeRun (the default) or
	// FactScopeFamily.
	Scope string `json:"scope,omitempty"`
	// TTL is how long the fact lives; zero means forever.
	TTL Duration `json:"ttl,omitzero"`
	// Tags label the fact for memory ls --tag and search.
	Tags []string `json:"tags,omitempty"`
}

// MaxFactsPerStep bounds Step.Facts.
const MaxFactsPerStep = 32

// MaxFactValue bounds the value of a fact a step records, in bytes.
const MaxFactValue = 16 << 10

// MaxTags bounds a fact's tags, and MaxTagLen each tag.
const (
	MaxTags   = 16
	MaxTagLen = 64
)

// ValidFamily reports whether name may name a plan family: the grammar of
// step ids (ValidStepID).
func ValidFamily(name string) error { return checkStepID("family", name) }

// ValidTag reports whether tag may label a fact: 1 to MaxTagLen bytes of
// the step ids' grammar.
func ValidTag(tag string) error {
	if len(tag) > MaxTagLen {
		return fmt.Errorf("tag %q is longer than %d bytes", tag, MaxTagLen)
	}
	return checkStepID("tag", tag)
}

// ValidTags checks every tag (ValidTag) and their number (MaxTags).
func ValidTags(tags []string) error {
	if len(tags) > MaxTags {
		return fmt.Errorf("%d tags: at most %d", len(tags), MaxTags)
	}
	for _, t := range tags {
		if err := ValidTag(t); err != nil {
			return err
		}
	}
	return nil
}

// CheckFactSpecs reports every problem of a step's facts at once: a key
// that is empty, twice, or holds a space; an unknown source or scope; a
// file or json source without a path; too many facts or bad tags.
func CheckFactSpecs(specs []FactSpec) error {
	var errs []string
	if len(specs) > MaxFactsPerStep {
		errs = append(errs, fmt.Sprintf("%d facts: at most %d", len(specs), MaxFactsPerStep))
	}
	seen := map[string]bool{}
	for i, f := range specs {
		at := fmt.Sprintf("facts[%d]", i)
		switch {
		case f.Key == "":
			errs = append(errs, at+": key is empty")
		case strings.ContainsAny(f.Key, " \t\n/"):
			errs = append(errs, fmt.Sprintf("%s: key %q holds a space or '/'", at, f.Key))
		case seen[f.Scope+"\x00"+f.Key]:
			errs = append(errs, fmt.Sprintf("%s: key %q is written twice", at, f.Key))
		}
		seen[f.Scope+"\x00"+f.Key] = true
		switch f.From {
		case FactFromStdout:
		case FactFromFile, FactFromJSON:
			if f.Path == "" {
				errs = append(errs, fmt.Sprintf("%s: from %s needs a path", at, f.From))
			}
		default:
			errs = append(errs, fmt.Sprintf("%s: from %q: use stdout, file or json", at, f.From))
		}
		switch f.Scope {
		case "", FactScopeRun, FactScopeShared, FactScopeFamily:
		default:
			errs = append(errs, fmt.Sprintf("%s: scope %q: use shared, run or family", at, f.Scope))
		}
		if f.TTL < 0 {
			errs = append(errs, at+": ttl is negative")
		}
		if err := ValidTags(f.Tags); err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", at, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// MemoryRecordedData is a fact a step wrote, as the executor that ran the
// step read it (MemoryRecorded). The memory fold resolves its scope
// (FactScopeRun to the event's run, FactScopeFamily to the run's family)
// and decides whether it starts quarantined: a fact of a step that did
// not succeed, of a run whose policy verdicts were overridden, or of a
// model's plan does.
type MemoryRecordedData struct {
	// Scope is the step's FactSpec.Scope (FactScopeRun when empty).
	Scope string `json:"scope,omitempty"`
	Key   string `json:"key"`
	Value string `json:"value"`
	// Tags label the fact.
	Tags []string `json:"tags,omitempty"`
	// TTL is how long the fact lives from the event's time; zero means
	// forever.
	TTL Duration `json:"ttl,omitzero"`
	// Step and Attempt name the attempt that wrote it.
	Step    string `json:"step"`
	Attempt int    `json:"attempt"`
	// Status is how the attempt ended.
	Status TaskStatus `json:"status"`
	// From is the FactSpec's source.
	From string `json:"from,omitempty"`
}

// MemoryQuarantineData names one fact an operator releases from
// quarantine (MemoryReleased) or drops (MemoryDropped).
type MemoryQuarantineData struct {
	Scope string `json:"scope"`
	Key   string `json:"key"`
	// Seq, when set, is the ledger position of the version of the fact
	// the operator saw: a fact written again since is left as it is.
	Seq uint64 `json:"seq,omitempty"`
	// Reason says why, for people.
	Reason string `json:"reason,omitempty"`
}

// MemoryPrunedData is the leader's pruning: every fact that expired at or
// before Before is removed from every memory fold.
type MemoryPrunedData struct {
	Decision
	Before time.Time `json:"before"`
}

// ValidFactRef reports whether ref is a "SCOPE/KEY" reference a step may
// name (Step.Releases, ${memory:SCOPE/KEY}): SCOPE "shared", "run",
// "family", "family:NAME" or a run id, KEY without a space or brace.
func ValidFactRef(ref string) error {
	if step, ok := strings.CutPrefix(ref, NotesRefPrefix); ok && ValidStepID(step) == nil {
		return nil // the notes of a synthesise step of the run (research.go)
	}
	if !memoryRefWhole().MatchString("${memory:" + ref + "}") {
		return fmt.Errorf("%q is not SCOPE/KEY (shared/deploy.region, run/KEY, family/KEY) or kb/STEP (a synthesise step's notes)", ref)
	}
	return nil
}

// MemoryValue is one ${memory:SCOPE/KEY} reference of a step as the leader
// resolved it when it judged the step (GateOpenedData.Memory) and assigned
// it (TaskAssignedData.Memory): folds and replays apply the recorded
// values (ApplyMemory) instead of reading memory again. Protocol version
// 8.
type MemoryValue struct {
	// Ref is the reference as written: "SCOPE/KEY".
	Ref string `json:"ref"`
	// Scope is the fact's scope ("run" and "family" resolved for the run),
	// Key its key, Seq the ledger position of the version read.
	Scope string `json:"scope"`
	Key   string `json:"key"`
	Value string `json:"value"`
	Seq   uint64 `json:"seq"`
}

// memoryRef matches ${memory:SCOPE/KEY}, the one form a step reads a fact
// with: SCOPE is "shared", "run", "family", "family:NAME" or a run id;
// KEY has no space or brace.
var memoryRef = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\$\{memory:([^{}/\s]+)/([^{}\s]+)\}`) })

// memoryRefWhole matches one whole reference.
var memoryRefWhole = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^` + memoryRef().String() + `$`) })

// MemoryRefs returns the distinct "SCOPE/KEY" references of the step's
// command, check and criteria, in order. A compensation's command is not
// resolved (it runs as the run stops, without a judgement to bind to).
func MemoryRefs(s Step) []string {
	var out []string
	for _, text := range []string{s.Run, s.Check, s.Criteria} {
		for _, m := range memoryRef().FindAllStringSubmatch(text, -1) {
			ref := m[1] + "/" + m[2]
			if !slices.Contains(out, ref) {
				out = append(out, ref)
			}
		}
	}
	return out
}

// ApplyMemory returns s with every reference of values replaced by its
// value: shell-quoted in the command and check (one word, whatever the
// value holds), as it is in the criteria (a prompt). A reference without
// a value is left as written.
func ApplyMemory(s Step, values []MemoryValue) Step {
	if len(values) == 0 {
		return s
	}
	by := make(map[string]string, len(values))
	for _, v := range values {
		by[v.Ref] = v.Value
	}
	apply := func(text string, quote bool) string {
		return memoryRef().ReplaceAllStringFunc(text, func(m string) string {
			sub := memoryRef().FindStringSubmatch(m)
			v, ok := by[sub[1]+"/"+sub[2]]
			switch {
			case !ok:
				return m
			case quote:
				return ShellQuote(v)
			}
			return v
		})
	}
	s.Run, s.Check = apply(s.Run, true), apply(s.Check, true)
	s.Criteria = apply(s.Criteria, false)
	return s
}

// ShellQuote quotes v as one POSIX shell word: in single quotes, each
// single quote of v closed, escaped with a backslash and reopened.
func ShellQuote(v string) string {
	return "'" + strings.ReplaceAll(v, "'", `'\''`) + "'"
}
