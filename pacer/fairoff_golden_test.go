package pacer_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/pacertest"
)

// fairOffTrace runs a fixed scenario with fairness off (1,000 messages of
// 7 keys, 1 in flight, 200/s burst 5, a seeded sink with 503s and random
// latencies) on the fake clock and returns every delivery attempt as
// "offset id attempt outcome", sorted.
func fairOffTrace(t *testing.T) string {
	var out string
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		msgs := pacertest.Messages(1000, "a", "b", "c", "d", "e", "f", "g")
		sink := &pacertest.Sink{Behave: func(m *pacer.Message) (pacer.Result, pacer.Feedback, time.Duration) {
			h := fnv.New64a()
			h.Write([]byte(m.ID))
			r := rand.New(rand.NewPCG(5, h.Sum64()*1_000_003+uint64(m.Attempt)))
			lat := time.Duration(1+r.IntN(40)) * time.Millisecond
			if r.IntN(8) == 0 {
				return pacer.Result{Outcome: pacer.Retry, Err: errors.New("503")}, pacer.Feedback{Status: 503}, lat
			}
			return pacer.Result{Outcome: pacer.Delivered}, pacer.Feedback{Status: 200}, lat
		}}
		e, err := pacer.New(pacer.Config{Source: pacertest.NewSource(msgs), Sink: sink, MaxInFlight: 1, QueueSize: 64,
			Retry:   pacer.RetryConfig{Seed: 9, MaxAttempts: pacer.None, Initial: 20 * time.Millisecond},
			Shaping: pacer.Shaping{Rate: algorithms.PerSecond(200), Burst: 5}})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		var lines []string
		for _, d := range sink.Deliveries() {
			lines = append(lines, fmt.Sprintf("%012d %s %d %d", d.At.Sub(start).Microseconds(), d.ID, d.Attempt, d.Outcome))
		}
		slices.Sort(lines)
		out = strings.Join(lines, "\n") + "\n"
	})
	return out
}

// TestFairnessOffUnchanged: with Fairness and Priority nil the engine's
// deliveries are byte for byte those of the engine before fairness existed
// (testdata/fairoff.sha256 was produced by this test on commit 738c946's
// parent, and produced again, fairness still off, when the retry backoff
// became equal jitter: the trace's retries come at other times;
// PACER_GOLDEN=1 prints the current digest).
func TestFairnessOffUnchanged(t *testing.T) {
	trace := fairOffTrace(t)
	got := fmt.Sprintf("%x", sha256.Sum256([]byte(trace)))
	if os.Getenv("PACER_GOLDEN") != "" {
		t.Logf("digest %s over %d attempts", got, strings.Count(trace, "\n"))
	}
	want, err := os.ReadFile("testdata/fairoff.sha256")
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(want)) != got {
		t.Fatalf("fairness off: the delivery trace changed (sha256 %s, want %s): fairness off must keep the engine's behaviour", got, strings.TrimSpace(string(want)))
	}
}
