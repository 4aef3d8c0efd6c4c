package route_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/pacertest"
	"github.com/pacer-dev/pacer/pacer/route"
)

// countingSink counts what each destination delivered.
type countingSink struct {
	mu  sync.Mutex
	got map[string]int
}

func (s *countingSink) Deliver(_ context.Context, msgs []*pacer.Message, results []pacer.Result) pacer.Feedback {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, m := range msgs {
		s.got[string(m.Key)]++
		results[i] = pacer.Result{Outcome: pacer.Delivered}
	}
	return pacer.Feedback{}
}

// One source, one engine per destination (here the message key names the
// customer's endpoint), each at its own rate: the big customer at 500/s,
// every other one at 50/s.
func Example() {
	msgs := pacertest.Messages(30, "big-customer", "small-shop", "tiny-blog")
	sink := &countingSink{got: map[string]int{}}
	r, err := route.New(route.Config{
		Source:      pacertest.NewSource(msgs),
		Destination: func(m *pacer.Message) string { return string(m.Key) },
		Engine: func(dest string) (pacer.Config, error) {
			rate := algorithms.Rate{Count: 50, Per: time.Second}
			if dest == "big-customer" {
				rate.Count = 500
			}
			// A real worker builds one HTTP sink per destination here.
			return pacer.Config{Sink: sink, Shaping: pacer.Shaping{Rate: rate, Burst: 5}}, nil
		},
	})
	if err != nil {
		panic(err)
	}
	if err := r.Run(context.Background()); err != nil {
		panic(err)
	}
	st := r.Status()
	fmt.Println("destinations opened:", st.Opened)
	for _, d := range []string{"big-customer", "small-shop", "tiny-blog"} {
		fmt.Println(d, sink.got[d])
	}
	// Output:
	// destinations opened: 3
	// big-customer 10
	// small-shop 10
	// tiny-blog 10
}
