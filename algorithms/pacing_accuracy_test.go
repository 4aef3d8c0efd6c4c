package algorithms

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/ratelimit"
	xrate "golang.org/x/time/rate"
)

// paceRun is a small real-time pacing runner over a Limiter: it reserves
// each event's departure (fixed at reservation time, so a late wake-up never
// shifts the schedule), sleeps until it, and when the sleeper wakes late,
// releases every event already due as a batch. The limiter's own bound
// (a LeakyPacer's 1+Slack) caps that batch, so the envelope holds.
func paceRun(lim Limiter, events int, emit func(time.Time)) {
	for i := 0; i < events; {
		now := time.Now()
		w, ok := lim.Reserve(now, 1)
		if !ok {
			time.Sleep(max(w, time.Microsecond))
			continue
		}
		if w > 0 {
			time.Sleep(w)
			now = time.Now()
		}
		emit(now)
		i++
	}
}

type paceResult struct {
	name          string
	asked         float64
	achieved      float64
	errPct        float64
	p99SpacingErr time.Duration
	maxBatch      int
	skipped       string // schedule slots given up after stalls longer than the slack (ours only)
}

func measure(name string, rate float64, times []time.Time) paceResult {
	n := len(times)
	elapsed := times[n-1].Sub(times[0])
	achieved := float64(n-1) / elapsed.Seconds()
	iv := time.Duration(float64(time.Second) / rate)
	errs := make([]time.Duration, 0, n-1)
	batch, maxBatch := 1, 1
	for i := 1; i < n; i++ {
		g := times[i].Sub(times[i-1])
		d := g - iv
		if d < 0 {
			d = -d
		}
		errs = append(errs, d)
		if g < iv/2 {
			batch++
			maxBatch = max(maxBatch, batch)
		} else {
			batch = 1
		}
	}
	slices.Sort(errs)
	return paceResult{
		name: name, asked: rate, achieved: achieved,
		errPct:        100 * math.Abs(achieved-rate) / rate,
		p99SpacingErr: errs[len(errs)*99/100],
		maxBatch:      maxBatch,
	}
}

// TestPacingAccuracy paces events in real time at 1k, 10k, 50k and 100k/s
// for ~2s each (peers stop after 2.5s) through our LeakyPacer runner, uber's
// Take and x/time/rate's Wait, and prints a table. It sleeps and takes ~25s,
// so it runs only with
// PACER_PACING_ACCURACY=1:
//
//	PACER_PACING_ACCURACY=1 go test -run PacingAccuracy -v ./algorithms
//
// PACER_PACING_SLACK (a duration, default 5ms) sets the pacer's catch-up
// slack: the most events released at once after a late wake-up.
func TestPacingAccuracy(t *testing.T) {
	if os.Getenv("PACER_PACING_ACCURACY") != "1" {
		t.Skip("real-time pacing accuracy run: set PACER_PACING_ACCURACY=1 (takes ~25s, sleeps by design)")
	}
	secs := 2.0
	slackDur := 5 * time.Millisecond
	if v := os.Getenv("PACER_PACING_SLACK"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("PACER_PACING_SLACK: %v", err)
		}
		slackDur = d
	}
	var rows []paceResult
	for _, rate := range []float64{1_000, 10_000, 50_000, 100_000} {
		n := int(rate * secs)
		times := make([]time.Time, 0, n)
		emit := func(t time.Time) { times = append(times, t) }

		// Ours: a fixed schedule with a slack of max(10 events, slackDur) for
		// late wake-ups (uber's default slack is 10 events).
		slack := max(int(rate*slackDur.Seconds()), 10)
		p, err := NewLeakyPacer(LeakyPacerConfig{Rate: PerSecond(rate), Capacity: 2, Slack: slack}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		paceRun(p, n, emit)
		res := measure(fmt.Sprintf("pacer LeakyPacer (slack %d)", slack), rate, times)
		// The schedule's end, in slots, minus the events sent: the slots
		// skipped because a stall outlasted the slack.
		res.skipped = fmt.Sprint(int64(math.Round(float64(p.next.ns)*rate/1e9)) - int64(n))
		rows = append(rows, res)

		times = times[:0]
		u := ratelimit.New(int(rate))
		deadline := time.Now().Add(time.Duration(secs * 1.25 * float64(time.Second)))
		for i := 0; i < n && time.Now().Before(deadline); i++ {
			u.Take()
			emit(time.Now())
		}
		rows = append(rows, measure("uber ratelimit Take", rate, times))

		times = times[:0]
		x := xrate.NewLimiter(xrate.Limit(rate), 10)
		ctx := context.Background()
		deadline = time.Now().Add(time.Duration(secs * 1.25 * float64(time.Second)))
		for i := 0; i < n && time.Now().Before(deadline); i++ {
			if err := x.Wait(ctx); err != nil {
				t.Fatal(err)
			}
			emit(time.Now())
		}
		rows = append(rows, measure("x/time/rate Wait (burst 10)", rate, times))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n| limiter | asked/s | achieved/s | rate error %% | p99 spacing error | max batch | slots skipped |\n|---|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %.0f | %.0f | %.3f | %v | %d | %s |\n", r.name, r.asked, r.achieved, r.errPct, r.p99SpacingErr, r.maxBatch, r.skipped)
	}
	t.Log(b.String())
}
