// Package sinktest is the conformance suite every pacer.Sink runs, in the
// manner of Watermill's pubsub/tests: a sink is done when
//
//	sinktest.Run(t, sinktest.Harness{New: ..., Features: ...})
//
// passes. The suite checks that a sink delivers, writes exactly one Result
// per message (batches too), classifies transient and permanent downstream
// failures, keeps per-message results honest inside a batch, honours context
// cancellation, is safe for concurrent use, and leaks no goroutine once
// closed.
package sinktest

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/pacertest"
)

// Failure is a downstream condition a harness can switch on.
type Failure int

const (
	// None: the downstream works.
	None Failure = iota
	// Transient: the downstream fails in a way worth retrying (HTTP 503,
	// SQL serialization failure, SQLITE_BUSY).
	Transient
	// Permanent: the downstream refuses in a way retrying cannot fix
	// (HTTP 400, a constraint violation).
	Permanent
	// Hang: the downstream does not answer until the caller gives up.
	Hang
)

func (f Failure) String() string {
	return [...]string{"none", "transient", "permanent", "hang"}[f]
}

// PoisonKey is the message key that a harness with Features.Poison makes the
// downstream reject permanently (e.g. a CHECK constraint on the key column).
const PoisonKey = "sinktest-poison"

// Instance is one sink wired to a fresh downstream.
type Instance struct {
	Sink pacer.Sink
	// Delivered returns the IDs of the messages the downstream holds, one
	// entry per stored copy (so duplicates show). For a batching HTTP sink,
	// the IDs inside each accepted request.
	Delivered func(t *testing.T) []string
	// Fail switches the downstream into a failure mode for the following
	// deliveries (None to recover). Only the modes Features allows are
	// asked for.
	Fail func(t *testing.T, f Failure)
	// Close releases the sink (connections, pools); may be nil. The suite
	// calls it before checking for leaked goroutines.
	Close func() error
}

// Features says what a sink and its harness support.
type Features struct {
	// Batches: Deliver takes several messages at once (all sinks should).
	Batches bool
	// BatchAtomic: a batch succeeds or fails as a whole (a batching HTTP
	// sink); otherwise results inside a batch are per message.
	BatchAtomic bool
	// Transient, Permanent, Hang: Instance.Fail can inject them.
	Transient, Permanent, Hang bool
	// Poison: the downstream rejects messages keyed PoisonKey permanently.
	Poison bool
	// Idempotent: delivering the same message twice stores it once.
	Idempotent bool
	// NoLeakCheck skips the goroutine-leak check (a driver with a global
	// background goroutine); say why in a comment at the harness.
	NoLeakCheck bool
}

// Harness builds instances for the suite.
type Harness struct {
	// New returns a sink on a fresh downstream (its own table, server or
	// file), registering teardown with t.Cleanup.
	New      func(t *testing.T) Instance
	Features Features
}

// Run runs the conformance suite as subtests of t.
func Run(t *testing.T, h Harness) {
	t.Helper()
	tests := []struct {
		name string
		need bool
		fn   func(t *testing.T, h Harness, in Instance)
	}{
		{"DeliversOne", true, testDeliversOne},
		{"DeliversBatches", h.Features.Batches, testDeliversBatches},
		{"ResultPerMessage", true, testResultPerMessage},
		{"Concurrent", true, testConcurrent},
		{"Idempotent", h.Features.Idempotent, testIdempotent},
		{"Transient", h.Features.Transient, testTransient},
		{"Permanent", h.Features.Permanent, testPermanent},
		{"PoisonInBatch", h.Features.Poison && h.Features.Batches && !h.Features.BatchAtomic, testPoisonInBatch},
		{"CanceledContext", true, testCanceledContext},
		{"CancelWhileHanging", h.Features.Hang, testCancelWhileHanging},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.need {
				t.Skipf("sinktest: %s does not apply: the harness's Features do not enable it", tc.name)
			}
			if !h.Features.NoLeakCheck {
				ignore := goleak.IgnoreCurrent()
				// Registered first, so it runs after the instance's cleanups.
				t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
			}
			in := h.New(t)
			if in.Close != nil {
				t.Cleanup(func() {
					if err := in.Close(); err != nil {
						t.Errorf("Close: %v", err)
					}
				})
			}
			tc.fn(t, h, in)
		})
	}
}

