package runner

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/pacer-dev/pacer/internal/app/config"
)

// TestGlobalBurstZeroLeasesMany: shaping.global.burst left at 0 is a second
// of the global rate, so a lease holds many tokens (a burst of 1 made every
// lease one token: two Redis calls per message).
func TestGlobalBurstZeroLeasesMany(t *testing.T) {
	mr := miniredis.RunT(t)
	g := config.Default().Shaping.Global
	g.RedisURL = config.NewSecret("redis://" + mr.Addr() + "/0")
	g.Rate = config.MustRate("1000/s")
	l, err := redisLimiter(g, false, slog.New(slog.DiscardHandler), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close(context.Background()) })
	if got := l.MaxLease(); got < 50 {
		t.Errorf("MaxLease() = %d with burst 0 at 1000/s and a 100ms lease; want about 100", got)
	}
}
