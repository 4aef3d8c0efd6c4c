package redislimit

import (
	"context"
	"math/big"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/pacer-dev/pacer/algorithms"
)

// model is the token bucket in exact rationals: the script must agree with
// it on every step, whatever the rate, burst and timeline.
type model struct {
	rate   *big.Rat // tokens per microsecond
	cap    *big.Rat // burst
	tokens *big.Rat
	last   int64 // microseconds
	fresh  bool  // no state yet: empty (a missing key is an empty bucket)
}

func (m *model) advance(now int64) {
	if m.fresh {
		m.tokens, m.last, m.fresh = new(big.Rat), now, false
		return
	}
	if now > m.last {
		add := new(big.Rat).Mul(m.rate, new(big.Rat).SetInt64(now-m.last))
		m.tokens.Add(m.tokens, add)
		if m.tokens.Cmp(m.cap) > 0 {
			m.tokens.Set(m.cap)
		}
		m.last = now
	}
}

// step applies one call and returns granted and the wait in microseconds.
func (m *model) step(now int64, n, least int) (int, int64) {
	m.advance(now)
	granted := 0
	if n > 0 {
		whole := new(big.Int).Quo(m.tokens.Num(), m.tokens.Denom()).Int64()
		granted = min(n, int(whole))
		if granted < least {
			granted = 0
		}
		m.tokens.Sub(m.tokens, new(big.Rat).SetInt64(int64(granted)))
	} else if n < 0 {
		m.tokens.Add(m.tokens, new(big.Rat).SetInt64(int64(-n)))
		if m.tokens.Cmp(m.cap) > 0 {
			m.tokens.Set(m.cap)
		}
	}
	var wait int64
	if n > 0 && granted < n {
		need := new(big.Rat).Sub(new(big.Rat).SetInt64(int64(n-granted)), m.tokens)
		if need.Sign() > 0 {
			q := new(big.Rat).Quo(need, m.rate) // microseconds, ceil
			wait = new(big.Int).Quo(q.Num(), q.Denom()).Int64()
			if new(big.Rat).SetInt64(wait).Cmp(q) < 0 {
				wait++
			}
		}
	}
	return granted, wait
}

// TestScriptMatchesModel: on random rates, bursts and timelines (the server
// clock set by miniredis, going back now and then), the script grants and
// hints exactly what the rational model does.
func TestScriptMatchesModel(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m, c := miniAt(t, t0)
	ctx := context.Background()
	pers := []time.Duration{time.Millisecond, time.Second, 1500 * time.Millisecond, 7 * time.Second, time.Minute, time.Hour}
	rapid.Check(t, func(rt *rapid.T) {
		r := algorithms.Rate{Count: rapid.Int64Range(1, 1000).Draw(rt, "count"), Per: rapid.SampledFrom(pers).Draw(rt, "per")}
		burst := rapid.IntRange(1, 100).Draw(rt, "burst")
		u, err := unitsFor(r, burst)
		if err != nil {
			rt.Skipf("not exact: %v", err)
		}
		ref := &model{rate: new(big.Rat).SetFrac64(r.Count*1000, int64(r.Per)), cap: new(big.Rat).SetInt64(int64(burst)), fresh: true}
		key := "{model}"
		m.Del(key)
		now := t0.UnixMicro()
		for i := range 30 {
			switch rapid.IntRange(0, 9).Draw(rt, "clock") {
			case 0: // the server clock steps back
				now -= rapid.Int64Range(0, 2_000_000).Draw(rt, "back")
			default:
				now += rapid.Int64Range(0, int64(r.Per/time.Microsecond)).Draw(rt, "dt")
			}
			n := rapid.IntRange(-burst, burst+2).Draw(rt, "n")
			least := 0
			if n > 0 {
				least = rapid.IntRange(0, n).Draw(rt, "min")
			}
			m.SetTime(time.UnixMicro(now))
			res, err := runScript(ctx, c, key, u, n, least)
			if err != nil {
				rt.Fatalf("step %d: %v", i, err)
			}
			wantG, wantW := ref.step(now, n, least)
			if res.granted != wantG || res.wait != time.Duration(wantW)*time.Microsecond {
				rt.Fatalf("step %d at %d us, %s burst %d: take(%d, min %d) = granted %d wait %v; model %d %v (model tokens %s)",
					i, now, r, burst, n, least, res.granted, res.wait, wantG, time.Duration(wantW)*time.Microsecond, ref.tokens.FloatString(6))
			}
		}
	})
}
