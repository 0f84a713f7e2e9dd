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
	"github.com/agentic-dev/agentic/roles"
	"github.com/agentic-dev/agentic/roles/improve/tuning"
)

// Gates is what the UI needs to show and answer gates: the open gates
// (gates.list), an emitter that signs as the ui node, and the check of an
// operator's API token.
type Gates struct {
	// List answers gates.list.
	List func(ctx context.Context, req apiwire.GatesRequest) (apiwire.Page[json.RawMessage], error)
	// Emit signs and publishes as the ui node.
	Emit roles.Emitter
	// Operator checks a bearer token (agentctl keys api-token) on every
	// answer and returns the operator it names and the roles of their
	// credential. An error matching ErrOperatorRefused (a good token of
	// a revoked credential) is answered 403, any other 401.
	Operator func(token string) (id string, roles []string, err error)
	// Proposal answers proposals.show (an unknown id is an error matching
	// apiwire.ErrNotFound); nil: the node decides no proposals
	// (DecideProposal answers 404).
	Proposal func(ctx context.Context, id string) (tuning.Proposal, error)
}

// ErrOperatorRefused marks a well-formed token whose operator the cluster
// refuses: their credential is revoked (Gates.Operator).
var ErrOperatorRefused = errors.New("refused")

// WithGates adds the gate routes:
//
//	GET  /api/gates?run=&step=&limit=&cursor= → a page of open gates
//	POST /api/gates  {"run","step","subject","action","command","reason","remember"}
//	     → 202 {"event","operator"}: a gate.decided_for the ui node signs
//	     on behalf of the operator whose API token the request carries
//
// With a Proposal, also:
//
//	POST /api/proposals/{id}/{approve,reject}  {"reason"} (optional; a
//	     rejection needs one) → 202 {"event","operator","proposal","action"}:
//	     a proposal.decided_for the ui node signs (DecideProposal)
//
// Answering always needs an operator token (Authorization: Bearer …),
// whatever the listen address: the answer is that operator's, and a
// viewer's token is refused (403).
func (u *UI) WithGates(g Gates) *UI {
	u.gates = &g
	return u
}

func (u *UI) listGates(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	req := apiwire.GatesRequest{Run: q.Get("run"), Step: q.Get("step"), Cursor: q.Get("cursor")}
	var err error
	if req.Limit, err = limit(q); err != nil {
		writeError(w, err)
		return
	}
	page, err := u.gates.List(r.Context(), req)
	if err != nil {
		writeError(w, err)
		return
	}
	writePage(w, r, page)
}

// answer is the body of POST /api/gates.
type answer struct {
	Run      string           `json:"run"`
	Step     string           `json:"step,omitempty"`
	Subject  string           `json:"subject"`
	Action   event.GateAction `json:"action"`
	Command  string           `json:"command,omitempty"`
	Reason   string           `json:"reason,omitempty"`
	Remember bool             `json:"remember,omitempty"`
}

func (u *UI) answerGate(w http.ResponseWriter, r *http.Request) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || strings.TrimSpace(tok) == "" {
		writeJSON(w, http.StatusUnauthorized, apiError{Error: "answering a gate needs an operator token",
			Hint: "Authorization: Bearer $(agentctl keys api-token)"})
		return
	}
	status, v := u.AnswerGate(r.Context(), strings.TrimSpace(tok), http.MaxBytesReader(w, r.Body, 1<<20))
	writeJSON(w, status, v)
}

// AnswerGate is POST /api/gates for a caller that has the operator's API
// token in hand (the dashboard's signed-in session): it checks the token
// and the answer in body (JSON, as POST /api/gates takes it), has the ui
// node sign gate.decided_for naming the operator, and returns the HTTP
// status and the JSON answer POST /api/gates gives. WithGates must have
// been called.
func (u *UI) AnswerGate(ctx context.Context, token string, body io.Reader) (int, any) {
	if u.gates == nil {
		return http.StatusNotFound, apiError{Error: "this node answers no gates"}
	}
	operator, status, refused := u.gates.operator(token, "answer gates", "answers gates")
	if refused != nil {
		return status, refused
	}
	var a answer
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return errorAnswer(fmt.Errorf("%w: the body: %w", apiwire.ErrBadRequest, err))
	}
	if err := a.check(); err != nil {
		return errorAnswer(err)
	}
	subject, err := u.gates.boundSubject(ctx, a)
	if err != nil {
		return errorAnswer(err)
	}
	a.Subject = subject
	d, err := event.NewDraft(event.GateDecidedFor, a.Run, event.GateDecidedForData{Operator: operator,
		GateDecidedData: event.GateDecidedData{Step: a.Step, Subject: a.Subject, Action: a.Action,
			Command: a.Command, Reason: a.Reason, Remember: a.Remember}})
	if err == nil {
		err = u.gates.Emit.Emit(ctx, d)
	}
	if err != nil {
		return http.StatusServiceUnavailable, apiError{Error: "the answer was not recorded: " + err.Error()}
	}
	return http.StatusAccepted, map[string]string{"event": d.ID, "operator": operator}
}

// check refuses an answer that names no gate or no action, or lacks what
// its action needs.
func (a answer) check() error {
	var problems []string
	if event.ValidRunID(a.Run) != nil {
		problems = append(problems, "run: a run's full id")
	}
	if a.Step != "" && event.ValidStepID(a.Step) != nil {
		problems = append(problems, "step: not a step id")
	}
	if a.Subject == "" {
		problems = append(problems, "subject: the gate's subject (GET /api/gates shows it)")
	}
	switch a.Action {
	case event.GateAccept:
	case event.GateEdit:
		if a.Command == "" {
			problems = append(problems, "command: an edit gives the new command")
		}
	case event.GateSkip, event.GateDeny:
		if strings.TrimSpace(a.Reason) == "" {
			problems = append(problems, "reason: say why, for the ledger")
		}
	default:
		problems = append(problems, "action: accept, edit, skip or deny")
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", apiwire.ErrBadRequest, strings.Join(problems, "; "))
	}
	return nil
}

// operator checks the API token of one who acts through the ui: the
// operator's name, or the HTTP status and JSON answer of a refusal — a
// revoked credential's 403, any other bad token's 401, a credential
// without the operator role 403 ("NAME's credential (roles …) may not
// MAY", hinting that an operator's credential DOES).
func (g *Gates) operator(token, may, does string) (string, int, any) {
	operator, roles, err := g.Operator(token)
	if errors.Is(err, ErrOperatorRefused) {
		return "", http.StatusForbidden, apiError{Error: err.Error(),
			Hint: "an administrator issues new credentials: agentctl keys operator NAME --root DIR --out FILE"}
	}
	if err != nil {
		return "", http.StatusUnauthorized, apiError{Error: err.Error(), Hint: "make a new token: agentctl keys api-token"}
	}
	if !slices.Contains(roles, event.RoleOperator) {
		return "", http.StatusForbidden, apiError{Error: fmt.Sprintf("%s's credential (roles %v) may not %s", operator, roles, may),
			Hint: "an operator's credential " + does + ": agentctl keys operator NAME --role operator"}
	}
	return operator, 0, nil
}
