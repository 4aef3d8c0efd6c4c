// Package natssource is pacer's NATS JetStream source (a durable pull consumer)
// and dead-letter publisher.
//
// The Source pulls small batches (Config.Batch) and starts the next pull
// only once at most half a batch is still waiting for the engine, so at most
// 1.5 x Batch messages wait client-side (never the library's 500-message
// prefetch) while their AckWait runs. Every message it fetched and that is not yet settled is kept alive
// with InProgress once it is older than half the consumer's AckWait, so a
// message waiting for tokens is not redelivered elsewhere.
//
// Settling: Ack after success, NakWithDelay (never a bare Nak) for retries,
// TermWithReason after a dead-letter write.
//
// max_deliver: JetStream counts every delivery, whichever way a message is
// handed back (Nak, NakWithDelay, or AckWait left to expire; InProgress
// does not count), and discards a message once the count reaches the
// consumer's MaxDeliver. The engine's retries happen in-process and spend
// no delivery; a stop (or a failed dead-letter write) hands messages back
// and spends one each. A message on its last delivery is never handed back
// on stop: its Acker reports LastDelivery and the engine dead-letters it
// with pacer.ErrLastDelivery instead.
package natssource

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pacer-dev/pacer/internal/base/connretry"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/sourcekit"
)

var _ pacer.Source = (*Source)(nil)

// Source consumes a JetStream durable pull consumer.
//
// Pause stops pulling. After Pause returns at most one message may still be
// handed to deliver (one already being handed over); messages of a pull
// under way (at most 1.5 x Batch) are held, kept alive with InProgress, and
// handed over after Resume. Pause never touches the server-side consumer (PauseConsumer would
// pause every worker).
//
// Run does not close the connection when it returns, so that the engine can
// still settle messages it holds; call Close once the engine has finished.
// A Source runs once; its methods are safe for concurrent use.
type Source struct {
	cfg Config

	mu    sync.Mutex
	gate  sourcekit.PauseGate
	nc    *nats.Conn
	ownNC bool

	ran atomic.Bool

	outMu sync.Mutex
	out   map[*tracked]struct{} // fetched and not settled

	delivered  atomic.Int64
	inProgress atomic.Int64
	// maxDeliver is the consumer's MaxDeliver as the server reports it
	// (<= 0: unlimited).
	maxDeliver atomic.Int64
	// connErr says why Run cannot reach the server yet (nil once connected).
	connErr atomic.Pointer[string]
	paths   atomic.Int64 // per-subject paths started (SubjectToken)
	// holdBound is the engine's bound (HoldBound; 0: none passed).
	holdBound int

	probMu   sync.Mutex
	problems map[string]string // consumer name -> why its path cannot pull (rebind.go)
}

// defaultMaxAckPending is MaxAckPending without a configured value or an
// engine bound.
const defaultMaxAckPending = 1000

// HoldBound implements pacer.HoldBounded: with MaxAckPending unset, the
// consumer's MaxAckPending covers the engine's bound n plus what the source
// fetches ahead. The next pull starts once at most half a batch waits for
// the engine, so up to 1.5 x Batch sit on the client side; anything less
// lets the server stop delivering while the engine still has room, and
// messages then sit unacked toward AckWait. Called before Run.
func (s *Source) HoldBound(n int) { s.holdBound = n }

// maxAckPending is the MaxAckPending of a consumer this source creates.
func (s *Source) maxAckPending() int {
	switch {
	case s.cfg.MaxAckPending > 0:
		return s.cfg.MaxAckPending
	case s.holdBound > 0:
		b := s.cfg.Batch
		return s.holdBound + b + (b+1)/2
	}
	return defaultMaxAckPending
}

// tracked is one fetched message until it is settled.
type tracked struct {
	msg     jetstream.Msg
	touched time.Time // arrival or last InProgress
	settled atomic.Bool
	bytes   int64 // msgBytes
	last    bool  // on its last delivery (NumDelivered >= the consumer's MaxDeliver)
}

