// Package state keeps the engine's shaper state across restarts: what a
// Store saves (ShaperState), in a file (File) or as one opaque value
// (Blob). The engine restores it when it starts and saves it while it runs.
package state

import (
	"context"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
)

// Store keeps the shaper's state across restarts (Config.State), so a
// restarted worker does not spend a second burst the previous process had
// just spent. File keeps it in a file, Blob as one value (a Redis key).
//
// Load returns ok=false when nothing was ever saved. Save replaces what was
// saved, atomically: a Load after a crash sees either the old or the new
// state, never a mix.
type Store interface {
	Load(ctx context.Context) (s ShaperState, ok bool, err error)
	Save(ctx context.Context, s ShaperState) error
}

// ShaperState is what a worker saves of its shaper: the token bucket and
// peak pacer stage (per-key buckets, quotas and the Redis stages are not
// saved: the shared ones live in Redis already).
type ShaperState struct {
	// SavedAt is when the state was taken.
	SavedAt time.Time `json:"saved_at"`
	// Clean is true when the worker stopped cleanly after taking it:
	// nothing was admitted after SavedAt.
	Clean bool `json:"clean"`
	// Until is the latest moment at which the worker that saved it may
	// still have admitted messages: SavedAt for a clean stop, and for a
	// periodic save the time by which the worker promised to save again
	// (SavedAt + 2 x StateInterval). A worker killed in between admitted
	// nothing after Until: the engine admits nothing at or after the Until
	// of its last save that landed, so a save that lands late (a slow
	// fsync) pauses admission rather than break the promise. A save that
	// fails lifts the bound (fail open, logged).
	Until time.Time `json:"until"`
	// Bucket is the token bucket and peak pacer (nil: unlimited).
	Bucket *algorithms.DualRateState `json:"bucket,omitempty"`
}
