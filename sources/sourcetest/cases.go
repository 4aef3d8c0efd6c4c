package sourcetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/pacer"
)

func testEveryMessageDelivered(t *testing.T, h Harness) {
	env := h.Setup(t)
	recs := records("all", 100)
	publish(t, h, env, recs)
	c := start(t, env.NewSource(t), nil)
	c.waitAll(t, h.Features.Timeout, recs)
	c.stop(t)

	c.mu.Lock()
	defer c.mu.Unlock()
	ids := map[string]string{} // ID -> value
	for _, m := range c.got {
		v := string(m.Value)
		var n int
		if _, err := fmt.Sscanf(v, "all-%d", &n); err != nil {
			t.Fatalf("unexpected value %q", v)
		}
		if m.ID == "" {
			t.Errorf("%s: empty ID", v)
		}
		if prev, ok := ids[m.ID]; ok && prev != v {
			t.Errorf("ID %q for both %q and %q", m.ID, prev, v)
		}
		ids[m.ID] = v
		if m.Delivered < 1 {
			t.Errorf("%s: Delivered = %d want >= 1", v, m.Delivered)
		}
		if m.Topic == "" {
			t.Errorf("%s: empty Topic", v)
		}
		if got, want := string(m.Key), fmt.Sprintf("k%d", n%7); got != want {
			t.Errorf("%s: Key = %q want %q", v, got, want)
		}
		if got, want := m.Headers["n"], fmt.Sprint(n); got != want {
			t.Errorf("%s: Headers[n] = %q want %q", v, got, want)
		}
		if got := m.Headers["prefix"]; got != "all" {
			t.Errorf("%s: Headers[prefix] = %q want all", v, got)
		}
	}
	if len(ids) != len(recs) {
		t.Errorf("%d distinct IDs for %d records", len(ids), len(recs))
	}
}

func testPauseResume(t *testing.T, h Harness) {
	env := h.Setup(t)
	recs := records("pause", 200)
	publish(t, h, env, recs)
	src := env.NewSource(t)
	// deliver may run concurrently (one call per Kafka partition): the
	// pause decision and its count are taken under c.mu.
	pausedAt := -1
	c := start(t, src, func(_ context.Context, c *consumer, m *pacer.Message) action {
		c.mu.Lock()
		defer c.mu.Unlock()
		if len(c.got) >= 19 && pausedAt < 0 {
			src.Pause()
			pausedAt = len(c.got) + 1 // this one is handed over after Pause; count it before
		}
		return doAck
	})
	c.waitUntil(t, h.Features.Timeout, "20 messages", func() bool { return pausedAt >= 0 && len(c.got) >= pausedAt })
	extra := c.quiet(h.Features.Quiet)
	after := c.count()
	c.mu.Lock()
	at := pausedAt
	c.mu.Unlock()
	if after-at > h.Features.PauseBound {
		t.Fatalf("after Pause: %d messages handed over (%d during a %v watch), documented bound %d",
			after-at, extra, h.Features.Quiet, h.Features.PauseBound)
	}
	t.Logf("after Pause: %d messages (bound %d)", after-at, h.Features.PauseBound)
	src.Resume()
	c.waitAll(t, h.Features.Timeout, recs)
}

func testPausedBeforeRun(t *testing.T, h Harness) {
	env := h.Setup(t)
	recs := records("prepaused", 30)
	publish(t, h, env, recs)
	src := env.NewSource(t)
	src.Pause()
	src.Pause() // idempotent
	c := start(t, src, nil)
	if n := c.quiet(h.Features.Quiet); n > h.Features.PauseBound {
		t.Fatalf("paused before Run: %d messages handed over, bound %d", n, h.Features.PauseBound)
	}
	src.Resume()
	src.Resume()
	c.waitAll(t, h.Features.Timeout, recs)
}

// testUnackedComesBack: a consumer stopped before acking some messages; a
// new consumer in the same group gets every one of them again.
func testUnackedComesBack(t *testing.T, h Harness) {
	env := h.Setup(t)
	recs := records("unacked", 60)
	publish(t, h, env, recs)
	held := map[string]bool{}
	for i, r := range recs {
		if i%3 == 0 {
			held[string(r.Value)] = true
		}
	}
	a := start(t, env.NewSource(t), func(_ context.Context, _ *consumer, m *pacer.Message) action {
		if held[string(m.Value)] {
			return doHold
		}
		return doAck
	})
	a.waitAll(t, h.Features.Timeout, recs)
	a.stop(t)

	b := start(t, env.NewSource(t), nil)
	b.waitUntil(t, h.Features.Timeout, fmt.Sprintf("the %d unacked messages again", len(held)), func() bool {
		for v := range held {
			if b.byValue[v] == 0 {
				return false
			}
		}
		return true
	})
	if !h.Features.Watermark {
		// Individual acks: nothing acked may come back.
		b.quiet(h.Features.Quiet)
		b.mu.Lock()
		defer b.mu.Unlock()
		for v := range b.byValue {
			if !held[v] {
				t.Errorf("acked message %s delivered again", v)
			}
		}
	}
}

