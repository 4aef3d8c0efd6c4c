package pacer

import (
	"context"
	"fmt"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/pacer/clock"
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

// restoreFrom lowers the bucket stage to what the saved state allows at now
// (state.Restore; it never raises it: see algorithms.DualRate.Restore). It
// returns what it did, for the log.
func (e *Engine) restoreFrom(now time.Time, s ShaperState, ok bool) string {
	var what string
	bucket, restored := e.sh.RestoreBucket(now, func(c *Shaping) algorithms.DualRateState {
		st, w, clamped := state.Restore(now, s, ok, c.Rate, c.PeakGap(e.cfg.BatchSize))
		if clamped != nil {
			e.log.Warn("pacer: the saved shaper state is ahead of the clock (a clock stepped back, or a restored snapshot): clamped to an empty bucket and one peak interval from now", append(clamped, "now", now)...)
		}
		what = w
		return st
	})
	switch {
	case !bucket:
		return "unlimited: nothing to restore"
	case !restored:
		return "bucket cannot be restored"
	}
	return what
}

// startState restores the shaper from Config.State and saves it every
// StateInterval until the returned function is called; that function
// stops the saver and writes the clean-stop state. Call it once nothing
// more can be admitted. Without a store both are no-ops.
func (e *Engine) startState(ctx context.Context) (stop func()) {
	store := e.cfg.State
	if store == nil {
		if _, ok := e.sh.Bucket(e.clock.Now()); ok {
			start := "starting with a full bucket (Shaping.StartEmpty false): a restart allows another burst"
			if e.sh.Config().StartEmpty {
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
		st := ShaperState{SavedAt: now, Clean: clean, Until: now, Bucket: e.sh.BucketState(now)}
		if !clean {
			st.Until = now.Add(2 * iv)
		}
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), iv*4)
		defer cancel()
		if err := store.Save(sctx, st); err != nil {
			// Fail open: admissions go on, and a restart after a kill may
			// credit what this worker spends until a save lands.
			e.log.Warn("pacer: saving the shaper state; a restart after a crash may allow a second burst until a save succeeds", "clean", clean, "err", err)
			e.stateUntil.Store(0)
			return
		}
		if !clean {
			// Admit nothing past what the state now on record promises: a
			// save that lands late (a slow fsync) pauses admission at the
			// previous Until instead of letting a restart credit tokens
			// spent after it.
			e.stateUntil.Store(st.Until.UnixNano())
			e.wakeShaper()
		}
	}
	save(false) // this worker is running from now on
	stopTicks := clock.Every(e.clock, iv, func() { save(false) })
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
