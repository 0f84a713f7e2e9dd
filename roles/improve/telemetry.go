package improve

import (
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/memory"
)

// Attempt is one finished attempt of a step, as the evaluation reads it.
type Attempt struct {
	Seq     uint64
	Time    time.Time
	Run     string
	Family  string
	Step    string
	Attempt int
	// Shapes are the command shapes of a shell step (memory.Shapes), and
	// Command the step's command.
	Shapes   []string
	Command  string
	Status   event.TaskStatus
	Class    event.FailureClass
	TimedOut bool
	ExitCode int
	Duration time.Duration
	// SetTimeout, SetRetries: the step set its own value, so a default
	// does not touch it.
	SetTimeout, SetRetries bool
	// Retryable: the failure's class is one retries cover (transient, or
	// logic with on_failure retry).
	Retryable bool
}

// Failed reports whether the attempt counts as an error: it failed (a
// cancellation or a skip is no error of the step's).
func (a *Attempt) Failed() bool { return a.Status == event.TaskFailed }

// Gate is a policy gate of one command and how operators answered it.
type Gate struct {
	Seq     uint64
	Time    time.Time
	Run     string
	Family  string
	Step    string
	Command string
	Dir     string
	Verdict event.Verdict
	// Accepted, Refused count the answers (refused: edit, skip, deny).
	Accepted, Refused int
	// Answers are the ledger positions of the answers.
	Answers []uint64
}

// Replan is a replan asked after a step failed.
type Replan struct {
	Seq     uint64
	Time    time.Time
	Run     string
	Family  string
	Step    string
	Command string
	Shapes  []string
	Error   string
}

// Rating is an operator's rating of a run.
type Rating struct {
	Seq    uint64
	Time   time.Time
	Run    string
	Family string
	Down   bool
	Reason string
}

// runInfo is what the telemetry keeps of a run while its events come.
type runInfo struct {
	family string
	last   time.Time
	steps  map[string]*stepInfo
	gates  map[string]int // step → index in Telemetry.Gates
}

type stepInfo struct {
	shapes                 []string
	command, dir           string
	setTimeout, setRetries bool
	onFailure              event.OnFailure
}

// Telemetry is the window of the ledger the evaluation reads: finished
// attempts, policy gates and their answers, replans and ratings, each
// with its run's plan family. It folds events in ledger order and keeps
// what is younger than Window (and at most MaxRecords of each kind), so
// its memory is bounded whatever the history.
type Telemetry struct {
	// Window is how far back records are kept.
	Window time.Duration
	// MaxRecords caps each kind of record.
	MaxRecords int

	Attempts []Attempt
	Gates    []Gate
	Replans  []Replan
	Ratings  []Rating
	// Commands are the last commands run or gated (for CheckPolicy's
	// re-judging), at most MaxCommands.
	Commands []string
	// Fixed are the replanned plans runs succeeded with: the template
	// rule's (rules_template.go).
	Fixed *Replanned

	runs   map[string]*runInfo
	ended  map[string]string // family by run, of runs finished lately
	shapes map[string][]string
	now    time.Time

	// earlier, when set, gives the events of a run from before the first
	// position read (a run that started before the window): they are
	// folded for the run's family, steps and commands only (foldInfo).
	earlier func(run string) []event.Event
	// keep, when set, filters the attempts kept, and no gate, replan,
	// rating or command is kept (the monitor's watch).
	keep func(*Attempt) bool
}

// Defaults of the telemetry window.
const (
	DefaultWindow     = 24 * time.Hour
	DefaultMaxRecords = 1 << 20
	MaxCommands       = 1000
)

// NewTelemetry returns an empty window.
func NewTelemetry(window time.Duration, maxRecords int) *Telemetry {
	if window <= 0 {
		window = DefaultWindow
	}
	if maxRecords <= 0 {
		maxRecords = DefaultMaxRecords
	}
	return &Telemetry{Window: window, MaxRecords: maxRecords, runs: map[string]*runInfo{}, ended: map[string]string{}, shapes: map[string][]string{}}
}

