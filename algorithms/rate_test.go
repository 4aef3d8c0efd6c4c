package algorithms

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func TestParseRate(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Rate
	}{
		{"100/s", Rate{100, time.Second}},
		{" 100 / s ", Rate{100, time.Second}},
		{"6000/m", Rate{6000, time.Minute}},
		{"6000/min", Rate{6000, time.Minute}},
		{"1M/day", Rate{1_000_000, 24 * time.Hour}},
		{"2.5k/h", Rate{2500, time.Hour}},
		{"1/30s", Rate{1, 30 * time.Second}},
		{"0.5/s", Rate{1, 2 * time.Second}},
		{"1.5/day", Rate{1, 16 * time.Hour}},
		{"0.333/s", Rate{333, 1000 * time.Second}},
		{"1/720h", Rate{1, 720 * time.Hour}},
		{"1G/s", Rate{1_000_000_000, time.Second}},
		{"3/1h30m", Rate{3, 90 * time.Minute}},
		{"1e3/s", Rate{1000, time.Second}},
		{"10/ms", Rate{10, time.Millisecond}},
	} {
		got, err := ParseRate(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseRate(%q) = %v, %v want %v", tt.in, got, err, tt.want)
		}
	}
}

func TestParseRateErrors(t *testing.T) {
	for _, in := range []string{
		"", "100", "/s", "100/", "abc/s", "-1/s", "0/s", "NaN/s", "Inf/s", "1/x",
		"1/-1s", "2G/s", "1/367d", "1/0s", "0x10/s", "1/3/s", "1e400/s", "1e-400/s",
		"99999999999999999999999/s", "1.0000000000000000000000001/ns",
	} {
		if r, err := ParseRate(in); err == nil || !errors.Is(err, ErrInvalidRate) {
			t.Errorf("ParseRate(%q) = %v, %v want ErrInvalidRate", in, r, err)
		}
	}
}

func TestRateValidate(t *testing.T) {
	for _, tt := range []struct {
		r  Rate
		ok bool
	}{
		{Rate{1, time.Second}, true},
		{Rate{1_000_000_000, time.Second}, true},
		{Rate{1_000_000_001, time.Second}, false},
		{Rate{1, MaxInterval}, true},
		{Rate{1, MaxInterval + 1}, false},
		{Rate{0, time.Second}, false},
		{Rate{1, 0}, false},
		{Rate{-1, time.Second}, false},
		{Rate{}, false},
		{PerSecond(math.NaN()), false},
		{PerSecond(math.Inf(1)), false},
		{PerSecond(-3), false},
		{PerSecond(1e12), false},
		{PerSecond(1e300), false},
		{PerSecond(1e-9), false},
		{PerSecond(0.5), true},
	} {
		err := tt.r.Validate()
		if (err == nil) != tt.ok {
			t.Errorf("%#v.Validate() = %v want ok=%v", tt.r, err, tt.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalidRate) {
			t.Errorf("%#v.Validate() = %v does not wrap ErrInvalidRate", tt.r, err)
		}
	}
}

func TestRateHelpers(t *testing.T) {
	if r := PerSecond(0.5); r != (Rate{1, 2 * time.Second}) {
		t.Errorf("PerSecond(0.5) = %#v", r)
	}
	if r := PerSecond(250); r != (Rate{250, time.Second}) {
		t.Errorf("PerSecond(250) = %#v", r)
	}
	if r := Every(40 * time.Millisecond); r != (Rate{1, 40 * time.Millisecond}) {
		t.Errorf("Every(40ms) = %#v", r)
	}
	if got := (Rate{3, time.Second}).Interval(); got != 333333333 {
		t.Errorf("Interval = %v", got)
	}
	if got := (Rate{6000, time.Minute}).PerSecond(); got != 100 {
		t.Errorf("PerSecond = %v", got)
	}
	for _, tt := range []struct {
		r    Rate
		want string
	}{
		{Rate{100, time.Second}, "100/s"},
		{Rate{6000, time.Minute}, "6000/m"},
		{Rate{5, time.Hour}, "5/h"},
		{Rate{1000000, 24 * time.Hour}, "1000000/day"},
		{Rate{1, 2 * time.Second}, "1/2s"},
		{Rate{1, 720 * time.Hour}, "1/month"}, {Rate{1, 168 * time.Hour}, "1/week"}, {Rate{1, 719 * time.Hour}, "1/719h0m0s"},
	} {
		if got := tt.r.String(); got != tt.want {
			t.Errorf("%#v.String() = %q want %q", tt.r, got, tt.want)
		}
	}
}

// FuzzParseRate: never panics; a parsed rate is valid, and its String parses
// back to the same rate.
func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"100/s", "6000/m", "1M/day", "2.5k/h", "1/30s", "0.5/s", "1.5/day", "1e3/s", "1/720h", "3/1h30m", "1/0s", "-1/s", "9e30/ns"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRate(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidRate) {
				t.Fatalf("ParseRate(%q) error %v does not wrap ErrInvalidRate", s, err)
			}
			return
		}
		if err := r.Validate(); err != nil {
			t.Fatalf("ParseRate(%q) = %#v, invalid: %v", s, r, err)
		}
		back, err := ParseRate(r.String())
		if err != nil || back != r {
			t.Fatalf("ParseRate(%q) = %#v; ParseRate(%q) = %#v, %v", s, r, r.String(), back, err)
		}
	})
}

