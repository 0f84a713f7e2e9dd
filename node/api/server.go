package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/natsauth"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/internal/apiwire"
	"github.com/nats-io/nats.go"
)

// MaxConcurrent is how many handlers a Server runs at once; further
// requests wait for a free slot.
const MaxConcurrent = 16

// MaxLongPolls is how many long-polls (requests that may wait for something
// to happen, see LongPoller) a Server holds at once, apart from
// MaxConcurrent, so that followers never starve other queries. A long-poll
// beyond it is answered at once with ErrBusy: the client asks again.
const MaxLongPolls = 256

// LongPoller is implemented by request types whose requests may wait
// (AuditRequest with Wait): HandleTyped runs those under the long-poll
// budget.
type LongPoller interface {
	LongPoll() bool
}

// HeaderNode is the reply header naming the node that answered.
const HeaderNode = "Agentic-Node"

// Handler answers one request. req is the request's JSON (possibly empty).
// The answer is marshalled into Reply.Data; an error becomes Reply.Error,
// with the hint of a HintError in Reply.Hint and the code of a sentinel
// (ErrNotFound, ErrAmbiguous, ErrBadRequest) in Reply.Code. ctx is
// cancelled when the Server stops.
type Handler func(ctx context.Context, req json.RawMessage) (any, error)

const (
	stateNew = iota
	stateRunning
	stateStopped
)

// Server answers API methods for one node. Register handlers with Handle
// (or HandleTyped) before Start. The constructor starts nothing.
type Server struct {
	nc       *nats.Conn
	node     string
	log      *slog.Logger
	handlers map[string]Handler
	// longPoll tells, per method, whether a request is a long-poll.
	longPoll map[string]func(req []byte) bool
	// broadcast holds the methods also answered on AllSubject.
	broadcast map[string]bool
	// signer is the identity that signs every answer (Sign); nil answers
	// unsigned.
	signer func() *trust.Identity
	// selfOnly: the node answers on its own subject only, and on the
	// broadcast subject what it says of itself (SelfOnly).
	selfOnly bool
	sem      chan struct{}
	polls    chan struct{}
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	mu       struct {
		sync.Mutex
		state int
		subs  []*nats.Subscription
	}
}

// NewServer returns a server answering on nc as node. A nil logger
// discards.
func NewServer(nc *nats.Conn, node string, logger *slog.Logger) *Server {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{
		nc:        nc,
		node:      node,
		log:       logger.With("component", "api", "node", node),
		handlers:  make(map[string]Handler),
		longPoll:  make(map[string]func([]byte) bool),
		broadcast: make(map[string]bool),
		sem:       make(chan struct{}, MaxConcurrent),
		polls:     make(chan struct{}, MaxLongPolls),
		ctx:       ctx,
		cancel:    cancel,
	}
}

// Handle registers h for method (e.g. MethodRunsList), replacing any
// earlier handler. It panics when called after Start: registration is part
// of building the server.
func (s *Server) Handle(method string, h Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.state != stateNew {
		panic("api: Handle " + method + " after Start")
	}
	s.handlers[method] = h
	delete(s.longPoll, method)
}

// Methods are the methods registered so far, sorted.
func (s *Server) Methods() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.handlers))
}

// Broadcast makes every node serving method answer it on AllSubject too,
// each with its own reply (a scatter-gather: Client.Gather). Call it before
// Start, like Handle.
func (s *Server) Broadcast(method string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.state != stateNew {
		panic("api: Broadcast " + method + " after Start")
	}
	s.broadcast[method] = true
}

// Sign makes the server sign every answer as the identity id returns at
// the time (envelope.SignReply; see "Signed answers" in signed.go): a
// renewed credential signs from its renewal on. Call it before Start.
func (s *Server) Sign(id func() *trust.Identity) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.state != stateNew {
		panic("api: Sign after Start")
	}
	s.signer = id
}

// SelfOnly makes the server answer only on the node's own subject
// (NodeSubject) and, for natsauth.PerNodeMethods marked with Broadcast,
// on the broadcast subject: what a node whose roles do not answer the
// cluster's queries (natsauth.Answers) serves — NATS refuses it the queue
// group. Call it before Start.
func (s *Server) SelfOnly() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.state != stateNew {
		panic("api: SelfOnly after Start")
	}
	s.selfOnly = true
}

