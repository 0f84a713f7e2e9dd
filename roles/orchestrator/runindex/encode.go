package runindex

import (
	"encoding/json"
	"slices"
	"strconv"
	"time"

	"github.com/agentic-dev/agentic/internal/canonjson"
	"github.com/agentic-dev/agentic/roles/orchestrator/core"
)

// The index stores a step row and a run summary as json.Marshal writes
// them. appendStepView and appendSummary write the same bytes without
// reflection for the usual ones — ASCII strings, no edits, evidence or
// critique — and hand any other to json.Marshal (encode_test.go holds the
// two to the same bytes).

// appendStepView appends json.Marshal(v) to dst.
func appendStepView(dst []byte, v *core.StepView) ([]byte, error) {
	if b, ok := appendStepViewFast(dst, v); ok {
		return b, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}

func appendStepViewFast(dst []byte, v *core.StepView) ([]byte, bool) {
	if len(v.Edits) > 0 || len(v.Evidence) > 0 || v.Critique != nil ||
		!plain(v.ID, v.Title, v.Subgoal, string(v.Kind), v.Status, v.Node, v.Error, v.Code, v.Wait) ||
		!plain(v.DependsOn...) || !plain(v.Approvers...) {
		return dst, false
	}
	b := appendString(append(dst, `{"id":`...), v.ID)
	if v.Title != "" {
		b = appendString(append(b, `,"title":`...), v.Title)
	}
	b = appendString(append(b, `,"subgoal":`...), v.Subgoal)
	b = appendString(append(b, `,"kind":`...), string(v.Kind))
	b = appendString(append(b, `,"status":`...), v.Status)
	b = strconv.AppendInt(append(b, `,"attempt":`...), int64(v.Attempt), 10)
	b = appendString(append(b, `,"node":`...), v.Node)
	b = append(b, `,"exit_code":`...)
	if v.ExitCode == nil {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendInt(b, int64(*v.ExitCode), 10)
	}
	if len(v.DependsOn) > 0 {
		b = appendStrings(append(b, `,"depends_on":`...), v.DependsOn)
	}
	if v.Error != "" {
		b = appendString(append(b, `,"error":`...), v.Error)
	}
	var ok bool
	if b, ok = appendTimePtr(append(b, `,"started_at":`...), v.StartedAt); !ok {
		return dst, false
	}
	if b, ok = appendTimePtr(append(b, `,"finished_at":`...), v.FinishedAt); !ok {
		return dst, false
	}
	if v.Code != "" {
		b = appendString(append(b, `,"code":`...), v.Code)
	}
	if v.Reassigned != 0 {
		b = strconv.AppendInt(append(b, `,"reassigned":`...), int64(v.Reassigned), 10)
	}
	if v.Wait != "" {
		b = appendString(append(b, `,"wait":`...), v.Wait)
	}
	if len(v.Approvers) > 0 {
		b = appendStrings(append(b, `,"approvers":`...), v.Approvers)
	}
	return append(b, '}'), true
}

// appendSummary appends json.Marshal(s) to dst.
func appendSummary(dst []byte, s *core.RunSummary) ([]byte, error) {
	if b, ok := appendSummaryFast(dst, s); ok {
		return b, nil
	}
	b, err := json.Marshal(s)
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}

func appendSummaryFast(dst []byte, s *core.RunSummary) ([]byte, bool) {
	// Ratings are read beside the summary (runs.get), never stored in it.
	if len(s.Ratings) > 0 || s.RatingsMore || !plain(s.ID, s.Goal, string(s.Status), s.Reason, s.Code) {
		return dst, false
	}
	for k := range s.StepCounts {
		if !plain(k) {
			return dst, false
		}
	}
	b := appendString(append(dst, `{"id":`...), s.ID)
	b = appendString(append(b, `,"goal":`...), s.Goal)
	b = appendString(append(b, `,"status":`...), string(s.Status))
	if s.Reason != "" {
		b = appendString(append(b, `,"reason":`...), s.Reason)
	}
	b = strconv.AppendInt(append(b, `,"revision":`...), int64(s.Revision), 10)
	b = strconv.AppendInt(append(b, `,"steps":`...), int64(s.Steps), 10)
	b = append(b, `,"step_counts":`...)
	if s.StepCounts == nil {
		b = append(b, "null"...)
	} else {
		// encoding/json writes a map's members in key order.
		var keys [16]string
		ks := keys[:0]
		for k := range s.StepCounts {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		b = append(b, '{')
		for i, k := range ks {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = strconv.AppendInt(append(b, ':'), int64(s.StepCounts[k]), 10)
		}
		b = append(b, '}')
	}
	var ok bool
	if b, ok = appendTime(append(b, `,"created_at":`...), s.CreatedAt); !ok {
		return dst, false
	}
	if b, ok = appendTimePtr(append(b, `,"finished_at":`...), s.FinishedAt); !ok {
		return dst, false
	}
	if s.Code != "" {
		b = appendString(append(b, `,"code":`...), s.Code)
	}
	return append(b, '}'), true
}

// plain reports whether encoding/json writes every s as is (canonjson.Plain).
func plain(ss ...string) bool {
	for _, s := range ss {
		if !canonjson.Plain(s) {
			return false
		}
	}
	return true
}

// appendString appends a string plain reported true for, quoted.
func appendString(b []byte, s string) []byte {
	return append(append(append(b, '"'), s...), '"')
}

func appendStrings(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}

// appendTime appends t as time.Time.MarshalJSON does, or reports false
// where it fails (years outside [0, 9999]).
func appendTime(b []byte, t time.Time) ([]byte, bool) {
	b, err := t.AppendText(append(b, '"'))
	if err != nil {
		return nil, false
	}
	return append(b, '"'), true
}

func appendTimePtr(b []byte, t *time.Time) ([]byte, bool) {
	if t == nil {
		return append(b, "null"...), true
	}
	return appendTime(b, *t)
}
