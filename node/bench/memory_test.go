package bench

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/nodetest"
	"github.com/nats-io/nats.go/jetstream"
)

// memoryFacts and memoryNotes are how many facts and research notes
// BenchmarkMemorySearch100k folds.
const (
	memoryFacts = 100_000
	memoryNotes = 10_000
)

// BenchmarkMemorySearch100k measures memory.search at the query API (the
// signed request and answer over NATS, in-process client) on a node that
// folded 100,000 facts and 10,000 research notes (kb.noted): every fact
// says "fact", one in ten "nginx", one in a hundred "reload"; every note
// "port", one in ten "nginx" too. The notes' run is one the node does
// not know, so they are quarantined, and the queries ask for quarantined
// hits too: every fact and note is a candidate. Figures: search-p50-ms
// and search-p99-ms over queryRounds rounds of six queries (target p99 ≤
// 20 ms), fold-s the time the node took to serve every fact and note.
func BenchmarkMemorySearch100k(b *testing.B) {
	for b.Loop() {
		bn := startNode(b, 1)
		root, err := trust.LoadRoot(bn.Dir)
		if err != nil {
			b.Fatal(err)
		}
		w, err := nodetest.NewHistoryWriter(root)
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		start := time.Now()
		if _, err := w.PublishFacts(ctx, bn.js, memoryFacts, func(i int) string {
			v := fmt.Sprintf("fact %d on host-%d", i, i%97)
			if i%10 == 0 {
				v += " nginx"
			}
			if i%100 == 0 {
				v += " reload"
			}
			return v
		}); err != nil {
			b.Fatal(err)
		}
		// The notes are a planner's events: the test harness's
		// connection publishes them (the operator's may not).
		hjs, err := jetstream.New(bn.nc)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := w.PublishNotes(ctx, hjs, event.NewID(), memoryNotes, func(i int) string {
			v := fmt.Sprintf("the service %d listens on port %d", i, 8000+i%500)
			if i%10 == 0 {
				v += " behind nginx"
			}
			return v
		}); err != nil {
			b.Fatal(err)
		}
		if err := poll.Wait(5*time.Minute, func() bool {
			p, err := bn.api.MemorySearch(ctx, api.MemorySearchRequest{Query: "fact"})
			n, nerr := bn.api.MemorySearch(ctx, api.MemorySearchRequest{Query: "port", Quarantined: true})
			return err == nil && p.Total == memoryFacts && nerr == nil && n.Total == memoryNotes
		}); err != nil {
			b.Fatal("the node did not fold the facts and notes in 5 minutes")
		}
		b.ReportMetric(time.Since(start).Seconds(), "fold-s")
		queries := []string{"nginx reload", "host 42", "fact", "reload", "absent words", "port 8443 nginx"}
		var lat []time.Duration
		byQuery := make([][]time.Duration, len(queries))
		for i := range queryRounds * len(queries) {
			s := time.Now()
			p, err := bn.api.MemorySearch(ctx, api.MemorySearchRequest{Query: queries[i%len(queries)], Quarantined: true})
			lat = append(lat, time.Since(s))
			byQuery[i%len(queries)] = append(byQuery[i%len(queries)], time.Since(s))
			if err != nil || len(p.Items) > api.DefaultSearchPage {
				b.Fatalf("search %q: %d hits, %v", queries[i%len(queries)], len(p.Items), err)
			}
		}
		slices.Sort(lat)
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		b.ReportMetric(ms(lat[len(lat)/2]), "search-p50-ms")
		b.ReportMetric(ms(lat[len(lat)*99/100]), "search-p99-ms")
		for i, q := range queries {
			l := byQuery[i]
			slices.Sort(l)
			b.Logf("query %q: p50 %.2f ms, p99 %.2f ms", q, ms(l[len(l)/2]), ms(l[len(l)*99/100]))
		}
	}
}
