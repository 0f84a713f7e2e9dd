package artifacts

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/agentic-dev/agentic/bus/artifact"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/planner/plan"
)

// Retention is how long after its run finished a run's artifacts are
// kept in the fold: the bucket's age limit (artifact.DefaultMaxAge).
const Retention = artifact.DefaultMaxAge

// Artifact is one stored artifact of a run.
type Artifact struct {
	event.ArtifactStoredData
	// Run is the artifact's run; Seq the ledger position of its event,
	// At its time.
	Run string    `json:"run"`
	Seq uint64    `json:"seq"`
	At  time.Time `json:"at"`
}

// runState is what the fold keeps of a run.
type runState struct {
	// GoalFamily is the submitted goal's family (a model's plans inherit
	// it); Family the accepted plan's; Proposed the families of the
	// revisions proposed and not yet accepted.
	GoalFamily string         `json:"goal_family,omitempty"`
	Family     string         `json:"family,omitempty"`
	Proposed   map[int]string `json:"proposed,omitempty"`
	// Status is the run's outcome, "" while it is live; Finished when.
	Status   string    `json:"status,omitempty"`
	Finished time.Time `json:"finished,omitzero"`
	// Artifacts by name, and Bytes what they hold.
	Artifacts map[string]*Artifact `json:"artifacts,omitempty"`
	Bytes     int64                `json:"bytes,omitempty"`
}

// Fold is the fold. Fold, Snapshot and Restore run on one goroutine;
// the read methods are safe for concurrent use.
type Fold struct {
	folded uint64
	mu     struct {
		sync.RWMutex
		runs map[string]*runState
		// latest is each family's latest succeeded run.
		latest map[string]string
		// done are the finished runs in the order they finished, which
		// forgetLocked takes from the front.
		done []string
	}
}

// New returns an empty fold.
func New() *Fold {
	f := &Fold{}
	f.mu.runs = map[string]*runState{}
	f.mu.latest = map[string]string{}
	return f
}