// HandleTyped registers a handler that takes a decoded Req and answers a
// Resp. An empty request decodes as the zero Req; undecodable JSON is
// answered with ErrBadRequest without calling h. Unknown request fields are
// ignored, so newer clients can ask older nodes. When Req is a LongPoller,
// its long-polls run under the long-poll budget.
func HandleTyped[Req, Resp any](s *Server, method string, h func(ctx context.Context, req Req) (Resp, error)) {
	s.Handle(method, func(ctx context.Context, raw json.RawMessage) (any, error) {
		var req Req
		if len(bytes.TrimSpace(raw)) > 0 {
			if err := json.Unmarshal(raw, &req); err != nil {
				return nil, fmt.Errorf("%w: %s: %v", ErrBadRequest, method, err)
			}
		}
		return h(ctx, req)
	})
	var zero Req
	if _, ok := any(zero).(LongPoller); ok {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.longPoll[method] = func(raw []byte) bool {
			var req Req
			if len(bytes.TrimSpace(raw)) > 0 && json.Unmarshal(raw, &req) != nil {
				return false // answered at once as a bad request
			}
			return any(req).(LongPoller).LongPoll()
		}
	}
}

// Start subscribes every handled method on SubjectPrefix+method in
// QueueGroup, on NodeSubject(node, method) (this node alone), and, for the
// methods marked with Broadcast, on AllSubject(method). It is idempotent;
// after Stop it returns ErrStopped.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.mu.state {
	case stateRunning:
		return nil
	case stateStopped:
		return ErrStopped
	}
	for method, h := range s.handlers {
		cb := s.dispatch(method, h)
		queue := SubjectPrefix + method
		subjects := []string{queue, NodeSubject(s.node, method)}
		if s.selfOnly {
			subjects = subjects[1:]
		}
		if s.broadcast[method] && (!s.selfOnly || slices.Contains(natsauth.PerNodeMethods, method)) {
			subjects = append(subjects, AllSubject(method))
		}
		for _, subj := range subjects {
			var sub *nats.Subscription
			var err error
			if subj == queue {
				sub, err = s.nc.QueueSubscribe(subj, QueueGroup, cb)
			} else {
				sub, err = s.nc.Subscribe(subj, cb)
			}
			if err != nil {
				s.unsubscribeLocked()
				return fmt.Errorf("api: subscribe %s: %w", subj, err)
			}
			s.mu.subs = append(s.mu.subs, sub)
		}
	}
	if err := s.nc.Flush(); err != nil {
		s.unsubscribeLocked()
		return fmt.Errorf("api: flush subscriptions: %w", err)
	}
	s.mu.state = stateRunning
	s.log.Info("api serving", "methods", len(s.handlers))
	return nil
}

// Stop unsubscribes, cancels the context of running handlers and waits for
// them to return. It is idempotent.
func (s *Server) Stop() {
	s.mu.Lock()
	wasRunning := s.mu.state == stateRunning
	s.mu.state = stateStopped
	s.unsubscribeLocked()
	s.mu.Unlock()
	if wasRunning {
		// The server has processed the unsubscriptions when Stop returns:
		// a request after it finds no responder here. A closed connection
		// has nothing left to flush.
		_ = s.nc.FlushTimeout(2 * time.Second)
	}
	s.cancel()
	s.wg.Wait()
	if wasRunning {
		s.log.Info("api stopped")
	}
}

func (s *Server) unsubscribeLocked() {
	for _, sub := range s.mu.subs {
		_ = sub.Unsubscribe() // fails only when the connection is closed: nothing left to undo
	}
	s.mu.subs = nil
}

// dispatch returns the NATS callback of method: an ordinary request waits
// for a free slot (backpressure on the subscription); a long-poll takes a
// slot of the long-poll budget or, when there is none, is answered ErrBusy
// at once. Each runs in its own goroutine.
func (s *Server) dispatch(method string, h Handler) nats.MsgHandler {
	longPoll := s.longPoll[method]
	return func(m *nats.Msg) {
		sem := s.sem
		if longPoll != nil && longPoll(m.Data) {
			sem = s.polls
			select {
			case sem <- struct{}{}:
			default:
				s.respond(method, m, nil, WithHint(fmt.Errorf("%w: %s: %d long-polls are waiting on node %s", ErrBusy, method, cap(s.polls), s.node),
					"ask again in a moment"))
				return
			}
		} else {
			select {
			case sem <- struct{}{}:
			case <-s.ctx.Done():
				return
			}
		}
		if !s.track() {
			<-sem
			return
		}
		go func() {
			defer s.wg.Done()
			defer func() { <-sem }()
			data, err := s.call(method, h, m.Data)
			s.respond(method, m, data, err)
		}()
	}
}

