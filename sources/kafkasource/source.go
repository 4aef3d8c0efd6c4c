// Package kafkasource is pacer's Kafka source (a sarama consumer group) and
// dead-letter producer.
//
// The Source hands each message to the engine and commits offsets through a
// per-partition watermark: offset o+1 is marked only when every delivered
// offset <= o of that partition is final (Ack or Term). Nak leaves the
// offset uncommitted and hands the same message over again (Delivered+1)
// once the Nak's delay has passed, while the partition stays claimed, so a
// failed dead-letter write is retried and its partition does not stall
// behind it. If the partition is revoked first, the message comes back to
// the partition's next owner, which starts from the committed offset.
// Messages final above an unfinished one when the partition is given up
// (the engine finishes them in any order) are recorded in the commit's
// metadata, and the next owner skips them (gap.go).
package kafkasource

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"

	"github.com/pacer-dev/pacer/internal/base/connretry"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/sourcekit"
)

var (
	_ pacer.Source = (*Source)(nil)
	_ pacer.Lease  = (*acker)(nil)
)

// Source consumes topics through a sarama consumer group.
//
// Pause: the partitions are paused in the consumer group (no further
// fetches) and every claimed partition stops reading from sarama's channel.
// After Pause returns, at most one message per claimed partition may still
// be handed to deliver (one that was already being handed over); the rest
// of what sarama holds (up to ChannelBufferSize plus one fetch per
// partition) stays buffered until Resume. Pauses are re-applied after every
// rebalance.
//
// Rebalances: every wait (deliver, pause, the in-flight cap) watches the
// session's context, so a claim stops handing messages over as soon as a
// rebalance starts. Before it returns (and sarama commits the partition for
// the last time and lets it go), the partition is given up in two steps:
// what the engine still holds of it undelivered reports Revoked
// (pacer.Lease) and is given back instead of spending the rate budget
// on a message the next owner reads again; deliveries already at the sink
// (claimed through pacer.Lease) are waited for, up to Config.RevokeTimeout, so their Acks
// are marked and committed with the partition. Kafka commits one offset per
// partition, so the commit stays below the first message that is not final
// (one given back: it waited for its permit, or for a retry); the messages
// already final above it are written into the commit's metadata, and the
// partition's next owner (in this group, running this source) finishes them
// without handing them over. A rebalance or a clean stop therefore repeats
// nothing unless a delivery outlasts RevokeTimeout (it is logged), more than
// fit in 2 KB of metadata are final above the gap (several hundred), or the
// metadata cannot be read back when the next session starts (logged). Later
// Acks are ignored; the unfinished messages are redelivered to the
// partition's next owner.
//
// A Source runs once; its methods are safe for concurrent use.
type Source struct {
	cfg Config
	sc  *sarama.Config

	mu    sync.Mutex
	group sarama.ConsumerGroup // set while Run is running
	gate  sourcekit.PauseGate  // read without mu on the per-message path

	ran     atomic.Bool
	stopped chan struct{}
	stopOne sync.Once

	delivered atomic.Int64
	// commit is the current session's committer (nil between sessions).
	commit atomic.Pointer[committer]
	// sessions counts the group sessions set up and not yet cleaned up
	// (0 or 1): what Ready reports.
	sessions atomic.Int32
	// connErr says why Run cannot reach the brokers yet (nil once joined).
	connErr atomic.Pointer[string]
}

// New validates cfg and returns a Source. It does not connect: Run does.
func New(cfg Config) (*Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := cfg.withDefaults()
	sc, err := c.saramaConfig()
	if err != nil {
		return nil, err
	}
	s := &Source{cfg: c, sc: sc, stopped: make(chan struct{})}
	return s, nil
}

