package httpsink

import (
	"context"
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/pacer-dev/pacer/internal/app/testapi"
	"github.com/pacer-dev/pacer/pacer"
)

// TestDeliverProperty: over random runs of answers (2xx, 4xx, 408, 429,
// 5xx, dropped connections), each message's outcome is its answer's class;
// nothing is sent after a throttling answer (429, 503) and those messages
// are Retry; and the API holds exactly the messages reported Delivered.
func TestDeliverProperty(t *testing.T) {
	answers := []testapi.Failure{testapi.FailNone, testapi.FailStatus(201), testapi.Fail400, testapi.FailStatus(404),
		testapi.FailStatus(408), testapi.FailStatus(429), testapi.Fail500, testapi.Fail503, testapi.FailDrop}
	rapid.Check(t, func(rt *rapid.T) {
		api := testapi.New(testapi.Config{})
		defer api.Close()
		s, err := New(Config{URL: api.URL()})
		if err != nil {
			rt.Fatal(err)
		}
		defer s.Close()
		n := rapid.IntRange(1, 8).Draw(rt, "n")
		plan := make([]testapi.Failure, n)
		msgs := make([]*pacer.Message, n)
		for i := range plan {
			plan[i] = rapid.SampledFrom(answers).Draw(rt, fmt.Sprint("answer", i))
			api.FailNext(plan[i], 1)
			msgs[i] = &pacer.Message{ID: fmt.Sprint("m", i), Value: []byte(`{}`)}
		}
		res := make([]pacer.Result, n)
		fb := s.Deliver(context.Background(), msgs, res)

		delivered := map[string]bool{}
		throttled := false
		sent := 0
		for i, a := range plan {
			want := pacer.Delivered
			switch {
			case throttled:
				want = pacer.Retry
			case a == testapi.FailDrop, a == 408, a == 429, a >= 500:
				want = pacer.Retry
			case a >= 400:
				want = pacer.Reject
			}
			if !throttled {
				sent++
			}
			if res[i].Outcome != want {
				rt.Fatalf("plan %v: message %d = %v (%v) want %v", plan, i, res[i].Outcome, res[i].Err, want)
			}
			if want == pacer.Delivered {
				delivered[msgs[i].ID] = true
			}
			throttled = throttled || a == 429 || a == 503
		}
		if fb.Throttled != throttled {
			rt.Fatalf("plan %v: Feedback.Throttled = %v want %v", plan, fb.Throttled, throttled)
		}
		acc := api.Accepted()
		if len(acc) != len(delivered) {
			rt.Fatalf("plan %v: API accepted %d, %d reported delivered", plan, len(acc), len(delivered))
		}
		for _, r := range acc {
			if !delivered[r.IdempotencyKey] {
				rt.Fatalf("plan %v: API accepted %s, not reported delivered", plan, r.IdempotencyKey)
			}
		}
		// Exactly one request per message sent: no hidden resends by
		// net/http after a dropped connection.
		st := api.Stats()
		if got := st.Accepted + st.Failed; got != sent {
			rt.Fatalf("plan %v: API saw %d requests want %d", plan, got, sent)
		}
	})
}
