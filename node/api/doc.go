// Package api is the query protocol between agentctl (or any client) and the
// nodes: JSON request/reply over core NATS on subjects agentic.api.<method>,
// answered by one node of the queue group agentic-api. Writes do not go
// through here: clients publish signed events to the bus; this API only
// reads.
//
// Invariants:
//
//  1. Every answer is a Reply: Data on success; Error (plus an optional
//     Hint for the user and a Code for programs) on failure. The JSON
//     shapes of the request and answer types are only ever extended.
//  2. A Server answers each method in the queue group, so one node answers
//     each request however many nodes serve it. It also answers each method
//     on NodeSubject(node, method), alone (Client.At: every page of a
//     listing from one node), and a method marked with Broadcast on
//     AllSubject(method), where every node serving it answers (Gather
//     collects the answers that come within a wait).
//  3. A Server runs at most MaxConcurrent handlers at once, each in its own
//     goroutine, holding further requests back on the subscription; apart
//     from them it holds up to MaxLongPolls long-polls (requests of a
//     LongPoller type that may wait, like an audit with Wait) and answers
//     one beyond that ErrBusy at once, so followers never starve other
//     queries. Stop unsubscribes, cancels the handlers' context and waits
//     for them.
//  4. No answer exceeds the connection's max payload: a listing answers a
//     Page built by a Pager (cut by count and by encoded size, under
//     MaxPayload(ctx)), and an answer that would still be too large is
//     replaced by an ErrTooLarge error. A handler's failure always reaches
//     the caller as an error with a hint; a client timeout means only that
//     no answer came in time.
//  5. Only Page.End ends a listing; a client follows Next (Walk) and never
//     takes a short page for the end. An item too large for any page comes
//     without its signed message, which the Client fetches
//     (MethodLedgerMessage) and puts back before the caller sees the item.
//  6. A Client turns "no responders" into NoResponderError, which says that
//     no agentd answers and how to start one, and a Reply error into
//     RemoteError, which unwraps to ErrNotFound / ErrAmbiguous /
//     ErrBadRequest / ErrTooLarge / ErrBusy by its Code.
//
// Serving, on a node:
//
//	srv := api.NewServer(nc, "node-a", logger)
//	api.HandleTyped(srv, api.MethodMemoryGet, func(ctx context.Context, req api.MemoryGetRequest) (*api.Fact, error) {
//		f, ok := facts[req.Scope+"/"+req.Key]
//		if !ok {
//			return nil, api.WithHint(fmt.Errorf("%w: %s/%s", api.ErrNotFound, req.Scope, req.Key), "list facts with: agentctl memory ls")
//		}
//		return f, nil
//	})
//	if err := srv.Start(); err != nil { ... }
//	defer srv.Stop()
//
// Asking, from a client:
//
//	c := api.NewClient(nc, 5*time.Second)
//	run, err := c.RunsGet(ctx, "0190a3") // the summary, then every page of steps
//	if errors.Is(err, api.ErrNotFound) { ... }
//	fmt.Println(err, api.HintOf(err))
//	for line, err := range c.AuditLines(ctx, api.AuditRequest{Run: "0190a3"}) {
//		if err != nil { ... }
//		fmt.Println(line.Seq, line.Type) // every line, across pages, to the end
//	}
package api
