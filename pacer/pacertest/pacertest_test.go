package pacertest_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/pacertest"
)

func TestLedgerFlagsDoubleSettlementAndFailedChecks(t *testing.T) {
	led := pacertest.NewLedger()
	led.Check = func(id string, how pacer.Settlement) error {
		if how == pacer.SettledAck && id == "b" {
			return errors.New("acked before delivery")
		}
		return nil
	}
	ctx := context.Background()
	a := led.Acker("a")
	_ = a.Ack(ctx)
	_ = a.Nak(ctx, 0)
	_ = led.Acker("b").Ack(ctx)
	v := led.Violations()
	if len(v) != 2 || !strings.Contains(v[0], "settled twice") || !strings.Contains(v[1], "acked before delivery") {
		t.Errorf("violations = %q", v)
	}
	if s, ok := led.Get("a"); !ok || s.How != pacer.SettledAck {
		t.Errorf("a = %+v, %v; the first settlement counts", s, ok)
	}
	if led.Len() != 2 || led.Count(pacer.SettledAck) != 2 {
		t.Errorf("len %d acks %d", led.Len(), led.Count(pacer.SettledAck))
	}
}

func TestSourceHonoursPause(t *testing.T) {
	msgs := pacertest.Messages(10, "k")
	src := pacertest.NewSource(msgs)
	got := 0
	err := src.Run(context.Background(), func(_ context.Context, m *pacer.Message) error {
		got++
		if got == 3 {
			src.Pause()
			go src.Resume()
		}
		return nil
	})
	if err != nil || got != 10 || src.Pauses() != 1 || src.Handed() != 10 {
		t.Errorf("Run = %v, handed %d/%d, pauses %d", err, got, src.Handed(), src.Pauses())
	}
	if string(msgs[3].Key) != "k" || msgs[3].ID != "test/0/3" {
		t.Errorf("message 3 = %+v", msgs[3])
	}
}

func TestSinkAndDeadLetters(t *testing.T) {
	s := &pacertest.Sink{}
	msgs := pacertest.Messages(2)
	res := make([]pacer.Result, 2)
	s.Deliver(context.Background(), msgs, res)
	if res[0].Outcome != pacer.Delivered || s.Delivered("test/0/1") != 1 || s.Calls() != 1 || len(s.Deliveries()) != 2 {
		t.Errorf("results %v, log %v", res, s.Deliveries())
	}
	dl := &pacertest.DeadLetters{}
	reason := errors.New("bad")
	if err := dl.DeadLetter(context.Background(), msgs[0], reason); err != nil {
		t.Fatal(err)
	}
	if e, ok := dl.Get("test/0/0"); !ok || e.Reason != reason {
		t.Errorf("dead letter = %+v, %v", e, ok)
	}
}

func TestMessageSpec(t *testing.T) {
	plain := pacertest.Messages(3, "a", "b")
	if m := plain[2]; m.ID != "test/0/2" || string(m.Value) != "m2" || string(m.Key) != "a" || m.Headers != nil || !m.Timestamp.IsZero() {
		t.Errorf("Messages(3, a, b)[2] = %+v", m)
	}
	spec := pacertest.MessageSpec{Topic: "t", First: 10, Partitions: 3, Full: true}
	next := spec
	next.First = 15
	seen := map[string]bool{}
	for _, run := range [][]*pacer.Message{spec.Build(5), next.Build(5)} {
		for _, m := range run {
			if seen[m.ID] {
				t.Errorf("ID %s twice across runs with disjoint First", m.ID)
			}
			seen[m.ID] = true
			if len(m.Key) == 0 || len(m.Headers) == 0 || m.Timestamp.IsZero() || m.Value[0] != '{' || m.Delivered != 1 {
				t.Errorf("Full message %s lacks a field: %+v", m.ID, m)
			}
			if want := int32(m.Offset % 3); m.Partition != want || !strings.HasPrefix(m.ID, "t/") {
				t.Errorf("message %s: partition %d, want %d", m.ID, m.Partition, want)
			}
		}
	}
	if len(seen) != 10 {
		t.Errorf("%d distinct IDs, want 10", len(seen))
	}
}
