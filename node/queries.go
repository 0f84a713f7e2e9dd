package node

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/natsauth"
	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/roles/memory"
)

// startAPI registers the query methods this node can answer and starts
// serving them.
func (n *Node) startAPI() error {
	s := api.NewServer(n.conn.NC, n.cfg.Name, n.log)
	// Every answer is signed as this node (node/api, "Signed answers");
	// a node whose roles do not answer the cluster's queries answers on
	// its own subject only, as NATS lets it.
	s.Sign(n.identity)
	if !natsauth.Answers(n.cfg.Roles) {
		s.SelfOnly()
	}
	api.HandleTyped(s, api.MethodNodeInfo, func(ctx context.Context, _ struct{}) (api.NodeInfo, error) {
		return n.Info(), nil
	})
	// Every node answers node.info on the broadcast subject too: how
	// agentctl node ls learns each node's readiness.
	s.Broadcast(api.MethodNodeInfo)
	api.HandleTyped(s, api.MethodNodeBackup, n.backupHandler)
	// A ledger node whose ledger is damaged answers its ledger's queries
	// with the damage and the remedy (guard), as it does from the moment
	// Pebble reports damage while it runs.
	if n.runs != nil || n.integrity.get() != nil {
		rr := n.runReads()
		api.HandleTyped(s, api.MethodRunsList, guard(n, rr.List))
		api.HandleTyped(s, api.MethodRunsGet, guard(n, rr.Get))
		api.HandleTyped(s, api.MethodRunsSteps, guard(n, rr.Steps))
		api.HandleTyped(s, api.MethodAudit, guard(n, n.audit))
		api.HandleTyped(s, api.MethodLedgerExport, guard(n, n.export))
		api.HandleTyped(s, api.MethodLedgerMessage, guard(n, n.message))
		api.HandleTyped(s, api.MethodLedgerOutcome, guard(n, n.outcome))
		n.handleLedgerHead(s)
		api.HandleTyped(s, api.MethodLedgerVerify, guard(n, func(ctx context.Context, _ struct{}) (api.VerifyResult, error) {
			return n.verify()
		}))
		api.HandleTyped(s, api.MethodNodesList, guard(n, n.nodesList))
		api.HandleTyped(s, api.MethodAlarmsList, guard(n, n.alarmsList))
		api.HandleTyped(s, api.MethodRevocationsList, guard(n, n.revocationsList))
		api.HandleTyped(s, api.MethodCredentialsList, guard(n, n.credentialsList))
		api.HandleTyped(s, api.MethodPolicyShow, guard(n, n.policies.Show))
		api.HandleTyped(s, api.MethodPolicyList, guard(n, n.policies.List))
		api.HandleTyped(s, api.MethodPluginsList, guard(n, n.plugins.List))
		api.HandleTyped(s, api.MethodPluginsShow, guard(n, n.plugins.Show))
		api.HandleTyped(s, api.MethodGatesList, guard(n, n.runs.GatesPage))
		if n.improve != nil {
			api.HandleTyped(s, api.MethodProposalsList, guard(n, n.proposalsList))
			api.HandleTyped(s, api.MethodProposalsShow, guard(n, n.proposalsShow))
			api.HandleTyped(s, api.MethodImproveSettings, guard(n, n.improveSettings))
		}
		n.startArtifactAPI(s) // artifactsquery.go
	}
	if n.mem == nil && n.has(event.RoleMemory) && n.integrity.get() != nil {
		api.HandleTyped(s, api.MethodMemoryGet, guard(n, func(context.Context, api.MemoryGetRequest) (api.Fact, error) { return api.Fact{}, nil }))
		api.HandleTyped(s, api.MethodMemoryList, guard(n, func(context.Context, api.MemoryListRequest) ([]api.Fact, error) { return nil, nil }))
		api.HandleTyped(s, api.MethodMemoryCommands, guard(n, func(context.Context, api.CommandsRequest) (api.CommandStats, error) { return api.CommandStats{}, nil }))
		api.HandleTyped(s, api.MethodMemoryFacts, guard(n, func(context.Context, api.MemoryFactsRequest) (api.Page[json.RawMessage], error) {
			return api.Page[json.RawMessage]{}, nil
		}))
		api.HandleTyped(s, api.MethodMemorySearch, guard(n, func(context.Context, api.MemorySearchRequest) (api.MemorySearchPage[json.RawMessage], error) {
			return api.MemorySearchPage[json.RawMessage]{}, nil
		}))
	}
	if n.mem != nil {
		api.HandleTyped(s, api.MethodMemoryGet, guard(n, func(ctx context.Context, req api.MemoryGetRequest) (api.Fact, error) {
			f, err := n.mem.Get(req.Scope, req.Key, time.Now())
			if errors.Is(err, memory.ErrNotFound) {
				return api.Fact{}, fmt.Errorf("%w: %w", api.ErrNotFound, err)
			}
			if errors.Is(err, memory.ErrBadScope) {
				return api.Fact{}, fmt.Errorf("%w: %w", api.ErrBadRequest, err)
			}
			return fact(f), err
		}))
		api.HandleTyped(s, api.MethodMemoryList, guard(n, func(ctx context.Context, req api.MemoryListRequest) ([]api.Fact, error) {
			out := []api.Fact{}
			for _, f := range n.mem.List(req.Scope, time.Now()) {
				out = append(out, fact(f))
			}
			return out, nil
		}))
		api.HandleTyped(s, api.MethodMemoryCommands, guard(n, n.memoryCommands))
		n.startMemoryAPI(s) // memoryquery.go
	}
	for _, m := range s.Methods() {
		if !natsauth.Classified(m) {
			return fmt.Errorf("node: query method %q is neither a read nor an admin method (bus/natsauth): NATS would refuse it to everyone", m)
		}
	}
	if err := s.Start(); err != nil {
		return fmt.Errorf("node: %w", err)
	}
	n.apiSrv = s
	return nil
}

