package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/pacer-dev/pacer/internal/app/loadgen"
)

// produceCmd publishes the demo's bursty load to Kafka or NATS JetStream,
// for docker compose.
type produceCmd struct {
	Kafka   string `help:"Kafka brokers (comma-separated)." xor:"target" required:""`
	Topic   string `default:"orders" help:"Kafka topic."`
	NATS    string `name:"nats" help:"NATS URL." xor:"target" required:""`
	Stream  string `default:"EVENTS" help:"JetStream stream (created if missing)."`
	Subject string `default:"events.demo" help:"NATS subject."`

	Spike      int           `default:"2000" help:"Messages in each spike."`
	Steady     int           `default:"3000" help:"Messages in the steady stream."`
	SteadyRate float64       `default:"40" help:"Steady stream rate (messages/s)."`
	Gap        time.Duration `default:"20s" help:"Quiet time before the second spike."`
	Loop       bool          `help:"Repeat forever."`
	Pause      time.Duration `default:"30s" help:"Quiet time between rounds with --loop."`
}

func (c produceCmd) Run(e *env) error {
	plan := loadgen.Plan{Spike1: c.Spike, Steady: c.Steady, SteadyRate: c.SteadyRate, Spike2: c.Spike, Gap: c.Gap}
	publish, closeFn, err := c.publisher(e.ctx)
	if err != nil {
		return err
	}
	defer closeFn()
	for round := 1; ; round++ {
		start := time.Now()
		err := plan.Run(e.ctx, func(ctx context.Context, i int) error {
			return publish(ctx, fmt.Sprintf("r%d-%d", round, i), fmt.Appendf(nil, `{"round":%d,"n":%d,"at":%q}`, round, i, time.Now().UTC().Format(time.RFC3339Nano)))
		})
		if errors.Is(err, context.Canceled) {
			return nil
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "produce: round %d: %d messages in %v\n", round, plan.Total(), time.Since(start).Round(time.Millisecond))
		if !c.Loop {
			return nil
		}
		select {
		case <-e.ctx.Done():
			return nil
		case <-time.After(c.Pause):
		}
	}
}

func (c produceCmd) publisher(ctx context.Context) (func(context.Context, string, []byte) error, func(), error) {
	if c.Kafka != "" {
		cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(c.Kafka, ",")...), kgo.DefaultProduceTopic(c.Topic),
			kgo.AllowAutoTopicCreation())
		if err != nil {
			return nil, nil, err
		}
		return func(ctx context.Context, key string, v []byte) error {
			return cl.ProduceSync(ctx, &kgo.Record{Key: []byte(key), Value: v}).FirstErr()
		}, cl.Close, nil
	}
	nc, err := nats.Connect(c.NATS, nats.MaxReconnects(-1))
	if err != nil {
		return nil, nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: c.Stream, Subjects: []string{subjectRoot(c.Subject)}}); err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("stream %s: %w", c.Stream, err)
	}
	return func(ctx context.Context, key string, v []byte) error {
		m := nats.NewMsg(c.Subject)
		m.Data = v
		m.Header.Set("Nats-Msg-Id", key)
		m.Header.Set("tenant", "t"+key[len(key)-1:])
		_, err := js.PublishMsg(ctx, m)
		return err
	}, nc.Close, nil
}

// subjectRoot turns "events.demo" into "events.>" so the stream takes the
// whole family.
func subjectRoot(s string) string {
	if i := strings.IndexByte(s, '.'); i > 0 {
		return s[:i] + ".>"
	}
	return s
}
