package simulate

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/internal/app/config"
)

// TestSimulateProperties: over random traces and shapings, the engine on
// the virtual clock admits every arrival exactly once, keeps the queue
// within its size, and the simulator's own window count never exceeds the
// envelope min(rate+burst, peak+1) per second.
func TestSimulateProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		rate := rapid.IntRange(1, 500).Draw(t, "rate")
		burst := rapid.IntRange(1, 200).Draw(t, "burst")
		c := config.Default()
		s := &c.Shaping
		s.Rate = config.Rate{Rate: algorithms.Rate{Count: int64(rate), Per: time.Second}}
		s.Burst = burst
		if rapid.Bool().Draw(t, "peak") {
			p := rate + rapid.IntRange(0, 500).Draw(t, "extra")
			s.Peak = config.Rate{Rate: algorithms.Rate{Count: int64(p), Per: time.Second}}
		}
		s.QueueSize = rapid.IntRange(1, 300).Draw(t, "queue")
		rows := rapid.IntRange(1, 40).Draw(t, "rows")
		var b strings.Builder
		b.WriteString("seconds,count\n")
		sec := 0.0
		for i := range rows {
			sec += rapid.Float64Range(0.05, 5).Draw(t, fmt.Sprintf("gap%d", i))
			fmt.Fprintf(&b, "%g,%d\n", sec, rapid.IntRange(0, 300).Draw(t, fmt.Sprintf("n%d", i)))
		}
		dir, err := os.MkdirTemp("", "sim")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		path := filepath.Join(dir, "t.csv")
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		tr, err := readTrace(path)
		if err != nil {
			t.Fatal(err)
		}
		res, err := simulate(&c, tr, 0)
		if err != nil {
			t.Fatal(err)
		}
		if res.arrived != tr.total() || res.admitted != res.arrived || res.unfinished != 0 {
			t.Fatalf("arrived %d (trace %d), admitted %d, unfinished %d", res.arrived, tr.total(), res.admitted, res.unfinished)
		}
		if res.maxQueue > int64(s.QueueSize) {
			t.Fatalf("queue reached %d > size %d", res.maxQueue, s.QueueSize)
		}
		bound := float64(rate + burst)
		if !s.Peak.IsZero() {
			bound = math.Min(bound, s.Peak.PerSecond()+1)
		}
		if !res.envelopeOK || float64(res.maxWindow) > bound {
			t.Fatalf("envelope: %d in one second, bound %g", res.maxWindow, bound)
		}
		var sum int64
		for _, bk := range res.buckets {
			sum += bk.admitted
		}
		if sum != res.admitted {
			t.Fatalf("buckets hold %d admissions, total %d", sum, res.admitted)
		}
	})
}

// simulate says it does not model the shared per-key limit either, and
// stands a local bucket in for the global one.
func TestSimulateNotesGlobalPerKey(t *testing.T) {
	c := config.Default()
	s := &c.Shaping
	s.Rate = config.Rate{Rate: algorithms.Rate{Count: 10, Per: time.Second}}
	s.Global.RedisURL = config.NewSecret("redis://127.0.0.1:6379/0")
	s.Global.Rate = config.Rate{Rate: algorithms.Rate{Count: 100, Per: time.Second}}
	for _, perKey := range []bool{false, true} {
		s.Global.PerKey.Rate = config.Rate{}
		if perKey {
			s.Global.PerKey.Rate = config.Rate{Rate: algorithms.Rate{Count: 5, Per: time.Second}}
		}
		ec, notes, err := engineConfig(&c, time.Unix(0, 0))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(strings.Join(notes, ";"), "per-key limits not simulated"); got != perKey {
			t.Errorf("global per-key %v: notes %q (per-key note %v)", perKey, notes, got)
		}
		if ec.Shaping.Global == nil || ec.Shaping.GlobalPerKey != nil || ec.Shaping.PerKey != nil {
			t.Errorf("global per-key %v: global %v, global per-key %v, per-key %v", perKey, ec.Shaping.Global, ec.Shaping.GlobalPerKey, ec.Shaping.PerKey)
		}
	}
}