// verifyCache runs one ledger verification at a time and reuses the last
// result for up to verifyReuse while the head has not moved: verifying
// re-checks every signature, and must not be a way to keep a node's CPUs
// busy.
type verifyCache struct {
	mu   sync.Mutex
	head uint64
	at   time.Time
	res  *api.VerifyResult
}

const verifyReuse = time.Minute

func (n *Node) verify() (api.VerifyResult, error) {
	c := &n.verifyCache
	c.mu.Lock()
	defer c.mu.Unlock()
	head, _ := n.store.Head()
	if c.res != nil && c.head == head && time.Since(c.at) < verifyReuse {
		return *c.res, nil
	}
	rep, err := n.store.Verify(n.verifier)
	if err != nil {
		return api.VerifyResult{}, fmt.Errorf("node: verify: %w", err)
	}
	res := api.VerifyResult{OK: rep.OK, Events: rep.Events, Head: hex.EncodeToString(rep.Head[:]), FirstBadSeq: rep.FirstBadSeq, Error: rep.Err, Node: n.cfg.Name}
	c.head, c.at, c.res = head, time.Now(), &res
	return res, nil
}

func fact(f memory.Fact) api.Fact {
	out := api.Fact{Scope: f.Scope, Key: f.Key, Value: f.Value, UpdatedAt: f.UpdatedAt,
		Tags: f.Tags, Quarantined: f.Quarantined, Reason: f.Reason, Released: f.Released, Note: f.Note}
	if !f.ExpiresAt.IsZero() {
		t := f.ExpiresAt
		out.ExpiresAt = &t
	}
	if f.Refs.Event != "" {
		r := f.Refs
		out.Refs = &api.Refs{Event: r.Event, Seq: r.Seq, Type: string(r.Type), Node: r.Node, Run: r.Run, Step: r.Step, Attempt: r.Attempt}
	}
	return out
}

// Paging of the ledger listings. Every page is cut by count and, through
// api.Pager, by its encoded size under the connection's max payload; a
// record too large for a page comes without its signed message, which the
// client fetches with ledger.message.
const (
	maxExportPage = 5000
	maxAuditPage  = 1000
	// maxAuditTypes bounds AuditRequest.Types.
	maxAuditTypes = 64
	// maxAuditWait bounds one long-poll.
	maxAuditWait = 30 * time.Second
	// maxCursorLead is how far beyond this node's head a long-poll's
	// cursor may be: a follower answered by several ledger nodes in turn
	// can be a little ahead of a lagging one, which then waits to catch up.
	maxCursorLead = 10_000
)

