package limit

import (
	"context"
	"log/slog"
	"math"
	"sync/atomic"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
)

// Sharing the learned limit (Shaping.LimitBoard). Several workers behind
// one API key must together converge to the API's limit, not each to its
// own share of the moment: when one runs out of work, the others should
// take what it leaves, at once, not 15 s later by probing. So, when the
// workers share a Global budget and a LimitBoard:
//
//   - every worker adds what the downstream accepted to the board's counts
//     (every boardSync), and its limit finder measures the group's accepted
//     rate, not its own: the evidence before a throttle is the group's;
//   - a worker that learns something (a throttle's measurement, a probe
//     started or ended) proposes it on the board, by compare-and-set on the
//     board's epoch; every worker adopts the board's latest state, so the
//     group has one limit and one probe at a time;
//   - the rate every worker applies goes to the Global budget (up to
//     GlobalRate, the group's ceiling) and to its own bucket (up to its
//     configured Rate): the Global budget holds the group to the learned
//     limit, whichever workers have the backlog.
//
// The counts lag: a worker's deliveries reach the board at its next sync,
// so the finder's evidence ends one or two board slots before the last
// sync (steady traffic before a throttle makes the shift harmless). A
// board that cannot be reached is logged and shown in /status; the worker
// goes on with the last state it saw, measures its own accepted rate
// while the board's counts are older than boardStale (never the stale
// counts: they would read as nothing accepted), and keeps its counts for
// the next sync.
const (
	boardSync  = 100 * time.Millisecond
	boardLag   = algorithms.BoardSlot
	boardStale = time.Second
)

// lfShare is a limit finder's link to the group's board.
type lfShare struct {
	epoch     uint64                       // the board's epoch last adopted
	slotStart time.Time                    // counts[0]'s slot start
	counts    [algorithms.BoardSlots]int64 // the group's counts as last synced
	synced    time.Time                    // when they were synced (zero: never)
	pending   []algorithms.SlotCount       // accepted since the last sync, by slot
	proposal  *algorithms.LimitProposal    // staged for the next sync
	follow    time.Time                    // following another worker's probe until
}

// count is what the group accepted in the board slots [from, to).
func (s *lfShare) count(from, to time.Time) int64 {
	first := algorithms.BoardSlotOf(s.slotStart)
	a, b := algorithms.BoardSlotOf(from)-first, algorithms.BoardSlotOf(to)-first
	var n int64
	for i := max(a, 0); i < min(b, algorithms.BoardSlots); i++ {
		n += s.counts[i]
	}
	return n
}

// evidenceEnd is where the finder's evidence ends at now: now alone, the
// last complete board slot in a group.
func (f *limitFinder) evidenceEnd(now time.Time) time.Time {
	if !f.grouped(now) {
		return now
	}
	end := minTime(now, f.share.synced).Add(-boardLag)
	return time.Unix(0, algorithms.BoardSlotOf(end)*int64(algorithms.BoardSlot))
}

// grouped: the group's counts are fresh at t (synced within boardStale);
// otherwise the finder measures this worker's own.
func (f *limitFinder) grouped(t time.Time) bool {
	return f.share != nil && !f.share.synced.IsZero() && t.Sub(f.share.synced) <= boardStale
}

// propose stages what the finder just learned for the group (a no-op
// alone).
func (f *limitFinder) propose(p algorithms.LimitProposal) {
	if f.share == nil {
		return
	}
	p.Epoch = f.share.epoch
	f.share.proposal = &p
}

// following: another worker's probe is in force at now.
func (f *limitFinder) following(now time.Time) bool {
	return f.share != nil && now.Before(f.share.follow)
}

// unfollow ends a followed probe whose worker never said how it ended
// (gone, or its board unreachable): back to cruising under the limit. It
// reports whether the rate changed.
func (f *limitFinder) unfollow(now time.Time) bool {
	if f.share == nil || f.share.follow.IsZero() || now.Before(f.share.follow.Add(2*lfProbeLen)) {
		return false
	}
	f.share.follow = time.Time{}
	f.rate = f.cruise()
	f.burst = f.burstFor(f.rate)
	return true
}

// takeSync hands the counts and the proposal to send at the next sync.
func (f *limitFinder) takeSync() ([]algorithms.SlotCount, *algorithms.LimitProposal) {
	s := f.share
	n, p := s.pending, s.proposal
	s.pending, s.proposal = nil, nil
	return n, p
}

// add counts n accepted at now for the next sync.
func (s *lfShare) add(now time.Time, n int) {
	slot := algorithms.BoardSlotOf(now)
	if k := len(s.pending); k > 0 && s.pending[k-1].Slot == slot {
		s.pending[k-1].N += int64(n)
		return
	}
	s.pending = append(s.pending, algorithms.SlotCount{Slot: slot, N: int64(n)})
}

// syncFailed gives back what a failed sync did not deliver.
func (f *limitFinder) syncFailed(n []algorithms.SlotCount, p *algorithms.LimitProposal) {
	s := f.share
	s.pending = append(n, s.pending...)
	if len(s.pending) > algorithms.BoardSlots {
		s.pending = s.pending[len(s.pending)-algorithms.BoardSlots:] // older than the board keeps
	}
	if s.proposal == nil && p != nil && p.Epoch == s.epoch {
		s.proposal = p
	}
}