var seq struct {
	mu sync.Mutex
	n  int64
}

// Messages returns n distinct messages with JSON values, unique IDs across
// the whole test binary, and every field set (pacertest.MessageSpec's Full).
func Messages(n int) []*pacer.Message {
	seq.mu.Lock()
	first := seq.n
	seq.n += int64(n)
	seq.mu.Unlock()
	return pacertest.MessageSpec{Topic: "sinktest", First: first, Partitions: 3, Full: true}.Build(n)
}

// batchOf is how many messages a case sends in one Deliver: n when the
// sink takes batches, else 1.
func batchOf(h Harness, n int) int {
	if h.Features.Batches {
		return n
	}
	return 1
}

func ids(msgs []*pacer.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.ID
	}
	return out
}

// deliver calls Deliver and checks the result slice's shape: one valid
// Outcome per message, an error on every non-delivered one.
func deliver(t *testing.T, ctx context.Context, s pacer.Sink, msgs []*pacer.Message) []pacer.Result {
	t.Helper()
	res := make([]pacer.Result, len(msgs))
	s.Deliver(ctx, msgs, res)
	for i, r := range res {
		switch r.Outcome {
		case pacer.Delivered:
		case pacer.Retry, pacer.Reject:
			if r.Err == nil {
				t.Errorf("result %d (%s): %v without an error", i, msgs[i].ID, r.Outcome)
			}
		default:
			t.Errorf("result %d (%s): no outcome written (Outcome=%d)", i, msgs[i].ID, r.Outcome)
		}
		if r.RetryAfter < 0 {
			t.Errorf("result %d: negative RetryAfter %v", i, r.RetryAfter)
		}
	}
	return res
}

func wantAll(t *testing.T, res []pacer.Result, want pacer.Outcome) {
	t.Helper()
	for i, r := range res {
		if r.Outcome != want {
			t.Errorf("result %d = %v (%v) want %v", i, r.Outcome, r.Err, want)
		}
	}
}

// wantStored checks that the downstream holds exactly the IDs in want, each
// once, ignoring order.
func wantStored(t *testing.T, in Instance, want []string) {
	t.Helper()
	got := slices.Clone(in.Delivered(t))
	slices.Sort(got)
	w := slices.Clone(want)
	slices.Sort(w)
	if !slices.Equal(got, w) {
		t.Errorf("downstream holds %d IDs %v\nwant %d %v", len(got), got, len(w), w)
	}
}

func testDeliversOne(t *testing.T, _ Harness, in Instance) {
	msgs := Messages(3)
	for _, m := range msgs {
		wantAll(t, deliver(t, t.Context(), in.Sink, []*pacer.Message{m}), pacer.Delivered)
	}
	wantStored(t, in, ids(msgs))
}

func testDeliversBatches(t *testing.T, _ Harness, in Instance) {
	var all []*pacer.Message
	for _, n := range []int{1, 2, 7, 50} {
		msgs := Messages(n)
		wantAll(t, deliver(t, t.Context(), in.Sink, msgs), pacer.Delivered)
		all = append(all, msgs...)
	}
	wantStored(t, in, ids(all))
}

func testResultPerMessage(t *testing.T, h Harness, in Instance) {
	// Results arrive pre-filled with garbage; the sink must overwrite each.
	msgs := Messages(batchOf(h, 9))
	res := make([]pacer.Result, len(msgs))
	for i := range res {
		res[i] = pacer.Result{Outcome: pacer.Outcome(99)}
	}
	in.Sink.Deliver(t.Context(), msgs, res)
	wantAll(t, res, pacer.Delivered)
	// An empty call is allowed and writes nothing.
	in.Sink.Deliver(t.Context(), nil, nil)
}

