package api

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/nats-io/nats.go"
)

// signedKit is a NATS server, a root, and a client that checks answers
// against the root.
type signedKit struct {
	t    *testing.T
	url  string
	root *trust.Root
	c    *Client
}

func newSignedKit(t *testing.T) *signedKit {
	t.Helper()
	root, err := trust.NewRoot()
	if err != nil {
		t.Fatal(err)
	}
	k := &signedKit{t: t, url: startNATS(t), root: root}
	k.c = NewClient(connect(t, k.url), 2*time.Second).WithTrust(&Trust{Verifier: envelope.NewVerifier(root)})
	return k
}

func (k *signedKit) identity(kind, id string, roles ...string) *trust.Identity {
	k.t.Helper()
	ident, err := trust.NewIdentity(k.root, id, kind, roles, time.Hour)
	if err != nil {
		k.t.Fatal(err)
	}
	return ident
}

// serve starts a server of node signing as ident (unsigned when nil),
// answering gates.list with the gate whose command is cmd.
func (k *signedKit) serve(node string, ident *trust.Identity, cmd string) *Server {
	k.t.Helper()
	srv := NewServer(connect(k.t, k.url), node, nil)
	if ident != nil {
		srv.Sign(func() *trust.Identity { return ident })
	}
	HandleTyped(srv, MethodGatesList, func(context.Context, GatesRequest) (Page[Gate], error) {
		return Page[Gate]{Items: []Gate{{Run: "r1", Step: "s1", Spec: &event.Step{ID: "s1", Kind: event.KindShell, Run: cmd}}}, End: true}, nil
	})
	HandleTyped(srv, MethodNodeInfo, func(context.Context, struct{}) (NodeInfo, error) {
		return NodeInfo{ID: node}, nil
	})
	if err := srv.Start(); err != nil {
		k.t.Fatal(err)
	}
	k.t.Cleanup(srv.Stop)
	return srv
}

func (k *signedKit) gateCommand(c *Client) (string, error) {
	p, err := c.Gates(context.Background(), GatesRequest{})
	if err != nil {
		return "", err
	}
	return p.Items[0].Spec.Run, nil
}

func TestSignedAnswerAccepted(t *testing.T) {
	k := newSignedKit(t)
	k.serve("ledger-a", k.identity(trust.KindNode, "ledger-a", event.RoleOrchestrator), "rm -rf ./precious")
	got, err := k.gateCommand(k.c)
	if err != nil || got != "rm -rf ./precious" {
		t.Fatalf("a ledger node's signed answer: %q, %v", got, err)
	}
	var info NodeInfo
	if err := k.c.At("ledger-a").Call(context.Background(), MethodNodeInfo, struct{}{}, &info); err != nil || info.ID != "ledger-a" {
		t.Fatalf("node.info from the node asked: %+v %v", info, err)
	}
}

// TestForgedAnswersRefused: whoever answers a query without being a node
// that may give the answer is refused before the caller sees anything —
// unsigned, signed by an executor or an operator, by another root, for
// another node, or with a body changed after signing.
func TestForgedAnswersRefused(t *testing.T) {
	other, err := trust.NewRoot()
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := trust.NewIdentity(other, "ledger-x", trust.KindNode, []string{event.RoleOrchestrator}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		ident func(k *signedKit) *trust.Identity
		want  string
	}{
		{"unsigned", func(*signedKit) *trust.Identity { return nil }, "carries no signature"},
		{"executor", func(k *signedKit) *trust.Identity {
			return k.identity(trust.KindNode, "exec-b", event.RoleExecutor)
		}, "may not answer gates.list"},
		{"operator", func(k *signedKit) *trust.Identity {
			return k.identity(trust.KindOperator, "op", event.RoleOperator)
		}, "not a node"},
		{"another root", func(*signedKit) *trust.Identity { return foreign }, "signer ledger-x"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			k := newSignedKit(t)
			id := tc.ident(k)
			name := "liar"
			if id != nil {
				name = id.ID
			}
			k.serve(name, id, "echo hello")
			_, err := k.gateCommand(k.c)
			if !errors.Is(err, ErrUnverified) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want a refusal saying %q, got %v", tc.want, err)
			}
			if HintOf(err) == "" {
				t.Error("the refusal gives no hint")
			}
		})
	}
}

