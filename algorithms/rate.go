package algorithms

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"strconv"
	"strings"
	"time"
)

// ErrInvalidRate is wrapped by every error that rejects a rate.
var ErrInvalidRate = errors.New("algorithms: invalid rate")

// Rate is Count events per Per: an exact rational, so 3/s or 1/30d carry no
// rounding error. The zero value is not a valid rate; use Validate.
type Rate struct {
	Count int64         // events per Per; > 0
	Per   time.Duration // the period; > 0
}

// Limits on rates that the algorithms accept. Anything outside is refused by
// Validate with a clear error rather than overflowing integer arithmetic.
const (
	// MaxRatePerSecond is the fastest rate accepted: one event per nanosecond.
	MaxRatePerSecond = 1e9
	// MaxInterval is the slowest accepted spacing: one event per
	// 366 days.
	MaxInterval = 366 * 24 * time.Hour
)

// PerSecond returns a Rate of n events per second. Fractional rates are kept
// with microevent precision (n=0.5 is 1 per 2s exactly).
//
// A NaN, infinite, zero, negative or absurdly large n gives a Rate that
// Validate rejects (never a panic or a wrapped integer).
func PerSecond(n float64) Rate {
	if math.IsNaN(n) || n <= 0 || n > MaxRatePerSecond*10 {
		return Rate{Count: 0, Per: time.Second}
	}
	if n == math.Trunc(n) {
		return Rate{Count: int64(n), Per: time.Second}
	}
	// Scale to keep up to 6 decimal places.
	c := int64(math.Round(n * 1e6))
	if c == 0 {
		return Rate{Count: 0, Per: time.Second} // below a microevent per second
	}
	return Rate{Count: c, Per: 1e6 * time.Second}.reduce()
}

// Every returns a Rate of one event per interval.
func Every(interval time.Duration) Rate { return Rate{Count: 1, Per: interval} }

// Validate reports whether r is usable: positive, finite, not faster than
// MaxRatePerSecond and not slower than one event per MaxInterval.
func (r Rate) Validate() error {
	if r.Count <= 0 || r.Per <= 0 {
		return fmt.Errorf("%w: %d per %v (both must be > 0)", ErrInvalidRate, r.Count, r.Per)
	}
	// Exact integer comparisons: at most one event per nanosecond
	// (Count <= Per in ns), at least one per MaxInterval.
	if r.Count > int64(r.Per) {
		return fmt.Errorf("%w: %s is faster than %g/s", ErrInvalidRate, r, float64(MaxRatePerSecond))
	}
	if hi, lo := bits.Mul64(uint64(r.Count), uint64(MaxInterval)); hi == 0 && lo < uint64(r.Per) {
		return fmt.Errorf("%w: %s is slower than one per %v", ErrInvalidRate, r, MaxInterval)
	}
	return nil
}

// PerSecond returns the rate as events per second (for display and metrics;
// the algorithms never accumulate this float).
func (r Rate) PerSecond() float64 {
	if r.Per <= 0 {
		return 0
	}
	return float64(r.Count) * float64(time.Second) / float64(r.Per)
}

// Cmp compares r and o as rates, exactly (no float): -1 when r is slower,
// 0 when they are the same rate however written ({2, 6s} and {1, 3s}), +1
// when r is faster. A rate that is not positive (Count or Per <= 0) counts
// as zero events per second. Compare with Cmp, not with PerSecond: two
// floats of the same rate may differ in the last place.
func (r Rate) Cmp(o Rate) int {
	rz, oz := r.Count <= 0 || r.Per <= 0, o.Count <= 0 || o.Per <= 0
	switch {
	case rz && oz:
		return 0
	case rz:
		return -1
	case oz:
		return 1
	}
	// r.Count/r.Per vs o.Count/o.Per  <=>  r.Count*o.Per vs o.Count*r.Per
	ah, al := bits.Mul64(uint64(r.Count), uint64(o.Per))
	bh, bl := bits.Mul64(uint64(o.Count), uint64(r.Per))
	switch {
	case ah < bh || ah == bh && al < bl:
		return -1
	case ah > bh || ah == bh && al > bl:
		return 1
	}
	return 0
}

// Interval returns the spacing between events, rounded down to a nanosecond.
func (r Rate) Interval() time.Duration {
	if r.Count <= 0 {
		return 0
	}
	return r.Per / time.Duration(r.Count)
}

// String formats r as "N/unit", e.g. "100/s", "6000/m", "1/720h0m0s",
// exactly: ParseRate(r.String()) == r for every valid r.
func (r Rate) String() string {
	switch r.Per {
	case time.Second:
		return strconv.FormatInt(r.Count, 10) + "/s"
	case time.Minute:
		return strconv.FormatInt(r.Count, 10) + "/m"
	case time.Hour:
		return strconv.FormatInt(r.Count, 10) + "/h"
	case 24 * time.Hour:
		return strconv.FormatInt(r.Count, 10) + "/day"
	case 7 * 24 * time.Hour:
		return strconv.FormatInt(r.Count, 10) + "/week"
	case 30 * 24 * time.Hour:
		return strconv.FormatInt(r.Count, 10) + "/month"
	}
	return strconv.FormatInt(r.Count, 10) + "/" + r.Per.String()
}

