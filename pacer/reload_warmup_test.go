package pacer_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/pacertest"
)

// Engine.Reload keeps an unchanged warm-up ramping where it was, restarts a
// changed one cold only while start-up lasts, and never brings a new cold
// start after it (unless the warm-up is Guava's cold-after-idle one).
func TestReloadWarmUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sh := pacer.Shaping{Rate: algorithms.PerSecond(100), Burst: 100, WarmUp: 10 * time.Second}
		e, err := pacer.New(pacer.Config{Source: pacertest.NewSource(nil), Sink: &pacertest.Sink{}, Shaping: sh})
		if err != nil {
			t.Fatal(err)
		}
		first := pacer.WarmUpStage(e)
		if first == nil {
			t.Fatal("no warm-up stage")
		}
		time.Sleep(time.Second)
		if err := e.Reload(sh); err != nil {
			t.Fatal(err)
		}
		if pacer.WarmUpStage(e) != first {
			t.Error("an unchanged warm-up was rebuilt (it would start cold again)")
		}
		sh.Rate = algorithms.PerSecond(200)
		sh.Burst = 200
		if err := e.Reload(sh); err != nil {
			t.Fatal(err)
		}
		second := pacer.WarmUpStage(e)
		if second == nil || second == first {
			t.Errorf("a new rate during start-up: warm-up %v (want a new one)", second)
		}
		time.Sleep(20 * time.Second)
		sh.Rate = algorithms.PerSecond(300)
		sh.Burst = 300
		if err := e.Reload(sh); err != nil {
			t.Fatal(err)
		}
		if w := pacer.WarmUpStage(e); w != nil {
			t.Error("a reload after start-up brought a new cold start")
		}
		sh.WarmUpAfterIdle = true
		if err := e.Reload(sh); err != nil {
			t.Fatal(err)
		}
		if pacer.WarmUpStage(e) == nil {
			t.Error("warmup_after_idle: no warm-up stage after a reload")
		}
	})
}
