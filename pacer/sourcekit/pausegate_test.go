package sourcekit_test

import (
	"context"
	"testing"

	"github.com/pacer-dev/pacer/pacer/sourcekit"
)

func TestPauseGate(t *testing.T) {
	var g sourcekit.PauseGate // the zero value runs
	paused, resumed, pausedC := g.State()
	if paused || !closed(resumed) || closed(pausedC) {
		t.Fatalf("zero value: paused=%v resumed closed=%v pausedC closed=%v", paused, closed(resumed), closed(pausedC))
	}
	if !g.Wait(context.Background()) {
		t.Fatal("Wait on a running gate returned false")
	}
	if !g.Pause() || g.Pause() {
		t.Fatal("Pause should report true once, then false")
	}
	if !g.Paused() || !closed(pausedC) || g.Pauses() != 1 {
		t.Fatalf("after Pause: Paused=%v pausedC closed=%v Pauses=%d", g.Paused(), closed(pausedC), g.Pauses())
	}
	_, resumed, _ = g.State()
	if closed(resumed) {
		t.Fatal("resumed is closed while paused")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if g.Wait(ctx) {
		t.Fatal("Wait on a paused gate with a done ctx returned true")
	}
	if !g.Resume() || g.Resume() {
		t.Fatal("Resume should report true once, then false")
	}
	if g.Paused() || !closed(resumed) {
		t.Fatal("after Resume: still paused, or the channel taken while paused is not closed")
	}
	g.Pause()
	if g.Pauses() != 2 {
		t.Fatalf("Pauses = %d, want 2", g.Pauses())
	}
}

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
