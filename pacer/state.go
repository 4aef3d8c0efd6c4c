package pacer

import (
	"context"
	"fmt"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/pacer/state"
)

// StateStore keeps the shaper's state across restarts (state.Store).
type StateStore = state.Store

// ShaperState is what a worker saves of its shaper (state.ShaperState).
type ShaperState = state.ShaperState

// FileState keeps the shaper's state in a file (state.File).
type FileState = state.File

// BlobState keeps the shaper's state as one opaque value (state.Blob).
type BlobState = state.Blob

// NewFileState keeps the state in dir/shaper.json (state.NewFile); an
// empty dir is an ErrInvalidConfig.
func NewFileState(dir string) (*FileState, error) {
	if dir == "" {
		return nil, fmt.Errorf("%w: state dir is empty", ErrInvalidConfig)
	}
	return state.NewFile(dir)
}

// stateful is the bucket stage's limiter when it can be saved and restored
// (algorithms.DualRate).
type stateful interface {
	State(now time.Time) algorithms.DualRateState
	Restore(now time.Time, s algorithms.DualRateState)
}

// restoreFrom lowers the bucket stage to what the saved state allows at now
// (it never raises it: see algorithms.DualRate.Restore):
//
//   - no saved state (first start, or a state that cannot be read): the
//     bucket starts empty, as if the previous worker had just spent its
//     burst; it fills at the rate from now on.
//   - a clean stop: the saved tokens plus the refill since the stop, and the
//     saved next peak departure.
//   - a crash (a periodic save): the dead worker may have spent everything
//     up to Until, so the bucket is empty at min(Until, now) and refills
//     from there; the next departure is no earlier than one batch's peak
//     interval after that.
//
// It returns what it did, for the log.
func (e *Engine) restoreFrom(now time.Time, s ShaperState, ok bool) string {
	e.sh.mu.Lock()
	defer e.sh.mu.Unlock()
	b := e.sh.bucket
	if b == nil {
		return "unlimited: nothing to restore"
	}
	lim, can := b.lim.(stateful)
	if !can {
		return "bucket cannot be restored"
	}
	switch {
	case !ok || s.Bucket == nil:
		lim.Restore(now, algorithms.DualRateState{At: now})
		return "no saved state: starting with an empty bucket"
	case s.Clean:
		lim.Restore(now, e.clampFuture(now, *s.Bucket))
		return "restored the state of a clean stop"
	default:
		dead := s.Until
		if now.Before(dead) {
			dead = now
		}
		st := algorithms.DualRateState{At: dead, Next: s.Bucket.Next}
		if gap := e.peakGap(); gap > 0 {
			if nx := dead.Add(gap); nx.After(st.Next) {
				st.Next = nx
			}
		}
		lim.Restore(now, e.clampFuture(now, st))
		return "restored after a crash: empty bucket from when the previous worker may have stopped"
	}
}

// peakGap is one batch's peak interval (0 without a peak).
func (e *Engine) peakGap() time.Duration {
	p := e.cfg.Peak
	if p == (algorithms.Rate{}) {
		return 0
	}
	return time.Duration(float64(e.cfg.BatchSize) * float64(p.Per) / float64(p.Count))
}

