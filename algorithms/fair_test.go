package algorithms

import (
	"errors"
	"fmt"
	"strconv"
	"testing"

	"pgregory.net/rapid"
)

func mustFair(t testing.TB, cfg FairConfig) *FairQueue[int] {
	t.Helper()
	q, err := NewFairQueue[int](cfg)
	if err != nil {
		t.Fatalf("NewFairQueue(%+v): %v", cfg, err)
	}
	return q
}

// popAll pops everything and returns the values in order.
func popAll(q *FairQueue[int]) []int {
	var out []int
	for {
		v, ok := q.Pop()
		if !ok {
			return out
		}
		out = append(out, v)
	}
}

func TestFairRoundRobin(t *testing.T) {
	q := mustFair(t, FairConfig{Capacity: 16})
	// a: 1..6, then b: 11, 12, then c: 21.
	for _, s := range []struct {
		key string
		v   int
	}{{"a", 1}, {"a", 2}, {"a", 3}, {"a", 4}, {"a", 5}, {"a", 6}, {"b", 11}, {"b", 12}, {"c", 21}} {
		if st := q.Push(0, []byte(s.key), s.v); st != FairQueued {
			t.Fatalf("Push(%s, %d) = %v want queued", s.key, s.v, st)
		}
	}
	got := fmt.Sprint(popAll(q))
	if want := "[1 11 21 2 12 3 4 5 6]"; got != want {
		t.Errorf("order = %s want %s", got, want)
	}
}

func TestFairWeights(t *testing.T) {
	q := mustFair(t, FairConfig{Capacity: 32, Weights: map[string]int{"gold": 3}})
	for i := range 8 {
		q.Push(0, []byte("gold"), 100+i)
		q.Push(0, []byte("std"), i)
	}
	got := fmt.Sprint(popAll(q)[:12])
	if want := "[100 101 102 0 103 104 105 1 106 107 2 3]"; got != want {
		t.Errorf("order = %s want %s", got, want)
	}
}

func TestFairBounds(t *testing.T) {
	q := mustFair(t, FairConfig{Capacity: 4, MaxPerKey: 2})
	steps := []struct {
		key  string
		want FairStatus
	}{{"a", FairQueued}, {"a", FairQueued}, {"a", FairKeyFull}, {"b", FairQueued}, {"c", FairQueued}, {"d", FairFull}}
	for i, s := range steps {
		if got := q.Room(0, []byte(s.key)); got != s.want {
			t.Errorf("step %d: Room(%s) = %v want %v", i, s.key, got, s.want)
		}
		if got := q.Push(0, []byte(s.key), i); got != s.want {
			t.Errorf("step %d: Push(%s) = %v want %v", i, s.key, got, s.want)
		}
	}
	if q.Len() != 4 || q.KeyLen(0, []byte("a")) != 2 {
		t.Errorf("Len = %d, KeyLen(a) = %d want 4, 2", q.Len(), q.KeyLen(0, []byte("a")))
	}
}

func TestFairLanesFloor(t *testing.T) {
	// Lane 1 has a 25% floor: while both are backlogged it gets every 4th pop.
	q := mustFair(t, FairConfig{Capacity: 64, Lanes: 2, Floors: []int{0, 250}})
	for i := range 20 {
		q.Push(0, []byte("hi"), i)
		q.Push(1, []byte("lo"), 100+i)
	}
	got := fmt.Sprint(popAll(q)[:12])
	if want := "[0 1 2 100 3 4 5 101 6 7 8 102]"; got != want {
		t.Errorf("order = %s want %s", got, want)
	}
	// Without a floor the low lane waits until the high lane is empty.
	q = mustFair(t, FairConfig{Capacity: 8, Lanes: 2})
	q.Push(1, []byte("lo"), 9)
	q.Push(0, []byte("hi"), 1)
	q.Push(0, []byte("hi"), 2)
	if got, want := fmt.Sprint(popAll(q)), "[1 2 9]"; got != want {
		t.Errorf("order = %s want %s", got, want)
	}
}

func TestFairConfigErrors(t *testing.T) {
	for _, cfg := range []FairConfig{
		{},
		{Capacity: 4, MaxPerKey: 5},
		{Capacity: 4, Weights: map[string]int{"a": 0}},
		{Capacity: 4, Lanes: 2, Floors: []int{0, 600, 500}},
		{Capacity: 4, Lanes: 3, Floors: []int{0, 600, 500}},
		{Capacity: 4, Lanes: 2, Floors: []int{0, -1}},
	} {
		if _, err := NewFairQueue[int](cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("NewFairQueue(%+v) = %v want ErrInvalidConfig", cfg, err)
		}
	}
}

