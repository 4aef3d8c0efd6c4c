package algorithms

import (
	"encoding/binary"
	"math"
	"math/bits"
	"testing"
	"time"
)

// fuzzOps decodes ops into (delta, n) pairs: delta in [0, 4*interval] most
// of the time, sometimes a huge jump; n in [-2, burst+2], sometimes extreme.
func fuzzOps(ops []byte, interval time.Duration, burst int, yield func(dt time.Duration, n int)) {
	for len(ops) >= 3 {
		a, b, c := ops[0], ops[1], ops[2]
		ops = ops[3:]
		var dt time.Duration
		switch {
		case a == 255:
			dt = time.Duration(math.MaxInt64 / 4)
		case a == 254:
			dt = -time.Duration(b) * interval // a clock going backwards
		default:
			dt = time.Duration(int64(a) * int64(interval) * 4 / 253)
		}
		n := int(b)%(burst+5) - 2
		if c == 255 {
			n = math.MaxInt
		} else if c == 254 {
			n = math.MinInt
		}
		yield(dt, n)
	}
}

// fuzzEnvelope drives lim with ops and checks, over the monotone stretch of
// uses, waits within maxWait and the envelope r*L+burst.
// A grant's use time is the time the limiter measured its wait from: the
// latest time seen for the mutex-based ones (lift), the caller's own now for
// GCRA.
// Times past horizon (where the limiter clamps) are skipped.
func fuzzEnvelope(t *testing.T, lim Limiter, r Rate, burst int, maxWait time.Duration, lift bool, horizon time.Duration, ops []byte) {
	now, seen := time.Duration(0), time.Duration(0) // the limiter saw t0 at construction
	var uses []use
	fuzzOps(ops, r.Interval(), burst, func(dt time.Duration, n int) {
		if dt > horizon || now+dt > horizon {
			return
		}
		now += dt
		at := now
		if lift {
			seen = max(seen, now)
			at = seen
		}
		w, ok := lim.Reserve(t0.Add(now), n)
		if w < 0 {
			t.Fatalf("negative wait %v", w)
		}
		if ok && n > 0 {
			if n > burst {
				t.Fatalf("granted n=%d above burst %d", n, burst)
			}
			if w > maxWait {
				t.Fatalf("wait %v beyond max wait %v", w, maxWait)
			}
			uses = append(uses, use{at + w, n})
		}
		if n == 3 {
			lim.Cancel(t0.Add(now), 0) // a no-op cancel must be harmless
		}
	})
	if len(uses) <= 400 {
		checkEnvelope(t, uses, r, int64(burst))
	}
}

func fuzzRate(count uint32, perMs uint32) Rate {
	return Rate{Count: int64(count%1000) + 1, Per: time.Duration(int64(perMs%100000)+1) * time.Millisecond / 7}
}

func FuzzTokenBucket(f *testing.F) {
	f.Add(uint32(3), uint32(7000), uint8(2), uint16(100), uint16(0), false, []byte{10, 1, 0, 0, 1, 0, 200, 2, 0, 254, 3, 0, 255, 1, 0})
	f.Add(uint32(999), uint32(1), uint8(5), uint16(0), uint16(5), true, []byte{1, 5, 255, 1, 1, 254, 0, 4, 0})
	f.Fuzz(func(t *testing.T, count, perMs uint32, burst8 uint8, maxWaitMs, expiryMs uint16, empty bool, ops []byte) {
		r := fuzzRate(count, perMs)
		burst := int(burst8%16) + 1
		maxWait := time.Duration(maxWaitMs) * time.Millisecond / 13
		expiry := time.Duration(expiryMs) * time.Millisecond / 3
		tb, err := NewTokenBucket(TokenBucketConfig{Rate: r, Burst: burst, MaxWait: maxWait, StartEmpty: empty, Expiry: expiry}, t0)
		if err != nil {
			return
		}
		fuzzEnvelope(t, tb, r, burst, maxWait, true, time.Duration(maxSpan), ops)
	})
}

