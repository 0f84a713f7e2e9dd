package ledger

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentic-dev/agentic/bus/event"
)

// Rejection sampling. A flood of refused messages (forgeries, replays) must
// not grow the ledger without bound, so the ledger records rejections one by
// one only up to a rate, and counts the rest in event.RejectedSummary
// records. The rate is judged by the stream alone — each message's stream
// time (the JetStream timestamp) and stream sequence — never by a clock or
// by when a message arrived, so every ledger folding the same stream writes
// the same records, however its Appends are batched, across restarts (the
// limiter's state is committed with the head) and in a replay. The
// constants below are protocol: every ledger node must use the same.
const (
	// RejectWindow is the rate's period: stream time cut into windows of
	// this length (by Unix time), each with fresh counts.
	RejectWindow = time.Minute
	// RejectFullPerSigner is how many rejections of one signer (the claimed
	// one: kid or iss, "unknown" when none could be read) a window records
	// in full.
	RejectFullPerSigner = 10
	// RejectFullPerWindow is how many rejections, all signers together, a
	// window records in full: claiming a new kid per message gains nothing.
	RejectFullPerWindow = 100
	// RejectSampleEvery: past its full ones, one rejection in this many of a
	// signer is recorded in full (a sample)...
	RejectSampleEvery = 100
	// RejectSampledPerWindow: ...up to this many samples a window.
	RejectSampledPerWindow = 10
	// RejectSignersPerWindow bounds the signers a window counts apart;
	// later ones are counted together as RejectOtherSigner.
	RejectSignersPerWindow = 256
	// RejectRawMax bounds the bytes of a refused message the ledger keeps
	// with its event.rejected record (the message's start: header, kid).
	RejectRawMax = 4096
	// RejectClaimMax bounds each claimed field (signer, type, id) of an
	// event.rejected record, and RejectReasonMax its reason: a forger
	// chooses them. A longer one is cut at a character boundary and ends
	// with "…". The rate's signer keys are cut the same way.
	RejectClaimMax  = 128
	RejectReasonMax = 1024
)

// Signer keys of the rejection rate that are not a claimed signer.
const (
	// RejectUnknownSigner keys messages refused before any signer could
	// be read.
	RejectUnknownSigner = "unknown"
	// RejectOtherSigner keys the signers past RejectSignersPerWindow.
	RejectOtherSigner = "other"
)

// rejectState is the rejection limiter's state: the window's counts and the
// open run of messages counted but not recorded. It is a function of the
// stream folded so far, so every ledger has the same.
type rejectState struct {
	// Window is the current window's index: stream time (Unix ns) divided
	// by RejectWindow; it never goes back, even if stream time does.
	Window int64 `json:"window"`
	// Signers counts the window's rejections by signer key.
	Signers map[string]uint64 `json:"signers,omitempty"`
	// Full and Sampled count the window's rejections recorded in full and
	// as samples.
	Full    uint64 `json:"full,omitempty"`
	Sampled uint64 `json:"sampled,omitempty"`
	// Run is the run of refused messages not recorded yet, if any: its
	// summary is written before the next record, or at the next window.
	Run *rejectRun `json:"run,omitempty"`
}

// rejectRun is an open run of counted messages.
type rejectRun struct {
	event.RejectedSummaryData
	// Time and Subject are those of the last message counted: the summary
	// record's.
	Time    time.Time `json:"time"`
	Subject string    `json:"subject"`
}

func (s *rejectState) clone() rejectState {
	c := *s
	if s.Signers != nil {
		c.Signers = make(map[string]uint64, len(s.Signers))
		for k, v := range s.Signers {
			c.Signers[k] = v
		}
	}
	if s.Run != nil {
		r := *s.Run
		r.ByCode = make(map[event.RejectCode]uint64, len(s.Run.ByCode))
		for k, v := range s.Run.ByCode {
			r.ByCode[k] = v
		}
		r.BySigner = make(map[string]uint64, len(s.Run.BySigner))
		for k, v := range s.Run.BySigner {
			r.BySigner[k] = v
		}
		c.Run = &r
	}
	return c
}

func windowOf(t time.Time) int64 { return t.UnixNano() / int64(RejectWindow) }

// roll moves the state to the window of stream time t (never back).
func (s *rejectState) roll(t time.Time) {
	if w := windowOf(t); w > s.Window {
		s.Window, s.Signers, s.Full, s.Sampled = w, nil, 0, 0
	}
}