// Run joins the group and consumes until ctx is done (it returns ctx's
// error), deliver fails outside a rebalance (the engine stops: nil), or the
// group fails fatally.
func (s *Source) Run(ctx context.Context, deliver func(context.Context, *pacer.Message) error) error {
	if s.ran.Swap(true) {
		return errors.New("kafka: Source.Run called twice")
	}
	group, client, err := s.join(ctx)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.group = group
	if s.gate.Paused() {
		group.PauseAll()
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.group = nil
		s.mu.Unlock()
		if err := group.Close(); err != nil {
			s.cfg.Logger.Warn("kafka: closing consumer group", "group", s.cfg.Group, "err", err)
		}
		_ = client.Close()
	}()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		for {
			select {
			case err, ok := <-group.Errors():
				if !ok {
					return
				}
				s.cfg.Logger.Warn("kafka: consumer group error", "group", s.cfg.Group, "err", err)
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() {
		select {
		case <-s.stopped:
			cancel()
		case <-ctx.Done():
		}
	}()

	h := &handler{s: s, deliver: deliver, client: client}
	for {
		err := group.Consume(ctx, s.cfg.Topics, h)
		select {
		case <-s.stopped:
			return nil
		default:
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, sarama.ErrClosedConsumerGroup) {
			return fmt.Errorf("kafka: %w", err)
		}
		if err != nil {
			s.cfg.Logger.Warn("kafka: consume session ended", "group", s.cfg.Group, "err", err)
			// Back off briefly so a broker outage is not a busy loop.
			t := time.NewTimer(250 * time.Millisecond)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			}
		}
	}
}

// join creates the client and the consumer group on it (the caller
// closes both). While no broker answers it retries with backoff (0.5s
// doubling to 30s), logging each failure and reporting it through Ready,
// until ctx is done; other errors are returned at once.
func (s *Source) join(ctx context.Context) (sarama.ConsumerGroup, sarama.Client, error) {
	type joined struct {
		group  sarama.ConsumerGroup
		client sarama.Client
	}
	j, attempts, err := connretry.Until(ctx,
		func() (joined, error) {
			c, err := sarama.NewClient(s.cfg.Brokers, s.sc)
			if err != nil {
				return joined{}, err
			}
			g, err := sarama.NewConsumerGroupFromClient(s.cfg.Group, c)
			if err != nil {
				_ = c.Close()
				return joined{}, err
			}
			return joined{g, c}, nil
		},
		func(err error) bool { return errors.Is(err, sarama.ErrOutOfBrokers) },
		func(attempt int, wait time.Duration, err error) {
			msg := fmt.Sprintf("no broker of %v answers (%v)", s.cfg.Brokers, err)
			s.connErr.Store(&msg)
			s.cfg.Logger.Warn("kafka: brokers unreachable; retrying", "brokers", s.cfg.Brokers, "attempt", attempt, "retry_in", wait, "err", err)
		})
	switch {
	case err == nil:
		s.connErr.Store(nil)
		if attempts > 1 {
			s.cfg.Logger.Info("kafka: brokers reachable; joining the group", "group", s.cfg.Group, "attempts", attempts)
		}
		return j.group, j.client, nil
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return nil, nil, err
	}
	return nil, nil, fmt.Errorf("kafka: consumer group %q: %w", s.cfg.Group, err)
}

// Pause stops fetching and handing over messages; see Source for the bound.
func (s *Source) Pause() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.group != nil {
		s.group.PauseAll()
	}
	if !s.gate.Pause() {
		return
	}
	if c := s.commit.Load(); c != nil {
		c.flush() // what is final now is committed at once, not after the interval
	}
}

// Resume undoes Pause.
func (s *Source) Resume() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.group != nil {
		s.group.ResumeAll()
	}
	s.gate.Resume()
}

// Paused reports whether the Source is paused.
func (s *Source) Paused() bool { return s.gate.Paused() }

// Delivered counts messages handed to deliver since New.
func (s *Source) Delivered() int64 { return s.delivered.Load() }

// repause re-applies a pause to a partition claimed after a rebalance.
func (s *Source) repause(topic string, partition int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gate.Paused() && s.group != nil {
		s.group.Pause(map[string][]int32{topic: {partition}})
	}
}

func (s *Source) stop(err error) {
	s.stopOne.Do(func() {
		s.cfg.Logger.Debug("kafka: deliver refused, stopping", "group", s.cfg.Group, "err", err)
		close(s.stopped)
	})
}

type handler struct {
	s       *Source
	deliver func(context.Context, *pacer.Message) error
	client  sarama.Client
	// done is what previous owners finished above the committed offsets
	// of the session's claims (gap.go): written by Setup, read by the
	// session's ConsumeClaims, which start after it.
	done map[tp]doneAt
	// ids are the claimed topics' IDs (topicid.go): written by Setup too.
	ids map[string]string
}

