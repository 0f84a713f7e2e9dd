package natsauth

import (
	"slices"

	"github.com/agentic-dev/agentic/bus/event"
)

// SourcesBucket is the Object Store bucket of the sources research steps
// fetch (roles/research.Bucket, repeated here: bus may not import roles).
const SourcesBucket = "AGENTIC_SOURCES"

// sourcePerms allows the Object Store of research sources: executors
// (which fetch into it) create the bucket and put objects; planners
// (which read sources to synthesise notes) read objects: their meta by
// direct get, their chunks by an ordered consumer. Nobody but an admin
// purges or deletes (the stream API's destructive operations are
// admin-only): the chunks of a put that failed part-way stay until an
// admin purges them, harmless since no meta names them.
func sourcePerms(p *perms, roles []string) {
	write := slices.Contains(roles, event.RoleExecutor)
	if !write && !slices.Contains(roles, event.RolePlanner) {
		return
	}
	stream := "OBJ_" + SourcesBucket
	p.allowPub(
		jsAPI+"STREAM.INFO."+stream,
		jsAPI+"STREAM.MSG.GET."+stream,
		jsAPI+"DIRECT.GET."+stream,
		jsAPI+"DIRECT.GET."+stream+".>",
		jsAPI+"CONSUMER.CREATE."+stream,
		jsAPI+"CONSUMER.CREATE."+stream+".>",
		jsAPI+"CONSUMER.INFO."+stream+".*",
		jsAPI+"CONSUMER.DELETE."+stream+".*",
		jsAPI+"CONSUMER.MSG.NEXT."+stream+".*",
		"$JS.FC."+stream+".>",
	)
	if write {
		p.allowPub(
			jsAPI+"STREAM.CREATE."+stream,
			"$O."+SourcesBucket+".C.>",
			"$O."+SourcesBucket+".M.>",
		)
	}
}
