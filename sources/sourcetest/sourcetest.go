// Package sourcetest is the conformance suite every pacer.Source runs: a
// backend supplies a Harness (how to get an empty topic or stream, publish
// to it, and build consumers sharing one group or durable) and a Features
// value saying what differs; Run checks the Source contract against a real
// broker.
//
// The suite stands in for the engine with a tiny in-test consumer loop, so
// it does not depend on the engine package. A harness that owns its broker
// (Harness.SetupRestartable) also runs BrokerRestart: the broker stops and
// comes back with its data while a source runs.
package sourcetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/pacer"
)

// Record is one message to publish.
type Record struct {
	Key     []byte
	Value   []byte
	Headers map[string]string
}

// Env is one isolated topic or stream, prepared by Harness.Setup.
type Env struct {
	// Publish stores recs in the broker, in order, and returns once stored.
	Publish func(ctx context.Context, recs []Record) error
	// NewSource returns a new, not yet running, consumer of the topic or
	// stream; every source of one Env shares the same group or durable.
	NewSource func(t *testing.T) pacer.Source
	// RestartBroker stops the broker and starts it again with its data
	// (set by Harness.SetupRestartable only).
	RestartBroker func() error
}

// Features says what applies to a backend.
type Features struct {
	// PauseBound is how many messages one Source may still hand to deliver
	// after Pause returned (its documented bound).
	PauseBound int
	// NakRedeliversLive: a Nak'd message comes back to a running consumer
	// (JetStream's NakWithDelay; Kafka while the partition stays claimed).
	// When false it comes back only after a restart or rebalance.
	NakRedeliversLive bool
	// Watermark: the broker keeps a committed position (Kafka offsets), so
	// after a restart everything from the first unfinished message of a
	// partition may come back (Kafka: except what the commit's metadata
	// records as final); when false, acknowledgements are individual
	// (JetStream) and only unacknowledged messages come back.
	Watermark bool
	// Timeout bounds each wait for a condition that must eventually hold
	// (default 30s); reaching it fails the test.
	Timeout time.Duration
	// Quiet is how long a test watches for messages that must not arrive
	// (default 300ms). It only ever lets a broken source pass, never fails
	// a correct one.
	Quiet time.Duration
}

// Harness connects the suite to one backend.
type Harness struct {
	Features Features
	// Setup prepares an empty topic or stream for one test, registering
	// its removal with t.Cleanup.
	Setup func(t *testing.T) Env
	// SetupRestartable, if set, is Setup on a broker of the test's own
	// (in process) that the returned Env's RestartBroker can restart: the
	// BrokerRestart case runs on it. Nil: that case does not apply.
	SetupRestartable func(t *testing.T) Env
}

// Run runs the conformance suite as subtests of t.
func Run(t *testing.T, h Harness) {
	if h.Features.Timeout == 0 {
		h.Features.Timeout = 30 * time.Second
	}
	if h.Features.Quiet == 0 {
		h.Features.Quiet = 300 * time.Millisecond
	}
	tests := []struct {
		name string
		fn   func(*testing.T, Harness)
	}{
		{"EveryMessageDelivered", testEveryMessageDelivered},
		{"PauseResume", testPauseResume},
		{"PausedBeforeRun", testPausedBeforeRun},
		{"UnackedComesBackAfterRestart", testUnackedComesBack},
		{"NoCommitPastUnacked", testNoCommitPastUnacked},
		{"Nak", testNak},
		{"SharedGroupLeavingLosesNothing", testSharedGroup},
		{"StopsWhenDeliverFails", testStopsWhenDeliverFails},
		{"CancelledWhileStarting", testCancelledWhileStarting},
		{"BrokerRestart", testBrokerRestart},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, h) })
	}
}

func records(prefix string, n int) []Record {
	recs := make([]Record, n)
	for i := range recs {
		recs[i] = Record{
			Key:     []byte(fmt.Sprintf("k%d", i%7)),
			Value:   []byte(fmt.Sprintf("%s-%d", prefix, i)),
			Headers: map[string]string{"n": fmt.Sprint(i), "prefix": prefix},
		}
	}
	return recs
}

