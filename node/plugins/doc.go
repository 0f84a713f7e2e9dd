// Package plugins is the plugin index: the fold of the plugin events
// (plugin.added, plugin.approved, plugin.removed) and of the tools
// executors report (executor.online), kept in Pebble beside the ledger
// records and written in the same batch (a ledger.Indexer named
// "plugins"), and the query methods that read it, plugins.list and
// plugins.show.
//
// The fold is roles/plugin.State's. The whole state is one entry, small
// (plugins are few; executors report their tools once per start or
// change):
//
//	s → roles/plugin.State JSON
//
// Invariants:
//
//  1. The entry depends only on the ledger's records: appends, a restart
//     (snapshot plus replay) and a rebuild give the same entry.
//  2. Reads go to Pebble only, never to the write side's memory, and
//     replies are bounded: plugins.list gives at most MaxList plugins,
//     without definitions; plugins.show one plugin, or a clear too-large
//     error.
//
// Example:
//
//	x := plugins.New(logger)
//	if err := x.Attach(store); err != nil { ... } // before the first Append
//	api.HandleTyped(srv, api.MethodPluginsList, x.List)
//	api.HandleTyped(srv, api.MethodPluginsShow, x.Show)
package plugins
