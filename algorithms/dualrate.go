package algorithms

import (
	"fmt"
	"sync"
	"time"
)

// DualRateConfig configures a DualRate shaper.
type DualRateConfig struct {
	Rate  Rate // sustained rate r; required
	Burst int  // token bucket capacity b >= 1
	Peak  Rate // peak rate p >= r; the zero value means no peak pacing
	// MaxWait bounds the total wait of a grant (borrowing in the bucket plus
	// queueing behind the peak pacer); a request that would wait longer is
	// refused, consuming nothing. 0 = grant only what can go at once.
	MaxWait    time.Duration
	StartEmpty bool // start the bucket with no permits
}

// DualRate is a token bucket (r, b) followed by a peak pacer (p) in series:
// sustained r, bursts up to b, never faster than p ("token-bucket bursting
// plus leaky-bucket peak shaving"). It is what the engine uses by default.
//
// Guarantee: for every interval [t1, t2], permits used in it (at now+wait)
// number at most r*(t2-t1) + b, and, with a peak, grants depart no closer
// than n/p after a grant of n, so at most p*(t2-t1) + 1 single permits. Both
// exact in integer nanoseconds plus remainders. A grant's wait never exceeds
// MaxWait. The pacer is a greedy shaper, and a greedy shaper keeps the
// bucket's envelope, so both hold at once.
//
// Decisions are atomic: both stages are computed, then committed only when
// the total wait fits; a refusal consumes nothing. A stale now is treated as
// the latest time seen. Safe for concurrent use (one mutex over both
// stages: the state is several words).
type DualRate struct {
	mu      sync.Mutex
	epoch   time.Time
	c       core
	peak    bool
	pst     step
	next    inst // earliest departure of the next grant (peak stage)
	maxWait int64
	// last makes a Cancel right after the grant it cancels exact for the
	// peak stage (as All's rollback needs).
	lastGrant lastGrant[struct{}]
}

var _ Limiter = (*DualRate)(nil)

func validatePeak(r, peak Rate) error {
	if peak == (Rate{}) {
		return nil
	}
	if err := peak.Validate(); err != nil {
		return fmt.Errorf("peak: %w", err)
	}
	if peak.Cmp(r) < 0 {
		return fmt.Errorf("%w: peak %s is below the rate %s", ErrInvalidConfig, peak, r)
	}
	return nil
}

// NewDualRate returns a dual-rate shaper at now.
func NewDualRate(cfg DualRateConfig, now time.Time) (*DualRate, error) {
	if err := validateBucket(cfg.Rate, cfg.Burst, cfg.MaxWait); err != nil {
		return nil, err
	}
	if err := validatePeak(cfg.Rate, cfg.Peak); err != nil {
		return nil, err
	}
	d := &DualRate{epoch: now, maxWait: int64(cfg.MaxWait)}
	d.c.init(cfg.Rate, int64(cfg.Burst), int64(cfg.MaxWait), 0, 0, cfg.StartEmpty)
	if cfg.Peak != (Rate{}) {
		d.peak = true
		d.pst = newStep(cfg.Peak)
	}
	return d, nil
}

// Reserve asks for n permits at now (see Limiter). ok=false with wait 0
// means n can never be granted (more than Burst plus what MaxWait borrows).
func (d *DualRate) Reserve(now time.Time, n int) (time.Duration, bool) {
	t := rel(now, d.epoch)
	d.mu.Lock()
	defer d.mu.Unlock()
	t = d.c.clock(t)
	nn := int64(n)
	if nn <= 0 {
		return 0, true
	}
	if nn > d.c.maxN {
		return Never, false
	}
	nt, w := d.c.plan(t, nn)
	if !d.peak {
		if w > d.maxWait {
			return time.Duration(w - d.maxWait), false
		}
		d.c.tat = nt
		return time.Duration(w), true
	}
	dep := maxInst(d.next, inst{ns: t + w})
	total := dep.ceil() - t
	if total > d.maxWait {
		return time.Duration(total - d.maxWait), false
	}
	d.c.tat = nt
	before := d.next
	d.next = d.pst.add(dep, d.pst.mul(nn))
	d.lastGrant.record(nn, before, d.next, struct{}{})
	return time.Duration(total), true
}

// Cancel gives back n permits to both stages (never above full, never
// before now).
func (d *DualRate) Cancel(now time.Time, n int) {
	t := rel(now, d.epoch)
	d.mu.Lock()
	defer d.mu.Unlock()
	t = d.c.clock(t)
	if n <= 0 {
		return
	}
	d.c.cancel(t, int64(n))
	if d.peak {
		if before, _, ok := d.lastGrant.undo(int64(n), d.next); ok {
			d.next = before
			return
		}
		d.next = maxInst(d.pst.sub(d.next, d.pst.mul(min(int64(n), d.c.maxN))), inst{ns: t})
	}
}

// Tokens returns the bucket's permits at now (negative while borrowed).
func (d *DualRate) Tokens(now time.Time) float64 {
	t := rel(now, d.epoch)
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.c.tokens(d.c.clock(t))
}

// SetRate changes the sustained rate at now, keeping the bucket's permits.
// It fails when r is invalid or above the peak.
func (d *DualRate) SetRate(now time.Time, r Rate) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := validateBucket(r, int(d.c.burst), time.Duration(d.maxWait)); err != nil {
		return err
	}
	if d.peak {
		if err := validatePeak(r, d.peakRate()); err != nil {
			return err
		}
	}
	d.c.setRate(d.c.clock(rel(now, d.epoch)), r)
	return nil
}

// SetBurst changes the bucket capacity at now, keeping its permits (capped).
func (d *DualRate) SetBurst(now time.Time, burst int) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := validateBucket(d.c.rate, burst, time.Duration(d.maxWait)); err != nil {
		return err
	}
	d.c.setBurst(d.c.clock(rel(now, d.epoch)), int64(burst))
	return nil
}

// SetPeak changes the peak rate at now (the zero Rate removes peak pacing).
// The next departure slot already scheduled is kept.
func (d *DualRate) SetPeak(now time.Time, peak Rate) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := validatePeak(d.c.rate, peak); err != nil {
		return err
	}
	t := d.c.clock(rel(now, d.epoch))
	d.lastGrant.forget()
	if peak == (Rate{}) {
		d.peak = false
		return nil
	}
	nextNs := d.next.ceil()
	if !d.peak {
		nextNs = t
	}
	d.peak = true
	d.pst = newStep(peak)
	d.next = inst{ns: nextNs}
	return nil
}

func (d *DualRate) peakRate() Rate {
	return Rate{Count: d.pst.den, Per: time.Duration(d.pst.whole*d.pst.den + d.pst.num)}
}