// merge folds in the board as a sync at now left it; sent is the proposal
// that sync carried (nil: none). It reports whether rate or burst changed.
func (f *limitFinder) merge(now time.Time, st algorithms.LimitState, sent *algorithms.LimitProposal) bool {
	s := f.share
	s.counts, s.slotStart, s.synced = st.Counts, st.SlotStart, now
	if st.Epoch <= s.epoch {
		return false
	}
	s.epoch = st.Epoch
	if s.proposal != nil && s.proposal.Epoch < st.Epoch {
		s.proposal = nil // based on a state that is gone: relearn from the new one
	}
	mine := sent != nil && st.Epoch == sent.Epoch+1 && st.LimitProposal.Limit == sent.Limit &&
		st.Rate == sent.Rate && st.Throttle.Equal(sent.Throttle) && st.ProbeUntil.Equal(sent.ProbeUntil)
	if mine {
		if st.ProbeUntil.IsZero() {
			s.follow = time.Time{}
		}
		return false
	}
	if !f.hdrUntil.IsZero() && now.Before(f.hdrUntil) {
		return false // the advertised budget drives the rate
	}
	if !finitePositive(st.Limit) || !finitePositive(st.Rate) {
		return false // not a rate (a board written by something else): ignored
	}
	if st.Throttle.After(f.lastThrottle) {
		if f.probing || f.following(now) {
			f.probeEvery = min(2*f.probeEvery, lfProbeMax) // the group's probe was refused
		}
		f.lastThrottle, f.lastEpisode = st.Throttle, st.Throttle
		f.guard = maxTime(f.guard, st.Throttle.Add(lfEpisode))
		f.nextProbe = maxTime(f.nextProbe, st.Throttle.Add(f.probeEvery))
	}
	f.probing = false
	s.follow = time.Time{}
	if !st.ProbeUntil.IsZero() && now.Before(st.ProbeUntil) {
		s.follow = st.ProbeUntil
	} else if st.ProbeUntil.IsZero() && st.Limit > f.limit {
		f.probeEvery = lfProbeFirst // a probe passed
		f.nextProbe = now.Add(lfProbeLen)
	}
	f.limit = max(st.Limit, f.floor)
	f.src = From429
	f.weak = false
	f.rate = f.clamp(st.Rate)
	f.burst = f.burstFor(f.rate)
	return true
}

// syncBoard is one sync with the board at now.
func (c *Controller) syncBoard(ctx context.Context, board algorithms.LimitBoard, now time.Time) error {
	c.mu.Lock()
	f := c.lf
	if f == nil || f.share == nil {
		c.mu.Unlock()
		return nil
	}
	n, p := f.takeSync()
	c.mu.Unlock()
	st, err := board.SyncLimit(ctx, now, n, p)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lf != f {
		return err // reloaded meanwhile: the next sync starts the new finder's
	}
	if err != nil {
		f.syncFailed(n, p)
		return err
	}
	if f.merge(now, st, p) {
		c.applyFinder(now, "shared-limit")
	}
	return nil
}

// StartSharing syncs with board every boardSync (100 ms; every runs the
// ticks on the caller's clock, now reads it) until stop is called, which
// syncs one last time, so the board has every count. Without a board or a
// limit finder it does nothing. A failed sync is logged (at most once a
// minute) and kept for BoardErr.
func (c *Controller) StartSharing(ctx context.Context, board algorithms.LimitBoard, now func() time.Time, every func(time.Duration, func()) (stop func())) (stop func()) {
	c.mu.Lock()
	noFinder := c.lf == nil
	c.mu.Unlock()
	if board == nil || noFinder {
		return func() {}
	}
	var lastWarn time.Time
	sync := func() {
		t := now()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		if err := c.syncBoard(sctx, board, t); err != nil {
			c.boardErr.Store(err.Error())
			if t.Sub(lastWarn) >= time.Minute {
				lastWarn = t
				c.log.Warn("pacer: the shared limit board cannot be reached; going on with the last limit seen", "err", err)
			}
			return
		}
		c.boardErr.Store("")
	}
	stopTicks := every(boardSync, sync)
	return func() {
		stopTicks()
		sync()
	}
}

// BoardErr is the last failure to reach the limit board ("": none).
func (c *Controller) BoardErr() string { return c.boardErr.Load() }

// GlobalSetter is a Global limiter whose rate and burst change at runtime:
// what a shared limit moves.
type GlobalSetter interface {
	SetRate(now time.Time, r algorithms.Rate) error
	SetBurst(now time.Time, burst int) error
}

// NewGroup is the group a limit board makes this worker part of: its
// ceiling (the Global budget's configured rate) and global, whose rate and
// burst follow the board's state; a change only is applied (every worker
// applies the same board state), and a refusal is logged to log.
func NewGroup(global GlobalSetter, ceiling algorithms.Rate, log *slog.Logger) Group {
	var lastRate float64
	var lastBurst int
	return Group{
		ceiling: ceiling.PerSecond(),
		apply: func(now time.Time, rate float64, burst int) {
			if rate != lastRate {
				if err := global.SetRate(now, algorithms.PerSecond(rate)); err != nil {
					log.Warn("pacer: shared limit: Global rate change refused", "to", rate, "err", err)
				} else {
					lastRate = rate
				}
			}
			if burst != lastBurst {
				if err := global.SetBurst(now, burst); err != nil {
					log.Warn("pacer: shared limit: Global burst change refused", "to", burst, "err", err)
				} else {
					lastBurst = burst
				}
			}
		},
	}
}

// atomicString is a string read and written from several goroutines.
type atomicString struct{ p atomic.Pointer[string] }

func (a *atomicString) Store(s string) { a.p.Store(&s) }

func (a *atomicString) Load() string {
	if p := a.p.Load(); p != nil {
		return *p
	}
	return ""
}

// Shared reports whether the learned limit is the group's.
func (c *Controller) Shared() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lf != nil && c.lf.share != nil
}

func finitePositive(x float64) bool { return x > 0 && !math.IsInf(x, 0) }
