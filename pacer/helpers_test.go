package pacer_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/pacertest"
)

// testBucket is a test-only GCRA limiter (rate 1/interval, burst) used to
// drive the shaper's quota and global stages; the engine's own token bucket
// comes from package algorithms.
type testBucket struct {
	mu       sync.Mutex
	interval time.Duration
	burst    int
	maxWait  time.Duration
	tat      time.Time
	refuseN  int // refuse the next refuseN calls with hint
	hint     time.Duration
}

func newTestBucket(perSecond float64, burst int, maxWait time.Duration) *testBucket {
	return &testBucket{interval: time.Duration(float64(time.Second) / perSecond), burst: burst, maxWait: maxWait}
}

// perSecond is the bucket's exact rate (its interval is whole nanoseconds).
func (b *testBucket) perSecond() float64 { return float64(time.Second) / float64(b.interval) }

func (b *testBucket) Reserve(now time.Time, n int) (time.Duration, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.refuseN > 0 {
		b.refuseN--
		return b.hint, false
	}
	tat := b.tat
	if tat.Before(now) {
		tat = now
	}
	newTat := tat.Add(time.Duration(n) * b.interval)
	wait := newTat.Add(-time.Duration(b.burst) * b.interval).Sub(now)
	if wait < 0 {
		wait = 0
	}
	if n > b.burst || wait > b.maxWait {
		return wait, false
	}
	b.tat = newTat
	return wait, true
}

func (b *testBucket) Cancel(now time.Time, n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tat = b.tat.Add(-time.Duration(n) * b.interval)
}

// recorder is a hook that records admission times and tracks the number of
// messages the engine holds.
type recorder struct {
	mu       sync.Mutex
	admitted []time.Time
	held     int
	maxHeld  int
	pauses   []bool
}

func (r *recorder) OnAdmitted(n int, _ time.Duration) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	for range n {
		r.admitted = append(r.admitted, now)
	}
}

func (r *recorder) OnConsumed(*pacer.Message) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.held++
	r.maxHeld = max(r.maxHeld, r.held)
}

func (r *recorder) OnSettled(*pacer.Message, pacer.Settlement) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.held--
}

func (r *recorder) OnPaused(p bool, _ pacer.PauseReason) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pauses = append(r.pauses, p)
}

func (r *recorder) times() []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := append([]time.Time(nil), r.admitted...)
	sort.Slice(out, func(i, j int) bool { return out[i].Before(out[j]) })
	return out
}

// checkEnvelope reports the first interval [t_i, t_j] holding more than
// perSecond*(t_j-t_i) + burst admissions (times sorted).
func checkEnvelope(times []time.Time, perSecond float64, burst int) error {
	for i := range times {
		for j := i; j < len(times); j++ {
			n := j - i + 1
			allowed := perSecond*times[j].Sub(times[i]).Seconds() + float64(burst)
			if float64(n) > allowed+1e-9 {
				return fmt.Errorf("%d admissions in [%v, %v] (%v) > %g*%v + %d = %.3f",
					n, times[i].Format("15:04:05.000000"), times[j].Format("15:04:05.000000"), times[j].Sub(times[i]), perSecond, times[j].Sub(times[i]), burst, allowed)
			}
		}
	}
	return nil
}

func TestCheckEnvelope(t *testing.T) {
	t0 := time.Unix(0, 0)
	ts := []time.Time{t0, t0, t0.Add(time.Second), t0.Add(time.Second)}
	if err := checkEnvelope(ts, 2, 2); err != nil {
		t.Errorf("within envelope: %v", err)
	}
	if err := checkEnvelope(ts, 2, 1); err == nil {
		t.Error("burst 1: want a violation")
	}
	if err := checkEnvelope(append(ts, t0.Add(time.Second)), 2, 2); err == nil {
		t.Error("3 in [1s,1s] with burst 2: want a violation")
	}
}

// ledgered is n test messages (pacertest.Messages) settled into a new
// ledger.
func ledgered(n int) ([]*pacer.Message, *pacertest.Ledger) {
	msgs := pacertest.Messages(n)
	led := pacertest.NewLedger()
	led.Attach(msgs)
	return msgs, led
}

// runEngine builds the engine of cfg (t fails if New refuses it) and runs
// it until ctx is done; Run's error arrives on the channel.
func runEngine(t testing.TB, ctx context.Context, cfg pacer.Config) (*pacer.Engine, <-chan error) {
	t.Helper()
	e, err := pacer.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- e.Run(ctx) }()
	return e, errc
}