// New validates cfg and returns a Source. It does not connect: Run does.
func New(cfg Config) (*Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Source{cfg: cfg.withDefaults(), out: map[*tracked]struct{}{}, problems: map[string]string{}}
	return s, nil
}

// Pause stops pulling; see Source for the bound.
func (s *Source) Pause() { s.gate.Pause() }

// Resume undoes Pause.
func (s *Source) Resume() { s.gate.Resume() }

// Delivered counts messages handed to deliver; InProgressSent counts
// InProgress acknowledgements sent to keep held messages alive.
func (s *Source) Delivered() int64      { return s.delivered.Load() }
func (s *Source) InProgressSent() int64 { return s.inProgress.Load() }

// Outstanding is how many fetched messages are not yet settled.
func (s *Source) Outstanding() int {
	s.outMu.Lock()
	defer s.outMu.Unlock()
	return len(s.out)
}

// Close flushes pending acknowledgements and closes the connection the
// Source dialled (a Config.NC is left open). Call it after the engine has
// settled what it could.
func (s *Source) Close() error {
	s.mu.Lock()
	nc, own := s.nc, s.ownNC
	s.nc = nil
	s.mu.Unlock()
	if nc == nil {
		return nil
	}
	err := nc.FlushTimeout(5 * time.Second)
	if own {
		nc.Close()
	}
	if err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
		return fmt.Errorf("nats: flush on close: %w", err)
	}
	return nil
}

// Run pulls until ctx is done (returning ctx's error), deliver fails outside
// ctx (the engine stops: nil), or setup fails. ctx ending while Run still
// dials, looks up the stream or creates its consumer is a stop like any
// other: Run returns ctx's error itself, not a setup failure wrapping it
// (which the engine took for a fatal error: exit 1 on a SIGTERM just after
// start).
func (s *Source) Run(ctx context.Context, deliver func(context.Context, *pacer.Message) error) error {
	if s.ran.Swap(true) {
		return errors.New("nats: Source.Run called twice")
	}
	err := s.run(ctx, deliver)
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return ctx.Err()
	}
	return err
}

// run is Run, its setup failures wrapped with what failed.
func (s *Source) run(ctx context.Context, deliver func(context.Context, *pacer.Message) error) error {
	nc := s.cfg.NC
	own := false
	if nc == nil {
		var err error
		if nc, err = s.dial(ctx); err != nil {
			return err
		}
		own = true
	}
	s.mu.Lock()
	s.nc, s.ownNC = nc, own
	s.mu.Unlock()
	if s.cfg.SubjectToken > 0 {
		return s.runPerSubject(ctx, nc, deliver)
	}

	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("nats: jetstream: %w", err)
	}
	b := s.singleBinding(js)
	cons, ackWait, err := s.bind(ctx, b)
	if err != nil {
		return err
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	h := s.newHandover()

	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); s.keepAlive(ctx, ackWait) }()
	go func() { defer wg.Done(); s.pull(ctx, b, cons, h) }()

	stopped := s.deliverLoop(ctx, deliver, h)
	cancel()
	wg.Wait()
	// Give back what was fetched but never handed over. A message on its
	// last delivery (max_deliver) would be discarded by the server if given
	// back: it is handed to the engine instead, which, stopping, writes it
	// to the dead-letter destination (pacer.LastDeliverer).
	s.giveBackAll(ctx, h.local, deliver)
	if stopped {
		return nil
	}
	return ctx.Err()
}

// dial connects. While no server answers it retries with backoff (0.5s
// doubling to 30s), logging each failure and reporting it through Ready,
// until ctx is done; other errors (authentication, TLS) are returned at once.
func (s *Source) dial(ctx context.Context) (*nats.Conn, error) {
	nc, attempts, err := connretry.Until(ctx,
		func() (*nats.Conn, error) { return s.cfg.Conn.connect(s.cfg.Logger) },
		func(err error) bool { return errors.Is(err, nats.ErrNoServers) },
		func(attempt int, wait time.Duration, err error) {
			msg := err.Error()
			s.connErr.Store(&msg)
			s.cfg.Logger.Warn("nats: server unreachable; retrying", append(s.cfg.Conn.logAttrs(), "attempt", attempt, "retry_in", wait, "err", err)...)
		})
	if err != nil {
		return nil, err
	}
	s.connErr.Store(nil)
	if attempts > 1 {
		s.cfg.Logger.Info("nats: connected", "server", nc.ConnectedUrlRedacted(), "attempts", attempts)
	}
	return nc, nil
}

