package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/roles/plugin"
	"github.com/agentic-dev/agentic/roles/policy"
	"github.com/spf13/cobra"
)

func (a *app) pluginCmd() *cobra.Command {
	return group("plugin", "Add, approve and list tool plugins (MCP servers)",
		`A plugin is an MCP server that executors start over stdio, described by
a manifest: its command, what it is granted (filesystem paths, network
hosts, exec), the environment it may see and which tool arguments are
paths. Its tools run as steps of kind tool, judged by the policy. A tool's
definition runs only once an operator approved it: 'plugin approve' pins
the definitions executors report, and a definition that changes later is
refused until approved again (docs/plugins.md).`,
		a.pluginAddCmd(), a.pluginApproveCmd(), a.pluginLsCmd(), a.pluginShowCmd(), a.pluginRemoveCmd())
}

// pluginResult is what plugin add, approve and remove print with -o json.
type pluginResult struct {
	Plugin       string `json:"plugin"`
	Action       string `json:"action"`
	Event        string `json:"event"`
	ManifestHash string `json:"manifest_hash,omitempty"`
	// Tools are the pins an approval published.
	Tools  []event.ToolPin `json:"tools,omitempty"`
	Reason string          `json:"reason,omitempty"`
}

func (a *app) pluginAddCmd() *cobra.Command {
	var file, reason string
	c := &cobra.Command{
		Use:   "add -f MANIFEST",
		Short: "Add a plugin from its manifest (plugin.added)",
		Long: `Read a plugin manifest (YAML or JSON; - for standard input), check it —
every problem is listed with its line, and nothing is published — and
publish plugin.added, signed with your operator credentials. Executors
that have its command start its server and report its tools; review them
with 'agentctl plugin show NAME' and approve them with 'agentctl plugin
approve NAME': no tool runs before. Adding a plugin again with another
manifest replaces it, and its tools wait for a new approval.`,
		Example: `  agentctl plugin add -f fs.yaml
  agentctl plugin add -f fs.yaml --reason "read the team notes" -o json`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return usagef("plugin add: give the manifest with -f FILE (or -f - for standard input)")
			}
			return a.pluginAdd(cmd.Context(), file, reason)
		},
	}
	c.Flags().StringVarP(&file, "file", "f", "", "the manifest (YAML or JSON); - reads standard input")
	c.Flags().StringVar(&reason, "reason", "", "why, recorded in the ledger")
	return c
}

func (a *app) pluginAdd(ctx context.Context, file, reason string) error {
	name, data, err := a.readManifest(file)
	if err != nil {
		return err
	}
	m, err := plugin.ParseManifest(data, name)
	if err != nil {
		return fmt.Errorf("%w\n(nothing was published)", err)
	}
	c, err := a.client()
	if err != nil {
		return err
	}
	if err := checkPluginNetwork(ctx, c, m); err != nil { // pluginnet.go
		return err
	}
	hash := plugin.ManifestHash(m)
	replaces := false
	var old plugin.View
	switch err := c.Call(ctx, api.MethodPluginsShow, api.PluginRequest{Name: m.Name}, &old); {
	case err == nil:
		if old.ManifestHash == hash {
			return a.printPlugin(pluginResult{Plugin: m.Name, Action: "unchanged", ManifestHash: hash},
				fmt.Sprintf("plugin %s already has this manifest (%s): nothing was published\n", m.Name, hash))
		}
		replaces = true
	case errors.Is(err, api.ErrNotFound):
	default:
		return err
	}
	d, err := event.NewDraft(event.PluginAdded, "", event.PluginAddedData{Manifest: m, Reason: reason})
	if err != nil {
		return err
	}
	if err := a.publish(ctx, d); err != nil {
		return fmt.Errorf("add plugin %s: %w", m.Name, err)
	}
	text := fmt.Sprintf("plugin %s added (event %s, manifest %s)\n", m.Name, d.ID, hash)
	if replaces {
		text = fmt.Sprintf("plugin %s: its manifest replaced (event %s, manifest %s); its tools wait for a new approval\n", m.Name, d.ID, hash)
	}
	text += fmt.Sprintf("executors that have %s start its server and report its tools: review them with agentctl plugin show %s, then agentctl plugin approve %s\n",
		m.Command[0], m.Name, m.Name)
	return a.printPlugin(pluginResult{Plugin: m.Name, Action: "added", Event: d.ID, ManifestHash: hash, Reason: reason}, text)
}

