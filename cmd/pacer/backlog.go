package main

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/pacer-dev/pacer/internal/config"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/metrics"
	"github.com/pacer-dev/pacer/sources/kafka"
	natssrc "github.com/pacer-dev/pacer/sources/nats"
)

// backlogReader is a BacklogReader that holds a connection.
type backlogReader interface {
	pacer.BacklogReader
	Close() error
}

// newBacklogReader builds the read-only backlog reader for the configured
// source: the consumer group's lag (Kafka) or the durable's pending counts
// (JetStream). It does not connect.
func newBacklogReader(cfg *config.Config) (backlogReader, error) {
	switch cfg.Source.Type {
	case "kafka":
		k := cfg.Source.Kafka
		return kafka.NewLagReader(kafka.LagConfig{Client: kafkaClient(k), Group: k.Group, Topics: k.Topics,
			InitialOffset: kafka.InitialOffset(k.InitialOffset)})
	case "nats":
		n := cfg.Source.NATS
		return natssrc.NewPendingReader(natssrc.PendingConfig{Conn: natsConn(n), Stream: n.Stream, Consumer: n.Consumer})
	}
	return nil, fmt.Errorf("source.type %q: no backlog reader", cfg.Source.Type)
}

// backlogWatch measures the backlog every interval and keeps the recent
// measurements, for /status, /metrics and `pacer status`. The drain time
// follows the change over the last minute of measurements (see
// pacer.DrainTime); with a single one it assumes the current rate and no
// new arrivals. Safe for concurrent use.
type backlogWatch struct {
	reader   pacer.BacklogReader
	rate     func() float64 // events per second the worker delivers at now
	interval time.Duration

	mu      sync.Mutex
	samples []pacer.Backlog // oldest first, spanning at most window
	errs    uint64
	lastErr string
}

// backlogWindow is how far back the drain estimate looks.
const backlogWindow = time.Minute

// run measures at once, then every interval, until ctx is done.
func (b *backlogWatch) run(ctx context.Context) {
	t := time.NewTicker(b.interval)
	defer t.Stop()
	for {
		b.measure(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// measure makes one measurement and records it.
func (b *backlogWatch) measure(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, max(b.interval, 10*time.Second))
	defer cancel()
	got, err := b.reader.ReadBacklog(ctx)
	b.record(got, err)
}

func (b *backlogWatch) record(got pacer.Backlog, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err != nil {
		b.errs++
		b.lastErr = err.Error()
		return
	}
	b.lastErr = ""
	b.samples = append(b.samples, got)
	for len(b.samples) > 2 && got.At.Sub(b.samples[1].At) >= backlogWindow {
		b.samples = b.samples[1:]
	}
}

// snapshot returns the last measurement with its drain estimate.
func (b *backlogWatch) snapshot(now time.Time) metrics.BacklogSnapshot {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := metrics.BacklogSnapshot{Errors: b.errs, Now: now}
	if len(b.samples) == 0 {
		return s
	}
	cur := b.samples[len(b.samples)-1]
	var prev pacer.Backlog
	if len(b.samples) > 1 {
		prev = b.samples[0]
	}
	rate := 0.0
	if b.rate != nil {
		rate = b.rate()
	}
	s.Backlog = cur
	s.Drain, s.Draining = pacer.DrainTime(prev, cur, rate)
	return s
}

func (b *backlogWatch) lastError() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lastErr
}

// backlogView is the backlog in /status and `pacer status`.
type backlogView struct {
	Messages   int64                `json:"messages"`
	Pending    int64                `json:"pending"`
	AckPending int64                `json:"ack_pending"`
	Partitions []pacer.PartitionLag `json:"partitions,omitempty"`
	// OldestAge is the oldest unsettled message's age ("" when unknown or
	// nothing waits).
	OldestAge        string  `json:"oldest_age,omitempty"`
	OldestAgeSeconds float64 `json:"oldest_age_seconds"`
	// Drain is the time until the backlog drains at the observed pace;
	// "never" when it is not shrinking.
	Drain        string    `json:"drain"`
	DrainSeconds *float64  `json:"drain_seconds"` // null when not shrinking
	MeasuredAt   time.Time `json:"measured_at,omitzero"`
	Errors       uint64    `json:"errors"`
	LastError    string    `json:"last_error,omitempty"`
}

func newBacklogView(s metrics.BacklogSnapshot, lastErr string) *backlogView {
	v := &backlogView{Errors: s.Errors, LastError: lastErr}
	b := s.Backlog
	if b.At.IsZero() {
		v.Drain = "unknown"
		return v
	}
	v.Messages, v.Pending, v.AckPending, v.Partitions, v.MeasuredAt = b.Messages, b.Pending, b.AckPending, b.Partitions, b.At.UTC()
	if age := b.OldestAge(s.Now); age > 0 {
		v.OldestAge, v.OldestAgeSeconds = roundDuration(age).String(), age.Seconds()
	}
	if s.Draining {
		secs := s.Drain.Seconds()
		v.Drain, v.DrainSeconds = roundDuration(s.Drain).String(), &secs
	} else {
		v.Drain = "never (not shrinking)"
	}
	return v
}

// roundDuration keeps two significant units: 1h23m, 4m5s, 1.2s.
func roundDuration(d time.Duration) time.Duration {
	switch {
	case d >= time.Hour:
		return d.Round(time.Minute)
	case d >= time.Minute:
		return d.Round(time.Second)
	case d >= time.Second:
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}

// usefulWorkers is how many workers the global budget can keep busy: the
// shared rate over one worker's own rate, rounded up (0: no global budget
// or no local limit, so no ceiling can be told).
func usefulWorkers(global, local float64) int {
	if global <= 0 || local <= 0 || math.IsInf(local, 1) {
		return 0
	}
	return int(math.Ceil(global/local - 1e-9))
}
