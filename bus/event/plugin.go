package event

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Plugin events (protocol version 8): tools are MCP servers an operator
// adds with a manifest (plugin.added), whose tool definitions an operator
// pins by hash (plugin.approved: no trust on first use), and removes
// (plugin.removed). Executors start the servers and report their tools in
// executor.online (ExecutorOnlineData.Tools); a step of kind tool calls
// one (docs/plugins.md).
const (
	// PluginAdded records a plugin's manifest (PluginAddedData). Adding a
	// plugin again with another manifest replaces it and drops its pins.
	PluginAdded Type = "plugin.added"
	// PluginApproved pins the definitions of a plugin's tools
	// (PluginApprovedData): only pinned definitions reach prompts or run.
	PluginApproved Type = "plugin.approved"
	// PluginRemoved withdraws a plugin (PluginRemovedData).
	PluginRemoved Type = "plugin.removed"
)

// KindTool calls a plugin's tool (protocol version 8): Step.Tool names it
// "plugin/tool" and Step.Args holds its arguments, a JSON object.
const KindTool StepKind = "tool"

// MaxPluginNameLen caps plugin names, in bytes.
const MaxPluginNameLen = 64

// ValidPluginName reports whether name may name a plugin: 1 to
// MaxPluginNameLen ASCII letters, digits, '_' and '-' — one subject token
// and one part of a tool name "plugin/tool".
func ValidPluginName(name string) error {
	if err := checkLen("plugin name", name, MaxPluginNameLen); err != nil {
		return err
	}
	for i := 0; i < len(name); i++ {
		if !tokenByte(name[i]) {
			return fmt.Errorf("plugin name %q has %s: use letters, digits, '_' and '-'", name, describeByte(name, i))
		}
	}
	return nil
}

// SplitToolName splits a step's tool name "plugin/tool" into its plugin
// and the tool's own name, or says what is wrong with it.
func SplitToolName(name string) (plugin, tool string, err error) {
	plugin, tool, ok := strings.Cut(name, "/")
	if !ok || tool == "" {
		return "", "", fmt.Errorf("tool %q: name a tool as plugin/tool (fs/read_text_file)", name)
	}
	if err := ValidPluginName(plugin); err != nil {
		return "", "", fmt.Errorf("tool %q: %w", name, err)
	}
	if len(tool) > 128 || strings.ContainsFunc(tool, func(r rune) bool { return r <= ' ' || r == '/' || r > 0x7e }) {
		return "", "", fmt.Errorf("tool %q: a tool's own name is up to 128 printable ASCII characters without spaces or '/'", name)
	}
	return plugin, tool, nil
}

// PluginManifest describes a plugin: the MCP server an executor starts
// over stdio and what it is granted. It travels in plugin.added.
type PluginManifest struct {
	// Name names the plugin (ValidPluginName): its tools are "Name/tool".
	Name string `json:"name"`
	// Description says what it is for, for people.
	Description string `json:"description,omitempty"`
	// Command is the server's argument vector, run without a shell: the
	// first element an absolute path or a program on the executor's PATH.
	Command []string `json:"command"`
	// Grants are what the server may touch.
	Grants PluginGrants `json:"grants"`
	// Env names the environment variables the server may see, beyond
	// none; the executor's allowlist (internal/envallow) applies too.
	Env []string `json:"env,omitempty"`
	// PathArgs names the tool arguments that are paths (a string or an
	// array of strings), in every tool of the plugin ("path") or in one
	// ("move_file.destination"); the policy judges them against the
	// file scope and Grants.Filesystem.
	PathArgs []string `json:"path_args,omitempty"`
}

// PluginGrants are a plugin's declared capabilities.
type PluginGrants struct {
	// Filesystem lists the absolute paths (directories or files) the
	// server may touch; a path argument outside them is refused.
	Filesystem []string `json:"filesystem,omitempty"`
	// Network lists the hosts (host or host:port) it may reach: declared
	// and judged, not enforced (docs/plugins.md).
	Network []string `json:"network,omitempty"`
	// Exec says it may start programs.
	Exec bool `json:"exec,omitempty"`
}

// PluginAddedData is plugin.added: an operator's manifest.
type PluginAddedData struct {
	Manifest PluginManifest `json:"manifest"`
	// Reason says why, for the audit trail.
	Reason string `json:"reason,omitempty"`
}

// PluginApprovedData is plugin.approved: the tool definitions of Plugin an
// operator pins. The pins replace the plugin's earlier ones; a tool
// without a pin is refused.
type PluginApprovedData struct {
	Plugin string `json:"plugin"`
	// Manifest is the hash of the manifest the approval was given for
	// (PluginAdded's, as the fold hashes it): an approval of another
	// manifest is ignored.
	Manifest string `json:"manifest"`
	// Tools are the pinned definitions.
	Tools []ToolPin `json:"tools"`
	// Reason says why, for the audit trail.
	Reason string `json:"reason,omitempty"`
}

// PluginRemovedData is plugin.removed.
type PluginRemovedData struct {
	Plugin string `json:"plugin"`
	// Reason says why, for the audit trail.
	Reason string `json:"reason,omitempty"`
}

// ToolPin is one pinned tool definition.
type ToolPin struct {
	// Hash is the definition's hash (the plugin fold's DefinitionHash).
	Hash string `json:"hash"`
	// Definition is what was pinned, so that a changed definition can be
	// shown beside it.
	Definition ToolDefinition `json:"definition"`
}

// ToolDefinition is an MCP tool as its server lists it (tools/list).
// Everything in it comes from the server and is untrusted: annotations
// are hints, the description may carry instructions.
type ToolDefinition struct {
	// Name is the tool's own name, without the plugin.
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	// InputSchema and OutputSchema are JSON Schemas, as reported.
	InputSchema  json.RawMessage `json:"input_schema,omitempty"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	// Annotations are the server's hints (readOnlyHint,
	// destructiveHint, …), as reported.
	Annotations json.RawMessage `json:"annotations,omitempty"`
}

// ToolReport is one tool an executor's plugin server reported, in
// executor.online (protocol version 8).
type ToolReport struct {
	// Name is "plugin/tool".
	Name string `json:"name"`
	// Hash is the definition's hash.
	Hash string `json:"hash"`
	// User is the step user the server runs as ("" for the executor's
	// default).
	User string `json:"user,omitempty"`
	// Definition is the definition; absent when the report would not fit
	// in an event (the hash is always there).
	Definition *ToolDefinition `json:"definition,omitempty"`
}

// PluginReport is how one plugin's server fares on an executor, in
// executor.online (protocol version 8).
type PluginReport struct {
	Plugin string `json:"plugin"`
	// Manifest is the hash of the manifest the server was started from.
	Manifest string `json:"manifest"`
	User     string `json:"user,omitempty"`
	// Error says why the server is not running (a clear sentence); empty
	// when it runs.
	Error string `json:"error,omitempty"`
}
