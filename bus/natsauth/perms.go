package natsauth

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/artifact"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/nats-io/jwt/v2"
)

// Roles of operator credentials beyond trust.OperatorRole ("operator"):
// a viewer reads (queries, the events stream, step output) and writes
// nothing; an admin is an operator who may also use the JetStream stream
// API (delete, purge, update, restore) and ask a node for a backup.
const (
	RoleViewer = trust.ViewerRole
	RoleAdmin  = trust.AdminRole
)

// OperatorRoles are the roles an operator credential may carry.
var OperatorRoles = []string{RoleViewer, trust.OperatorRole, RoleAdmin}

// ReadMethods are the query API methods (node/api, node/settings) that
// only read: what viewers, operators and nodes may call. A method not
// listed here or in AdminMethods is refused to every client, so a new
// method must be classified here (a test lists node/api's methods).
var ReadMethods = []string{
	"runs.list", "runs.get", "runs.steps", "audit",
	"ledger.verify", "ledger.export", "ledger.message", "ledger.head", "ledger.outcome",
	"memory.get", "memory.list", "node.info", "nodes.list", "alarms.list",
	"cluster.settings", "revocations.list", "credentials.list",
	"policy.show", "policy.list", "gates.list", "memory.commands",
	"plugins.list", "plugins.show",
	"memory.facts", "memory.search",
	"proposals.list", "proposals.show", "improve.settings",
	"artifacts.list",
}

// AdminMethods are the query API methods that act on a node: admin only.
var AdminMethods = []string{"node.backup"}

// PerNodeMethods are the query methods every node answers for itself
// alone, on its own subject (agentic.api.at.<node>.<method>) and on the
// broadcast one (agentic.api.all.<method>): what a node says of itself.
// The signer of such an answer must be the node it speaks of.
var PerNodeMethods = []string{"node.info", "node.backup"}

// AnswerRoles are the node roles that answer the cluster's queries: every
// role that folds a ledger (all but the executor: a lone executor keeps
// no ledger). Only nodes with one of them may subscribe to the query
// subjects and their queue group, and a client accepts an answer to any
// method but a PerNodeMethods one only when its signer holds one of them
// (node/api, "Signed answers").
var AnswerRoles = []string{event.RoleOrchestrator, event.RolePlanner, event.RoleMemory, event.RoleUI}

// Answers reports whether a node with roles answers the cluster's
// queries (AnswerRoles).
func Answers(roles []string) bool {
	return slices.ContainsFunc(roles, func(r string) bool { return slices.Contains(AnswerRoles, r) })
}

// Classified reports whether method is a read or an admin method: a
// method that is neither is refused to everyone by NATS, so a node refuses
// to serve it (node.startAPI).
func Classified(method string) bool {
	return slices.Contains(ReadMethods, method) || slices.Contains(AdminMethods, method)
}

// Subject spaces of the JetStream API.
const (
	jsAPI = "$JS.API."
	// apiPrefix is node/api's SubjectPrefix.
	apiPrefix = "agentic.api."
)

// InboxPrefix is the inbox prefix of an identity (nats.CustomInboxPrefix):
// the only inbox it may subscribe to, so that no one else reads its
// replies. Kind is part of it, so a node and an operator of the same name
// do not share one.
func InboxPrefix(kind, id string) string { return "_INBOX_" + kind + "_" + id }

// ExecutorConsumer is the durable consumer name of the executor node id
// (roles/executor.ConsumerName for ids trust.CheckID accepts).
func ExecutorConsumer(id string) string { return "exec_" + id }

func accountUpdateSubject(account string) string {
	return "$SYS.REQ.ACCOUNT." + account + ".CLAIMS.UPDATE"
}

// perms collects allowed subjects.
type perms struct{ pub, sub []string }

func (p *perms) allowPub(s ...string) { p.pub = append(p.pub, s...) }
func (p *perms) allowSub(s ...string) { p.sub = append(p.sub, s...) }

