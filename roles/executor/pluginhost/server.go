package pluginhost

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/executor/runner"
	"github.com/agentic-dev/agentic/roles/plugin"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// tool is one tool a server lists.
type tool struct {
	def  event.ToolDefinition
	hash string
	size int // bytes of def as JSON, for the report budget
}

// server is one plugin server for one step user. Its process and
// session are started by ensure and ended by stop or by a failure; the
// next ensure starts them again.
type server struct {
	plugin, user string
	manifest     event.PluginManifest
	manifestHash string
	h            *Host

	// calls serializes starts and stops with calls' use of the session.
	mu struct {
		sync.Mutex
		proc    *runner.Server
		session *mcp.ClientSession
		tools   map[string]tool
		listed  time.Time // when tools was listed
		started bool      // a start was tried
		runUser string    // the user it runs as
		err     string    // why the last start failed, or why it died
		stopped bool      // stop was called: never start again
	}
}

func newServer(name, user string, e entry, h *Host) *server {
	return &server{plugin: name, user: user, manifest: e.manifest, manifestHash: e.hash, h: h}
}

// serverStatus is a snapshot for Report.
type serverStatus struct {
	started bool
	user    string
	err     string
	tools   map[string]tool
}

func (s *server) status() serverStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := serverStatus{started: s.mu.started, user: s.mu.runUser, err: s.mu.err, tools: s.mu.tools}
	if st.user == "" {
		st.user = s.user
	}
	return st
}

// ensure starts the server unless it runs; it returns the session, or
// why it cannot run.
func (s *server) ensure(ctx context.Context) (*mcp.ClientSession, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.stopped {
		return nil, errStopped
	}
	if s.mu.session != nil {
		select {
		case <-s.mu.proc.Done():
			s.failLocked(fmt.Sprintf("the server exited (status %d)", s.mu.proc.ExitCode()))
		default:
			return s.mu.session, nil
		}
	}
	err := s.startLocked(ctx)
	s.mu.started = true
	if err != nil {
		s.mu.err = err.Error()
		return nil, err
	}
	s.mu.err = ""
	s.h.notify() // (re)started: its tools may have changed
	return s.mu.session, nil
}

// startLocked starts the process, connects and lists the tools.
func (s *server) startLocked(ctx context.Context) error {
	log := s.h.log.With("plugin", s.plugin)
	if len(s.manifest.Grants.Network) > 0 && s.h.cfg.Network != nil {
		allowed, err := s.h.cfg.Network(ctx)
		if err != nil {
			return fmt.Errorf("plugin %s: not started: cannot read the policy in force to judge its grants.network: %w", s.plugin, err)
		}
		if err := plugin.CheckNetwork(s.manifest, allowed); err != nil {
			return fmt.Errorf("not started: %w", err)
		}
	}
	spec := runner.ServerSpec{Argv: s.manifest.Command, RunAs: s.user, EnvAllow: s.manifest.Env,
		NoNetwork: len(s.manifest.Grants.Network) == 0}
	if len(s.manifest.Grants.Filesystem) > 0 {
		spec.WriteScope = grantGlobs(s.manifest.Grants.Filesystem)
	}
	proc, err := runner.StartServer(spec, s.h.cfg.Runner, func(chunk string) {
		log.Info("plugin server stderr", "user", s.user, "text", strings.TrimRight(chunk, "\n"))
	})
	if err != nil {
		return fmt.Errorf("plugin %s: start %s: %w", s.plugin, s.manifest.Command[0], err)
	}
	if proc.NetworkShared {
		log.Warn("plugin server runs with the executor's network: its grants.network is empty, and the kernel refused it a network namespace of its own",
			"user", s.user, "pid", proc.PID)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "agentic", Version: s.h.cfg.Version}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { s.h.spawn(s.relist) },
	})
	sess, err := client.Connect(ctx, &mcp.IOTransport{Reader: proc.Stdout, Writer: proc.Stdin}, nil)
	if err != nil {
		proc.Stop()
		return fmt.Errorf("plugin %s: %s did not answer initialize: %w%s", s.plugin, s.manifest.Command[0], err, exited(proc))
	}
	tools, err := listTools(ctx, sess)
	if err != nil {
		_ = sess.Close()
		proc.Stop()
		return fmt.Errorf("plugin %s: tools/list: %w%s", s.plugin, err, exited(proc))
	}
	s.mu.proc, s.mu.session, s.mu.tools, s.mu.runUser, s.mu.listed = proc, sess, tools, proc.User, time.Now()
	log.Info("plugin server started", "user", proc.User, "pid", proc.PID, "tools", len(tools))
	return nil
}

// exited says the server's exit status when it has exited.
func exited(p *runner.Server) string {
	select {
	case <-p.Done():
		return fmt.Sprintf(" (the server exited with status %d)", p.ExitCode())
	default:
		return ""
	}
}

