package memory

import (
	"cmp"
	"container/heap"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
)

// The search index is an inverted index over the facts, kept in memory
// beside them and ranked by BM25 (Robertson and Zaragoza's Okapi BM25, the
// ranking Lucene uses by default): a fact is a document made of
// its key, its value and its tags. It is folded with the facts (put adds
// or replaces a document, a drop or a prune removes it), so it is bounded
// by the live facts, and rebuilt from the facts on Restore: the ledger is
// its source, like every projection's.

// BM25 parameters: Lucene's defaults.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// Bounds of the index.
const (
	// maxTermLen: longer words are not indexed (hashes, base64).
	maxTermLen = 64
	// maxDocTerms bounds the distinct words indexed per fact.
	maxDocTerms = 2048
	// maxQueryTerms bounds the words of a query.
	maxQueryTerms = 16
)

// docKey names a fact.
type docKey struct{ scope, key string }

// doc is one indexed fact: what a search filters on, so that it never
// looks a candidate up among the facts.
type doc struct {
	docKey
	// length is its number of terms (with repeats).
	length int32
	// live is cleared when the fact is replaced or removed: its postings
	// stay until the next compaction and are skipped.
	live        bool
	quarantined bool
	// expires is the fact's expiry in Unix nanoseconds; 0 never.
	expires int64
}

// posting is one fact's entry under a term.
type posting struct {
	id int32
	tf uint16
}

// index is the inverted index. Its owner (Memory) guards it with its
// lock. A replaced or removed fact's document is marked dead, not taken
// out of the postings; when the dead outnumber the live (and are more
// than minCompact), compact rebuilds the postings of the live ones, so
// the work of removals is amortized and the index stays within twice the
// live facts.
type index struct {
	ids      map[docKey]int32
	docs     []doc
	postings map[string][]posting
	totalLen int
	dead     int
}

// minCompact is the number of dead documents below which the index is
// not compacted.
const minCompact = 1024

func newIndex() *index {
	return &index{ids: map[docKey]int32{}, postings: map[string][]posting{}}
}

