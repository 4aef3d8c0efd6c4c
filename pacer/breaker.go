package pacer

import (
	"container/heap"
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pacer-dev/pacer/internal/base/redact"
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
// the failing messages, the suspects (their attempts made while open do not
// count against RetryConfig). It then delivers one message (or batch) at a
// time, a probe. The first delivery that succeeds closes the breaker: the
// source resumes and the held messages are retried at once. A held message
// that fails for good again after a success proved the pipeline sound is a
// bad message after all and is dead-lettered.
//
// A run of bad messages is not a broken pipeline. Ten distinct messages
// refused in a row (a producer deploy that sends a run of them) look like
// an API that refuses everything until a newer message is tried, so a probe
// is a message that is not a suspect whenever there is one: the suspects
// hold no delivery slot (a worker can take the next message from the queue
// while they wait) and step aside while a newer message is queued or in
// flight. A probe of a newer message that fails with a class that is not
// systemic waits ProbeInitial for the next; a probe of a suspect, or a
// systemic class, doubles the wait up to ProbeMax. When every message in
// memory is a suspect and the trip was not systemic, the source is resumed
// (the queue's bound still applies) so newer messages can probe; suspects
// beyond QueueSize + MaxInFlight*BatchSize are handed back to the source
// (Nak, redelivered after ProbeMax), so memory stays within twice the
// engine's bound. So a run of 40 rejected messages followed by good ones
// dead-letters the 40 and delivers the rest with no operator, while a
// failure that hits every message (401, a missing table, 500 for each)
// keeps every message held. With a systemic trip the source stays paused
// and the suspects are probed themselves once nothing newer is left.
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
	// after each failed probe of a held message or with a systemic class up
	// to ProbeMax (a newer message failing otherwise waits ProbeInitial for
	// the next); 0: 1s and 1m. ProbeMax is also how long a held message
	// steps aside for newer ones, and the Nak delay of one handed back.
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
	suspects  atomic.Int64  // messages held (suspect) and not settled
	maxHeld   int64         // suspects kept in memory; more are handed back
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
	level       int  // doublings of the probe wait
	sys         bool // open on a systemic class (or a probe failed with one)
	walking     bool // the source was resumed for newer messages to probe
	// handed maps the IDs of suspects handed back to the source (at most
	// maxHeld, oldest forgotten first) to the successes seen when they
	// were held: one that fails again after a success is dead-lettered.
	handed      map[string]uint64
	handedOrder []string
	nextProbe   time.Time
	trips       uint64
	resets      uint64
	wake        chan struct{} // closed when the breaker closes
}

func newBreaker(c BreakerConfig, maxHeld int64) *breaker {
	b := &breaker{cfg: c, maxHeld: maxHeld, systemic: make(map[string]bool), cur: map[string]int{}, prev: map[string]int{}}
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
	// The pipeline works: the next trip needs new evidence.
	clear(b.cur)
	clear(b.prev)
	probes, since, class = b.probes, b.since, b.class
	b.clearOpen()
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
		b.sys = b.sys || systemic || b.systemic[class]
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
	b.probes, b.level, b.sys, b.walking = 0, 0, systemic, false
	b.nextProbe = now.Add(b.cfg.ProbeInitial)
	return true, &trip{class: class, cause: b.cause, count: max(streak, int(inWindow)), systemic: systemic, nextProbe: b.nextProbe}
}

// clearOpen forgets what the open breaker knew (b.mu held).
func (b *breaker) clearOpen() {
	b.class, b.cause, b.since, b.probes, b.nextProbe = "", "", time.Time{}, 0, time.Time{}
	b.level, b.sys, b.walking = 0, false, false
}

// probeFailed records that a probe did not deliver, and schedules the next
// one: ProbeInitial later after a newer message failed with a class that
// is not systemic (escalate false), else a wait doubled from ProbeInitial
// up to ProbeMax. It returns when that is.
func (b *breaker) probeFailed(now time.Time, escalate bool) time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.open.Load() {
		return time.Time{}
	}
	b.probes++
	d := b.cfg.ProbeInitial
	if escalate {
		b.level++
		for i := 0; i < b.level && d < b.cfg.ProbeMax; i++ {
			d *= 2
		}
	}
	b.nextProbe = now.Add(min(d, b.cfg.ProbeMax))
	return b.nextProbe
}

// walk reports whether the source should be resumed for newer messages to
// probe (open, not systemic), and whether this is the first time in this
// trip (to log it once).
func (b *breaker) walk() (resume, first bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.open.Load() || b.sys {
		return false, false
	}
	first = !b.walking
	b.walking = true
	return true, first
}

// handBack remembers a suspect handed back to the source.
func (b *breaker) handBack(id string, seen uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.handed == nil {
		b.handed = make(map[string]uint64)
	}
	if _, ok := b.handed[id]; !ok {
		b.handedOrder = append(b.handedOrder, id)
	}
	b.handed[id] = seen
	for int64(len(b.handedOrder)) > b.maxHeld {
		delete(b.handed, b.handedOrder[0])
		b.handedOrder = b.handedOrder[1:]
	}
}

