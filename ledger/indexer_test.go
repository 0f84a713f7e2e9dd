package ledger_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/ledger/ledgertest"
	"github.com/cockroachdb/pebble/v2"
)

// typeCounter is a test Indexer: in memory it counts records per type; on
// disk it writes the count per type ("n/<type>") and one entry per record
// ("r/<seq>" → type), so the index both depends on its in-memory state and
// can be checked entry by entry.
type typeCounter struct {
	version  uint32
	counts   map[string]uint64
	written  int // Index calls with writes
	replayed int // Index calls with writes discarded
	failAt   uint64
	commits  []error
}

func newTypeCounter() *typeCounter { return &typeCounter{version: 1, counts: map[string]uint64{}} }

func (c *typeCounter) Name() string    { return "types" }
func (c *typeCounter) Version() uint32 { return c.version }

func (c *typeCounter) Index(w *ledger.IndexWriter, rec ledger.IndexRecord) error {
	if c.failAt != 0 && rec.Event.Seq == c.failAt {
		return errors.New("indexer refuses")
	}
	if w.Discard() {
		c.replayed++
	} else {
		c.written++
	}
	t := string(rec.Event.Type)
	c.counts[t]++
	if rec.StreamTime.IsZero() {
		return fmt.Errorf("record %d has no stream time", rec.Event.Seq)
	}
	if err := w.Set([]byte("n/"+t), binary.BigEndian.AppendUint64(nil, c.counts[t])); err != nil {
		return err
	}
	return w.Set(binary.BigEndian.AppendUint64([]byte("r/"), rec.Event.Seq), []byte(t))
}

func (c *typeCounter) Committed(err error) { c.commits = append(c.commits, err) }

func (c *typeCounter) Snapshot() ([]byte, error) { return json.Marshal(c.counts) }

func (c *typeCounter) Restore(data []byte) error {
	c.counts = map[string]uint64{}
	if data == nil {
		return nil
	}
	return json.Unmarshal(data, &c.counts)
}

func attach(t *testing.T, st *ledger.Store, ix ledger.Indexer) {
	t.Helper()
	if err := st.AttachIndexer(ix); err != nil {
		t.Fatalf("AttachIndexer: %v", err)
	}
}

// indexEntries reads the whole index.
func indexEntries(t *testing.T, st *ledger.Store, name string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for e, err := range st.IndexScan(name, nil, nil, false) {
		if err != nil {
			t.Fatal(err)
		}
		out[string(e.Key)] = string(e.Value)
	}
	return out
}

// appendRuns appends n messages of two events each (goal.submitted and
// memory.put of a fresh run), from stream seq from on.
func appendRuns(t *testing.T, st *ledger.Store, kit *ledgertest.Kit, from uint64, n int) {
	t.Helper()
	for i := range n {
		run := fmt.Sprintf("run-%d", from+uint64(i))
		mustAppend(t, st,
			kit.Message(from+uint64(2*i), kit.Operator, event.MustDraft(event.GoalSubmitted, run, event.GoalSubmittedData{Goal: "g"})),
			kit.Message(from+uint64(2*i)+1, kit.Operator, event.MustDraft(event.MemoryPut, run, event.MemoryPutData{Scope: "shared", Key: "k", Value: "v"})))
	}
}

