package algorithms

import (
	"strconv"
	"testing"
)

// Fair-queue cost per entry (one Push and one Pop), side by side with a
// buffered channel send and receive (the engine's queue with fairness off).
//
//	go test -run XXX -bench FairQueue -benchtime 200ms -count 3 -benchmem ./algorithms
//
// The queue holds 512 of 1024 entries spread over `keys` backlogged keys
// (weights 1, and one key of weight 4), so every Pop does a real DRR turn.
func BenchmarkFairQueue(b *testing.B) {
	b.Run("channel", func(b *testing.B) {
		ch := make(chan int, 1024)
		for i := range 512 {
			ch <- i
		}
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			ch <- i
			<-ch
		}
	})
	for _, nk := range []int{1, 16, 1000} {
		b.Run("fair/keys="+strconv.Itoa(nk), func(b *testing.B) {
			q, err := NewFairQueue[int](FairConfig{Capacity: 1024, Weights: map[string]int{"k0": 4}})
			if err != nil {
				b.Fatal(err)
			}
			keys := make([][]byte, nk)
			for i := range keys {
				keys[i] = []byte("k" + strconv.Itoa(i))
			}
			for i := range 512 {
				q.Push(0, keys[i%nk], i)
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				q.Push(0, keys[i%nk], i)
				q.Pop()
			}
		})
	}
	b.Run("fair/lanes=3", func(b *testing.B) {
		q, err := NewFairQueue[int](FairConfig{Capacity: 1024, Lanes: 3, Floors: []int{0, 100, 50}})
		if err != nil {
			b.Fatal(err)
		}
		key := []byte("k")
		for i := range 512 {
			q.Push(i%3, key, i)
		}
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			q.Push(i%3, key, i)
			q.Pop()
		}
	})
}
