package natssource_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
	"github.com/pacer-dev/pacer/sources/natssource"
)

// TestPendingReader: against a real server (PACER_TEST_NATS_URL, else
// in-process), the backlog is NumPending + NumAckPending of the durable, and
// the oldest message is the first one above the ack floor.
func TestPendingReader(t *testing.T) {
	url := testenv.NATS(t)
	_, js := connect(t, url)
	name := testenv.UniqueName(t, "PEND")
	stream(t, js, name)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cons, err := js.CreateOrUpdateConsumer(ctx, name, jetstream.ConsumerConfig{Durable: "c", AckPolicy: jetstream.AckExplicitPolicy,
		FilterSubject: name + ".in"})
	if err != nil {
		t.Fatal(err)
	}
	publishN(t, js, name+".in", 0, 6)
	publishN(t, js, name+".other", 0, 2) // not the consumer's

	r, err := natssource.NewPendingReader(natssource.PendingConfig{Conn: natssource.Conn{URL: url}, Stream: name, Consumer: "c"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	read := func() (int64, int64, int64, time.Time) {
		t.Helper()
		b, err := r.ReadBacklog(ctx)
		if err != nil {
			t.Fatalf("ReadBacklog: %v", err)
		}
		return b.Messages, b.Pending, b.AckPending, b.Oldest
	}
	st, err := js.Stream(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	stored := func(seq uint64) time.Time {
		t.Helper()
		m, err := st.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		return m.Time
	}

	if n, p, a, oldest := read(); n != 6 || p != 6 || a != 0 || !oldest.Equal(stored(1)) {
		t.Errorf("nothing fetched: messages %d pending %d ack pending %d oldest %v; want 6 6 0 %v", n, p, a, oldest, stored(1))
	}

	batch, err := cons.Fetch(2, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var got []jetstream.Msg
	for m := range batch.Messages() {
		got = append(got, m)
	}
	if len(got) != 2 {
		t.Fatalf("fetched %d, want 2", len(got))
	}
	if err := got[0].DoubleAck(ctx); err != nil { // seq 1 done, seq 2 held
		t.Fatal(err)
	}
	if n, p, a, oldest := read(); n != 5 || p != 4 || a != 1 || !oldest.Equal(stored(2)) {
		t.Errorf("one acked, one held: messages %d pending %d ack pending %d oldest %v; want 5 4 1 %v", n, p, a, oldest, stored(2))
	}
}

// TestPendingReaderMissingConsumer: a consumer that does not exist is an
// error naming it, not an empty backlog.
func TestPendingReaderMissingConsumer(t *testing.T) {
	url := testenv.NATS(t)
	_, js := connect(t, url)
	name := testenv.UniqueName(t, "PENDX")
	stream(t, js, name)
	r, err := natssource.NewPendingReader(natssource.PendingConfig{Conn: natssource.Conn{URL: url}, Stream: name, Consumer: "nobody"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if b, err := r.ReadBacklog(context.Background()); err == nil {
		t.Fatalf("ReadBacklog of a missing consumer = %+v, nil", b)
	}
}
