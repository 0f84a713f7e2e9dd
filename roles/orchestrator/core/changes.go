package core

// Changes is what the events applied since the last TakeChanges changed of
// the runs: enough for a projection that mirrors runs elsewhere (the run
// index) to rewrite only what changed. Changes are recorded only once
// TrackChanges was called; a State that nobody drains records nothing.
type Changes struct {
	// Runs are the runs that changed, in the order they first changed.
	Runs []RunChange
}

// RunChange is what changed of one run.
type RunChange struct {
	// Run is the run after the change. For an evicted run it is the final
	// run, no longer in State.Runs; Apply never changes it again, so the
	// holder may read it (View, StepView, Summary) at leisure.
	Run *Run
	// Plan is set when the run's steps were replaced (a plan revision): every
	// step changed, and steps at positions from len(Run.Steps) on are gone.
	Plan bool
	// Steps are the positions of steps whose view (StepView) may have
	// changed, possibly repeated, in no particular order; ignore it when
	// Plan is set. A pending step whose dependencies became done (it now
	// shows as ready) is among them.
	Steps []int
	// Evicted is set when the run reached a final status and left
	// State.Runs in this change.
	Evicted bool
}

// tracker accumulates changes between TakeChanges. Its buffers are reused:
// tracking allocates nothing per event once they have grown.
type tracker struct {
	runs  []RunChange
	index map[*Run]int // run → its position in runs
}

// TrackChanges makes Apply record what it changes, until the State is
// dropped; drain the record with TakeChanges after every Apply (or batch of
// them), or it grows.
func (s *State) TrackChanges() {
	if s.track == nil {
		s.track = &tracker{index: map[*Run]int{}}
	}
}

// TakeChanges returns what changed since the last call and clears the
// record. The result is valid until the next Apply: its slices are reused.
func (s *State) TakeChanges() Changes {
	t := s.track
	if t == nil {
		return Changes{}
	}
	out := Changes{Runs: t.runs}
	t.runs = t.runs[:0]
	clear(t.index)
	return out
}

// touch records that r's own fields (status, reason, revision, finish time)
// changed, and returns its record (nil when not tracking).
func (s *State) touch(r *Run) *RunChange {
	t := s.track
	if t == nil {
		return nil
	}
	if i, ok := t.index[r]; ok {
		return &t.runs[i]
	}
	t.index[r] = len(t.runs)
	if len(t.runs) < cap(t.runs) {
		t.runs = t.runs[:len(t.runs)+1]
		c := &t.runs[len(t.runs)-1]
		*c = RunChange{Run: r, Steps: c.Steps[:0]}
		return c
	}
	t.runs = append(t.runs, RunChange{Run: r})
	return &t.runs[len(t.runs)-1]
}

// touchStep records that the view of step i of r may have changed.
func (s *State) touchStep(r *Run, i int) {
	if c := s.touch(r); c != nil && !c.Plan {
		if n := len(c.Steps); n == 0 || c.Steps[n-1] != i {
			c.Steps = append(c.Steps, i)
		}
	}
}

// touchPlan records that r's steps were replaced.
func (s *State) touchPlan(r *Run) {
	if c := s.touch(r); c != nil {
		c.Plan = true
		c.Steps = c.Steps[:0]
	}
}

// evictIfFinished removes r from Runs once it has a final status: hot state
// holds live runs only. Later events naming it are ignored (counted in
// Ignored), as events naming an unknown run are.
func (s *State) evictIfFinished(r *Run) {
	if r == nil || !r.Terminal() {
		return
	}
	delete(s.Runs, r.ID)
	if c := s.touch(r); c != nil {
		c.Evicted = true
	}
}
