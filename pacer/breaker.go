package pacer

import (
	"container/heap"
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pacer-dev/pacer/internal/redact"
)

// The breaker tells a bad message from a broken pipeline.
//
// A permanent failure (a Reject, or a Retry whose attempts or time ran out)
// would send the message to the dead-letter destination. When failures of
// one class keep coming (an expired token answering 401 to everything, a
// renamed table, a body template that cannot render), dead-lettering would
// drain the whole backlog into the dead-letter file in seconds. The breaker
// watches the class of every permanent failure and trips when
//
//   - the class is systemic (the sink says so through FailureClassifier, or
//     it is listed in BreakerConfig.Systemic): at once, or
//   - Consecutive permanent failures of one class came in a row, or
//   - failures of one class make up Ratio of the last Window outcomes
//     (deliveries and permanent failures; estimated over two blocks of
//     Window outcomes, like a sliding-window counter).
//
// Tripped (open), the engine dead-letters nothing: it pauses the source
// (PauseBroken), reports not ready with the cause, logs one ERROR, and holds
// the failing messages (their attempts made while open do not count against
// RetryConfig). It then delivers one message (or batch) at a time, a probe,
// spaced by a backoff from ProbeInitial doubling up to ProbeMax. The first
// delivery that succeeds closes the breaker: the source resumes and the held
// messages are retried normally. A held message that fails for good again
// after a success proved the pipeline sound is a bad message after all and
// is dead-lettered.
//
// Failures of an unknown class (an error the sink does not classify, class
// "") never trip the breaker: a sink opts in by implementing
// FailureClassifier. The HTTP and SQL sinks do.

// FailureClassifier is implemented by a Sink that can name the class of the
// errors it puts in Results: "http 401", "sqlstate 42P01", "render
// template". systemic is true for a class that says the pipeline, not the
// message, is at fault (bad credentials, a missing table, a request that
// cannot be built locally). class "" leaves the error out of the breaker.
type FailureClassifier interface {
	FailureClass(err error) (class string, systemic bool)
}

// BreakerConfig configures the systemic-failure breaker. The zero value is
// on, with the defaults below.
type BreakerConfig struct {
	// Disabled turns the breaker off: every permanent failure is
	// dead-lettered, however many there are.
	Disabled bool
	// Consecutive trips the breaker after this many permanent failures of
	// one class in a row; 0: 10.
	Consecutive int
	// Window and Ratio trip it when failures of one class make up Ratio of
	// the last Window outcomes; 0: 100 and 0.5.
	Window int
	Ratio  float64
	// ProbeInitial is the wait before the first probe after a trip, doubled
	// after each failed probe up to ProbeMax; 0: 1s and 1m.
	ProbeInitial, ProbeMax time.Duration
	// Systemic lists extra failure classes that trip the breaker at once
	// (besides those the sink reports as systemic).
	Systemic []string
}

func (c *BreakerConfig) setDefaults() {
	if c.Consecutive == 0 {
		c.Consecutive = 10
	}
	if c.Window == 0 {
		c.Window = 100
	}
	if c.Ratio == 0 {
		c.Ratio = 0.5
	}
	if c.ProbeInitial == 0 {
		c.ProbeInitial = time.Second
	}
	if c.ProbeMax == 0 {
		c.ProbeMax = time.Minute
	}
}

func (c *BreakerConfig) validate() error {
	if c.Disabled {
		return nil
	}
	if c.Consecutive < 1 || c.Window < 1 {
		return fmt.Errorf("%w: Breaker Consecutive %d Window %d (want >= 1)", ErrInvalidConfig, c.Consecutive, c.Window)
	}
	if !(c.Ratio > 0 && c.Ratio <= 1) {
		return fmt.Errorf("%w: Breaker.Ratio %g (want 0 < r <= 1)", ErrInvalidConfig, c.Ratio)
	}
	if c.ProbeInitial <= 0 || c.ProbeMax < c.ProbeInitial {
		return fmt.Errorf("%w: Breaker probe backoff %v..%v", ErrInvalidConfig, c.ProbeInitial, c.ProbeMax)
	}
	return nil
}

