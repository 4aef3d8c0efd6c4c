package natssource

import "testing"

// A created consumer's MaxAckPending covers what the engine holds plus what
// the source fetches ahead (1.5 x Batch, rounded up), unless configured.
func TestMaxAckPendingFromHoldBound(t *testing.T) {
	for _, c := range []struct {
		name                 string
		configured, bound, b int
		want                 int
	}{
		{"engine bound", 0, 1064, 100, 1214},
		{"odd half batch rounds up", 0, 12, 1, 14},
		{"4.5 rounds up", 0, 12, 3, 17},
		{"configured wins", 500, 1064, 100, 500},
		{"no bound passed", 0, 0, 32, defaultMaxAckPending},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &Source{cfg: Config{MaxAckPending: c.configured, Batch: c.b}}
			if c.bound > 0 {
				s.HoldBound(c.bound)
			}
			got := s.maxAckPending()
			if got != c.want {
				t.Errorf("maxAckPending = %d, want %d", got, c.want)
			}
			if c.configured == 0 && c.bound > 0 && 2*got < 2*c.bound+3*c.b {
				t.Errorf("maxAckPending = %d below the bound %d + 1.5 x batch %d", got, c.bound, c.b)
			}
		})
	}
}
