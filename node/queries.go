package node

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/roles/memory"
)

// startAPI registers the query methods this node can answer and starts
// serving them.
func (n *Node) startAPI() error {
	s := api.NewServer(n.conn.NC, n.cfg.Name, n.log)
	api.HandleTyped(s, api.MethodNodeInfo, func(ctx context.Context, _ struct{}) (api.NodeInfo, error) {
		return n.Info(), nil
	})
	if n.runs != nil {
		rr := n.runReads()
		api.HandleTyped(s, api.MethodRunsList, rr.List)
		api.HandleTyped(s, api.MethodRunsGet, rr.Get)
		api.HandleTyped(s, api.MethodRunsSteps, rr.Steps)
		api.HandleTyped(s, api.MethodAudit, n.audit)
		api.HandleTyped(s, api.MethodLedgerExport, n.export)
		api.HandleTyped(s, api.MethodLedgerVerify, func(ctx context.Context, _ struct{}) (api.VerifyResult, error) {
			return n.verify()
		})
	}
	if n.mem != nil {
		api.HandleTyped(s, api.MethodMemoryGet, func(ctx context.Context, req api.MemoryGetRequest) (api.Fact, error) {
			f, err := n.mem.Get(req.Scope, req.Key, time.Now())
			if errors.Is(err, memory.ErrNotFound) {
				return api.Fact{}, fmt.Errorf("%w: %w", api.ErrNotFound, err)
			}
			return fact(f), err
		})
		api.HandleTyped(s, api.MethodMemoryList, func(ctx context.Context, req api.MemoryListRequest) ([]api.Fact, error) {
			out := []api.Fact{}
			for _, f := range n.mem.List(req.Scope, time.Now()) {
				out = append(out, fact(f))
			}
			return out, nil
		})
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
	out := api.Fact{Scope: f.Scope, Key: f.Key, Value: f.Value, UpdatedAt: f.UpdatedAt}
	if !f.ExpiresAt.IsZero() {
		t := f.ExpiresAt
		out.ExpiresAt = &t
	}
	return out
}

const maxExportPage = 5000

// maxReplyBytes keeps a page inside NATS's 1 MiB max payload, with room for
// the reply's envelope (a single larger record is still sent alone).
const maxReplyBytes = 768 << 10

// export returns one page of the ledger in its JSONL export format.
func (n *Node) export(ctx context.Context, req api.ExportRequest) (api.ExportPage, error) {
	if req.Limit <= 0 || req.Limit > maxExportPage {
		req.Limit = maxExportPage
	}
	head, _ := n.store.Head()
	var b strings.Builder
	last, err := n.store.ExportRange(&b, req.After+1, req.Limit, maxReplyBytes)
	if err != nil {
		return api.ExportPage{}, fmt.Errorf("node: export: %w", err)
	}
	return api.ExportPage{JSONL: b.String(), Last: last, Head: head}, nil
}

const maxAuditPage = 1000

// audit pages through the ledger, long-polling when asked to.
func (n *Node) audit(ctx context.Context, req api.AuditRequest) (api.AuditPage, error) {
	if req.Limit <= 0 || req.Limit > maxAuditPage {
		req.Limit = maxAuditPage
	}
	if req.Run != "" {
		r, err := n.runs.Run(req.Run)
		if err != nil {
			return api.AuditPage{}, runError(req.Run, err)
		}
		req.Run = r.ID
	}
	wait := min(req.Wait, 30*time.Second)
	deadline := time.Now().Add(wait)
	for {
		changed := n.follower.Changed()
		page, err := n.auditPage(req)
		if err != nil || len(page.Lines) > 0 || wait <= 0 || !time.Now().Before(deadline) {
			return page, err
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

func (n *Node) auditPage(req api.AuditRequest) (api.AuditPage, error) {
	head, _ := n.store.Head()
	page := api.AuditPage{Lines: []api.AuditLine{}, Head: head}
	size := 0
	recs := n.store.Scan(req.After + 1)
	if req.Run != "" {
		recs = n.store.ScanRun(req.Run, req.After+1)
	}
	for rec, err := range recs {
		if err != nil {
			return page, fmt.Errorf("node: audit: %w", err)
		}
		if !req.Since.IsZero() && rec.Event.Time.Before(req.Since) {
			continue
		}
		// Keep the reply under NATS's max payload; a page always holds at
		// least one line.
		cost := len(rec.Event.Data) + len(rec.Raw) + 512
		if len(page.Lines) > 0 && size+cost > maxReplyBytes {
			break
		}
		size += cost
		page.Lines = append(page.Lines, auditLine(rec))
		if len(page.Lines) >= req.Limit {
			break
		}
	}
	return page, nil
}

func auditLine(rec ledger.Record) api.AuditLine {
	ev := rec.Event
	return api.AuditLine{Seq: ev.Seq, Subject: ev.Subject, Type: string(ev.Type), Run: ev.Run, Node: ev.Node, Time: ev.Time, Data: ev.Data, JWS: string(rec.Raw)}
}
