package event_test

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// Durations travel as Go duration strings and come back exactly.
func TestDurationRoundTrip(t *testing.T) {
	cases := []struct {
		d    time.Duration
		wire string
	}{
		{time.Nanosecond, `"1ns"`},
		{1500 * time.Nanosecond, `"1.5µs"`},
		{250 * time.Millisecond, `"250ms"`},
		{time.Second, `"1s"`},
		{90 * time.Second, `"1m30s"`},
		{5 * time.Minute, `"5m0s"`},
		{2*time.Hour + 45*time.Minute, `"2h45m0s"`},
		{math.MaxInt64, `"2562047h47m16.854775807s"`},
	}
	for _, c := range cases {
		b, err := json.Marshal(event.Duration(c.d))
		if err != nil || string(b) != c.wire {
			t.Errorf("Marshal(%v) = %s, %v; want %s", c.d, b, err, c.wire)
			continue
		}
		var back event.Duration
		if err := json.Unmarshal(b, &back); err != nil || back.Std() != c.d {
			t.Errorf("Unmarshal(%s) = %v, %v; want %v", b, back, err, c.d)
		}
		if p, err := event.ParseDuration(event.Duration(c.d).String()); err != nil || p.Std() != c.d {
			t.Errorf("ParseDuration(String(%v)) = %v, %v", c.d, p, err)
		}
	}
}

func FuzzDurationRoundTrip(f *testing.F) {
	for _, n := range []int64{0, 1, 999, 1e9, 90e9, math.MaxInt64} {
		f.Add(n)
	}
	f.Fuzz(func(t *testing.T, n int64) {
		if n < 0 {
			n = -(n + 1)
		}
		b, err := json.Marshal(event.Duration(n))
		if err != nil {
			t.Fatal(err)
		}
		var back event.Duration
		if err := json.Unmarshal(b, &back); err != nil || int64(back) != n {
			t.Fatalf("%d -> %s -> %d, %v", n, b, back, err)
		}
	})
}

// A zero duration is left out of a payload; an absent one is zero.
func TestZeroDurationOmitted(t *testing.T) {
	b, err := json.Marshal(event.Step{ID: "a", Kind: event.KindNoop})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(b); got != `{"id":"a","kind":"noop"}` {
		t.Fatalf("zero durations not omitted: %s", got)
	}
	var s event.Step
	if err := json.Unmarshal(b, &s); err != nil || s.Timeout != 0 || s.Backoff != 0 {
		t.Fatalf("absent durations: %+v, %v", s, err)
	}
	if err := json.Unmarshal([]byte(`{"id":"a","timeout":null}`), &s); err != nil || s.Timeout != 0 {
		t.Fatalf("null duration: %+v, %v", s, err)
	}
}

// A bad duration is refused with an error that names it and says what is
// wanted; a negative one too, on the way in and out.
func TestBadDuration(t *testing.T) {
	cases := map[string]string{
		`"5 min"`: `bad duration "5 min": want a Go duration such as "30s"`,
		`""`:      `bad duration ""`,
		`"-5s"`:   `bad duration "-5s": must not be negative`,
		`-5`:      `must not be negative`,
		`1.5`:     `bad duration 1.5: want a Go duration string`,
		`1e9`:     `bad duration 1e9`,
		`true`:    `bad duration true`,
		`{}`:      `bad duration {}`,
		`"1h"x`:   ``, // invalid JSON: the decoder refuses it before us
	}
	for in, want := range cases {
		var s event.Step
		err := json.Unmarshal([]byte(`{"id":"a","timeout":`+in+`}`), &s)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("timeout %s: err %v, want one saying %q", in, err, want)
		}
	}
	if _, err := json.Marshal(event.Step{ID: "a", Timeout: event.Duration(-time.Second)}); err == nil || !strings.Contains(err.Error(), "negative") {
		t.Errorf("marshal of a negative timeout: %v", err)
	}
	if _, err := event.ParseDuration("soon"); err == nil || !strings.Contains(err.Error(), `"soon"`) {
		t.Errorf("ParseDuration(soon) = %v", err)
	}
}

