package algorithms

import "testing"

// lastGrant undoes exactly the latest grant, once, and nothing else.
func TestLastGrantUndo(t *testing.T) {
	var g lastGrant[float64]
	if _, _, ok := g.undo(1, inst{}); ok {
		t.Fatal("undo with nothing recorded")
	}
	g.record(2, inst{ns: 10}, inst{ns: 30}, 7)
	if _, _, ok := g.undo(1, inst{ns: 30}); ok {
		t.Fatal("undo of a different n")
	}
	if _, _, ok := g.undo(2, inst{ns: 31}); ok {
		t.Fatal("undo after the schedule moved on")
	}
	before, saved, ok := g.undo(2, inst{ns: 30})
	if !ok || before != (inst{ns: 10}) || saved != 7 {
		t.Fatalf("undo = %v, %v, %v want {10 0}, 7, true", before, saved, ok)
	}
	if _, _, ok := g.undo(2, inst{ns: 30}); ok {
		t.Fatal("undo twice")
	}
	g.record(1, inst{}, inst{ns: 5}, 0)
	g.forget()
	if _, _, ok := g.undo(1, inst{ns: 5}); ok {
		t.Fatal("undo after forget")
	}
}