// readManifest reads a manifest file, or standard input for "-", and
// names it for errors.
func (a *app) readManifest(file string) (string, []byte, error) {
	if file == "-" {
		data, err := io.ReadAll(a.env.Stdin)
		if err != nil {
			return "", nil, fmt.Errorf("read the manifest from standard input: %w", err)
		}
		return "stdin", data, nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return "", nil, fmt.Errorf("read manifest: %w", err)
	}
	return file, data, nil
}

func (a *app) pluginApproveCmd() *cobra.Command {
	var reason string
	c := &cobra.Command{
		Use:   "approve NAME",
		Short: "Pin the tool definitions executors report for a plugin (plugin.approved)",
		Long: `Pin the definitions of NAME's tools as its executors report them now —
the first time, and after any change — by publishing plugin.approved with
each definition and its hash. Review them first with 'agentctl plugin show
NAME': it prints every description in full, and an approved definition
beside the changed one. Refused when no executor reports the plugin's
tools, or when executors report different definitions of one tool.`,
		Example: `  agentctl plugin show fs && agentctl plugin approve fs --reason "descriptions reviewed"`,
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			return a.pluginApprove(cmd.Context(), argv[0], reason)
		},
	}
	c.Flags().StringVar(&reason, "reason", "", "why, recorded in the ledger")
	return c
}

func (a *app) pluginApprove(ctx context.Context, name, reason string) error {
	v, err := a.pluginShow(ctx, name)
	if err != nil {
		return err
	}
	d, err := v.Approval(reason)
	if err != nil {
		return fmt.Errorf("%w\n(nothing was published)", err)
	}
	c, err := a.client()
	if err != nil {
		return err
	}
	if err := checkPluginNetwork(ctx, c, v.Manifest); err != nil { // pluginnet.go
		return err
	}
	dr, err := event.NewDraft(event.PluginApproved, "", d)
	if err != nil {
		return err
	}
	if err := a.publish(ctx, dr); err != nil {
		return fmt.Errorf("approve plugin %s: %w", name, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "plugin %s: %d tool definitions pinned (event %s)\n", name, len(d.Tools), dr.ID)
	for _, t := range d.Tools {
		fmt.Fprintf(&b, "  %s/%s  %s\n", name, t.Definition.Name, t.Hash)
	}
	return a.printPlugin(pluginResult{Plugin: name, Action: "approved", Event: dr.ID, ManifestHash: d.Manifest, Tools: d.Tools, Reason: reason}, b.String())
}

func (a *app) pluginRemoveCmd() *cobra.Command {
	var reason string
	c := &cobra.Command{
		Use:   "remove NAME",
		Short: "Remove a plugin (plugin.removed): executors stop its servers",
		Long: `Publish plugin.removed, signed with your operator credentials: executors
stop the plugin's servers, and its tools are refused. Its history stays in
the ledger; adding it again starts over (a new approval is needed).`,
		Example: `  agentctl plugin remove fs --reason "not needed any more"`,
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			ctx := cmd.Context()
			if _, err := a.pluginShow(ctx, argv[0]); err != nil {
				return err
			}
			d, err := event.NewDraft(event.PluginRemoved, "", event.PluginRemovedData{Plugin: argv[0], Reason: reason})
			if err != nil {
				return err
			}
			if err := a.publish(ctx, d); err != nil {
				return fmt.Errorf("remove plugin %s: %w", argv[0], err)
			}
			return a.printPlugin(pluginResult{Plugin: argv[0], Action: "removed", Event: d.ID, Reason: reason},
				fmt.Sprintf("plugin %s removed (event %s)\n", argv[0], d.ID))
		},
	}
	c.Flags().StringVar(&reason, "reason", "", "why, recorded in the ledger")
	return c
}

func (a *app) pluginLsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "ls",
		Short: "List the plugins: where they run, their tools, definition hashes, state",
		Long: `List the plugins in force: their state (approved, awaiting approval,
changed: re-approve, no tools reported, not running), how many tools,
the executors running their servers, who added and approved them; then
each tool's status with its pinned hash and any other hash executors
report. -o json prints the plugin objects without tool definitions
(agentctl plugin show prints those).`,
		Example: `  agentctl plugin ls
  agentctl plugin ls -o json | jq -r '.[] | .name + " " + (.tools | length | tostring)'`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			var vs []plugin.View
			if err := c.Call(cmd.Context(), api.MethodPluginsList, struct{}{}, &vs); err != nil {
				return err
			}
			if a.output != formatText {
				return writeList(a, vs)
			}
			if len(vs) == 0 {
				_, err := fmt.Fprintln(a.env.Stdout, "no plugins (agentctl plugin add -f MANIFEST adds one)")
				return err
			}
			tw := a.table()
			fmt.Fprintln(tw, "PLUGIN\tSTATE\tTOOLS\tEXECUTORS\tADDED BY\tAPPROVED BY")
			for _, v := range vs {
				approved := "-"
				if v.Approved != nil {
					approved = v.Approved.By
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", v.Name, pluginState(v), len(v.Tools), executorsCell(v), v.Added.By, approved)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			for _, v := range vs {
				for _, t := range v.Tools {
					fmt.Fprintf(a.env.Stdout, "  %-32s %-10s %s\n", t.Name, t.Status, toolHashes(t))
				}
			}
			return nil
		},
	}
}