// TestFairForgetsIdleKeys: more distinct keys than records over time; the
// least recently idle are forgotten and come back with their weight.
func TestFairForgetsIdleKeys(t *testing.T) {
	q := mustFair(t, FairConfig{Capacity: 3, Weights: map[string]int{"k0": 2}})
	for i := range 100 {
		k := []byte("k" + strconv.Itoa(i%7))
		if st := q.Push(0, k, i); st != FairQueued {
			t.Fatalf("Push(%s) = %v", k, st)
		}
		if v, ok := q.Pop(); !ok || v != i {
			t.Fatalf("Pop = %d, %v want %d", v, ok, i)
		}
	}
	if len(q.lanes[0].flows) > 6 {
		t.Errorf("%d key records, want <= 2*Capacity", len(q.lanes[0].flows))
	}
	// k0 keeps weight 2 after being forgotten.
	q.Push(0, []byte("k1"), 10)
	q.Push(0, []byte("k0"), 0)
	q.Push(0, []byte("k0"), 1)
	q.Pop()
	q.Push(0, []byte("k1"), 11)
	if got, want := fmt.Sprint(popAll(q)), "[0 1 11]"; got != want {
		t.Errorf("order = %s want %s", got, want)
	}
}

// TestFairProperties runs random pushes and pops against a model: nothing
// is lost or duplicated, each (lane, key) is FIFO, the bounds hold, and
// while two keys of one lane stay backlogged their service follows their
// weights within one turn.
func TestFairProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		capacity := rapid.IntRange(1, 40).Draw(t, "capacity")
		perKey := rapid.IntRange(0, capacity).Draw(t, "perKey")
		lanes := rapid.IntRange(1, 3).Draw(t, "lanes")
		floors := make([]int, lanes)
		for i := 1; i < lanes; i++ {
			floors[i] = rapid.IntRange(0, 400).Draw(t, "floor")
		}
		nkeys := rapid.IntRange(1, 6).Draw(t, "keys")
		weights := map[string]int{}
		for k := range nkeys {
			weights["k"+strconv.Itoa(k)] = rapid.IntRange(1, 4).Draw(t, "weight")
		}
		q, err := NewFairQueue[int](FairConfig{Capacity: capacity, MaxPerKey: perKey, Lanes: lanes, Floors: floors, Weights: weights})
		if err != nil {
			t.Fatal(err)
		}
		limit := perKey
		if limit == 0 {
			limit = capacity
		}
		type lk struct {
			lane int
			key  string
		}
		model := map[lk][]int{}
		where := map[int]lk{}
		total, next := 0, 0
		for range rapid.IntRange(0, 300).Draw(t, "steps") {
			if rapid.Bool().Draw(t, "push") {
				l := lk{rapid.IntRange(0, lanes-1).Draw(t, "lane"), "k" + strconv.Itoa(rapid.IntRange(0, nkeys-1).Draw(t, "key"))}
				want := FairQueued
				if total >= capacity {
					want = FairFull
				} else if len(model[l]) >= limit {
					want = FairKeyFull
				}
				if got := q.Push(l.lane, []byte(l.key), next); got != want {
					t.Fatalf("Push(%v) = %v want %v (total %d, key %d)", l, got, want, total, len(model[l]))
				}
				if want == FairQueued {
					model[l] = append(model[l], next)
					where[next] = l
					total++
				}
				next++
				continue
			}
			v, ok := q.Pop()
			if ok != (total > 0) {
				t.Fatalf("Pop ok = %v with %d held", ok, total)
			}
			if !ok {
				continue
			}
			l, known := where[v]
			if !known {
				t.Fatalf("Pop = %d: never pushed or popped twice", v)
			}
			if model[l][0] != v {
				t.Fatalf("Pop = %d from %v want its head %d (FIFO per key)", v, l, model[l][0])
			}
			// Strict priority unless a floor is due: nothing served from a
			// lane above a backlogged floorless lane.
			for hi := 0; hi < l.lane; hi++ {
				if q.LaneLen(hi) > 0 && floors[l.lane] == 0 {
					t.Fatalf("Pop from lane %d while lane %d holds %d and lane %d has no floor", l.lane, hi, q.LaneLen(hi), l.lane)
				}
			}
			model[l] = model[l][1:]
			delete(where, v)
			total--
			if q.Len() != total {
				t.Fatalf("Len = %d want %d", q.Len(), total)
			}
		}
		for _, v := range popAll(q) {
			if _, ok := where[v]; !ok {
				t.Fatalf("drained %d: never pushed or popped twice", v)
			}
			delete(where, v)
		}
		if len(where) != 0 {
			t.Fatalf("lost %d entries", len(where))
		}
	})
}