// Permissions are the NATS permissions of an identity of kind (node or
// operator) with id and roles: least privilege, every subject named. No
// identity is granted $JS.> or $JS.API.> wholesale; only RoleAdmin gets
// the stream API that deletes, purges or updates a stream. It returns an
// error for an unknown kind or role, or an id trust.CheckID refuses.
func Permissions(kind, id string, roles []string) (jwt.Permissions, error) {
	if err := trust.CheckID(id); err != nil {
		return jwt.Permissions{}, fmt.Errorf("natsauth: %w", err)
	}
	if len(roles) == 0 {
		return jwt.Permissions{}, fmt.Errorf("natsauth: %s %s has no roles", kind, id)
	}
	var p perms
	p.allowSub(InboxPrefix(kind, id) + ".>")
	switch kind {
	case trust.KindNode:
		for _, r := range roles {
			if !slices.Contains(event.NodeRoles, r) {
				return jwt.Permissions{}, fmt.Errorf("natsauth: node %s: unknown node role %q", id, r)
			}
		}
		nodePerms(&p, id, roles)
	case trust.KindOperator:
		for _, r := range roles {
			if !slices.Contains(OperatorRoles, r) {
				return jwt.Permissions{}, fmt.Errorf("natsauth: operator %s: unknown operator role %q (want one of %v)", id, r, OperatorRoles)
			}
		}
		operatorPerms(&p, roles)
	default:
		return jwt.Permissions{}, fmt.Errorf("natsauth: %s: unknown credential kind %q", id, kind)
	}
	var out jwt.Permissions
	out.Pub.Allow.Add(dedup(p.pub)...)
	out.Sub.Allow.Add(dedup(p.sub)...)
	if kind == trust.KindNode {
		// Nodes answer queries: one reply to the requester's reply subject.
		out.Resp = &jwt.ResponsePermission{MaxMsgs: 1, Expires: time.Minute}
	}
	return out, nil
}

// dedup sorts the subjects of one allow list and leaves out those another
// subject of the list covers (a subject of the admin's `$JS.API.CONSUMER.>`
// needs no `$JS.API.CONSUMER.INFO.AGENTIC_EVENTS.*` of its own): the
// same subjects allowed, in a smaller user JWT — which the server decodes
// three times and builds into its sublists at every CONNECT.
func dedup(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	s = slices.Compact(s)
	return slices.DeleteFunc(s, func(x string) bool {
		return slices.ContainsFunc(s, func(w string) bool { return w != x && covers(w, x) })
	})
}

// covers reports whether every subject s matches is matched by w (NATS
// wildcards: `*` one token, `>` one or more trailing tokens).
func covers(w, s string) bool {
	wt, st := strings.Split(w, "."), strings.Split(s, ".")
	for i, t := range wt {
		if t == ">" {
			return len(st) > i
		}
		if i >= len(st) || st[i] == ">" {
			return false
		}
		if t != "*" && t != st[i] {
			return false
		}
	}
	return len(wt) == len(st)
}

// readQueries allows calling the read methods, on the queue group, on one
// node and on all.
func readQueries(p *perms) {
	for _, m := range ReadMethods {
		p.allowPub(apiPrefix+m, apiPrefix+"at.*."+m, apiPrefix+"all."+m)
	}
}

// streamInfo allows reading the streams' and the account's information.
func streamInfo(p *perms) {
	p.allowPub(jsAPI + "INFO")
	for _, s := range []string{bus.EventsStream, bus.LogsStream, bus.LeaderBucketStream} {
		p.allowPub(jsAPI + "STREAM.INFO." + s)
	}
}

