package natssource

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/pacer-dev/pacer/pacer"
)

// Per-subject pull (Config.SubjectToken > 0).
//
// One JetStream consumer reads one stream of messages: once pacer holds a
// hot tenant's share, the next message in the stream may be anyone's, so
// the whole consumer waits, as a full FIFO queue does. With SubjectToken =
// N, the Source instead pulls each value of the subject's Nth token (a
// tenant: jobs.<tenant>.>) through its own durable consumer, filtered to
// that value, with its own small pull loop and its own hand-over path. A
// tenant at its share (pacer.Fairness.MaxShare) then waits alone: its
// consumer is not read further, the others go on, and nothing more is
// buffered (each path holds at most 1.5 x Batch fetched messages, as the
// single consumer does).
//
// Tenants are found in the stream (stream info, subjects matching
// FilterSubject) at start and every DiscoverInterval, and a new one at its
// first message: a headers-only ordered consumer of new messages on
// FilterSubject (subject and headers, no payload) names each tenant as it
// appears, so its consumer starts at once rather than at the next
// discovery. Each tenant gets the durable
// Consumer+"_"+tenant (shared by every worker, like the single consumer),
// removed by the server after ConsumerInactive without use. A message
// without the key header gets its tenant as Message.Key, so fairness by
// "key" shares by tenant. Acks, InProgress, max_deliver and the stop
// give-back are those of the single consumer, per path.

// subjectFilterFor returns filter with its token n (1-based) replaced by
// key.
func subjectFilterFor(filter string, n int, key string) string {
	t := strings.Split(filter, ".")
	t[n-1] = key
	return strings.Join(t, ".")
}

// subjectToken returns the n-th token of subject ("" if it has fewer).
func subjectToken(subject string, n int) string {
	for i := 1; ; i++ {
		tok, rest, more := strings.Cut(subject, ".")
		if i == n {
			return tok
		}
		if !more {
			return ""
		}
		subject = rest
	}
}

// validateSubjectToken checks the per-subject settings (see Config).
func (c *Config) validateSubjectToken() error {
	if c.SubjectToken == 0 {
		return nil
	}
	if c.SubjectToken < 0 {
		return fmt.Errorf("%w: tenant_in_subject %d (want >= 1, or 0 for one consumer)", ErrInvalidConfig, c.SubjectToken)
	}
	if !c.Create {
		return fmt.Errorf("%w: tenant_in_subject needs create: true (pacer creates a consumer per tenant)", ErrInvalidConfig)
	}
	t := strings.Split(c.FilterSubject, ".")
	if c.FilterSubject == "" || len(t) < c.SubjectToken || t[c.SubjectToken-1] != "*" {
		return fmt.Errorf("%w: tenant_in_subject %d needs filter_subject with '*' as token %d (e.g. jobs.*.> for jobs.<tenant>.>), got %q",
			ErrInvalidConfig, c.SubjectToken, c.SubjectToken, c.FilterSubject)
	}
	if c.DiscoverInterval < 0 || c.ConsumerInactive < 0 {
		return fmt.Errorf("%w: negative discover_interval or consumer_inactive", ErrInvalidConfig)
	}
	return nil
}

// consumerNameFor is the durable of one tenant: Consumer_tenant, with any
// character a consumer name cannot hold hex-escaped.
func (s *Source) consumerNameFor(key string) string {
	var b strings.Builder
	b.WriteString(s.cfg.Consumer)
	b.WriteByte('_')
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "_%02x", c)
		}
	}
	return b.String()
}

// Paths is the number of per-subject paths running (0 with one consumer).
func (s *Source) Paths() int { return int(s.paths.Load()) }

// subjectPath is one tenant's consumer and its hand-over path.
type subjectPath struct {
	key string
	*handover
}

