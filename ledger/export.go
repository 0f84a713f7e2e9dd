package ledger

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/ledger/pebblelog"
	"github.com/cockroachdb/pebble/v2"
)

// exportLine is one JSONL line of an export: the record's event fields plus
// its chain hash, and, on the first non-Gap record of each stream message,
// the signed message itself with its id and stream time.
type exportLine struct {
	event.Event
	Hash    string    `json:"hash"`
	JWS     string    `json:"jws,omitempty"`
	MsgID   string    `json:"msg_id,omitempty"`
	MsgTime time.Time `json:"msg_time,omitzero"`
}

// Export writes every record to w as JSON Lines, in order: the event's
// fields, "hash" (hex) and, on the first non-Gap record of each stream
// message, "jws" (the raw message), "msg_id" (its envelope id) and
// "msg_time" (its stream time). It reads one snapshot.
func (s *Store) Export(w io.Writer) error {
	_, err := s.ExportRange(w, 1, 0, 0)
	return err
}

// ExportRange writes the records from seq from on, in Export's format, and
// returns the seq of the last one written (0 if none). It stops after
// maxRecords records (0: no limit) and before a record that would take the
// output past maxBytes (0: no limit; the first record is always written).
// Pages written by successive calls (from = last+1) concatenate to exactly
// what Export writes.
func (s *Store) ExportRange(w io.Writer, from uint64, maxRecords, maxBytes int) (last uint64, err error) {
	bw := bufio.NewWriterSize(w, 1<<16)
	var lastMsg uint64
	if from > 1 {
		// A page that starts inside a stream message must not repeat the
		// message: it was written with that message's first record.
		prev, err := s.Get(from - 1)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return 0, fmt.Errorf("ledger: export: %w", err)
		}
		if err == nil && (prev.Raw != nil || prev.MessageID != "") {
			lastMsg = prev.Event.StreamSeq
		}
	}
	n, size := 0, 0
	for rec, err := range s.Scan(from) {
		if err != nil {
			return last, fmt.Errorf("ledger: export: %w", err)
		}
		line := exportLine{Event: rec.Event, Hash: hex.EncodeToString(rec.Hash[:])}
		hasMsg := rec.Raw != nil || rec.MessageID != ""
		if hasMsg && rec.Event.StreamSeq != lastMsg {
			lastMsg = rec.Event.StreamSeq
			line.JWS, line.MsgID, line.MsgTime = string(rec.Raw), rec.MessageID, rec.MessageTime
		}
		b, err := json.Marshal(line)
		if err != nil {
			return last, fmt.Errorf("ledger: export record %d: %w", rec.Event.Seq, err)
		}
		if maxBytes > 0 && n > 0 && size+len(b)+1 > maxBytes {
			break
		}
		if _, err := bw.Write(append(b, '\n')); err != nil {
			return last, fmt.Errorf("ledger: export record %d: %w", rec.Event.Seq, err)
		}
		last, size = rec.Event.Seq, size+len(b)+1
		if n++; maxRecords > 0 && n >= maxRecords {
			break
		}
	}
	if err := bw.Flush(); err != nil {
		return last, fmt.Errorf("ledger: export: %w", err)
	}
	return last, nil
}

// importCommitRecords bounds one import batch.
const importCommitRecords = 4096

// Import creates (or opens) the store in dir, which must hold no records,
// and reads an Export into it, recomputing every chain hash and refusing the
// file at the first mismatch. Indexes, the seen-set and the head are rebuilt.
// On error the directory holds a partial import that Open refuses: remove it.
func Import(dir string, r io.Reader, opts Options) (*Store, error) {
	s, err := Open(dir, opts)
	if err != nil {
		return nil, err
	}
	if err := s.importFrom(r); err != nil {
		return nil, errors.Join(fmt.Errorf("ledger: import into %s: %w", dir, err), s.Close())
	}
	return s, nil
}