// orderedConsumer allows ordered (ephemeral) consumers on stream filtered
// to filter (a subject ending in >, as the consumer is created with it):
// created with the filter in the request subject — which the server
// checks against the consumer's configuration —, pulled, pushed to the
// identity's inbox with flow control, and looked up.
func orderedConsumer(p *perms, stream, filter string) {
	p.allowPub(
		jsAPI+"CONSUMER.CREATE."+stream+".*."+filter,
		jsAPI+"CONSUMER.MSG.NEXT."+stream+".*",
		jsAPI+"CONSUMER.INFO."+stream+".*",
		"$JS.FC."+stream+".>",
	)
}

// artifactReads allows reading artifacts (bus/artifact): the bucket's
// information, an object's metadata (last message of its subject, direct
// or not) and its chunks through an ordered consumer.
func artifactReads(p *perms) {
	const o = "$O." + artifact.Bucket + "."
	p.allowPub(
		jsAPI+"STREAM.INFO."+artifact.BucketStream,
		jsAPI+"STREAM.MSG.GET."+artifact.BucketStream,
		jsAPI+"DIRECT.GET."+artifact.BucketStream,
		jsAPI+"DIRECT.GET."+artifact.BucketStream+".>",
	)
	orderedConsumer(p, artifact.BucketStream, o+"C.>")
}

// artifactWrites allows storing artifacts: an upload's chunks and the
// metadata of uploads and content links. Not purge or delete: an object
// is only ever written under a fresh upload name, and the bucket's age
// limit prunes it.
func artifactWrites(p *perms) {
	const o = "$O." + artifact.Bucket + "."
	p.allowPub(o+"C.>", o+"M.>")
}

// eventPublishes allows the event subjects the roles may emit under the
// newest protocol (bus/event's table).
func eventPublishes(p *perms, roles []string) {
	for _, s := range event.Types() {
		if !slices.ContainsFunc(s.Roles, func(r string) bool { return slices.Contains(roles, r) }) {
			continue
		}
		p.allowPub(event.Subject(s.Type, ""))
		if s.Type == event.TaskAssigned || s.Type == event.TaskCancel {
			p.allowPub(event.Subject(s.Type, "*"))
		}
	}
}

