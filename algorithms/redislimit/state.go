package redislimit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// StateKey is the Redis key SaveState and LoadState use for id:
// Prefix+"{"+Name+"}:state:"+id (in the shared budget's hash slot).
func (l *Limiter) StateKey(id string) string {
	return l.cfg.Prefix + "{" + l.cfg.Name + "}:state:" + id
}

// SaveState stores one worker's opaque state (a worker keeps its shaper's
// local stages there across restarts: pacer.BlobState) under id, replacing
// what was there in one SET, so a later LoadState sees the old value or
// the new one, never a mix. It expires after ttl (0: never). Each call is
// bounded by ctx and by Config.Timeout, but never below a second (a state
// read at start-up on a busy host must not fail for a few ms); it does not
// go through the lease machinery and does not change the limiter's mode.
func (l *Limiter) SaveState(ctx context.Context, id string, b []byte, ttl time.Duration) error {
	if err := checkStateID(id); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, max(l.cfg.Timeout, time.Second))
	defer cancel()
	if err := l.client.Set(ctx, l.StateKey(id), b, ttl).Err(); err != nil {
		return fmt.Errorf("algorithms/redislimit: saving state %q: %w", id, err)
	}
	return nil
}

// LoadState returns what SaveState stored under id; ok is false when
// nothing is (never saved, or expired).
func (l *Limiter) LoadState(ctx context.Context, id string) (b []byte, ok bool, err error) {
	if err := checkStateID(id); err != nil {
		return nil, false, err
	}
	ctx, cancel := context.WithTimeout(ctx, max(l.cfg.Timeout, time.Second))
	defer cancel()
	b, err = l.client.Get(ctx, l.StateKey(id)).Bytes()
	if errors.Is(err, goredis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("algorithms/redislimit: loading state %q: %w", id, err)
	}
	return b, true, nil
}

func checkStateID(id string) error {
	if id == "" || strings.ContainsAny(id, "{}") {
		return fmt.Errorf("%w: state id %q must be non-empty, without '{' or '}'", ErrInvalidConfig, id)
	}
	return nil
}