func (h *handler) Setup(sess sarama.ConsumerGroupSession) error {
	s := h.s
	s.mu.Lock()
	if s.gate.Paused() && s.group != nil {
		s.group.PauseAll()
	}
	s.mu.Unlock()
	s.cfg.Logger.Debug("kafka: session", "group", s.cfg.Group, "member", sess.MemberID(),
		"generation", sess.GenerationID(), "claims", sess.Claims())
	h.done = s.fetchDone(h.client, sess.Claims())
	h.ids = s.topicIDs(h.client, sess.Claims())
	s.commit.Store(newCommitter(sess, s.cfg.CommitInterval, s.cfg.CommitAfter))
	s.sessions.Add(1)
	return nil
}

func (h *handler) Cleanup(sarama.ConsumerGroupSession) error {
	if c := h.s.commit.Swap(nil); c != nil {
		c.stop() // the session's release commits what is marked
	}
	h.s.sessions.Add(-1)
	return nil
}

func (h *handler) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	s := h.s
	ctx := sess.Context()
	topic, partition := claim.Topic(), claim.Partition()
	s.repause(topic, partition)
	limit := s.cfg.MaxInFlightPerPartition
	cm := s.commit.Load()
	// Offsets the previous owner finished above the committed one: not
	// handed over again, and carried in every mark until passed.
	var skip skipList
	if d, ok := h.done[tp{topic, partition}]; ok && d.base == claim.InitialOffset() {
		skip = d.done
	}
	prev := int64(-1) // the last mark (calls are serialised by the watermark)
	w := newWatermark(limit, func(next int64) {
		sess.MarkOffset(topic, partition, next, encodeDone(next, skip.from(next)))
		if cm != nil {
			n := int64(1)
			if prev >= 0 {
				n = next - prev
			}
			cm.marked(n)
		}
		prev = next
	})
	rq := newRedeliveries()
	// Revoke before returning: sarama commits what was marked when the
	// claim or session is released, and nothing may be marked after that.
	// Deliveries at the sink finish first (bounded), so what reached the
	// API is committed; what is final above a gap goes in the commit's
	// metadata (gap.go). Nak'ed messages not yet handed over again go to
	// the partition's next owner.
	defer func() {
		low, done := s.giveUp(topic, partition, w)
		if low >= 0 {
			if all := merged(done, skip.from(low)); len(all) > 0 {
				// The offset stays where it is (low is the next one to
				// read): MarkOffset moves it up to low if it is below,
				// ResetOffset sets the metadata at low.
				meta := encodeDone(low, all)
				sess.MarkOffset(topic, partition, low, meta)
				sess.ResetOffset(topic, partition, low, meta)
				s.cfg.Logger.Info("kafka: partition given up above a gap; its next owner skips what is final above it",
					"group", s.cfg.Group, "topic", topic, "partition", partition, "committed", low, "final_above", len(all))
			}
		}
		rq.close()
	}()
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()

	// pausedC is refreshed whenever it fires or a pause ends, so the
	// select below never spins on a stale closed channel.
	_, _, pausedC := s.gate.State()
	for {
		if s.gate.Paused() {
			paused, resumed, _ := s.gate.State()
			if paused {
				select {
				case <-resumed:
				case <-ctx.Done():
					return nil
				}
			}
			_, _, pausedC = s.gate.State()
			continue
		}
		// A Nak'ed message whose delay has passed goes first. Its offset
		// is still pending in the watermark, so it needs no room: it is
		// what a full partition waits for.
		var now time.Time
		if rq.n.Load() > 0 {
			now = time.Now()
		}
		r, due := rq.next(now)
		if r != nil {
			if err := h.deliver(ctx, r); err != nil {
				if ctx.Err() == nil {
					s.stop(err)
				}
				return nil
			}
			s.delivered.Add(1)
			continue
		}
		var tc <-chan time.Time
		if !due.IsZero() {
			d := time.Until(due)
			if timer == nil {
				timer = time.NewTimer(d)
			} else {
				timer.Reset(d)
			}
			tc = timer.C
		}
		if n, room := w.pending(); n >= limit {
			select {
			case <-room:
			case <-rq.signal:
			case <-tc:
			case <-ctx.Done():
				return nil
			}
			continue
		}
		var msg *sarama.ConsumerMessage
		select {
		case m, ok := <-claim.Messages():
			if !ok {
				return nil
			}
			msg = m
		case <-pausedC:
			_, _, pausedC = s.gate.State()
			continue
		case <-rq.signal:
			continue
		case <-tc:
			continue
		case <-ctx.Done():
			return nil
		}
		if len(skip) > 0 && skip.has(msg.Offset) {
			// Final at the previous owner: finished here, not handed over.
			w.add(msg.Offset)
			w.finish(msg.Offset)
			continue
		}
		m := convert(msg, h.ids[topic])
		m.Acker = &acker{w: w, rq: rq, msg: msg, topicID: h.ids[topic], delivered: 1}
		w.add(msg.Offset)
		if err := h.deliver(ctx, m); err != nil {
			w.drop(msg.Offset)
			if ctx.Err() == nil {
				// The engine is stopping, not the session.
				s.stop(err)
			}
			return nil
		}
		s.delivered.Add(1)
	}
}

