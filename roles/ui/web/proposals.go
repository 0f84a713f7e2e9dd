package web

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/improve/tuning"
)

// proposalsView is the Proposals page: the proposals, pending first, then
// newest first.
type proposalsView struct {
	Known     bool
	Proposals []tuning.Proposal
	Pending   int
}

// proposalsPage is GET /proposals: the self-improvement loop's proposals
// (roles/improve) as the node folds them (proposals.list).
func (s *Server) proposalsPage(w http.ResponseWriter, r *http.Request) {
	v := proposalsView{Known: s.src.Proposals != nil}
	if v.Known {
		ps, err := s.src.Proposals(r.Context())
		if err != nil {
			s.fail(w, r, fmt.Errorf("web: the proposals: %w", err))
			return
		}
		v.Proposals = sortProposals(ps)
		for _, p := range v.Proposals {
			if p.Status == tuning.StatusPending {
				v.Pending++
			}
		}
	}
	s.render(w, r, http.StatusOK, "proposals", page{Title: "Proposals", Nav: "proposals", Data: v})
}

// sortProposals orders proposals pending first, then newest first (by
// ledger position), the order an operator works through them.
func sortProposals(ps []tuning.Proposal) []tuning.Proposal {
	out := slices.Clone(ps)
	slices.SortStableFunc(out, func(a, b tuning.Proposal) int {
		ap, bp := a.Status == tuning.StatusPending, b.Status == tuning.StatusPending
		if ap != bp {
			if ap {
				return -1
			}
			return 1
		}
		return cmp.Compare(b.Seq, a.Seq)
	})
	return out
}

// proposalView is one proposal's page.
type proposalView struct {
	P tuning.Proposal
	// Diff is the change against its rollback, field by field.
	Diff []diffRow
	// ProvesNothing: a note's or a template's validation cannot replay
	// a model's answers, so it proves nothing about their effect.
	ProvesNothing bool
	// Approvals counts the approvals so far.
	Approvals int
	// Decide is set for a signed-in operator on a pending proposal of a
	// node that takes decisions: the page shows Approve and Reject.
	Decide bool
	// CSRF is the token the forms carry.
	CSRF string
	// Decided is the action just recorded ("" for none), Event its event.
	Decided, Event string
}

// diffRow is one field of a change: its value before (the rollback) and
// after (the change).
type diffRow struct {
	Field, Before, After string
	Changed              bool
}