// testNoCommitPastUnacked: one message held, all later ones acked; after a
// restart the held one comes back: nothing was committed past it. (With a
// watermark the later ones of its partition may come back too, unless the
// source records them as final above the held one, as Kafka's commit
// metadata does.)
func testNoCommitPastUnacked(t *testing.T, h Harness) {
	env := h.Setup(t)
	recs := records("gap", 40)
	publish(t, h, env, recs)
	const heldValue = "gap-4"
	var heldMsg *pacer.Message
	a := start(t, env.NewSource(t), func(_ context.Context, _ *consumer, m *pacer.Message) action {
		if string(m.Value) == heldValue {
			heldMsg = m
			return doHold
		}
		return doAck
	})
	a.waitAll(t, h.Features.Timeout, recs)
	a.stop(t)

	want := map[string]bool{heldValue: true}
	b := start(t, env.NewSource(t), nil)
	b.waitUntil(t, h.Features.Timeout, fmt.Sprintf("%d messages from the held one on", len(want)), func() bool {
		for v := range want {
			if b.byValue[v] == 0 {
				return false
			}
		}
		return true
	})
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, m := range b.got {
		if string(m.Value) == heldValue {
			if m.ID != heldMsg.ID {
				t.Errorf("redelivered %s has ID %q, first delivery had %q", heldValue, m.ID, heldMsg.ID)
			}
			// A committed position (Watermark) does not count deliveries
			// across a restart: Delivered starts at 1 again.
			if h.Features.NakRedeliversLive && !h.Features.Watermark && m.Delivered < 2 {
				t.Errorf("redelivered %s has Delivered = %d want >= 2", heldValue, m.Delivered)
			}
		}
	}
}

func testNak(t *testing.T, h Harness) {
	env := h.Setup(t)
	recs := records("nak", 10)
	publish(t, h, env, recs)
	const nakValue = "nak-3"
	a := start(t, env.NewSource(t), func(_ context.Context, c *consumer, m *pacer.Message) action {
		c.mu.Lock()
		first := c.byValue[nakValue] == 0
		c.mu.Unlock()
		if string(m.Value) == nakValue && first {
			return doNak
		}
		return doAck
	})
	a.waitAll(t, h.Features.Timeout, recs)
	if h.Features.NakRedeliversLive {
		a.waitUntil(t, h.Features.Timeout, "the nak'd message again", func() bool { return a.byValue[nakValue] >= 2 })
		return
	}
	a.stop(t)
	b := start(t, env.NewSource(t), nil)
	b.waitUntil(t, h.Features.Timeout, "the nak'd message after restart", func() bool { return b.byValue[nakValue] >= 1 })
}