// Rate.Cmp is exact where PerSecond's floats are not: 7 per 9ns written
// with a common factor of 659*1000003 is the same rate, though its float
// is one place larger.
func TestRateCmp(t *testing.T) {
	k := int64(659 * 1000003)
	a, b := Rate{Count: 7, Per: 9}, Rate{Count: 7 * k, Per: time.Duration(9 * k)}
	if b.PerSecond() <= a.PerSecond() {
		t.Fatalf("the floats agree (%v, %v): the case no longer shows the rounding", a.PerSecond(), b.PerSecond())
	}
	cases := []struct {
		r, o Rate
		want int
	}{
		{a, b, 0}, {b, a, 0},
		{Rate{2, 6 * time.Second}, Rate{1, 3 * time.Second}, 0},
		{Rate{2, 3 * time.Second}, Rate{1, time.Second}, -1},
		{Rate{1, time.Second}, Rate{2, 3 * time.Second}, 1},
		{Rate{1 << 40, time.Duration(1<<62 - 1)}, Rate{1 << 40, time.Duration(1<<62 - 2)}, -1},
		{Rate{}, Rate{}, 0}, {Rate{}, Rate{1, time.Hour}, -1}, {Rate{1, time.Hour}, Rate{Count: 5}, 1},
	}
	for _, c := range cases {
		if got := c.r.Cmp(c.o); got != c.want {
			t.Errorf("%v.Cmp(%v) = %d want %d", c.r, c.o, got, c.want)
		}
	}
	// Property: Cmp agrees with exact rational comparison (fixed seed).
	rng := rand.New(rand.NewPCG(21, 22))
	for i := 0; i < 10000; i++ {
		r := Rate{Count: 1 + rng.Int64N(1<<40), Per: time.Duration(1 + rng.Int64N(1<<50))}
		o := Rate{Count: 1 + rng.Int64N(1<<40), Per: time.Duration(1 + rng.Int64N(1<<50))}
		if rng.IntN(4) == 0 {
			m := 1 + rng.Int64N(1000)
			o = Rate{Count: r.Count * m, Per: r.Per * time.Duration(m)}
		}
		want := spanOf(o, 1).Cmp(spanOf(r, 1)) // a shorter span per event is a faster rate
		if got := r.Cmp(o); got != want {
			t.Fatalf("%v.Cmp(%v) = %d want %d", r, o, got, want)
		}
	}
}