// BreakerStatus is the breaker's part of Status.
type BreakerStatus struct {
	Open      bool      `json:"open"`
	Class     string    `json:"class,omitempty"`
	Cause     string    `json:"cause,omitempty"`
	Since     time.Time `json:"since,omitzero"`
	Probes    int       `json:"probes,omitempty"`
	NextProbe time.Time `json:"next_probe,omitzero"`
	Trips     uint64    `json:"trips"`
	// Resets counts the times an operator closed it (ResetBreaker).
	Resets uint64 `json:"resets"`
}

// breaker is the systemic-failure detector and its open/closed state. Its
// methods take the time; it never reads the clock. Safe for concurrent use:
// a delivery costs two atomic operations while no failure is being counted.
type breaker struct {
	cfg      BreakerConfig
	systemic map[string]bool

	outcomes  atomic.Uint64 // deliveries and permanent failures seen
	successes atomic.Uint64 // deliveries seen
	streakN   atomic.Int64  // length of the current run of one failure class
	open      atomic.Bool

	mu          sync.Mutex
	streakClass string
	block       uint64 // outcomes/Window when cur started
	cur, prev   map[string]int
	class       string // what tripped it
	cause       string // redacted error text
	since       time.Time
	probes      int
	nextProbe   time.Time
	trips       uint64
	resets      uint64
	wake        chan struct{} // closed when the breaker closes
}

func newBreaker(c BreakerConfig) *breaker {
	b := &breaker{cfg: c, systemic: make(map[string]bool), cur: map[string]int{}, prev: map[string]int{}}
	for _, s := range c.Systemic {
		b.systemic[s] = true
	}
	return b
}

// trip is what a failure that tripped the breaker reports.
type trip struct {
	class, cause string
	count        int // failures of the class that led to it (run or window)
	systemic     bool
	nextProbe    time.Time
}

// succeed records a delivery. It reports whether that closed the breaker,
// with how many probes it took and since when it was open.
func (b *breaker) succeed() (closed bool, probes int, since time.Time, class string) {
	b.outcomes.Add(1)
	b.successes.Add(1)
	if b.streakN.Load() == 0 && !b.open.Load() {
		return false, 0, time.Time{}, ""
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.streakN.Store(0)
	b.streakClass = ""
	if !b.open.Load() {
		return false, 0, time.Time{}, ""
	}
	b.open.Store(false)
	close(b.wake)
	b.wake = nil
	probes, since, class = b.probes, b.since, b.class
	b.class, b.cause, b.since, b.probes, b.nextProbe = "", "", time.Time{}, 0, time.Time{}
	return true, probes, since, class
}

// fail records a permanent failure of class at now. It reports whether the
// breaker is open (the message must be held, not dead-lettered) and, when
// this failure tripped it, what tripped it.
func (b *breaker) fail(now time.Time, class string, systemic bool, err error) (open bool, t *trip) {
	n := b.outcomes.Add(1)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.open.Load() {
		return true, nil
	}
	if class == "" {
		b.streakN.Store(0)
		b.streakClass = ""
		return false, nil
	}
	w := uint64(b.cfg.Window)
	if blk := (n - 1) / w; blk != b.block {
		if blk == b.block+1 {
			b.prev, b.cur = b.cur, b.prev
		} else {
			clear(b.prev)
		}
		clear(b.cur)
		b.block = blk
	}
	b.cur[class]++
	if class == b.streakClass {
		b.streakN.Add(1)
	} else {
		b.streakClass = class
		b.streakN.Store(1)
	}
	// Sliding estimate: this block's count plus the part of the previous
	// block still inside the window.
	pos := float64((n-1)%w+1) / float64(w)
	inWindow := float64(b.cur[class]) + float64(b.prev[class])*(1-pos)
	systemic = systemic || b.systemic[class]
	streak := int(b.streakN.Load())
	need := math.Ceil(b.cfg.Ratio * float64(b.cfg.Window))
	if !systemic && streak < b.cfg.Consecutive && inWindow < need {
		return false, nil
	}
	b.open.Store(true)
	b.wake = make(chan struct{})
	b.trips++
	b.class = class
	b.cause = truncate(redact.Error(err), 300)
	b.since = now
	b.probes = 0
	b.nextProbe = now.Add(b.cfg.ProbeInitial)
	return true, &trip{class: class, cause: b.cause, count: max(streak, int(inWindow)), systemic: systemic, nextProbe: b.nextProbe}
}

// probeFailed records that a probe did not deliver, and schedules the next
// one. It returns when that is.
func (b *breaker) probeFailed(now time.Time) time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.open.Load() {
		return time.Time{}
	}
	b.probes++
	d := b.cfg.ProbeInitial
	for i := 0; i < b.probes && d < b.cfg.ProbeMax; i++ {
		d *= 2
	}
	b.nextProbe = now.Add(min(d, b.cfg.ProbeMax))
	return b.nextProbe
}

