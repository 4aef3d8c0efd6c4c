package breaker

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pacer-dev/pacer/internal/base/redact"
)

// Config configures the systemic-failure breaker. The zero value is
// on, with the defaults below.
type Config struct {
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

// SetDefaults fills c's zero values.
func (c *Config) SetDefaults() {
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

// Validate reports a Config no breaker can run with.
func (c *Config) Validate() error {
	if c.Disabled {
		return nil
	}
	if c.Consecutive < 1 || c.Window < 1 {
		return fmt.Errorf("Breaker Consecutive %d Window %d (want >= 1)", c.Consecutive, c.Window)
	}
	if !(c.Ratio > 0 && c.Ratio <= 1) {
		return fmt.Errorf("Breaker.Ratio %g (want 0 < r <= 1)", c.Ratio)
	}
	if c.ProbeInitial <= 0 || c.ProbeMax < c.ProbeInitial {
		return fmt.Errorf("Breaker probe backoff %v..%v", c.ProbeInitial, c.ProbeMax)
	}
	return nil
}

// Status is what /status shows of the breaker.
type Status struct {
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

// Breaker is the systemic-failure detector and its open/closed state. Its
// methods take the time; it never reads the clock. Safe for concurrent use:
// a delivery costs two atomic operations while no failure is being counted.
type Breaker struct {
	cfg      Config
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

// New builds a closed Breaker from c (defaults filled, validated); it
// keeps at most maxHeld suspects in memory.
func New(c Config, maxHeld int64) *Breaker {
	b := &Breaker{cfg: c, maxHeld: maxHeld, systemic: make(map[string]bool), cur: map[string]int{}, prev: map[string]int{}}
	for _, s := range c.Systemic {
		b.systemic[s] = true
	}
	return b
}

// Trip is what a failure that tripped the breaker reports.
type Trip struct {
	Class, Cause string
	Count        int // failures of the class that led to it (run or window)
	Systemic     bool
	NextProbe    time.Time
}

// Succeed records a delivery. It reports whether that closed the breaker,
// with how many probes it took and since when it was open.
func (b *Breaker) Succeed() (closed bool, probes int, since time.Time, class string) {
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

// Fail records a permanent failure of class at now. It reports whether the
// breaker is open (the message must be held, not dead-lettered) and, when
// this failure tripped it, what tripped it.
func (b *Breaker) Fail(now time.Time, class string, systemic bool, err error) (open bool, t *Trip) {
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
	return true, &Trip{Class: class, Cause: b.cause, Count: max(streak, int(inWindow)), Systemic: systemic, NextProbe: b.nextProbe}
}

// clearOpen forgets what the open breaker knew (b.mu held).
func (b *Breaker) clearOpen() {
	b.class, b.cause, b.since, b.probes, b.nextProbe = "", "", time.Time{}, 0, time.Time{}
	b.level, b.sys, b.walking = 0, false, false
}

// ProbeFailed records that a probe did not deliver, and schedules the next
// one: ProbeInitial later after a newer message failed with a class that
// is not systemic (escalate false), else a wait doubled from ProbeInitial
// up to ProbeMax. It returns when that is.
func (b *Breaker) ProbeFailed(now time.Time, escalate bool) time.Time {
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

// Walk reports whether the source should be resumed for newer messages to
// probe (open, not systemic), and whether this is the first time in this
// trip (to log it once).
func (b *Breaker) Walk() (resume, first bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.open.Load() || b.sys {
		return false, false
	}
	first = !b.walking
	b.walking = true
	return true, first
}

// HandBack remembers a suspect handed back to the source.
func (b *Breaker) HandBack(id string, seen uint64) {
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

// ProvenBad reports whether id is a suspect handed back to the source and
// a delivery has succeeded since it was held (and forgets it then).
func (b *Breaker) ProvenBad(id string) bool {
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

// IsSystemic reports whether class is systemic by the sink's word or the
// configuration.
func (b *Breaker) IsSystemic(class string, systemic bool) bool {
	return systemic || (class != "" && b.systemic[class])
}

// ProbeAt returns whether the breaker is open, when the next probe may go,
// and a channel closed when the breaker closes.
func (b *Breaker) ProbeAt() (open bool, at time.Time, wake <-chan struct{}) {
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

// Reset closes the breaker on the operator's word (SIGHUP, the admin
// API) and forgets the failures counted so far, so the next trip needs new
// evidence. It reports whether the breaker was open and what tripped it.
func (b *Breaker) Reset() (was bool, class string, since time.Time) {
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

// Status is the breaker's state for /status.
func (b *Breaker) Status() Status {
	b.mu.Lock()
	defer b.mu.Unlock()
	return Status{Open: b.open.Load(), Class: b.class, Cause: b.cause, Since: b.since,
		Probes: b.probes, NextProbe: b.nextProbe, Trips: b.trips, Resets: b.resets}
}

// Err is what readiness reports while the breaker is open: the class,
// since when, the cause and the next probe; nil while it is closed.
func (b *Breaker) Err() error {
	if !b.IsOpen() {
		return nil
	}
	s := b.Status()
	if !s.Open {
		return nil
	}
	return fmt.Errorf("systemic failure (%s) since %s: %s; source paused, nothing dead-lettered, probe %d due %s",
		s.Class, s.Since.UTC().Format(time.RFC3339), s.Cause, s.Probes+1, s.NextProbe.UTC().Format(time.RFC3339))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// IsOpen reports whether the breaker is open (tripped).
func (b *Breaker) IsOpen() bool { return b.open.Load() }

// Successes counts the deliveries seen.
func (b *Breaker) Successes() uint64 { return b.successes.Load() }

// AddSuspect counts n more (or, negative, fewer) held suspects not yet
// settled, and returns how many there are.
func (b *Breaker) AddSuspect(n int64) int64 { return b.suspects.Add(n) }

// Suspects is how many held suspects are not yet settled.
func (b *Breaker) Suspects() int64 { return b.suspects.Load() }

// MaxHeld is how many suspects are kept in memory; more are handed back.
func (b *Breaker) MaxHeld() int64 { return b.maxHeld }

// ProbeMax is Config.ProbeMax: the longest probe wait, how long a held
// message steps aside, and the Nak delay of one handed back.
func (b *Breaker) ProbeMax() time.Duration { return b.cfg.ProbeMax }
