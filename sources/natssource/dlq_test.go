package natssource_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
	"github.com/pacer-dev/pacer/internal/testsupport/testkit"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/sources/natssource"
)

// rejectSink rejects every message: each one goes to the dead-letter
// destination.
type rejectSink struct{}

func (rejectSink) Deliver(_ context.Context, msgs []*pacer.Message, results []pacer.Result) pacer.Feedback {
	for i := range msgs {
		results[i] = pacer.Result{Outcome: pacer.Reject, Err: errors.New("http 400: bad field")}
	}
	return pacer.Feedback{Status: 400}
}

// newDeadLetter returns a dead-letter publisher to subject, closed in
// t.Cleanup.
func newDeadLetter(t *testing.T, nc *nats.Conn, subject string) *natssource.DeadLetter {
	t.Helper()
	d, err := natssource.NewDeadLetter(natssource.DeadLetterConfig{NC: nc, Subject: subject})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// streamMsgs is how many messages stream name holds on subject.
func streamMsgs(t *testing.T, js jetstream.JetStream, name, subject string) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	str, err := js.Stream(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	info, err := str.Info(ctx, jetstream.WithSubjectFilter(subject))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Subjects[subject]
}

// TestDeadLetterTwoPipelinesShareOneStream: two pipelines read the same 20
// messages (two consumers of one stream) and reject every one into their
// own subjects of one dead-letter stream: all 40 dead letters are stored,
// and only then the originals settled (with the ID alone as Nats-Msg-Id the
// second pipeline's 20 were dropped as duplicates, their originals
// terminated).
func TestDeadLetterTwoPipelinesShareOneStream(t *testing.T) {
	url := testenv.NATS(t)
	nc, js := connect(t, url)
	name := testenv.UniqueName(t, "DL2")
	dlq := testenv.UniqueName(t, "DL2D")
	stream(t, js, name)
	stream(t, js, dlq)
	publishValues(t, js, name+".in", "poison", 20)
	for _, p := range []string{"a", "b"} {
		src := newSource(t, natssource.Config{Conn: natssource.Conn{URL: url}, Stream: name, Consumer: p, Create: true,
			AckWait: testAckWait, Batch: 4, FetchWait: time.Second})
		runEngine(t, pacer.Config{Source: src, Sink: rejectSink{}, DeadLetter: newDeadLetter(t, nc, dlq+"."+p),
			Breaker: pacer.BreakerConfig{Disabled: true}})
	}
	testkit.Eventually(t, 60*time.Second, "40 dead letters", func() bool {
		return streamMsgs(t, js, dlq, dlq+".a")+streamMsgs(t, js, dlq, dlq+".b") >= 40
	})
	for _, p := range []string{"a", "b"} {
		if n := streamMsgs(t, js, dlq, dlq+"."+p); n != 20 {
			t.Errorf("dead letters of pipeline %s = %d, want 20", p, n)
		}
	}
}

// TestDeadLetterDuplicateOfAnotherRecord: the dead-letter stream reports a
// publish as a duplicate of a record that is not this message's dead
// letter: DeadLetter fails (so the original is not settled); a retried
// write of a dead letter that is stored succeeds.
func TestDeadLetterDuplicateOfAnotherRecord(t *testing.T) {
	url := testenv.NATS(t)
	nc, js := connect(t, url)
	name := testenv.UniqueName(t, "DLDUP")
	stream(t, js, name)
	subj := name + ".dead"
	d := newDeadLetter(t, nc, subj)
	ctx := context.Background()
	m := &pacer.Message{ID: "S/1@1764600000000000000", Value: []byte("body"), Topic: "S.in", Offset: 1}
	// Someone else's record under the ID pacer uses for m's dead letter.
	if _, err := js.Publish(ctx, subj, []byte("other"), jetstream.WithMsgID("dlq/"+subj+"/"+m.ID)); err != nil {
		t.Fatal(err)
	}
	if err := d.DeadLetter(ctx, m, errors.New("rejected")); !errors.Is(err, natssource.ErrDeadLetterDuplicate) {
		t.Fatalf("DeadLetter over another record = %v, want ErrDeadLetterDuplicate", err)
	}
	m2 := &pacer.Message{ID: "S/2@1764600000000000001", Value: []byte("body2"), Topic: "S.in", Offset: 2}
	for i := range 2 {
		if err := d.DeadLetter(ctx, m2, errors.New("rejected")); err != nil {
			t.Fatalf("DeadLetter #%d of a stored dead letter: %v", i+1, err)
		}
	}
	if n := streamMsgs(t, js, name, subj); n != 2 {
		t.Fatalf("stream holds %d records, want 2 (the other one, m2's once)", n)
	}
}

// TestDeadLetterDropsControlHeaders: a message carrying JetStream's
// publish instructions (Nats-Expected-Stream, Nats-Rollup, Nats-Msg-Id,
// Nats-TTL) is dead-lettered without them, its application headers kept:
// with Nats-Expected-Stream every write failed (the poison looped), with
// Nats-Rollup on a roll-up stream each dead letter purged the ones before.
func TestDeadLetterDropsControlHeaders(t *testing.T) {
	url := testenv.NATS(t)
	nc, js := connect(t, url)
	ctx := context.Background()
	name := testenv.UniqueName(t, "DLHDR")
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{name + ".>"}, AllowRollup: true}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = js.DeleteStream(context.Background(), name) })
	subj := name + ".dead"
	d := newDeadLetter(t, nc, subj)
	for i := range 10 {
		m := &pacer.Message{ID: "ORIG/" + string(rune('a'+i)), Value: []byte("body"), Topic: "orig.in", Offset: int64(i + 1),
			Headers: map[string]string{
				"Nats-Expected-Stream": "ORIG", "Nats-Rollup": "sub", "Nats-Msg-Id": "producer-1",
				"Nats-TTL": "1s", "nats-expected-last-sequence": "3", "X-Trace": "t1",
			}}
		if err := d.DeadLetter(ctx, m, errors.New("rejected")); err != nil {
			t.Fatalf("DeadLetter %d: %v", i, err)
		}
	}
	if n := streamMsgs(t, js, name, subj); n != 10 {
		t.Fatalf("roll-up dead-letter stream holds %d of 10 dead letters", n)
	}
	str, err := js.Stream(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := str.GetLastMsgForSubject(ctx, subj)
	if err != nil {
		t.Fatal(err)
	}
	for k := range raw.Header {
		switch k {
		case "Nats-Msg-Id": // pacer's own dead-letter ID
			if v := raw.Header.Get(k); v != "dlq/"+subj+"/ORIG/j" {
				t.Errorf("Nats-Msg-Id = %q, want pacer's dlq/%s/ORIG/j", v, subj)
			}
		case "Nats-Expected-Stream", "Nats-Rollup", "Nats-TTL", "nats-expected-last-sequence":
			t.Errorf("control header %s copied into the dead letter", k)
		}
	}
	if raw.Header.Get("X-Trace") != "t1" || raw.Header.Get(natssource.HeaderID) != "ORIG/j" {
		t.Errorf("dead letter headers = %v, want X-Trace and %s kept", raw.Header, natssource.HeaderID)
	}
}
