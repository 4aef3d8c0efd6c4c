package pacer

import (
	"math"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
)

// LimitSource says where the engine's idea of the downstream's limit comes
// from.
type LimitSource uint8

const (
	// LimitConfigured: no throttling seen and no budget advertised; the
	// configured rate is in force.
	LimitConfigured LimitSource = iota
	// LimitHeaders: the downstream advertises its budget (RateLimit,
	// X-RateLimit-*); the engine spends exactly that.
	LimitHeaders
	// Limit429: learned from what the downstream accepted before it
	// throttled (429, 503, timeouts).
	Limit429
)

func (s LimitSource) String() string {
	switch s {
	case LimitHeaders:
		return "headers"
	case Limit429:
		return "429s"
	}
	return "configured"
}

// Limit finder tuning. The window and thresholds are in the units real
// APIs throttle in (seconds); they are not configuration on purpose: they
// describe how much evidence is enough, not the downstream.
const (
	lfSlot          = 50 * time.Millisecond // delivery counting resolution
	lfSlots         = 128                   // ring: 6.4s of history
	lfWindow        = 4 * time.Second       // measurement window before a throttle
	lfMinActive     = 500 * time.Millisecond
	lfSecActive     = 800 * time.Millisecond
	lfHeadroom      = 0.95 // cruise at this share of the measured limit
	lfBackoff       = 0.6  // decrease when the evidence is too short to measure
	lfProbeGain     = 1.25 // probe rate over the learned limit
	lfProbeMin      = 1.2  // and at least this, bisecting
	lfProbeLen      = time.Second
	lfProbeFirst    = 15 * time.Second // first probe after a throttle
	lfProbeWeak     = 2 * time.Second  // first probe after a guess (no measurement)
	lfProbeMax      = 60 * time.Second // probes back off to this
	lfEpisode       = 500 * time.Millisecond
	lfCycle         = 5 * time.Second // a throttle this soon after the last one is a quick one
	lfBurstShare    = 0.05            // burst after a throttle: 50ms worth of the rate
	lfBurstFloor    = 0.85            // the burst-corrected bound takes at most 15% off
	lfShortEvidence = 2 * time.Second // less evidence than this takes off at most
	lfShortCut      = 0.5             // this share of the rate
)

// limitFinder learns the downstream's real limit, the way BBR estimates a
// path's bandwidth: from the rate the downstream accepted, not from each
// throttle alone.
//
//   - Headers first: while the downstream advertises its budget (remaining
//     requests until a reset), the rate is remaining/time-to-reset, read
//     again on every answer, capped at the configured rate.
//   - A rolling window (Remaining never jumps back up at a reset, see
//     windowEdge.rolling) is paced at its quota less what others spent
//     over the last window: Remaining/reset would settle at half of it.
//   - Otherwise, on the first throttle of an episode, the limit is the rate
//     the downstream accepted over the last few seconds of sending (gated
//     time excluded), and no more than it accepted in the last second when
//     that second was spent sending (a window API shows its quota there).
//     The rate comes down to 95% of it and the burst to 50ms worth of it,
//     so a resume after Retry-After never fires more than the downstream
//     showed it takes. Too little evidence (under half a second of sending
//     since the last episode) gives a multiplicative decrease.
//   - A throttle within 5s of the last one, after a clean cruise, says the
//     limit fell: what the downstream accepted from the last throttle to
//     this one, the wait included, is at most its limit (it had nothing
//     left at either end) and the rate it refused is above it; the limit
//     is taken at their geometric mean, so a drop is found in a few
//     seconds rather than 5% per episode.
//   - Probing: 15s after a throttle, if the backlog is there (not
//     app-limited), it sends at 125% of the limit (or halfway to a rate
//     already refused) for one second. A probe that passes raises the
//     limit to what was accepted and probes again one second later; one
//     that is throttled doubles the wait before the next probe (up to 60s).
//     Probes are brief and rare by design: with a Retry-After gate, each
//     failed probe costs the gate, a whole second when it is rounded up. So
//     a rise of the limit is found 15-60s late, not at once.
//
// It is pure: every method takes now; it never reads a clock or sleeps.
// Not safe for concurrent use (the controller holds its lock).
type limitFinder struct {
	ceiling, floor   float64
	cfgBurst, minBst int

	limit float64 // learned limit (0: unknown)
	src   LimitSource
	rate  float64 // the rate it wants applied
	burst int     // the burst it wants applied

	start        time.Time
	lastThrottle time.Time
	lastEpisode  time.Time
	guard        time.Time // throttles before this belong to the last episode
	lastGateEnd  time.Time // the last episode's gate end

	slots  [lfSlots]lfSlotCount
	gates  []lfSpan // recent gated spans (no admission)
	throts uint64   // throttle episodes

	probing    bool
	probeStart time.Time
	probeRate  float64
	nextProbe  time.Time
	probeEvery time.Duration

	hdrUntil time.Time // advertised budget in force until
	weak     bool      // the limit is a guess (a decrease without a measurement)
	upper    float64   // a rate known to be too high (a failed probe; 0 none)

	afterClean bool // the current streak of throttles followed a clean cruise
	passes     int  // probes passed in a row

	share *lfShare // the group's board (nil: this worker learns alone; see limitshare.go)

	// firstBurst is what the downstream accepted before its first
	// throttle, when that came within lfMinActive of the start: an upper
	// bound on its burst (0: unknown).
	firstBurst float64
}