// Fold folds one ledger event.
func (t *Telemetry) Fold(ev event.Event) {
	if ev.Time.After(t.now) {
		t.now = ev.Time
	}
	if t.keep == nil {
		t.foldReplanned(ev) // rules_template.go
	}
	if t.keep != nil {
		switch ev.Type {
		case event.GateOpened, event.GateDecided, event.GateDecidedFor, event.PlanReplanRequested, event.RunRated:
			return
		}
	}
	switch ev.Type {
	case event.GoalSubmitted:
		var d struct {
			Family string `json:"family"`
		}
		if ev.Decode(&d) == nil {
			t.run(ev).family = d.Family
		}
		// A goal that carries its plan file's plan is planned from it
		// by the leader (plan.FromGoal), with no proposal on the way:
		// its steps are read from the goal, as from a proposal.
		t.planProposed(ev)
	case event.PlanProposed:
		t.planProposed(ev)
	case event.TaskAssigned:
		t.assigned(ev)
	case event.TaskFinished:
		t.finished(ev)
	case event.GateOpened:
		t.gateOpened(ev)
	case event.GateDecided, event.GateDecidedFor:
		t.gateDecided(ev)
	case event.PlanReplanRequested:
		t.replan(ev)
	case event.RunFinished:
		if r := t.runs[ev.Run]; r != nil && r.family != "" && t.keep == nil {
			if len(t.ended) >= maxEnded {
				t.ended = map[string]string{}
			}
			t.ended[ev.Run] = r.family
		}
		delete(t.runs, ev.Run)
	case event.RunRated:
		var d event.RunRatedData
		if ev.Decode(&d) == nil {
			fam := t.familyOf(ev.Run)
			if fam == "" && t.earlier != nil && t.runs[ev.Run] == nil {
				// A run that finished before the window: its goal says.
				fam = t.run(ev).family
				delete(t.runs, ev.Run)
			}
			t.Ratings = appendCapped(t.Ratings, Rating{Seq: ev.Seq, Time: ev.Time, Run: ev.Run,
				Family: fam, Down: d.Rating == event.RatingDown, Reason: d.Reason}, t.MaxRecords)
		}
	}
}

// foldInfo folds an event of a run from before the window: what it says
// of the run (family, steps, commands), no record.
func (t *Telemetry) foldInfo(ev event.Event) {
	switch ev.Type {
	case event.GoalSubmitted:
		var d struct {
			Family string `json:"family"`
		}
		if ev.Decode(&d) == nil && d.Family != "" {
			t.runs[ev.Run].family = d.Family
		}
		t.planProposed(ev) // the goal's plan, when it carries one
	case event.PlanProposed:
		t.planProposed(ev)
	case event.TaskAssigned:
		t.assigned(ev)
	}
}

// run returns the run's info, made if need be.
func (t *Telemetry) run(ev event.Event) *runInfo {
	r := t.runs[ev.Run]
	if r == nil {
		r = &runInfo{steps: map[string]*stepInfo{}, gates: map[string]int{}}
		t.runs[ev.Run] = r
		if t.earlier != nil && ev.Type != event.GoalSubmitted && ev.Run != "" {
			// A run the window did not see start: what its earlier
			// events say of it (r is in runs: they fold into it).
			for _, prev := range t.earlier(ev.Run) {
				t.foldInfo(prev)
			}
		}
	}
	r.last = ev.Time
	return r
}

// familyOf is the plan family of run, as far as the window knows: a
// finished run's is remembered (bounded) for the ratings that come after.
func (t *Telemetry) familyOf(run string) string {
	if r := t.runs[run]; r != nil {
		return r.family
	}
	return t.finishedFamily(run)
}

// finishedFamily is the family of a run that finished lately.
func (t *Telemetry) finishedFamily(run string) string { return t.ended[run] }

// maxEnded bounds the families of finished runs the window remembers
// (for their ratings); past it, it starts again empty.
const maxEnded = 100_000

