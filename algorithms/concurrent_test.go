package algorithms

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestConcurrentUse runs every algorithm (and Keyed and All over them) from
// several goroutines on a shared fake clock, for the race detector, and
// checks waits are never negative.
func TestConcurrentUse(t *testing.T) {
	makers := limiterMakers(t)
	for mi, mk := range makers {
		lim := mk(rand.New(rand.NewPCG(uint64(mi), 7)))
		keyed, err := NewKeyed(KeyedConfig{MaxKeys: 4, IdleTTL: 50 * time.Millisecond, New: func(time.Time) (Limiter, error) {
			return mk(rand.New(rand.NewPCG(uint64(mi), 8))), nil
		}}, t0)
		if err != nil {
			t.Fatal(err)
		}
		all := NewAll(lim, mk(rand.New(rand.NewPCG(uint64(mi), 9))))
		var clock atomic.Int64
		var wg sync.WaitGroup
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func(seed uint64) {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(seed, 10))
				key := []byte{0}
				for i := 0; i < 500; i++ {
					now := t0.Add(time.Duration(clock.Add(rng.Int64N(int64(time.Millisecond)))))
					n := 1 + rng.IntN(3)
					key[0] = byte(rng.IntN(8))
					var w time.Duration
					switch rng.IntN(4) {
					case 0:
						w, _ = lim.Reserve(now, n)
					case 1:
						w, _ = keyed.ReserveKey(now, key, n)
					case 2:
						w, _ = all.Reserve(now, n)
					default:
						lim.Cancel(now, 1)
						keyed.CancelKey(now, key, 1)
					}
					if w < 0 {
						t.Errorf("negative wait %v", w)
						return
					}
				}
			}(uint64(g))
		}
		wg.Wait()
		if keyed.Len() > 4 {
			t.Fatalf("keyed Len %d > MaxKeys", keyed.Len())
		}
	}
}