func TestIndexerWritesWithRecordsAndRestoresFromSnapshot(t *testing.T) {
	dir := t.TempDir()
	kit := ledgertest.NewKit(t)
	st := ledgertest.OpenDir(t, dir)
	ix := newTypeCounter()
	attach(t, st, ix)
	appendRuns(t, st, kit, 1, 3)
	got := indexEntries(t, st, "types")
	if len(got) != 6+2 || got["r/"+string(binary.BigEndian.AppendUint64(nil, 6))] != string(event.MemoryPut) {
		t.Fatalf("index after 6 records = %q", got)
	}
	if ix.written != 6 || len(ix.commits) != 3 {
		t.Fatalf("written %d commits %v, want 6 and 3", ix.written, ix.commits)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	// A clean restart restores the state from the snapshot Close saved:
	// nothing is replayed, nothing rebuilt.
	st = ledgertest.OpenDir(t, dir)
	ix2 := newTypeCounter()
	attach(t, st, ix2)
	if ix2.written != 0 || ix2.replayed != 0 || !maps.Equal(ix2.counts, ix.counts) {
		t.Fatalf("restart: written %d replayed %d counts %v, want 0 0 %v", ix2.written, ix2.replayed, ix2.counts, ix.counts)
	}
	appendRuns(t, st, kit, 7, 1)
	if ix2.counts[string(event.GoalSubmitted)] != 4 {
		t.Fatalf("counts after restart = %v", ix2.counts)
	}
}

func TestIndexerCatchesUpAndRebuilds(t *testing.T) {
	dir := t.TempDir()
	kit := ledgertest.NewKit(t)
	st := ledgertest.OpenDir(t, dir)
	attach(t, st, newTypeCounter())
	appendRuns(t, st, kit, 1, 2)
	st.Close()

	// A node version without the index appends two more records.
	st = ledgertest.OpenDir(t, dir)
	appendRuns(t, st, kit, 5, 1)
	st.Close()

	st = ledgertest.OpenDir(t, dir)
	ix := newTypeCounter()
	attach(t, st, ix)
	if ix.written != 2 || ix.replayed != 0 {
		t.Errorf("catch-up wrote %d and replayed %d records, want 2 and 0", ix.written, ix.replayed)
	}
	want := indexEntries(t, st, "types")
	if len(want) != 6+2 {
		t.Fatalf("index after catch-up = %q", want)
	}
	st.Close()

	// A new layout version rebuilds from position 1.
	st = ledgertest.OpenDir(t, dir)
	ix = newTypeCounter()
	ix.version = 2
	attach(t, st, ix)
	if ix.written != 6 {
		t.Errorf("rebuild wrote %d records, want 6", ix.written)
	}
	if got := indexEntries(t, st, "types"); !maps.Equal(got, want) {
		t.Errorf("rebuilt index = %q, want %q", got, want)
	}
	st.Close()

	// A damaged snapshot is detected and the index rebuilt, not trusted.
	db, err := pebble.Open(dir, &pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	key := []byte("meta/index-snap/types")
	v, closer, err := db.Get(key)
	if err != nil {
		t.Fatal(err)
	}
	bad := append([]byte(nil), v...)
	closer.Close()
	bad[len(bad)-2] ^= 0xff
	if err := db.Set(key, bad, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	db.Close()
	st = ledgertest.OpenDir(t, dir)
	ix = newTypeCounter()
	ix.version = 2
	attach(t, st, ix)
	if ix.written != 6 || ix.counts[string(event.GoalSubmitted)] != 3 {
		t.Errorf("after a damaged snapshot: wrote %d, counts %v; want a rebuild of 6", ix.written, ix.counts)
	}
	if got := indexEntries(t, st, "types"); !maps.Equal(got, want) {
		t.Errorf("index after damaged snapshot = %q, want %q", got, want)
	}
}

func TestIndexerFailureCommitsNothing(t *testing.T) {
	kit := ledgertest.NewKit(t)
	st := ledgertest.Open(t)
	ix := newTypeCounter()
	attach(t, st, ix)
	appendRuns(t, st, kit, 1, 1)
	ix.failAt = 3
	m := kit.Message(3, kit.Operator, event.MustDraft(event.GoalSubmitted, "r-x", event.GoalSubmittedData{Goal: "g"}))
	if _, err := st.Append([]ledger.Message{m}); err == nil {
		t.Fatal("Append with a failing indexer succeeded")
	}
	if seq, _ := st.Head(); seq != 2 {
		t.Errorf("head after a refused Append = %d, want 2", seq)
	}
	if last := ix.commits[len(ix.commits)-1]; last == nil {
		t.Error("indexer was not told the batch failed")
	}
	// The indexer's memory may be past the head: nothing more is appended.
	if _, err := st.Append([]ledger.Message{kit.Message(4, kit.Operator, event.MustDraft(event.GoalSubmitted, "r-y", event.GoalSubmittedData{Goal: "g"}))}); err == nil {
		t.Error("Append after a failed index stage succeeded")
	}
}

func TestSecondGoalForARunIsRejected(t *testing.T) {
	dir := t.TempDir()
	kit := ledgertest.NewKit(t)
	st := ledgertest.OpenDir(t, dir)
	goal := func(seq uint64) ledger.Message {
		return kit.Message(seq, kit.Operator, event.MustDraft(event.GoalSubmitted, "run-1", event.GoalSubmittedData{Goal: "g"}))
	}
	// Twice in one Append, and again after a restart.
	recs := mustAppend(t, st, goal(1), goal(2))
	if len(recs) != 2 || recs[0].Type != event.GoalSubmitted {
		t.Fatalf("records = %+v", recs)
	}
	if d := rejectedData(t, recs[1]); d.ClaimedType != string(event.GoalSubmitted) || d.Reason == "" {
		t.Errorf("second goal: %+v", d)
	}
	st.Close()
	st = ledgertest.OpenDir(t, dir)
	recs = mustAppend(t, st, goal(3))
	rejectedData(t, recs[0])

	// The rule survives an export and import.
	var buf bytes.Buffer
	if err := st.Export(&buf); err != nil {
		t.Fatal(err)
	}
	im, err := ledger.Import(filepath.Join(t.TempDir(), "imported"), &buf, ledger.Options{Logger: ledgertest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	recs = mustAppend(t, im, goal(4))
	rejectedData(t, recs[0])
}

func TestDamagedSnapshotIsCorrupt(t *testing.T) {
	dir := t.TempDir()
	kit := ledgertest.NewKit(t)
	st := ledgertest.OpenDir(t, dir)
	mustAppend(t, st, kit.Message(1, kit.Node, started("r", 2)...))
	if err := st.SaveSnapshot("orchestrator", 2, []byte(`{"state":1}`)); err != nil {
		t.Fatal(err)
	}
	st.Close()
	db, err := pebble.Open(dir, &pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	v, closer, err := db.Get([]byte("s/orchestrator"))
	if err != nil {
		t.Fatal(err)
	}
	bad := append([]byte(nil), v...)
	closer.Close()
	bad[len(bad)-1] = '2'
	if err := db.Set([]byte("s/orchestrator"), bad, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	db.Close()
	st = ledgertest.OpenDir(t, dir)
	if _, _, err := st.LoadSnapshot("orchestrator"); !errors.Is(err, ledger.ErrCorrupt) {
		t.Errorf("LoadSnapshot of a damaged snapshot = %v, want ErrCorrupt", err)
	}
}

// batchCounter is a typeCounter that is a BatchIndexer: Flush writes
// "b/<n>" → the positions indexed with writes since the previous Flush.
type batchCounter struct {
	*typeCounter
	pending  []uint64
	flushes  int // Flush calls with writes
	discards int // Flush calls with writes discarded
}

func (c *batchCounter) Index(w *ledger.IndexWriter, rec ledger.IndexRecord) error {
	if err := c.typeCounter.Index(w, rec); err != nil {
		return err
	}
	if !w.Discard() {
		c.pending = append(c.pending, rec.Event.Seq)
	}
	return nil
}

func (c *batchCounter) Flush(w *ledger.IndexWriter) error {
	if w.Discard() {
		c.discards++
		return nil
	}
	c.flushes++
	v := fmt.Sprint(c.pending)
	c.pending = nil
	return w.Set([]byte(fmt.Sprintf("b/%d", c.flushes)), []byte(v))
}

func TestBatchIndexerFlushesOncePerBatch(t *testing.T) {
	dir := t.TempDir()
	kit := ledgertest.NewKit(t)
	st := ledgertest.OpenDir(t, dir)
	ix := &batchCounter{typeCounter: newTypeCounter()}
	attach(t, st, ix)
	appendRuns(t, st, kit, 1, 2) // two Appends of 2 records
	got := indexEntries(t, st, "types")
	if ix.flushes != 2 || got["b/1"] != "[1 2]" || got["b/2"] != "[3 4]" {
		t.Fatalf("after two Appends: %d flushes, entries %q", ix.flushes, got)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	snapAt4 := pebbleGet(t, dir, "meta/index-snap/types")

	// A rebuild (new layout version) writes what it indexes in one batch
	// here, flushed once.
	st = ledgertest.OpenDir(t, dir)
	ix = &batchCounter{typeCounter: newTypeCounter()}
	ix.version = 2
	attach(t, st, ix)
	if got := indexEntries(t, st, "types"); ix.flushes != 1 || ix.discards != 0 || got["b/1"] != "[1 2 3 4]" || got["b/2"] != "" {
		t.Fatalf("rebuild: %d flushes, %d discarded, entries %q", ix.flushes, ix.discards, got)
	}
	appendRuns(t, st, kit, 5, 1)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	// A snapshot behind the index (a crash between snapshots): the
	// records after it are replayed with writes discarded, then flushed
	// with a discarding writer; nothing is written.
	pebbleSet(t, dir, "meta/index-snap/types", snapAt4)
	st = ledgertest.OpenDir(t, dir)
	ix = &batchCounter{typeCounter: newTypeCounter()}
	ix.version = 2
	attach(t, st, ix)
	if ix.replayed != 2 || ix.written != 0 || ix.discards != 1 || ix.flushes != 0 || len(ix.pending) != 0 {
		t.Fatalf("replay: replayed %d written %d, %d discarding and %d writing flushes", ix.replayed, ix.written, ix.discards, ix.flushes)
	}
}

// pebbleGet reads key from the closed store in dir.
func pebbleGet(t *testing.T, dir, key string) []byte {
	t.Helper()
	db, err := pebble.Open(dir, &pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	v, closer, err := db.Get([]byte(key))
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	return append([]byte(nil), v...)
}

// pebbleSet writes key = v into the closed store in dir.
func pebbleSet(t *testing.T, dir, key string, v []byte) {
	t.Helper()
	db, err := pebble.Open(dir, &pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Set([]byte(key), v, pebble.Sync); err != nil {
		t.Fatal(err)
	}
}

// heldCommit is a typeCounter whose Committed waits for release after
// telling committed: it holds an Append between its commit and its end.
type heldCommit struct {
	*typeCounter
	committed chan struct{}
	release   chan struct{}
}

func (c *heldCommit) Committed(err error) {
	c.typeCounter.Committed(err)
	c.committed <- struct{}{}
	<-c.release
}

// Read your writes: once an index shows a record (it reads what Pebble
// committed), Head and an export include it, even while the Append that
// committed it is still telling its indexers.
func TestHeadIncludesWhatIndexesShow(t *testing.T) {
	kit := ledgertest.NewKit(t)
	st := ledgertest.Open(t)
	ix := &heldCommit{typeCounter: newTypeCounter(), committed: make(chan struct{}), release: make(chan struct{})}
	attach(t, st, ix)
	done := make(chan error, 1)
	go func() {
		_, err := st.Append([]ledger.Message{kit.Message(1, kit.Operator, event.MustDraft(event.GoalSubmitted, "run-1", event.GoalSubmittedData{Goal: "g"}))})
		done <- err
	}()
	<-ix.committed
	if _, err := st.IndexGet("types", binary.BigEndian.AppendUint64([]byte("r/"), 1)); err != nil {
		t.Fatalf("index entry of record 1 after its commit: %v", err)
	}
	if seq, _ := st.Head(); seq != 1 {
		t.Errorf("the index shows record 1 but Head is %d", seq)
	}
	n := 0
	for _, err := range st.ExportLines(1) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 1 {
		t.Errorf("the index shows record 1 but an export has %d records", n)
	}
	close(ix.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if seq, _ := st.Head(); seq != 1 {
		t.Errorf("Head after the Append = %d, want 1", seq)
	}
}
