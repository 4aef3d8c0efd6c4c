package redislimit

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
)

// boards are the LimitBoard implementations, checked against one contract.
func boards(t *testing.T) map[string]func() algorithms.LimitBoard {
	e := newEnv(t)
	n := 0
	return map[string]func() algorithms.LimitBoard{
		"local": func() algorithms.LimitBoard { return &algorithms.LocalLimitBoard{} },
		"redis": func() algorithms.LimitBoard {
			n++
			return newLimiter(t, e.cfg("board-"+t.Name()+"-"+string(rune('a'+n)), algorithms.PerSecond(100), 10))
		},
	}
}

// TestLimitBoardCounts: the board's counts are the sum of every worker's
// counts slot by slot, placed at the right offset, and counts outside the
// last BoardSlots slots are dropped.
func TestLimitBoardCounts(t *testing.T) {
	for name, mk := range boards(t) {
		t.Run(name, func(t *testing.T) {
			b, ctx := mk(), context.Background()
			now := time.Now()
			cur := algorithms.BoardSlotOf(now)
			if _, err := b.SyncLimit(ctx, now, []algorithms.SlotCount{{Slot: cur - 2, N: 3}, {Slot: cur, N: 1}, {Slot: cur - algorithms.BoardSlots, N: 99}, {Slot: cur + 1, N: 99}}, nil); err != nil {
				t.Fatal(err)
			}
			st, err := b.SyncLimit(ctx, now, []algorithms.SlotCount{{Slot: cur - 2, N: 4}, {Slot: cur - 1, N: 5}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := map[int]int64{algorithms.BoardSlots - 3: 7, algorithms.BoardSlots - 2: 5, algorithms.BoardSlots - 1: 1}
			for i, c := range st.Counts {
				if c != want[i] {
					t.Errorf("Counts[%d] = %d, want %d (all %v)", i, c, want[i], st.Counts)
				}
			}
			if got := algorithms.BoardSlotOf(st.SlotStart); got != cur-algorithms.BoardSlots+1 {
				t.Errorf("SlotStart slot %d, want %d", got, cur-algorithms.BoardSlots+1)
			}
			// A slot reused by the ring later starts from zero.
			later := now.Add(algorithms.BoardSlots * algorithms.BoardSlot)
			st, err = b.SyncLimit(ctx, later, []algorithms.SlotCount{{Slot: cur - 2 + algorithms.BoardSlots, N: 1}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := st.Counts[algorithms.BoardSlots-3]; got != 1 {
				t.Errorf("reused slot: %d, want 1 (the old 7 forgotten)", got)
			}
			if st.Epoch != 0 {
				t.Errorf("epoch %d with nothing proposed, want 0", st.Epoch)
			}
		})
	}
}

// TestLimitBoardCompareAndSet: a proposal applies only from the board's
// epoch; of many workers proposing from the same epoch at once, exactly one
// wins, and every answer after shows the winner's state exactly as sent.
func TestLimitBoardCompareAndSet(t *testing.T) {
	for name, mk := range boards(t) {
		t.Run(name, func(t *testing.T) {
			b, ctx := mk(), context.Background()
			now := time.Now()
			p := &algorithms.LimitProposal{Limit: 47.123456789, Rate: 44.7672839, Throttle: now, ProbeUntil: now.Add(time.Second)}
			st, err := b.SyncLimit(ctx, now, nil, p)
			if err != nil {
				t.Fatal(err)
			}
			if st.Epoch != 1 || st.Limit != p.Limit || st.Rate != p.Rate || !st.Throttle.Equal(p.Throttle) || !st.ProbeUntil.Equal(p.ProbeUntil) {
				t.Fatalf("after a proposal from epoch 0: %+v, want epoch 1 and %+v", st.LimitProposal, *p)
			}
			stale := &algorithms.LimitProposal{Epoch: 0, Limit: 1, Rate: 1}
			if st, err = b.SyncLimit(ctx, now, nil, stale); err != nil || st.Epoch != 1 || st.Limit != p.Limit {
				t.Fatalf("a stale proposal applied: %+v %v", st.LimitProposal, err)
			}
			const rounds, workers = 5, 6
			for r := range rounds {
				var wg sync.WaitGroup
				wins := make(chan float64, workers)
				for w := range workers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						mine := &algorithms.LimitProposal{Epoch: uint64(1 + r), Limit: float64(100*r + w), Rate: float64(w)}
						st, err := b.SyncLimit(ctx, now, nil, mine)
						if err != nil {
							t.Error(err)
							return
						}
						if st.Epoch == mine.Epoch+1 && st.Limit == mine.Limit {
							wins <- mine.Limit
						}
					}()
				}
				wg.Wait()
				close(wins)
				var won []float64
				for l := range wins {
					won = append(won, l)
				}
				if len(won) != 1 {
					t.Fatalf("round %d: %d winners %v, want exactly 1", r, len(won), won)
				}
			}
			if st, _ = b.SyncLimit(ctx, now, nil, nil); st.Epoch != 1+rounds {
				t.Errorf("epoch %d after %d rounds, want %d", st.Epoch, rounds, 1+rounds)
			}
		})
	}
}

// TestLimitBoardUnreachable: a board whose Redis is gone answers an error
// within the limiter's timeout (the engine goes on with what it saw).
func TestLimitBoardUnreachable(t *testing.T) {
	e := newEnv(t)
	p, url := e.proxied(t)
	cfg := e.cfg("board-down", algorithms.PerSecond(100), 10)
	cfg.URL = url
	l := newLimiter(t, cfg)
	ctx := context.Background()
	if _, err := l.SyncLimit(ctx, time.Now(), []algorithms.SlotCount{{Slot: algorithms.BoardSlotOf(time.Now()), N: 1}}, nil); err != nil {
		t.Fatal(err)
	}
	p.Stop()
	start := time.Now()
	if _, err := l.SyncLimit(ctx, time.Now(), nil, nil); err == nil {
		t.Fatal("SyncLimit with Redis gone: no error")
	} else {
		t.Logf("with Redis gone, after %v: %v", time.Since(start).Round(time.Millisecond), err)
	}
}

// TestReshapeAllOrNothing: Reshape changes rate and burst together, and an
// invalid pair changes neither (a reload keeps what it had, no rollback).
func TestReshapeAllOrNothing(t *testing.T) {
	e := newEnv(t)
	l := newLimiter(t, e.cfg("reshape", algorithms.PerSecond(100), 10))
	now := time.Now()
	if err := l.Reshape(now, algorithms.PerSecond(40), 0); err == nil {
		t.Fatal("Reshape with burst 0: no error")
	}
	if err := l.Reshape(now, algorithms.Rate{}, 20); err == nil {
		t.Fatal("Reshape with no rate: no error")
	}
	l.mu.Lock()
	r, b := l.cfg.Rate, l.cfg.Burst
	l.mu.Unlock()
	if r != algorithms.PerSecond(100) || b != 10 {
		t.Fatalf("after refused reshapes: rate %v burst %d, want 100/s and 10 unchanged", r, b)
	}
	if err := l.Reshape(now, algorithms.PerSecond(40), 20); err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	r, b = l.cfg.Rate, l.cfg.Burst
	l.mu.Unlock()
	if r != algorithms.PerSecond(40) || b != 20 {
		t.Fatalf("after Reshape(40/s, 20): rate %v burst %d", r, b)
	}
}
