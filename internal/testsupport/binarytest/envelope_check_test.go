package binarytest

import (
	"os"
	"testing"

	"github.com/pacer-dev/pacer/internal/app/config"
	"github.com/pacer-dev/pacer/internal/app/testapi"
)

// checkAPIEnvelope checks the envelope where it matters, at the API: the
// requests api accepted or answered with 429 stay within r(t2-t1)+b and,
// with a peak, p(t2-t1)+batch, for the shaping configured in cfgPath (the
// configured rate is the ceiling adaptive control and reloads stay under).
// The bound allows 1 message plus what 50 ms of arrival jitter carries at
// the larger rate (a loaded machine); PACER_WIRE_STRICT=1 checks 1 message.
func checkAPIEnvelope(t *testing.T, api *testapi.Server, cfgPath string) {
	t.Helper()
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatalf("checkAPIEnvelope: %v", err)
	}
	sh := cfg.Shaping
	checkEnvelopeAt(t, api, sh.Rate.PerSecond(), float64(sh.EffectiveBurst()), sh.Peak.PerSecond(), float64(max(cfg.Batching.Size, 1)))
}

// checkEnvelopeAt is checkAPIEnvelope for a given rate, burst, peak (0:
// none) and batch size.
func checkEnvelopeAt(t *testing.T, api *testapi.Server, rate, burst, peak, batch float64) {
	t.Helper()
	checkEnvelopeSlack(t, api, rate, burst, peak, batch, 1+0.05*max(rate, peak))
}

// checkEnvelopeSlack is checkEnvelopeAt with the jitter allowance given
// (PACER_WIRE_STRICT=1 still makes it 1).
func checkEnvelopeSlack(t *testing.T, api *testapi.Server, rate, burst, peak, batch, slack float64) {
	t.Helper()
	if os.Getenv("PACER_WIRE_STRICT") == "1" {
		slack = 1
	}
	ts := append(api.Arrivals(), api.Throttled()...)
	tb := testapi.EnvelopeExcess(ts, rate, burst)
	t.Logf("at the API: %d requests; over r(t2-t1)+b (%g/s, %g): %v", len(ts), rate, burst, tb)
	if tb.Messages > slack {
		t.Errorf("the API saw %.2f messages over r(t2-t1)+b (allowed %.2f): %v", tb.Messages, slack, tb)
	}
	if peak > 0 {
		pk := testapi.EnvelopeExcess(ts, peak, batch)
		t.Logf("over p(t2-t1)+%g (%g/s): %v", batch, peak, pk)
		if pk.Messages > slack {
			t.Errorf("the API saw %.2f messages over p(t2-t1)+%g (allowed %.2f): %v", pk.Messages, batch, slack, pk)
		}
	}
}