// TestFairWeightedShare: keys with random weights all backlogged in one
// lane; over n pops each key's count is within one round of its weight
// share.
func TestFairWeightedShare(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nkeys := rapid.IntRange(2, 8).Draw(t, "keys")
		weights := map[string]int{}
		sum := 0
		for k := range nkeys {
			w := rapid.IntRange(1, 8).Draw(t, "weight")
			weights["k"+strconv.Itoa(k)] = w
			sum += w
		}
		q, _ := NewFairQueue[int](FairConfig{Capacity: 64 * nkeys, Weights: weights})
		for k := range nkeys {
			for i := range 64 {
				q.Push(0, []byte("k"+strconv.Itoa(k)), k*1000+i)
			}
		}
		n := rapid.IntRange(1, 64).Draw(t, "pops")
		count := make([]int, nkeys)
		for range n {
			v, _ := q.Pop()
			count[v/1000]++
		}
		for k := range nkeys {
			w := weights["k"+strconv.Itoa(k)]
			share := float64(n) * float64(w) / float64(sum)
			if d := float64(count[k]) - share; d > float64(w) || -d > float64(w) {
				t.Fatalf("key k%d (weight %d of %d) served %d of %d, want %.1f +- %d", k, w, sum, count[k], n, share, w)
			}
		}
	})
}

// TestFairFloorShare: a backlogged lane with floor f gets at least f*n-1
// of any n pops from the start, whatever the lanes above it hold.
func TestFairFloorShare(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		f1 := rapid.IntRange(1, 500).Draw(t, "floor1")
		f2 := rapid.IntRange(0, 1000-f1).Draw(t, "floor2")
		q, _ := NewFairQueue[int](FairConfig{Capacity: 3000, Lanes: 3, Floors: []int{0, f1, f2}})
		for i := range 1000 {
			for l := range 3 {
				q.Push(l, []byte("k"), l*10000+i)
			}
		}
		n := rapid.IntRange(1, 900).Draw(t, "pops")
		var count [3]int
		for range n {
			v, _ := q.Pop()
			count[v/10000]++
		}
		for l, f := range []int{0, f1, f2} {
			if min := f*n/1000 - 1; count[l] < min {
				t.Fatalf("lane %d (floor %d) served %d of %d, want >= %d", l, f, count[l], n, min)
			}
		}
	})
}

func TestFairPushPopAllocs(t *testing.T) {
	q := mustFair(t, FairConfig{Capacity: 64, MaxPerKey: 32})
	keys := [][]byte{[]byte("a"), []byte("b"), []byte("c")}
	for i := range 30 {
		q.Push(0, keys[i%3], i)
	}
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		q.Push(0, keys[i%3], i)
		q.Pop()
		i++
	})
	if allocs != 0 {
		t.Errorf("Push+Pop allocates %v per run, want 0", allocs)
	}
}

// TestFairQueueReconfigure: new weights apply to keys already queued, with
// every entry kept in order; capacity and lanes cannot change.
func TestFairQueueReconfigure(t *testing.T) {
	q, err := NewFairQueue[int](FairConfig{Capacity: 100, Lanes: 2, Floors: []int{0, 100}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		q.Push(0, []byte("a"), i)
		q.Push(0, []byte("b"), 100+i)
	}
	pop := func(n int) (a, b int) {
		for range n {
			v, _ := q.Pop()
			if v < 100 {
				a++
			} else {
				b++
			}
		}
		return
	}
	if a, b := pop(10); a != 5 || b != 5 {
		t.Fatalf("equal weights: a %d b %d", a, b)
	}
	if err := q.Reconfigure(FairConfig{Capacity: 100, Lanes: 2, Weights: map[string]int{"a": 4}, Floors: []int{0, 200}}); err != nil {
		t.Fatal(err)
	}
	if a, b := pop(25); a < 19 || a > 21 || b < 4 || b > 6 {
		t.Fatalf("after reweighting a to 4: a %d b %d, want 20:5 (within one turn)", a, b)
	}
	last := map[bool]int{true: -1, false: 99}
	for q.Len() > 0 {
		v, _ := q.Pop()
		if v <= last[v < 100] {
			t.Fatalf("order broken: %d after %d", v, last[v < 100])
		}
		last[v < 100] = v
	}
	if q.lanes[1].floor != 200 {
		t.Errorf("floor not reconfigured: %d", q.lanes[1].floor)
	}
	for _, bad := range []FairConfig{{Capacity: 50, Lanes: 2}, {Capacity: 100, Lanes: 3}, {Capacity: 100, Lanes: 2, Weights: map[string]int{"a": 0}}, {Capacity: 100, Lanes: 2, MaxPerKey: 101}} {
		if err := q.Reconfigure(bad); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("Reconfigure(%+v) = %v, want ErrInvalidConfig", bad, err)
		}
	}
}