// proposalPage is GET /proposals/{id}: one proposal in full.
func (s *Server) proposalPage(w http.ResponseWriter, r *http.Request) {
	if s.src.Proposal == nil {
		s.fail(w, r, fmt.Errorf("web: this node cannot show proposals"))
		return
	}
	p, err := s.src.Proposal(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	v := proposalView{P: p, Diff: changeDiff(p.Rollback, p.Change), Approvals: len(p.ApprovedBy),
		ProvesNothing: p.Change.Kind == event.ChangeNotes || p.Change.Kind == event.ChangeTemplate, CSRF: csrfOf(r),
		Event: r.URL.Query().Get("event")}
	if d := r.URL.Query().Get("decided"); d == event.ProposalApprove || d == event.ProposalReject {
		v.Decided = d
	}
	if u := userOf(r); u != nil && u.Operator && s.src.Decide != nil && p.Status == tuning.StatusPending {
		v.Decide = true
	}
	s.render(w, r, http.StatusOK, "proposal", page{Title: "Proposal " + p.ID, Nav: "proposals", Data: v})
}

// changeDiff lays a change beside its rollback, field by field, in a
// fixed order: the fields either of them sets.
func changeDiff(before, after event.Change) []diffRow {
	b, a := changeFields(before), changeFields(after)
	var rows []diffRow
	seen := map[string]bool{}
	for _, f := range append(a.order, b.order...) {
		if seen[f] {
			continue
		}
		seen[f] = true
		rows = append(rows, diffRow{Field: f, Before: b.vals[f], After: a.vals[f], Changed: b.vals[f] != a.vals[f]})
	}
	return rows
}

// fields are a change's fields by name, in the order they were found.
type fields struct {
	order []string
	vals  map[string]string
}

func (f *fields) set(name, v string) {
	if v == "" {
		return
	}
	if _, ok := f.vals[name]; !ok {
		f.order = append(f.order, name)
	}
	f.vals[name] = v
}

// changeFields reads a change's typed fields as text.
func changeFields(c event.Change) fields {
	f := fields{vals: map[string]string{}}
	f.set("kind", string(c.Kind))
	f.set("setting", c.Setting)
	if n := c.Note; n != nil {
		f.set("note.op", n.Op)
		f.set("note.id", n.ID)
		f.set("note.family", n.Family)
		f.set("note.text", n.Text)
	}
	if d := c.Defaults; d != nil {
		f.set("defaults.family", cmp.Or(d.Family, "(every family)"))
		if d.Timeout != 0 {
			f.set("defaults.timeout", time.Duration(d.Timeout).String())
		}
		if d.Retries != nil {
			f.set("defaults.retries", strconv.Itoa(*d.Retries))
		}
	}
	if p := c.Policy; p != nil {
		if p.Base != 0 {
			f.set("policy.base", "version "+strconv.FormatInt(p.Base, 10))
		}
		f.set("policy.hash", p.Hash)
		f.set("policy.command", p.Command)
		f.set("policy.dir", p.Dir)
		f.set("policy.text", strings.TrimSpace(p.Text))
	}
	if t := c.Template; t != nil {
		f.set("template.family", t.Family)
		f.set("template.hash", t.Hash)
		f.set("template.plan", strings.TrimSpace(t.Plan))
	}
	if r := c.Repository; r != nil {
		f.set("repository.repo", r.Git.Repo+r.Git.URL)
		f.set("repository.base", r.Git.Base)
		f.set("repository.push", r.Git.Push)
		for _, file := range r.Files {
			f.set("repository.file "+file.Path, strings.TrimSpace(file.Content))
		}
	}
	return f
}

// Decide is a proposal's approval or rejection for a token in hand
// (ui.UI.DecideProposal): the HTTP status and the JSON answer.
type Decide = func(ctx context.Context, token, id, action, reason string) (int, any)

// decideProposal approves or rejects a proposal from its page's forms
// through Source.Decide, for the signed-in operator; the form is checked
// as the gate inbox's is (checkPost: CSRF token and Origin).
func (s *Server) decideProposal(w http.ResponseWriter, r *http.Request) {
	if err := checkPost(r); err != nil {
		s.refuse(w, r, err)
		return
	}
	u := userOf(r)
	if u == nil || s.src.Decide == nil {
		s.render(w, r, http.StatusUnauthorized, "error", page{Title: "Sign in", Data: errorView{Status: http.StatusUnauthorized,
			Error: "approving or rejecting a proposal needs a signed-in operator", Hint: "sign in with an operator's token: agentctl keys api-token"}})
		return
	}
	id, action := r.PathValue("id"), r.PostForm.Get("action")
	status, v := s.src.Decide(r.Context(), u.token, id, action, r.PostForm.Get("reason"))
	b, _ := json.Marshal(v)
	if status != http.StatusAccepted {
		var e struct{ Error, Hint string }
		_ = json.Unmarshal(b, &e)
		s.render(w, r, status, "error", page{Title: "Not recorded", Data: errorView{Status: status, Error: e.Error, Hint: e.Hint}})
		return
	}
	var ok struct{ Event, Proposal string }
	_ = json.Unmarshal(b, &ok)
	q := url.Values{"decided": {action}, "event": {ok.Event}}
	http.Redirect(w, r, "/proposals/"+url.PathEscape(cmp.Or(ok.Proposal, id))+"?"+q.Encode(), http.StatusSeeOther)
}
