package limit

import (
	"math"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
)

// Source says where the engine's idea of the downstream's limit comes
// from.
type Source uint8

const (
	// Configured: no throttling seen and no budget advertised; the
	// configured rate is in force.
	Configured Source = iota
	// FromHeaders: the downstream advertises its budget (RateLimit,
	// X-RateLimit-*); the engine spends exactly that.
	FromHeaders
	// From429: learned from what the downstream accepted before it
	// throttled (429, 503, timeouts).
	From429
	// FromLatency: learned from what the downstream delivered while its
	// latency showed it queued the rest (no 429).
	FromLatency
)

func (s Source) String() string {
	switch s {
	case FromHeaders:
		return "headers"
	case From429:
		return "429s"
	case FromLatency:
		return "latency"
	}
	return "configured"
}

// Limit finder tuning. The window and thresholds are in the units real
// APIs throttle in (seconds); they are not configuration on purpose: they
// describe how much evidence is enough, not the downstream.
const (
	lfSlot            = 10 * time.Millisecond // delivery counting resolution
	lfSlots           = 1024                  // ring: 10.24s of history
	lfWindow          = 4 * time.Second       // measurement window before a throttle
	lfMinActive       = 500 * time.Millisecond
	lfSecActive       = 800 * time.Millisecond
	lfHeadroom        = 0.98 // cruise at this share of the measured limit, at first
	lfHeadroomMin     = 0.90 // and at least this share after refusals while cruising
	lfHeadroomQueued  = 0.99 // at first under a limit a queue's latency taught
	lfHeadroomInexact = 0.95 // at most this share of a limit not measured exactly
	lfHeadroomStep    = 0.02 // each refusal while cruising widens the headroom by this
	lfHeadroomClean   = 60 * time.Second
	lfBackoff         = 0.6                    // decrease when the evidence is too short to measure
	lfProbeGain       = 1.25                   // probe rate over a limit only bounded
	lfProbeMin        = 1.2                    // and at least this, bisecting
	lfProbeStep       = 0.10                   // a probe's first step over a limit measured exactly
	lfProbeStepMax    = 0.4                    // steps double while probes pass, up to this
	lfSatGap          = time.Second            // refusals this close apart: the API stayed saturated
	lfSatMin          = 400 * time.Millisecond // a saturated span this long measures the limit
	lfQueuedOver      = 1.1                    // queueing is the rate's when it is this far over what is delivered
	lfQueuedCool      = 3 * time.Second        // the headroom widens at most this often while it still queues
	lfPenaltyWindow   = time.Second            // the window a penalty box is likely to count over
	lfPenaltyMax      = 4 * time.Second        // the longest hold for one
	lfPenaltyLeast    = 0.2                    // a quota below this share of the rate is not one
	lfPenaltyQuiet    = 60 * time.Millisecond  // refused everything (5 or more) for this long: a penalty box
	lfProbeLen        = time.Second
	lfProbeLong       = 4 * time.Second  // the longest probe (one the burst would hide otherwise)
	lfProbeOver       = 1.25             // a probe's excess passes by this much more than a burst could hide
	lfProbePass       = 0.5              // a probe passes when at least this share of its step was accepted
	lfProbeMinStep    = 4.0              // a probe lasts until its step adds this many requests (within lfProbeLong)
	lfSavedMax        = time.Second      // a bucket saves at most this much of its limit, unless its burst was seen
	lfProbeFirst      = 15 * time.Second // first probe after a throttle
	lfProbeWeak       = 2 * time.Second  // first probe after a guess (no measurement)
	lfProbeCheap      = 5 * time.Second  // first probe over a limit measured exactly, without a pause
	lfProbeMax        = 60 * time.Second // probes back off to this
	lfProbeShare      = 0.02             // refused probes' pauses cost at most this share of the time
	lfProbeCostly     = 5 * time.Minute  // but a probe comes at least this often
	lfInexactClean    = 5 * time.Second  // a clean cruise this long narrows an inexact limit's headroom
	lfInexactStep     = 0.01             // by this,
	lfInexactMax      = 0.98             // up to this: 15 s clean under it, a bound is cruised as a measured limit is
	lfFell            = 0.8              // a refusal that takes the limit under this share of it: the limit fell
	lfStillExact      = 0.95             // a measure this close under an exact limit keeps it exact
	lfAllTaken        = 0.97             // accepted at this share of the rate sent: the API took all of it
	lfVolatile        = 2 * time.Minute  // after a fall, probes come every lfProbeVolatile for this long
	lfEpisode         = 500 * time.Millisecond
	lfCycle           = 5 * time.Second // a throttle this soon after the last one is a quick one
	lfBurstShare      = 0.05            // burst after a throttle: 50ms worth of the rate
	lfBurstFloor      = 0.85            // the burst-corrected bound takes at most 15% off
	lfQuotaMax        = 0.90            // a first second's quota raises that to at most this share of the rate refused
	lfQuotaOver       = 1.10            // a first second's quota this far over the rate refused was read across two windows
	lfShortEvidence   = 2 * time.Second // less evidence than this takes off at most
	lfShortCut        = 0.5             // this share of the rate
	lfEdgeSlack       = 100 * time.Millisecond
	lfDrain           = 2 * time.Second // after a probe filled a queue, drain it this long
	lfDrainShare      = 0.95            // at this share of the cruise
)