type lfSlotCount struct {
	idx int64
	n   int64
}

type lfSpan struct{ from, to time.Time }

func newLimitFinder(ceiling, floor float64, burst, minBurst int, now time.Time) *limitFinder {
	return &limitFinder{
		ceiling: ceiling, floor: floor, cfgBurst: burst, minBst: max(1, minBurst),
		rate: ceiling, burst: burst, start: now, probeEvery: lfProbeFirst,
	}
}

func (f *limitFinder) slotIdx(t time.Time) int64 { return t.Sub(f.start).Nanoseconds() / int64(lfSlot) }

// delivered counts n accepted requests answered at now.
func (f *limitFinder) delivered(now time.Time, n int) {
	if n <= 0 {
		return
	}
	if f.share != nil {
		f.share.add(now, n)
	}
	i := f.slotIdx(now)
	s := &f.slots[uint64(i)%lfSlots]
	if s.idx != i {
		s.idx, s.n = i, 0
	}
	s.n += int64(n)
}

// count is what was accepted in slots [from, to): by this worker, or by
// the whole group when it shares a board.
func (f *limitFinder) count(from, to time.Time) int64 {
	if f.grouped(to) {
		return f.share.count(from, to)
	}
	a, b := f.slotIdx(from), f.slotIdx(to)
	a = max(a, b-lfSlots+1)
	var n int64
	for i := a; i <= b; i++ {
		if s := f.slots[uint64(i)%lfSlots]; s.idx == i {
			n += s.n
		}
	}
	return n
}

// gated records that nothing could be admitted in [from, to).
func (f *limitFinder) gated(from, to time.Time) {
	if !to.After(from) {
		return
	}
	keep := f.gates[:0]
	for _, g := range f.gates {
		if to.Sub(g.to) < 2*lfWindow {
			keep = append(keep, g)
		}
	}
	f.gates = append(keep, lfSpan{from, to})
}

