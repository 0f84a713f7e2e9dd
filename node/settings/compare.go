package settings

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentic-dev/agentic/bus"
)

// Drift is a difference between a stream and the configuration the cluster
// settings in force give it.
type Drift struct {
	Stream   string `json:"stream"`
	Field    string `json:"field"`
	Expected string `json:"expected"`
	Actual   string `json:"actual"`
}

// field renders one compared field of a stream configuration.
type field struct {
	name   string
	render func(c jetstream.StreamConfig) string
}

// fields are what a stream is compared on: every field whose value the
// protocol relies on, not only the settings (a lowered MaxMsgs trims the
// event log as surely as a lowered MaxBytes).
var fields = []field{
	{"subjects", func(c jetstream.StreamConfig) string {
		s := slices.Clone(c.Subjects)
		slices.Sort(s)
		return strings.Join(s, ",")
	}},
	{"storage", func(c jetstream.StreamConfig) string { return c.Storage.String() }},
	{"retention", func(c jetstream.StreamConfig) string { return c.Retention.String() }},
	{"discard", func(c jetstream.StreamConfig) string { return c.Discard.String() }},
	{"max_age", func(c jetstream.StreamConfig) string { return age(c.MaxAge) }},
	{"max_bytes", func(c jetstream.StreamConfig) string { return bytesLimit(c.MaxBytes) }},
	{"max_msgs", func(c jetstream.StreamConfig) string { return count(c.MaxMsgs) }},
	{"max_msgs_per_subject", func(c jetstream.StreamConfig) string { return count(c.MaxMsgsPerSubject) }},
	{"max_msg_size", func(c jetstream.StreamConfig) string { return bytesLimit(int64(c.MaxMsgSize)) }},
	{"duplicates", func(c jetstream.StreamConfig) string { return FormatAge(c.Duplicates) }},
	{"replicas", func(c jetstream.StreamConfig) string { return strconv.Itoa(max(c.Replicas, 1)) }},
	{"deny_delete", func(c jetstream.StreamConfig) string { return strconv.FormatBool(c.DenyDelete) }},
	{"deny_purge", func(c jetstream.StreamConfig) string { return strconv.FormatBool(c.DenyPurge) }},
}

// Fields are the names of the fields a stream can drift on, in report
// order: "exists" (the stream is absent), then the compared fields.
func Fields() []string {
	out := []string{fieldExists}
	for _, f := range fields {
		out = append(out, f.name)
	}
	return out
}

const unlimited = "unlimited"

func age(d time.Duration) string {
	if d <= 0 {
		return unlimited
	}
	return FormatAge(d)
}

func bytesLimit(n int64) string {
	if n <= 0 {
		return unlimited
	}
	return FormatBytes(n)
}

func count(n int64) string {
	if n <= 0 {
		return unlimited
	}
	return strconv.FormatInt(n, 10)
}

// compare returns how have differs from want, field by field. A byte
// limit the stream was made with because its store could not reserve the
// one asked (bus.SizedToStore) is not drift while the settings still ask
// what was asked then and the stream still has what it was made with.
func compare(want, have jetstream.StreamConfig) []Drift {
	var out []Drift
	asked, created, sized := bus.SizedToStore(have)
	for _, f := range fields {
		if f.name == "max_bytes" && sized && asked == want.MaxBytes && created == have.MaxBytes {
			continue
		}
		if w, h := f.render(want), f.render(have); w != h {
			out = append(out, Drift{Stream: want.Name, Field: f.name, Expected: w, Actual: h})
		}
	}
	return out
}