// tokens splits text into lower-case words of letters and digits.
func tokens(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// termsOf are a fact's terms with their frequencies, and its length.
func termsOf(f Fact) (map[string]uint16, int) {
	tf := map[string]uint16{}
	n := 0
	add := func(text string) {
		for _, t := range tokens(text) {
			if len(t) > maxTermLen {
				continue
			}
			if _, ok := tf[t]; !ok && len(tf) >= maxDocTerms {
				continue
			}
			if tf[t] < math.MaxUint16 {
				tf[t]++
			}
			n++
		}
	}
	add(f.Key)
	add(f.Value)
	for _, t := range f.Tags {
		add(t)
	}
	add(noteText(f.Note)) // notes.go: a note's question and quotes
	return tf, n
}

// add indexes f, replacing the document of its scope and key.
func (x *index) add(f Fact) {
	k := docKey{f.Scope, f.Key}
	x.kill(k)
	tf, n := termsOf(f)
	id := int32(len(x.docs))
	d := doc{docKey: k, length: int32(n), live: true, quarantined: f.Quarantined}
	if !f.ExpiresAt.IsZero() {
		d.expires = f.ExpiresAt.UnixNano()
	}
	x.docs = append(x.docs, d)
	for t, c := range tf {
		x.postings[t] = append(x.postings[t], posting{id: id, tf: c})
	}
	x.ids[k] = id
	x.totalLen += n
	x.maybeCompact()
}

// remove drops the document of scope and key, if there is one.
func (x *index) remove(scope, key string) {
	x.kill(docKey{scope, key})
	x.maybeCompact()
}

// kill marks the document of k dead.
func (x *index) kill(k docKey) {
	id, ok := x.ids[k]
	if !ok {
		return
	}
	x.docs[id].live = false
	x.totalLen -= int(x.docs[id].length)
	x.dead++
	delete(x.ids, k)
}

// maybeCompact compacts when the dead outnumber the live.
func (x *index) maybeCompact() {
	if x.dead < minCompact || x.dead <= len(x.ids) {
		return
	}
	remap := make([]int32, len(x.docs))
	docs := make([]doc, 0, len(x.ids))
	for id, d := range x.docs {
		remap[id] = -1
		if d.live {
			remap[id] = int32(len(docs))
			x.ids[d.docKey] = int32(len(docs))
			docs = append(docs, d)
		}
	}
	for t, ps := range x.postings {
		out := ps[:0]
		for _, p := range ps {
			if id := remap[p.id]; id >= 0 {
				out = append(out, posting{id: id, tf: p.tf})
			}
		}
		if len(out) == 0 {
			delete(x.postings, t)
			continue
		}
		x.postings[t] = slices.Clip(out)
	}
	x.docs, x.dead = docs, 0
}

// size is the number of live documents.
func (x *index) size() int { return len(x.ids) }

// Hit is one search result: a fact and its BM25 score.
type Hit struct {
	Fact  Fact
	Score float64
}

// SearchOptions bound and filter a search.
type SearchOptions struct {
	// Scope, when set, keeps the facts of that scope only.
	Scope string
	// Quarantined includes quarantined facts (what operators may see);
	// plans and prompts never set it.
	Quarantined bool
	// Offset skips that many hits (paging), at most MaxSearchOffset.
	Offset int
	// Limit is the page size: DefaultSearchLimit when <= 0, at most
	// MaxSearchLimit.
	Limit int
}

// Search paging bounds.
const (
	DefaultSearchLimit = 20
	MaxSearchLimit     = 100
	MaxSearchOffset    = 10000
)

// SearchResult is one page of hits.
type SearchResult struct {
	Hits []Hit
	// Total counts the matching facts (up to the filters).
	Total int
	// Next is the offset of the next page; 0 when there is none.
	Next int
}

// scored is a candidate during a search.
type scored struct {
	id    int32
	score float64
	key   docKey
}

// worse orders candidates from the worst: lower score, then later key.
func worse(a, b scored) bool {
	if a.score != b.score {
		return a.score < b.score
	}
	return cmp.Or(cmp.Compare(a.key.scope, b.key.scope), cmp.Compare(a.key.key, b.key.key)) > 0
}

// topHeap is a min-heap of the best candidates seen (the worst on top).
type topHeap []scored

func (h topHeap) Len() int           { return len(h) }
func (h topHeap) Less(i, j int) bool { return worse(h[i], h[j]) }
func (h topHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *topHeap) Push(v any)        { *h = append(*h, v.(scored)) }
func (h *topHeap) Pop() any {
	old := *h
	v := old[len(old)-1]
	*h = old[:len(old)-1]
	return v
}

// Search ranks the live facts that hold any word of query by BM25, best
// first (ties by scope and key), and returns the page opts asks for. A
// quarantined fact is left out unless opts.Quarantined; an expired one
// always is. Time and memory are bounded by the postings of the query's
// words and the page's end (Offset + Limit), never by a reply's size.
func (m *Memory) Search(query string, now time.Time, opts SearchOptions) SearchResult {
	limit := opts.Limit
	if limit <= 0 {
		limit = DefaultSearchLimit
	}
	limit = min(limit, MaxSearchLimit)
	offset := min(max(opts.Offset, 0), MaxSearchOffset)
	terms := queryTerms(query)
	m.mu.RLock()
	defer m.mu.RUnlock()
	x := m.mu.index
	n := float64(x.size())
	if n == 0 || len(terms) == 0 {
		return SearchResult{}
	}
	avg := float64(x.totalLen) / n
	buf := scoresPool.Get().(*scoreBuf)
	defer scoresPool.Put(buf)
	if cap(buf.scores) < len(x.docs) {
		buf.scores = make([]float64, len(x.docs))
	}
	scores := buf.scores[:len(x.docs)]
	touched := buf.touched[:0]
	for _, t := range terms {
		ps := x.postings[t]
		if len(ps) == 0 {
			continue
		}
		live := 0
		for _, p := range ps {
			if x.docs[p.id].live {
				live++
			}
		}
		if live == 0 {
			continue
		}
		df := float64(live) // dead postings wait for a compaction: never count them
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		for _, p := range ps {
			d := &x.docs[p.id]
			if !d.live {
				continue
			}
			if scores[p.id] == 0 {
				touched = append(touched, p.id)
			}
			f := float64(p.tf)
			scores[p.id] += idf * f * (bm25K1 + 1) / (f + bm25K1*(1-bm25B+bm25B*float64(d.length)/avg))
		}
	}
	keep := offset + limit
	top := make(topHeap, 0, min(keep, len(touched)))
	total := 0
	nowNano := now.UnixNano()
	for _, id := range touched {
		s := scores[id]
		scores[id] = 0
		d := &x.docs[id]
		if (opts.Scope != "" && d.scope != opts.Scope) || (d.expires != 0 && nowNano >= d.expires) || (d.quarantined && !opts.Quarantined) {
			continue
		}
		total++
		c := scored{id: id, score: s, key: d.docKey}
		if len(top) < keep {
			heap.Push(&top, c)
		} else if worse(top[0], c) {
			top[0] = c
			heap.Fix(&top, 0)
		}
	}
	buf.touched = touched[:0]
	ordered := make([]scored, len(top))
	for i := len(top) - 1; i >= 0; i-- {
		ordered[i] = heap.Pop(&top).(scored)
	}
	res := SearchResult{Total: total}
	if offset < len(ordered) {
		for _, c := range ordered[offset:] {
			res.Hits = append(res.Hits, Hit{Fact: m.mu.facts[c.key.scope][c.key.key], Score: c.score})
		}
	}
	if offset+len(res.Hits) < total && offset+limit <= MaxSearchOffset {
		res.Next = offset + limit
	}
	return res
}

// scoreBuf is a search's scratch space: a score per document and the
// documents scored, reused between searches.
type scoreBuf struct {
	scores  []float64
	touched []int32
}

var scoresPool = sync.Pool{New: func() any { return new(scoreBuf) }}

// queryTerms are the distinct words of a query, at most maxQueryTerms.
func queryTerms(q string) []string {
	var out []string
	seen := map[string]bool{}
	for _, t := range tokens(q) {
		if len(t) > maxTermLen || seen[t] {
			continue
		}
		seen[t] = true
		out = append(out, t)
		if len(out) == maxQueryTerms {
			break
		}
	}
	return out
}
