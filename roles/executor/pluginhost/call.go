package pluginhost

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/redact"
	"github.com/agentic-dev/agentic/roles/executor/runner"
	"github.com/agentic-dev/agentic/roles/plugin"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Call is one tool call.
type Call struct {
	// Tool is "plugin/tool"; Args its arguments (a JSON object).
	Tool string
	Args json.RawMessage
	// User is the step user ("" the executor's default).
	User string
	// Timeout bounds the call; 0 means Config.CallTimeout.
	Timeout time.Duration
	// Judge, if set, judges the call once its definition is known to be
	// the pinned one, with that definition and the paths its arguments
	// name: an error refuses it (class policy).
	Judge func(def event.ToolDefinition, paths []plugin.PathArg) error
	// Network, if set, judges the plugin's grants.network before the
	// call ((*policy.Policy).NetworkAllowed of the step's policy
	// version): a grant it does not allow refuses the call (class
	// policy).
	Network func(target string) (bool, string)
}

// Result is a call's outcome, shaped for task.finished.
type Result struct {
	// Status is succeeded, failed or cancelled.
	Status event.TaskStatus
	Class  event.FailureClass
	// Error says what went wrong, for people ("" on success).
	Error string
	// Output is the result rendered as text and redacted: what the tool
	// gave (on an error result too).
	Output string
	// Hash is the definition's hash the call ran with; User the user its
	// server runs as.
	Hash, User string
	TimedOut   bool
	// Unpinned says the call was refused because the definition is not
	// the pinned one (or none is pinned): a caller whose pins may be
	// stale syncs and calls again once.
	Unpinned bool
}

func failed(class event.FailureClass, format string, a ...any) Result {
	return Result{Status: event.TaskFailed, Class: class, Error: fmt.Sprintf(format, a...)}
}

// Call runs c: the server's current definition of the tool must hash to
// its pin, its path arguments lie within the plugin's grants; the result
// is rendered, bounded and redacted. It never panics on what a server
// does: a crash, a hang, garbage or an oversized result are failed
// results.
func (h *Host) Call(ctx context.Context, c Call) Result {
	pl, name, err := event.SplitToolName(c.Tool)
	if err != nil {
		return failed(event.ClassLogic, "%v", err)
	}
	if len(c.Args) > 0 {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(c.Args, &obj); err != nil {
			return failed(event.ClassLogic, "tool %s: args are not a JSON object: %v", c.Tool, err)
		}
	}
	s, e, err := h.server(pl, c.User)
	if err != nil {
		return failed(event.ClassPolicy, "tool %s: %v", c.Tool, err)
	}
	if err := plugin.CheckGrants(e.manifest, name, c.Args); err != nil {
		return failed(event.ClassPolicy, "refused: %v", err)
	}
	if c.Network != nil {
		if err := plugin.CheckNetwork(e.manifest, c.Network); err != nil {
			return failed(event.ClassPolicy, "refused: %v", err)
		}
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = h.cfg.CallTimeout
	}
	start := time.Now()
	sctx, cancel := context.WithTimeout(ctx, h.cfg.StartTimeout)
	sess, err := s.ensure(sctx)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return Result{Status: event.TaskCancelled, Class: event.ClassTransient, Error: "cancelled while the plugin's server started"}
		}
		return failed(event.ClassTransient, "tool %s: its server cannot run: %v", c.Tool, err)
	}
	cctx, cancel := context.WithTimeout(ctx, max(timeout-time.Since(start), time.Millisecond))
	defer cancel()
	tools, err := s.current(cctx, sess)
	if err != nil {
		return h.broken(ctx, cctx, s, sess, c, timeout, "tools/list", err)
	}
	t, ok := tools[name]
	if !ok {
		return failed(event.ClassLogic, "tool %s: its server offers no tool %q (agentctl plugin show %s lists what it offers)", c.Tool, name, pl)
	}
	pin, ok := e.pins[name]
	if !ok || pin != t.hash {
		p := &plugin.Plugin{Manifest: e.manifest, Pins: map[string]event.ToolPin{}}
		if ok {
			p.Pins[name] = event.ToolPin{Hash: pin}
		}
		r := withHash(failed(event.ClassPolicy, "refused: %v", p.Check(name, t.hash)), t.hash)
		r.Unpinned = true
		return r
	}
	if c.Judge != nil {
		paths, err := plugin.Paths(e.manifest, name, c.Args)
		if err == nil {
			err = c.Judge(t.def, paths)
		}
		if err != nil {
			return withHash(failed(event.ClassPolicy, "refused: %v", err), t.hash)
		}
	}
	var args any = map[string]any{}
	if len(c.Args) > 0 {
		args = c.Args
	}
	res, err := sess.CallTool(cctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return withHash(h.broken(ctx, cctx, s, sess, c, timeout, "tools/call", err), t.hash)
	}
	out, err := render(res, h.cfg.MaxResultBytes)
	r := Result{Status: event.TaskSucceeded, Output: redact.Redact(out), Hash: t.hash, User: s.status().user}
	switch {
	case err != nil:
		r.Status, r.Class, r.Error = event.TaskFailed, event.ClassLogic, fmt.Sprintf("tool %s: %v", c.Tool, err)
	case res.IsError:
		r.Status, r.Class, r.Error = event.TaskFailed, event.ClassLogic, fmt.Sprintf("tool %s returned an error result", c.Tool)
	}
	return r
}

