package apiwire

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// MethodRunsSteps pages through the steps of one run (after runs.get's
// first page).
const MethodRunsSteps = "runs.steps"

// Page sizes of the run methods: a request's limit is clamped to the
// maximum; 0 asks for the default. Pages are cut by encoded size too, so a
// page may hold fewer items and still not be the last.
const (
	DefaultRunsPage  = 100
	MaxRunsPage      = 1000
	DefaultStepsPage = 1000
	MaxStepsPage     = 5000
)

// RunStatuses are the statuses a run can have, in lifecycle order.
var RunStatuses = []string{
	string(event.RunSubmitted), string(event.RunPlanning), string(event.RunPlanned), string(event.RunRunning),
	string(event.RunPaused), string(event.RunSucceeded), string(event.RunFailed), string(event.RunCancelled),
}

// RunsListRequest asks for a page of run summaries, newest first (by the
// stream time of the run's goal.submitted, then run id). Filters combine.
type RunsListRequest struct {
	// Status keeps runs with this status (one of RunStatuses).
	Status string `json:"status,omitempty"`
	// Goal keeps runs whose goal contains this text, ignoring case. A
	// node reads a bounded number of runs that do not match per page: a
	// page may be empty and not the last.
	Goal string `json:"goal,omitempty"`
	// Since and Until keep runs submitted at or after Since and before
	// Until (stream time); zero means unbounded.
	Since time.Time `json:"since,omitzero"`
	Until time.Time `json:"until,omitzero"`
	// After starts the listing with the runs older than a cursor (a
	// page's Next). Before lists the runs newer than a cursor instead:
	// each page holds the runs nearest to it, newest first, and the
	// listing goes on towards newer runs; After, if set too, then bounds
	// the other end. Cursors are opaque.
	After  string `json:"after,omitempty"`
	Before string `json:"before,omitempty"`
	// Cursor is the Next of the previous page: it continues the listing
	// the other fields describe, in its direction.
	Cursor string `json:"cursor,omitempty"`
	// Limit caps the page (DefaultRunsPage when 0, at most MaxRunsPage).
	Limit int `json:"limit,omitempty"`
}

// Validate reports what the node cannot answer without looking at its
// index (cursors are checked by the node): every problem is an
// ErrBadRequest with a hint.
func (r RunsListRequest) Validate() error {
	var problems []string
	if r.Status != "" && !slices.Contains(RunStatuses, r.Status) {
		problems = append(problems, fmt.Sprintf("status %q is not one of %s", r.Status, strings.Join(RunStatuses, ", ")))
	}
	if r.Limit < 0 {
		problems = append(problems, fmt.Sprintf("limit %d is negative", r.Limit))
	}
	if !r.Since.IsZero() && !r.Until.IsZero() && !r.Since.Before(r.Until) {
		problems = append(problems, fmt.Sprintf("since %s is not before until %s", r.Since.Format(time.RFC3339), r.Until.Format(time.RFC3339)))
	}
	if len(problems) == 0 {
		return nil
	}
	return WithHint(fmt.Errorf("%w: %s: %s", ErrBadRequest, MethodRunsList, strings.Join(problems, "; ")),
		"statuses: "+strings.Join(RunStatuses, " ")+"; limit >= 0; since before until")
}

// PageLimit is limit clamped to [1, max], def when limit is 0 or less.
func PageLimit(limit, def, max int) int {
	if limit <= 0 {
		return def
	}
	return min(limit, max)
}

// RunsGetRequest names a run by id or unique id prefix.
type RunsGetRequest struct {
	ID string `json:"id"`
	// Summary asks for the summary alone, without steps: what a poller
	// needs, at a cost that does not grow with the run.
	Summary bool `json:"summary,omitempty"`
	// Limit caps the first page of steps (DefaultStepsPage when 0, at most
	// MaxStepsPage).
	Limit int `json:"limit,omitempty"`
}

// RunsStepsRequest asks for a page of a run's steps, in plan order.
type RunsStepsRequest struct {
	// ID is the run id or a unique prefix.
	ID string `json:"id"`
	// Cursor is the Next of the previous page; "" starts from the first
	// step.
	Cursor string `json:"cursor,omitempty"`
	// Limit caps the page (DefaultStepsPage when 0, at most MaxStepsPage).
	Limit int `json:"limit,omitempty"`
}

// RunDetail is the answer to runs.get: the run's summary and the first
// page of its steps (nil when only the summary was asked for); more steps
// come from runs.steps with Steps.Next. S is Step for clients; a node
// builds it with steps already encoded (json.RawMessage).
//
// The summary and each page are read when asked for: the steps of a run
// that is still going may have moved on from the summary.
type RunDetail[S any] struct {
	Run   RunSummary `json:"run"`
	Steps *Page[S]   `json:"steps,omitempty"`
}

// StepCursor is the cursor that continues a listing of steps after the
// step at position pos (0-based, plan order).
func StepCursor(pos int) string { return strconv.Itoa(pos) }

// ParseStepCursor returns the position a steps cursor continues after: -1
// for "" (from the first step). Anything but a cursor from StepCursor is
// an ErrBadRequest.
func ParseStepCursor(c string) (int, error) {
	if c == "" {
		return -1, nil
	}
	pos, err := strconv.Atoi(c)
	if err != nil || pos < 0 || strconv.Itoa(pos) != c {
		return 0, WithHint(fmt.Errorf("%w: bad steps cursor %q", ErrBadRequest, c),
			"use the \"next\" of the previous page of steps, or none to start from the first step")
	}
	return pos, nil
}

// Done counts the steps of s that need nothing more (succeeded or
// skipped), the "done" of "done/total".
func Done(s RunSummary) int {
	return s.StepCounts["succeeded"] + s.StepCounts["skipped"]
}

// ParseTime reads a time argument of a query: an RFC 3339 time, or a
// duration (2h, 90m) meaning that long before now.
func ParseTime(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return time.Time{}, fmt.Errorf("%w: %q is neither an RFC 3339 time (2026-03-01T12:00:00Z) nor a duration (2h, 90m)", ErrBadRequest, s)
	}
	return now.Add(-d), nil
}