// planProposed reads the steps and the family of the plan a
// plan.proposed, or a goal.submitted carrying its plan file's plan, holds
// (both under "plan").
func (t *Telemetry) planProposed(ev event.Event) {
	var d struct {
		Plan struct {
			Family string `json:"family"`
			Steps  []struct {
				ID        string          `json:"id"`
				Run       string          `json:"run"`
				Cwd       string          `json:"cwd"`
				Timeout   event.Duration  `json:"timeout"`
				Retries   int             `json:"retries"`
				OnFailure event.OnFailure `json:"on_failure"`
			} `json:"steps"`
		} `json:"plan"`
	}
	if ev.Decode(&d) != nil {
		return
	}
	r := t.run(ev)
	if d.Plan.Family != "" {
		r.family = d.Plan.Family
	}
	for _, s := range d.Plan.Steps {
		r.steps[s.ID] = &stepInfo{setTimeout: s.Timeout > 0, setRetries: s.Retries > 0, onFailure: s.OnFailure,
			command: s.Run, dir: s.Cwd}
	}
}

// assignedData is what the telemetry reads of a task.assigned.
type assignedData struct {
	Step struct {
		ID   string         `json:"id"`
		Kind event.StepKind `json:"kind"`
		Run  string         `json:"run"`
		Cwd  string         `json:"cwd"`
	} `json:"step"`
}

func (t *Telemetry) assigned(ev event.Event) {
	var d assignedData
	if ev.Decode(&d) != nil {
		return
	}
	r := t.run(ev)
	s := r.steps[d.Step.ID]
	if s == nil {
		s = &stepInfo{}
		r.steps[d.Step.ID] = s
	}
	if d.Step.Kind == event.KindShell && d.Step.Run != "" {
		s.command, s.dir = d.Step.Run, d.Step.Cwd
		s.shapes = t.shapesOf(d.Step.Run)
		if t.keep == nil {
			t.Commands = appendCapped(t.Commands, d.Step.Run, MaxCommands)
		}
	}
}

// shapesOf is memory.Shapes, remembered for the scripts seen last.
func (t *Telemetry) shapesOf(script string) []string {
	if s, ok := t.shapes[script]; ok {
		return s
	}
	if len(t.shapes) >= 4096 {
		t.shapes = map[string][]string{}
	}
	s := memory.Shapes(script)
	t.shapes[script] = s
	return s
}

// finishedData is what the telemetry reads of a task.finished: a
// narrow decode, the window folds a day of them.
type finishedData struct {
	Step     string             `json:"step"`
	Attempt  int                `json:"attempt"`
	Status   event.TaskStatus   `json:"status"`
	Class    event.FailureClass `json:"class"`
	ExitCode int                `json:"exit_code"`
	TimedOut bool               `json:"timed_out"`
	Duration event.Duration     `json:"duration"`
}

func (t *Telemetry) finished(ev event.Event) {
	var d finishedData
	if ev.Decode(&d) != nil {
		return
	}
	r := t.run(ev)
	a := Attempt{Seq: ev.Seq, Time: ev.Time, Run: ev.Run, Family: r.family, Step: d.Step, Attempt: d.Attempt,
		Status: d.Status, Class: d.Class, TimedOut: d.TimedOut, ExitCode: d.ExitCode, Duration: d.Duration.Std()}
	if s := r.steps[d.Step]; s != nil {
		a.Shapes, a.Command, a.SetTimeout, a.SetRetries = s.shapes, s.command, s.setTimeout, s.setRetries
		a.Retryable = d.Class == event.ClassTransient || s.onFailure == event.OnFailureRetry
	}
	if t.keep != nil && !t.keep(&a) {
		return
	}
	t.Attempts = appendCapped(t.Attempts, a, t.MaxRecords)
}

