package ui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/internal/apiwire"
)

// Brake is an operator's action on a whole run from the ui node: pause,
// resume or cancel.
type Brake string

// The brakes, as the routes and the dashboard's forms name them.
const (
	BrakePause  Brake = "pause"
	BrakeResume Brake = "resume"
	BrakeCancel Brake = "cancel"
)

// brakeBody is the body of POST /api/runs/{id}/{pause,resume,cancel}.
type brakeBody struct {
	Reason string `json:"reason,omitempty"`
}

// errWrongStatus marks a brake the run's status does not allow.
var errWrongStatus = errors.New("not now")

func (u *UI) brakeRun(w http.ResponseWriter, r *http.Request) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || strings.TrimSpace(tok) == "" {
		writeJSON(w, http.StatusUnauthorized, apiError{Error: "pausing, resuming or cancelling a run needs an operator token",
			Hint: "Authorization: Bearer $(agentctl keys api-token)"})
		return
	}
	var b brakeBody
	if r.ContentLength != 0 {
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&b); err != nil && !errors.Is(err, io.EOF) {
			writeError(w, fmt.Errorf("%w: the body: %w", apiwire.ErrBadRequest, err))
			return
		}
	}
	status, v := u.BrakeRun(r.Context(), strings.TrimSpace(tok), r.PathValue("id"), Brake(r.PathValue("brake")), b.Reason)
	writeJSON(w, status, v)
}

// BrakeRun pauses, resumes or cancels run (a full id or a unique prefix)
// for the operator whose API token is token: it checks the token (as
// AnswerGate does: a revoked credential or a viewer's is 403, any other
// bad token 401) and the run's status, has the ui node sign
// run.paused_for, run.resumed_for or run.cancel_requested_for naming the
// operator, and returns the HTTP status and the JSON answer: 202
// {"event","operator","run"}. WithGates must have been called (its Emit
// and Operator serve here too).
func (u *UI) BrakeRun(ctx context.Context, token, run string, brake Brake, reason string) (int, any) {
	if u.gates == nil {
		return http.StatusNotFound, apiError{Error: "this node takes no operator actions"}
	}
	var typ event.Type
	var allowed []event.RunStatus
	switch brake {
	case BrakePause:
		typ, allowed = event.RunPausedFor, []event.RunStatus{event.RunRunning}
	case BrakeResume:
		typ, allowed = event.RunResumedFor, []event.RunStatus{event.RunPaused}
	case BrakeCancel:
		typ, allowed = event.RunCancelRequestedFor, []event.RunStatus{event.RunSubmitted, event.RunPlanning,
			event.RunPlanned, event.RunRunning, event.RunPaused}
	default:
		return errorAnswer(apiwire.WithHint(fmt.Errorf("%w: %q is no action on a run", apiwire.ErrBadRequest, brake), "pause, resume or cancel"))
	}
	operator, status, refused := u.gates.operator(token, string(brake)+" runs", "acts on runs")
	if refused != nil {
		return status, refused
	}
	if len(reason) > 4096 {
		return errorAnswer(fmt.Errorf("%w: the reason is longer than 4096 bytes", apiwire.ErrBadRequest))
	}
	d, err := u.runs.Get(ctx, apiwire.RunsGetRequest{ID: run, Limit: 1})
	if err != nil {
		return errorAnswer(err)
	}
	if !slices.Contains(allowed, d.Run.Status) {
		return errorAnswer(apiwire.WithHint(fmt.Errorf("%w: run %s is %s: it cannot be %s", errWrongStatus, d.Run.ID, d.Run.Status, done(brake)),
			"reload the run: its status changed"))
	}
	reason = strings.TrimSpace(reason)
	var draft event.Draft
	switch brake {
	case BrakeCancel:
		draft, err = event.NewDraft(typ, d.Run.ID, event.RunCancelForData{Operator: operator, RunCancelData: event.RunCancelData{Reason: reason}})
	default:
		draft, err = event.NewDraft(typ, d.Run.ID, event.RunBrakeForData{Operator: operator, RunBrakeData: event.RunBrakeData{Reason: reason}})
	}
	if err == nil {
		err = u.gates.Emit.Emit(ctx, draft)
	}
	if err != nil {
		return http.StatusServiceUnavailable, apiError{Error: "the " + string(brake) + " was not recorded: " + err.Error()}
	}
	return http.StatusAccepted, map[string]string{"event": draft.ID, "operator": operator, "run": d.Run.ID}
}

// done is the participle of a brake, for messages.
func done(b Brake) string {
	switch b {
	case BrakePause:
		return "paused"
	case BrakeResume:
		return "resumed"
	}
	return "cancelled"
}