func testConcurrent(t *testing.T, h Harness, in Instance) {
	const workers, per = 8, 5
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		all []string
	)
	for range workers {
		msgs := Messages(per)
		all = append(all, ids(msgs)...)
		wg.Go(func() {
			if h.Features.Batches {
				res := make([]pacer.Result, len(msgs))
				in.Sink.Deliver(t.Context(), msgs, res)
				mu.Lock()
				wantAll(t, res, pacer.Delivered)
				mu.Unlock()
				return
			}
			for _, m := range msgs {
				res := make([]pacer.Result, 1)
				in.Sink.Deliver(t.Context(), []*pacer.Message{m}, res)
				mu.Lock()
				wantAll(t, res, pacer.Delivered)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	wantStored(t, in, all)
}

func testIdempotent(t *testing.T, _ Harness, in Instance) {
	msgs := Messages(4)
	wantAll(t, deliver(t, t.Context(), in.Sink, msgs[:2]), pacer.Delivered)
	// Redelivery of the first two, with two new ones: all Delivered, each
	// stored once.
	wantAll(t, deliver(t, t.Context(), in.Sink, msgs), pacer.Delivered)
	wantAll(t, deliver(t, t.Context(), in.Sink, msgs[:1]), pacer.Delivered)
	wantStored(t, in, ids(msgs))
}

func testTransient(t *testing.T, h Harness, in Instance) {
	in.Fail(t, Transient)
	msgs := Messages(batchOf(h, 3))
	wantAll(t, deliver(t, t.Context(), in.Sink, msgs), pacer.Retry)
	in.Fail(t, None)
	wantAll(t, deliver(t, t.Context(), in.Sink, msgs), pacer.Delivered)
	wantStored(t, in, ids(msgs))
}

func testPermanent(t *testing.T, h Harness, in Instance) {
	in.Fail(t, Permanent)
	msgs := Messages(batchOf(h, 3))
	wantAll(t, deliver(t, t.Context(), in.Sink, msgs), pacer.Reject)
	in.Fail(t, None)
	ok := Messages(1)
	wantAll(t, deliver(t, t.Context(), in.Sink, ok), pacer.Delivered)
	wantStored(t, in, ids(ok))
}

func testPoisonInBatch(t *testing.T, _ Harness, in Instance) {
	msgs := Messages(6)
	msgs[2].Key = []byte(PoisonKey)
	msgs[5].Key = []byte(PoisonKey)
	res := deliver(t, t.Context(), in.Sink, msgs)
	var good []string
	for i, r := range res {
		want := pacer.Delivered
		if string(msgs[i].Key) == PoisonKey {
			want = pacer.Reject
		} else {
			good = append(good, msgs[i].ID)
		}
		if r.Outcome != want {
			t.Errorf("result %d = %v (%v) want %v", i, r.Outcome, r.Err, want)
		}
	}
	wantStored(t, in, good)
}

func testCanceledContext(t *testing.T, h Harness, in Instance) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	msgs := Messages(batchOf(h, 4))
	res := deliver(t, ctx, in.Sink, msgs)
	// Nothing may be claimed delivered that was not; a sink may still
	// deliver before noticing, but then the downstream must hold it.
	var stored []string
	for i, r := range res {
		switch r.Outcome {
		case pacer.Delivered:
			stored = append(stored, msgs[i].ID)
		case pacer.Retry:
			if !errors.Is(r.Err, context.Canceled) {
				t.Errorf("result %d: Retry with %v, want it to wrap context.Canceled", i, r.Err)
			}
		default:
			t.Errorf("result %d = %v (%v) on a canceled context, want Retry", i, r.Outcome, r.Err)
		}
	}
	wantStored(t, in, stored)
}

func testCancelWhileHanging(t *testing.T, h Harness, in Instance) {
	in.Fail(t, Hang)
	msgs := Messages(batchOf(h, 3))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan []pacer.Result, 1)
	go func() { done <- deliver(t, ctx, in.Sink, msgs) }()
	// Give the request a moment to reach the hanging downstream; whether
	// it did or not, cancel must end Deliver.
	timer := time.NewTimer(50 * time.Millisecond)
	select {
	case res := <-done:
		timer.Stop()
		t.Fatalf("Deliver returned %v before cancel while the downstream hangs", res)
	case <-timer.C:
	}
	cancel()
	select {
	case res := <-done:
		wantAll(t, res, pacer.Retry)
	case <-time.After(30 * time.Second):
		t.Fatal("Deliver did not return within 30s of its context being canceled")
	}
	in.Fail(t, None)
}
