package api

// Plugin queries (node/plugins): the plugins in force, their pinned tool
// definitions and what executors report (roles/plugin.View).
const (
	// MethodPluginsList answers every plugin in force, by name, without
	// tool definitions (struct{} → []plugin.View, each View.Brief).
	MethodPluginsList = "plugins.list"
	// MethodPluginsShow answers one plugin with its pinned and reported
	// tool definitions in full (PluginRequest → plugin.View).
	MethodPluginsShow = "plugins.show"
)

// PluginRequest names a plugin for plugins.show.
type PluginRequest struct {
	Name string `json:"name"`
}
