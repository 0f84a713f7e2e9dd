package plugins

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/roles/plugin"
)

// MaxList caps the plugins plugins.list answers.
const MaxList = 500

// state reads the stored state (the empty state before any plugin).
func (x *Index) state() (*plugin.State, error) {
	if x == nil {
		return nil, ErrNotAttached
	}
	st := x.st.Load()
	if st == nil {
		return nil, ErrNotAttached
	}
	raw, err := st.IndexGet(Name, stateKey)
	if errors.Is(err, ledger.ErrNotFound) {
		return &plugin.State{}, nil
	} else if err != nil {
		return nil, fmt.Errorf("plugins: read: %w", err)
	}
	var s plugin.State
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("plugins: decode: %w", err)
	}
	return &s, nil
}

// List answers plugins.list: the plugins in force, by name, without tool
// definitions.
func (x *Index) List(ctx context.Context, _ struct{}) ([]plugin.View, error) {
	s, err := x.state()
	if err != nil {
		return nil, err
	}
	out := []plugin.View{}
	for _, name := range s.Names() {
		if len(out) == MaxList {
			break
		}
		v, _ := s.View(name)
		out = append(out, v.Brief())
	}
	return out, nil
}

// Show answers plugins.show: one plugin in full, or api.ErrNotFound with
// a hint.
func (x *Index) Show(ctx context.Context, req api.PluginRequest) (plugin.View, error) {
	if err := event.ValidPluginName(req.Name); err != nil {
		return plugin.View{}, fmt.Errorf("%w: %w", api.ErrBadRequest, err)
	}
	s, err := x.state()
	if err != nil {
		return plugin.View{}, err
	}
	v, ok := s.View(req.Name)
	if !ok {
		return plugin.View{}, api.WithHint(fmt.Errorf("%w: no plugin %q is in force", api.ErrNotFound, req.Name),
			"agentctl plugin ls lists them; agentctl plugin add -f MANIFEST adds one")
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return plugin.View{}, fmt.Errorf("plugins: encode %s: %w", req.Name, err)
	}
	if _, err := api.NewPager(1, api.MaxPayload(ctx)).AddRaw(raw); err != nil {
		return plugin.View{}, api.WithHint(fmt.Errorf("%w: plugin %s: %w", api.ErrTooLarge, req.Name, err),
			"read it with a client on a NATS server with a larger max_payload")
	}
	return v, nil
}