// Fold applies a committed event.
func (f *Fold) Fold(ev event.Event) {
	f.folded = ev.Seq
	switch ev.Type {
	case event.GoalSubmitted, event.PlanProposed, event.PlanAccepted, event.RunFinished, event.ArtifactStored:
	default:
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.forgetLocked(ev.Time)
	switch ev.Type {
	case event.GoalSubmitted:
		var d event.GoalSubmittedData
		if ev.Decode(&d) != nil || ev.Run == "" {
			return
		}
		r := &runState{}
		if event.ValidFamily(d.Family) == nil {
			r.GoalFamily = d.Family
		}
		if p := plan.FromGoal(d); p != nil && event.ValidFamily(p.Family) == nil {
			// Planned from its goal: revision 1, accepted before (or
			// without) any planner's proposal.
			r.Proposed = map[int]string{1: p.Family}
		}
		f.mu.runs[ev.Run] = r
	case event.PlanProposed:
		r := f.mu.runs[ev.Run]
		var d struct {
			Revision int    `json:"revision"`
			Source   string `json:"source"`
			Plan     struct {
				Family string `json:"family"`
			} `json:"plan"`
		}
		if r == nil || ev.Decode(&d) != nil || len(r.Proposed) >= 64 {
			return
		}
		fam := d.Plan.Family
		if event.ValidFamily(fam) != nil {
			fam = ""
		}
		if fam == "" && d.Source != "file" {
			fam = r.GoalFamily
		}
		if r.Proposed == nil {
			r.Proposed = map[int]string{}
		}
		r.Proposed[d.Revision] = fam
	case event.PlanAccepted:
		r := f.mu.runs[ev.Run]
		var d event.PlanAcceptedData
		if r == nil || ev.Decode(&d) != nil {
			return
		}
		if fam, ok := r.Proposed[d.Revision]; ok {
			r.Family = fam
		}
		for rev := range r.Proposed {
			if rev <= d.Revision {
				delete(r.Proposed, rev)
			}
		}
	case event.RunFinished:
		r := f.mu.runs[ev.Run]
		var d event.RunFinishedData
		if r == nil || ev.Decode(&d) != nil {
			return
		}
		if r.Status == "" {
			f.mu.done = append(f.mu.done, ev.Run)
		}
		r.Status, r.Finished, r.Proposed = string(d.Status), ev.Time, nil
		if d.Status == event.RunSucceeded && r.Family != "" {
			f.mu.latest[r.Family] = ev.Run
		}
	case event.ArtifactStored:
		var d event.ArtifactStoredData
		if ev.Decode(&d) != nil || !event.ValidSHA256(d.SHA256) || event.CheckArtifactPath(d.Name) != nil || d.Size < 0 {
			return
		}
		r := f.mu.runs[ev.Run]
		if r == nil {
			r = &runState{} // a run whose start this fold did not see
			f.mu.runs[ev.Run] = r
		}
		if r.Artifacts == nil {
			r.Artifacts = map[string]*Artifact{}
		}
		if old := r.Artifacts[d.Name]; old != nil {
			r.Bytes -= old.Size
		}
		r.Artifacts[d.Name] = &Artifact{ArtifactStoredData: d, Run: ev.Run, Seq: ev.Seq, At: ev.Time}
		r.Bytes += d.Size
	}
}

// forgetLocked drops the runs finished longer than Retention before now
// (invariant 3).
func (f *Fold) forgetLocked(now time.Time) {
	cut := now.Add(-Retention)
	for len(f.mu.done) > 0 {
		id := f.mu.done[0]
		r := f.mu.runs[id]
		if r != nil && !r.Finished.Before(cut) {
			return
		}
		f.mu.done = f.mu.done[1:]
		if r == nil {
			continue
		}
		delete(f.mu.runs, id)
		if fam := r.Family; fam != "" && f.mu.latest[fam] == id {
			delete(f.mu.latest, fam)
		}
	}
}

// Settled does nothing.
func (f *Fold) Settled(bool) {}

// Errors of Resolve and List.
var (
	// ErrNoArtifact: the run holds no artifact of that name.
	ErrNoArtifact = errors.New("artifacts: no such artifact")
	// ErrNoRun: the fold knows no such run (never seen, or forgotten
	// after its retention), or no succeeded run of a family.
	ErrNoRun = errors.New("artifacts: no such run")
)

// Resolve resolves one input of a step of run to the artifact it names:
// of a step of the same run, of a run by id, or of the latest succeeded
// run of a family.
func (f *Fold) Resolve(run string, in event.ArtifactInput) (event.ResolvedInput, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	from := run
	switch {
	case in.Run != "":
		from = in.Run
	case in.Family != "":
		latest, ok := f.mu.latest[in.Family]
		if !ok {
			return event.ResolvedInput{}, fmt.Errorf("%w: plan family %q has no succeeded run with artifacts kept", ErrNoRun, in.Family)
		}
		from = latest
	}
	r := f.mu.runs[from]
	if r == nil {
		return event.ResolvedInput{}, fmt.Errorf("%w: run %s (input %s)", ErrNoRun, from, in.Name)
	}
	a := r.Artifacts[in.Name]
	if a == nil || (in.Step != "" && a.Step != in.Step) {
		where := "run " + from
		if in.Step != "" {
			where = "step " + in.Step + " of " + where
		}
		return event.ResolvedInput{}, fmt.Errorf("%w: %s stored no artifact %q", ErrNoArtifact, where, in.Name)
	}
	as := in.As
	if as == "" {
		as = in.Name
	}
	return event.ResolvedInput{As: as, Run: from, Name: a.Name, SHA256: a.SHA256, Size: a.Size, Object: a.Object}, nil
}

// RunBytes returns what run's artifacts hold, in bytes.
func (f *Fold) RunBytes(run string) int64 {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if r := f.mu.runs[run]; r != nil {
		return r.Bytes
	}
	return 0
}

// List returns up to limit of run's artifacts, by name, after the name
// after, and whether more follow. A failed or cancelled run's are
// marked debug (invariant 4).
func (f *Fold) List(run, after string, limit int) ([]Artifact, bool, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	r := f.mu.runs[run]
	if r == nil {
		return nil, false, fmt.Errorf("%w: %s has stored no artifact this node knows (or its retention passed)", ErrNoRun, run)
	}
	names := make([]string, 0, len(r.Artifacts))
	for n := range r.Artifacts {
		if n > after {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	more := len(names) > limit
	if more {
		names = names[:limit]
	}
	out := make([]Artifact, 0, len(names))
	for _, n := range names {
		a := *r.Artifacts[n]
		if r.Status != "" && r.Status != string(event.RunSucceeded) {
			a.Retention = event.RetentionDebug
		}
		out = append(out, a)
	}
	return out, more, nil
}

// Get returns run's artifact name (marked as List marks it).
func (f *Fold) Get(run, name string) (Artifact, error) {
	list, _, err := f.List(run, "", 1<<30)
	if err != nil {
		return Artifact{}, err
	}
	i, ok := slices.BinarySearchFunc(list, name, func(a Artifact, n string) int { return cmp.Compare(a.Name, n) })
	if !ok {
		return Artifact{}, fmt.Errorf("%w: run %s stored no artifact %q", ErrNoArtifact, run, name)
	}
	return list[i], nil
}

// SnapshotVersion is the snapshot format; Restore refuses others.
const SnapshotVersion = 1

type snapshot struct {
	Version int                  `json:"version"`
	Seq     uint64               `json:"seq"`
	Runs    map[string]*runState `json:"runs"`
	Latest  map[string]string    `json:"latest"`
}

// SnapshotName is "artifacts".
func (f *Fold) SnapshotName() string { return "artifacts" }

// Snapshot returns the state and the ledger position it reflects.
func (f *Fold) Snapshot() (uint64, []byte, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	b, err := json.Marshal(snapshot{Version: SnapshotVersion, Seq: f.folded, Runs: f.mu.runs, Latest: f.mu.latest})
	if err != nil {
		return 0, nil, fmt.Errorf("artifacts: snapshot at seq %d: %w", f.folded, err)
	}
	return f.folded, b, nil
}

// Restore replaces the state with a snapshot's; on error the state is
// left as it was.
func (f *Fold) Restore(data []byte) error {
	var s snapshot
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("artifacts: restore: %w", err)
	}
	if s.Version != SnapshotVersion {
		return fmt.Errorf("artifacts: restore: snapshot version %d, want %d", s.Version, SnapshotVersion)
	}
	if s.Runs == nil {
		s.Runs = map[string]*runState{}
	}
	if s.Latest == nil {
		s.Latest = map[string]string{}
	}
	var done []string
	for id, r := range s.Runs {
		if r == nil {
			return fmt.Errorf("artifacts: restore: run %s has no state", id)
		}
		if r.Status != "" {
			done = append(done, id)
		}
	}
	slices.SortFunc(done, func(a, b string) int {
		return cmp.Or(s.Runs[a].Finished.Compare(s.Runs[b].Finished), cmp.Compare(a, b))
	})
	f.mu.Lock()
	defer f.mu.Unlock()
	f.folded, f.mu.runs, f.mu.latest, f.mu.done = s.Seq, s.Runs, s.Latest, done
	return nil
}