func TestAnswerForAnotherNodeRefused(t *testing.T) {
	k := newSignedKit(t)
	// A ledger node that answers on another node's subject.
	srv := NewServer(connect(t, k.url), "ledger-b", nil)
	ident := k.identity(trust.KindNode, "ledger-b", event.RoleMemory)
	srv.Sign(func() *trust.Identity { return ident })
	nc := connect(t, k.url)
	sub, err := nc.Subscribe(NodeSubject("ledger-a", MethodNodeInfo), func(m *nats.Msg) {
		srv.respond(MethodNodeInfo, m, NodeInfo{ID: "ledger-a"}, nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	err = k.c.At("ledger-a").Call(context.Background(), MethodNodeInfo, struct{}{}, &NodeInfo{})
	if !errors.Is(err, ErrUnverified) || !strings.Contains(err.Error(), "ledger-b signed") {
		t.Fatalf("want the answer of another node refused, got %v", err)
	}
}

// TestReplayedAnswerRefused: a real signed answer passed off as the answer
// to another request (a relay that asked the node itself) is refused.
func TestReplayedAnswerRefused(t *testing.T) {
	k := newSignedKit(t)
	ident := k.identity(trust.KindNode, "ledger-a", event.RoleOrchestrator)
	k.serve("ledger-a", ident, "rm -rf ./precious")

	for _, tc := range []struct {
		name   string
		mangle func(real *nats.Msg) *nats.Msg
		want   string
	}{
		{"another request's answer", func(real *nats.Msg) *nats.Msg { return real }, "another request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The relay answers on a subject the client asks (a node's
			// own subject) with what the real node answered it.
			relay := connect(t, k.url)
			sub, err := relay.Subscribe(NodeSubject("relay", MethodGatesList), func(m *nats.Msg) {
				req := nats.NewMsg(SubjectPrefix + MethodGatesList)
				req.Data = m.Data
				req.Header.Set(HeaderNonce, "relay's own nonce")
				real, err := relay.RequestMsg(req, 2*time.Second)
				if err != nil {
					return
				}
				out := tc.mangle(real)
				out.Subject = m.Reply
				_ = relay.PublishMsg(out)
			})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = sub.Unsubscribe() }()
			if err := relay.Flush(); err != nil {
				t.Fatal(err)
			}
			_, err = k.gateCommand(k.c.At("relay"))
			if !errors.Is(err, ErrUnverified) {
				t.Fatalf("want the relayed answer refused, got %v", err)
			}
			if !strings.Contains(err.Error(), tc.want) && !strings.Contains(err.Error(), "signed for") {
				t.Fatalf("want a refusal saying %q, got %v", tc.want, err)
			}
		})
	}
}

func TestRevokedSignerRefused(t *testing.T) {
	k := newSignedKit(t)
	k.serve("ledger-a", k.identity(trust.KindNode, "ledger-a", event.RoleOrchestrator), "true")
	c := k.c.WithTrust(&Trust{Verifier: envelope.NewVerifier(k.root), Revoked: func(c *trust.Credential) error {
		if c.ID == "ledger-a" {
			return errors.New("revoked by the administrator")
		}
		return nil
	}})
	if _, err := k.gateCommand(c); !errors.Is(err, ErrUnverified) || !strings.Contains(err.Error(), "revoked by the administrator") {
		t.Fatalf("want a revoked signer refused, got %v", err)
	}
}

// TestGatherDropsForgedAnswers: a broadcast answered by a node that may
// not give the answer keeps only the answers that verify, and names the
// others as refused.
func TestGatherDropsForgedAnswers(t *testing.T) {
	k := newSignedKit(t)
	good := NewServer(connect(t, k.url), "ledger-a", nil)
	gid := k.identity(trust.KindNode, "ledger-a", event.RoleMemory)
	good.Sign(func() *trust.Identity { return gid })
	bad := NewServer(connect(t, k.url), "exec-b", nil)
	bid := k.identity(trust.KindNode, "exec-b", event.RoleExecutor)
	bad.Sign(func() *trust.Identity { return bid })
	for _, s := range []*Server{good, bad} {
		HandleTyped(s, MethodLedgerHead, func(context.Context, HeadRequest) (LedgerHead, error) {
			return LedgerHead{Node: s.node, Seq: 7}, nil
		})
		s.Broadcast(MethodLedgerHead)
		if err := s.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Stop)
	}
	heads, err := k.c.LedgerHeads(context.Background(), 500*time.Millisecond)
	if len(heads) != 1 || heads[0].Node != "ledger-a" {
		t.Fatalf("want only ledger-a's head, got %+v", heads)
	}
	if !errors.Is(err, ErrUnverified) || !strings.Contains(err.Error(), "exec-b") {
		t.Fatalf("want exec-b's answer named as refused, got %v", err)
	}
}