// active is the time in [from, to) outside every gated span.
func (f *limitFinder) active(from, to time.Time) time.Duration {
	d := to.Sub(from)
	for _, g := range f.gates {
		lo, hi := maxTime(g.from, from), minTime(g.to, to)
		if hi.After(lo) {
			d -= hi.Sub(lo)
		}
	}
	return max(d, 0)
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func (f *limitFinder) clamp(r float64) float64 { return min(max(r, f.floor), f.ceiling) }

func (f *limitFinder) burstFor(r float64) int {
	return min(max(int(math.Ceil(r*lfBurstShare)), f.minBst), max(f.cfgBurst, f.minBst))
}

// throttle folds in a throttle answered at now; gateEnd is the Retry-After
// gate it raised (zero: none). It reports whether rate or burst changed.
func (f *limitFinder) throttle(now, gateEnd time.Time) bool {
	f.lastThrottle = now
	if now.Before(f.guard) {
		return false
	}
	if f.outage(now) {
		// Nothing accepted over the window while we could send: an outage
		// (503s, timeouts) or nothing sent, not a rate the downstream
		// takes. No evidence of a limit: keep it (the breaker deals with
		// an outage), or every retry during one would drive the limit to
		// the floor and the recovery would climb back by probes for a
		// minute.
		f.guard = maxTime(gateEnd, now.Add(lfEpisode))
		return false
	}
	f.throts++
	f.guard = maxTime(gateEnd, now.Add(lfEpisode))
	prevGate := f.lastGateEnd
	prevEpisode := f.lastEpisode
	f.lastEpisode = now
	if !prevEpisode.IsZero() && now.Sub(prevEpisode) > 2*lfCycle {
		f.afterClean = true // a streak of throttles after a clean cruise
	} else if prevEpisode.IsZero() {
		f.afterClean = false
	}
	f.lastGateEnd = maxTime(gateEnd, now)
	wasProbing := f.probing
	if f.upper == 0 || f.rate < f.upper {
		f.upper = f.rate
	}
	climbed := f.probing && f.passes > 0
	if f.probing {
		f.probing = false
		f.probeEvery = min(2*f.probeEvery, lfProbeMax)
	}
	f.passes = 0
	if !f.hdrUntil.IsZero() && now.Before(f.hdrUntil) {
		// The advertised budget drives the rate; a throttle only brings
		// the burst down.
		f.burst = f.burstFor(f.rate)
		return true
	}
	var lim float64
	f.weak = false
	switch {
	case climbed:
		// Probes passed in a row (the limit rose) until this one: the
		// limit is between the last that passed and this one.
		lim = math.Sqrt(f.limit * f.upper)
	case (wasProbing || f.following(now)) && f.limit > 0:
		// The probe found the ceiling: the limit it started from holds.
		lim = f.limit
	default:
		// What the downstream accepted since it last made us wait (it was
		// full then), over the time we could send: at most the rate in
		// force, which it just refused.
		end := f.evidenceEnd(now)
		from := maxTime(maxTime(end.Add(-lfWindow), f.start), prevGate)
		act := f.active(from, end)
		m := 0.0
		if act >= lfMinActive {
			m = float64(f.count(from, end)) / act.Seconds()
		}
		// A throttle soon after the last one: the API's limit fell well
		// below the rate (or the last guess was far off). What it accepted
		// from the last throttle to this one, the wait included, is at most
		// its limit (it had nothing left at either end); the rate it just
		// refused is above it. The limit is taken between the two.
		// Only after a clean cruise: while the limit is being found at the
		// start, the waits are most of the time and the bound is too low.
		lo := 0.0
		if f.afterClean && now.Sub(prevEpisode) <= lfCycle && end.Sub(prevEpisode) >= lfMinActive {
			lo = float64(f.count(prevEpisode, end)) / end.Sub(prevEpisode).Seconds()
		}
		// What it accepted in the second before the throttle, when most
		// of that second was spent sending: a window API (n per second,
		// fixed or rolling) shows its quota there exactly.
		sec := f.rate
		if a := f.active(end.Add(-time.Second), end); a >= lfSecActive {
			sec = float64(f.count(end.Add(-time.Second), end))
		}
		// Sending at the rate from the end of a wait until this throttle,
		// the downstream took what its burst held (at most firstBurst) and
		// what it refilled: over act, rate*act <= burst + limit*act, so the
		// limit is at least rate - firstBurst/act, and below the rate it
		// refused. Taken between the two (and at most 15% down), a token
		// bucket's limit is found in one or two throttles, not 5% per
		// throttle. Not where the last second shows a quota (a window API:
		// sec below the rate is the better measure).
		burstLo := 0.0
		if f.firstBurst > 0 && !prevGate.IsZero() && !from.After(prevGate) && act >= lfMinActive && sec >= 0.97*f.rate {
			if b := f.rate - f.firstBurst/act.Seconds(); b > 0 {
				burstLo = max(math.Sqrt(b*f.rate), lfBurstFloor*f.rate)
			}
		}
		switch {
		case burstLo > 0 && lo > 0 && lo < f.rate:
			lim = min(max(burstLo, math.Sqrt(lo*f.rate)), m, f.rate)
		case lo > 0 && lo < f.rate:
			lim = math.Sqrt(lo * f.rate)
		case act < lfMinActive:
			lim = f.rate * lfBackoff
			f.weak = true
			if f.throts == 1 && prevEpisode.IsZero() {
				f.firstBurst = float64(f.count(f.start, end))
			}
		case burstLo > 0:
			lim = min(burstLo, m, f.rate)
		default:
			lim = min(m, f.rate, max(sec, f.rate*lfBackoff))
		}
		if act < lfShortEvidence {
			// Under two seconds of evidence (a throttle soon after the last,
			// the answers still in flight when an outage began) take at most
			// half off: a few such throttles still find a limit that fell
			// by ten, and an outage's first seconds do not read as one.
			lim = max(lim, lfShortCut*f.rate)
		}
	}
	f.limit = max(lim, f.floor)
	every := f.probeEvery
	if f.weak {
		every = lfProbeWeak
	}
	f.nextProbe = maxTime(gateEnd, now).Add(every)
	f.src = Limit429
	f.rate = f.clamp(f.limit * lfHeadroom)
	f.burst = f.burstFor(f.rate)
	f.propose(algorithms.LimitProposal{Limit: f.limit, Rate: f.rate, Throttle: now})
	return true
}

// outage: over the last measurement window, sending was possible for at
// least lfMinActive and the downstream accepted nothing.
func (f *limitFinder) outage(now time.Time) bool {
	end := f.evidenceEnd(now)
	from := maxTime(maxTime(end.Add(-lfWindow), f.start), f.lastGateEnd)
	return f.active(from, end) >= lfMinActive && f.count(from, end) == 0
}

// headers folds in an advertised budget: remaining requests until left
// from now (left <= 0: the window it spoke of is over). limit is the
// policy's quota per second when known (0 if not). The rate spends the
// remaining budget over what is left of the window, never faster than the
// quota's own rate (answers lag: what is in flight is not counted yet);
// with nothing left, the rate is the quota's (the gate waits for the
// reset).
//
// quota and window, when known (0 if not), let it see what other clients of
// the same key spend in the current window (quota - remaining - ours): the
// budget is shared with them at the rate they have been spending it.
//
// rolling says the budget is a rolling window (see windowEdge.rolling):
// each request is given back one window after it was spent, so the rate is
// the quota's, less what other clients spent over the last window and a
// small reserve, and Remaining only guards against overspending.
func (f *limitFinder) headers(now time.Time, remaining int64, left time.Duration, limit float64, quota int64, window time.Duration, rolling bool) {
	f.probing = false
	f.src = LimitHeaders
	if limit > 0 {
		f.limit = limit
	}
	if left <= 0 {
		if f.limit > 0 {
			f.rate = f.clamp(f.limit)
		}
		return
	}
	f.hdrUntil = now.Add(left)
	if rolling && quota > 0 && window > 0 && f.limit > 0 {
		ours := f.count(now.Add(-window), now)
		foreign := max(0, quota-remaining-ours)
		reserve := max(1, float64(quota)/40)
		r := (float64(quota) - reserve - float64(foreign)) / window.Seconds()
		f.rate = f.clamp(min(r, f.limit))
		if f.throts > 0 {
			f.burst = f.burstFor(f.rate)
		}
		return
	}
	// The last unit is kept in reserve: another client of the same key
	// racing for it would cost a 429 and its Retry-After, rounded up to
	// whole seconds (a window, where windows are a second long).
	spare := float64(max(remaining-1, 0))
	if quota > 0 && window > left {
		if el := window - left; el >= 100*time.Millisecond {
			ours := f.count(now.Add(-el), now)
			if foreign := quota - remaining - ours; foreign > 0 {
				spare = max(0, spare-float64(foreign)/el.Seconds()*left.Seconds())
			}
		}
	}
	r := spare / left.Seconds()
	if limit <= 0 && r > 0 && (f.limit == 0 || r > f.limit) {
		f.limit = r
	}
	switch {
	case remaining == 0:
		if f.limit > 0 {
			f.rate = f.clamp(f.limit)
		}
	case f.limit > 0:
		f.rate = f.clamp(min(r, f.limit))
	default:
		f.rate = f.clamp(r)
	}
	if f.throts > 0 {
		f.burst = f.burstFor(f.rate)
	}
}

// tick runs the probe schedule at now. It reports whether rate or burst
// changed.
func (f *limitFinder) tick(now time.Time) bool {
	if !f.hdrUntil.IsZero() && !now.Before(f.hdrUntil) {
		// The advertised window ended with no fresh answer: keep the
		// limit it taught, cruise under it.
		f.hdrUntil = time.Time{}
		if f.src == LimitHeaders && f.limit > 0 {
			f.rate = f.clamp(f.limit)
			return true
		}
	}
	if f.src != Limit429 || f.limit <= 0 || !f.hdrUntil.IsZero() {
		return false
	}
	if f.unfollow(now) {
		return true
	}
	if f.probing {
		end := f.evidenceEnd(now)
		if end.Sub(f.probeStart) < lfProbeLen {
			return false
		}
		f.probing = false
		got := float64(f.count(f.probeStart, end)) / end.Sub(f.probeStart).Seconds()
		if got >= 0.9*f.probeRate {
			// Accepted all of it: the limit is at least that.
			f.limit = max(f.limit, got)
			if f.upper > 0 && f.limit >= f.upper {
				f.upper = 0
			}
			f.probeEvery = lfProbeFirst
			f.passes++
			f.nextProbe = now.Add(lfProbeLen)
		} else {
			f.nextProbe = now.Add(f.probeEvery) // app-limited: no evidence
		}
		f.rate = f.clamp(f.limit * lfHeadroom)
		f.burst = f.burstFor(f.rate)
		f.propose(algorithms.LimitProposal{Limit: f.limit, Rate: f.rate, Throttle: f.lastThrottle})
		return true
	}
	if now.Before(f.nextProbe) || f.rate >= f.ceiling || f.following(now) {
		return false
	}
	// App-limited (the backlog does not fill the rate)? Then a probe would
	// prove nothing.
	end := f.evidenceEnd(now)
	from := end.Add(-2 * time.Second)
	if act := f.active(from, end); act < time.Second || float64(f.count(from, end))/act.Seconds() < 0.8*f.rate {
		f.nextProbe = now.Add(time.Second)
		return false
	}
	f.probing = true
	f.probeStart = now
	f.probeRate = f.clamp(f.limit * lfProbeGain)
	if f.upper > f.limit {
		// Bisect between what holds and what was refused, but never by
		// less than a step a downstream's burst would not hide.
		f.probeRate = f.clamp(max(min(f.probeRate, (f.limit+f.upper)/2), f.limit*lfProbeMin))
	}
	f.rate = f.probeRate
	f.propose(algorithms.LimitProposal{Limit: f.limit, Rate: f.rate, Throttle: f.lastThrottle, ProbeUntil: now.Add(lfProbeLen)})
	return true
}
