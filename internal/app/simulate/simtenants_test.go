package simulate

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/app/config"
)

// TestSimulateTenants replays the README's two tenants: with a stream per
// tenant, fairness keeps the steady tenant's p99 wait within a second
// while FIFO makes it wait behind the noisy tenant's queue; one stream
// blocks both ways (the head of the stream is the noisy tenant's); every
// message is admitted and the queue stays bounded.
func TestSimulateTenants(t *testing.T) {
	data, err := os.ReadFile("../../../configs/fair-tenants.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := config.Parse(data, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	ts, err := parseTenants([]string{"noisy=../../../testdata/traces/tenant-noisy.csv", "steady=../../../testdata/traces/tenant-steady.csv"})
	if err != nil {
		t.Fatal(err)
	}
	runs, err := simulateTenants(context.Background(), c, ts, 10*time.Second, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	p99 := map[string]float64{}
	for _, r := range runs {
		p99[r.mode] = r.all[1].quantile(0.99)
		if r.total[0] != 50_000 || r.total[1] != 3000 || r.maxHeld > c.Shaping.QueueSize {
			t.Errorf("%s: admitted %v, queue max %d", r.mode, r.total, r.maxHeld)
		}
	}
	if got := p99["fair, stream per tenant"]; got > 1 {
		t.Errorf("fair, stream per tenant: steady p99 %.3fs, want <= 1s", got)
	}
	if got := p99["fifo, stream per tenant"]; got < 5 {
		t.Errorf("fifo, stream per tenant: steady p99 %.3fs, want the wait behind the noisy queue (>= 5s)", got)
	}
	for _, m := range []string{"fifo, one stream", "fair, one stream"} {
		if got := p99[m]; got < 60 {
			t.Errorf("%s: steady p99 %.1fs, want the noisy backlog's drain (minutes)", m, got)
		}
	}
	if _, err := parseTenants([]string{"x"}); err == nil {
		t.Error("--tenant x accepted")
	}
}