// pluginState sums a plugin's tools up.
func pluginState(v plugin.View) string {
	count := map[plugin.ToolStatus]int{}
	for _, t := range v.Tools {
		count[t.Status]++
	}
	switch {
	case len(v.Tools) == 0:
		return "no tools reported"
	case count[plugin.ToolChanged] > 0:
		return "changed: re-approve"
	case count[plugin.ToolUnapproved] > 0:
		return "awaiting approval"
	case count[plugin.ToolUnreported] == len(v.Tools):
		return "not running"
	}
	return "approved"
}

// executorsCell lists where the plugin runs, with errors counted.
func executorsCell(v plugin.View) string {
	if len(v.Executors) == 0 {
		return "-"
	}
	var out []string
	for _, x := range v.Executors {
		s := x.Node
		switch {
		case x.Error != "":
			s += " (failed)"
		case !x.Current:
			s += " (old manifest)"
		}
		out = append(out, s)
	}
	return strings.Join(out, ",")
}

// toolHashes shows a tool's pinned hash and the reported ones that differ.
func toolHashes(t plugin.ToolView) string {
	var parts []string
	if t.Pin != nil {
		parts = append(parts, "pinned "+t.Pin.Hash)
	}
	for _, r := range t.Reported {
		if t.Pin == nil || r.Hash != t.Pin.Hash {
			parts = append(parts, "reported "+r.Hash+" by "+strings.Join(r.Nodes, ","))
		}
	}
	return strings.Join(parts, "; ")
}

func (a *app) pluginShowCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "show NAME",
		Short: "Show a plugin: its manifest, each tool's full definition, pin and state",
		Long: `Show a plugin's manifest, where its server runs (or why not), and each
tool: its state, the pinned definition and hash, and what executors report
now — the description in full, so that instructions hidden in it are
visible, and the approved definition beside a changed one.`,
		Example: `  agentctl plugin show fs
  agentctl plugin show fs -o json | jq '.tools[] | {name, status}'`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			v, err := a.pluginShow(cmd.Context(), argv[0])
			if err != nil {
				return err
			}
			shown := pluginShown{View: v, Policy: a.toolVerdicts(cmd.Context(), v)}
			if a.output != formatText {
				return a.writeJSON(shown)
			}
			return a.printPluginView(shown)
		},
	}
}

// pluginShow asks plugins.show for name.
func (a *app) pluginShow(ctx context.Context, name string) (plugin.View, error) {
	if err := event.ValidPluginName(name); err != nil {
		return plugin.View{}, usagef("%v", err)
	}
	c, err := a.client()
	if err != nil {
		return plugin.View{}, err
	}
	var v plugin.View
	if err := c.Call(ctx, api.MethodPluginsShow, api.PluginRequest{Name: name}, &v); err != nil {
		return plugin.View{}, err
	}
	return v, nil
}

// pluginShown is what plugin show prints: the plugin, and what the policy
// in force says of each tool.
type pluginShown struct {
	plugin.View
	// Policy is the policy's verdict on a call of each tool, judged with
	// the approved definition's annotations (no arguments); absent when
	// the policy could not be read.
	Policy []toolVerdict `json:"policy,omitempty"`
}

// toolVerdict is the policy's verdict on one tool.
type toolVerdict struct {
	Tool    string `json:"tool"`
	Action  string `json:"action"`
	Level   string `json:"level"`
	Rule    string `json:"rule"`
	Why     string `json:"why"`
	Version int64  `json:"policy_version"`
}

// toolVerdicts judges each tool of v with the policy in force; nil when
// it cannot be read.
func (a *app) toolVerdicts(ctx context.Context, v plugin.View) []toolVerdict {
	c, err := a.client()
	if err != nil {
		return nil
	}
	pv, err := policyShow(ctx, c, 0)
	if err != nil {
		return nil
	}
	p, err := policy.Parse([]byte(pv.Text), "policy")
	if err != nil {
		return nil
	}
	p.Version = pv.Version
	var out []toolVerdict
	for _, t := range v.Tools {
		var f *policy.ToolFacts
		if t.Pin != nil {
			f = &policy.ToolFacts{Annotations: t.Pin.Definition.Annotations}
		}
		vd := p.JudgeTool(event.Step{Kind: event.KindTool, Tool: t.Name}, f)
		out = append(out, toolVerdict{Tool: t.Name, Action: vd.Action.String(), Level: vd.Level.String(), Rule: vd.Rule, Why: vd.Why, Version: p.Version})
	}
	return out
}

