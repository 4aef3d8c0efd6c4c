package algorithms

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"
)

func TestFixedWindowSteps(t *testing.T) {
	f, err := NewFixedWindow(WindowConfig{Limit: 3, Window: time.Second}, t0)
	if err != nil {
		t.Fatal(err)
	}
	h := 500 * time.Millisecond
	run(t, f, []step1{
		{t0, 2, 0, true},
		{t0.Add(h), 1, 0, true},
		{t0.Add(h), 1, h, false}, // full until the window ends at t1
		{t1, 3, 0, true},
		{t1, 4, Never, false},       // never: more than the limit
		{t0, 1, time.Second, false}, // stale: counted in t1's window
	})
	f.Cancel(t1, 1)
	run(t, f, []step1{{t1, 1, 0, true}})
}

// TestFixedWindowBoundary shows the weakness: Limit just before a boundary
// and Limit just after, 2*Limit within 2ns.
func TestFixedWindowBoundary(t *testing.T) {
	f, err := NewFixedWindow(WindowConfig{Limit: 100, Window: time.Minute}, t0)
	if err != nil {
		t.Fatal(err)
	}
	boundary := t0.Add(time.Minute) // t0 is minute-aligned
	got := 0
	for _, at := range []time.Time{boundary.Add(-1), boundary} {
		for f.Allow(at, 1) {
			got++
		}
	}
	if got != 200 {
		t.Fatalf("granted %d across the boundary, want 200 (2x the limit)", got)
	}
}

func TestFixedWindowPerAlignedWindow(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for iter := 0; iter < 100; iter++ {
		w := time.Duration(1+rng.Int64N(1000)) * time.Millisecond
		limit := 1 + rng.IntN(10)
		f, err := NewFixedWindow(WindowConfig{Limit: limit, Window: w}, t0)
		if err != nil {
			t.Fatal(err)
		}
		counts := map[int64]int{}
		now := t0
		for i := 0; i < 500; i++ {
			now = now.Add(time.Duration(rng.Int64N(int64(w) / 3)))
			n := 1 + rng.IntN(limit)
			if wait, ok := f.Reserve(now, n); ok {
				if wait != 0 {
					t.Fatalf("granted with wait %v", wait)
				}
				k := now.UnixNano() / int64(w)
				counts[k] += n
				if counts[k] > limit {
					t.Fatalf("window %d holds %d > %d", k, counts[k], limit)
				}
			}
		}
	}
}

func TestSlidingWindowSteps(t *testing.T) {
	s, err := NewSlidingWindow(WindowConfig{Limit: 4, Window: time.Second, Buckets: 4}, t0)
	if err != nil {
		t.Fatal(err)
	}
	q := 250 * time.Millisecond
	run(t, s, []step1{
		{t0, 2, 0, true},
		{t0.Add(q), 2, 0, true},
		{t0.Add(2 * q), 1, 2 * q, false}, // full; t0's bucket leaves at t1
		{t1, 2, 0, true},
		{t1, 1, q, false}, // t0+250ms's bucket leaves at t1+250ms
		{t1.Add(q), 2, 0, true},
		{t1, 5, Never, false}, // never: more than the limit
	})
	for _, cfg := range []WindowConfig{
		{Limit: 1, Window: time.Second, Buckets: 0},
		{Limit: 1, Window: time.Second, Buckets: 7},
		{Limit: 0, Window: time.Second, Buckets: 1},
		{Limit: 1, Window: 0, Buckets: 1},
	} {
		if _, err := NewSlidingWindow(cfg, t0); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("NewSlidingWindow(%+v, t0) = %v", cfg, err)
		}
	}
}

// TestSlidingWindowBound: every run of Buckets consecutive sub-windows
// holds at most Limit.
func TestSlidingWindowBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	for iter := 0; iter < 100; iter++ {
		nb := 1 + rng.IntN(10)
		width := time.Duration(1+rng.Int64N(100)) * time.Millisecond
		limit := 1 + rng.IntN(10)
		s, err := NewSlidingWindow(WindowConfig{Limit: limit, Window: width * time.Duration(nb), Buckets: nb}, t0)
		if err != nil {
			t.Fatal(err)
		}
		counts := map[int64]int{}
		now := t0
		for i := 0; i < 400; i++ {
			now = now.Add(time.Duration(rng.Int64N(int64(width))))
			n := 1 + rng.IntN(limit)
			if _, ok := s.Reserve(now, n); ok {
				counts[now.UnixNano()/int64(width)] += n
			}
		}
		checkSubWindows(t, "sliding window", counts, nb, limit)
	}
}

func TestSlidingLogSteps(t *testing.T) {
	l, err := NewSlidingLog(WindowConfig{Limit: 3, Window: time.Second}, t0)
	if err != nil {
		t.Fatal(err)
	}
	ms := time.Millisecond
	run(t, l, []step1{
		{t0, 1, 0, true},
		{t0.Add(400 * ms), 2, 0, true},
		{t0.Add(900 * ms), 1, 100 * ms, false}, // t0's grant leaves at t1
		{t1, 1, 0, true},
		{t1, 1, 400 * ms, false},
		{t1, 4, Never, false},    // never: more than the limit
		{t0, 1, 400 * ms, false}, // stale: treated as t1
	})
	l.Cancel(t1, 1)
	run(t, l, []step1{{t1, 1, 0, true}})
	if _, err := NewSlidingLog(WindowConfig{Limit: 1 << 30, Window: time.Second}, t0); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("huge limit: err = %v", err)
	}
}

// TestSlidingLogExact: for every grant time s, (s-W, s] holds <= Limit.
func TestSlidingLogExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	for iter := 0; iter < 100; iter++ {
		w := time.Duration(1+rng.Int64N(1000)) * time.Millisecond
		limit := 1 + rng.IntN(10)
		l, err := NewSlidingLog(WindowConfig{Limit: limit, Window: w}, t0)
		if err != nil {
			t.Fatal(err)
		}
		var uses []use
		now := time.Duration(0)
		for i := 0; i < 400; i++ {
			now += time.Duration(rng.Int64N(int64(w) / 2))
			n := 1 + rng.IntN(limit)
			if rng.IntN(20) == 0 {
				continue
			}
			if _, ok := l.Reserve(t0.Add(now), n); ok {
				uses = append(uses, use{now, n})
			}
		}
		for i := range uses {
			sum := 0
			for j := i; j >= 0 && uses[j].at > uses[i].at-w; j-- {
				sum += uses[j].n
			}
			if sum > limit {
				t.Fatalf("window (%v, %v] holds %d > %d", uses[i].at-w, uses[i].at, sum, limit)
			}
		}
	}
}
