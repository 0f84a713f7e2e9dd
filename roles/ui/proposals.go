package ui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/internal/apiwire"
	"github.com/agentic-dev/agentic/roles/improve/tuning"
)

// decideBody is the body of POST /api/proposals/{id}/{approve,reject}.
type decideBody struct {
	Reason string `json:"reason,omitempty"`
}

// decideProposal is POST /api/proposals/{id}/{approve,reject} with an
// operator's bearer token and an optional body {"reason"}.
func (u *UI) decideProposal(w http.ResponseWriter, r *http.Request) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || strings.TrimSpace(tok) == "" {
		writeJSON(w, http.StatusUnauthorized, apiError{Error: "approving or rejecting a proposal needs an operator token",
			Hint: "Authorization: Bearer $(agentctl keys api-token)"})
		return
	}
	var b decideBody
	if r.ContentLength != 0 {
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&b); err != nil && !errors.Is(err, io.EOF) {
			writeError(w, fmt.Errorf("%w: the body: %w", apiwire.ErrBadRequest, err))
			return
		}
	}
	status, v := u.DecideProposal(r.Context(), strings.TrimSpace(tok), r.PathValue("id"), r.PathValue("decision"), b.Reason)
	writeJSON(w, status, v)
}

// DecideProposal approves (action "approve") or rejects ("reject") the
// pending proposal id for the operator whose API token is token: it
// checks the token as AnswerGate does (a revoked credential or a
// viewer's is 403, any other bad token 401), then the proposal (unknown:
// 404; no longer pending: 409), and has the ui node sign
// proposal.decided_for naming the operator, which every fold counts as
// that operator's own approval or rejection. A rejection needs a reason.
// It returns the HTTP status and a JSON answer: 202
// {"event","operator","proposal","action"}. WithGates must have been
// called with a Proposal.
func (u *UI) DecideProposal(ctx context.Context, token, id, action, reason string) (int, any) {
	if u.gates == nil || u.gates.Proposal == nil {
		return http.StatusNotFound, apiError{Error: "this node decides no proposals"}
	}
	operator, status, refused := u.gates.operator(token, "decide proposals", "decides proposals")
	if refused != nil {
		return status, refused
	}
	reason = strings.TrimSpace(reason)
	switch {
	case action != event.ProposalApprove && action != event.ProposalReject:
		return http.StatusBadRequest, apiError{Error: fmt.Sprintf("%q is no decision on a proposal: approve or reject", action)}
	case action == event.ProposalReject && reason == "":
		return http.StatusBadRequest, apiError{Error: "a rejection needs a reason, for the ledger: nothing was recorded"}
	case len(reason) > 4096:
		return http.StatusBadRequest, apiError{Error: "the reason is longer than 4096 bytes: nothing was recorded"}
	}
	p, err := u.gates.Proposal(ctx, id)
	if err != nil {
		return errorAnswer(fmt.Errorf("proposal %s: %w", id, err))
	}
	if p.Status != tuning.StatusPending {
		return http.StatusConflict, apiError{Error: fmt.Sprintf("proposal %s is %s, not pending: nothing was recorded", p.ID, p.Status),
			Hint: "reload the proposal: its status changed", Code: "wrong_status"}
	}
	d, err := event.NewDraft(event.ProposalDecidedFor, "", event.ProposalDecidedForData{Operator: operator, Action: action,
		ProposalDecidedData: event.ProposalDecidedData{Proposal: p.ID, Reason: reason}})
	if err == nil {
		err = u.gates.Emit.Emit(ctx, d)
	}
	if err != nil {
		return http.StatusServiceUnavailable, apiError{Error: "the decision was not recorded: " + err.Error()}
	}
	return http.StatusAccepted, map[string]string{"event": d.ID, "operator": operator, "proposal": p.ID, "action": action}
}
