package algorithms

import (
	"math/big"
)

// core is the exact GCRA state shared by the mutex-based bucket algorithms
// (TokenBucket, LeakyMeter, DualRate). It is not safe for concurrent use; its
// owners hold a mutex around it.
//
// tat is the theoretical arrival time: the instant at which the bucket is
// full again. At time t the bucket holds burst - max(tat-t, 0)/cost permits.
// A request for n permits moves tat to max(tat, t) + n*cost and may be used
// once tat-tau <= t, tau = burst*cost: the virtual-scheduling form of a token
// bucket, exact in integer nanoseconds plus a remainder.
type core struct {
	rate    Rate
	st      step
	burst   int64
	tau     inst  // burst * cost
	maxWait int64 // ns; 0 = no borrowing
	expiry  int64 // ns; 0 = tokens never expire
	maxN    int64 // the largest n that can ever be granted
	tat     inst
	last    latest
}

// latest applies the stale-time rule shared by the mutex-based algorithms:
// a now earlier than one already seen is treated as that later time, so it
// can never rewind a limiter. The zero value has seen 0 (an epoch-relative
// start); the algorithms on Unix nanoseconds start it at -maxUnix. Not safe
// for concurrent use: its owner's mutex guards it.
type latest struct{ t int64 }

// see returns max(t, the latest time seen) and records it.
func (l *latest) see(t int64) int64 {
	if t < l.t {
		return l.t
	}
	l.t = t
	return t
}

func (c *core) init(r Rate, burst int64, maxWait, expiry int64, t int64, startEmpty bool) {
	c.rate = r
	c.st = newStep(r)
	c.burst = burst
	c.tau = c.st.mul(burst)
	c.maxWait = maxWait
	c.expiry = expiry
	c.last = latest{t}
	c.tat = inst{ns: t}
	if startEmpty {
		c.tat = c.st.add(inst{ns: t}, c.tau)
	}
	c.setMaxN()
}

// setMaxN computes the largest request that can ever be granted:
// n <= burst and n*cost <= min(tau, expiry) + maxWait.
func (c *core) setMaxN() {
	capSpan := c.st.rat(c.tau)
	if c.expiry > 0 {
		if e := new(big.Rat).SetInt64(c.expiry); e.Cmp(capSpan) < 0 {
			capSpan = e
		}
	}
	capSpan.Add(capSpan, new(big.Rat).SetInt64(c.maxWait))
	// A grant is used at once, so it may never exceed the burst.
	c.maxN = min(c.burst, c.st.permitsIn(c.st.fromRat(capSpan)))
}

// clock applies the stale-time rule: a now earlier than one already seen is
// treated as that later time, so it can never rewind the bucket.
func (c *core) clock(t int64) int64 { return c.last.see(t) }

// base is max(tat, t) and, with expiry, no earlier than t+tau-expiry (the
// bucket holds only permits minted during the last expiry).
func (c *core) base(t int64) inst {
	b := maxInst(c.tat, inst{ns: t})
	if c.expiry > 0 && c.expiry < c.tau.ceil() {
		b = maxInst(b, c.st.sub(c.st.add(inst{ns: t}, c.tau), inst{ns: c.expiry}))
	}
	return b
}

// plan returns the tat after granting n at t, and the wait before use
// (ceil to ns, >= 0). It does not mutate c.
func (c *core) plan(t, n int64) (inst, int64) {
	nt := c.st.add(c.base(t), c.st.mul(n))
	w := c.st.sub(nt, c.tau).ceil() - t
	if w < 0 {
		w = 0
	}
	return nt, w
}

func (c *core) reserve(t, n int64) (int64, bool) {
	if n <= 0 {
		return 0, true
	}
	if n > c.maxN {
		return int64(Never), false
	}
	nt, w := c.plan(t, n)
	if w > c.maxWait {
		return w - c.maxWait, false
	}
	c.tat = nt
	return w, true
}

// allow grants n at t only when they need no wait (no borrowing).
func (c *core) allow(t, n int64) bool {
	if n <= 0 {
		return true
	}
	if n > c.maxN {
		return false
	}
	nt, w := c.plan(t, n)
	if w > 0 {
		return false
	}
	c.tat = nt
	return true
}

func (c *core) cancel(t, n int64) {
	if n <= 0 {
		return
	}
	if n > c.maxN {
		n = c.maxN
	}
	c.tat = maxInst(c.st.sub(c.tat, c.st.mul(n)), inst{ns: t})
}

func (c *core) tokens(t int64) float64 {
	debt := c.st.sub(c.base(t), inst{ns: t})
	return float64(c.burst) - debt.float(c.st)/c.st.float()
}

// setRate changes the cost per permit keeping the current permit count:
// the debt (permits missing from a full bucket) is converted exactly,
// rounded up so the change never mints a permit.
func (c *core) setRate(t int64, r Rate) {
	debtNs := c.st.rat(c.st.sub(c.base(t), inst{ns: t}))
	oldCost := c.st.rat(inst{ns: c.st.whole, frac: c.st.num})
	permits := new(big.Rat).Quo(debtNs, oldCost)
	c.rate = r
	c.st = newStep(r)
	newDebt := permits.Mul(permits, c.st.rat(inst{ns: c.st.whole, frac: c.st.num}))
	c.tat = c.st.add(inst{ns: t}, c.st.fromRat(newDebt))
	c.tau = c.st.mul(c.burst)
	c.setMaxN()
}

// setBurst changes the capacity keeping the current permit count, capped to
// the new capacity: a full bucket of 10 raised to 100 still holds 10.
func (c *core) setBurst(t, burst int64) {
	b := c.base(t)
	var nt inst
	if burst >= c.burst {
		nt = c.st.add(b, c.st.mul(burst-c.burst))
	} else {
		nt = c.st.sub(b, c.st.mul(c.burst-burst))
	}
	c.tat = maxInst(nt, inst{ns: t})
	c.burst = burst
	c.tau = c.st.mul(burst)
	c.setMaxN()
}
