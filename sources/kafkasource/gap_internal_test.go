package kafkasource

import (
	"slices"
	"strings"
	"testing"
)

// TestDoneMetadataRoundTrip: what encodeDone writes for a committed
// offset, parseDone reads back for a claim starting there, and for no
// other; foreign or malformed metadata reads as nothing.
func TestDoneMetadataRoundTrip(t *testing.T) {
	done := []int64{1001, 1002, 1010, 5000}
	meta := encodeDone(1000, done)
	if got := parseDone(meta, 1000); !slices.Equal(got, done) {
		t.Errorf("parseDone(%q, 1000) = %v want %v", meta, got, done)
	}
	if got := parseDone(meta, 999); got != nil {
		t.Errorf("parseDone for another committed offset = %v want nil", got)
	}
	if encodeDone(7, nil) != "" {
		t.Error("encodeDone with nothing done is not empty")
	}
	// The base itself may be carried (a skipped offset not reached yet).
	if got := parseDone(encodeDone(7, []int64{7, 9}), 7); !slices.Equal(got, []int64{7, 9}) {
		t.Errorf("carried base: %v", got)
	}
	for _, m := range []string{"", "someone else's", "pacer:done:", "pacer:done:1000", "pacer:done:1000:1,x", "pacer:done:1000:-1", "pacer:done:x:1"} {
		if got := parseDone(m, 1000); got != nil {
			t.Errorf("parseDone(%q) = %v want nil", m, got)
		}
	}
}

// TestDoneMetadataIsBounded: a long list is cut to maxDoneMeta bytes (the
// broker refuses a commit with oversized metadata, which would lose the
// offset itself); the offsets left out are delivered again, the ones kept
// still parse.
func TestDoneMetadataIsBounded(t *testing.T) {
	var done []int64
	for i := range int64(5000) {
		done = append(done, 1_000_000+2*i+1)
	}
	meta := encodeDone(1_000_000, done)
	if len(meta) > maxDoneMeta {
		t.Fatalf("metadata is %d bytes, want <= %d", len(meta), maxDoneMeta)
	}
	got := parseDone(meta, 1_000_000)
	if len(got) == 0 || !slices.Equal(got, done[:len(got)]) || strings.HasSuffix(meta, ",") {
		t.Errorf("cut metadata parses to %d offsets (%v...), want a prefix of the list", len(got), got[:min(3, len(got))])
	}
}

// TestRevokeReportsTheGap: revoke returns the lowest pending offset and
// the offsets final above it, and nothing is marked after it.
func TestRevokeReportsTheGap(t *testing.T) {
	var marks []int64
	w := newWatermark(0, func(next int64) { marks = append(marks, next) })
	for _, o := range []int64{10, 11, 12, 14, 15} {
		w.add(o)
	}
	w.finish(10)
	w.finish(12)
	w.finish(15)
	low, done := w.revoke()
	if low != 11 || !slices.Equal(done, []int64{12, 15}) {
		t.Errorf("revoke = %d, %v want 11, [12 15]", low, done)
	}
	w.finish(11)
	if !slices.Equal(marks, []int64{11}) {
		t.Errorf("marks = %v want [11] (nothing after the revoke)", marks)
	}
	w2 := newWatermark(0, nil)
	w2.add(3)
	w2.finish(3)
	if low, done := w2.revoke(); low != -1 || done != nil {
		t.Errorf("revoke with nothing pending = %d, %v want -1, nil", low, done)
	}
}
