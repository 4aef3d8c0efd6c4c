package worker

import "testing"

func TestMaxAckPendingCoversClientSideBound(t *testing.T) {
	for _, c := range []struct{ queue, inFlight, batch, want int }{
		{1000, 64, 100, 1214},
		{10, 2, 1, 14}, // 1.5 rounds up to 2
		{10, 2, 3, 17}, // 4.5 -> 5
		{0, 0, 64, 96},
	} {
		got := MaxAckPending(c.queue, c.inFlight, c.batch)
		if got != c.want {
			t.Errorf("maxAckPending(%d, %d, %d) = %d want %d", c.queue, c.inFlight, c.batch, got, c.want)
		}
		if 2*got < 2*(c.queue+c.inFlight)+3*c.batch {
			t.Errorf("maxAckPending(%d, %d, %d) = %d below queue + in flight + 1.5 x batch", c.queue, c.inFlight, c.batch, got)
		}
	}
}