// testSharedGroup: two consumers share the work; one leaves holding
// unacked messages; the other ends up with everything. The first consumer's
// first hand-over waits (watching its ctx, as an engine with a full queue
// does) until the second has received something, so both take part, and a
// Source whose rebalance waited for that hand-over would time out here.
func testSharedGroup(t *testing.T, h Harness) {
	env := h.Setup(t)
	first := records("share1", 100)
	second := records("share2", 100)
	publish(t, h, env, first)

	var b *consumer
	bStarted := make(chan struct{})
	a := start(t, env.NewSource(t), func(ctx context.Context, c *consumer, m *pacer.Message) action {
		if c.count() > 0 {
			return doAck
		}
		<-bStarted
		for b.count() == 0 {
			b.mu.Lock()
			ch := b.changed
			b.mu.Unlock()
			if b.count() > 0 {
				break
			}
			select {
			case <-ch:
			case <-ctx.Done():
				return doCtxErr // a rebalance: hand nothing over, let it go
			}
		}
		return doAck
	})
	b = start(t, env.NewSource(t), func(_ context.Context, c *consumer, m *pacer.Message) action {
		if c.count()%2 == 1 {
			return doHold
		}
		return doAck
	})
	close(bStarted)
	union := func() map[string]bool {
		u := map[string]bool{}
		for _, c := range []*consumer{a, b} {
			c.mu.Lock()
			for v := range c.byValue {
				u[v] = true
			}
			c.mu.Unlock()
		}
		return u
	}
	deadline := time.Now().Add(h.Features.Timeout)
	for {
		u := union()
		missing := 0
		for _, r := range first {
			if !u[string(r.Value)] {
				missing++
			}
		}
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out: %d of the first %d records never handed over", missing, len(first))
		}
		time.Sleep(10 * time.Millisecond) // polling two consumers
	}
	b.stop(t)
	b.mu.Lock()
	var bHeld []Record
	for _, m := range b.got {
		if !b.acked[string(m.Value)] {
			bHeld = append(bHeld, Record{Value: m.Value})
		}
	}
	bCount := len(b.got)
	b.mu.Unlock()
	t.Logf("a handed %d, b handed %d (holding %d) before b left", a.count(), bCount, len(bHeld))
	if a.count() == 0 || bCount == 0 {
		t.Errorf("work not shared: a handed %d, b %d", a.count(), bCount)
	}

	publish(t, h, env, second)
	a.waitAll(t, h.Features.Timeout, append(second, bHeld...))
}

func testStopsWhenDeliverFails(t *testing.T, h Harness) {
	env := h.Setup(t)
	recs := records("fail", 5)
	publish(t, h, env, recs)
	a := start(t, env.NewSource(t), func(context.Context, *consumer, *pacer.Message) action { return doFail })
	select {
	case <-a.done:
	case <-time.After(h.Features.Timeout):
		t.Fatalf("Run did not return within %v after deliver failed", h.Features.Timeout)
	}
	a.cancel()
	if n := a.count(); n != 0 {
		t.Fatalf("%d messages recorded though deliver refused all", n)
	}
	b := start(t, env.NewSource(t), nil)
	b.waitAll(t, h.Features.Timeout, recs)
}

// testBrokerRestart: the broker goes down while a source runs and comes
// back with its data; the source reconnects by itself (no restart of the
// source), and every message published before and after is delivered.
func testBrokerRestart(t *testing.T, h Harness) {
	if h.SetupRestartable == nil {
		t.Skip("sourcetest: BrokerRestart does not apply: the harness cannot restart its broker (SetupRestartable is nil)")
	}
	env := h.SetupRestartable(t)
	before, after := records("before", 50), records("after", 50)
	publish(t, h, env, before)
	a := start(t, env.NewSource(t), nil)
	a.waitUntil(t, h.Features.Timeout, "every message before the restart acked", func() bool {
		for _, r := range before {
			if !a.acked[string(r.Value)] {
				return false
			}
		}
		return true
	})
	if err := env.RestartBroker(); err != nil {
		t.Fatalf("restarting the broker: %v", err)
	}
	// Publishing may race the broker's return.
	deadline := time.Now().Add(h.Features.Timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := env.Publish(ctx, after)
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("publishing after the restart: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	a.waitAll(t, h.Features.Timeout, after)
	a.stop(t)
}

// testCancelledWhileStarting: ctx ending before Run or while it still
// connects and sets up (a SIGTERM just after start) is a clean stop: Run
// returns nil or ctx's error itself, which the engine tells from a fatal
// error by identity (a setup error wrapping context.Canceled made the
// worker exit 1), and nothing published is lost.
func testCancelledWhileStarting(t *testing.T, h Harness) {
	env := h.Setup(t)
	recs := records("early", 3)
	publish(t, h, env, recs)
	for round := range 6 {
		ctx, cancel := context.WithCancel(context.Background())
		if round%2 == 0 {
			cancel() // before Run
		}
		done := make(chan error, 1)
		go func() { done <- env.NewSource(t).Run(ctx, func(context.Context, *pacer.Message) error { return nil }) }()
		cancel() // while Run starts (or already cancelled)
		select {
		case err := <-done:
			if err != nil && err != ctx.Err() {
				t.Errorf("round %d: Run cancelled while starting returned %q, want nil or ctx's error itself", round, err)
			}
		case <-time.After(h.Features.Timeout):
			t.Fatalf("round %d: Run did not return within %v of cancel", round, h.Features.Timeout)
		}
	}
	c := start(t, env.NewSource(t), nil)
	c.waitAll(t, h.Features.Timeout, recs)
}
