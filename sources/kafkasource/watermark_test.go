package kafkasource

import (
	"testing"

	"pgregory.net/rapid"
)

func TestWatermarkSteps(t *testing.T) {
	var marks []int64
	w := newWatermark(0, func(n int64) { marks = append(marks, n) })
	for _, o := range []int64{10, 11, 13, 14} { // 12: a gap (transaction marker)
		w.add(o)
	}
	steps := []struct {
		finish int64
		ok     bool
		marks  []int64
	}{
		{11, true, nil},
		{11, false, nil},        // repeated
		{99, false, nil},        // unknown
		{10, true, []int64{12}}, // 10 and 11 final: commit 12
		{14, true, []int64{12}}, // 13 still open
		{13, true, []int64{12, 15}},
	}
	for i, s := range steps {
		if got := w.finish(s.finish); got != s.ok {
			t.Fatalf("step %d: finish(%d) = %v want %v", i, s.finish, got, s.ok)
		}
		if len(marks) != len(s.marks) || (len(marks) > 0 && marks[len(marks)-1] != s.marks[len(s.marks)-1]) {
			t.Fatalf("step %d: marks = %v want %v", i, marks, s.marks)
		}
	}
	w.add(15)
	w.revoke()
	if w.finish(15) {
		t.Fatalf("finish after revoke = true want false")
	}
	if len(marks) != 2 {
		t.Fatalf("marked after revoke: %v", marks)
	}
}

// TestWatermarkProperty: whatever the order of finishes (and naks that never
// finish), every mark m satisfies: all added offsets < m are finished, marks
// only move forward, and once everything before a nak'd offset is final the
// mark reaches it exactly.
func TestWatermarkProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 200).Draw(t, "n")
		var offs []int64
		o := int64(rapid.IntRange(0, 1000).Draw(t, "start"))
		for range n {
			offs = append(offs, o)
			o += int64(rapid.IntRange(1, 3).Draw(t, "gap"))
		}
		finished := map[int64]bool{}
		last := int64(-1)
		w := newWatermark(0, func(m int64) {
			if m <= last {
				t.Fatalf("mark went back: %d after %d", m, last)
			}
			last = m
			for _, x := range offs {
				if x < m && !finished[x] {
					t.Fatalf("marked %d while %d unfinished", m, x)
				}
			}
		})
		for _, x := range offs {
			w.add(x)
		}
		order := rapid.Permutation(offs).Draw(t, "order")
		naked := map[int64]bool{}
		for _, x := range order {
			if rapid.IntRange(0, 9).Draw(t, "nak") == 0 {
				naked[x] = true
				continue
			}
			finished[x] = true
			if !w.finish(x) {
				t.Fatalf("finish(%d) = false", x)
			}
		}
		// The final mark is one past the longest finished prefix (none: -1).
		want := int64(-1)
		for _, x := range offs {
			if naked[x] {
				break
			}
			want = x + 1
		}
		if last != want {
			t.Fatalf("final mark %d want %d", last, want)
		}
		if got := w.low(); len(naked) == 0 && got != -1 {
			t.Fatalf("low() = %d with nothing pending", got)
		}
	})
}

func TestWatermarkRoom(t *testing.T) {
	w := newWatermark(2, nil)
	w.add(1)
	w.add(2)
	n, room := w.pending()
	if n != 2 {
		t.Fatalf("pending = %d want 2", n)
	}
	w.finish(2) // 1 still open: nothing leaves
	select {
	case <-room:
		t.Fatalf("room signalled while still full")
	default:
	}
	w.finish(1)
	select {
	case <-room:
	default:
		t.Fatalf("room not signalled after the watermark moved")
	}
}