// singleBinding is the binding of the one consumer (SubjectToken 0).
func (s *Source) singleBinding(js jetstream.JetStream) *binding {
	b := &binding{js: js, name: s.cfg.Consumer}
	if s.cfg.Create {
		cc := jetstream.ConsumerConfig{
			Durable:       s.cfg.Consumer,
			FilterSubject: s.cfg.FilterSubject,
			AckPolicy:     jetstream.AckExplicitPolicy,
			AckWait:       s.cfg.AckWait,
			MaxAckPending: s.maxAckPending(),
			MaxDeliver:    s.cfg.MaxDeliver,
		}
		if s.cfg.DeliverPolicy == DeliverNew {
			cc.DeliverPolicy = jetstream.DeliverNewPolicy
		}
		b.cc = &cc
	}
	return b
}

// handover is one pull path's messages fetched and not yet handed to the
// engine: the pull fills local, the deliver loop empties it.
type handover struct {
	local    chan *tracked
	unhanded atomic.Int64 // messages in local or being handed over
	bytes    atomic.Int64 // their payload bytes (msgBytes)
	handed   chan struct{}
}

// newHandover sizes local for what a pull may add to what waits: at most
// Batch/2 wait when a pull starts, plus Batch from it, so the channel never
// blocks the puller.
func (s *Source) newHandover() *handover {
	return &handover{local: make(chan *tracked, s.cfg.Batch+s.cfg.Batch/2+1), handed: make(chan struct{}, 1)}
}

// msgBytes is what a fetched message counts against FetchBytes: its data
// and headers.
func msgBytes(msg jetstream.Msg) int64 {
	n := len(msg.Data())
	for k, vs := range msg.Headers() {
		for _, v := range vs {
			n += len(k) + len(v) + 4
		}
	}
	return int64(n)
}

// pull fetches a batch whenever the Source is not paused and the engine has
// taken most of what was fetched before. It pipelines: the next pull starts
// once at most Batch/2 messages and FetchBytes/2 bytes still wait to be
// handed over, and asks for at most Batch messages and FetchBytes bytes.
// After a byte-bounded pull that brought nothing (the next message may be
// larger than FetchBytes: the server then sends nothing), one pull asks for
// a single message of any size. So what waits unseen by the engine stays
// within 1.5 x Batch messages, and within 1.5 x FetchBytes or FetchBytes/2
// plus one message. A pull that fails, or hears no heartbeat, checks the
// consumer (recoverConsumer).
func (s *Source) pull(ctx context.Context, b *binding, cons jetstream.Consumer, h *handover) {
	one := false // the next pull asks for one message of any size
	backoff := 50 * time.Millisecond
	for {
		for h.unhanded.Load() > int64(s.cfg.Batch/2) || h.bytes.Load() > int64(s.cfg.FetchBytes/2) {
			select {
			case <-h.handed:
			case <-ctx.Done():
				return
			}
		}
		paused, resumed, _ := s.gate.State()
		if paused {
			select {
			case <-resumed:
			case <-ctx.Done():
				return
			}
			continue
		}
		fctx, fcancel := context.WithTimeout(ctx, s.cfg.FetchWait)
		opts := []jetstream.FetchOpt{jetstream.FetchContext(fctx)}
		if hb := s.cfg.FetchWait / 5; hb >= 50*time.Millisecond {
			opts = append(opts, jetstream.FetchHeartbeat(hb))
		}
		n := 1
		if !one {
			n = s.cfg.Batch
			opts = append(opts, jetstream.FetchMaxBytes(s.cfg.FetchBytes))
		}
		batch, err := cons.Fetch(n, opts...)
		got := 0
		if err == nil {
			for msg := range batch.Messages() {
				tr := s.track(msg)
				h.unhanded.Add(1)
				h.bytes.Add(tr.bytes)
				got++
				h.local <- tr // never blocks: see newHandover
			}
			err = batch.Error()
		}
		fcancel()
		if ctx.Err() != nil {
			return
		}
		one = !one && got == 0 && err == nil
		if err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, nats.ErrTimeout) {
			s.cfg.Logger.Warn("nats: fetch", "stream", s.cfg.Stream, "consumer", b.name, "err", err)
			if cons = s.recoverConsumer(ctx, b, cons, err); cons == nil {
				return
			}
			// The consumer is there (or back): a failure that repeats
			// anyway is not retried in a tight loop.
			t := time.NewTimer(backoff)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
			backoff = min(2*backoff, 2*time.Second)
			continue
		}
		backoff = 50 * time.Millisecond
	}
}