// FuzzGCRA: envelope, and for exactly held rates the same decisions as the
// token bucket.
func FuzzGCRA(f *testing.F) {
	f.Add(uint32(3), uint32(7000), uint8(2), uint16(100), false, []byte{10, 1, 0, 0, 1, 0, 200, 2, 0, 254, 3, 0})
	f.Add(uint32(7), uint32(1), uint8(0), uint16(9), true, []byte{0, 1, 0, 0, 1, 0, 0, 1, 0, 255, 255, 255})
	f.Fuzz(func(t *testing.T, count, perMs uint32, burst8 uint8, maxWaitMs uint16, empty bool, ops []byte) {
		r := fuzzRate(count, perMs)
		burst := int(burst8%16) + 1
		maxWait := time.Duration(maxWaitMs) * time.Millisecond / 13
		g, err := NewGCRA(GCRAConfig{Rate: r, Burst: burst, MaxWait: maxWait, StartEmpty: empty}, t0)
		if err != nil {
			return
		}
		fuzzEnvelope(t, g, r, burst, maxWait, false, time.Duration(g.maxRel), ops)
		if newStep(r).den > gcraMaxDen {
			return
		}
		g2, _ := NewGCRA(GCRAConfig{Rate: r, Burst: burst, MaxWait: maxWait, StartEmpty: empty}, t0)
		tb, err := NewTokenBucket(TokenBucketConfig{Rate: r, Burst: burst, MaxWait: maxWait, StartEmpty: empty}, t0)
		if err != nil {
			t.Fatalf("gcra accepted, token bucket refused: %v", err)
		}
		now := time.Duration(0)
		maxSeen := time.Duration(0)
		fuzzOps(ops, r.Interval(), burst, func(dt time.Duration, n int) {
			if dt > time.Duration(maxSpan)/8 || now+dt > time.Duration(maxSpan)/8 {
				return
			}
			now += dt
			if now < maxSeen {
				return // GCRA and TokenBucket treat stale times differently on purpose
			}
			maxSeen = now
			gw, gok := g2.Reserve(t0.Add(now), n)
			tw, tok := tb.Reserve(t0.Add(now), n)
			if gw != tw || gok != tok {
				t.Fatalf("at %v n=%d: gcra (%v, %v) token bucket (%v, %v)", now, n, gw, gok, tw, tok)
			}
		})
	})
}

func FuzzDualRate(f *testing.F) {
	f.Add(uint32(3), uint32(7000), uint32(9), uint8(2), uint16(100), []byte{10, 1, 0, 0, 1, 0, 200, 2, 0})
	f.Fuzz(func(t *testing.T, count, perMs, peakMul uint32, burst8 uint8, maxWaitMs uint16, ops []byte) {
		r := fuzzRate(count, perMs)
		peak := Rate{Count: r.Count * (int64(peakMul%8) + 1), Per: r.Per}
		burst := int(burst8%16) + 1
		maxWait := time.Duration(maxWaitMs) * time.Millisecond / 13
		d, err := NewDualRate(DualRateConfig{Rate: r, Burst: burst, Peak: peak, MaxWait: maxWait}, t0)
		if err != nil {
			return
		}
		fuzzEnvelope(t, d, r, burst, maxWait, true, time.Duration(maxSpan), ops)
	})
}

// FuzzConstructors: every constructor, any numbers: an error or a working
// limiter, never a panic; Reserve at extreme times and counts never panics
// and never returns a negative wait.
func FuzzConstructors(f *testing.F) {
	f.Add(int64(1), int64(1e9), int64(1), int64(0), int64(0), int64(1))
	f.Add(int64(-1), int64(0), int64(0), int64(-1), int64(-1), int64(0))
	f.Add(int64(math.MaxInt64), int64(math.MaxInt64), int64(math.MaxInt64), int64(math.MaxInt64), int64(math.MaxInt64), int64(math.MaxInt64))
	f.Add(int64(1), int64(366*24*3600*1e9), int64(1<<40), int64(1<<61), int64(1), int64(3))
	f.Fuzz(func(t *testing.T, count, per, burst, wait, extra, nb int64) {
		r := Rate{Count: count, Per: time.Duration(per)}
		b := int(burst)
		d := time.Duration(wait)
		e := time.Duration(extra)
		var lims []Limiter
		add := func(l Limiter, err error) {
			if err == nil {
				lims = append(lims, l)
			}
		}
		add(NewTokenBucket(TokenBucketConfig{Rate: r, Burst: b, MaxWait: d, Expiry: e}, t0))
		add(NewGCRA(GCRAConfig{Rate: r, Burst: b, MaxWait: d}, t0))
		add(NewDualRate(DualRateConfig{Rate: r, Burst: b, Peak: Rate{Count: count, Per: time.Duration(per / max(nb, 1))}, MaxWait: d}, t0))
		add(NewLeakyMeter(LeakyMeterConfig{Rate: r, Capacity: b}, t0))
		add(NewLeakyPacer(LeakyPacerConfig{Rate: r, Capacity: b, Slack: int(nb)}, t0))
		add(NewFixedWindow(WindowConfig{Limit: b, Window: d}, t0))
		add(NewSlidingWindow(WindowConfig{Limit: b, Window: d, Buckets: int(nb)}, t0))
		add(NewSlidingLog(WindowConfig{Limit: min(b, 1<<12), Window: d}, t0))
		add(NewWarmUp(WarmUpConfig{Rate: r, WarmUp: d, ColdFactor: float64(nb), MaxWait: e}, t0))
		if k, err := NewKeyed(KeyedConfig{MaxKeys: b, IdleTTL: d, New: func(now time.Time) (Limiter, error) {
			return NewGCRA(GCRAConfig{Rate: r, Burst: 1}, now)
		}}, t0); err == nil {
			var key [8]byte
			binary.LittleEndian.PutUint64(key[:], uint64(extra))
			k.ReserveKey(t0, key[:], 1)
		}
		times := []time.Time{t0, {}, time.Unix(0, math.MaxInt64), time.Unix(-1<<62, 0), time.Unix(1<<62, 0), t0.Add(time.Duration(extra))}
		ns := []int{0, 1, -1, int(burst), math.MaxInt, math.MinInt, int(nb)}
		for _, l := range lims {
			for _, now := range times {
				for _, n := range ns {
					if w, _ := l.Reserve(now, n); w < 0 {
						t.Fatalf("%T.Reserve(%v, %d) = negative wait %v", l, now, n, w)
					}
					l.Cancel(now, n)
				}
			}
		}
	})
}