// runPerSubject is Run with SubjectToken set.
func (s *Source) runPerSubject(ctx context.Context, nc *nats.Conn, deliver func(context.Context, *pacer.Message) error) error {
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("nats: jetstream: %w", err)
	}
	stream, err := js.Stream(ctx, s.cfg.Stream)
	if err != nil {
		return fmt.Errorf("nats: stream %s: %w", s.cfg.Stream, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var (
		mu       sync.Mutex
		paths    = map[string]*subjectPath{}
		wg       sync.WaitGroup
		stopped  atomic.Bool
		ackWaitC = make(chan time.Duration, 1)
	)
	withKey := func(key string) func(context.Context, *pacer.Message) error {
		return func(c context.Context, m *pacer.Message) error {
			if m.Key == nil {
				m.Key = []byte(key)
			}
			return deliver(c, m)
		}
	}
	start := func(key string) error {
		cc := jetstream.ConsumerConfig{
			Durable:           s.consumerNameFor(key),
			FilterSubject:     subjectFilterFor(s.cfg.FilterSubject, s.cfg.SubjectToken, key),
			AckPolicy:         jetstream.AckExplicitPolicy,
			AckWait:           s.cfg.AckWait,
			MaxAckPending:     s.maxAckPending(),
			MaxDeliver:        s.cfg.MaxDeliver,
			InactiveThreshold: s.cfg.ConsumerInactive,
		}
		if s.cfg.DeliverPolicy == DeliverNew {
			cc.DeliverPolicy = jetstream.DeliverNewPolicy
		}
		b := &binding{js: js, name: cc.Durable, cc: &cc}
		cons, ackWait, err := s.bind(ctx, b)
		if err != nil {
			return err
		}
		select {
		case ackWaitC <- ackWait:
		default:
		}
		p := &subjectPath{key: key, handover: s.newHandover()}
		mu.Lock()
		paths[key] = p
		mu.Unlock()
		s.paths.Add(1)
		s.cfg.Logger.Debug("nats: per-subject consumer", "consumer", cc.Durable, "filter", cc.FilterSubject)
		wg.Add(2)
		go func() { defer wg.Done(); s.pull(ctx, b, cons, p.handover) }()
		go func() {
			defer wg.Done()
			if s.deliverLoop(ctx, withKey(key), p.handover) {
				stopped.Store(true)
				cancel()
			}
		}()
		return nil
	}
	discover := func() error {
		info, err := stream.Info(ctx, jetstream.WithSubjectFilter(s.cfg.FilterSubject))
		if err != nil {
			return err
		}
		for subj := range info.State.Subjects {
			key := subjectToken(subj, s.cfg.SubjectToken)
			mu.Lock()
			_, ok := paths[key]
			mu.Unlock()
			if key == "" || ok {
				continue
			}
			if err := start(key); err != nil {
				return err
			}
		}
		return nil
	}
	if err := discover(); err != nil {
		cancel()
		wg.Wait()
		return fmt.Errorf("nats: per-subject discovery on stream %s: %w", s.cfg.Stream, err)
	}
	fresh, stopWatch := s.watchNewTenants(ctx, stream, func(key string) bool {
		mu.Lock()
		defer mu.Unlock()
		_, ok := paths[key]
		return ok
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		ackWait := s.cfg.AckWait
		select {
		case ackWait = <-ackWaitC:
		default:
		}
		s.keepAlive(ctx, ackWait)
	}()
	t := time.NewTicker(s.cfg.DiscoverInterval)
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case key := <-fresh:
			mu.Lock()
			_, ok := paths[key]
			mu.Unlock()
			if !ok {
				if err := start(key); err != nil && ctx.Err() == nil {
					s.cfg.Logger.Warn("nats: per-subject consumer for a new tenant", "stream", s.cfg.Stream, "tenant", key, "err", err)
				}
			}
		case <-t.C:
			if err := discover(); err != nil && ctx.Err() == nil {
				s.cfg.Logger.Warn("nats: per-subject discovery", "stream", s.cfg.Stream, "err", err)
			}
		}
	}
	t.Stop()
	stopWatch()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	for key, p := range paths {
		s.giveBackAll(ctx, p.local, withKey(key))
	}
	if stopped.Load() {
		return nil
	}
	return ctx.Err()
}

// giveBackAll empties local after the paths stopped: messages on their last
// delivery go to the engine (it dead-letters them), the rest back to the
// server.
func (s *Source) giveBackAll(ctx context.Context, local chan *tracked, deliver func(context.Context, *pacer.Message) error) {
	for {
		select {
		case tr := <-local:
			if m, err := s.convert(tr); err == nil && tr.last {
				if deliver(context.WithoutCancel(ctx), m) == nil {
					s.delivered.Add(1)
					continue
				}
			}
			s.giveBack(tr)
		default:
			return
		}
	}
}

// watchNewTenants reports each tenant that is not known yet (known says)
// as its first new message reaches the stream, through an ordered,
// headers-only consumer of new messages on FilterSubject: it costs one
// small message per published one and no payload. If it cannot start (no
// permission, an old server) the periodic discovery alone finds tenants,
// as before, and a WARN says so. stop ends it and waits for its handler to
// return. A tenant it drops (the channel is full) is found by the next
// discovery.
func (s *Source) watchNewTenants(ctx context.Context, stream jetstream.Stream, known func(string) bool) (fresh <-chan string, stop func()) {
	ch := make(chan string, 64)
	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{s.cfg.FilterSubject},
		DeliverPolicy:  jetstream.DeliverNewPolicy,
		HeadersOnly:    true,
	})
	var cc jetstream.ConsumeContext
	if err == nil {
		cc, err = cons.Consume(func(m jetstream.Msg) {
			key := subjectToken(m.Subject(), s.cfg.SubjectToken)
			if key == "" || known(key) {
				return
			}
			select {
			case ch <- key:
			default:
			}
		})
	}
	if err != nil {
		s.cfg.Logger.Warn("nats: cannot watch for new tenants; they are found every discover interval", "stream", s.cfg.Stream, "interval", s.cfg.DiscoverInterval, "err", err)
		return ch, func() {}
	}
	return ch, func() {
		cc.Stop()
		select {
		case <-cc.Closed():
		case <-time.After(5 * time.Second): // a server gone: nothing more will arrive
		}
	}
}
