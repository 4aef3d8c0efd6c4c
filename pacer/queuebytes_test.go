package pacer_test

import (
	"context"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/pacertest"
)

// bytesWatch wraps a Source and records the queued bytes whenever the
// engine resumes it.
type bytesWatch struct {
	*pacertest.Source
	e     *pacer.Engine
	mu    sync.Mutex
	at    []int64
	peakB int64
}

func (w *bytesWatch) Resume() {
	b := w.e.Status().QueueBytes
	w.mu.Lock()
	w.at = append(w.at, b)
	w.mu.Unlock()
	w.Source.Resume()
}

// TestQueueBytesPausesTheSource: with QueueBytes, 900 KB messages (the
// issue's 500 x 900 KB that held 530 MB) fill the byte bound long before
// the count: the source is paused for queue_full, the queue holds at most
// QueueBytes plus one message, it resumes once half has drained, and every
// message is delivered.
func TestQueueBytesPausesTheSource(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n, size, bound = 60, 900_000, 5_000_000 // the bound holds 5.5 messages
		msgs := pacertest.Messages(n)
		for _, m := range msgs {
			m.Value = []byte(strings.Repeat("x", size))
		}
		led := pacertest.NewLedger()
		led.Attach(msgs)
		src := &bytesWatch{Source: pacertest.NewSource(msgs)}
		release := make(chan struct{})
		sink := &pacertest.Sink{Behave: func(*pacer.Message) (pacer.Result, pacer.Feedback, time.Duration) {
			<-release
			return pacer.Result{Outcome: pacer.Delivered}, pacer.Feedback{}, 0
		}}
		e, err := pacer.New(pacer.Config{Source: src, Sink: sink, QueueSize: 1000, QueueBytes: bound, MaxInFlight: 2})
		if err != nil {
			t.Fatal(err)
		}
		src.e = e
		done := make(chan error)
		go func() { done <- e.Run(context.Background()) }()
		synctest.Wait()
		st := e.Status()
		if !src.Paused() || !slices.Contains(st.PauseReasons, "queue_full") {
			t.Fatalf("queued %d messages, %d bytes: paused=%v reasons=%v, want paused for queue_full", st.QueueDepth, st.QueueBytes, src.Paused(), st.PauseReasons)
		}
		// Paused at >= bound; the workers have taken some since, and it
		// stays paused until half has drained.
		if st.QueueBytes <= bound/2 || st.QueueBytes > bound+size || st.QueueBytesLimit != bound {
			t.Errorf("queued %d bytes (limit %d), want in (%d, %d]", st.QueueBytes, st.QueueBytesLimit, bound/2, bound+size)
		}
		peak := st.QueueBytes
		for range n {
			release <- struct{}{}
			synctest.Wait()
			peak = max(peak, e.Status().QueueBytes)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if peak > bound+size {
			t.Errorf("peak queued bytes %d > bound + one message %d", peak, bound+size)
		}
		if got := led.Count(pacer.SettledAck); got != n {
			t.Errorf("acked %d of %d", got, n)
		}
		src.mu.Lock()
		defer src.mu.Unlock()
		if len(src.at) < 3 {
			t.Errorf("resumed %d times for %d messages through a bound of 5.5: want several", len(src.at), n)
		}
		for _, b := range src.at {
			if b > bound/2 {
				t.Errorf("resumed with %d bytes queued, more than half the bound %d", b, bound/2)
			}
		}
	})
}

// TestEmptyStreamLargeQueueIsCheap: an engine with the largest allowed
// queue (1,000,000) running on an idle source allocates what it holds, not
// queue_size: measured with runtime.MemStats (bytes allocated from New to
// running), not time. A buffered channel of that size alone was 8 MB.
func TestEmptyStreamLargeQueueIsCheap(t *testing.T) {
	allocated := func() uint64 {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.TotalAlloc
	}
	runtime.GC()
	before := allocated()
	_, stop := runIdle(t, 16)
	grown := allocated() - before
	stop()
	t.Logf("RESULT queue_size 1,000,000, idle: %d bytes allocated from New to running", grown)
	if grown > 1<<20 {
		t.Errorf("an idle engine with queue_size 1,000,000 allocated %d bytes, want < 1 MiB (allocate as messages arrive)", grown)
	}
}

// TestWorkersStartAsWorkAppears: with MaxInFlight 10,000 an idle engine
// runs one worker and allocates a few kilobytes (runtime.MemStats, not
// time; 10,000 workers up front allocated 8.6 MB and 30 MB of stacks); a
// backlog behind a slow sink brings the crew up to what it can use (every
// slot busy), and once the work is done and the retire period passed, it
// is one worker again.
func TestWorkersStartAsWorkAppears(t *testing.T) {
	allocated := func() (uint64, uint64) {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.TotalAlloc, ms.StackInuse
	}
	runtime.GC()
	a0, _ := allocated()
	e, stop := runIdle(t, 10_000)
	// Time for workers started up front to appear, and for the anchor to
	// start on a loaded machine (a scheduling wait, not a timed assertion).
	for i := 0; i < 1000 || e.Status().Workers == 0 && i < 1_000_000; i++ {
		runtime.Gosched()
	}
	a1, _ := allocated()
	st := e.Status()
	stop()
	t.Logf("RESULT max_in_flight 10,000, idle: %d worker(s), %d bytes allocated from New to running", st.Workers, a1-a0)
	if st.Workers != 1 || a1-a0 > 1<<20 {
		t.Errorf("idle with MaxInFlight 10,000: %d workers, %d bytes allocated; want 1 and < 1 MiB", st.Workers, a1-a0)
	}

	synctest.Test(t, func(t *testing.T) {
		const n, inflight = 200, 8
		msgs := pacertest.Messages(n)
		src := pacertest.NewSource(msgs)
		src.Hold = true
		release := make(chan struct{})
		sink := &pacertest.Sink{Behave: func(*pacer.Message) (pacer.Result, pacer.Feedback, time.Duration) {
			<-release
			return pacer.Result{Outcome: pacer.Delivered}, pacer.Feedback{}, 0
		}}
		e, err := pacer.New(pacer.Config{Source: src, Sink: sink, QueueSize: 50, MaxInFlight: inflight})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- e.Run(ctx) }()
		synctest.Wait()
		if st := e.Status(); st.Workers != inflight || st.InFlight != inflight {
			t.Errorf("backlog behind a blocked sink: %d workers, %d in flight; want %d and %d", st.Workers, st.InFlight, inflight, inflight)
		}
		close(release)
		synctest.Wait()
		if st := e.Status(); st.Delivered != n {
			t.Errorf("delivered %d of %d", st.Delivered, n)
		}
		time.Sleep(time.Minute) // past the retire period
		synctest.Wait()
		if st := e.Status(); st.Workers != 1 {
			t.Errorf("idle a minute after the backlog: %d workers, want 1", st.Workers)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// runIdle starts an engine with queue_size 1,000,000 and maxInFlight on a
// source that holds nothing and never ends, and returns it once running
// with the function that stops it (and fails t if Run failed).
func runIdle(t *testing.T, maxInFlight int) (*pacer.Engine, func()) {
	t.Helper()
	src := pacertest.NewSource(nil)
	src.Hold = true
	e, err := pacer.New(pacer.Config{Source: src, Sink: &pacertest.Sink{}, QueueSize: 1_000_000, MaxInFlight: maxInFlight})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- e.Run(ctx) }()
	for e.Status().State != "running" {
		runtime.Gosched()
	}
	return e, func() {
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}
