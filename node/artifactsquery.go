package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/roles/artifacts"
)

// artifactFolder returns the node's artifact fold (n.arts, made here):
// every ledger node keeps one, which its leader resolves steps' inputs
// with and its query API lists (docs/artifacts.md).
func (n *Node) artifactFolder() *artifacts.Fold {
	n.arts = artifacts.New()
	return n.arts
}

// startArtifactAPI serves artifacts.list from the artifact fold.
func (n *Node) startArtifactAPI(s *api.Server) {
	api.HandleTyped(s, api.MethodArtifactsList, guard(n, n.artifactsList))
}

// artifactsList answers one page of a run's artifacts, cut by count and
// size, or the one artifact named.
func (n *Node) artifactsList(ctx context.Context, req api.ArtifactsRequest) (api.Page[json.RawMessage], error) {
	if err := event.ValidRunID(req.Run); err != nil {
		return api.Page[json.RawMessage]{}, fmt.Errorf("%w: %w", api.ErrBadRequest, err)
	}
	if n.arts == nil {
		return api.Page[json.RawMessage]{}, fmt.Errorf("node %s keeps no artifacts", n.cfg.Name)
	}
	notFound := func(err error) error {
		if errors.Is(err, artifacts.ErrNoRun) || errors.Is(err, artifacts.ErrNoArtifact) {
			return api.WithHint(fmt.Errorf("%w: %w", api.ErrNotFound, err), "agentctl artifact ls --run "+req.Run+" lists what it stored")
		}
		return err
	}
	limit := api.PageLimit(req.Limit, api.DefaultArtifactsPage, api.MaxArtifactsPage)
	var list []artifacts.Artifact
	more := false
	if req.Name != "" {
		a, err := n.arts.Get(req.Run, req.Name)
		if err != nil {
			return api.Page[json.RawMessage]{}, notFound(err)
		}
		list = []artifacts.Artifact{a}
	} else {
		var err error
		if list, more, err = n.arts.List(req.Run, req.Cursor, limit); err != nil {
			return api.Page[json.RawMessage]{}, notFound(err)
		}
	}
	p := api.NewPager(limit, api.MaxPayload(ctx))
	last, end := req.Cursor, !more
	for _, a := range list {
		added, err := p.Add(api.Artifact{Run: a.Run, Name: a.Name, Size: a.Size, SHA256: a.SHA256, Object: a.Object,
			Step: a.Step, Attempt: a.Attempt, Retention: a.Retention, Meta: a.Meta, Seq: a.Seq, At: a.At})
		if err != nil {
			return api.Page[json.RawMessage]{}, fmt.Errorf("node: artifacts.list: %s: %w", a.Name, err)
		}
		if !added {
			end = false
			break
		}
		last = a.Name
	}
	return p.Page(last, end), nil
}
