package breaker

import (
	"errors"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newTest(c Config) *Breaker {
	c.SetDefaults()
	if err := c.Validate(); err != nil {
		panic(err)
	}
	return New(c, 4)
}

// A run of Consecutive failures of one class trips it; a failure of
// another class or a delivery in between starts the run again.
func TestConsecutiveTrips(t *testing.T) {
	b := newTest(Config{Consecutive: 3, Window: 1000})
	boom := errors.New("401 Unauthorized")
	for i := range 2 {
		if open, tr := b.Fail(t0, "http 401", false, boom); open || tr != nil {
			t.Fatalf("failure %d: open %v trip %+v, want closed", i+1, open, tr)
		}
	}
	b.Succeed() // breaks the run
	b.Fail(t0, "http 401", false, boom)
	b.Fail(t0, "http 500", false, boom) // another class: a new run
	b.Fail(t0, "http 401", false, boom)
	b.Fail(t0, "http 401", false, boom)
	if b.IsOpen() {
		t.Fatal("open after runs of 1, 1 and 2")
	}
	open, tr := b.Fail(t0, "http 401", false, boom)
	// Count is the larger of the run (3) and the class's failures in the
	// window (6).
	if !open || tr == nil || tr.Class != "http 401" || tr.Count != 6 || tr.Systemic {
		t.Fatalf("third in a row: open %v trip %+v, want open by http 401 with count 6", open, tr)
	}
	if want := t0.Add(time.Second); !tr.NextProbe.Equal(want) {
		t.Errorf("first probe at %v, want %v (ProbeInitial)", tr.NextProbe, want)
	}
	if open, tr := b.Fail(t0, "http 401", false, boom); !open || tr != nil {
		t.Errorf("a failure while open: open %v trip %+v, want open and no new trip", open, tr)
	}
	st := b.Status()
	if !st.Open || st.Class != "http 401" || st.Trips != 1 || st.Cause != "401 Unauthorized" {
		t.Errorf("status %+v", st)
	}
}

// A systemic class trips it at once, whether the sink says so or the
// configuration lists it; an unclassified failure never counts.
func TestSystemicTripsAtOnce(t *testing.T) {
	b := newTest(Config{Systemic: []string{"sqlstate 42P01"}})
	if open, _ := b.Fail(t0, "", true, errors.New("?")); open {
		t.Fatal("an unclassified failure tripped it")
	}
	open, tr := b.Fail(t0, "sqlstate 42P01", false, errors.New("missing table"))
	if !open || tr == nil || !tr.Systemic {
		t.Fatalf("a configured systemic class: open %v trip %+v", open, tr)
	}
	if resume, _ := b.Walk(); resume {
		t.Error("a systemic trip resumes the source for newer messages")
	}
	c := newTest(Config{})
	if open, tr := c.Fail(t0, "http 401", true, errors.New("401")); !open || !tr.Systemic {
		t.Errorf("a class the sink calls systemic: open %v trip %+v", open, tr)
	}
}

// Failures of one class making up Ratio of the last Window outcomes trip
// it, however they are interleaved with deliveries.
func TestWindowRatioTrips(t *testing.T) {
	b := newTest(Config{Consecutive: 100, Window: 10, Ratio: 0.5})
	for i := range 5 {
		b.Succeed()
		open, tr := b.Fail(t0, "http 400", false, errors.New("bad"))
		if open != (i == 4) {
			t.Fatalf("after %d failures in %d outcomes: open %v, want open at 5 in 10", i+1, 2*(i+1), open)
		}
		if open && tr.Count != 5 {
			t.Errorf("trip count %d, want 5", tr.Count)
		}
	}
}

// The first probe comes ProbeInitial after the trip; each failed probe
// that escalates doubles the wait, up to ProbeMax, and one that does not
// waits ProbeInitial; the first delivery closes the breaker and wakes the
// waiters.
func TestProbesAndClose(t *testing.T) {
	b := newTest(Config{Consecutive: 1, ProbeInitial: time.Second, ProbeMax: 5 * time.Second})
	b.Fail(t0, "x", false, errors.New("x"))
	open, at, wake := b.ProbeAt()
	if !open || !at.Equal(t0.Add(time.Second)) || wake == nil {
		t.Fatalf("ProbeAt = %v %v %v", open, at, wake)
	}
	now := t0
	for i, want := range []time.Duration{2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second, 5 * time.Second} {
		if got := b.ProbeFailed(now, true).Sub(now); got != want {
			t.Errorf("escalating probe %d waits %v, want %v", i+1, got, want)
		}
	}
	if got := b.ProbeFailed(now, false).Sub(now); got != time.Second {
		t.Errorf("a newer message's failed probe waits %v, want ProbeInitial", got)
	}
	closed, probes, since, class := b.Succeed()
	if !closed || probes != 6 || !since.Equal(t0) || class != "x" {
		t.Errorf("Succeed = %v %d %v %q, want closed after 6 probes, open since t0 by x", closed, probes, since, class)
	}
	select {
	case <-wake:
	default:
		t.Error("closing did not wake the waiters")
	}
	if open, _, _ := b.ProbeAt(); open {
		t.Error("still open")
	}
}

// A suspect handed back that fails again after a delivery succeeded is
// proven bad (once); with no delivery since, it is not. At most maxHeld
// are remembered.
func TestHandedBackProvenBad(t *testing.T) {
	b := newTest(Config{Consecutive: 1})
	b.Fail(t0, "x", false, errors.New("x"))
	b.HandBack("a", b.Successes())
	if b.ProvenBad("a") {
		t.Fatal("proven bad while the breaker is open")
	}
	b.Succeed()
	if !b.ProvenBad("a") || b.ProvenBad("a") {
		t.Error("ProvenBad after a success: want true once")
	}
	b.HandBack("b", b.Successes())
	if b.ProvenBad("b") {
		t.Error("proven bad with no success since it was held")
	}
	for _, id := range []string{"c", "d", "e", "f"} {
		b.HandBack(id, 0)
	}
	if b.ProvenBad("b") {
		t.Error("a sixth handed back did not push out the oldest (maxHeld 4)")
	}
	if !b.ProvenBad("f") {
		t.Error("the newest handed back was forgotten")
	}
}

// Reset closes an open breaker on the operator's word and forgets the run,
// so the next trip needs new evidence.
func TestReset(t *testing.T) {
	b := newTest(Config{Consecutive: 2})
	b.Fail(t0, "x", false, errors.New("x"))
	if was, _, _ := b.Reset(); was {
		t.Error("Reset of a closed breaker reported it open")
	}
	if open, _ := b.Fail(t0, "x", false, errors.New("x")); open {
		t.Error("the run survived Reset")
	}
	b.Fail(t0, "x", false, errors.New("x"))
	was, class, since := b.Reset()
	if !was || class != "x" || !since.Equal(t0) || b.IsOpen() {
		t.Errorf("Reset = %v %q %v (open %v)", was, class, since, b.IsOpen())
	}
	if st := b.Status(); st.Resets != 1 || st.Trips != 1 {
		t.Errorf("status %+v, want 1 trip and 1 reset", st)
	}
}

func TestValidate(t *testing.T) {
	for _, c := range []Config{
		{Consecutive: -1, Window: 1, Ratio: 0.5, ProbeInitial: 1, ProbeMax: 1},
		{Consecutive: 1, Window: 1, Ratio: 1.5, ProbeInitial: 1, ProbeMax: 1},
		{Consecutive: 1, Window: 1, Ratio: 0.5, ProbeInitial: 2, ProbeMax: 1},
	} {
		if c.Validate() == nil {
			t.Errorf("Validate(%+v) = nil", c)
		}
	}
	if (&Config{Disabled: true, Ratio: 7}).Validate() != nil {
		t.Error("a disabled breaker's settings are checked")
	}
}
