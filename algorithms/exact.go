package algorithms

import (
	"fmt"
	"math/big"
	"math/bits"
	"time"
)

// Exact time arithmetic shared by the mutex-based algorithms.
//
// A Rate is Count per Per, so one permit costs Per/Count nanoseconds, a
// rational. A step keeps it as whole + num/den ns with num < den, and an inst
// is an instant (or a span) of ns + frac/den ns. Adding permits adds whole
// nanoseconds and carries the fraction, so 3/s costs 333333333+1/3 ns per
// permit and three permits cost exactly one second, for ever: nothing drifts
// and no float is accumulated.
//
// Times are nanoseconds relative to the limiter's epoch (its constructor's
// now), clamped to ±maxRel; every stored span is below maxSpan, so no sum
// overflows.

const (
	// maxSpan bounds every span an algorithm stores: burst*interval,
	// MaxWait, windows, expiry (about 73 years).
	maxSpan = int64(1) << 61
	// maxRel bounds times relative to the epoch (about 73 years), so that
	// a time plus two stored spans stays below 2^63.
	maxRel = int64(1) << 61
	// maxUnix bounds Unix nanoseconds used by the window counters (about
	// 146 years after 1970).
	maxUnix = int64(1) << 62
)

// step is the exact cost of one permit: whole + num/den nanoseconds.
type step struct {
	whole, num, den int64
}

// inst is ns + frac/den nanoseconds (den from the step that made it).
type inst struct {
	ns, frac int64
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func newStep(r Rate) step {
	g := gcd(r.Count, int64(r.Per))
	c, p := r.Count/g, int64(r.Per)/g
	return step{whole: p / c, num: p % c, den: c}
}

// float returns the permit cost in ns as a float (display only).
func (s step) float() float64 {
	return float64(s.whole) + float64(s.num)/float64(s.den)
}

// mul returns the span of n permits; n must keep n*cost below maxSpan.
func (s step) mul(n int64) inst {
	if n <= 0 {
		return inst{}
	}
	if s.num == 0 {
		return inst{ns: n * s.whole}
	}
	hi, lo := bits.Mul64(uint64(n), uint64(s.num))
	q, r := bits.Div64(hi, lo, uint64(s.den)) // q < n, so hi < den
	return inst{ns: n*s.whole + int64(q), frac: int64(r)}
}

func (s step) add(a, b inst) inst {
	ns := a.ns + b.ns
	f := uint64(a.frac) + uint64(b.frac)
	if f >= uint64(s.den) {
		f -= uint64(s.den)
		ns++
	}
	return inst{ns: ns, frac: int64(f)}
}

func (s step) sub(a, b inst) inst {
	ns := a.ns - b.ns
	f := a.frac - b.frac
	if f < 0 {
		f += s.den
		ns--
	}
	return inst{ns: ns, frac: f}
}

func (a inst) less(b inst) bool {
	return a.ns < b.ns || (a.ns == b.ns && a.frac < b.frac)
}

func maxInst(a, b inst) inst {
	if a.less(b) {
		return b
	}
	return a
}

// float returns the span in ns as a float64, without allocating (display
// and the warm-up ramp only; never accumulated).
func (a inst) float(s step) float64 {
	return float64(a.ns) + float64(a.frac)/float64(s.den)
}

// ceil rounds up to a whole nanosecond.
func (a inst) ceil() int64 {
	if a.frac > 0 {
		return a.ns + 1
	}
	return a.ns
}

// rat returns the span as an exact big.Rat of nanoseconds (slow paths only).
func (s step) rat(a inst) *big.Rat {
	r := new(big.Rat).SetFrac(big.NewInt(a.frac), big.NewInt(s.den))
	return r.Add(r, new(big.Rat).SetInt64(a.ns))
}

// fromRat converts a non-negative rational span of ns to an inst, rounding up
// to the step's denominator (so a conversion never shortens a debt).
func (s step) fromRat(x *big.Rat) inst {
	scaled := new(big.Rat).Mul(x, new(big.Rat).SetInt64(s.den))
	num, den := scaled.Num(), scaled.Denom()
	q, m := new(big.Int).QuoRem(num, den, new(big.Int))
	if m.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	d := big.NewInt(s.den)
	ns, frac := new(big.Int).QuoRem(q, d, new(big.Int))
	if !ns.IsInt64() || ns.Int64() >= maxSpan {
		return inst{ns: maxSpan} // capped: a longer debt only blocks longer
	}
	return inst{ns: ns.Int64(), frac: frac.Int64()}
}

// permitsIn returns floor(span / cost): how many whole permits span buys.
func (s step) permitsIn(span inst) int64 {
	x := s.rat(span)
	x.Quo(x, s.rat(inst{ns: s.whole, frac: s.num}))
	q := new(big.Int).Quo(x.Num(), x.Denom())
	if !q.IsInt64() {
		return 1 << 62
	}
	return q.Int64()
}

// spanOf returns the exact span of n permits as a big.Rat, for validation.
func spanOf(r Rate, n int64) *big.Rat {
	x := new(big.Rat).SetFrac(big.NewInt(int64(r.Per)), big.NewInt(r.Count))
	return x.Mul(x, new(big.Rat).SetInt64(n))
}

// checkSpan reports an error when n permits at r take longer than maxSpan.
func checkSpan(what string, r Rate, n int64) error {
	if spanOf(r, n).Cmp(new(big.Rat).SetInt64(maxSpan)) > 0 {
		return fmt.Errorf("%w: %s %d at %s spans more than %v", ErrInvalidConfig, what, n, r, time.Duration(maxSpan))
	}
	return nil
}

func checkDuration(what string, d time.Duration, allowZero bool) error {
	if d < 0 || (d == 0 && !allowZero) || int64(d) > maxSpan {
		return fmt.Errorf("%w: %s %v out of range (0 < %s <= %v)", ErrInvalidConfig, what, d, what, time.Duration(maxSpan))
	}
	return nil
}

// rel returns now relative to epoch in ns, clamped to ±maxRel.
func rel(now, epoch time.Time) int64 {
	d := int64(now.Sub(epoch))
	if d > maxRel {
		return maxRel
	}
	if d < -maxRel {
		return -maxRel
	}
	return d
}

// unixNano returns now as Unix nanoseconds, clamped to ±maxUnix so window
// arithmetic cannot overflow for absurd times.
func unixNano(now time.Time) int64 {
	s := now.Unix()
	if s > maxUnix/1e9 {
		return maxUnix
	}
	if s < -maxUnix/1e9 {
		return -maxUnix
	}
	return now.UnixNano()
}