// admit counts a rejection of signer at stream time t (after roll) and says
// whether it is recorded in full; it returns the signer's key.
func (s *rejectState) admit(signer string) (string, bool) {
	key := bounded(signer, RejectClaimMax)
	if key == "" {
		key = RejectUnknownSigner
	}
	if _, ok := s.Signers[key]; !ok && len(s.Signers) >= RejectSignersPerWindow {
		key = RejectOtherSigner
	}
	if s.Signers == nil {
		s.Signers = map[string]uint64{}
	}
	s.Signers[key]++
	n := s.Signers[key]
	switch {
	case n <= RejectFullPerSigner && s.Full < RejectFullPerWindow:
		s.Full++
		return key, true
	case n%RejectSampleEvery == 0 && s.Sampled < RejectSampledPerWindow:
		s.Sampled++
		return key, true
	}
	return key, false
}

// count adds a message left unrecorded to the open run.
func (s *rejectState) count(m *Message, key string, code event.RejectCode) {
	r := s.Run
	if r == nil {
		r = &rejectRun{RejectedSummaryData: event.RejectedSummaryData{
			From: m.StreamSeq, ByCode: map[event.RejectCode]uint64{}, BySigner: map[string]uint64{},
		}}
		s.Run = r
	}
	r.To, r.Time, r.Subject = m.StreamSeq, m.Time.UTC(), m.Subject
	r.Count++
	r.ByCode[code]++
	r.BySigner[key]++
}

// summary builds the record of run r.
func (r *rejectRun) summary() event.Event {
	data, _ := json.Marshal(r.RejectedSummaryData) // maps and numbers: cannot fail
	return event.Event{
		ID:      fmt.Sprintf("rejsum-%d", r.From),
		Type:    event.RejectedSummary,
		Time:    r.Time,
		Subject: r.Subject,
		Data:    data,
	}
}

func decodeRejectState(b []byte) (rejectState, error) {
	var s rejectState
	if err := json.Unmarshal(b, &s); err != nil {
		return rejectState{}, fmt.Errorf("%w: rejection limiter state: %w", ErrCorrupt, err)
	}
	return s, nil
}

// RejectStats are a store's rejections since it opened: every refused
// message or event by code, whether recorded one by one or counted in a
// summary, and how many were left unrecorded.
type RejectStats struct {
	// ByCode counts rejections by code.
	ByCode map[event.RejectCode]uint64
	// Dropped counts the refused messages counted but not recorded one by
	// one (beyond the rate).
	Dropped uint64
	// LastDropped is the stream time of the last of them (zero if none).
	LastDropped time.Time
}

// rejectCounters are the store's RejectStats.
type rejectCounters struct {
	mu    sync.Mutex
	stats RejectStats
}

func (c *rejectCounters) add(byCode map[event.RejectCode]uint64, dropped uint64, last time.Time) {
	if len(byCode) == 0 && dropped == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stats.ByCode == nil {
		c.stats.ByCode = map[event.RejectCode]uint64{}
	}
	for k, v := range byCode {
		c.stats.ByCode[k] += v
	}
	c.stats.Dropped += dropped
	if last.After(c.stats.LastDropped) {
		c.stats.LastDropped = last
	}
}

// RejectStats returns the rejections counted since the store opened.
func (s *Store) RejectStats() RejectStats {
	s.rejects.mu.Lock()
	defer s.rejects.mu.Unlock()
	out := s.rejects.stats
	out.ByCode = make(map[event.RejectCode]uint64, len(s.rejects.stats.ByCode))
	for k, v := range s.rejects.stats.ByCode {
		out.ByCode[k] = v
	}
	return out
}

// loadRejectState reads the limiter's state (none in a new ledger).
func loadRejectState(r reader) (rejectState, error) {
	b, err := getFrom(r, []byte(keyRejects))
	if errors.Is(err, ErrNotFound) {
		return rejectState{}, nil
	}
	if err != nil {
		return rejectState{}, err
	}
	return decodeRejectState(b)
}

// bounded cuts s to at most max bytes at a character boundary, ending it
// with "…" when it was cut.
func bounded(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// boundRejection bounds the fields of a rejection a forger chooses.
func boundRejection(d event.RejectedData) event.RejectedData {
	d.Reason = bounded(d.Reason, RejectReasonMax)
	d.Signer = bounded(d.Signer, RejectClaimMax)
	d.ClaimedType = bounded(d.ClaimedType, RejectClaimMax)
	d.ClaimedID = bounded(d.ClaimedID, RejectClaimMax)
	return d
}