func (s *Store) importFrom(r io.Reader) error {
	s.appendMu.Lock()
	defer s.appendMu.Unlock()
	if h := s.headNow(); h.seq != 0 || h.applied != 0 {
		return fmt.Errorf("%w: head at %d", ErrNotEmpty, h.seq)
	}
	if err := s.db.Set([]byte(keyImporting), nil, pebble.Sync); err != nil {
		return err
	}
	im := &importer{appender: appender{s: s, b: s.db.NewBatch()}}
	defer func() { im.b.Close() }()
	dec := json.NewDecoder(bufio.NewReaderSize(r, 1<<16))
	for n := 1; ; n++ {
		var line exportLine
		err := dec.Decode(&line)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("%w: line %d: %w", ErrCorrupt, n, err)
		}
		if err := im.line(&line); err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
		if im.b.Count() >= importCommitRecords {
			if err := im.flush(); err != nil {
				return err
			}
		}
	}
	if err := im.b.Set([]byte(keyHead), im.head.encode(), nil); err != nil {
		return err
	}
	if err := im.b.Delete([]byte(keyImporting), nil); err != nil {
		return err
	}
	if err := pebblelog.SyncCommit(im.b); err != nil {
		return fmt.Errorf("%w: %w", ErrSync, err)
	}
	s.mu.Lock()
	s.mu.head = im.head
	s.mu.Unlock()
	return nil
}

// importer stages imported records through an appender's batch.
type importer struct {
	appender
	msgID string // envelope id of the current stream message
}

func (im *importer) flush() error {
	if err := pebblelog.SyncCommit(im.b); err != nil {
		return fmt.Errorf("%w: %w", ErrSync, err)
	}
	im.b.Close()
	im.b = im.s.db.NewBatch()
	return nil
}

func (im *importer) line(l *exportLine) error {
	ev := l.Event
	switch {
	case ev.Seq != im.head.seq+1:
		return fmt.Errorf("%w: record %d follows %d", ErrCorrupt, ev.Seq, im.head.seq)
	case ev.StreamSeq == 0 || ev.StreamSeq < im.head.applied:
		return fmt.Errorf("%w: record %d has stream seq %d after %d", ErrCorrupt, ev.Seq, ev.StreamSeq, im.head.applied)
	}
	rec, err := encodeRecord(ev)
	if err != nil {
		return err
	}
	hash := chain(im.head.hash, rec)
	if want := hex.EncodeToString(hash[:]); l.Hash != want {
		return fmt.Errorf("%w: record %d: hash %s, recomputed %s", ErrCorrupt, ev.Seq, l.Hash, want)
	}
	if ev.StreamSeq != im.head.applied {
		im.msgID = ""
	}
	if l.JWS != "" || l.MsgID != "" {
		im.msgID = l.MsgID
		v := storedMessage{Time: l.MsgTime, ID: l.MsgID, Raw: []byte(l.JWS)}.encode()
		if err := im.b.Set(messageKey(ev.StreamSeq), v, nil); err != nil {
			return err
		}
	}
	if err := im.stage(ev, rec, hash); err != nil {
		return err
	}
	if !local(ev.Type) {
		if err := im.markAccepted(ev); err != nil {
			return err
		}
	}
	im.head = head{seq: ev.Seq, hash: hash, applied: ev.StreamSeq}
	return nil
}

// markAccepted rebuilds the seen-set as Append built it: the ids of accepted
// events and the envelope id of their message.
func (im *importer) markAccepted(ev event.Event) error {
	if err := im.markSeen(ev.ID, ev.StreamSeq); err != nil {
		return err
	}
	if ev.Type == event.GoalSubmitted && ev.Run != "" {
		if err := im.markRun(ev.Run); err != nil {
			return err
		}
	}
	if id := im.msgID; id != "" {
		im.msgID = "" // once per message
		return im.markSeen(id, ev.StreamSeq)
	}
	return nil
}
