package simulate

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/app/config"
)

// TestSimulateFollowsSchedule: a steady 0.8/s for a day through 1/s with a
// Berlin schedule (0.5/s Monday-Friday 09:00-17:00, nothing 01:00-05:00):
// every simulated hour is admitted at the rate in force then. (Low rates:
// a day at 10/s is 700,000 messages, over two minutes under -race.)
func TestSimulateFollowsSchedule(t *testing.T) {
	c, err := config.Parse([]byte(`source:
  type: nats
  nats:
    stream: S
shaping:
  rate: 1/s
  burst: 1
  queue_size: 1000000
  timezone: Europe/Berlin
  schedule:
    - {days: mon-fri, from: "09:00", until: "17:00", rate: 0.5/s}
    - {days: daily, from: "01:00", until: "05:00", rate: 0}
sink:
  type: stdout
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("seconds,count\n")
	for h := range 24 {
		fmt.Fprintf(&b, "%d,%d\n", h*3600, 8*360)
	}
	path := filepath.Join(t.TempDir(), "flat.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	tr, err := readTrace(path)
	if err != nil {
		t.Fatal(err)
	}
	berlin, _ := time.LoadLocation("Europe/Berlin")
	res, err := simulateFrom(c, tr, time.Hour, time.Date(2026, 3, 2, 0, 0, 0, 0, berlin)) // a Monday
	if err != nil {
		t.Fatal(err)
	}
	for h, bk := range res.buckets[:24] {
		var lo, hi float64 // admitted per second in that hour
		switch {
		case h == 0:
			lo, hi = 0.79, 0.81 // arrivals, below the rate
		case h >= 1 && h < 5:
			lo, hi = 0, 0
		case h >= 9 && h < 17:
			lo, hi = 0.499, 0.501
		default:
			lo, hi = 0.999, 1.001 // catching up on the backlog
		}
		got := float64(bk.admitted) / 3600
		if got < lo || got > hi {
			t.Errorf("hour %02d local: admitted %.2f/s want %g..%g", h, got, lo, hi)
		}
	}
}
