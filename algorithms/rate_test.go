package algorithms

import (
	"errors"
	"math"
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