// export returns one page of the ledger in its JSONL export format. An
// export ends at the head seen by its first page: the cursor is
// "<last seq>:<that head>".
func (n *Node) export(ctx context.Context, req api.ExportRequest) (api.LedgerPage[json.RawMessage], error) {
	if req.Limit <= 0 || req.Limit > maxExportPage {
		req.Limit = maxExportPage
	}
	head, _ := n.store.Head()
	after, until := req.After, head
	if req.Cursor != "" {
		a, u, ok := strings.Cut(req.Cursor, ":")
		var err1, err2 error
		after, err1 = strconv.ParseUint(a, 10, 64)
		until, err2 = strconv.ParseUint(u, 10, 64)
		if !ok || err1 != nil || err2 != nil || after > until {
			return api.LedgerPage[json.RawMessage]{}, badCursor(req.Cursor)
		}
	}
	if err := n.checkCursor(max(after, until), head); err != nil {
		return api.LedgerPage[json.RawMessage]{}, err
	}
	p := api.NewPager(req.Limit, api.MaxPayload(ctx))
	last, end := after, true
	if after < until {
		for l, err := range n.store.ExportLines(after + 1) {
			if err != nil {
				return api.LedgerPage[json.RawMessage]{}, fmt.Errorf("node: export: %w", err)
			}
			if l.Seq > until {
				break
			}
			added, err := addExportLine(p, l)
			if err != nil {
				return api.LedgerPage[json.RawMessage]{}, err
			}
			if !added {
				end = false
				break
			}
			last = l.Seq
		}
	}
	return api.LedgerPage[json.RawMessage]{Page: p.Page(fmt.Sprintf("%d:%d", last, until), end), Head: head}, nil
}

// addExportLine adds l to the page, without its "jws" if the whole line
// cannot fit in any page.
func addExportLine(p *api.Pager, l ledger.ExportLine) (bool, error) {
	added, err := p.Add(api.ExportLine{Seq: l.Seq, Line: l.Line})
	if !errors.Is(err, api.ErrItemTooLarge) || l.JWSSize == 0 {
		return added, tooLarge(l.Seq, err)
	}
	line, at, err := l.WithoutJWS()
	if err != nil {
		return false, fmt.Errorf("node: export: %w", err)
	}
	added, err = p.Add(api.ExportLine{Seq: l.Seq, Line: line, JWSSize: l.JWSSize, JWSAt: at, StreamSeq: l.StreamSeq})
	return added, tooLarge(l.Seq, err)
}

// tooLarge explains a record that does not fit in a page even without its
// signed message (its payload alone: a message that fitted the stream
// always fits, unless the reader's max payload is smaller).
func tooLarge(seq uint64, err error) error {
	if errors.Is(err, api.ErrItemTooLarge) {
		return api.WithHint(fmt.Errorf("%w: record %d: %w", api.ErrTooLarge, seq, err),
			"the record's payload alone is larger than this connection's max payload; read it with a client on a NATS server with a larger max_payload")
	}
	return err
}

func badCursor(c string) error {
	return api.WithHint(fmt.Errorf("%w: cursor %q is not one this listing gave", api.ErrBadRequest, c),
		"ask with the next cursor of the previous page, or without one to start again")
}

// checkCursor refuses a position beyond head: a cursor is never wrapped or
// taken to mean something else.
func (n *Node) checkCursor(after, head uint64) error {
	if after <= head {
		return nil
	}
	return api.WithHint(fmt.Errorf("%w: cursor at record %d is beyond the ledger head %d of node %s", api.ErrBadRequest, after, head, n.cfg.Name),
		"ask without a cursor to start again (a cursor from another ledger node may run ahead of this one)")
}