// lfProbeVolatile is how long after a refused probe's pause a limit that
// just fell is probed again: it may rise as suddenly (at 20/s behind a
// 1 s Retry-After, a probe about every 7 s; see lfVolatile).
const lfProbeVolatile = 5500 * time.Millisecond

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
	src   Source
	rate  float64 // the rate it wants applied
	burst int     // the burst it wants applied

	start        time.Time
	lastThrottle time.Time
	lastEpisode  time.Time
	guard        time.Time     // throttles before this belong to the last episode
	lastGateEnd  time.Time     // the last episode's gate end
	lastGateLen  time.Duration // and how long that gate was (0: no wait)

	slots  [lfSlots]lfSlotCount
	gates  []lfSpan // recent gated spans (no admission)
	throts uint64   // throttle episodes

	probing    bool
	probeStart time.Time
	probeRate  float64
	probeLen   time.Duration
	probeSaved float64 // what the downstream's bucket may have saved before the probe (exact limits)
	nextProbe  time.Time
	// drainUntil ends the drain after a probe filled a queueing
	// downstream's queue (zero: none): until then the rate is
	// lfDrainShare of the cruise, so the probe's excess drains instead of
	// staying queued (a cruise at 98% of a limit the latency measured a
	// little high drains nothing).
	drainUntil time.Time
	probeEvery time.Duration

	hdrUntil time.Time // advertised budget in force until
	atEdge   bool      // the reset in force is a window's edge as seen (windowEdge), not rounded
	weak     bool      // the limit is a guess (a decrease without a measurement)
	upper    float64   // a rate known to be too high (a failed probe; 0 none)

	afterClean bool // the current streak of throttles followed a clean cruise
	passes     int  // probes passed in a row

	share *lfShare // the group's board (nil: this worker learns alone; see board.go)

	// firstBurst is what the downstream accepted before its first
	// throttle, when that came within lfMinActive of the start: an upper
	// bound on its burst (0: unknown).
	firstBurst float64
	// firstSpan is how long that took, from the first accepted answer
	// (firstAt) to the throttle: firstBurst is the burst and what the
	// limit refilled over firstSpan.
	firstSpan time.Duration
	firstAt   time.Time
	// firstLate is what the downstream accepted of the start-up's requests
	// but answered after its first throttle, counted once the wait that
	// throttle imposed is over (firstGate; zero: no wait, or counted):
	// answers that come back together arrive in any order, the refusal
	// first. firstBurst+firstLate is what a window took in its first
	// second (see refusal); firstBurst alone bounds what a probe may find
	// saved (see tick).
	firstLate float64
	firstGate time.Time
	fellAt    time.Time // the last time the limit was seen to fall (zero: never)
	roseAgain bool      // a climb found the limit higher since it fell
	// inexact is the headroom's cap while the limit is only bounded (not
	// measured exactly): lfHeadroomInexact after a refusal, narrowing by
	// lfInexactStep per lfInexactClean of clean cruise since inexactAt, up
	// to lfInexactMax.
	inexact   float64
	inexactAt time.Time

	headroom float64 // cruise at this share of the limit (follows the refusals seen)
	// hdrRoom is the share of an advertised budget's rate spent: 1 until
	// the downstream refuses a request the budget said it had room for
	// (our spacing arrives tighter than its clock counts: a bucket of one
	// at exactly its rate refuses on jitter), then lfHeadroomStep less per
	// refusal, down to lfHeadroomMin, narrowing again by half a step per
	// lfHeadroomClean without one (since hdrRoomAt).
	hdrRoom      float64
	hdrRoomAt    time.Time
	hdrFirst     time.Time     // the first answer with an advertised budget (zero: none yet)
	edgeRefusals int           // refusals of requests that met a window's reset
	exact        bool          // the limit was measured exactly (a saturated span, a penalty box's quota)
	cleanSince   time.Time     // cruising without a refusal since (narrows the headroom)
	probeStep    float64       // the next probe's step over the limit
	satStart     time.Time     // the current span of refusals at most lfSatGap apart, ungated
	satN         int           // refusals in it
	lat          time.Duration // the last accepted answer's latency: answers within it of a moment were to requests sent before it
	behaviour    Behaviour     // how the downstream was seen to limit
	header       string        // the rate-limit header it advertises its budget in ("" none)
	shared       bool          // another client spends the same advertised budget
	// boxHold is the last penalty-box hold's length (zero: none yet). It
	// doubles only while a hold ends with the box still shut; one that
	// cleared it is long enough for the next.
	boxHold  time.Duration
	boxUntil time.Time // the last penalty-box hold's end, and lfEpisode
	// boxRate is the rate cruised after the last hold: a box that shuts
	// again soon under it has its quota under it (see penaltyBox).
	boxRate float64
	// winFrom and winEnd are a window API's window (its ends named in
	// whole seconds) that a refusal measured, counted again once its
	// answers are in (zero winEnd: none pending).
	winFrom, winEnd time.Time
	hold            time.Time // a hold the controller must raise as a gate (zero: none)
	holdCause       string
}

// Behaviour is how the downstream was seen to limit, for /status, the log
// and the metrics.
type Behaviour uint8

const (
	// BehaviourUnknown: nothing recognised yet.
	BehaviourUnknown Behaviour = iota
	// BehaviourHeaders: it advertises its budget in rate-limit headers.
	BehaviourHeaders
	// Behaviour429: it refuses what is over its limit (429, Retry-After or
	// not) and counts only what it accepts.
	Behaviour429
	// BehaviourPenaltyBox: refused requests count against its limit, so a
	// client that keeps sending over it is refused everything.
	BehaviourPenaltyBox
	// BehaviourQueueing: latency rises with no 429: it queues the excess.
	BehaviourQueueing
)