func withHash(r Result, hash string) Result {
	r.Hash = hash
	return r
}

// broken turns a failed exchange with a server into a result, and stops
// the server unless the caller cancelled: the next call starts it again.
func (h *Host) broken(ctx, cctx context.Context, s *server, sess *mcp.ClientSession, c Call, timeout time.Duration, what string, err error) Result {
	switch {
	case ctx.Err() != nil:
		s.fail(sess, "a call was cancelled mid-way")
		return Result{Status: event.TaskCancelled, Class: event.ClassTransient, Error: fmt.Sprintf("cancelled during %s", what)}
	case errors.Is(cctx.Err(), context.DeadlineExceeded):
		s.fail(sess, fmt.Sprintf("%s of %s did not answer within %s", what, c.Tool, timeout))
		r := failed(event.ClassTransient, "tool %s: no answer within %s (%s); its server was stopped and starts again with the next call", c.Tool, timeout, what)
		r.TimedOut = true
		return r
	}
	s.mu.Lock()
	var proc *runner.Server
	if s.mu.session == sess {
		proc = s.mu.proc
	}
	s.mu.Unlock()
	gone := ""
	if proc != nil {
		// A closed pipe comes before the exit is reaped: wait a little
		// for it, to say the server died rather than that it talked
		// nonsense.
		select {
		case <-proc.Done():
		case <-time.After(time.Second):
		}
		// Exit status 0, or SIGPIPE: the server ended because the client
		// closed the connection on what it sent (garbage), not by itself.
		if code := proc.ExitCode(); code > 0 && code != 128+int(syscall.SIGPIPE) {
			gone = exited(proc)
		}
	}
	s.fail(sess, fmt.Sprintf("%s failed: %v", what, err))
	if gone != "" {
		return failed(event.ClassTransient, "tool %s: its server died during %s%s; it starts again with the next call", c.Tool, what, gone)
	}
	return failed(event.ClassTransient, "tool %s: %s failed: the server broke the protocol (%v); it was stopped and starts again with the next call", c.Tool, what, redact.Redact(err.Error()))
}

// render writes a result as text: text content as it is, structured
// content as JSON, other content by kind and size; more than max bytes
// is an error (the head is kept, cut at max).
func render(res *mcp.CallToolResult, max int) (string, error) {
	var b strings.Builder
	total := 0
	add := func(s string) {
		total += len(s)
		if b.Len() < max {
			b.WriteString(s[:min(len(s), max-b.Len())])
		}
	}
	for i, c := range res.Content {
		if i > 0 {
			add("\n")
		}
		switch c := c.(type) {
		case *mcp.TextContent:
			add(c.Text)
		case *mcp.ImageContent:
			add(fmt.Sprintf("[image %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *mcp.AudioContent:
			add(fmt.Sprintf("[audio %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *mcp.ResourceLink:
			add(fmt.Sprintf("[resource link %s]", c.URI))
		case *mcp.EmbeddedResource:
			if c.Resource != nil && c.Resource.Text != "" {
				add(c.Resource.Text)
			} else if c.Resource != nil {
				add(fmt.Sprintf("[resource %s, %d bytes, base64 %.40s…]", c.Resource.URI, len(c.Resource.Blob), base64.StdEncoding.EncodeToString(c.Resource.Blob)))
			}
		default:
			add(fmt.Sprintf("[content %T]", c))
		}
	}
	if len(res.Content) == 0 && res.StructuredContent != nil {
		j, err := json.Marshal(res.StructuredContent)
		if err == nil {
			add(string(j))
		}
	}
	if total > max {
		return b.String(), fmt.Errorf("the result is %d bytes; the limit is %d (the output holds its head)", total, max)
	}
	return b.String(), nil
}