// message returns the signed message stored at a stream seq, in chunks:
// the cursor is the byte offset of the next one.
func (n *Node) message(ctx context.Context, req api.MessageRequest) (api.Page[json.RawMessage], error) {
	raw, err := n.store.Message(req.StreamSeq)
	if errors.Is(err, ledger.ErrNotFound) {
		return api.Page[json.RawMessage]{}, api.WithHint(fmt.Errorf("%w: %w", api.ErrNotFound, err),
			"stream seqs come from the stream_seq of an audit line or export record")
	} else if err != nil {
		return api.Page[json.RawMessage]{}, fmt.Errorf("node: %w", err)
	}
	off := 0
	if req.Cursor != "" {
		if off, err = strconv.Atoi(req.Cursor); err != nil || off < 0 || off > len(raw) {
			return api.Page[json.RawMessage]{}, badCursor(req.Cursor)
		}
	}
	// Chunks of a quarter of the max payload: base64 makes a third of it,
	// so a page holds two.
	limit := api.MaxPayload(ctx)
	chunk := max(1, int(limit/4))
	p := api.NewPager(len(raw)/chunk+1, limit)
	for off < len(raw) {
		b := raw[off:min(off+chunk, len(raw))]
		added, err := p.Add(b)
		if err != nil || !added {
			if err != nil && p.Len() == 0 {
				return api.Page[json.RawMessage]{}, fmt.Errorf("node: message %d: %w", req.StreamSeq, err)
			}
			break
		}
		off += len(b)
	}
	return p.Page(strconv.Itoa(off), off == len(raw)), nil
}

// auditExamine is how many entries a filtered audit page passes over at
// most before it answers (with what it found, and Next past them); tests
// lower it.
var auditExamine = func() *atomic.Int64 {
	var n atomic.Int64
	n.Store(20000)
	return &n
}()

// audit pages through the ledger, long-polling when asked to.
func (n *Node) audit(ctx context.Context, req api.AuditRequest) (api.LedgerPage[json.RawMessage], error) {
	if req.Limit <= 0 || req.Limit > maxAuditPage {
		req.Limit = maxAuditPage
	}
	after := req.After
	if req.Cursor != "" {
		var err error
		if after, err = strconv.ParseUint(req.Cursor, 10, 64); err != nil {
			return api.LedgerPage[json.RawMessage]{}, badCursor(req.Cursor)
		}
	}
	if req.Run != "" {
		r, err := n.runs.Run(req.Run)
		if err != nil {
			return api.LedgerPage[json.RawMessage]{}, runError(req.Run, err)
		}
		req.Run = r.ID
	}
	wait := min(req.Wait, maxAuditWait)
	if head, _ := n.store.Head(); after > head && (wait <= 0 || after-head > maxCursorLead) {
		return api.LedgerPage[json.RawMessage]{}, n.checkCursor(after, head)
	}
	if len(req.Types) > maxAuditTypes {
		return api.LedgerPage[json.RawMessage]{}, fmt.Errorf("%w: %d types asked for; at most %d", api.ErrBadRequest, len(req.Types), maxAuditTypes)
	}
	deadline := time.Now().Add(wait)
	for {
		changed := n.follower.Changed()
		head, _ := n.store.Head()
		page := api.LedgerPage[json.RawMessage]{Page: api.Page[json.RawMessage]{Items: []json.RawMessage{}, Next: strconv.FormatUint(after, 10), End: true}, Head: head}
		if after <= head {
			var err error
			if page, err = n.auditPage(ctx, req, after); err != nil || len(page.Items) > 0 || !page.End {
				// Entries, an error, or a page that examined its budget
				// of entries filtered out: the client goes on from Next.
				return page, err
			}
			// Nothing selected up to the end: a wait goes on from where
			// the scan stopped, not from the cursor again.
			if next, err := strconv.ParseUint(page.Next, 10, 64); err == nil && next > after {
				after = next
			}
		}
		if wait <= 0 || !time.Now().Before(deadline) {
			return page, nil
		}
		t := time.NewTimer(time.Until(deadline))
		select {
		case <-changed:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return page, nil
		}
		t.Stop()
	}
}

