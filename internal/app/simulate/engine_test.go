package simulate

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/app/config"
)

// The virtual clock moves only when advanced; a timer fires once Now
// reaches its deadline, never before; Stop and Reset leave nothing stale;
// a timer for d <= 0 fires at once.
func TestVirtualClock(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := &vclock{act: &activity{}, now: t0}
	a := c.NewTimer(2 * time.Second)
	b := c.NewTimer(time.Second)
	if at, ok := c.next(); !ok || !at.Equal(t0.Add(time.Second)) || c.waiting() != 0 {
		t.Fatalf("next %v %v, waiting %d (a timer from NewTimer is no wait)", at, ok, c.waiting())
	}
	b.Reset(time.Second)
	if c.waiting() != 1 {
		t.Fatalf("waiting %d after Reset", c.waiting())
	}
	c.advance(t0.Add(999 * time.Millisecond))
	select {
	case <-b.C():
		t.Fatal("fired before its deadline")
	default:
	}
	c.advance(t0.Add(time.Second))
	select {
	case v := <-b.C():
		if !v.Equal(t0.Add(time.Second)) {
			t.Errorf("fired with %v", v)
		}
	default:
		t.Fatal("not fired at its deadline")
	}
	if b.Stop() || c.waiting() != 0 {
		t.Errorf("Stop of a fired timer reported it running (waiting %d)", c.waiting())
	}
	c.advance(t0.Add(3 * time.Second)) // a fires; Reset discards its value
	if a.Reset(time.Second) {
		t.Error("Reset of a fired timer reported it running")
	}
	select {
	case <-a.C():
		t.Fatal("stale value after Reset")
	default:
	}
	a.Reset(time.Second)
	if !a.Stop() || c.waiting() != 0 {
		t.Errorf("Stop of a running timer: waiting %d", c.waiting())
	}
	a.Reset(0)
	select {
	case <-a.C():
	default:
		t.Error("Reset(0) did not fire at once")
	}
	if !c.Now().Equal(t0.Add(3 * time.Second)) {
		t.Errorf("Now %v", c.Now())
	}
}

// The simulation runs the engine's shaper, stages included: with a
// warm-up, the first seconds admit far below the rate (the ramp starts at
// a tenth of it) and the rate is reached once the warm-up is over. (The
// shaper rebuilt by earlier versions of simulate left the warm-up out.)
func TestSimulateRunsTheEngineWarmUp(t *testing.T) {
	c, err := config.Parse([]byte("source: {type: nats, nats: {stream: S}}\nsink: {type: stdout}\nshaping: {rate: 100/s, burst: 10, warmup: 60s, queue_size: 100000}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "t.csv")
	if err := os.WriteFile(path, []byte("seconds,count\n0,24000\n120,0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tr, err := readTrace(path)
	if err != nil {
		t.Fatal(err)
	}
	res, err := simulate(c, tr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if res.admitted != 24000 || !res.envelopeOK {
		t.Fatalf("admitted %d, envelope %v", res.admitted, res.envelopeOK)
	}
	first := float64(res.buckets[0].admitted) / 10
	after := float64(res.buckets[7].admitted) / 10 // 70-80 s
	if first > 50 || after < 99 || after > 101 {
		t.Errorf("admitted %.1f/s in the first 10 s (want the ramp, <= 50/s) and %.1f/s at 70-80 s (want 100/s)", first, after)
	}
}
