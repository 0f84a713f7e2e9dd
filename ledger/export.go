package ledger

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/internal/pebblelog"
)

// exportRecord is one JSONL line of an export: the record's event fields
// plus its chain hash, and, on the first non-Gap record of each stream
// message, the signed message itself with its id and stream time.
type exportRecord struct {
	event.Event
	Hash    string    `json:"hash"`
	JWS     string    `json:"jws,omitempty"`
	MsgID   string    `json:"msg_id,omitempty"`
	MsgTime time.Time `json:"msg_time,omitzero"`
}

// ExportLine is one record's line of an export.
type ExportLine struct {
	// Seq and StreamSeq are the record's position and stream sequence.
	Seq, StreamSeq uint64
	// Line is the line exactly as Export writes it, without the newline.
	Line []byte
	// JWSSize is the length of the signed message Line carries in "jws"
	// (0: none).
	JWSSize int

	rec exportRecord
}

// WithoutJWS returns Line without its "jws" member, and the byte offset in
// it where `,"jws":` followed by the message as a JSON string
// (encoding/json's encoding of string(message)) puts it back, giving Line
// byte for byte: what a reader that fetches a large message on its own
// (Store.Message by StreamSeq) needs. A line without "jws" comes back as
// Line with offset -1.
func (l ExportLine) WithoutJWS() ([]byte, int, error) {
	if l.rec.JWS == "" {
		return l.Line, -1, nil
	}
	r := l.rec
	r.JWS = ""
	line, err := json.Marshal(r)
	if err != nil {
		return nil, 0, fmt.Errorf("ledger: export record %d: %w", l.Seq, err)
	}
	// encoding/json writes members in field order: "jws" comes right after
	// "hash", so it goes where the line of the event and hash alone ends.
	head, err := json.Marshal(exportRecord{Event: r.Event, Hash: r.Hash})
	if err != nil {
		return nil, 0, fmt.Errorf("ledger: export record %d: %w", l.Seq, err)
	}
	return line, len(head) - 1, nil
}

// Export writes every record to w as JSON Lines, in order: the event's
// fields, "hash" (hex) and, on the first non-Gap record of each stream
// message, "jws" (the raw message), "msg_id" (its envelope id) and
// "msg_time" (its stream time). It reads one snapshot.
func (s *Store) Export(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	for l, err := range s.ExportLines(1) {
		if err != nil {
			return err
		}
		if _, err := bw.Write(append(l.Line, '\n')); err != nil {
			return fmt.Errorf("ledger: export record %d: %w", l.Seq, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("ledger: export: %w", err)
	}
	return nil
}

// ExportLines yields the lines of the records from seq from on, in Export's
// format, from a snapshot taken when the loop starts; it stops at the first
// error, which it yields. Lines read from successive positions (from =
// last Seq + 1) concatenate to exactly what Export writes: a line that
// starts inside a stream message does not repeat the message. Cutting the
// lines into pages is the reader's business.
func (s *Store) ExportLines(from uint64) iter.Seq2[ExportLine, error] {
	return func(yield func(ExportLine, error) bool) {
		from = max(from, 1)
		var lastMsg uint64
		if from > 1 {
			// The message was written with its first record, before from.
			prev, err := s.Get(from - 1)
			if err != nil && !errors.Is(err, ErrNotFound) {
				yield(ExportLine{}, fmt.Errorf("ledger: export: %w", err))
				return
			}
			if err == nil && (prev.Raw != nil || prev.MessageID != "") {
				lastMsg = prev.Event.StreamSeq
			}
		}
		for rec, err := range s.Scan(from) {
			if err != nil {
				yield(ExportLine{}, fmt.Errorf("ledger: export: %w", err))
				return
			}
			l := ExportLine{Seq: rec.Event.Seq, StreamSeq: rec.Event.StreamSeq}
			l.rec = exportRecord{Event: rec.Event, Hash: hex.EncodeToString(rec.Hash[:])}
			if hasMsg := rec.Raw != nil || rec.MessageID != ""; hasMsg && rec.Event.StreamSeq != lastMsg {
				lastMsg = rec.Event.StreamSeq
				l.rec.JWS, l.rec.MsgID, l.rec.MsgTime = string(rec.Raw), rec.MessageID, rec.MessageTime
				l.JWSSize = len(rec.Raw)
			}
			if l.Line, err = json.Marshal(l.rec); err != nil {
				yield(ExportLine{}, fmt.Errorf("ledger: export record %d: %w", rec.Event.Seq, err))
				return
			}
			if !yield(l, nil) {
				return
			}
		}
	}
}

// importCommitRecords bounds one import batch.
const importCommitRecords = 4096

// Import creates (or opens) the store in dir, which must hold no records,
// and reads an Export into it, recomputing every chain hash and refusing the
// file at the first mismatch. Indexes, the seen-set, the credentials index,
// the revocations in force and the head are rebuilt.
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
	if err := s.syncSet([]byte(keyImporting), nil); err != nil {
		return fmt.Errorf("ledger: import: %w", err)
	}
	im := &importer{appender: appender{s: s, b: s.db.NewBatch()}}
	defer func() { im.b.Close() }()
	dec := json.NewDecoder(bufio.NewReaderSize(r, 1<<16))
	for n := 1; ; n++ {
		var line exportRecord
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
	im.credentialsCommitted()
	if err := s.loadRoots(); err != nil {
		return err
	}
	return s.loadRevocations()
}

// importer stages imported records through an appender's batch.
type importer struct {
	appender
	msgID string // envelope id of the current stream message
	raw   []byte // and its bytes
}

func (im *importer) flush() error {
	if err := pebblelog.SyncCommit(im.b); err != nil {
		return fmt.Errorf("%w: %w", ErrSync, err)
	}
	im.b.Close()
	im.b = im.s.db.NewBatch()
	return nil
}

func (im *importer) line(l *exportRecord) error {
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
		im.msgID, im.raw, im.msgTime, im.msgStored = "", nil, time.Time{}, false
	}
	if l.JWS != "" || l.MsgID != "" {
		im.msgID, im.raw, im.msgTime, im.msgStored = l.MsgID, []byte(l.JWS), l.MsgTime, true
		v := storedMessage{Time: l.MsgTime, ID: l.MsgID, Raw: []byte(l.JWS)}.encode()
		if err := im.b.Set(messageKey(ev.StreamSeq), v, nil); err != nil {
			return err
		}
	}
	if err := im.stage(ev, rec, hash); err != nil {
		return err
	}
	if err := im.rebuildCredential(ev, im.raw); err != nil {
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