// grantGlobs turns granted paths into file scope globs (the path and
// what lies beneath it).
func grantGlobs(paths []string) []string {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		out = append(out, strings.TrimRight(p, "/")+"/**")
	}
	return out
}

// listTools lists every tool (all pages) with its definition and hash.
func listTools(ctx context.Context, sess *mcp.ClientSession) (map[string]tool, error) {
	out := map[string]tool{}
	for t, err := range sess.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		def, err := definition(t)
		if err != nil {
			return nil, err
		}
		h, err := plugin.DefinitionHash(def)
		if err != nil {
			return nil, err
		}
		if _, dup := out[def.Name]; dup {
			return nil, fmt.Errorf("tool %q listed twice", def.Name)
		}
		b, _ := json.Marshal(def)
		out[def.Name] = tool{def: def, hash: h, size: len(b)}
		if len(out) > maxTools {
			return nil, fmt.Errorf("more than %d tools", maxTools)
		}
	}
	return out, nil
}

// maxTools bounds the tools one server may list.
const maxTools = 1000

// definition converts an SDK tool into the protocol's form.
func definition(t *mcp.Tool) (event.ToolDefinition, error) {
	if _, _, err := event.SplitToolName("p/" + t.Name); err != nil || t.Name == "" {
		return event.ToolDefinition{}, fmt.Errorf("tool name %q: a tool's name is up to 128 printable ASCII characters without spaces or '/'", t.Name)
	}
	d := event.ToolDefinition{Name: t.Name, Title: t.Title, Description: t.Description}
	var err error
	if d.InputSchema, err = rawJSON(t.InputSchema); err != nil {
		return d, fmt.Errorf("tool %s: input schema: %w", t.Name, err)
	}
	if d.OutputSchema, err = rawJSON(t.OutputSchema); err != nil {
		return d, fmt.Errorf("tool %s: output schema: %w", t.Name, err)
	}
	if t.Annotations != nil {
		if d.Annotations, err = json.Marshal(t.Annotations); err != nil {
			return d, fmt.Errorf("tool %s: annotations: %w", t.Name, err)
		}
	}
	return d, nil
}

func rawJSON(v any) (json.RawMessage, error) {
	if v == nil {
		return nil, nil
	}
	if r, ok := v.(json.RawMessage); ok {
		return r, nil
	}
	return json.Marshal(v)
}

// relist lists the tools again (the server said they changed).
func (s *server) relist() {
	ctx, cancel := context.WithTimeout(context.Background(), s.h.cfg.StartTimeout)
	defer cancel()
	s.mu.Lock()
	sess := s.mu.session
	s.mu.Unlock()
	if sess == nil {
		return
	}
	tools, err := listTools(ctx, sess)
	if err != nil {
		return
	}
	s.mu.Lock()
	if s.mu.session == sess {
		s.mu.tools, s.mu.listed = tools, time.Now()
	}
	s.mu.Unlock()
	s.h.notify()
}

// current returns the tools as the server lists them: listed again when
// the last listing is older than Config.RelistAfter (a call checks the
// definition it runs against its pin).
func (s *server) current(ctx context.Context, sess *mcp.ClientSession) (map[string]tool, error) {
	s.mu.Lock()
	if s.mu.session == sess && time.Since(s.mu.listed) < s.h.cfg.RelistAfter {
		tools := s.mu.tools
		s.mu.Unlock()
		return tools, nil
	}
	s.mu.Unlock()
	tools, err := listTools(ctx, sess)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	changed := s.mu.session == sess && !sameTools(s.mu.tools, tools)
	if s.mu.session == sess {
		s.mu.tools, s.mu.listed = tools, time.Now()
	}
	s.mu.Unlock()
	if changed {
		s.h.notify()
	}
	return tools, nil
}

func sameTools(a, b map[string]tool) bool {
	if len(a) != len(b) {
		return false
	}
	for k, t := range a {
		if b[k].hash != t.hash {
			return false
		}
	}
	return true
}

// fail stops the session and process after a failure (a hang, a crash,
// garbage): the next call starts them again.
func (s *server) fail(sess *mcp.ClientSession, why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.session != sess {
		return
	}
	s.failLocked(why)
	s.h.notify()
}

func (s *server) failLocked(why string) {
	if s.mu.session != nil {
		_ = s.mu.session.Close()
	}
	if s.mu.proc != nil {
		s.mu.proc.Stop()
	}
	s.mu.session, s.mu.proc, s.mu.tools, s.mu.err = nil, nil, nil, why
	s.h.log.Warn("plugin server stopped after a failure", "plugin", s.plugin, "user", s.user, "why", why)
}

// stop ends the server for good.
func (s *server) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.stopped = true
	if s.mu.session != nil {
		_ = s.mu.session.Close()
	}
	if s.mu.proc != nil {
		s.mu.proc.Stop()
	}
	s.mu.session, s.mu.proc = nil, nil
}