func (r Rate) reduce() Rate {
	a, b := r.Count, int64(r.Per)
	for b != 0 {
		a, b = b, a%b
	}
	if a > 1 {
		r.Count /= a
		r.Per /= time.Duration(a)
	}
	return r
}

var rateUnits = map[string]time.Duration{
	"ns": time.Nanosecond, "us": time.Microsecond, "ms": time.Millisecond,
	"s": time.Second, "sec": time.Second, "second": time.Second,
	"m": time.Minute, "min": time.Minute, "minute": time.Minute,
	"h": time.Hour, "hour": time.Hour,
	"d": 24 * time.Hour, "day": 24 * time.Hour,
	// As rates, a week is 7 days and a month 30; a calendar quota
	// (CalendarWindow) with such a limit resets on Monday or the 1st.
	"w": 7 * 24 * time.Hour, "week": 7 * 24 * time.Hour,
	"month": 30 * 24 * time.Hour,
}

// ParseRate parses human rates: "100/s", "6000/m", "1M/day", "1M/month" (30 days), "2.5k/h",
// "1/30s", "0.5/s". Suffixes k, M, G multiply the count by 1e3, 1e6, 1e9.
// The result is validated.
func ParseRate(s string) (Rate, error) {
	orig := s
	s = strings.TrimSpace(s)
	num, per, ok := strings.Cut(s, "/")
	if !ok {
		return Rate{}, fmt.Errorf("%w: %q: want COUNT/UNIT such as 100/s, 6000/m or 1M/day", ErrInvalidRate, orig)
	}
	num, per = strings.TrimSpace(num), strings.TrimSpace(per)
	mult := 1
	if n := len(num); n > 0 {
		switch num[n-1] {
		case 'k', 'K':
			mult, num = 1e3, num[:n-1]
		case 'M':
			mult, num = 1e6, num[:n-1]
		case 'G':
			mult, num = 1e9, num[:n-1]
		}
	}
	count, ok := parseDecimal(num)
	if !ok || count.Sign() <= 0 {
		return Rate{}, fmt.Errorf("%w: %q: count must be a positive decimal number", ErrInvalidRate, orig)
	}
	count.Mul(count, new(big.Rat).SetInt64(int64(mult)))
	unit, ok := rateUnits[per]
	if !ok {
		// "30s", "1h30m": a Go duration after the slash.
		d, derr := time.ParseDuration(per)
		if derr != nil || d <= 0 {
			return Rate{}, fmt.Errorf("%w: %q: unknown unit %q (use s, m, h, day or a duration like 30s)", ErrInvalidRate, orig, per)
		}
		unit = d
	}
	// count/unit = Num / (Denom*unit), exactly. A whole count keeps its unit
	// ("100/s" is {100, 1s}); a fraction is reduced ("1.5/day" is {3, 48h}).
	if count.IsInt() {
		if !count.Num().IsInt64() {
			return Rate{}, fmt.Errorf("%w: %q: out of range", ErrInvalidRate, orig)
		}
		r := Rate{Count: count.Num().Int64(), Per: unit}
		if err := r.Validate(); err != nil {
			return Rate{}, fmt.Errorf("%w (parsing %q)", err, orig)
		}
		return r, nil
	}
	perNs := new(big.Int).Mul(count.Denom(), big.NewInt(int64(unit)))
	num64 := new(big.Int).Set(count.Num())
	if g := new(big.Int).GCD(nil, nil, num64, perNs); g.Cmp(big.NewInt(1)) > 0 {
		num64.Quo(num64, g)
		perNs.Quo(perNs, g)
	}
	if !num64.IsInt64() || !perNs.IsInt64() {
		return Rate{}, fmt.Errorf("%w: %q: out of range", ErrInvalidRate, orig)
	}
	r := Rate{Count: num64.Int64(), Per: time.Duration(perNs.Int64())}
	if err := r.Validate(); err != nil {
		return Rate{}, fmt.Errorf("%w (parsing %q)", err, orig)
	}
	return r, nil
}

// parseDecimal parses a plain decimal ("100", "2.5", ".5", "1e3") exactly.
// It refuses fractions, hex and anything longer than 64 bytes.
func parseDecimal(s string) (*big.Rat, bool) {
	if s == "" || len(s) > 64 {
		return nil, false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
			return nil, false
		}
	}
	// Bound the exponent so SetString cannot build a huge number.
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(s[i+1:])
		if err != nil || e > 30 || e < -30 {
			return nil, false
		}
	}
	x, ok := new(big.Rat).SetString(s)
	return x, ok
}