// giveUp revokes a claimed partition's watermark once the deliveries of it
// at the sink are over, or RevokeTimeout has passed, and returns what
// watermark.revoke returns (the gap).
func (s *Source) giveUp(topic string, partition int32, w *watermark) (low int64, done []int64) {
	idle := w.beginRevoke()
	select {
	case <-idle:
	default:
		t := time.NewTimer(s.cfg.RevokeTimeout)
		select {
		case <-idle:
		case <-t.C:
			s.cfg.Logger.Warn("kafka: giving a partition up with deliveries still under way; the next owner delivers them again",
				"group", s.cfg.Group, "topic", topic, "partition", partition, "in_flight", w.inClaim(), "waited", s.cfg.RevokeTimeout)
		}
		t.Stop()
	}
	return w.revoke()
}

// convert makes the engine's message of msg, whose topic has the ID
// topicID ("" if unknown: see topicid.go).
func convert(msg *sarama.ConsumerMessage, topicID string) *pacer.Message {
	id := msg.Topic + "/" + strconv.FormatInt(int64(msg.Partition), 10) + "/" + strconv.FormatInt(msg.Offset, 10)
	if topicID != "" {
		id += "@" + topicID
	}
	m := &pacer.Message{
		ID:        id,
		Key:       msg.Key,
		Value:     msg.Value,
		Topic:     msg.Topic,
		Partition: msg.Partition,
		Offset:    msg.Offset,
		Timestamp: msg.Timestamp,
		Delivered: 1,
	}
	if len(msg.Headers) > 0 {
		m.Headers = make(map[string]string, len(msg.Headers))
		for _, h := range msg.Headers {
			if h != nil {
				m.Headers[string(h.Key)] = string(h.Value)
			}
		}
	}
	return m
}

// acker settles one Kafka message in its partition's watermark. The first
// call wins; later calls are no-ops returning nil.
type acker struct {
	w         *watermark
	rq        *redeliveries
	msg       *sarama.ConsumerMessage
	topicID   string
	delivered int
	once      atomic.Bool
}

func (a *acker) Ack(context.Context) error {
	if a.once.CompareAndSwap(false, true) {
		a.w.finish(a.msg.Offset)
	}
	return nil
}

// Nak leaves the offset uncommitted and hands the message over again, to
// the same consumer, once delay has passed, if its partition is still
// claimed then; otherwise it comes back to the partition's next owner
// (after a rebalance or restart).
func (a *acker) Nak(_ context.Context, delay time.Duration) error {
	if a.once.CompareAndSwap(false, true) {
		a.rq.push(a, time.Now().Add(max(0, delay)))
	}
	return nil
}

// Revoked reports that the message's partition is being given up (a
// rebalance or a stop): the partition's next owner reads the message again
// (pacer.Lease).
func (a *acker) Revoked() bool { return a.w.isRevoked() }

// Claim reports that the message goes to the sink now: the partition is
// not given up before Release (bounded by Config.RevokeTimeout). False:
// the partition is being given up, the message must not be delivered.
func (a *acker) Claim() bool { return a.w.claim() }

// Release ends Claim: the attempt is over.
func (a *acker) Release() { a.w.release() }

// Term is Ack: the message was dead-lettered, its fate is final.
func (a *acker) Term(ctx context.Context, _ string) error { return a.Ack(ctx) }