// TestTamperedBodyRefused: an answer whose signature is right for the
// request but whose body was changed after signing is refused.
func TestTamperedBodyRefused(t *testing.T) {
	k := newSignedKit(t)
	srv := NewServer(connect(t, k.url), "ledger-z", nil)
	ident := k.identity(trust.KindNode, "ledger-z", event.RoleOrchestrator)
	srv.Sign(func() *trust.Identity { return ident })
	nc := connect(t, k.url)
	sub, err := nc.Subscribe(NodeSubject("ledger-z", MethodGatesList), func(m *nats.Msg) {
		real := srv.encode(MethodGatesList, Page[Gate]{Items: []Gate{{Run: "r1", Spec: &event.Step{Run: "rm -rf ./precious"}}}, End: true}, nil)
		sig, err := srv.sign(MethodGatesList, m, real)
		if err != nil {
			t.Error(err)
			return
		}
		out := nats.NewMsg(m.Reply)
		out.Header.Set(HeaderNode, "ledger-z")
		out.Header.Set(HeaderSignature, string(sig))
		out.Data = []byte(strings.Replace(string(real), "rm -rf ./precious", "echo hello", 1))
		_ = m.RespondMsg(out)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := k.gateCommand(k.c.At("ledger-z")); !errors.Is(err, ErrUnverified) || !strings.Contains(err.Error(), "not the body") {
		t.Fatalf("want the changed body refused, got %v", err)
	}
}

// BenchmarkCall measures one request/reply over a real NATS server,
// unsigned and signed-and-checked, in the same run: the cost of signed
// answers as a client meets it (sign on the node, verify on the client).
func BenchmarkCall(b *testing.B) {
	root, err := trust.NewRoot()
	if err != nil {
		b.Fatal(err)
	}
	ident, err := trust.NewIdentity(root, "ledger-a", trust.KindNode, []string{event.RoleOrchestrator}, time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	for _, signed := range []bool{false, true} {
		name := "unsigned"
		if signed {
			name = "signed"
		}
		b.Run(name, func(b *testing.B) {
			url := startNATS(b)
			nc1, err := nats.Connect(url)
			if err != nil {
				b.Fatal(err)
			}
			defer nc1.Close()
			nc2, err := nats.Connect(url)
			if err != nil {
				b.Fatal(err)
			}
			defer nc2.Close()
			srv := NewServer(nc1, "ledger-a", nil)
			c := NewClient(nc2, 2*time.Second)
			if signed {
				srv.Sign(func() *trust.Identity { return ident })
				c = c.WithTrust(&Trust{Verifier: envelope.NewVerifier(root)})
			}
			HandleTyped(srv, MethodNodeInfo, func(context.Context, struct{}) (NodeInfo, error) { return NodeInfo{ID: "ledger-a"}, nil })
			if err := srv.Start(); err != nil {
				b.Fatal(err)
			}
			defer srv.Stop()
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				var info NodeInfo
				if err := c.Call(ctx, MethodNodeInfo, struct{}{}, &info); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
