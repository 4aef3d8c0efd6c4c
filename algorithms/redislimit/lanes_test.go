package redislimit

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
)

// TestLaneScriptTimeline drives the lane script on miniredis with a frozen
// clock: two lanes, the low one with a 10% floor, at 1000/s burst 100.
func TestLaneScriptTimeline(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m, c := miniAt(t, t0)
	ctx := context.Background()
	u := mustUnits(t, algorithms.PerSecond(1000), 100) // num 1, den 1000, cap 100000
	floors := []int64{0, 100}
	ms := time.Millisecond
	steps := []struct {
		at             time.Duration
		lane, n, min   int
		granted        int
		wait           time.Duration
		description    string
		w0, w1, e1Want int64 // lanes hash after: marks relative to t0 in µs (-1: none), lane 1's earmark
	}{
		{0, 0, 100, 1, 100, 0, "high takes the full bucket; granted in full: no mark", -1, -1, 0},
		{0, 1, 10, 1, 0, 10 * ms, "low finds it empty; no higher lane waits: wait for 10 tokens at the full rate", -1, 30000, 0},
		{0, 0, 50, 1, 0, 50 * ms, "high short too: waiting until +50ms+linger", 70000, 30000, 0},
		{10 * ms, 1, 10, 1, 1, 90 * ms, "10 tokens refilled: low may take only its 10% earmark (1); wait at its floor rate", 70000, 120000, 0},
		{10 * ms, 0, 50, 1, 9, 41 * ms, "high takes the free pool: the other 9", 71000, 120000, 0},
		{20 * ms, 0, 50, 1, 9, 41 * ms, "lane 1 waits: 1 of the next 10 stays earmarked for it", 81000, 120000, 1000},
		{20 * ms, 1, 1, 1, 1, 0, "low takes its earmark; granted in full: its mark clears", 81000, -1, 0},
		{30 * ms, 0, 10, 1, 10, 0, "low no longer waits: high gets all 10, its mark clears", -1, -1, 0},
		{40 * ms, 1, 5, 1, 5, 0, "no lane waits: low takes from the free pool", -1, -1, 0},
	}
	if _, err := runScript(ctx, c, "{ln}", u, -100, 0); err != nil { // full: a missing key is empty
		t.Fatal(err)
	}
	for i, s := range steps {
		m.SetTime(t0.Add(s.at))
		a := &laneArgs{lane: s.lane, linger: 20000, floors: floors}
		res, err := runLaneScript(ctx, c, "{ln}", u, s.n, s.min, a)
		if err != nil {
			t.Fatalf("step %d (%s): %v", i, s.description, err)
		}
		if res.granted != s.granted || res.wait != s.wait {
			t.Errorf("step %d (%s): lane %d take %d = granted %d wait %v; want %d %v", i, s.description, s.lane, s.n, res.granted, res.wait, s.granted, s.wait)
		}
		mark := func(f string) int64 {
			if !m.Exists("{ln}:lanes") {
				return -1
			}
			v := m.HGet("{ln}:lanes", f)
			var x int64
			for _, ch := range v {
				x = x*10 + int64(ch-'0')
			}
			if x == 0 {
				return -1
			}
			return x - t0.UnixMicro()
		}
		if w0, w1 := mark("w0"), mark("w1"); w0 != s.w0 || w1 != s.w1 {
			t.Errorf("step %d (%s): marks w0 %d w1 %d; want %d %d", i, s.description, w0, w1, s.w0, s.w1)
		}
		var e1 int64
		if m.Exists("{ln}:lanes") {
			for _, ch := range m.HGet("{ln}:lanes", "e1") {
				e1 = e1*10 + int64(ch-'0')
			}
		}
		if e1 != s.e1Want {
			t.Errorf("step %d (%s): lane 1 earmark %d want %d", i, s.description, e1, s.e1Want)
		}
	}
}

