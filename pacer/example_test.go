package pacer_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/pacer"
)

// wordSource is a custom Source: it hands over one message per word. A real
// source would read a broker and settle through the broker's ack.
type wordSource struct {
	words []string
	acked atomic.Int64
}

func (s *wordSource) Run(ctx context.Context, deliver func(context.Context, *pacer.Message) error) error {
	for i, w := range s.words {
		m := &pacer.Message{
			ID:    fmt.Sprintf("words/0/%d", i),
			Value: []byte(w),
			Acker: pacer.AckerFuncs{AckFunc: func(context.Context) error {
				s.acked.Add(1)
				return nil
			}},
		}
		if err := deliver(ctx, m); err != nil {
			return nil // the engine is stopping
		}
	}
	return nil // finite: the engine finishes what it holds, then Run returns
}

func (s *wordSource) Pause()  {}
func (s *wordSource) Resume() {}

// upperSink is a custom Sink: it "delivers" by printing.
type upperSink struct{}

func (upperSink) Deliver(ctx context.Context, msgs []*pacer.Message, results []pacer.Result) pacer.Feedback {
	for i, m := range msgs {
		fmt.Printf("%s -> %s\n", m.ID, strings.ToUpper(string(m.Value)))
		results[i] = pacer.Result{Outcome: pacer.Delivered}
	}
	return pacer.Feedback{}
}

// Embed the engine with your own Source and Sink: 200 messages a second,
// bursts of 5, one delivery at a time.
func Example() {
	src := &wordSource{words: strings.Fields("pace the queue into the api")}
	eng, err := pacer.New(pacer.Config{
		Source:      src,
		Sink:        upperSink{},
		Shaping:     pacer.Shaping{Rate: algorithms.Rate{Count: 200, Per: time.Second}, Burst: 5},
		MaxInFlight: 1,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := eng.Run(context.Background()); err != nil {
		fmt.Println(err)
		return
	}
	st := eng.Status()
	fmt.Printf("delivered %d, acked %d, state %s\n", st.Delivered, src.acked.Load(), st.State)
	// Output:
	// words/0/0 -> PACE
	// words/0/1 -> THE
	// words/0/2 -> QUEUE
	// words/0/3 -> INTO
	// words/0/4 -> THE
	// words/0/5 -> API
	// delivered 6, acked 6, state stopped
}
