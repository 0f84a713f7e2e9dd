package membership

import (
	"context"
	"encoding/base64"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/hashicorp/memberlist"
)

const wait = 20 * time.Second

// three starts a, b and c, b and c joining a, and waits until each sees
// the three alive.
func three(t *testing.T, tweak func(*Config)) (a, b, c *Membership) {
	t.Helper()
	ca := testConfig("a")
	if tweak != nil {
		tweak(&ca)
	}
	a = start(t, ca)
	cb, cc := testConfig("b", a.Addr()), testConfig("c", a.Addr())
	if tweak != nil {
		tweak(&cb)
		tweak(&cc)
	}
	b, c = start(t, cb), start(t, cc)
	for _, m := range []*Membership{a, b, c} {
		poll.Eventually(t, wait, m.Name()+" to see three members alive", func() bool {
			return stateOf(m, "a") == Alive && stateOf(m, "b") == Alive && stateOf(m, "c") == Alive
		})
	}
	return a, b, c
}

func TestMembersSeeEachOthersMeta(t *testing.T) {
	a, b, c := three(t, nil)
	for _, m := range []*Membership{a, b, c} {
		ms := m.Members()
		if names := []string{ms[0].Node, ms[1].Node, ms[2].Node}; len(ms) != 3 || !slices.Equal(names, []string{"a", "b", "c"}) {
			t.Fatalf("%s: members %+v, want a, b, c in order", m.Name(), ms)
		}
		for i, other := range []*Membership{a, b, c} {
			got, want := ms[i], other.Meta()
			if !metaEqual(got.Meta, want) || got.Addr != other.Addr() || got.Since.IsZero() {
				t.Errorf("%s sees %+v, want meta %+v at %s", m.Name(), got, want, other.Addr())
			}
		}
	}
	select {
	case <-a.Changed():
	default:
		t.Error("Changed holds no signal after members joined")
	}
	if err := b.JoinError(); err != nil {
		t.Errorf("b joined, JoinError = %v", err)
	}

	// Metadata updates reach the others.
	if err := b.SetDraining(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, wait, "a to see b draining", func() bool {
		mem, _ := member(a, "b")
		return mem.Draining && mem.State == Alive
	})
	if !b.Meta().Draining {
		t.Error("b's own meta is not draining")
	}
}

func TestStopWithoutLeaveIsDead(t *testing.T) {
	a, b, c := three(t, nil)
	c.Stop()
	for _, m := range []*Membership{a, b} {
		poll.Eventually(t, wait, m.Name()+" to see c dead", func() bool { return stateOf(m, "c") == Dead })
	}
	c.Stop() // idempotent
	if err := c.Leave(context.Background()); err == nil {
		t.Error("Leave after Stop: no error")
	}
}