// Builds before protocol version 1 wrote durations as nanoseconds. Such a
// plan.proposed (and the task.assigned made from it) is accepted: the fold
// cannot see an event's version, and the number has one meaning. What is
// written back is the string form.
func TestOldNanosecondDurationsAccepted(t *testing.T) {
	old := `{"revision":1,"source":"file","plan":{"goal":"g","steps":[` +
		`{"id":"build","kind":"shell","run":"make","timeout":90000000000,"retries":2,"backoff":1000000000,"on_failure":"abort"}]}}`
	var d event.PlanProposedData
	if err := json.Unmarshal([]byte(old), &d); err != nil {
		t.Fatalf("a version-0 plan.proposed is refused: %v", err)
	}
	st := d.Plan.Step("build")
	if st == nil || st.Timeout.Std() != 90*time.Second || st.Backoff.Std() != time.Second {
		t.Fatalf("old durations read as %+v", st)
	}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); !strings.Contains(s, `"timeout":"1m30s"`) || !strings.Contains(s, `"backoff":"1s"`) {
		t.Fatalf("re-marshalled as %s", s)
	}
	var m event.MemoryPutData
	if err := json.Unmarshal([]byte(`{"scope":"shared","key":"k","value":"v","ttl":3600000000000}`), &m); err != nil || m.TTL.Std() != time.Hour {
		t.Fatalf("old memory.put ttl: %+v, %v", m, err)
	}
}

// Interrupted is a field; it is always written, and an event without it
// (from a build before the field) counts as interrupted when its Error
// starts with the prefix those builds used.
func TestTaskFinishedInterrupted(t *testing.T) {
	b, err := json.Marshal(event.TaskFinishedData{Step: "a", Attempt: 1, Status: event.TaskSucceeded})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"interrupted":false`) {
		t.Fatalf("interrupted:false not written: %s", b)
	}
	cases := []struct {
		name, data string
		want       bool
	}{
		{"new, interrupted", `{"step":"a","attempt":1,"status":"failed","class":"transient","error":"interrupted: the executor shut down","interrupted":true}`, true},
		{"new, not interrupted", `{"step":"a","attempt":1,"status":"failed","class":"logic","error":"exit status 1","interrupted":false}`, false},
		{"new, field wins over the text", `{"step":"a","attempt":1,"status":"failed","class":"logic","error":"interrupted by the script itself","interrupted":false}`, false},
		{"new, field without text", `{"step":"a","attempt":1,"status":"failed","class":"transient","interrupted":true}`, true},
		{"old, prefix", `{"step":"a","attempt":1,"status":"failed","class":"transient","error":"interrupted: the executor stopped during the attempt"}`, true},
		{"old, other error", `{"step":"a","attempt":1,"status":"failed","class":"transient","error":"timed out after 1s"}`, false},
		{"old, success", `{"step":"a","attempt":1,"status":"succeeded","duration":1500000000}`, false},
	}
	for _, c := range cases {
		var d event.TaskFinishedData
		if err := json.Unmarshal([]byte(c.data), &d); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if d.Interrupted != c.want {
			t.Errorf("%s: Interrupted = %v, want %v", c.name, d.Interrupted, c.want)
		}
		if d.Step != "a" || d.Attempt != 1 || d.Status == "" {
			t.Errorf("%s: other fields lost: %+v", c.name, d)
		}
	}
	// Decoding into a used value resets the field from the new payload.
	d := event.TaskFinishedData{Interrupted: true}
	if err := json.Unmarshal([]byte(`{"step":"a","error":"exit 1"}`), &d); err != nil || d.Interrupted {
		t.Fatalf("reused value: %+v, %v", d, err)
	}
}