// clampFuture bounds a saved state that only a clock stepped back (NTP, a
// restored VM snapshot) or a corrupt save can produce, to what the
// configuration allows at now: at most one burst of debt (the bucket empty
// at now, never below) and one peak interval (the next departure no later
// than now plus one batch's peak interval). Without the clamp a next
// departure saved an hour ahead stalled delivery for that hour, and tokens
// of -1e12 for decades, while the worker reported ready; and since the
// stalled shaper is what the next save records, a restart kept the stall.
// A clamp is logged at WARN with the saved and the clamped values; the
// clamped state is what the shaper holds, so it is what is saved next.
func (e *Engine) clampFuture(now time.Time, s algorithms.DualRateState) algorithms.DualRateState {
	out := s
	var why []any
	if r := e.cfg.Rate; r != (algorithms.Rate{}) && r.Count > 0 && r.Per > 0 {
		elapsed := max(0, now.Sub(s.At))
		if x := s.Tokens + float64(elapsed)*float64(r.Count)/float64(r.Per); x < 0 {
			out.At, out.Tokens = now, 0
			why = append(why, "saved_tokens", s.Tokens, "saved_at", s.At, "tokens_now", x, "clamped_tokens", 0.0)
		}
	}
	if gap := e.peakGap(); gap > 0 && !s.Next.IsZero() {
		if lim := now.Add(gap); s.Next.After(lim) {
			out.Next = lim
			why = append(why, "saved_next", s.Next, "ahead_by", s.Next.Sub(now).String(), "clamped_next", lim)
		}
	}
	if why != nil {
		e.log.Warn("pacer: the saved shaper state is ahead of the clock (a clock stepped back, or a restored snapshot): clamped to an empty bucket and one peak interval from now", append(why, "now", now)...)
	}
	return out
}

// snapshot is the bucket stage's state at now (nil when unlimited).
func (e *Engine) snapshot(now time.Time) *algorithms.DualRateState {
	e.sh.mu.Lock()
	defer e.sh.mu.Unlock()
	if e.sh.bucket == nil {
		return nil
	}
	lim, ok := e.sh.bucket.lim.(stateful)
	if !ok {
		return nil
	}
	s := lim.State(now)
	return &s
}

// startState restores the shaper from Config.State and saves it every
// StateInterval until the returned function is called; that function
// stops the saver and writes the clean-stop state. Call it once nothing
// more can be admitted. Without a store both are no-ops.
func (e *Engine) startState(ctx context.Context) (stop func()) {
	store := e.cfg.State
	if store == nil {
		if e.sh.bucket != nil {
			start := "starting with a full bucket (Shaping.StartEmpty false): a restart allows another burst"
			if e.cfg.StartEmpty {
				start = "starting with an empty bucket (Shaping.StartEmpty): a restart is no second burst"
			}
			e.log.Info("pacer: shaper state: none kept across restarts", "restore", start)
		}
		return func() {}
	}
	lctx, cancel := context.WithTimeout(ctx, e.cfg.StateInterval*4)
	s, ok, err := store.Load(lctx)
	cancel()
	if err != nil {
		e.log.Warn("pacer: reading the saved shaper state; starting with an empty bucket", "err", err)
		ok = false
	}
	now := e.clock.Now()
	what := e.restoreFrom(now, s, ok)
	e.log.Info("pacer: shaper state", "restore", what, "saved_at", s.SavedAt, "clean", s.Clean)

	iv := e.cfg.StateInterval
	save := func(clean bool) {
		now := e.clock.Now()
		st := ShaperState{SavedAt: now, Clean: clean, Until: now, Bucket: e.snapshot(now)}
		if !clean {
			st.Until = now.Add(2 * iv)
		}
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), iv*4)
		defer cancel()
		if err := store.Save(sctx, st); err != nil {
			// Fail open: admissions go on, and a restart after a kill may
			// credit what this worker spends until a save lands.
			e.log.Warn("pacer: saving the shaper state; a restart after a crash may allow a second burst until a save succeeds", "clean", clean, "err", err)
			e.sh.stateUntil.Store(0)
			return
		}
		if !clean {
			// Admit nothing past what the state now on record promises: a
			// save that lands late (a slow fsync) pauses admission at the
			// previous Until instead of letting a restart credit tokens
			// spent after it.
			e.sh.stateUntil.Store(st.Until.UnixNano())
			e.wakeShaper()
		}
	}
	save(false) // this worker is running from now on
	stopTicks := every(e.clock, iv, func() { save(false) })
	return func() {
		stopTicks()
		save(true)
	}
}

// stateRetry is how often a worker held by a late state save (see
// Engine.stateUntil) looks again, besides being woken when a save lands.
const stateRetry = time.Millisecond

// DefaultStateInterval is Config.StateInterval's default.
const DefaultStateInterval = 250 * time.Millisecond
