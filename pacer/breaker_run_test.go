package pacer_test

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/pacertest"
	"github.com/pacer-dev/pacer/pacer/sourcekit"
)

// brokerSource is a pacer.Source that behaves like a broker towards the
// fates of its messages: a Nak'ed message is handed over again (a new
// delivery) after its delay, Ack and Term are final. Run returns once every
// message published so far and any published later is final, after
// Close. It honours Pause.
type brokerSource struct {
	gate   sourcekit.PauseGate
	ch     chan *pacer.Message
	closed atomic.Bool

	mu    sync.Mutex
	open  int // published, not final
	fate  map[string]pacer.Settlement
	naks  int
	final chan struct{} // signalled on every final settlement
}

func newBrokerSource() *brokerSource {
	return &brokerSource{ch: make(chan *pacer.Message, 1<<14), fate: map[string]pacer.Settlement{}, final: make(chan struct{}, 1)}
}

// publish adds messages (first .. first+n-1 of pacertest's numbering).
func (s *brokerSource) publish(first, n int) {
	s.mu.Lock()
	s.open += n
	s.mu.Unlock()
	for _, m := range (pacertest.MessageSpec{First: int64(first)}).Build(n) {
		s.hand(m)
	}
}

func (s *brokerSource) hand(m *pacer.Message) {
	c := &pacer.Message{ID: m.ID, Topic: m.Topic, Offset: m.Offset, Value: m.Value}
	c.Acker = &brokerAcker{s: s, m: c}
	s.ch <- c
}

// close lets Run return once nothing is open.
func (s *brokerSource) close() { s.closed.Store(true); s.signal() }

func (s *brokerSource) signal() {
	select {
	case s.final <- struct{}{}:
	default:
	}
}

func (s *brokerSource) Run(ctx context.Context, deliver func(context.Context, *pacer.Message) error) error {
	for {
		s.mu.Lock()
		done := s.open == 0 && s.closed.Load()
		s.mu.Unlock()
		if done {
			return nil
		}
		if !s.gate.Wait(ctx) {
			return nil
		}
		select {
		case m := <-s.ch:
			if err := deliver(ctx, m); err != nil {
				return nil
			}
		case <-s.final:
		case <-ctx.Done():
			return nil
		}
	}
}

func (s *brokerSource) Pause()  { s.gate.Pause() }
func (s *brokerSource) Resume() { s.gate.Resume() }

func (s *brokerSource) count(how pacer.Settlement) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, f := range s.fate {
		if f == how {
			n++
		}
	}
	return n
}

type brokerAcker struct {
	s    *brokerSource
	m    *pacer.Message
	once atomic.Bool
}

func (a *brokerAcker) settle(how pacer.Settlement) error {
	if !a.once.CompareAndSwap(false, true) {
		return errors.New("settled twice")
	}
	a.s.mu.Lock()
	defer a.s.mu.Unlock()
	if f, ok := a.s.fate[a.m.ID]; ok {
		return errors.New("final twice: " + f.String())
	}
	a.s.fate[a.m.ID] = how
	a.s.open--
	a.s.signal()
	return nil
}

func (a *brokerAcker) Ack(context.Context) error { return a.settle(pacer.SettledAck) }

func (a *brokerAcker) Term(context.Context, string) error { return a.settle(pacer.SettledTerm) }

func (a *brokerAcker) Nak(_ context.Context, d time.Duration) error {
	if !a.once.CompareAndSwap(false, true) {
		return errors.New("settled twice")
	}
	a.s.mu.Lock()
	a.s.naks++
	a.s.mu.Unlock()
	time.AfterFunc(d, func() { a.s.hand(a.m) })
	return nil
}