// FuzzWindows: the sliding log never holds more than Limit in any window
// (s-W, s], the fixed window never more than Limit per aligned window, and
// the sliding window never more than Limit in Buckets consecutive
// sub-windows, whatever the (monotone or stale) arrival times and counts.
func FuzzWindows(f *testing.F) {
	f.Add(uint8(3), uint16(1000), uint8(4), []byte{10, 1, 0, 0, 2, 0, 200, 3, 0, 254, 1, 0})
	f.Fuzz(func(t *testing.T, limit8 uint8, winMs uint16, nb8 uint8, ops []byte) {
		limit := int(limit8%20) + 1
		nb := int(nb8%8) + 1
		w := time.Duration(int(winMs)%5000+1) * time.Millisecond * time.Duration(nb)
		log, err := NewSlidingLog(WindowConfig{Limit: limit, Window: w}, t0)
		if err != nil {
			t.Fatal(err)
		}
		fw, err := NewFixedWindow(WindowConfig{Limit: limit, Window: w}, t0)
		if err != nil {
			t.Fatal(err)
		}
		sw, err := NewSlidingWindow(WindowConfig{Limit: limit, Window: w, Buckets: nb}, t0)
		if err != nil {
			t.Fatal(err)
		}
		width := int64(w) / int64(nb)
		var logUses []use
		logSeen := time.Duration(0) // the log was constructed at t0
		fixed := map[int64]int{}
		sub := map[int64]int{}
		now, seen := time.Duration(0), time.Duration(math.MinInt64)
		fuzzOps(ops, w/7, limit, func(dt time.Duration, n int) {
			if dt > time.Duration(maxSpan) || now+dt > time.Duration(maxSpan) {
				return
			}
			now += dt
			seen = max(seen, now) // stale times count as the latest seen
			at := t0.Add(now)
			logSeen = max(logSeen, now)
			if _, ok := log.Reserve(at, n); ok && n > 0 {
				logUses = append(logUses, use{logSeen, n})
			}
			if _, ok := fw.Reserve(at, n); ok && n > 0 {
				k := t0.Add(seen).UnixNano() / int64(w)
				if fixed[k] += n; fixed[k] > limit {
					t.Fatalf("fixed window %d holds %d > %d", k, fixed[k], limit)
				}
			}
			if _, ok := sw.Reserve(at, n); ok && n > 0 {
				sub[t0.Add(seen).UnixNano()/width] += n
			}
		})
		for i := range logUses {
			sum := 0
			for j := i; j >= 0 && logUses[j].at > logUses[i].at-w; j-- {
				sum += logUses[j].n
			}
			if sum > limit {
				t.Fatalf("sliding log: window ending %v holds %d > %d", logUses[i].at, sum, limit)
			}
		}
		checkSubWindows(t, "sliding window", sub, nb, limit)
	})
}

// FuzzLeakyPacer: with Slack 0, departures are spaced >= n/r after a grant
// of n, and waits never exceed the capacity.
func FuzzLeakyPacer(f *testing.F) {
	f.Add(uint32(3), uint32(7000), uint8(3), []byte{10, 1, 0, 0, 1, 0, 200, 2, 0, 254, 3, 0})
	f.Fuzz(func(t *testing.T, count, perMs uint32, cap8 uint8, ops []byte) {
		r := fuzzRate(count, perMs)
		c := int(cap8%10) + 1
		p, err := NewLeakyPacer(LeakyPacerConfig{Rate: r, Capacity: c}, t0)
		if err != nil {
			return
		}
		var uses []use
		now, seen := time.Duration(0), time.Duration(0)
		fuzzOps(ops, r.Interval(), c, func(dt time.Duration, n int) {
			if dt > time.Duration(maxRel) || now+dt > time.Duration(maxRel) {
				return
			}
			now += dt
			seen = max(seen, now)
			w, ok := p.Reserve(t0.Add(now), n)
			if ok && n > 0 {
				if w > time.Duration(c)*r.Interval()+time.Duration(c) {
					t.Fatalf("wait %v beyond capacity %d at %s", w, c, r)
				}
				uses = append(uses, use{seen + w, n})
			}
		})
		for i := 1; i < len(uses); i++ {
			gap := int64(uses[i].at - uses[i-1].at + envSlack(r))
			hi, lo := bits.Mul64(uint64(max(gap, 0)), uint64(r.Count))
			nh, nl := bits.Mul64(uint64(uses[i-1].n), uint64(r.Per))
			if hi < nh || (hi == nh && lo < nl) {
				t.Fatalf("%s: departures %v then %v (n=%d) closer than n/r", r, uses[i-1].at, uses[i].at, uses[i-1].n)
			}
		}
	})
}
