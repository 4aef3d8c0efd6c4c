package algorithms_test

import (
	"context"
	"fmt"

	"github.com/pacer-dev/pacer/algorithms"
)

// Two workers behind one downstream pool what they saw accepted, and
// propose the learned limit by compare-and-set on the board's epoch: of two
// proposals from the same epoch, exactly one wins.
func ExampleLocalLimitBoard() {
	var board algorithms.LocalLimitBoard
	ctx := context.Background()
	slot := algorithms.BoardSlotOf(ex0)

	// Each worker reports what it had accepted in the current slot.
	a, _ := board.SyncLimit(ctx, ex0, []algorithms.SlotCount{{Slot: slot, N: 30}}, nil)
	b, _ := board.SyncLimit(ctx, ex0, []algorithms.SlotCount{{Slot: slot, N: 20}}, nil)
	fmt.Println("group accepted in this slot:", b.Counts[algorithms.BoardSlots-1])

	// Both learned a limit from epoch a.Epoch; the first proposal wins.
	pa := &algorithms.LimitProposal{Epoch: a.Epoch, Limit: 500, Rate: 450, Throttle: ex0}
	pb := &algorithms.LimitProposal{Epoch: a.Epoch, Limit: 480, Rate: 430, Throttle: ex0}
	sa, _ := board.SyncLimit(ctx, ex0, nil, pa)
	sb, _ := board.SyncLimit(ctx, ex0, nil, pb)
	fmt.Printf("a: epoch %d, limit %.0f\n", sa.Epoch, sa.Limit)
	fmt.Printf("b: epoch %d, limit %.0f (b's proposal lost; it applies a's)\n", sb.Epoch, sb.Limit)
	// Output:
	// group accepted in this slot: 50
	// a: epoch 1, limit 500
	// b: epoch 1, limit 500 (b's proposal lost; it applies a's)
}

// A LimitBoard is what an engine needs to share a learned limit: a
// LocalLimitBoard in one process, algorithms/redislimit.Limiter across processes.
func ExampleLimitBoard() {
	var board algorithms.LimitBoard = &algorithms.LocalLimitBoard{}
	st, err := board.SyncLimit(context.Background(), ex0, nil, nil)
	fmt.Println("nothing learned yet:", st.Epoch == 0, err)
	// Output:
	// nothing learned yet: true <nil>
}

// Counts are kept per absolute slot of BoardSlot; one outside the last
// BoardSlots slots is dropped.
func ExampleSlotCount() {
	var board algorithms.LocalLimitBoard
	now := algorithms.BoardSlotOf(ex0)
	st, _ := board.SyncLimit(context.Background(), ex0, []algorithms.SlotCount{
		{Slot: now - 1, N: 7},                     // the previous slot
		{Slot: now - algorithms.BoardSlots, N: 9}, // too old: dropped
	}, nil)
	fmt.Println(st.Counts[algorithms.BoardSlots-2], st.Counts[0])
	// Output:
	// 7 0
}

// A proposal based on a stale epoch changes nothing.
func ExampleLimitProposal() {
	var board algorithms.LocalLimitBoard
	ctx := context.Background()
	board.SyncLimit(ctx, ex0, nil, &algorithms.LimitProposal{Epoch: 0, Limit: 100, Rate: 90})
	st, _ := board.SyncLimit(ctx, ex0, nil, &algorithms.LimitProposal{Epoch: 0, Limit: 999, Rate: 999})
	fmt.Printf("epoch %d, limit %.0f, rate %.0f\n", st.Epoch, st.Limit, st.Rate)
	// Output:
	// epoch 1, limit 100, rate 90
}

// LimitState's slots end with the one holding the call's now.
func ExampleLimitState() {
	var board algorithms.LocalLimitBoard
	st, _ := board.SyncLimit(context.Background(), ex0, nil, nil)
	last := st.SlotStart.Add(algorithms.BoardSlot * (algorithms.BoardSlots - 1))
	fmt.Println(!ex0.Before(last), ex0.Before(last.Add(algorithms.BoardSlot)))
	// Output:
	// true true
}