// badRun is a sink that refuses (HTTP 400, a class that is not systemic)
// the messages bad says, and delivers the others.
func badRun(bad func(m *pacer.Message) bool) (classSink, *atomic.Int64) {
	var calls atomic.Int64
	return classSink{&pacertest.Sink{Behave: func(m *pacer.Message) (pacer.Result, pacer.Feedback, time.Duration) {
		calls.Add(1)
		if bad(m) {
			return pacer.Result{Outcome: pacer.Reject, Err: &classErr{class: "http 400"}}, pacer.Feedback{Status: 400}, time.Millisecond
		}
		return pacer.Result{Outcome: pacer.Delivered}, pacer.Feedback{Status: 200}, time.Millisecond
	}}}, &calls
}

// TestBreakerRunOfBadMessages: a producer deploy sends 40 messages the API
// refuses (400 each, distinct messages), then 400 good ones. The breaker
// trips on the tenth 400 in a row, but its probes try newer messages, the
// first good one closes it, and the held 40 are dead-lettered: all 400
// good delivered and 40 dead-lettered, with no operator (no ResetBreaker).
// Before, the probes retried only the held bad messages: 0 of 400
// delivered, 9 dead-lettered, for good. With a small queue (16, under the
// 40), the suspects beyond the engine's bound go back to the broker and
// come again.
func TestBreakerRunOfBadMessages(t *testing.T) {
	for _, tt := range []struct {
		name  string
		queue int
	}{{"default queue", 0}, {"queue smaller than the run", 16}} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const bad, good = 40, 400
				src := newBrokerSource()
				src.publish(0, bad+good)
				src.close()
				sink, _ := badRun(func(m *pacer.Message) bool { return m.Offset < bad })
				dl := &pacertest.DeadLetters{}
				log := &lockedBuf{}
				e, err := pacer.New(pacer.Config{Source: src, Sink: sink, DeadLetter: dl, MaxInFlight: 4, QueueSize: tt.queue,
					Logger: slog.New(slog.NewTextHandler(log, nil))})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
				defer cancel()
				if err := e.Run(ctx); err != nil {
					t.Fatal(err)
				}
				if got := src.count(pacer.SettledAck); got != good {
					t.Errorf("delivered %d of %d good messages", got, good)
				}
				if got := src.count(pacer.SettledTerm); got != bad {
					t.Errorf("dead-lettered %d, want the %d bad ones", got, bad)
				}
				for _, d := range dl.Entries() {
					if o := offsetOf(t, d.ID); o >= bad {
						t.Errorf("good message %s dead-lettered", d.ID)
					}
				}
				st := e.Status()
				if st.Breaker.Trips == 0 || st.Breaker.Open || st.Breaker.Resets != 0 {
					t.Errorf("breaker %+v, want tripped, closed again by itself, no reset", st.Breaker)
				}
				if ctx.Err() != nil {
					t.Errorf("not done within an hour:\n%s", log)
				}
			})
		})
	}
}

// TestBreakerEveryMessageFailsStillHolds: a failure that hits every
// message, newer ones included, keeps them held: a 401 for each (systemic),
// a 500 for each (retries run out; a class that is not systemic) and a 400
// for each: no dead letter after the trip, the breaker open after ten
// minutes, nothing acked; fixed, every message is delivered (the suspects
// beyond the engine's bound went back to the broker and come again).
func TestBreakerEveryMessageFailsStillHolds(t *testing.T) {
	for _, tt := range []struct {
		name string
		res  pacer.Result
	}{
		{"401", pacer.Result{Outcome: pacer.Reject, Err: &classErr{class: "http 401", systemic: true}}},
		{"500", pacer.Result{Outcome: pacer.Retry, Err: &classErr{class: "http 500"}}},
		{"400 for every message", pacer.Result{Outcome: pacer.Reject, Err: &classErr{class: "http 400"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const n = 300
				src := newBrokerSource()
				src.publish(0, n)
				src.close()
				var fixed atomic.Bool
				sink := classSink{&pacertest.Sink{Behave: func(m *pacer.Message) (pacer.Result, pacer.Feedback, time.Duration) {
					if fixed.Load() {
						return pacer.Result{Outcome: pacer.Delivered}, pacer.Feedback{Status: 200}, time.Millisecond
					}
					return tt.res, pacer.Feedback{}, time.Millisecond
				}}}
				dl := &pacertest.DeadLetters{}
				e, err := pacer.New(pacer.Config{Source: src, Sink: sink, DeadLetter: dl, MaxInFlight: 4, QueueSize: 16,
					Retry:  pacer.RetryConfig{MaxAttempts: 3, Initial: 10 * time.Millisecond, Max: 50 * time.Millisecond},
					Logger: slog.New(slog.NewTextHandler(&lockedBuf{}, nil))})
				if err != nil {
					t.Fatal(err)
				}
				done := make(chan error, 1)
				go func() { done <- e.Run(context.Background()) }()
				time.Sleep(10 * time.Minute)
				synctest.Wait()
				st := e.Status()
				if !st.Breaker.Open {
					t.Errorf("breaker closed after 10 minutes of %s for every message: %+v", tt.name, st.Breaker)
				}
				if got := len(dl.Entries()); got > 9 {
					t.Errorf("dead-lettered %d while every message failed, want at most the 9 before the trip", got)
				}
				if got := src.count(pacer.SettledAck); got != 0 {
					t.Errorf("acked %d while broken", got)
				}
				fixed.Store(true)
				if err := <-done; err != nil {
					t.Fatal(err)
				}
				if got, dead := src.count(pacer.SettledAck), src.count(pacer.SettledTerm); got+dead != n || dead > 9 {
					t.Errorf("after the fix: acked %d, dead-lettered %d of %d", got, dead, n)
				}
			})
		})
	}
}