// LongPolls is how many long-polls the server holds now (at most
// MaxLongPolls).
func (s *Server) LongPolls() int { return len(s.polls) }

// track counts a handler goroutine in, unless the server is stopping.
func (s *Server) track() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.state != stateRunning {
		return false
	}
	s.wg.Add(1)
	return true
}

// replyHeaderRoom is what the reply's headers take from the max payload
// beside the signature, generously.
const replyHeaderRoom = 512

// respond answers m with data or err, signed when the server has a
// signer. An answer that would exceed the connection's max payload is
// replaced by an ErrTooLarge error, so the caller always hears why rather
// than timing out.
func (s *Server) respond(method string, m *nats.Msg, data any, err error) {
	if m.Reply == "" {
		return
	}
	body := s.encode(method, data, err)
	sig, serr := s.sign(method, m, body)
	limit := int(s.nc.MaxPayload()) - replyHeaderRoom - len(s.node) - len(sig)
	if len(body) > limit {
		s.log.Error("api answer too large", "method", method, "bytes", len(body), "max_payload", s.nc.MaxPayload())
		body = s.encode(method, nil, WithHint(fmt.Errorf("%w: the answer to %s is %d bytes, over the %d bytes NATS carries in one message",
			ErrTooLarge, method, len(body), s.nc.MaxPayload()), "ask for less (a lower limit); if it persists, report it: the node should have cut the answer into pages"))
		sig, serr = s.sign(method, m, body)
	}
	if serr != nil {
		// A client that checks signatures refuses an unsigned answer; say
		// why here, where it can be mended.
		s.log.Error("api sign answer", "method", method, "err", serr)
	}
	out := nats.NewMsg(m.Reply)
	out.Header.Set(HeaderNode, s.node)
	if len(sig) > 0 {
		out.Header.Set(HeaderSignature, string(sig))
	}
	out.Data = body
	if err := m.RespondMsg(out); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
		s.log.Warn("api respond", "method", method, "err", err)
	}
}

// sign is the signature of body, the answer to m (nil without a signer).
func (s *Server) sign(method string, m *nats.Msg, body []byte) ([]byte, error) {
	if s.signer == nil {
		return nil, nil
	}
	id := s.signer()
	if id == nil {
		return nil, errors.New("no identity to sign with")
	}
	var nonce string
	if m.Header != nil {
		nonce = m.Header.Get(HeaderNonce)
	}
	return envelope.SignReply(id, envelope.ReplyClaims{
		Method:  method,
		Subject: m.Subject,
		Request: RequestHash(m.Subject, nonce, m.Data),
		Body:    BodyHash(body),
	}, time.Now())
}

// encode is the Reply for data or err.
func (s *Server) encode(method string, data any, err error) []byte {
	reply := Reply{Data: data}
	if err != nil {
		reply = Reply{Error: err.Error(), Hint: HintOf(err), Code: apiwire.CodeOf(err)}
		if reply.Hint == "" && reply.Code == "" {
			// A failure of the node itself, not of the request.
			reply.Hint = "node " + s.node + " could not answer: its log says why; another node may answer"
			s.log.Warn("api error", "method", method, "err", err)
		} else {
			s.log.Debug("api error", "method", method, "err", err)
		}
	}
	body, err := json.Marshal(reply)
	if err != nil {
		s.log.Error("api marshal reply", "method", method, "err", err)
		body, _ = json.Marshal(Reply{Error: fmt.Sprintf("%s: cannot encode the answer: %v", method, err)})
	}
	return body
}

// call runs h, turning a panic into an error so one bad request cannot take
// the node down.
func (s *Server) call(method string, h Handler, req []byte) (data any, err error) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("api handler panic", "method", method, "panic", r)
			data, err = nil, fmt.Errorf("api: %s: internal error in node %s", method, s.node)
		}
	}()
	return h(apiwire.WithMaxPayload(s.ctx, s.nc.MaxPayload()), req)
}
