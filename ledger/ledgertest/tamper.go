package ledgertest

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/internal/pebblelog"
	"github.com/cockroachdb/pebble/v2"
)

// openRaw opens the Pebble store of a closed ledger in dir directly.
func openRaw(t testing.TB, dir string) *pebble.DB {
	t.Helper()
	db, err := pebble.Open(dir, &pebble.Options{FormatMajorVersion: pebblelog.FormatMajorVersion, Logger: pebblelog.New(Logger(t))})
	if err != nil {
		t.Fatalf("ledgertest: open %s raw: %v", dir, err)
	}
	return db
}

// RewriteRecord rewrites the bytes of record seq of the closed ledger in
// dir behind the ledger's back, as a disk or a person with access to the
// files would: edit changes the decoded record, which is stored again
// without touching its chain hash or anything else.
func RewriteRecord(t testing.TB, dir string, seq uint64, edit func(ev *event.Event)) {
	t.Helper()
	db := openRaw(t, dir)
	defer db.Close()
	key := binary.BigEndian.AppendUint64([]byte("e/"), seq)
	v, closer, err := db.Get(key)
	if err != nil {
		t.Fatalf("ledgertest: record %d: %v", seq, err)
	}
	var ev event.Event
	err = json.Unmarshal(v, &ev)
	closer.Close()
	if err != nil {
		t.Fatalf("ledgertest: record %d: %v", seq, err)
	}
	edit(&ev)
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Set(key, b, pebble.Sync); err != nil {
		t.Fatalf("ledgertest: rewrite record %d: %v", seq, err)
	}
}

// CorruptTable flushes the closed ledger in dir into its tables, then
// flips one byte of its largest table (.sst), as a failing disk would, at
// the fraction at of its length (keys sort e/ records, h/ hashes, j/ ids,
// m/ messages, ...: 0.1 is among the first records). It returns the
// table's path.
func CorruptTable(t testing.TB, dir string, at float64) string {
	t.Helper()
	db := openRaw(t, dir)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var path string
	var size int64
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".sst") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		if info.Size() > size {
			path, size = filepath.Join(dir, e.Name()), info.Size()
		}
	}
	if path == "" {
		t.Fatalf("ledgertest: no table in %s", dir)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[int(float64(len(b))*at)] ^= 0x5a
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// SetCheckpoint moves the verified checkpoint of the closed ledger in dir
// to record seq (0: removes it), as a ledger whose last records were not
// checked (a crash, or a version without checkpoints) has it.
func SetCheckpoint(t testing.TB, dir string, seq uint64) {
	t.Helper()
	db := openRaw(t, dir)
	defer db.Close()
	key := []byte("meta/verified")
	if seq == 0 {
		if err := db.Delete(key, pebble.Sync); err != nil {
			t.Fatal(err)
		}
		return
	}
	h, closer, err := db.Get(binary.BigEndian.AppendUint64([]byte("h/"), seq))
	if err != nil {
		t.Fatalf("ledgertest: hash of record %d: %v", seq, err)
	}
	v := append(binary.BigEndian.AppendUint64(nil, seq), h...)
	closer.Close()
	if err := db.Set(key, v, pebble.Sync); err != nil {
		t.Fatal(err)
	}
}
