package pacer_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/pacertest"
)

// flakyBoard is a LimitBoard that fails while down is set.
type flakyBoard struct {
	algorithms.LocalLimitBoard
	down  atomic.Bool
	calls atomic.Int64
}

func (b *flakyBoard) SyncLimit(ctx context.Context, now time.Time, acc []algorithms.SlotCount, p *algorithms.LimitProposal) (algorithms.LimitState, error) {
	b.calls.Add(1)
	if b.down.Load() {
		return algorithms.LimitState{}, errors.New("board down")
	}
	return b.LocalLimitBoard.SyncLimit(ctx, now, acc, p)
}

// A board that cannot be reached stops nothing: the worker delivers
// everything, /status says why the limit is not shared right now, and
// the error clears once the board answers again; the counts kept meanwhile
// reach it then.
func TestLimitBoardUnreachableGoesOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		board := &flakyBoard{}
		board.down.Store(true)
		global, err := algorithms.NewTokenBucket(algorithms.TokenBucketConfig{Rate: algorithms.PerSecond(100), Burst: 10}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		const n = 200
		msgs := pacertest.Messages(n)
		src := pacertest.NewSource(msgs)
		e, err := pacer.New(pacer.Config{
			Source: src, Sink: &pacertest.Sink{},
			Shaping: pacer.Shaping{Rate: algorithms.PerSecond(100), Burst: 10, Global: global,
				LimitBoard: board, GlobalRate: algorithms.PerSecond(100)},
			Adaptive: pacer.AdaptiveConfig{Mode: pacer.AdaptiveAuto},
		})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- e.Run(context.Background()) }()
		time.Sleep(500 * time.Millisecond)
		st := e.Status()
		if !st.LimitShared || st.LimitBoardError == "" {
			t.Errorf("board down: limit_shared %v, limit_board_error %q; want true and the error", st.LimitShared, st.LimitBoardError)
		}
		board.down.Store(false)
		time.Sleep(500 * time.Millisecond)
		if st := e.Status(); st.LimitBoardError != "" {
			t.Errorf("board back: limit_board_error %q, want cleared", st.LimitBoardError)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if st := e.Status(); st.Delivered != n {
			t.Errorf("delivered %d of %d with the board down for a while", st.Delivered, n)
		}
		state, _ := board.LocalLimitBoard.SyncLimit(context.Background(), time.Now(), nil, nil)
		var counted int64
		for _, c := range state.Counts {
			counted += c
		}
		if counted != n {
			t.Errorf("the board counted %d accepted, want all %d (kept while it was down, sent after)", counted, n)
		}
		if board.calls.Load() < 5 {
			t.Errorf("%d syncs in over a second, want one every 100 ms", board.calls.Load())
		}
	})
}

// A LimitBoard needs a Global whose rate can be set, a GlobalRate and a
// Rate: New says which is missing.
func TestLimitBoardConfigErrors(t *testing.T) {
	board := &algorithms.LocalLimitBoard{}
	tb, err := algorithms.NewTokenBucket(algorithms.TokenBucketConfig{Rate: algorithms.PerSecond(10), Burst: 1}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	gcra, err := algorithms.NewGCRA(algorithms.GCRAConfig{Rate: algorithms.PerSecond(10), Burst: 1}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		sh   pacer.Shaping
		want string
	}{
		{"no global", pacer.Shaping{Rate: algorithms.PerSecond(10), LimitBoard: board, GlobalRate: algorithms.PerSecond(10)}, "SetRate"},
		{"global without SetRate", pacer.Shaping{Rate: algorithms.PerSecond(10), Global: gcra, LimitBoard: board, GlobalRate: algorithms.PerSecond(10)}, "SetRate"},
		{"no global rate", pacer.Shaping{Rate: algorithms.PerSecond(10), Global: tb, LimitBoard: board}, "GlobalRate"},
		{"no rate", pacer.Shaping{Global: tb, LimitBoard: board, GlobalRate: algorithms.PerSecond(10)}, "needs a Rate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := pacer.New(pacer.Config{Source: pacertest.NewSource(nil), Sink: &pacertest.Sink{}, Shaping: tc.sh})
			if !errors.Is(err, pacer.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New = %v, want ErrInvalidConfig mentioning %q", err, tc.want)
			}
		})
	}
}
