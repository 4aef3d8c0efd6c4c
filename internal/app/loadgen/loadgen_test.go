package loadgen

import (
	"context"
	"errors"
	"testing"
)

func TestPlanPublishesEveryIndexInOrder(t *testing.T) {
	p := Plan{Spike1: 3, Steady: 4, SteadyRate: 1000, Spike2: 2}
	var got []int
	if err := p.Run(context.Background(), func(_ context.Context, i int) error { got = append(got, i); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != p.Total() || p.Total() != 9 {
		t.Fatalf("published %v, Total() = %d want 9", got, p.Total())
	}
	for i, v := range got {
		if v != i {
			t.Fatalf("published %v want 0..8 in order", got)
		}
	}
}

func TestPlanStopsAtFirstError(t *testing.T) {
	boom := errors.New("boom")
	n := 0
	err := Plan{Spike1: 5}.Run(context.Background(), func(context.Context, int) error {
		n++
		if n == 2 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) || n != 2 {
		t.Errorf("Run = %v after %d publishes want boom after 2", err, n)
	}
}
