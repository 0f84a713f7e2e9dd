package memory_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/memory"
)

// keys are the keys of a page's hits, in order.
func keys(r memory.SearchResult) []string {
	var out []string
	for _, h := range r.Hits {
		out = append(out, h.Fact.Key)
	}
	return out
}

// TestSearchOrder checks BM25's order on a small corpus: a fact holding
// both words beats one holding one; of those, the rarer word counts more;
// a shorter fact beats a longer with the same words; ties go by key.
func TestSearchOrder(t *testing.T) {
	h := &history{m: memory.New()}
	for _, f := range [][2]string{
		{"ops.reload", "nginx reload is safe after nginx -t"},
		{"ops.restart", "restart nginx only in the maintenance window, it drops connections and the reload would not"},
		{"web.server", "nginx 1.24 serves the site"},
		{"web.proxy", "nginx proxies the api"},
		{"db.hba", "postgres reload re-reads pg_hba.conf"},
		{"db.version", "postgres 16"},
		{"nothing", "unrelated fact"},
	} {
		h.fold("", event.MemoryPut, event.MemoryPutData{Scope: "shared", Key: f[0], Value: f[1]})
	}
	r := h.m.Search("nginx reload", t0, memory.SearchOptions{})
	want := []string{"ops.reload", "ops.restart", "db.hba", "web.proxy", "web.server"}
	if got := keys(r); fmt.Sprint(got) != fmt.Sprint(want) || r.Total != 5 || r.Next != 0 {
		t.Fatalf("search order = %v (total %d, next %d), want %v", got, r.Total, r.Next, want)
	}
	for i := 1; i < len(r.Hits); i++ {
		if r.Hits[i].Score > r.Hits[i-1].Score {
			t.Fatalf("scores not descending: %+v", r.Hits)
		}
	}
	// Paging walks the same order.
	var paged []string
	for off := 0; ; {
		p := h.m.Search("nginx reload", t0, memory.SearchOptions{Offset: off, Limit: 2})
		paged = append(paged, keys(p)...)
		if p.Next == 0 {
			break
		}
		off = p.Next
	}
	if fmt.Sprint(paged) != fmt.Sprint(want) {
		t.Fatalf("paged order = %v, want %v", paged, want)
	}
	if r := h.m.Search("  ", t0, memory.SearchOptions{}); r.Total != 0 || len(r.Hits) != 0 {
		t.Fatalf("empty query found %+v", r)
	}
	if r := h.m.Search("NGINX", t0, memory.SearchOptions{Scope: "run-1"}); r.Total != 0 {
		t.Fatalf("scope filter: %+v", r)
	}
}

// foldFacts folds n operator facts into m: every fact says "fact", one in
// ten says "nginx", one in a hundred "reload".
func foldFacts(m *memory.Memory, n int) {
	for i := range n {
		v := fmt.Sprintf("fact %d on host-%d", i, i%97)
		if i%10 == 0 {
			v += " nginx"
		}
		if i%100 == 0 {
			v += " reload"
		}
		e := ev(event.MemoryPut, t0, event.MemoryPutData{Scope: "shared", Key: fmt.Sprintf("k%06d", i), Value: v, Tags: []string{"bulk"}})
		e.Seq = uint64(i + 1)
		m.Fold(e)
	}
}

// TestSearchBoundedAt100kFacts: after 100,000 facts a search answers in
// pages of at most MaxSearchLimit hits, whatever the limit asked, and the
// pages cover the ranking without repeats up to MaxSearchOffset.
func TestSearchBoundedAt100kFacts(t *testing.T) {
	if testing.Short() {
		t.Skip("folds 100,000 facts")
	}
	m := memory.New()
	foldFacts(m, 100_000)
	start := time.Now()
	r := m.Search("nginx reload", t0, memory.SearchOptions{Limit: 1 << 20})
	took := time.Since(start)
	if len(r.Hits) != memory.MaxSearchLimit || r.Total != 10_000 || r.Next != memory.MaxSearchLimit {
		t.Fatalf("first page: %d hits, total %d, next %d; want %d hits of 10000", len(r.Hits), r.Total, r.Next, memory.MaxSearchLimit)
	}
	if r.Hits[0].Fact.Key != "k000000" || r.Hits[999/100].Fact.Value == "" {
		t.Fatalf("the facts with both words are not first: %v", keys(r)[:5])
	}
	for i, h := range r.Hits[:1000/100] {
		if want := fmt.Sprintf("k%06d", i*100); h.Fact.Key != want {
			t.Fatalf("hit %d = %s, want %s (both words, then by key)", i, h.Fact.Key, want)
		}
	}
	seen := map[string]bool{}
	pages := 0
	for off := 0; off != 0 || pages == 0; pages++ {
		p := m.Search("nginx reload", t0, memory.SearchOptions{Offset: off, Limit: memory.MaxSearchLimit})
		if len(p.Hits) > memory.MaxSearchLimit {
			t.Fatalf("page at %d holds %d hits", off, len(p.Hits))
		}
		for _, h := range p.Hits {
			if seen[h.Fact.Key] {
				t.Fatalf("page at %d repeats %s", off, h.Fact.Key)
			}
			seen[h.Fact.Key] = true
		}
		off = p.Next
	}
	if len(seen) != memory.MaxSearchOffset {
		t.Fatalf("paging reached %d hits, want the first %d", len(seen), memory.MaxSearchOffset)
	}
	t.Logf("100k facts: first page in %s, %d pages", took, pages)
}

// BenchmarkSearch100k measures a search at the query API's level (the
// memory role's Search) over 100,000 facts, and reports its p99.
func BenchmarkSearch100k(b *testing.B) {
	m := memory.New()
	foldFacts(m, 100_000)
	queries := []string{"nginx reload", "host 42", "fact", "reload", "absent words"}
	var lat []time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		s := time.Now()
		m.Search(queries[i%len(queries)], t0, memory.SearchOptions{Limit: memory.DefaultSearchLimit})
		lat = append(lat, time.Since(s))
	}
	reportP99(b, lat)
}

// reportP99 reports the 99th percentile of lat in milliseconds.
func reportP99(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

// TestSearchAfterRewritesEqualsFreshIndex: facts written again and
// again leave dead postings behind until a compaction; a search must rank
// exactly as an index built from the live facts alone (Restore's).
func TestSearchAfterRewritesEqualsFreshIndex(t *testing.T) {
	m := memory.New()
	for i := range 3000 {
		v := "nginx"
		if i%3 == 0 {
			v = "nginx reload"
		}
		e := ev(event.MemoryPut, t0, event.MemoryPutData{Key: fmt.Sprintf("k%d", i%700), Value: fmt.Sprintf("%s %d", v, i)})
		e.Seq = uint64(i + 1)
		m.Fold(e)
	}
	_, data, err := m.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	fresh := memory.New()
	if err := fresh.Restore(data); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"nginx reload", "reload", "nginx 2999"} {
		got := m.Search(q, t0, memory.SearchOptions{Limit: 50})
		want := fresh.Search(q, t0, memory.SearchOptions{Limit: 50})
		if fmt.Sprintf("%v", got) != fmt.Sprintf("%v", want) {
			t.Fatalf("search %q after rewrites:\n got %v\nwant %v", q, got, want)
		}
	}
}