// nodePerms are the permissions of node id running roles.
func nodePerms(p *perms, id string, roles []string) {
	eventPublishes(p, roles)
	streamInfo(p)
	// A start creates the streams and the leader bucket that are absent
	// (bus.EnsureStreams): creating never changes an existing stream.
	for _, s := range []string{bus.EventsStream, bus.LogsStream, bus.LeaderBucketStream, artifact.BucketStream} {
		p.allowPub(jsAPI + "STREAM.CREATE." + s)
	}
	// Every role reads artifacts (an executor's inputs, the query API's
	// answers); only executors store them.
	artifactReads(p)
	// Reads of one message: an executor's fencing (last election), the
	// leader lease (every node reports the leader).
	p.allowPub(
		jsAPI+"STREAM.MSG.GET."+bus.EventsStream,
		jsAPI+"STREAM.MSG.GET."+bus.LeaderBucketStream,
		jsAPI+"DIRECT.GET."+bus.LeaderBucketStream,
		jsAPI+"DIRECT.GET."+bus.LeaderBucketStream+".>",
	)
	// The query API: every node answers on its own subjects, and what it
	// says of itself (PerNodeMethods) on the broadcast ones; only the
	// roles that answer the cluster's queries (AnswerRoles) serve the
	// queue group and every broadcast, so a node of another role — a
	// stolen executor credential — cannot stand between a client and the
	// ledger. Nodes are also clients of the read methods (a ledger
	// bootstrapped from a peer's).
	p.allowSub(apiPrefix + "at." + id + ".>")
	if Answers(roles) {
		for _, m := range append(slices.Clone(ReadMethods), AdminMethods...) {
			p.allowSub(apiPrefix + m)
		}
		p.allowSub(apiPrefix + "all.>")
	} else {
		for _, m := range PerNodeMethods {
			p.allowSub(apiPrefix + "all." + m)
		}
	}
	readQueries(p)

	ledger := false
	for _, r := range roles {
		switch r {
		case event.RoleExecutor:
			c := ExecutorConsumer(id)
			p.allowPub(
				jsAPI+"CONSUMER.CREATE."+bus.EventsStream+"."+c,
				jsAPI+"CONSUMER.CREATE."+bus.EventsStream+"."+c+".>",
				jsAPI+"CONSUMER.INFO."+bus.EventsStream+"."+c,
				jsAPI+"CONSUMER.DELETE."+bus.EventsStream+"."+c,
				jsAPI+"CONSUMER.MSG.NEXT."+bus.EventsStream+"."+c,
				"$JS.ACK."+bus.EventsStream+"."+c+".>",
				bus.LogSubjectPrefix+">",
			)
			// The plugin events, as they are published: they wake it to
			// read the plugins in force from a ledger node (their
			// content is not trusted).
			p.allowSub(event.SubjectPrefix + "plugin.*")
			artifactWrites(p)
		case event.RoleOrchestrator:
			p.allowPub("$KV." + bus.LeaderBucket + ".>")
			ledger = true
		case event.RoleUI:
			// The dashboard follows a step's output live: ordered
			// consumers on the logs stream, read only (no publish to
			// agentic.log.>, no message get, no consumer deletion).
			orderedConsumer(p, bus.LogsStream, bus.LogSubjectPrefix+">")
			ledger = true
		default:
			ledger = true
		}
	}
	if ledger {
		// Every role but a lone executor folds the ledger from an ordered
		// consumer on the events stream, watches the streams' advisories
		// (node/settings) and snapshots the streams and the artifact
		// bucket for a backup.
		orderedConsumer(p, bus.EventsStream, event.SubjectAll)
		for _, s := range []string{bus.EventsStream, bus.LogsStream, bus.LeaderBucketStream} {
			p.allowSub("$JS.EVENT.ADVISORY.STREAM.*." + s)
		}
		for _, s := range []string{bus.EventsStream, bus.LogsStream, artifact.BucketStream} {
			p.allowPub(jsAPI+"STREAM.SNAPSHOT."+s, "$JS.SNAPSHOT.ACK."+s+".>")
		}
	}
}

// operatorPerms are the permissions of an operator credential with roles.
func operatorPerms(p *perms, roles []string) {
	// Every operator role reads: queries, the events stream (an auditor's
	// consumer), step output (run logs).
	streamInfo(p)
	readQueries(p)
	orderedConsumer(p, bus.EventsStream, event.SubjectAll)
	orderedConsumer(p, bus.LogsStream, bus.LogSubjectPrefix+">")
	p.allowPub(jsAPI+"STREAM.MSG.GET."+bus.EventsStream, jsAPI+"STREAM.MSG.GET."+bus.LogsStream)
	// Every operator role reads artifacts (agentctl artifact get).
	artifactReads(p)
	// The events of the credential's roles: an operator's, and an
	// admin's (credential.revoked) for an admin; none for a viewer.
	eventPublishes(p, roles)
	if slices.Contains(roles, RoleAdmin) {
		for _, m := range AdminMethods {
			p.allowPub(apiPrefix+m, apiPrefix+"at.*."+m, apiPrefix+"all."+m)
		}
		// The stream and consumer API, named operation by operation: no
		// account-wide or server-wide JetStream subject.
		for _, op := range []string{"CREATE", "UPDATE", "DELETE", "PURGE", "INFO", "MSG.DELETE", "MSG.GET", "SNAPSHOT", "RESTORE"} {
			p.allowPub(jsAPI + "STREAM." + op + ".*")
		}
		p.allowPub(jsAPI+"STREAM.NAMES", jsAPI+"STREAM.LIST", jsAPI+"DIRECT.GET.>",
			"$JS.SNAPSHOT.>",
			jsAPI+"CONSUMER.>", "$JS.ACK.>", "$JS.FC.>")
	}
}