// TestLaneScriptShares: both lanes always want more (every ms each asks
// for 5): the low lane gets its 10% floor of the refill, the high lane
// the rest, and together exactly the refill. Then a high lane that wants
// little (1 every 10ms) never holds the low lane back.
func TestLaneScriptShares(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m, c := miniAt(t, t0)
	ctx := context.Background()
	u := mustUnits(t, algorithms.PerSecond(1000), 100)
	floors := []int64{0, 100}
	take := func(at time.Duration, lane, n int) int {
		m.SetTime(t0.Add(at))
		res, err := runLaneScript(ctx, c, "{sh}", u, n, 1, &laneArgs{lane: lane, linger: 20000, floors: floors})
		if err != nil {
			t.Fatal(err)
		}
		return res.granted
	}
	take(0, 0, 100) // drain
	var got [2]int
	for i := 1; i <= 3000; i++ { // 3 s
		at := time.Duration(i) * time.Millisecond
		got[1] += take(at, 1, 5) // the low lane asks first each time
		got[0] += take(at, 0, 5)
	}
	total := got[0] + got[1]
	if total < 2990 || total > 3000 {
		t.Errorf("both backlogged for 3 s at 1000/s: %d admitted, want the refill (3,000)", total)
	}
	if share := float64(got[1]) / float64(total); share < 0.099 || share > 0.11 {
		t.Errorf("low lane share %.4f (%d of %d), want its 10%% floor", share, got[1], total)
	}
	t.Logf("both backlogged: high %d, low %d (%.2f%%)", got[0], got[1], 100*float64(got[1])/float64(total))

	got = [2]int{}
	base := 4 * time.Second
	take(base, 1, 100) // drain what accumulated
	demand, maxLag, since := 0, time.Duration(0), time.Duration(0)
	for i := 1; i <= 3000; i++ {
		at := base + time.Duration(i)*time.Millisecond
		if i%10 == 0 { // the high lane wants 100/s and asks again each ms until served
			if demand == 0 {
				since = at
			}
			demand++
		}
		if demand > 0 {
			g := take(at, 0, demand)
			got[0] += g
			demand -= g
			if demand == 0 {
				maxLag = max(maxLag, at-since)
			}
		}
		got[1] += take(at, 1, 5)
	}
	if got[0]+demand != 300 || demand > 1 || maxLag > 2*time.Millisecond {
		t.Errorf("a high lane wanting 100/s got %d in 3 s, %d unserved (want all 300 but the last), served at most %v late (want <= 2ms)", got[0], demand, maxLag)
	}
	if got[1] < 2650 {
		t.Errorf("the low lane got %d in 3 s beside a 100/s high lane, want the other ~2700", got[1])
	}
	t.Logf("high wants 10%%: high %d, low %d", got[0], got[1])
}

// TestLanesAcrossWorkers runs two Limiters on the real Redis (PACER_TEST_REDIS_URL;
// testenv says what it uses), one per lane, sharing one budget of 400/s:
// while both are backlogged the low lane gets about its 20% floor and the
// high lane the rest; when the high lane stops, the low lane takes it all.
func TestLanesAcrossWorkers(t *testing.T) {
	e := newEnv(t)
	mk := func() *Limiter {
		cfg := e.cfg("lanes", algorithms.PerSecond(400), 20)
		cfg.Lanes, cfg.Floors = 2, []float64{0, 0.2}
		cfg.Lease = 20 * time.Millisecond
		return newLimiter(t, cfg)
	}
	hi, lo := mk(), mk()
	if hi.Lanes() != 2 {
		t.Fatalf("Lanes() = %d", hi.Lanes())
	}
	var counts [2]atomic.Int64
	run := func(l *Limiter, lane int, stop <-chan struct{}, wg *sync.WaitGroup) {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			w, ok := l.ReserveLane(time.Now(), lane, 1)
			if ok {
				counts[lane].Add(1)
				continue
			}
			time.Sleep(min(max(w, 200*time.Microsecond), 5*time.Millisecond))
		}
	}
	phase := func(d time.Duration, lanes ...int) [2]int64 {
		counts[0].Store(0)
		counts[1].Store(0)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for _, ln := range lanes {
			wg.Add(1)
			if ln == 0 {
				go run(hi, 0, stop, &wg)
			} else {
				go run(lo, 1, stop, &wg)
			}
		}
		time.Sleep(d)
		close(stop)
		wg.Wait()
		return [2]int64{counts[0].Load(), counts[1].Load()}
	}
	phase(300*time.Millisecond, 0, 1) // settle: the burst and the first leases
	both := phase(2*time.Second, 0, 1)
	total := both[0] + both[1]
	share := float64(both[1]) / float64(total)
	t.Logf("both backlogged 2 s at 400/s: high %d, low %d (low %.1f%%)", both[0], both[1], 100*share)
	if total < 700 || total > 900 {
		t.Errorf("admitted %d in 2 s at 400/s (burst 20, leases), want about 800", total)
	}
	if share < 0.15 || share > 0.30 {
		t.Errorf("low lane share %.3f, want about its 20%% floor", share)
	}
	alone := phase(time.Second, 1)
	t.Logf("low alone 1 s: %d", alone[1])
	if alone[1] < 300 {
		t.Errorf("low lane alone got %d in 1 s of 400/s: a gone high lane must not hold it back", alone[1])
	}
}

func TestLanesValidate(t *testing.T) {
	base := Config{Name: "x", Rate: algorithms.PerSecond(10), Burst: 10, URL: "redis://127.0.0.1:1/0"}
	for _, tc := range []struct {
		lanes  int
		floors []float64
		ok     bool
	}{
		{0, nil, true}, {2, []float64{0, 0.1}, true}, {3, []float64{0, 0.5, 0.5}, true},
		{1, nil, false}, {2, []float64{0, 0.1, 0.1}, false}, {2, []float64{0, 1}, false},
		{3, []float64{0, 0.6, 0.6}, false}, {2, []float64{0, -0.1}, false}, {0, []float64{0.1}, false},
	} {
		c := base
		c.Lanes, c.Floors = tc.lanes, tc.floors
		err := c.Validate()
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrInvalidConfig)) {
			t.Errorf("Lanes %d Floors %v: err %v, want ok=%v", tc.lanes, tc.floors, err, tc.ok)
		}
	}
}
