package bench

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// timeline collects, per step attempt, the times the ledger records for
// its dispatch: when it became ready (TaskAssigned.ReadyAt), when the
// leader decided the assignment (the TaskAssigned event's time), when the
// executor started it (TaskStarted's time) and when it finished.
type timeline map[string]*stepTimes

type stepTimes struct {
	readyAt, assigned, started, finished time.Time
}

// add records one event; types other than task.assigned/started/finished
// are ignored.
func (tl timeline) add(t event.Type, run string, at time.Time, data json.RawMessage) error {
	switch t {
	case event.TaskAssigned:
		var d event.TaskAssignedData
		if err := json.Unmarshal(data, &d); err != nil {
			return fmt.Errorf("task.assigned of run %s: %w", run, err)
		}
		st := tl.step(run, d.Step.ID, d.Attempt)
		st.readyAt, st.assigned = d.ReadyAt, at
	case event.TaskStarted:
		var d event.TaskStartedData
		if err := json.Unmarshal(data, &d); err != nil {
			return fmt.Errorf("task.started of run %s: %w", run, err)
		}
		tl.step(run, d.Step, d.Attempt).started = at
	case event.TaskFinished:
		var d event.TaskFinishedData
		if err := json.Unmarshal(data, &d); err != nil {
			return fmt.Errorf("task.finished of run %s: %w", run, err)
		}
		tl.step(run, d.Step, d.Attempt).finished = at
	}
	return nil
}

func (tl timeline) step(run, step string, attempt int) *stepTimes {
	k := fmt.Sprintf("%s/%s/%d", run, step, attempt)
	st := tl[k]
	if st == nil {
		st = &stepTimes{}
		tl[k] = st
	}
	return st
}

// spans returns, for every attempt both assigned and started, the
// durations ready→started (the dispatch latency), ready→assigned (the
// leader's part: fold, decide) and assigned→started (the trip to the
// executor). complete counts those attempts.
func (tl timeline) spans() (dispatch, decide, deliver durations, complete int) {
	for _, st := range tl {
		if st.assigned.IsZero() || st.started.IsZero() {
			continue
		}
		complete++
		dispatch = append(dispatch, st.started.Sub(st.readyAt))
		decide = append(decide, st.assigned.Sub(st.readyAt))
		deliver = append(deliver, st.started.Sub(st.assigned))
	}
	return dispatch, decide, deliver, complete
}

// durations is a sample of latencies.
type durations []time.Duration

// quantile returns the q-quantile (nearest rank) in milliseconds.
func (d durations) quantile(q float64) float64 {
	if len(d) == 0 {
		return math.NaN()
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := max(int(math.Ceil(q*float64(len(s))))-1, 0)
	return float64(s[i].Microseconds()) / 1000
}
