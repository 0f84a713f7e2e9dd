// Package pluginhost is the executor's plugin host: it runs the MCP
// servers of the plugins in force (roles/plugin) as children of the
// executor, lists their tools, and calls one for a step of kind tool.
//
// Invariants:
//
//  1. A server is started only through the runner (runner.StartServer):
//     as the step user, with the scrubbed environment (the executor's
//     allowlist narrowed by the manifest's env), the resource limits,
//     Landlock confining its writes to grants.filesystem where the kernel
//     offers it, in its own process group killed on Stop and with the
//     executor. Nothing else here starts a process.
//  2. One server per (plugin, step user): the executor's default user's is
//     started when the plugin is seen (Sync) so that its tools are known
//     before any step; another user's when a step first needs it. A
//     server that died, hung or broke the protocol is stopped and started
//     again by the next call.
//  3. A call runs only a tool whose definition, as the server reports it
//     at that moment, hashes to the pin of the plugin's approval; every
//     other is refused (class policy) with the old and new hashes. Path
//     arguments outside grants.filesystem are refused with where they are.
//  4. A result is data: rendered to text, redacted (bus/redact), refused
//     beyond MaxResultBytes; a call is bounded by its timeout. A failing
//     server fails the step with a clear error and leaves the executor
//     and the other servers unharmed.
//  5. Stop stops every server and leaves no goroutine behind.
//
// Example:
//
//	h := pluginhost.New(pluginhost.Config{Runner: opts})
//	h.Sync(ctx, views)                 // from plugins.list
//	res := h.Call(ctx, pluginhost.Call{Tool: "fs/read_text_file", Args: args})
//	defer h.Stop()
package pluginhost
