package runindex

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/internal/apiwire"
	"github.com/agentic-dev/agentic/ledger"
)

// prefixRating is the key space of operators' ratings of runs (run.rated):
//
//	f/<uvarint len(id)><run id><seq be64> → apiwire.RunRating JSON
//
// in ledger order per run. A rating is kept whatever the state of its run
// (ratings usually come after the run finished, when the fold has
// forgotten it), and even for a run the index does not know: the key is
// never listed then, since readers go through a known run's id.
const prefixRating = "f/"

// MaxRatings is how many of a run's newest ratings a summary carries.
const MaxRatings = 20

// ratingPrefix is the prefix of run's rating keys; the id is
// length-prefixed, so no run's prefix is a prefix of another's.
func ratingPrefix(run string) []byte {
	b := binary.AppendUvarint([]byte(prefixRating), uint64(len(run)))
	return append(b, run...)
}

func ratingKey(run string, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(ratingPrefix(run), seq)
}

// indexRating stages the rating a run.rated record carries. A payload that
// does not decode or validate is logged and skipped: the ledger keeps it,
// the index shows nothing of it.
func (x *Index) indexRating(w *ledger.IndexWriter, ev event.Event) error {
	if w.Discard() || ev.Run == "" {
		return nil
	}
	var d event.RunRatedData
	err := ev.Decode(&d)
	if err == nil {
		err = d.Validate()
	}
	if err != nil {
		x.log.Warn("run rating skipped", "run", ev.Run, "seq", ev.Seq, "err", err)
		return nil
	}
	b, err := json.Marshal(apiwire.RunRating{Rating: d.Rating, Reason: d.Reason, Operator: ev.Node, At: ev.Time.UTC(), Seq: ev.Seq})
	if err != nil {
		return fmt.Errorf("runindex: encode rating of run %s: %w", ev.Run, err)
	}
	return w.Set(ratingKey(ev.Run, ev.Seq), b)
}

// Ratings returns the newest ratings of the run with the full id run, at
// most limit of them (limit <= 0: MaxRatings), oldest first, and whether
// it holds older ones. A run without ratings has none; the run itself is
// not looked up.
func (x *Index) Ratings(run string, limit int) (ratings []apiwire.RunRating, more bool, err error) {
	st, err := x.store()
	if err != nil {
		return nil, false, err
	}
	if limit <= 0 {
		limit = MaxRatings
	}
	prefix := ratingPrefix(run)
	for e, err := range st.IndexScan(Name, prefix, prefixEnd(prefix), true) {
		if err != nil {
			return nil, false, fmt.Errorf("runindex: ratings of %s: %w", run, err)
		}
		if len(ratings) == limit {
			more = true
			break
		}
		var r apiwire.RunRating
		if err := json.Unmarshal(e.Value, &r); err != nil {
			return nil, false, fmt.Errorf("runindex: ratings of %s: %w: %w", run, ledger.ErrCorrupt, err)
		}
		ratings = append(ratings, r)
	}
	slices.Reverse(ratings)
	return ratings, more, nil
}
