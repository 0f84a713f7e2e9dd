package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/agentic-dev/agentic/internal/apiwire"
)

// runsView is the runs page's data.
type runsView struct {
	Runs     []runRow
	Statuses []string
	Status   string
	Goal     string
	Since    string
	Until    string
	Next     string
	First    string
}

type runRow struct {
	apiwire.RunSummary
	Done int
}

func (s *Server) runsPage(w http.ResponseWriter, r *http.Request) {
	req, err := s.runsRequest(r.URL.Query())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	rows, lp, err := s.listRuns(r.Context(), req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	q := r.URL.Query()
	v := runsView{Runs: rows, Statuses: apiwire.RunStatuses, Status: req.Status, Goal: req.Goal, Since: q.Get("since"), Until: q.Get("until")}
	if !lp.End {
		nq := url.Values{}
		for _, k := range []string{"status", "goal", "since", "until"} {
			if q.Get(k) != "" {
				nq.Set(k, q.Get(k))
			}
		}
		v.First = "/?" + nq.Encode()
		nq.Set("cursor", lp.Next)
		v.Next = "/?" + nq.Encode()
	} else if q.Get("cursor") != "" {
		q.Del("cursor")
		v.First = "/?" + q.Encode()
	}
	live := "/runs-live?" + r.URL.RawQuery
	s.render(w, r, http.StatusOK, "runs", page{Title: "Runs", Nav: "runs", Live: live, Data: v})
}

// runsRequest reads the runs page's filters, as GET /api/runs does.
func (s *Server) runsRequest(q url.Values) (apiwire.RunsListRequest, error) {
	req := apiwire.RunsListRequest{Status: q.Get("status"), Goal: q.Get("goal"), Cursor: q.Get("cursor"), Limit: 50}
	var err error
	if v := q.Get("since"); v != "" {
		if req.Since, err = apiwire.ParseTime(v, s.now()); err != nil {
			return req, apiwire.WithHint(fmt.Errorf("since: %w", err), "since=2026-03-01T12:00:00Z or since=2h")
		}
	}
	if v := q.Get("until"); v != "" {
		if req.Until, err = apiwire.ParseTime(v, s.now()); err != nil {
			return req, apiwire.WithHint(fmt.Errorf("until: %w", err), "until=2026-03-01T12:00:00Z or until=2h")
		}
	}
	return req, req.Validate()
}

func (s *Server) listRuns(ctx context.Context, req apiwire.RunsListRequest) ([]runRow, apiwire.Page[json.RawMessage], error) {
	page, err := s.src.Runs.List(ctx, req)
	if err != nil {
		return nil, page, err
	}
	rows := make([]runRow, 0, len(page.Items))
	for _, raw := range page.Items {
		var sum apiwire.RunSummary
		if err := json.Unmarshal(raw, &sum); err != nil {
			return nil, page, fmt.Errorf("web: a run summary: %w", err)
		}
		rows = append(rows, runRow{RunSummary: sum, Done: apiwire.Done(sum)})
	}
	return rows, page, nil
}

// gatesView is the gate inbox's data.
type gatesView struct {
	Gates []apiwire.Gate
	Next  string
	Known bool
	// CanAnswer shows the answer forms (a signed-in operator); SignedIn
	// and Viewer say why not.
	CanAnswer, SignedIn, Viewer bool
	CSRF                        string
	// Recorded is the answer just recorded, if any.
	Recorded *recorded
	// Decided are the newest recorded answers, newest first.
	Decided []decision
	// Tools are the tool steps' definitions, by gate subject
	// (toolgate.go).
	Tools map[string]*toolGate
}

type recorded struct {
	Event, Action, Run, Step string
}

func (s *Server) gatesPage(w http.ResponseWriter, r *http.Request) {
	v := gatesView{Known: s.src.Gates != nil, CSRF: csrfOf(r)}
	if u := userOf(r); u != nil {
		v.SignedIn, v.Viewer = true, !u.Operator
		v.CanAnswer = u.Operator && s.src.Answer != nil
	}
	if q := r.URL.Query(); q.Get("recorded") != "" {
		v.Recorded = &recorded{Event: q.Get("recorded"), Action: q.Get("action"), Run: q.Get("run"), Step: q.Get("step")}
	}
	if s.src.Gates != nil {
		q := r.URL.Query()
		page, err := s.src.Gates(r.Context(), apiwire.GatesRequest{Run: q.Get("run"), Cursor: q.Get("cursor")})
		if err != nil {
			s.fail(w, r, err)
			return
		}
		for _, raw := range page.Items {
			var g apiwire.Gate
			if err := json.Unmarshal(raw, &g); err != nil {
				s.fail(w, r, fmt.Errorf("web: a gate: %w", err))
				return
			}
			v.Gates = append(v.Gates, g)
		}
		if !page.End {
			v.Next = "/gates?" + url.Values{"cursor": {page.Next}}.Encode()
		}
		v.Tools = s.toolGates(r.Context(), v.Gates)
	}
	lines, _, _, err := s.readAudit(r.Context(), auditFilter{Types: decisionTypes, Run: r.URL.Query().Get("run")})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	for _, l := range lines {
		if d, ok := decisionOf(l); ok && len(v.Decided) < maxDecided {
			v.Decided = append(v.Decided, d)
		}
	}
	s.render(w, r, http.StatusOK, "gates", page{Title: "Gates", Nav: "gates", Data: v})
}

// nodesView is the nodes page's data.
type nodesView struct {
	Nodes  []apiwire.NodeSummary
	Alarms []apiwire.Alarm
	Leader string
	Epoch  uint64
	Node   string
	Known  bool
}

func (s *Server) nodesPage(w http.ResponseWriter, r *http.Request) {
	v := nodesView{Known: s.src.Nodes != nil}
	ctx := r.Context()
	if s.src.Nodes != nil {
		cursor := ""
		for range 100 {
			page, err := s.src.Nodes(ctx, apiwire.NodesListRequest{Cursor: cursor})
			if err != nil {
				s.fail(w, r, err)
				return
			}
			v.Leader, v.Epoch, v.Node = page.Leader, page.Epoch, page.Node
			for _, raw := range page.Items {
				var n apiwire.NodeSummary
				if err := json.Unmarshal(raw, &n); err != nil {
					s.fail(w, r, fmt.Errorf("web: a node: %w", err))
					return
				}
				v.Nodes = append(v.Nodes, n)
			}
			if page.End || page.Next == "" {
				break
			}
			cursor = page.Next
		}
	}
	if s.src.Alarms != nil {
		page, err := s.src.Alarms(ctx, apiwire.AlarmsListRequest{})
		if err != nil {
			s.fail(w, r, err)
			return
		}
		for _, raw := range page.Items {
			var a apiwire.Alarm
			if json.Unmarshal(raw, &a) == nil {
				v.Alarms = append(v.Alarms, a)
			}
		}
	}
	s.render(w, r, http.StatusOK, "nodes", page{Title: "Nodes", Nav: "nodes", Data: v})
}

// auditFilter is what /audit shows: events of some types, of one run, of
// one node, at or before a seq.
type auditFilter struct {
	Types  []string
	Run    string
	Node   string
	Before uint64
}

func readAuditFilter(q url.Values) (auditFilter, error) {
	f := auditFilter{Run: strings.TrimSpace(q.Get("run")), Node: strings.TrimSpace(q.Get("node"))}
	for _, t := range strings.Split(q.Get("type"), ",") {
		if t = strings.TrimSpace(t); t != "" && !slices.Contains(f.Types, t) {
			f.Types = append(f.Types, t)
		}
	}
	if b := q.Get("before"); b != "" {
		n, err := strconv.ParseUint(b, 10, 64)
		if err != nil {
			return f, apiwire.WithHint(fmt.Errorf("%w: before %q is not a seq", apiwire.ErrBadRequest, b), "before=1234: the events before seq 1234")
		}
		f.Before = n
	}
	return f, nil
}

func (f auditFilter) query() url.Values {
	q := url.Values{}
	if len(f.Types) > 0 {
		q.Set("type", strings.Join(f.Types, ","))
	}
	if f.Run != "" {
		q.Set("run", f.Run)
	}
	if f.Node != "" {
		q.Set("node", f.Node)
	}
	return q
}

// Sizes of /audit: it shows up to auditShow events, newest first, found
// in the auditWindow entries before its cursor.
const (
	auditShow   = 200
	auditWindow = 5000
)

// auditView is /audit's data.
type auditView struct {
	Lines  []apiwire.AuditLine
	Filter auditFilter
	Type   string
	Older  string
	JSON   string
	Head   uint64
	After  uint64
}

// readAudit returns the newest events the filter selects in the window
// before f.Before (or the head), newest first, and where the window began.
func (s *Server) readAudit(ctx context.Context, f auditFilter) ([]apiwire.AuditLine, uint64, uint64, error) {
	head0, err := s.src.Audit(ctx, apiwire.AuditRequest{Limit: 1})
	if err != nil {
		return nil, 0, 0, err
	}
	head := head0.Head
	until := head
	if f.Before > 0 && f.Before-1 < head {
		until = f.Before - 1
	}
	from := uint64(0)
	if until > auditWindow {
		from = until - auditWindow
	}
	req := apiwire.AuditRequest{After: from, Run: f.Run, Types: f.Types}
	var lines []apiwire.AuditLine
	for range 1000 {
		page, err := s.src.Audit(ctx, req)
		if err != nil {
			return nil, 0, 0, err
		}
		done := page.End
		for _, raw := range page.Items {
			var l apiwire.AuditLine
			if err := json.Unmarshal(raw, &l); err != nil {
				return nil, 0, 0, fmt.Errorf("web: an audit line: %w", err)
			}
			if l.Seq > until {
				done = true
				break
			}
			if f.Node == "" || l.Node == f.Node {
				l.JWS = ""
				lines = append(lines, l)
			}
		}
		if done {
			break
		}
		req.Cursor = page.Next
	}
	if len(lines) > auditShow {
		lines = lines[len(lines)-auditShow:]
		from = lines[0].Seq - 1
	}
	slices.Reverse(lines)
	return lines, from, head, nil
}

func (s *Server) auditPage(w http.ResponseWriter, r *http.Request) {
	f, err := readAuditFilter(r.URL.Query())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	lines, from, head, err := s.readAudit(r.Context(), f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	v := auditView{Lines: lines, Filter: f, Type: strings.Join(f.Types, ","), Head: head}
	q := f.query()
	if from > 0 {
		oq := f.query()
		oq.Set("before", strconv.FormatUint(from+1, 10))
		v.Older = "/audit?" + oq.Encode()
	}
	jq := f.query()
	if f.Before > 0 {
		jq.Set("before", strconv.FormatUint(f.Before, 10))
	}
	v.JSON = "/audit.json?" + jq.Encode()
	live := ""
	if f.Before == 0 {
		v.After = head
		if len(lines) > 0 {
			v.After = max(v.After, lines[0].Seq)
		}
		q.Set("after", strconv.FormatUint(v.After, 10))
		live = "/audit/live?" + q.Encode()
	}
	s.render(w, r, http.StatusOK, "audit", page{Title: "Audit", Nav: "audit", Live: live, Data: v})
}

func (s *Server) auditJSON(w http.ResponseWriter, r *http.Request) {
	f, err := readAuditFilter(r.URL.Query())
	if err == nil {
		var lines []apiwire.AuditLine
		if lines, _, _, err = s.readAudit(r.Context(), f); err == nil {
			if lines == nil {
				lines = []apiwire.AuditLine{}
			}
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Disposition", `attachment; filename="audit.json"`)
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			_ = enc.Encode(lines)
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error(), "hint": apiwire.HintOf(err)})
}

// eventView is /events/{seq}'s data.
type eventView struct {
	Line       apiwire.AuditLine
	Prev, Next uint64
	Data       string
	Raw        string
}

func (s *Server) eventPage(w http.ResponseWriter, r *http.Request) {
	seq, err := strconv.ParseUint(r.PathValue("seq"), 10, 64)
	if err != nil || seq == 0 {
		s.fail(w, r, apiwire.WithHint(fmt.Errorf("%w: %q is not a ledger seq", apiwire.ErrBadRequest, r.PathValue("seq")), "an event's seq is a whole number from 1"))
		return
	}
	head, err := s.src.Audit(r.Context(), apiwire.AuditRequest{Limit: 1})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if seq > head.Head {
		s.fail(w, r, apiwire.WithHint(fmt.Errorf("%w: the ledger has no event %d (head %d)", apiwire.ErrNotFound, seq, head.Head), "the audit page lists the events there are"))
		return
	}
	ap, err := s.src.Audit(r.Context(), apiwire.AuditRequest{After: seq - 1, Limit: 1})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var l apiwire.AuditLine
	if len(ap.Items) == 0 || json.Unmarshal(ap.Items[0], &l) != nil || l.Seq != seq {
		s.fail(w, r, apiwire.WithHint(fmt.Errorf("%w: the ledger has no event %d (head %d)", apiwire.ErrNotFound, seq, ap.Head), "the audit page lists the events there are"))
		return
	}
	v := eventView{Line: l, Data: indent(l.Data), Prev: seq - 1, Next: seq + 1}
	raw, _ := json.MarshalIndent(l, "", "  ")
	v.Raw = string(raw)
	s.render(w, r, http.StatusOK, "event", page{Title: fmt.Sprintf("Event %d", seq), Nav: "audit", Data: v})
}

func indent(b json.RawMessage) string {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return string(b)
	}
	out, _ := json.MarshalIndent(v, "", "  ")
	return string(out)
}
