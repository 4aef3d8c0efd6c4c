package redislimit

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
)

// TestSaveLoadState: LoadState sees nothing before a save, then the latest
// SaveState; the value expires after its TTL; workers' ids do not collide;
// a bad id is refused.
func TestSaveLoadState(t *testing.T) {
	e := newEnv(t)
	l := newLimiter(t, e.cfg("state", algorithms.PerSecond(100), 10))
	ctx := context.Background()
	if _, ok, err := l.LoadState(ctx, "w1"); ok || err != nil {
		t.Fatalf("LoadState before a save: ok %v err %v, want nothing", ok, err)
	}
	for _, v := range []string{"one", "two"} {
		if err := l.SaveState(ctx, "w1", []byte(v), time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.SaveState(ctx, "w2", []byte("other"), time.Minute); err != nil {
		t.Fatal(err)
	}
	b, ok, err := l.LoadState(ctx, "w1")
	if err != nil || !ok || !bytes.Equal(b, []byte("two")) {
		t.Fatalf("LoadState = %q %v %v, want the latest save", b, ok, err)
	}
	if ttl := e.client.PTTL(ctx, l.StateKey("w1")).Val(); ttl <= 0 || ttl > time.Minute {
		t.Errorf("TTL %v, want (0, 1m]", ttl)
	}
	if err := l.SaveState(ctx, "w1{x}", nil, 0); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("SaveState with a hash tag in the id: %v, want ErrInvalidConfig", err)
	}
}
