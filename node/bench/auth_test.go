package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/embedded"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest"
	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/natsauth"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// authRounds and authMsgs size BenchmarkBusAuth: rounds of each variant,
// alternating, and signed messages per round.
const (
	authRounds = 5
	authMsgs   = 3000
)

// BenchmarkBusAuth is figure (h): what locking the bus costs. Signed
// task.finished messages (one event each, as an executor's outbox
// publishes them: PublishAsync, window 256, every acknowledgement awaited)
// into AGENTIC_EVENTS over TCP on loopback, on a fresh embedded server
// per round, in three variants alternating round by round: open (no
// authentication, as before NATS required it), auth (operator mode, the
// executor's NATS user with its permissions) and auth_tls (the same over
// TLS). Reported: the median msgs/s of each over authRounds rounds, and
// auth and auth_tls over open (target: a drop under 5 %, i.e. ≥ 0.95).
func BenchmarkBusAuth(b *testing.B) {
	ids := bustest.NewIdentities(b)
	exec := ids.Node(b, "exec-a", event.RoleExecutor)
	pki := bustest.NewTLSFiles(b)
	msgs := signedMessages(b, exec, authMsgs)
	variants := []string{"open", "auth", "auth_tls"}
	rates := map[string][]float64{}
	for b.Loop() {
		for range authRounds {
			for _, v := range variants {
				rates[v] = append(rates[v], authRound(b, v, ids.Root, exec, pki, msgs))
			}
		}
	}
	med := map[string]float64{}
	for _, v := range variants {
		slices.Sort(rates[v])
		med[v] = rates[v][len(rates[v])/2]
		b.ReportMetric(med[v], v+"_msgs/s")
	}
	b.ReportMetric(med["auth"]/med["open"], "auth_over_open")
	b.ReportMetric(med["auth_tls"]/med["open"], "auth_tls_over_open")
	b.ReportMetric(0, "ns/op")
}

// signedMessages signs n task.finished events of signer, one per message.
func signedMessages(tb testing.TB, signer *trust.Identity, n int) [][]byte {
	tb.Helper()
	out := make([][]byte, n)
	for i := range out {
		d := event.MustDraft(event.TaskFinished, "run-auth", event.TaskFinishedData{Step: fmt.Sprintf("s%d", i), Attempt: 1, Status: "succeeded"})
		raw, _, err := envelope.Sign(signer, []event.Draft{d})
		if err != nil {
			tb.Fatal(err)
		}
		out[i] = raw
	}
	return out
}

// authRound starts a server of the variant, publishes msgs as exec and
// returns msgs/s.
func authRound(tb testing.TB, variant string, root *trust.Root, exec *trust.Identity, pki bustest.TLSFiles, msgs [][]byte) float64 {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := tb.TempDir()
	cfg := embedded.Config{StoreDir: filepath.Join(dir, "nats"), Listen: "127.0.0.1:0"}
	if variant != "open" {
		cfg.Auth = bustest.Auth(tb, root, dir)
	}
	if variant == "auth_tls" {
		cfg.TLS = embedded.TLS{Cert: pki.Cert, Key: pki.Key}
	}
	srv, err := embedded.Start(ctx, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	defer srv.Shutdown()
	// The streams, made as the harness (the executor may not create a
	// stream of another name; here they are absent).
	var setup *bus.Conn
	cc := bus.ConnConfig{URLs: []string{srv.ClientURL()}, Name: "bench-setup"}
	if variant == "auth_tls" {
		cc.TLS = bus.TLSConfig{CA: pki.CA}
	}
	if variant == "open" {
		if setup, err = bus.Connect(ctx, cc); err != nil {
			tb.Fatal(err)
		}
	} else {
		setup = bustest.Harness(tb, cc, root)
	}
	if err := bus.EnsureStreams(ctx, setup.JS, bus.StreamConfig{Replicas: 1}); err != nil {
		tb.Fatal(err)
	}
	setup.Close()

	opts := []nats.Option{nats.Name("bench-exec"), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { tb.Logf("%s: %v", variant, err) })}
	if variant != "open" {
		a, err := natsauth.NewAuthority(root)
		if err != nil {
			tb.Fatal(err)
		}
		co, err := a.UserOptions(root, exec)
		if err != nil {
			tb.Fatal(err)
		}
		opts = append(opts, co...)
	}
	if variant == "auth_tls" {
		opts = append(opts, nats.RootCAs(pki.CA))
	}
	nc, err := nats.Connect(srv.ClientURL(), opts...)
	if err != nil {
		tb.Fatalf("%s: connect: %v", variant, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(256))
	if err != nil {
		tb.Fatal(err)
	}
	subject := event.Subject(event.TaskFinished, "")
	// The first one on its own: a refusal shows as an error here.
	if _, err := js.Publish(ctx, subject, msgs[0]); err != nil {
		tb.Fatalf("%s: first publish: %v", variant, err)
	}
	start := time.Now()
	for i, m := range msgs[1:] {
		if _, err := js.PublishAsync(subject, m, jetstream.WithStallWait(time.Minute)); err != nil {
			tb.Fatalf("%s: publish %d: %v (pending %d)", variant, i, err, js.PublishAsyncPending())
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		tb.Fatalf("%s: acknowledgements not all in", variant)
	}
	took := time.Since(start)
	st, err := js.Stream(ctx, bus.EventsStream)
	if err != nil {
		tb.Fatal(err)
	}
	if got := st.CachedInfo().State.Msgs; got != uint64(len(msgs)) {
		tb.Fatalf("%s: the stream holds %d messages, want %d", variant, got, len(msgs))
	}
	return float64(len(msgs)-1) / took.Seconds()
}