// provenBad reports whether id is a suspect handed back to the source and
// a delivery has succeeded since it was held (and forgets it then).
func (b *breaker) provenBad(id string) bool {
	if b.open.Load() {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	seen, ok := b.handed[id]
	if !ok || b.successes.Load() <= seen {
		return false
	}
	delete(b.handed, id)
	return true
}

// isSystemic reports whether class is systemic by the sink's word or the
// configuration.
func (b *breaker) isSystemic(class string, systemic bool) bool {
	return systemic || (class != "" && b.systemic[class])
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
	b.clearOpen()
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
	if !it.suspect && b.provenBad(it.m.ID) {
		return false // the same, for one handed back and delivered again
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
	b := e.brk
	e.stats.held.Add(1)
	if !it.suspect {
		it.suspect = true
		b.suspects.Add(1)
	}
	it.seen = b.successes.Load()
	it.base = it.m.Attempt
	it.first = time.Time{}
	if it.held {
		// A suspect holds no slot: the next message can be taken.
		it.held = false
		e.inflight.Add(-1)
		e.releaseSlot()
	}
	e.delayed.push(it, now.Add(b.cfg.ProbeMax)) // parked: newer messages probe first
	for b.suspects.Load() > b.maxHeld {
		old := e.delayed.takeSuspect()
		if old == nil {
			break
		}
		b.handBack(old.m.ID, old.seen)
		e.handBack(old, b.cfg.ProbeMax)
	}
	if e.freshWaiting() {
		return // a newer message will be the next probe
	}
	// Every message in memory is a suspect.
	if resume, first := b.walk(); resume && !e.srcDone.Load() {
		if first {
			e.log.Info("pacer: every message in memory is held by the breaker; resuming the source so newer messages can probe (a run of bad messages is told from a broken pipeline by whether newer messages succeed)",
				"held", b.suspects.Load())
		}
		e.pause.clear(PauseBroken)
	}
	if _, at, _ := b.probeAt(); !at.IsZero() {
		if at.Before(now) {
			at = now
		}
		e.delayed.unparkSuspect(at)
	}
}

// stepAside parks grp again when it holds only suspects while a newer
// message is queued or in flight (that one probes first). It reports
// whether it did.
func (e *Engine) stepAside(grp []*item, now time.Time) bool {
	for _, it := range grp {
		if !it.suspect {
			return false
		}
	}
	if !e.freshWaiting() {
		return false
	}
	for _, it := range grp {
		e.delayed.push(it, now.Add(e.brk.cfg.ProbeMax))
	}
	return true
}

// freshWaiting reports whether a message that is not a suspect can be
// delivered next: one queued, or one taken (in flight, or waiting for a
// retry) and not parked behind a busy key (OrderKey), whose owner may be
// a suspect itself.
func (e *Engine) freshWaiting() bool {
	if e.queued() > 0 {
		return true
	}
	n := e.inflight.Load()
	if n == 0 || e.keys == nil {
		return n > 0
	}
	e.keyMu.Lock()
	parked := 0
	for _, q := range e.keys {
		parked += len(q)
	}
	e.keyMu.Unlock()
	return n > int64(parked)
}

// probeMissed tells the breaker a probe delivered nothing; it escalates the
// probe backoff when the probe was a suspect or failed with a systemic
// class.
func (e *Engine) probeMissed(items []*item, results []Result, now time.Time) {
	escalate := false
	for i, it := range items {
		if it.suspect || e.brk.isSystemic(e.classify(results[i].Err)) {
			escalate = true
			break
		}
	}
	e.brk.probeFailed(now, escalate)
}

// suspectSettled is settle's part for a suspect.
func (e *Engine) suspectSettled(it *item) {
	if it.suspect && e.brk != nil {
		e.brk.suspects.Add(-1)
	}
}

// handBackDelay is the Nak delay of an item still waiting when the engine
// stops: what is left of its wait, none for a parked suspect.
func handBackDelay(it *item, now time.Time) time.Duration {
	if it.suspect {
		return 0
	}
	return max(0, it.due.Sub(now))
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
	e.delayed.dueNow(e.clock.Now(), true) // the suspects go again now
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

// takeSuspect removes and returns the oldest parked suspect (nil: none).
func (q *delayQueue) takeSuspect() *item {
	q.mu.Lock()
	defer q.mu.Unlock()
	k := -1
	for i, it := range q.h {
		if it.suspect && (k < 0 || it.seq < q.h[k].seq) {
			k = i
		}
	}
	if k < 0 {
		return nil
	}
	it := heap.Remove(&q.h, k).(*item)
	q.n.Add(-1)
	return it
}

// unparkSuspect brings the oldest parked suspect forward to at, to be the
// next probe when nothing newer is left.
func (q *delayQueue) unparkSuspect(at time.Time) {
	q.mu.Lock()
	k := -1
	for i, it := range q.h {
		if it.suspect && it.due.After(at) && (k < 0 || it.seq < q.h[k].seq) {
			k = i
		}
	}
	if k >= 0 {
		q.h[k].due = at
		heap.Fix(&q.h, k)
	}
	q.mu.Unlock()
	if k >= 0 {
		q.signal()
		select {
		case q.kick <- struct{}{}:
		default:
		}
	}
}

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