// TestBreakerDeadLetterOutageDoesNotWedge: the dead-letter destination
// fails for a while, so the bad messages (every tenth) come back from the
// broker again and again; once only they are left they come in a row and
// trip the breaker. After the destination recovers and new traffic comes,
// a newer message probes and succeeds: the held ones are dead-lettered and
// every good message is delivered, with no operator. Before, the probes
// retried only the held bad messages and the source stayed paused: the
// new traffic was never delivered.
func TestBreakerDeadLetterOutageDoesNotWedge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n, more = 200, 100
		src := newBrokerSource()
		src.publish(0, n)
		isBad := func(m *pacer.Message) bool { return m.Offset < n && m.Offset%10 == 3 }
		sink, _ := badRun(isBad)
		var dlDown atomic.Bool
		dlDown.Store(true)
		dl := &pacertest.DeadLetters{Fail: func(*pacer.Message) error {
			if dlDown.Load() {
				return errors.New("dead-letter destination down")
			}
			return nil
		}}
		e, err := pacer.New(pacer.Config{Source: src, Sink: sink, DeadLetter: dl, MaxInFlight: 4, DeadLetterRetry: time.Second,
			Logger: slog.New(slog.NewTextHandler(&lockedBuf{}, nil))})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- e.Run(ctx) }()
		for i := 0; i < 600 && e.Status().Breaker.Trips == 0; i++ {
			time.Sleep(100 * time.Millisecond)
		}
		if !e.Status().Breaker.Open {
			t.Fatalf("the redelivered bad messages did not trip the breaker: %+v", e.Status().Breaker)
		}
		dlDown.Store(false)
		time.Sleep(time.Minute)
		src.publish(n, more)
		src.close()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if ctx.Err() != nil {
			t.Fatalf("wedged: not done within an hour; breaker %+v", e.Status().Breaker)
		}
		if got, want := src.count(pacer.SettledAck), n-n/10+more; got != want {
			t.Errorf("delivered %d good messages, want %d", got, want)
		}
		if got := src.count(pacer.SettledTerm); got != n/10 {
			t.Errorf("dead-lettered %d, want %d", got, n/10)
		}
		if st := e.Status(); st.Breaker.Open || st.Breaker.Resets != 0 {
			t.Errorf("breaker %+v, want closed by itself", st.Breaker)
		}
	})
}

func offsetOf(t *testing.T, id string) int64 {
	t.Helper()
	o, err := strconv.ParseInt(id[strings.LastIndex(id, "/")+1:], 10, 64)
	if err != nil {
		t.Fatalf("id %q: %v", id, err)
	}
	return o
}