// probeAt returns whether the breaker is open, when the next probe may go,
// and a channel closed when the breaker closes.
func (b *breaker) probeAt() (open bool, at time.Time, wake <-chan struct{}) {
	if !b.open.Load() {
		return false, time.Time{}, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.open.Load() {
		return false, time.Time{}, nil
	}
	return true, b.nextProbe, b.wake
}

// reset closes the breaker on the operator's word (SIGHUP, the admin
// API) and forgets the failures counted so far, so the next trip needs new
// evidence. It reports whether the breaker was open and what tripped it.
func (b *breaker) reset() (was bool, class string, since time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.streakN.Store(0)
	b.streakClass = ""
	clear(b.cur)
	clear(b.prev)
	if !b.open.Load() {
		return false, "", time.Time{}
	}
	b.open.Store(false)
	close(b.wake)
	b.wake = nil
	class, since = b.class, b.since
	b.class, b.cause, b.since, b.probes, b.nextProbe = "", "", time.Time{}, 0, time.Time{}
	b.resets++
	return true, class, since
}

func (b *breaker) status() BreakerStatus {
	b.mu.Lock()
	defer b.mu.Unlock()
	return BreakerStatus{Open: b.open.Load(), Class: b.class, Cause: b.cause, Since: b.since,
		Probes: b.probes, NextProbe: b.nextProbe, Trips: b.trips, Resets: b.resets}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// classify names err's failure class through the sink's FailureClassifier.
func (e *Engine) classify(err error) (string, bool) {
	if err == nil {
		return "", false
	}
	if fc, ok := e.cfg.Sink.(FailureClassifier); ok {
		return fc.FailureClass(err)
	}
	return "", false
}

// permanentFailure is where a message that would be dead-lettered passes
// the breaker first. It returns true when the breaker holds the message
// (open, or tripped by this very failure).
func (e *Engine) permanentFailure(it *item, err error, now time.Time) bool {
	b := e.brk
	if b == nil {
		return false
	}
	if it.suspect && b.successes.Load() > it.seen && !b.open.Load() {
		// Held once, and a delivery has succeeded since: the pipeline
		// works, so this message is bad on its own.
		return false
	}
	class, systemic := e.classify(err)
	if now.IsZero() {
		now = e.clock.Now()
	}
	open, t := b.fail(now, class, systemic, err)
	if t != nil {
		why := "failures in a row"
		if t.systemic {
			why = "a systemic failure class"
		}
		e.pause.set(PauseBroken)
		e.log.Error("pacer: the pipeline is failing, not the messages: pausing the source and holding messages instead of dead-lettering them; probing one delivery at a time until one succeeds",
			"class", t.class, "trigger", why, "failures", t.count, "cause", t.cause, "first_probe", t.nextProbe.Sub(now).String())
	}
	if !open {
		return false
	}
	e.hold(it, now)
	return true
}

// hold puts a message the open breaker keeps back into the delay queue,
// due at the next probe; attempts made so far no longer count.
func (e *Engine) hold(it *item, now time.Time) {
	if e.isStopping() {
		e.handBack(it, 0)
		return
	}
	e.stats.held.Add(1)
	it.suspect = true
	it.seen = e.brk.successes.Load()
	it.base = it.m.Attempt
	it.first = time.Time{}
	_, at, _ := e.brk.probeAt()
	if at.Before(now) {
		at = now
	}
	e.delayed.push(it, at)
}

// delivered tells the breaker about a delivery; if it closes the breaker,
// the source resumes.
func (e *Engine) breakerDelivered() {
	b := e.brk
	if b == nil {
		return
	}
	closed, probes, since, class := b.succeed()
	if !closed {
		return
	}
	e.pause.clear(PauseBroken)
	e.log.Info("pacer: a delivery succeeded: the pipeline works again; resuming the source",
		"class", class, "probes", probes, "open_for", e.clock.Now().Sub(since).Round(time.Millisecond).String())
}

// ResetBreaker closes the systemic-failure breaker at once, on the
// operator's word that the pipeline is fixed: the source resumes and the
// messages it held are retried now rather than at the next probe (with a
// fresh retry budget). If the pipeline is still broken, the breaker trips
// again on new failures. It reports whether the breaker was open. SIGHUP
// and the admin API (POST /resume) call it. Safe from any goroutine.
func (e *Engine) ResetBreaker() bool {
	if e.brk == nil {
		return false
	}
	was, class, since := e.brk.reset()
	if !was {
		return false
	}
	now := e.clock.Now()
	e.pause.clear(PauseBroken)
	n := e.delayed.dueNow(now, true)
	e.log.Warn("pacer: systemic-failure breaker cleared by the operator; resuming the source and retrying the held messages now",
		"class", class, "open_for", now.Sub(since).Round(time.Millisecond).String(), "held", n)
	return true
}

// dueNow makes every waiting message (with held, only those the breaker
// held) due at now, and wakes the workers: the operator's word that the
// downstream is fine again goes for retries already scheduled. It returns
// how many were brought forward.
func (q *delayQueue) dueNow(now time.Time, held bool) int {
	q.mu.Lock()
	n := 0
	for _, it := range q.h {
		if (it.suspect || !held) && it.due.After(now) {
			it.due = now
			n++
		}
	}
	if n > 0 {
		heap.Init(&q.h)
	}
	q.mu.Unlock()
	for range min(n, cap(q.wake)) {
		q.signal()
	}
	select {
	case q.kick <- struct{}{}:
	default:
	}
	return n
}

// awaitProbe is called by a worker holding messages while the breaker is
// open: it waits for the probe turn (one delivery at a time) and the probe
// time. It returns probe=true when the worker must deliver as the probe
// (and later call endProbe), probe=false when the breaker closed
// meanwhile, and ok=false when ctx is done.
func (e *Engine) awaitProbe(ctx context.Context, sl *sleeper) (probe, ok bool) {
	select {
	case e.probeSem <- struct{}{}:
	case <-ctx.Done():
		return false, false
	}
	for {
		open, at, wake := e.brk.probeAt()
		if !open {
			<-e.probeSem
			return false, true
		}
		d := at.Sub(e.clock.Now())
		if d <= 0 {
			return true, true
		}
		select {
		case <-sl.arm(d):
		case <-wake:
		case <-ctx.Done():
			<-e.probeSem
			return false, false
		}
	}
}

func (e *Engine) endProbe() { <-e.probeSem }

// breakerError is what Ready reports while the breaker is open.
func (e *Engine) breakerError() error {
	if e.brk == nil || !e.brk.open.Load() {
		return nil
	}
	s := e.brk.status()
	if !s.Open {
		return nil
	}
	return fmt.Errorf("systemic failure (%s) since %s: %s; source paused, nothing dead-lettered, probe %d due %s",
		s.Class, s.Since.UTC().Format(time.RFC3339), s.Cause, s.Probes+1, s.NextProbe.UTC().Format(time.RFC3339))
}