func (a *app) printPluginView(shown pluginShown) error {
	v := shown.View
	verdicts := map[string]toolVerdict{}
	for _, tv := range shown.Policy {
		verdicts[tv.Tool] = tv
	}
	w := a.env.Stdout
	m := v.Manifest
	fmt.Fprintf(w, "plugin      %s\n", v.Name)
	if m.Description != "" {
		fmt.Fprintf(w, "about       %s\n", m.Description)
	}
	fmt.Fprintf(w, "command     %s\n", quoteArgv(m.Command))
	fmt.Fprintf(w, "grants      filesystem %s; network %s; exec %t\n", listOrNone(m.Grants.Filesystem), listOrNone(m.Grants.Network), m.Grants.Exec)
	fmt.Fprintf(w, "env         %s\n", listOrNone(m.Env))
	fmt.Fprintf(w, "path args   %s\n", listOrNone(m.PathArgs))
	fmt.Fprintf(w, "manifest    %s\n", v.ManifestHash)
	fmt.Fprintf(w, "added       by %s at %s (event %s)\n", v.Added.By, fmtTime(v.Added.Time), v.Added.Event)
	if v.Approved != nil {
		fmt.Fprintf(w, "approved    by %s at %s (event %s)\n", v.Approved.By, fmtTime(v.Approved.Time), v.Approved.Event)
	} else {
		fmt.Fprintf(w, "approved    never: its tools are refused until agentctl plugin approve %s\n", v.Name)
	}
	if len(v.Executors) == 0 {
		fmt.Fprintf(w, "runs on     no executor reports it yet\n")
	}
	for _, x := range v.Executors {
		state := "running"
		switch {
		case x.Error != "":
			state = "not running: " + x.Error
		case !x.Current:
			state = "running an older manifest"
		}
		fmt.Fprintf(w, "runs on     %s as %s: %s\n", x.Node, dash(x.User), state)
	}
	for _, t := range v.Tools {
		fmt.Fprintf(w, "\ntool %s — %s\n", t.Name, t.Status)
		if vd, ok := verdicts[t.Name]; ok {
			fmt.Fprintf(w, "  policy %d: %s (level %s, rule %s): %s\n", vd.Version, vd.Action, vd.Level, vd.Rule, vd.Why)
		}
		if t.Pin != nil {
			fmt.Fprintf(w, "  approved definition (%s):\n", t.Pin.Hash)
			printDefinition(w, t.Pin.Definition)
		}
		for _, r := range t.Reported {
			if t.Pin != nil && r.Hash == t.Pin.Hash {
				fmt.Fprintf(w, "  reported by %s: the approved definition\n", strings.Join(r.Nodes, ", "))
				continue
			}
			fmt.Fprintf(w, "  reported by %s (%s), not approved:\n", strings.Join(r.Nodes, ", "), r.Hash)
			if r.Definition == nil {
				fmt.Fprintf(w, "    (the report did not carry the definition)\n")
				continue
			}
			printDefinition(w, *r.Definition)
		}
	}
	return nil
}

// printDefinition prints a tool definition in full, indented: the
// description whole (hidden instructions must be visible), the schemas
// and annotations as JSON.
func printDefinition(w io.Writer, d event.ToolDefinition) {
	if d.Title != "" {
		fmt.Fprintf(w, "    title        %s\n", d.Title)
	}
	fmt.Fprintf(w, "    description  %s\n", indentRest(d.Description, "                 "))
	for _, f := range []struct {
		name string
		raw  json.RawMessage
	}{{"input", d.InputSchema}, {"output", d.OutputSchema}, {"annotations", d.Annotations}} {
		if len(f.raw) > 0 {
			fmt.Fprintf(w, "    %-12s %s\n", f.name, compactJSON(f.raw))
		}
	}
}

// indentRest indents every line of s after the first.
func indentRest(s, indent string) string {
	return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+indent)
}

func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

func quoteArgv(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = fmt.Sprintf("%q", a)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func listOrNone(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	return strings.Join(l, ", ")
}

func (a *app) printPlugin(res pluginResult, text string) error {
	if a.output != formatText {
		return a.writeJSON(res)
	}
	_, err := io.WriteString(a.env.Stdout, text)
	return err
}
