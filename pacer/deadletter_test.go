package pacer_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/pacertest"
)

func TestDeadLetterPaths(t *testing.T) {
	permanent := errors.New("400 invalid payload")
	behave := func(m *pacer.Message) (pacer.Result, pacer.Feedback, time.Duration) {
		switch m.ID {
		case "test/0/1":
			return pacer.Result{Outcome: pacer.Reject, Err: permanent}, pacer.Feedback{Status: 400}, 0
		case "test/0/2":
			return pacer.Result{Outcome: pacer.Retry, Err: errors.New("502")}, pacer.Feedback{Status: 502}, 0
		}
		return pacer.Result{Outcome: pacer.Delivered}, pacer.Feedback{}, 0
	}
	run := func(t *testing.T, dl pacer.DeadLetterer) (*pacertest.Ledger, *pacertest.Sink) {
		msgs := pacertest.Messages(4)
		led := pacertest.NewLedger()
		led.Attach(msgs)
		sink := &pacertest.Sink{Behave: behave}
		cfg := pacer.Config{Source: pacertest.NewSource(msgs), Sink: sink, DeadLetterRetry: 7 * time.Second,
			Retry: pacer.RetryConfig{MaxAttempts: 3, Initial: time.Second, Max: 4 * time.Second, Seed: 9}}
		if dl != nil {
			cfg.DeadLetter = dl
		}
		e, err := pacer.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		return led, sink
	}
	t.Run("written", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			dl := &pacertest.DeadLetters{}
			led, sink := run(t, dl)
			d, ok := dl.Get("test/0/1")
			if !ok || !errors.Is(d.Reason, pacer.ErrRejected) || !errors.Is(d.Reason, permanent) || d.Attempt != 1 {
				t.Errorf("rejected message dead letter = %+v, %v; want ErrRejected wrapping the sink error, attempt 1", d, ok)
			}
			d, ok = dl.Get("test/0/2")
			var dle *pacer.DeadLetterError
			if !ok || !errors.As(d.Reason, &dle) || !errors.Is(d.Reason, pacer.ErrRetriesExhausted) || dle.Attempts != 3 {
				t.Errorf("exhausted message dead letter = %+v, %v; want ErrRetriesExhausted after 3 attempts", d, ok)
			}
			for _, id := range []string{"test/0/1", "test/0/2"} {
				if s, _ := led.Get(id); s.How != pacer.SettledTerm || s.Reason == "" {
					t.Errorf("%s settled %v reason %q, want term with reason", id, s.How, s.Reason)
				}
			}
			// Equal jitter: attempt k+1 comes at least half of Initial*2^(k-1)
			// and at most all of it after attempt k ends.
			var last time.Time
			k := 0
			for _, a := range sink.Deliveries() {
				if a.ID != "test/0/2" {
					continue
				}
				if k > 0 {
					if gap, ceil := a.At.Sub(last), time.Second<<(k-1); gap > ceil || gap < ceil/2 {
						t.Errorf("attempt %d came %v after the previous, outside the backoff's [%v, %v]", a.Attempt, gap, ceil/2, ceil)
					}
				}
				last, k = a.End, k+1
			}
			if k != 3 {
				t.Errorf("%d attempts, want 3", k)
			}
		})
	})
	t.Run("write fails", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			dl := &pacertest.DeadLetters{Fail: func(*pacer.Message) error { return errors.New("dlq down") }}
			led, _ := run(t, dl)
			for _, id := range []string{"test/0/1", "test/0/2"} {
				if s, _ := led.Get(id); s.How != pacer.SettledNak || s.Delay != 7*time.Second {
					t.Errorf("%s settled %v delay %v, want nak after 7s (left for redelivery)", id, s.How, s.Delay)
				}
			}
			if led.Count(pacer.SettledAck) != 2 {
				t.Errorf("acked %d, want 2", led.Count(pacer.SettledAck))
			}
		})
	})
	t.Run("none configured", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			led, _ := run(t, nil)
			if s, _ := led.Get("test/0/1"); s.How != pacer.SettledNak {
				t.Errorf("no dead-letter destination: settled %v, want nak", s.How)
			}
		})
	})
}

// lastAcker marks a message as on its last broker delivery (JetStream's
// max_deliver reached): a Nak would let the broker discard it.
type lastAcker struct{ pacer.Acker }

func (lastAcker) LastDelivery() bool { return true }

// A permanent failure on a message's last broker delivery, while the
// dead-letter destination is down, must not be Nak'ed (the broker would
// discard it): the engine keeps it and retries the write until it lands.
func TestDeadLetterLastDeliveryKeepsRetrying(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		msgs := pacertest.Messages(3)
		led := pacertest.NewLedger()
		led.Attach(msgs)
		msgs[1].Acker = lastAcker{msgs[1].Acker}
		fails := 0
		dl := &pacertest.DeadLetters{Fail: func(m *pacer.Message) error {
			if fails < 4 {
				fails++
				return errors.New("dlq down")
			}
			return nil
		}}
		sink := &pacertest.Sink{Behave: func(m *pacer.Message) (pacer.Result, pacer.Feedback, time.Duration) {
			if m.ID == msgs[1].ID {
				return pacer.Result{Outcome: pacer.Reject, Err: errors.New("400")}, pacer.Feedback{Status: 400}, 0
			}
			return pacer.Result{Outcome: pacer.Delivered}, pacer.Feedback{}, 0
		}}
		e, err := pacer.New(pacer.Config{Source: pacertest.NewSource(msgs), Sink: sink, DeadLetter: dl,
			DeadLetterRetry: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := e.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		if s, _ := led.Get(msgs[1].ID); s.How != pacer.SettledTerm {
			t.Errorf("last-delivery message settled %v, want term after the dead-letter write landed (a nak lets the broker discard it)", s.How)
		}
		if _, ok := dl.Get(msgs[1].ID); !ok || fails != 4 {
			t.Errorf("dead letter written %v after %d failures, want written after 4", ok, fails)
		}
		if took := time.Since(start); took < 8*time.Second {
			t.Errorf("run took %v, want >= 4 retries x 2s", took)
		}
		if led.Count(pacer.SettledAck) != 2 {
			t.Errorf("acked %d, want 2", led.Count(pacer.SettledAck))
		}
	})
}
