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
//     each request however many nodes serve it.
//  3. A Server runs at most MaxConcurrent handlers at once, each in its own
//     goroutine, so a long-polling audit does not hold up other requests;
//     Stop unsubscribes, cancels the handlers' context and waits for them.
//  4. A Client turns "no responders" into NoResponderError, which says that
//     no agentd answers and how to start one, and a Reply error into
//     RemoteError, which unwraps to ErrNotFound / ErrAmbiguous /
//     ErrBadRequest by its Code.
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
//
// Listings answer a Page (runs.list, runs.steps, audit, ledger.export):
// a node builds it with a Pager, which cuts it by count and by encoded
// size; a client follows Next until End (RunsListAll, RunsGet).
package api