func (b Behaviour) String() string {
	switch b {
	case BehaviourHeaders:
		return "headers"
	case Behaviour429:
		return "429-only"
	case BehaviourPenaltyBox:
		return "penalty-box"
	case BehaviourQueueing:
		return "queueing"
	}
	return ""
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
		headroom: lfHeadroom, probeStep: lfProbeStep, inexact: lfHeadroomInexact, hdrRoom: 1,
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
	if f.firstAt.IsZero() {
		f.firstAt = now
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

// onSecond: t is on a whole second (where an HTTP-date's time falls),
// to within lfSlot (the date became a wait at its answer, and the wait a
// time a moment later).
func onSecond(t time.Time) bool {
	d := t.Sub(t.Round(time.Second))
	return d > -lfSlot && d < lfSlot
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

// reserve is how much of an advertised window is kept back: one unit once
// another client of the key was seen (or refused us within a budget said
// to be left), none alone.
func (f *limitFinder) reserve() int64 {
	if f.shared {
		return 1
	}
	return 0
}

// cruise is the rate under the learned limit: the headroom's share of it,
// and no more than lfHeadroomInexact of it while the limit is not
// measured exactly (a saturated span, a penalty box's quota) but bounded
// between two rates or guessed.
func (f *limitFinder) cruise() float64 {
	h := f.headroom
	if !f.exact {
		h = min(h, f.inexact)
	}
	return f.clamp(f.limit * h)
}

// takeHold hands the controller a hold to raise as a gate (zero: none),
// and why.
func (f *limitFinder) takeHold() (time.Time, string) {
	h, c := f.hold, f.holdCause
	f.hold, f.holdCause = time.Time{}, ""
	return h, c
}

func (f *limitFinder) burstFor(r float64) int {
	if f.src == FromLatency {
		// A downstream that queues delays whatever comes closer together
		// than its rate: a burst only adds latency there.
		return f.minBst
	}
	if f.behaviour == BehaviourPenaltyBox {
		// One that counts every request over its window shuts when the
		// cruise plus a burst passes its quota: at 98% of 50/s a burst of
		// 3 is over it, and each shut costs a held window.
		return f.minBst
	}
	return min(max(int(math.Ceil(r*lfBurstShare)), f.minBst), max(f.cfgBurst, f.minBst))
}

// throttle folds in a throttle (a 503, a timeout) answered at now; gateEnd
// is the Retry-After gate it raised (zero: none). It reports whether rate
// or burst changed.
func (f *limitFinder) throttle(now, gateEnd time.Time) bool { return f.refusal(now, gateEnd, false) }

// refusal is throttle for any throttling answer; refused says it was a
// 429, a refusal of the rate (not the downstream failing): with nothing
// accepted, a penalty box rather than an outage.
//
// Two measures come before the evidence below. A span of refusals at most
// lfSatGap apart with no gate in it (no Retry-After, or one shorter than
// the gaps) says the downstream was saturated throughout: what it
// accepted over the span is its limit, exactly (a token bucket, GCRA, a
// sliding window: what they refill). And 429s with nothing accepted since
// the last wait, while sending, say refused requests count against the
// limit (a penalty box, as HAProxy's stick-table rate): sending on keeps it
// shut, so the finder holds everything for the window it likely counts
// over (doubling while it stays shut, up to lfPenaltyMax), and cruises
// under what it accepted in the window before it shut.
func (f *limitFinder) refusal(now, gateEnd time.Time, refused bool) bool {
	prev := f.lastThrottle
	f.lastThrottle = now
	if prev.IsZero() || now.Sub(prev) > lfSatGap || f.active(prev, now) < now.Sub(prev) {
		f.satStart, f.satN = now, 0
	}
	f.satN++
	if !refused {
		f.satN = 0 // an outage's 503s and timeouts measure no rate
	}
	if refused && f.penaltyBox(now, gateEnd) {
		return true
	}
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
	prevGate, prevGateLen := f.lastGateEnd, f.lastGateLen
	prevEpisode := f.lastEpisode
	f.lastEpisode = now
	if !prevEpisode.IsZero() && now.Sub(prevEpisode) > 2*lfCycle {
		f.afterClean = true // a streak of throttles after a clean cruise
	} else if prevEpisode.IsZero() {
		f.afterClean = false
	}
	f.lastGateEnd, f.lastGateLen = maxTime(gateEnd, now), max(gateEnd.Sub(now), 0)
	// Refused while cruising under a limit it had held for a while: the
	// cruise was too close to it (the burst after a wait, another
	// client): the headroom widens.
	if f.src == From429 && !f.probing && !f.weak && f.rate < f.limit && !f.following(now) &&
		!f.cleanSince.IsZero() && now.Sub(f.cleanSince) >= lfCycle {
		f.headroom = max(lfHeadroomMin, f.headroom-lfHeadroomStep)
	}
	f.cleanSince = f.lastGateEnd
	if f.behaviour == BehaviourUnknown {
		f.behaviour = Behaviour429
	}
	wasProbing := f.probing
	if f.upper == 0 || f.rate < f.upper {
		f.upper = f.rate
	}
	climbed := f.probing && f.passes > 0
	if climbed {
		// The limit rose since it fell, and the climb found where to: what
		// is left of the volatile spell is probed at the usual pace.
		f.roseAgain = true
	}
	if f.probing {
		f.probing = false
		f.probeEvery = min(2*f.probeEvery, lfProbeMax)
	}
	f.probeStep = lfProbeStep
	passed := f.passes // probes passed in a row, the last just before this
	f.passes = 0
	if !f.hdrUntil.IsZero() && now.Before(f.hdrUntil) {
		// The advertised budget drives the rate; a throttle brings the
		// burst down, and says our spacing is too tight for the
		// downstream's clock or someone else spends the budget too.
		edge := f.hdrUntil.Sub(now)
		if edge < 0 {
			edge = -edge
		}
		switch {
		case f.hdrFirst.IsZero() || !now.Add(-f.lat).After(f.hdrFirst):
			// A request of the start-up's, sent before the first answer
			// said what is left: no evidence of either.
		case edge <= max(2*f.lat, lfEdgeSlack):
			// One that met a window's reset on the way (a lower rate
			// would not have helped it): twice, and the last unit before
			// a reset is kept in reserve (see reserve).
			f.edgeRefusals++
			if f.edgeRefusals > 1 {
				f.shared = true
			}
		case f.hdrRoom <= lfHeadroomMin:
			// Refused within the budget still, paced 10% under it:
			// another client spends it.
			f.shared = true
		default:
			// Refused within the budget it advertised, paced at it: the
			// spacing arrives tighter than its clock counts (a bucket of
			// one at exactly its rate refuses on jitter). Paced a little
			// under it from now on.
			f.hdrRoom, f.hdrRoomAt = max(lfHeadroomMin, f.hdrRoom-lfHeadroomStep), now
			f.rate = f.clamp(f.rate * (1 - lfHeadroomStep))
		}
		f.burst = f.burstFor(f.rate)
		return true
	}
	var lim float64
	wasWeak := f.weak
	f.weak = false
	sat := f.saturated(now)
	exact := false
	switch {
	case sat > 0 && !(wasProbing && sat < f.limit):
		// Saturated throughout the span: what it accepted is its limit
		// (a probe refused at once sustained the limit it started from).
		lim, exact = sat, true
	case climbed:
		// Probes passed in a row (the limit rose) until this one: the
		// limit is between the last that passed and this one, and is
		// taken at the last that passed: what was just sustained (a
		// guess between the two cruised over the limit and cost a
		// refusal, and its pause, a second later).
		lim = f.limit
	case (wasProbing || f.following(now) || passed > 0) && f.limit > 0:
		// The probe found the ceiling: the limit it started from holds,
		// as exactly as it was measured.
		lim, exact = f.limit, f.exact
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
		// the downstream took what its burst held (at most firstBurst, and
		// no more than the wait refilled at the rate: nothing after a
		// refusal without one) and what it refilled: over act, rate*act <=
		// held + limit*act, so the limit is at least rate - held/act, and
		// below the rate it refused. Taken between the two (and at most 15% down), a token
		// bucket's limit is found in one or two throttles, not 5% per
		// throttle. Not where the last second shows a quota (a window API:
		// sec below the rate is the better measure).
		burstLo := 0.0
		held := min(f.firstBurst, f.rate*prevGateLen.Seconds())
		if held > 0 && !prevGate.IsZero() && !from.After(prevGate) && act >= lfMinActive && sec >= 0.97*f.rate {
			if b := f.rate - held/act.Seconds(); b > 0 {
				burstLo = math.Sqrt(b * f.rate)
				floored := burstLo < lfBurstFloor*f.rate // the reading took more off than it may
				burstLo = max(burstLo, lfBurstFloor*f.rate)
				// Both episodes emptied a full bucket: the first took the
				// burst and firstSpan's refill, this one the burst and
				// act's. Their difference is the limit over the
				// difference of the spans, with no burst in it: a
				// measure, if a rough one (a count or two off in a second
				// is a few percent). It raises the guess above, never
				// lowers it: a limit guessed low is cruised under until
				// the next probe, tens of seconds away with a pause to
				// pay, while one a little high is crossed by the cruise's
				// creep (see tick) and measured again at the next
				// refusal. Not where it is above the rate refused: a
				// window API (what it took at first was a quota, not a
				// burst) gives nonsense here.
				if d := act - f.firstSpan; held == f.firstBurst && f.firstSpan > 0 && d >= lfMinActive {
					if two := (float64(f.count(from, end)) - f.firstBurst) / d.Seconds(); two > burstLo && two < f.rate {
						burstLo, floored = two, false
					}
				}
				// The first episode took firstBurst within a second of the
				// start and was refused there: a window counting over a
				// second (HAProxy's stick-table rate, a sliding log) takes
				// that many a second, and a bucket that took as many in
				// under a second has at least that much in burst and
				// refill together. Below the rate refused, it is a better
				// guess than the bucket reading's floor (which takes a
				// window for a bucket that emptied twice and is then at
				// most 85% of the rate refused, 48/s for a 50/s HAProxy).
				if q := f.firstBurst + f.firstLate; floored && f.firstSpan > 0 && f.firstSpan < time.Second && q > burstLo && q < f.rate {
					burstLo = min(q, lfQuotaMax*f.rate)
				} else if floored && f.firstSpan > 0 && f.firstSpan < time.Second && q >= f.rate && q <= lfQuotaOver*f.rate {
					// That first second took a little more than the rate
					// now refused: a window's quota read across two of its
					// windows (a start that straddled its edge), so the
					// quota is under the rate refused, and what the last
					// second took, sending at it, is the better reading.
					burstLo = max(burstLo, min(sec, f.rate))
				}
			}
		}
		// A window API that names its windows' ends in whole seconds (a
		// Retry-After HTTP-date): the last wait ended on one, this one
		// ends a second later, and this refusal came within that second:
		// what it accepted since the last wait ended is the window's
		// quota, exactly (it had nothing left). The answers that come
		// within the window are its: nothing was sent during the wait
		// before it, and what is sent after it is answered after it. Those
		// still in flight at the refusal are counted once the wait is over
		// (see tick).
		win := 0.0
		from, to := prevGate.Round(time.Second), gateEnd.Round(time.Second)
		if !prevGate.IsZero() && prevGateLen > 0 && to.Sub(from) == time.Second &&
			onSecond(prevGate) && onSecond(gateEnd) && now.After(from.Add(f.lat)) &&
			f.active(from, end) >= end.Sub(from)*9/10 {
			win = float64(f.count(from, end))
			f.winFrom, f.winEnd = from, to
		}
		switch {
		case win > 0:
			lim, exact = win, true
			if f.exact && f.limit > 0 && win < f.limit && win >= lfStillExact*f.limit {
				// Within a count or two of the quota measured before:
				// the same quota, the answers in flight not in yet (a
				// cruise at 98% of it still puts 51 requests in some
				// windows of 50).
				lim = f.limit
			}
		case burstLo > 0 && lo > 0 && lo < f.rate:
			lim = min(max(burstLo, math.Sqrt(lo*f.rate)), m, f.rate)
		case lo > 0 && lo < f.rate:
			lim = math.Sqrt(lo * f.rate)
		case act < lfMinActive || prevEpisode.IsZero() && !from.After(f.start) && m >= lfAllTaken*f.rate:
			// Too little evidence, or the first throttle after the API
			// took all that was sent since the start: that was its burst
			// and what it refilled, which tells the burst apart from the
			// limit no better than a guess does (Stripe's 50 and 50/s took
			// 100/s for a second; read as the limit, the cruise at 94/s
			// cost 25 429s before the refusals measured it).
			lim = f.rate * lfBackoff
			f.weak = true
			if f.throts == 1 && prevEpisode.IsZero() {
				f.firstBurst = float64(f.count(f.start, end))
				if !f.firstAt.IsZero() && end.After(f.firstAt) {
					f.firstSpan = end.Sub(f.firstAt)
				}
				if gateEnd.After(now) {
					f.firstGate = gateEnd
				}
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
		// Refused while cruising under a limit measured exactly, and this
		// measure agrees with it to within a count's noise: the limit is
		// still known as exactly (the cruise was a little over it; the
		// headroom above widened), not only bounded.
		if f.exact && f.limit > 0 && lim >= lfStillExact*f.limit && lim <= f.limit {
			exact = true
		}
	}
	if !wasProbing && !wasWeak && f.limit > 0 && lim < lfFell*f.limit {
		f.fellAt, f.roseAgain = now, false // the limit fell after a clean cruise: it may move again
	}
	if f.behaviour == BehaviourPenaltyBox && !wasProbing && f.limit > 0 && lim < (1-lfHeadroomStep)*f.limit {
		// A penalty box refused the cruise, and this measure puts its
		// limit well under the one cruised under: the limit was read high
		// (a start that straddled its window), not cruised too close. The
		// headroom its box widened goes back.
		f.headroom = lfHeadroom
	}
	f.limit = max(lim, f.floor)
	f.exact = exact || (wasProbing && f.exact)
	f.inexact, f.inexactAt = lfHeadroomInexact, maxTime(gateEnd, now)
	every := f.probeEvery
	switch {
	case f.weak:
		every = lfProbeWeak
	case f.exact && !gateEnd.After(now):
		// Measured exactly and no pause imposed: a refused probe costs a
		// few 429s, not a pause, so probes can come often.
		every = lfProbeCheap
	case gateEnd.After(now):
		// Each refused probe costs the pause the downstream imposes (its
		// Retry-After): probes are spaced so that a limit that holds
		// costs at most lfProbeShare of the time (a 1 s pause: one probe
		// in 50 s).
		every = max(every, min(time.Duration(float64(gateEnd.Sub(now))/lfProbeShare), lfProbeCostly))
	}
	if f.fellWithin(now) {
		// The limit fell a moment ago: it may rise again as suddenly, so
		// for a while it is probed every lfProbeVolatile at least, whatever
		// that costs; once it rose again, every lfProbeFirst.
		if f.roseAgain {
			every = min(every, lfProbeFirst)
		} else {
			every = min(every, lfProbeVolatile)
		}
	}
	if f.behaviour == BehaviourPenaltyBox {
		// A downstream seen to count refused requests: whatever this
		// throttle measured, a failed probe shuts it for a window, so it
		// is probed as rarely as after the box itself (a probe 5s after a
		// cruise's stray 429 cost a 3s hold).
		every = max(every, lfProbeMax)
	}
	f.nextProbe = maxTime(gateEnd, now).Add(every)
	f.src = From429
	f.rate = f.cruise()
	f.burst = f.burstFor(f.rate)
	f.propose(algorithms.LimitProposal{Limit: f.limit, Rate: f.rate, Throttle: now})
	return true
}

// fellWithin reports whether the limit was seen to fall less than
// lfVolatile before now: it may move again, so it is probed often.
func (f *limitFinder) fellWithin(now time.Time) bool {
	return !f.fellAt.IsZero() && now.Sub(f.fellAt) < lfVolatile
}

// queued folds in an interval whose latency showed the downstream queues
// (queueSignal) at now: what it delivered over the last second, while
// sending was possible, is its rate, and a rate above it only fills its
// queue. It reports whether rate or burst changed.
func (f *limitFinder) queued(now time.Time) bool {
	if !f.hdrUntil.IsZero() && now.Before(f.hdrUntil) {
		return false // the advertised budget drives the rate
	}
	end := f.evidenceEnd(now)
	// A second of whole slots: count takes both ends' slots.
	from := maxTime(end.Add(-time.Second+lfSlot), f.start)
	act := f.active(from.Add(-lfSlot), end)
	if act < lfSecActive {
		return false
	}
	got := float64(f.count(from, end)) / act.Seconds()
	if got <= 0 {
		return false
	}
	if f.probing && f.src == FromLatency {
		// The probe filled its queue: ended as a refusal would end it,
		// the limit it started from holds. What it queued drains at a
		// lower rate first (see drainUntil); the headroom does not widen
		// for it.
		f.probing = false
		f.probeEvery = min(2*f.probeEvery, lfProbeMax)
		f.nextProbe = now.Add(f.probeEvery)
		f.drainUntil = now.Add(lfDrain)
		f.cleanSince = f.drainUntil
		f.rate = f.clamp(f.cruise() * lfDrainShare)
		f.burst = f.burstFor(f.rate)
		return true
	}
	if f.rate <= lfQueuedOver*got {
		// Not sending well over what it delivers. Still queueing while
		// cruising under a limit the latency taught: the cruise is at its
		// rate (what it delivered while its queue drained measured a bit
		// over it): the headroom widens, once per lfQueuedCool at most
		// (the queue drains at the difference).
		if f.src == FromLatency && !f.probing && now.Sub(f.cleanSince) >= lfQueuedCool && f.headroom > lfHeadroomMin {
			f.headroom = max(lfHeadroomMin, f.headroom-lfHeadroomStep)
			f.cleanSince = now
			f.rate = f.cruise()
			return true
		}
		return false
	}
	if f.probing {
		f.probing = false
		f.probeEvery = min(2*f.probeEvery, lfProbeMax)
	}
	if f.behaviour != BehaviourQueueing {
		// The excess over a queueing downstream's rate costs latency, not
		// refusals, and a cruise that still queues widens the headroom
		// (above): it starts narrower than under a limit that refuses.
		f.headroom = lfHeadroomQueued
	}
	f.behaviour = BehaviourQueueing
	f.limit = max(got, f.floor)
	f.src = FromLatency
	f.exact = true
	f.weak = false
	f.rate = f.cruise()
	f.burst = f.burstFor(f.rate)
	f.cleanSince = now
	f.nextProbe = maxTime(f.nextProbe, now.Add(f.probeEvery))
	f.propose(algorithms.LimitProposal{Limit: f.limit, Rate: f.rate, Throttle: f.lastThrottle})
	return true
}

// saturated is the limit the current span of refusals measures (0: none):
// refusals at most lfSatGap apart for at least lfSatMin, no gate among
// them, and something accepted: a downstream that refused the excess all
// along accepted exactly what it refills.
//
// Counts are of answers, and the answers of the span's first latency were
// to requests sent before it (at the rate before the refusals, the
// start-up's peak at first): the span is counted from one latency after
// its first refusal.
func (f *limitFinder) saturated(now time.Time) float64 {
	end := f.evidenceEnd(now)
	from := f.satStart.Add(f.lat)
	span := end.Sub(from)
	if f.satStart.IsZero() || span < lfSatMin || f.satN < 2 || f.active(from, end) < span {
		return 0
	}
	return float64(f.count(from, end)) / span.Seconds()
}

// penaltyBox recognises a downstream that counts the requests it refuses
// (see refusal) at a 429 answered at now, and holds for its window. It
// reports whether it did (rate, burst and the hold changed).
func (f *limitFinder) penaltyBox(now, gateEnd time.Time) bool {
	if now.Before(f.boxUntil) {
		return false // the hold's own refusals, still coming back
	}
	end := f.evidenceEnd(now)
	// Next to nothing accepted since the span of refusals began: it kept
	// refusing while we sent (no Retry-After, or one shorter than the
	// gaps). With a Retry-After the wait clears such a box as it clears a
	// bucket: the usual measures apply.
	// The answers of the span's first latency were to requests sent
	// before it shut: not counted.
	from := f.satStart.Add(f.lat)
	quiet, need := lfPenaltyQuiet, 5
	if f.behaviour == BehaviourPenaltyBox {
		// One already seen: two refusals in a row with nothing accepted
		// between say it shut again, and each request sent on while the
		// evidence gathers is counted and keeps it shut.
		quiet, need = 0, 2
	}
	if end.Sub(from) < quiet || f.satN < need || f.active(from, end) < quiet || f.count(from, end)*10 > int64(f.satN) {
		return false
	}
	// What it accepted in the window before it shut: its quota (HAProxy's
	// rate over one second); at start-up, what it took before it shut,
	// counted as that window's.
	boxStart := from // the answers to what was sent before it shut
	var est float64
	exact := false
	if a := f.active(boxStart.Add(-lfPenaltyWindow), boxStart); a >= lfSecActive {
		est = float64(f.count(boxStart.Add(-lfPenaltyWindow), boxStart)) / lfPenaltyWindow.Seconds()
		exact = true
	} else {
		est = float64(f.count(maxTime(f.start, boxStart.Add(-lfPenaltyWindow)), boxStart)) / lfPenaltyWindow.Seconds()
	}
	// Nothing accepted since the last hold ended: the box was still shut
	// (it counts over a longer window, or the refusals it counted before
	// the hold still weigh): the hold was too short, the limit holds.
	stillShut := f.boxHold > 0 && f.limit > 0 && now.Sub(f.boxUntil) < 2*lfCycle &&
		f.count(f.boxUntil.Add(-lfEpisode), from) == 0
	if f.probing && f.limit > 0 || stillShut {
		est = f.limit // a probe shut it, or the hold was too short: the limit it started from held
	} else if f.behaviour == BehaviourPenaltyBox && f.limit > 0 && now.Sub(f.boxUntil) < 2*lfCycle {
		// Shut again soon after the last, under the cruise that followed
		// it: a window counting over a second takes a steady rate up to
		// its quota, so the quota is under the rate cruised, however much
		// the window before it shut took (a quota read across the edge of
		// two of its windows, at a start or behind latency, reads up to a
		// fifth high). The limit goes a step under that rate.
		est = min(est, f.limit)
		if f.boxRate > 0 {
			est = min(est, f.boxRate*(1-lfHeadroomStep))
		}
	}
	if est < lfPenaltyLeast*f.rate && !(f.probing && f.limit > 0) && !stillShut {
		// It accepted next to nothing before it shut either: not a quota
		// (an outage that answers 429, another client taking it all).
		return false
	}
	// A hold that cleared the box (something was accepted after it) is
	// long enough for the next.
	hold := max(f.boxHold, lfPenaltyWindow)
	if stillShut {
		hold = min(2*f.boxHold, lfPenaltyMax)
	}
	f.boxHold = hold
	until := maxTime(gateEnd, now.Add(hold))
	f.gated(now, until)
	f.hold, f.holdCause = until, "penalty box: the downstream counts refused requests; holding "+hold.String()+" for its window to clear"
	f.boxUntil = until.Add(lfEpisode)
	f.guard = f.boxUntil
	f.lastEpisode, f.lastGateEnd, f.lastGateLen = now, until, until.Sub(now)
	f.cleanSince = until
	f.throts++
	f.behaviour = BehaviourPenaltyBox
	f.firstBurst, f.firstSpan, f.firstLate, f.firstGate = 0, 0, 0, time.Time{} // what it took before it shut was its window's quota, not a burst
	f.probing = false
	f.probeStep = lfProbeStep
	f.weak = false
	f.limit = max(min(est, f.ceiling), f.floor)
	f.exact = exact || f.exact
	f.src = From429
	f.rate = f.cruise()
	f.boxRate = f.rate
	f.burst = f.burstFor(f.rate)
	// Every refused request counts against it: a failed probe shuts it
	// for a window. It is probed rarely.
	f.probeEvery = lfProbeMax
	f.nextProbe = until.Add(f.probeEvery)
	f.satStart, f.satN = time.Time{}, 0
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
	f.src = FromHeaders
	if f.hdrFirst.IsZero() {
		f.hdrFirst = now
	}
	if limit > 0 {
		f.limit = limit
	}
	if f.hdrRoom < 1 && now.Sub(f.hdrRoomAt) >= lfHeadroomClean {
		f.hdrRoom, f.hdrRoomAt = min(1, f.hdrRoom+lfHeadroomStep/2), now
	}
	if left <= 0 {
		if f.limit > 0 {
			f.rate = f.clamp(f.limit * f.hdrRoom)
		}
		return
	}
	f.hdrUntil = now.Add(left)
	f.drainUntil = time.Time{} // the advertised budget drives the rate
	if rolling && quota > 0 && window > 0 && f.limit > 0 {
		ours := f.count(now.Add(-window), now)
		foreign := max(0, quota-remaining-ours)
		// A share of the quota is kept back for answers in flight; a
		// whole unit once another client was seen (see reserve), which
		// alone would cost a small quota a fifth of its rate.
		reserve := max(float64(f.reserve()), float64(quota)/40)
		r := (float64(quota) - reserve - float64(foreign)) / window.Seconds()
		f.rate = f.clamp(min(r, f.limit) * f.hdrRoom)
		f.burst = f.burstFor(f.rate)
		return
	}
	// Once another client of the same key was seen, the last unit is kept
	// in reserve: racing it for that unit would cost a 429 and its
	// Retry-After, rounded up to whole seconds (a window, where windows
	// are a second long). Alone, the whole budget is spent.
	var foreign int64
	if quota > 0 && window > left {
		if el := window - left; el >= 100*time.Millisecond {
			ours := f.count(now.Add(-el), now)
			foreign = quota - remaining - ours
		}
	}
	// A few answers in flight read as another client's: only a share of
	// the quota over them is one.
	// Not while its own start-up burst is still being answered.
	if foreign > max(2, quota/25) && remaining > 0 && now.Sub(f.start) > window {
		f.shared = true
	}
	spare := float64(max(remaining-f.reserve(), 0))
	if foreign > 0 && window > left {
		spare = max(0, spare-float64(foreign)/(window-left).Seconds()*left.Seconds())
	}
	// Paced at spare/left, the last unit would go at the window's end:
	// on its edge, where it is the next window's. Where the edge is
	// known (seen, not rounded), the spacing leaves half a unit's gap
	// before it, so the whole budget goes within the window.
	r := spare / left.Seconds()
	if f.atEdge && spare > 0 {
		r = (spare + 0.5) / left.Seconds()
	}
	if limit <= 0 && r > 0 && (f.limit == 0 || r > f.limit) {
		f.limit = r
	}
	switch {
	case remaining <= f.reserve():
		// Spent but for the reserve: the gate waits for the reset (see
		// controller.observe), and the rate then is the quota's.
		if f.limit > 0 {
			f.rate = f.clamp(f.limit * f.hdrRoom)
		}
	case f.limit > 0:
		f.rate = f.clamp(min(r, f.limit) * f.hdrRoom)
	default:
		f.rate = f.clamp(r * f.hdrRoom)
	}
	// A budget read from headers is spread, not sent at once: "r more in
	// the next second" is what a token bucket also says, and one of 2
	// refuses most of r sent together. So the burst follows the rate from
	// the first answer on, not only after a throttle.
	f.burst = f.burstFor(f.rate)
}

// tick runs the probe schedule at now. It reports whether rate or burst
// changed.
func (f *limitFinder) tick(now time.Time) bool {
	if !f.hdrUntil.IsZero() && !now.Before(f.hdrUntil) {
		// The advertised window ended with no fresh answer: keep the
		// limit it taught, cruise under it.
		f.hdrUntil = time.Time{}
		if f.src == FromHeaders && f.limit > 0 {
			f.rate = f.clamp(f.limit * f.hdrRoom)
			return true
		}
	}
	if (f.src != From429 && f.src != FromLatency) || f.limit <= 0 || !f.hdrUntil.IsZero() {
		return false
	}
	if !f.firstGate.IsZero() && !f.evidenceEnd(now).Before(f.firstGate) {
		// The first throttle's wait is over: the start-up's answers still
		// in flight at it count in what the start-up took. Nothing was
		// sent during the wait, so whole slots up to its end hold no
		// answer to a request sent after it.
		f.firstLate = max(0, float64(f.count(f.start, f.firstGate.Add(-lfSlot)))-f.firstBurst)
		f.firstGate = time.Time{}
	}
	if !f.winEnd.IsZero() && !f.evidenceEnd(now).Before(f.winEnd) {
		// The window a refusal measured is over: the answers that were in
		// flight at the refusal count too. Counted in whole slots, to the
		// last that ends within the window (the next holds answers to what
		// was sent as the wait ended): it may miss an answer or two, never
		// take one of the next window's.
		q := float64(f.count(f.winFrom, f.winEnd.Add(-lfSlot)))
		f.winEnd = time.Time{}
		if q > f.limit && f.exact && !f.probing {
			f.limit = min(q, f.ceiling)
			f.rate = f.cruise()
			f.burst = f.burstFor(f.rate)
			f.propose(algorithms.LimitProposal{Limit: f.limit, Rate: f.rate, Throttle: f.lastThrottle})
			return true
		}
	}
	if !f.drainUntil.IsZero() && !now.Before(f.drainUntil) {
		// The probe's queue drained: back to the cruise.
		f.drainUntil = time.Time{}
		f.rate = f.cruise()
		f.burst = f.burstFor(f.rate)
		return true
	}
	if f.unfollow(now) {
		return true
	}
	if f.probing {
		end := f.evidenceEnd(now)
		if end.Sub(f.probeStart) < f.probeLen {
			return false
		}
		f.probing = false
		// What the bucket saved before the probe is not the limit's. A
		// probe at the largest step that was accepted whole passes anyway:
		// no bucket seen saves that much.
		span := end.Sub(f.probeStart).Seconds()
		raw := float64(f.count(f.probeStart, end)) / span
		got := raw - f.probeSaved/span
		pass := f.limit + lfProbePass*(f.probeRate-f.limit)
		largest := f.probeRate >= f.clamp(f.limit*(1+lfProbeStepMax))
		switch {
		case got >= pass || largest && raw >= pass:
			// Accepted (most of) it: the limit is at least that; the next
			// probe starts at once (a limit that rose is climbed without a
			// second of cruise between steps), its step twice as long.
			f.limit = max(f.limit, got)
			if f.upper > 0 && f.limit >= f.upper {
				f.upper = 0
			}
			f.probeEvery = lfProbeFirst
			f.passes++
			f.probeStep = min(2*f.probeStep, lfProbeStepMax)
			f.nextProbe = now
		case raw >= pass:
			// Accepted, but no more than the bucket may have saved: no
			// evidence either way; the next probe, soon, takes a step
			// twice as long.
			f.probeStep = min(2*f.probeStep, lfProbeStepMax)
			f.nextProbe = now.Add(lfProbeLen)
		default:
			f.nextProbe = now.Add(f.probeEvery) // app-limited: no evidence
		}
		f.rate = f.cruise()
		f.burst = f.burstFor(f.rate)
		f.propose(algorithms.LimitProposal{Limit: f.limit, Rate: f.rate, Throttle: f.lastThrottle})
		return true
	}
	if !f.cleanSince.IsZero() && now.Sub(f.cleanSince) >= lfHeadroomClean && f.headroom < lfHeadroom {
		// A long cruise without a refusal: the headroom narrows again.
		f.cleanSince = now
		f.headroom = min(lfHeadroom, f.headroom+lfHeadroomStep/2)
		f.rate = f.cruise()
		return true
	}
	if !f.exact && f.src == From429 && f.inexact < lfInexactMax && !f.inexactAt.IsZero() && now.Sub(f.inexactAt) >= lfInexactClean {
		// A limit only bounded, cruised under without a refusal for a
		// while: what was sustained shows the bound was not too high, so
		// the cruise creeps up towards it. A refusal on the way sets it
		// back (and measures again).
		f.inexactAt = now
		f.inexact = min(lfInexactMax, f.inexact+lfInexactStep)
		f.rate = f.cruise()
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
	// Over a limit measured exactly, a small step (a failed probe costs
	// little: it ends at the first refusal, and the saturated span that
	// follows measures the limit again), doubling while probes pass, so a
	// limit that rose is found in a few probes. Over a limit only bounded,
	// a step a downstream's burst would not hide. Never above halfway to a
	// rate refused.
	// What a bucket behind the limit could have saved since it was last
	// empty (the last refusal), cruising under a limit measured exactly:
	// the probe's excess must spend more than that before a pass proves
	// anything (Stripe's 50-request bucket hides a 10% step for a second
	// after five at 98%). The step is at least what spends it within the
	// longest probe.
	f.probeSaved = 0
	if f.exact && !f.lastThrottle.IsZero() {
		// At most its burst: what it took before its first refusal
		// bounds that; a second of the limit where that is unknown.
		f.probeSaved = min(max(f.limit-f.rate, 0)*now.Sub(f.lastThrottle).Seconds(), f.limit*lfSavedMax.Seconds())
		if f.firstBurst > 0 {
			f.probeSaved = min(f.probeSaved, f.firstBurst)
		}
	}
	step := lfProbeGain - 1
	if f.exact {
		step = min(max(f.probeStep, lfProbeOver*f.probeSaved/((1-lfProbePass)*lfProbeLong.Seconds()*f.limit)), lfProbeStepMax)
	}
	f.probeRate = f.clamp(f.limit * (1 + step))
	if f.upper > f.limit {
		f.probeRate = f.clamp(max(min(f.probeRate, (f.limit+f.upper)/2), f.limit*min(1+step, lfProbeMin)))
	}
	if !f.exact && f.firstBurst > 0 && f.fellWithin(now) && !f.roseAgain && f.behaviour != BehaviourPenaltyBox {
		// The limit fell a moment ago and has not risen since: each
		// probe's step spends the burst within lfProbeLen, so a probe
		// lasts no longer than that (a 25% step over 20/s would need 2 s
		// to spend a burst of 10), whatever the last refused rate.
		f.probeRate = max(f.probeRate, f.clamp(f.limit+f.firstBurst/lfProbeLen.Seconds()))
	}
	f.rate = f.probeRate
	// Long enough that the downstream's burst (what it took before its
	// first refusal bounds it, or what it saved since) cannot hide the
	// step: a probe that passes proves a higher limit, one the burst hid
	// would raise it wrongly and cost a refusal later.
	f.probeLen = lfProbeLen
	if ex := f.probeRate - f.limit; ex > 0 {
		// Over a limit only bounded, what the burst holds is spent once;
		// over an exact one, the excess must pass the savings by a margin
		// (a pass needs lfProbePass of the step beyond them).
		hide := f.firstBurst
		if f.exact {
			hide = lfProbeOver * f.probeSaved / (1 - lfProbePass)
		}
		// And long enough that the step adds a few requests: at 7/s a
		// 25% step over one second is one or two requests, and a count
		// that lands one short of the pass reads as no evidence.
		long := max(hide, lfProbeMinStep) / ex
		f.probeLen = min(max(lfProbeLen, time.Duration(long*float64(time.Second))), lfProbeLong)
	}
	f.propose(algorithms.LimitProposal{Limit: f.limit, Rate: f.rate, Throttle: f.lastThrottle, ProbeUntil: now.Add(f.probeLen)})
	return true
}