// deliverLoop hands fetched messages over; it reports whether it stopped
// because deliver failed outside ctx.
func (s *Source) deliverLoop(ctx context.Context, deliver func(context.Context, *pacer.Message) error, h *handover) bool {
	for {
		paused, resumed, pausedC := s.gate.State()
		if paused {
			select {
			case <-resumed:
				continue
			case <-ctx.Done():
				return false
			}
		}
		var tr *tracked
		select {
		case tr = <-h.local:
		case <-pausedC:
			continue
		case <-ctx.Done():
			return false
		}
		m, err := s.convert(tr)
		if err == nil {
			err = deliver(ctx, m)
		} else {
			s.cfg.Logger.Warn("nats: message without JetStream metadata", "subject", tr.msg.Subject(), "err", err)
		}
		if err != nil {
			s.giveBack(tr)
		} else {
			s.delivered.Add(1)
		}
		h.unhanded.Add(-1)
		h.bytes.Add(-tr.bytes)
		select {
		case h.handed <- struct{}{}:
		default:
		}
		if err != nil && ctx.Err() == nil && m != nil {
			return true // the engine is stopping
		}
	}
}

func (s *Source) convert(tr *tracked) (*pacer.Message, error) {
	md, err := tr.msg.Metadata()
	if err != nil {
		return nil, err
	}
	m := &pacer.Message{
		ID:        messageID(md),
		Value:     tr.msg.Data(),
		Topic:     tr.msg.Subject(),
		Offset:    int64(md.Sequence.Stream),
		Timestamp: md.Timestamp,
		Delivered: int(md.NumDelivered),
		Acker:     &acker{s: s, tr: tr},
	}
	if mdl := s.maxDeliver.Load(); mdl > 0 && md.NumDelivered >= uint64(mdl) {
		tr.last = true
	}
	if h := tr.msg.Headers(); len(h) > 0 {
		m.Headers = make(map[string]string, len(h))
		for k, vs := range h {
			if len(vs) > 0 {
				m.Headers[k] = vs[0]
			}
		}
		if k := h.Get(s.cfg.KeyHeader); k != "" {
			m.Key = []byte(k)
		}
	}
	return m, nil
}

// messageID is a message's ID: <stream>/<sequence>@<stored>, stored being
// the time the stream stored the message, in Unix nanoseconds (the server
// assigns it and keeps it with the message). Sequences restart at 1 when a
// stream is deleted and created again; the stored time does not repeat, so
// the ID is unique across the stream's generations, and the same on every
// redelivery and for every consumer of the stream.
func messageID(md *jetstream.MsgMetadata) string {
	return md.Stream + "/" + strconv.FormatUint(md.Sequence.Stream, 10) + "@" + strconv.FormatInt(md.Timestamp.UnixNano(), 10)
}