func publish(t *testing.T, h Harness, env Env, recs []Record) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), h.Features.Timeout)
	defer cancel()
	if err := env.Publish(ctx, recs); err != nil {
		t.Fatalf("publish %d records: %v", len(recs), err)
	}
}

// consumer runs one Source with a policy deciding, per message, what the
// stand-in engine does: ack, nak, or hold it unsettled.
type consumer struct {
	t      *testing.T
	src    pacer.Source
	cancel context.CancelFunc
	done   chan struct{} // closed when Run returned
	runErr error

	mu      sync.Mutex
	got     []*pacer.Message // every message handed over, in order
	byValue map[string]int   // value -> times handed over
	acked   map[string]bool  // values acked
	onMsg   func(ctx context.Context, c *consumer, m *pacer.Message) action
	changed chan struct{}
}

type action int

const (
	doAck action = iota
	doNak
	doHold
	doFail   // deliver returns an error: the engine is stopping
	doCtxErr // deliver returns ctx.Err(): ctx ended while it waited
)

func start(t *testing.T, src pacer.Source, onMsg func(ctx context.Context, c *consumer, m *pacer.Message) action) *consumer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c := &consumer{t: t, src: src, cancel: cancel, done: make(chan struct{}),
		byValue: map[string]int{}, acked: map[string]bool{}, onMsg: onMsg, changed: make(chan struct{})}
	go func() {
		c.runErr = src.Run(ctx, c.deliver)
		close(c.done)
	}()
	t.Cleanup(func() { c.stop(t) })
	return c
}

var errStopping = errors.New("sourcetest: engine stopping")

func (c *consumer) deliver(ctx context.Context, m *pacer.Message) error {
	if m == nil || m.Acker == nil {
		c.t.Errorf("deliver got a message without Acker: %+v", m)
		return nil
	}
	act := doAck
	if c.onMsg != nil {
		act = c.onMsg(ctx, c, m)
	}
	switch act {
	case doFail:
		return errStopping
	case doCtxErr:
		return ctx.Err()
	}
	v := string(m.Value)
	c.mu.Lock()
	c.got = append(c.got, m)
	c.byValue[v]++
	c.mu.Unlock()
	switch act {
	case doAck:
		if err := m.Acker.Ack(ctx); err != nil {
			c.t.Errorf("Ack(%s): %v", m.ID, err)
		}
		c.mu.Lock()
		c.acked[v] = true
		c.mu.Unlock()
	case doNak:
		if err := m.Acker.Nak(ctx, 10*time.Millisecond); err != nil {
			c.t.Errorf("Nak(%s): %v", m.ID, err)
		}
	}
	c.mu.Lock()
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
	return nil
}

// stop cancels Run and waits for it to return; idempotent.
func (c *consumer) stop(t *testing.T) {
	t.Helper()
	c.cancel()
	select {
	case <-c.done:
		if err := c.runErr; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("Run after cancel returned %v, want nil or context.Canceled", err)
		}
	case <-time.After(30 * time.Second):
		t.Errorf("Run did not return within 30s of cancel")
	}
}

func (c *consumer) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.got)
}

// waitUntil waits until cond (evaluated under c.mu) holds, failing after d.
func (c *consumer) waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		ok := cond()
		ch := c.changed
		c.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			c.mu.Lock()
			n := len(c.got)
			c.mu.Unlock()
			t.Fatalf("timed out after %v waiting for %s (%d messages handed over)", d, what, n)
		}
	}
}

// waitAll waits until every value in recs was handed over at least once.
func (c *consumer) waitAll(t *testing.T, d time.Duration, recs []Record) {
	t.Helper()
	c.waitUntil(t, d, fmt.Sprintf("all %d records", len(recs)), func() bool {
		for _, r := range recs {
			if c.byValue[string(r.Value)] == 0 {
				return false
			}
		}
		return true
	})
}

// quiet watches for d and returns how many messages arrived meanwhile.
func (c *consumer) quiet(d time.Duration) int {
	before := c.count()
	time.Sleep(d) // an observation window for messages that must NOT come: can only hide a bug, never fail a correct source
	return c.count() - before
}