func (t *Telemetry) gateOpened(ev event.Event) {
	var d event.GateOpenedData
	if ev.Decode(&d) != nil || d.Kind != event.GatePolicy || d.Step == "" || d.Verdict == nil {
		return
	}
	r := t.run(ev)
	cmd, dir := d.Command, ""
	if s := r.steps[d.Step]; s != nil {
		if cmd == "" {
			cmd = s.command
		}
		dir = s.dir
	}
	if cmd == "" {
		return
	}
	t.Gates = appendCapped(t.Gates, Gate{Seq: ev.Seq, Time: ev.Time, Run: ev.Run, Family: r.family, Step: d.Step,
		Command: cmd, Dir: dir, Verdict: *d.Verdict}, t.MaxRecords)
	r.gates[d.Step] = len(t.Gates) - 1
	t.Commands = appendCapped(t.Commands, cmd, MaxCommands)
}

func (t *Telemetry) gateDecided(ev event.Event) {
	var d event.GateDecidedData
	if ev.Decode(&d) != nil || d.Step == "" {
		return
	}
	r := t.runs[ev.Run]
	if r == nil {
		return
	}
	i, ok := r.gates[d.Step]
	if !ok || i >= len(t.Gates) || t.Gates[i].Run != ev.Run || t.Gates[i].Step != d.Step {
		return
	}
	g := &t.Gates[i]
	if d.Action == event.GateAccept {
		g.Accepted++
	} else {
		g.Refused++
	}
	g.Answers = append(g.Answers, ev.Seq)
}

func (t *Telemetry) replan(ev event.Event) {
	var d event.PlanReplanRequestedData
	if ev.Decode(&d) != nil || d.Reason == event.ReplanNext || d.Failure.Step == "" {
		return
	}
	r := t.run(ev)
	cmd := d.Failure.Command
	if cmd == "" {
		if s := r.steps[d.Failure.Step]; s != nil {
			cmd = s.command
		}
	}
	fam := r.family
	if d.Plan.Family != "" {
		fam = d.Plan.Family
	}
	t.Replans = appendCapped(t.Replans, Replan{Seq: ev.Seq, Time: ev.Time, Run: ev.Run, Family: fam, Step: d.Failure.Step,
		Command: cmd, Shapes: t.shapesOf(cmd), Error: d.Failure.Error}, t.MaxRecords)
}

// Trim drops what is older than the window before now, and the runs
// nothing was heard of in a window (a run whose end was never folded).
func (t *Telemetry) Trim(now time.Time) {
	from := now.Add(-t.Window)
	t.Fixed.Trim(now, t.Window)
	t.Attempts = trimBefore(t.Attempts, from, func(a *Attempt) time.Time { return a.Time })
	t.Replans = trimBefore(t.Replans, from, func(a *Replan) time.Time { return a.Time })
	t.Ratings = trimBefore(t.Ratings, from, func(a *Rating) time.Time { return a.Time })
	if n := len(t.Gates); n > 0 && t.Gates[0].Time.Before(from) {
		g := trimBefore(t.Gates, from, func(a *Gate) time.Time { return a.Time })
		shift := n - len(g)
		t.Gates = g
		for _, r := range t.runs {
			for step, i := range r.gates {
				if i < shift {
					delete(r.gates, step)
				} else {
					r.gates[step] = i - shift
				}
			}
		}
	}
	for id, r := range t.runs {
		if r.last.Before(from) {
			delete(t.runs, id)
		}
	}
}

// Now is the time of the newest event folded.
func (t *Telemetry) Now() time.Time { return t.now }

func trimBefore[T any](s []T, from time.Time, at func(*T) time.Time) []T {
	i := 0
	for i < len(s) && at(&s[i]).Before(from) {
		i++
	}
	if i == 0 {
		return s
	}
	return append(s[:0:0], s[i:]...)
}

// appendCapped appends v, dropping the oldest half when s reaches max.
func appendCapped[T any](s []T, v T, max int) []T {
	if len(s) >= max {
		s = append(s[:0:0], s[len(s)/2:]...)
	}
	return append(s, v)
}
