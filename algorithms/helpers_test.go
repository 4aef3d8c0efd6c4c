package algorithms

import (
	"math/bits"
	"testing"
	"time"
)

// A fixed timeline, as in x/time/rate's tests.
var (
	t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t1 = t0.Add(1 * time.Second)
	t2 = t0.Add(2 * time.Second)
	t3 = t0.Add(3 * time.Second)
	t4 = t0.Add(4 * time.Second)
	t5 = t0.Add(5 * time.Second)
	t9 = t0.Add(9 * time.Second)
)

type step1 struct {
	t    time.Time
	n    int
	wait time.Duration
	ok   bool
}

// run drives lim through steps, failing on the first mismatch.
func run(t *testing.T, lim Limiter, steps []step1) {
	t.Helper()
	for i, s := range steps {
		w, ok := lim.Reserve(s.t, s.n)
		if w != s.wait || ok != s.ok {
			t.Errorf("step %d: lim.Reserve(t0+%v, %d) = (%v, %v) want (%v, %v)", i, s.t.Sub(t0), s.n, w, ok, s.wait, s.ok)
		}
	}
}

// use is one granted reservation: n permits used at time at.
type use struct {
	at time.Duration // since t0
	n  int
}

// checkEnvelope verifies that for every interval [a, b] whose ends are use
// times, the permits used number at most r*(b-a+slack) + burst, exactly.
// slack is envSlack(r): 0 when the permit interval is a whole number of
// nanoseconds, else 1ns, because a grant's exact instant is rational and its
// wait is rounded up to a whole nanosecond.
func checkEnvelope(t *testing.T, uses []use, r Rate, burst int64) {
	t.Helper()
	sortUses(uses)
	for i := range uses {
		sum := int64(0)
		for j := i; j < len(uses); j++ {
			sum += int64(uses[j].n)
			if sum <= burst {
				continue
			}
			// sum <= Count*(b-a+slack)/Per + burst  <=>  (sum-burst)*Per <= Count*(b-a+slack)
			lh, ll := bits.Mul64(uint64(sum-burst), uint64(r.Per))
			rh, rl := bits.Mul64(uint64(r.Count), uint64(uses[j].at-uses[i].at+envSlack(r)))
			if lh > rh || (lh == rh && ll > rl) {
				t.Fatalf("envelope broken: %d permits used in [%v, %v] at %s burst %d", sum, uses[i].at, uses[j].at, r, burst)
			}
		}
	}
}

// checkSubWindows checks that every nb consecutive sub-windows (counts: the
// permits granted per sub-window index) hold at most limit.
func checkSubWindows(t *testing.T, what string, counts map[int64]int, nb, limit int) {
	t.Helper()
	for k := range counts {
		sum := 0
		for j := k; j < k+int64(nb); j++ {
			sum += counts[j]
		}
		if sum > limit {
			t.Fatalf("%s: %d sub-windows from %d hold %d > %d", what, nb, k, sum, limit)
		}
	}
}

func sortUses(u []use) {
	// insertion sort is fine for test sizes and keeps ties in order
	for i := 1; i < len(u); i++ {
		for j := i; j > 0 && u[j].at < u[j-1].at; j-- {
			u[j], u[j-1] = u[j-1], u[j]
		}
	}
}

func mustRate(t testing.TB, s string) Rate {
	t.Helper()
	r, err := ParseRate(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func envSlack(r Rate) time.Duration {
	if newStep(r).num == 0 {
		return 0
	}
	return 1
}