func TestLeaveIsLeft(t *testing.T) {
	a, b, c := three(t, nil)
	if err := c.Leave(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := c.Leave(context.Background()); err != nil {
		t.Errorf("second Leave: %v", err)
	}
	if err := c.SetDraining(context.Background(), true); err == nil {
		t.Error("SetDraining after Leave: no error")
	}
	c.Stop()
	for _, m := range []*Membership{a, b} {
		poll.Eventually(t, wait, m.Name()+" to see c left", func() bool { return stateOf(m, "c") == Left })
	}
	// Left stays left: no failure is detected later.
	if s := stateOf(a, "c"); s != Left {
		t.Errorf("a sees c %s", s)
	}
}

// A node that restarts under its name on another port (a new process: new
// incarnation and metadata) is accepted as soon as the old one is known
// dead, or left.
func TestRestartOnAnotherPortIsAlive(t *testing.T) {
	for _, leave := range []bool{false, true} {
		name := "after dead"
		if leave {
			name = "after leave"
		}
		t.Run(name, func(t *testing.T) {
			a, _, c := three(t, nil)
			oldAddr := c.Addr()
			want := Dead
			if leave {
				want = Left
				if err := c.Leave(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			c.Stop()
			poll.Eventually(t, wait, "a to see c "+string(want), func() bool { return stateOf(a, "c") == want })
			cfg := testConfig("c", a.Addr())
			cfg.Meta.Slots, cfg.Meta.Version = 8, "test-2"
			c2 := start(t, cfg)
			poll.Eventually(t, wait, "a to see the new c alive", func() bool {
				mem, _ := member(a, "c")
				return mem.State == Alive && mem.Incarnation == cfg.Meta.Incarnation
			})
			mem, _ := member(a, "c")
			if mem.Addr == oldAddr || mem.Addr != c2.Addr() || mem.Slots != 8 || mem.Version != "test-2" {
				t.Errorf("a sees %+v, want c at %s (not %s) with 8 slots, version test-2", mem, c2.Addr(), oldAddr)
			}
		})
	}
}

func TestWrongKeyOrLabelIsNotJoined(t *testing.T) {
	key := func(b byte) []byte { k := make([]byte, 32); k[0] = b; return k }
	for _, tc := range []struct {
		name   string
		a, b   func(*Config)
		joined bool
	}{
		{"same key and label", func(c *Config) { c.Key, c.Label = key(1), "x" }, func(c *Config) { c.Key, c.Label = key(1), "x" }, true},
		{"wrong key", func(c *Config) { c.Key = key(1) }, func(c *Config) { c.Key = key(2) }, false},
		{"no key", func(c *Config) { c.Key = key(1) }, func(c *Config) {}, false},
		{"wrong label", func(c *Config) { c.Label = "prod" }, func(c *Config) { c.Label = "test" }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ca := testConfig("a")
			tc.a(&ca)
			a := start(t, ca)
			cb := testConfig("b", a.Addr())
			tc.b(&cb)
			b := start(t, cb)
			if tc.joined {
				poll.Eventually(t, wait, "a and b to see each other", func() bool {
					return stateOf(a, "b") == Alive && stateOf(b, "a") == Alive
				})
				return
			}
			poll.Eventually(t, wait, "b's join to fail", func() bool { return b.JoinError() != nil })
			if n := len(a.Members()); n != 1 {
				t.Errorf("a sees %d members, want itself alone: %+v", n, a.Members())
			}
			if n := len(b.Members()); n != 1 {
				t.Errorf("b sees %d members, want itself alone: %+v", n, b.Members())
			}
		})
	}
}

func TestBadConfigIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tweak func(*Config)
		want  string
	}{
		{"short key", func(c *Config) { c.Key = []byte("0123456789") }, "gossip key: 10 bytes: want 16, 24 or 32"},
		{"no name", func(c *Config) { c.Meta.Node = "" }, "node name is empty"},
		{"preset", func(c *Config) { c.Preset = "wan" }, `preset "wan"`},
		{"every address", func(c *Config) { c.Bind = "0.0.0.0:0" }, "listens on every address"},
		{"bind", func(c *Config) { c.Bind = "127.0.0.1" }, `bind "127.0.0.1": want host:port`},
		{"join", func(c *Config) { c.Join = []string{"h:1:2"} }, `join "h:1:2"`},
		{"meta too large", func(c *Config) { c.Meta.Capabilities = slices.Repeat([]string{"capability-x"}, 60) }, "gossip carries at most 512"},
		{"label", func(c *Config) { c.Label = strings.Repeat("l", 300) }, "label: 300 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig("a")
			tc.tweak(&cfg)
			m, err := Start(context.Background(), cfg)
			if err == nil {
				m.Stop()
				t.Fatal("started")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
		})
	}
	// Every problem at once.
	cfg := testConfig("")
	cfg.Key, cfg.Preset = []byte("x"), "wan"
	_, err := Start(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "gossip key") || !strings.Contains(err.Error(), "preset") || !strings.Contains(err.Error(), "node name") {
		t.Errorf("error %v does not name every problem", err)
	}
	// A key read from a config file is 16, 24 or 32 bytes of base64.
	k, _ := base64.StdEncoding.DecodeString("c2l4dGVlbi1ieXRlLWtleQ==")
	cfg = testConfig("a")
	cfg.Key = k
	start(t, cfg)
}

// With two members, only a probes c: when c stops, a's own probe fails,
// a sees c suspect for the suspicion timeout, then dead.
func TestSuspectIsSeen(t *testing.T) {
	slow := func(c *Config) {
		// A suspicion of 8 × 200 ms: long enough to be seen on a busy
		// machine.
		c.tune = func(mc *memberlist.Config) { mc.SuspicionMult = 8 }
	}
	ca := testConfig("a")
	slow(&ca)
	a := start(t, ca)
	cc := testConfig("c", a.Addr())
	slow(&cc)
	c := start(t, cc)
	poll.Eventually(t, wait, "a to see c", func() bool { return stateOf(a, "c") == Alive })

	var mu sync.Mutex
	var seen []State
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			case <-a.Changed():
			}
			s := stateOf(a, "c")
			mu.Lock()
			if len(seen) == 0 || seen[len(seen)-1] != s {
				seen = append(seen, s)
			}
			mu.Unlock()
		}
	}()
	c.Stop()
	poll.Eventually(t, wait, "a to see c dead", func() bool { return stateOf(a, "c") == Dead })
	close(done)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(seen, []State{Suspect, Dead}) && !slices.Equal(seen, []State{Alive, Suspect, Dead}) {
		t.Errorf("a saw c go through %v, want suspect then dead", seen)
	}
}

// A member bound to every address advertises the one given; a host name
// is resolved.
func TestBindAndAdvertise(t *testing.T) {
	ca := testConfig("a")
	ca.Bind, ca.Advertise = "0.0.0.0:0", "127.0.0.1:0"
	a := start(t, ca)
	if !strings.HasPrefix(a.Addr(), "127.0.0.1:") || strings.HasSuffix(a.Addr(), ":0") {
		t.Fatalf("a advertises %s", a.Addr())
	}
	cb := testConfig("b", a.Addr())
	cb.Bind = "localhost:0"
	b := start(t, cb)
	if !strings.HasPrefix(b.Addr(), "127.0.0.1:") {
		t.Errorf("b advertises %s", b.Addr())
	}
	poll.Eventually(t, wait, "a and b to see each other", func() bool {
		return stateOf(a, "b") == Alive && stateOf(b, "a") == Alive
	})
}