// auditPage reads one page of entries after seq after (by the run index
// with req.Run, from the time index's position with req.Since). Next is
// the last entry's seq, or, at the end, the last position examined.
func (n *Node) auditPage(ctx context.Context, req api.AuditRequest, after uint64) (api.LedgerPage[json.RawMessage], error) {
	fail := func(err error) (api.LedgerPage[json.RawMessage], error) {
		return api.LedgerPage[json.RawMessage]{}, fmt.Errorf("node: audit: %w", err)
	}
	// The head is read before the scan's snapshot, which holds at least it.
	head, _ := n.store.Head()
	from := after + 1
	if !req.Since.IsZero() {
		at, err := n.store.SeqAtTime(req.Since)
		if err != nil {
			return fail(err)
		}
		from = max(from, at)
	}
	recs := n.store.Scan(from)
	if req.Run != "" {
		recs = n.store.ScanRun(req.Run, from)
	}
	var types map[event.Type]bool
	if len(req.Types) > 0 {
		types = make(map[event.Type]bool, len(req.Types))
		for _, t := range req.Types {
			types[event.Type(t)] = true
		}
	}
	p := api.NewPager(req.Limit, api.MaxPayload(ctx))
	last, end := after, true
	examined, budget := int64(0), auditExamine.Load()
	for rec, err := range recs {
		if err != nil {
			return fail(err)
		}
		if types != nil && !types[rec.Event.Type] {
			// Filtered out: the cursor moves past it, and a page stops
			// after auditExamine of them so that a filter matching
			// nothing in a long history still answers in bounded time.
			last = rec.Event.Seq
			if examined++; examined >= budget {
				end = false
				break
			}
			continue
		}
		added, err := addAuditLine(p, rec)
		if err != nil {
			return api.LedgerPage[json.RawMessage]{}, err
		}
		if !added {
			end = false
			break
		}
		last = rec.Event.Seq
	}
	if end {
		// Every record up to the snapshot's end was examined.
		last = max(last, head)
	}
	// Records committed after the head was read may be in the page: the
	// head answered is at least the last one seen.
	head = max(head, last)
	return api.LedgerPage[json.RawMessage]{Page: p.Continued(strconv.FormatUint(last, 10), end), Head: head}, nil
}

// addAuditLine adds rec's line to the page, without its JWS if the whole
// line cannot fit in any page.
func addAuditLine(p *api.Pager, rec ledger.Record) (bool, error) {
	l := auditLine(rec)
	added, err := p.Add(l)
	if !errors.Is(err, api.ErrItemTooLarge) || l.JWS == "" {
		return added, tooLarge(l.Seq, err)
	}
	l.JWS, l.JWSSize = "", len(rec.Raw)
	added, err = p.Add(l)
	return added, tooLarge(l.Seq, err)
}

func auditLine(rec ledger.Record) api.AuditLine {
	ev := rec.Event
	return api.AuditLine{Seq: ev.Seq, Subject: ev.Subject, Type: string(ev.Type), Run: ev.Run, Node: ev.Node, Time: ev.Time, Data: ev.Data, JWS: string(rec.Raw),
		StreamSeq: ev.StreamSeq, StreamTime: rec.StreamTime()}
}

// apiClient is a query client over the node's connection that takes only
// answers signed by a node that may give them (node/api, "Signed
// answers"): the policy an executor enforces, the statistics a planner's
// prompt carries and a peer's ledger come from the cluster, not from
// whoever answers first. Revocations are the ledger's when the node has
// one; a node without one asks the query group's (askedRevocations).
func (n *Node) apiClient(timeout time.Duration) *api.Client {
	t := &api.Trust{Verifier: n.verifier, LearnRoots: true}
	if n.store != nil {
		t.Revoked = n.store.CheckCredential
	} else {
		t.Revoked = n.askedRevocations().Check
	}
	return api.NewClient(n.conn.NC, timeout).WithTrust(t)
}

// revocationsMaxAge is how long a node without a ledger judges answers by
// the revocations it asked: the rare queries such a node makes (the
// policy its executor enforces, plugins, a peer's ledger to start from)
// ask again at most this often.
const revocationsMaxAge = 5 * time.Second

// askedRevocations is the node's one judge of answers by the query
// group's revocations, for a node that keeps no ledger: a check that
// cannot be made refuses the answer (api.JudgeRevoked).
func (n *Node) askedRevocations() *api.AskedRevocations {
	n.revoked.once.Do(func() {
		n.revoked.ask = &api.AskedRevocations{Client: api.NewClient(n.conn.NC, 0),
			Trust: &api.Trust{Verifier: n.verifier, LearnRoots: true}, MaxAge: revocationsMaxAge}
	})
	return n.revoked.ask
}
