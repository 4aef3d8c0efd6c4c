package natssource

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Consumer loss and a silent server.
//
// A pull that fails (anything but its expiry), or that hears no idle
// heartbeat from the server for two heartbeat intervals (a blackholed link,
// a consumer deleted under it: the server then answers nothing), makes the
// path check its consumer with a consumer-info request of its own
// (checkTimeout). The consumer is there: the failure was passing, pulling
// goes on. The consumer or its stream is gone (deleted, or the stream
// deleted and re-created): with Create the consumer is created again with
// the same settings, on the stream as it is now, and pulling goes on from
// it (DeliverPolicy applies again: "all" starts from the stream's first
// message, so a consumer deleted on a living stream redelivers what it had
// acked, under the same message IDs; "new" skips what was published while
// it was gone); without Create the path waits for someone to create it.
// The server does not answer: the path tries again. While any of this
// lasts, Ready reports the cause and an ERROR line says it once (again when
// the cause changes); an INFO line says when the path pulls again.

// checkTimeout bounds the consumer-info request of a check.
const checkTimeout = 2 * time.Second

// binding says how one pull path (re)binds its consumer: by durable name,
// and, with cc set, created (or updated) by pacer with cc.
type binding struct {
	js   jetstream.JetStream
	name string
	cc   *jetstream.ConsumerConfig
}

// bind creates or binds b's consumer and returns it with its AckWait.
func (s *Source) bind(ctx context.Context, b *binding) (jetstream.Consumer, time.Duration, error) {
	var (
		cons jetstream.Consumer
		err  error
	)
	if b.cc != nil {
		cons, err = b.js.CreateOrUpdateConsumer(ctx, s.cfg.Stream, *b.cc)
	} else {
		cons, err = b.js.Consumer(ctx, s.cfg.Stream, b.name)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("nats: consumer %s on stream %s: %w", b.name, s.cfg.Stream, err)
	}
	info := cons.CachedInfo()
	if info.Config.AckPolicy != jetstream.AckExplicitPolicy {
		return nil, 0, fmt.Errorf("%w: consumer %s has ack policy %v, want explicit", ErrInvalidConfig, b.name, info.Config.AckPolicy)
	}
	s.maxDeliver.Store(int64(info.Config.MaxDeliver))
	ackWait := info.Config.AckWait
	if ackWait <= 0 {
		ackWait = 30 * time.Second
	}
	s.cfg.Logger.Debug("nats: consumer", "stream", s.cfg.Stream, "consumer", b.name,
		"ack_wait", ackWait, "max_ack_pending", info.Config.MaxAckPending)
	return cons, ackWait, nil
}

// recoverConsumer runs after a failed pull of cons: it returns the consumer
// to pull from next (cons itself, or a re-created one), or nil once ctx is
// done. See the comment at the top of this file.
func (s *Source) recoverConsumer(ctx context.Context, b *binding, cons jetstream.Consumer, pullErr error) jetstream.Consumer {
	wait := 250 * time.Millisecond
	for {
		next, cause := s.checkConsumer(ctx, b, cons, pullErr)
		if ctx.Err() != nil {
			return nil
		}
		if cause == "" {
			s.clearProblem(b.name)
			return next
		}
		s.setProblem(b.name, cause)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// checkConsumer returns the consumer to pull from and, when there is none
// yet, why ("" when pulling may go on).
func (s *Source) checkConsumer(ctx context.Context, b *binding, cons jetstream.Consumer, pullErr error) (jetstream.Consumer, string) {
	ictx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	_, err := cons.Info(ictx)
	switch {
	case err == nil:
		return cons, ""
	case errors.Is(err, jetstream.ErrConsumerNotFound), errors.Is(err, jetstream.ErrStreamNotFound):
		next, _, berr := s.bind(ictx, b)
		switch {
		case berr == nil:
			s.cfg.Logger.Info("nats: consumer was gone; bound again", "stream", s.cfg.Stream, "consumer", b.name, "created", b.cc != nil)
			return next, ""
		case b.cc == nil:
			return cons, fmt.Sprintf("consumer %s on stream %s is gone (%v) and create_consumer is off: waiting for it to be created again", b.name, s.cfg.Stream, err)
		default:
			return cons, fmt.Sprintf("consumer %s on stream %s is gone (%v); creating it again failed: %v", b.name, s.cfg.Stream, err, berr)
		}
	default:
		return cons, fmt.Sprintf("server not answering for consumer %s on stream %s (pull: %v; consumer info: %v)", b.name, s.cfg.Stream, pullErr, err)
	}
}

// setProblem records why the path of consumer name cannot pull, for Ready,
// and logs it at ERROR level when it is new (the cause as "err", which the
// worker's /status shows among its last errors).
func (s *Source) setProblem(name, cause string) {
	s.probMu.Lock()
	defer s.probMu.Unlock()
	if old, had := s.problems[name]; !had || old != cause {
		// Logged before Ready can report it: whoever sees the source
		// not ready finds the line (CI once looked in between).
		s.cfg.Logger.Error("nats: not consuming", "stream", s.cfg.Stream, "consumer", name, "err", cause)
	}
	s.problems[name] = cause
}

// clearProblem undoes setProblem once the path pulls again.
func (s *Source) clearProblem(name string) {
	s.probMu.Lock()
	_, had := s.problems[name]
	delete(s.problems, name)
	s.probMu.Unlock()
	if had {
		s.cfg.Logger.Info("nats: consuming again", "stream", s.cfg.Stream, "consumer", name)
	}
}

// problem is every path's recorded problem, joined ("" when none).
func (s *Source) problem() string {
	s.probMu.Lock()
	defer s.probMu.Unlock()
	if len(s.problems) == 0 {
		return ""
	}
	causes := make([]string, 0, len(s.problems))
	for _, c := range s.problems {
		causes = append(causes, c)
	}
	sort.Strings(causes)
	return strings.Join(causes, "; ")
}
