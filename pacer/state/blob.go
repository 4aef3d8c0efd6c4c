package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

var _ Store = Blob{}

// Blob is a Store over any store of one value, in the state
// file's format (JSON with a version). cmd/pacer keeps it in Redis
// (algorithms/redislimit Limiter.SaveState and LoadState) when shaping.global
// is configured with a state_key. Put must replace the value atomically;
// Get returns ok=false when nothing was saved.
type Blob struct {
	Get func(ctx context.Context) (b []byte, ok bool, err error)
	Put func(ctx context.Context, b []byte) error
}

// Load decodes what Get returns.
func (s Blob) Load(ctx context.Context) (ShaperState, bool, error) {
	if s.Get == nil {
		return ShaperState{}, false, errors.New("pacer: Blob without Get")
	}
	b, ok, err := s.Get(ctx)
	if err != nil || !ok {
		return ShaperState{}, false, err
	}
	var sf stateFile
	if err := json.Unmarshal(b, &sf); err != nil {
		return ShaperState{}, false, fmt.Errorf("pacer: saved state: %w", err)
	}
	if sf.Version != stateVersion {
		return ShaperState{}, false, fmt.Errorf("pacer: saved state: version %d (want %d)", sf.Version, stateVersion)
	}
	return sf.ShaperState, true, nil
}

// Save encodes st and Puts it.
func (s Blob) Save(ctx context.Context, st ShaperState) error {
	if s.Put == nil {
		return errors.New("pacer: Blob without Put")
	}
	b, err := json.Marshal(stateFile{Version: stateVersion, ShaperState: st})
	if err != nil {
		return fmt.Errorf("pacer: encoding state: %w", err)
	}
	return s.Put(ctx, b)
}