func (s *Source) track(msg jetstream.Msg) *tracked {
	tr := &tracked{msg: msg, touched: time.Now(), bytes: msgBytes(msg)}
	s.outMu.Lock()
	s.out[tr] = struct{}{}
	s.outMu.Unlock()
	return tr
}

// settle removes tr from the outstanding set; it reports whether this call
// was the first to settle it.
func (s *Source) settle(tr *tracked) bool {
	if !tr.settled.CompareAndSwap(false, true) {
		return false
	}
	s.outMu.Lock()
	delete(s.out, tr)
	s.outMu.Unlock()
	return true
}

// giveBack returns a message that was never handed over.
func (s *Source) giveBack(tr *tracked) {
	if s.settle(tr) {
		if err := tr.msg.NakWithDelay(s.cfg.ReturnDelay); err != nil {
			s.cfg.Logger.Debug("nats: give back", "err", err)
		}
	}
}

// keepAlive sends InProgress for every outstanding message older than half
// of ackWait, checking every quarter of it. (A wall-clock ticker on purpose:
// the server's AckWait runs on wall time.)
func (s *Source) keepAlive(ctx context.Context, ackWait time.Duration) {
	every := max(ackWait/4, time.Millisecond)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			s.outMu.Lock()
			var due []*tracked
			for tr := range s.out {
				if now.Sub(tr.touched) >= ackWait/2 {
					tr.touched = now
					due = append(due, tr)
				}
			}
			s.outMu.Unlock()
			for _, tr := range due {
				if tr.settled.Load() {
					continue
				}
				if err := tr.msg.InProgress(); err != nil {
					s.cfg.Logger.Debug("nats: in progress", "err", err)
					continue
				}
				s.inProgress.Add(1)
			}
		}
	}
}

// acker settles one JetStream message; the first call wins, later calls
// return nil.
type acker struct {
	s  *Source
	tr *tracked
}

func (a *acker) Ack(context.Context) error {
	if !a.s.settle(a.tr) {
		return nil
	}
	return a.tr.msg.Ack()
}

// Nak redelivers no sooner than delay (ReturnDelay if delay <= 0: never a
// bare Nak).
func (a *acker) Nak(_ context.Context, delay time.Duration) error {
	if !a.s.settle(a.tr) {
		return nil
	}
	if delay <= 0 {
		delay = a.s.cfg.ReturnDelay
	}
	return a.tr.msg.NakWithDelay(delay)
}

var _ pacer.LastDeliverer = (*acker)(nil)

// LastDelivery implements pacer.LastDeliverer: the consumer has a
// MaxDeliver and this message has reached it, so the server discards it
// instead of redelivering it if it is handed back (Nak, or AckWait).
func (a *acker) LastDelivery() bool { return a.tr.last }

// Term stops redelivery for good. The reason goes into the server's
// advisory only where the server understands it: a server older than 2.10.4
// silently ignores a +TERM that carries a reason and redelivers the message,
// so there a plain Term is sent (the reason is in the dead letter anyway).
func (a *acker) Term(_ context.Context, reason string) error {
	if !a.s.settle(a.tr) {
		return nil
	}
	if reason != "" && termReasonSupported(a.s.serverVersion()) {
		return a.tr.msg.TermWithReason(reason)
	}
	return a.tr.msg.Term()
}

// termReasonSupported reports whether a server of version v (e.g. "2.10.4")
// honours TermWithReason. An unknown version gets the plain Term, which
// every server honours.
func termReasonSupported(v string) bool {
	var major, minor, patch int
	if _, err := fmt.Sscanf(v, "%d.%d.%d", &major, &minor, &patch); err != nil {
		return false
	}
	switch {
	case major != 2:
		return major > 2
	case minor != 10:
		return minor > 10
	default:
		return patch >= 4
	}
}

// serverVersion is the connected server's version ("" when unknown).
func (s *Source) serverVersion() string {
	s.mu.Lock()
	nc := s.nc
	s.mu.Unlock()
	if nc == nil {
		return ""
	}
	return nc.ConnectedServerVersion()
}

var _ pacer.HoldBounded = (*Source)(nil)
