package httpsink

import (
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/app/testapi"
	"github.com/pacer-dev/pacer/internal/testsupport/testkit"
	"github.com/pacer-dev/pacer/pacer"
)

// TestSinkReadsEveryDialect delivers through the sink to testapi speaking
// each dialect, on a fake clock at an arbitrary phase of its 1 s window
// (t0 + 300 ms): the answers that pass and the 429 after the quota give
// the engine what the dialect says: the budget, when the window resets
// and when to come back.
func TestSinkReadsEveryDialect(t *testing.T) {
	start := t0.Add(300 * time.Millisecond)
	end := t0.Add(time.Second) // the wall-clock window's end
	tests := []struct {
		d          testapi.Dialect
		dialect    string        // RateLimitInfo.Dialect; "" no budget at all
		okLeft     int64         // Remaining after the first of 5 (-1 unknown)
		reset      time.Duration // on the 429: until the window resets (0 unknown)
		retryAfter time.Duration // on the 429: Result.RetryAfter
	}{
		{testapi.DialectGitHub, DialectX, 4, 700 * time.Millisecond, 700 * time.Millisecond},
		{testapi.DialectDiscord, DialectDiscord, 4, 700 * time.Millisecond, time.Second},
		{testapi.DialectIETF, DialectIETF, 4, time.Second, time.Second},
		{testapi.DialectIETFTrio, DialectIETFDraft, 4, time.Second, time.Second},
		{testapi.DialectRetryAfterDate, "", -1, 0, 700 * time.Millisecond},
		{testapi.Dialect429Only, "", -1, 0, 0},
		{testapi.DialectPenaltyBox, "", -1, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.d.String(), func(t *testing.T) {
			c := testkit.NewClock(start)
			rate := 5.0
			api := newAPI(t, testapi.Config{Rate: rate, Burst: 5, Dialect: tt.d, Now: c.Now})
			s := newSink(t, Config{URL: api.URL(), Now: c.Now})
			var fb pacer.Feedback
			for i := range 5 {
				var r pacer.Result
				r, fb = deliver1(s, msg("k", "v"))
				if r.Outcome != pacer.Delivered {
					t.Fatalf("request %d: %v %v, want delivered", i+1, r.Outcome, r.Err)
				}
				if i == 0 {
					left := int64(-1)
					if fb.RateLimit != nil {
						left = fb.RateLimit.Remaining
					}
					if left != tt.okLeft {
						t.Errorf("first answer: Remaining %d want %d (%+v)", left, tt.okLeft, fb.RateLimit)
					}
				}
			}
			r, fb := deliver1(s, msg("k", "v"))
			if r.Outcome != pacer.Retry || !fb.Throttled || fb.Status != 429 {
				t.Fatalf("6th request: %v, feedback %+v: want Retry on a 429", r.Outcome, fb)
			}
			if r.RetryAfter != tt.retryAfter {
				t.Errorf("6th request: RetryAfter %v want %v", r.RetryAfter, tt.retryAfter)
			}
			rl := fb.RateLimit
			switch {
			case tt.dialect == "" && rl != nil:
				t.Errorf("429 feedback has a budget %+v, want none", rl)
			case tt.dialect != "" && rl == nil:
				t.Fatalf("429 feedback has no budget, want %s", tt.dialect)
			case tt.dialect != "":
				if rl.Dialect != tt.dialect || rl.Remaining != 0 || rl.Limit != 5 || rl.Warning != "" {
					t.Errorf("429 budget %+v: want dialect %s, 0 of 5 left, no warning", rl, tt.dialect)
				}
				if got := resetOf(rl, c.Now()); got != tt.reset {
					t.Errorf("429 budget %+v: resets in %v want %v (the window ends at %v)", rl, got, tt.reset, end)
				}
			}
		})
	}
}

// TestSinkReadsShopify: a leaky bucket's call limit becomes a budget the
// engine can pace to (the room left plus a second's leak, over a second),
// and its fractional Retry-After is honoured.
func TestSinkReadsShopify(t *testing.T) {
	c := testkit.NewClock(t0)
	api := newAPI(t, testapi.Config{Rate: 2, Dialect: testapi.DialectShopify, Now: c.Now})
	s := newSink(t, Config{URL: api.URL(), Now: c.Now})
	_, fb := deliver1(s, msg("k", "v"))
	want := pacer.RateLimitInfo{Limit: 40, Remaining: 41, Reset: time.Second, ResetAt: t0.Add(time.Second),
		Window: 20 * time.Second, Header: "X-Shopify-Shop-Api-Call-Limit: 1/40", Dialect: DialectShopify}
	if fb.RateLimit == nil || *fb.RateLimit != want {
		t.Fatalf("first answer: %+v want %+v", fb.RateLimit, want)
	}
	for range 39 {
		deliver1(s, msg("k", "v"))
	}
	c.Add(100 * time.Millisecond) // 0.2 leaked: 39.8 + 1 > 40
	r, fb := deliver1(s, msg("k", "v"))
	if r.Outcome != pacer.Retry || r.RetryAfter != 400*time.Millisecond {
		t.Errorf("full bucket: %v after %v, want Retry after 400ms (Retry-After: 0.4)", r.Outcome, r.RetryAfter)
	}
	if fb.RateLimit == nil || fb.RateLimit.Remaining != 2 {
		t.Errorf("full bucket: budget %+v, want 2 (a second's leak)", fb.RateLimit)
	}
}

func resetOf(rl *pacer.RateLimitInfo, now time.Time) time.Duration {
	if !rl.ResetAt.IsZero() {
		return rl.ResetAt.Sub(now)
	}
	return rl.Reset
}
