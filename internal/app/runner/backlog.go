package runner

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pacer-dev/pacer/internal/app/config"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/metrics"
	"github.com/pacer-dev/pacer/pacer/sourcekit"
	"github.com/pacer-dev/pacer/sources/kafkasource"
	"github.com/pacer-dev/pacer/sources/natssource"
)

// backlogReader is a BacklogReader that holds a connection.
type backlogReader interface {
	sourcekit.BacklogReader
	Close() error
}

// newBacklogReader builds the read-only backlog reader for the configured
// source: the consumer group's lag (Kafka) or the durable's pending counts
// (JetStream). It does not connect.
func newBacklogReader(cfg *config.Config) (backlogReader, error) {
	switch cfg.Source.Type {
	case "kafka":
		k := cfg.Source.Kafka
		return kafkasource.NewLagReader(kafkasource.LagConfig{Client: kafkaClient(k), Group: k.Group, Topics: k.Topics,
			InitialOffset: kafkasource.InitialOffset(k.InitialOffset)})
	case "nats":
		n := cfg.Source.NATS
		return natssource.NewPendingReader(natssource.PendingConfig{Conn: natsConn(n), Stream: n.Stream, Consumer: n.Consumer})
	}
	return nil, fmt.Errorf("source.type %q: no backlog reader", cfg.Source.Type)
}

// newBacklogWatch is the running worker's backlog measurement of cfg's
// source through r; status is the engine's.
func newBacklogWatch(cfg *config.Config, r sourcekit.BacklogReader, status func() pacer.Status) *backlogWatch {
	b := &backlogWatch{reader: r, interval: cfg.Source.BacklogInterval.D(), part: "source.backlog",
		rate:    func() float64 { return status().Rate },
		settled: func() uint64 { return status().Acked }}
	switch cfg.Source.Type {
	case "kafka":
		b.field, b.addr = "source.kafka.brokers", kafkaAddr(cfg.Source.Kafka)
	case "nats":
		b.field, b.addr = "source.nats.url", cfg.Source.NATS.URL
		if cfg.Source.NATS.CreateConsumer {
			// The source creates its durable when it runs, after the
			// watch starts.
			b.notYet = func(err error) bool { return errors.Is(err, jetstream.ErrConsumerNotFound) }
		}
	}
	return b
}

// backlogWatch measures the backlog every interval and keeps the recent
// measurements, for /status, /metrics and `pacer status`. The drain time
// follows the change over the last minute of measurements (see
// sourcekit.DrainTime); with a single one it assumes the current rate and no
// new arrivals. Safe for concurrent use.
//
// Two moments get a measurement sooner than the interval:
//   - the start: until the source has created what the reader reads (a
//     JetStream durable the source creates when it runs), the read fails
//     with an error notYet recognises; that is not a failed measurement
//     (not counted, not shown as last_error) and the read is retried from
//     250 ms, doubling, up to the interval;
//   - the end of a drain: a shrinking backlog whose messages the worker has
//     since settled (acked at least as many as it counted), or whose drain
//     estimate has run out, is stale; it is re-measured at once (the next
//     snapshot asks for it; at most once a second) and at the latest when
//     its estimate runs out, so a drained stream does not keep showing the
//     last figure for a whole interval.
type backlogWatch struct {
	reader   sourcekit.BacklogReader
	rate     func() float64 // events per second the worker delivers at now
	interval time.Duration
	// settled returns how many messages the worker has settled (acked)
	// since it started (nil: unknown).
	settled func() uint64
	// notYet reports whether a read failed only because the source has not
	// created what it reads yet (nil: no such case).
	notYet func(error) bool
	// part, field and addr name the source in a connection error.
	part, field, addr string

	mu      sync.Mutex
	samples []sourcekit.Backlog // oldest first, spanning at most window
	// settledAt is settled() when the last sample was taken.
	settledAt uint64
	errs      uint64
	lastErr   string
	waiting   int           // reads refused by notYet in a row, before the first sample
	kick      chan struct{} // asks run for a measurement now
}

// backlogWindow is how far back the drain estimate looks.
const backlogWindow = time.Minute

// backlogRetry is the first wait before re-reading a backlog that is not
// there yet; backlogMinGap the shortest wait between measurements
// otherwise.
const (
	backlogRetry  = 250 * time.Millisecond
	backlogMinGap = time.Second
)

// run measures at once, then when next says, until ctx is done.
func (b *backlogWatch) run(ctx context.Context) {
	kick := b.kicker()
	for {
		b.measure(ctx)
		last := time.Now()
		t := time.NewTimer(b.next(last))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		case <-kick:
			t.Stop()
			// A stale measurement is re-read at most once a second.
			t = time.NewTimer(backlogMinGap - time.Since(last))
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
	}
}

func (b *backlogWatch) kicker() chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.kick == nil {
		b.kick = make(chan struct{}, 1)
	}
	return b.kick
}

// next is how long to wait after a measurement, at now: the interval;
// less while the backlog is not there yet (see backlogWatch), or when the
// last measurement's drain estimate runs out before the interval does.
func (b *backlogWatch) next(now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.samples) == 0 && b.waiting > 0 {
		return min(b.interval, backlogRetry<<min(b.waiting-1, 16))
	}
	if s, ok := b.snapshotLocked(now); ok && s.Draining && s.Backlog.Messages > 0 {
		return min(b.interval, max(backlogMinGap, s.Drain)) // s.Drain counts from now
	}
	return b.interval
}

// measure makes one measurement and records it.
func (b *backlogWatch) measure(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, max(b.interval, 10*time.Second))
	defer cancel()
	settled := b.settledNow() // before the read: what it may still count
	got, err := b.reader.ReadBacklog(ctx)
	if err != nil && unreachable(err) && b.field != "" {
		err = connectErr(b.part, b.field, b.addr, err)
	}
	b.recordSettled(got, err, settled)
}

func (b *backlogWatch) settledNow() uint64 {
	if b.settled == nil {
		return 0
	}
	return b.settled()
}

// record records a measurement taken now.
func (b *backlogWatch) record(got sourcekit.Backlog, err error) {
	b.recordSettled(got, err, b.settledNow())
}

// recordSettled records a measurement read when the worker had settled
// settled messages.
func (b *backlogWatch) recordSettled(got sourcekit.Backlog, err error, settled uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err != nil {
		if len(b.samples) == 0 && b.notYet != nil && b.notYet(err) {
			b.waiting++
			return
		}
		b.errs++
		b.lastErr = err.Error()
		return
	}
	b.lastErr, b.waiting, b.settledAt = "", 0, settled
	b.samples = append(b.samples, got)
	for len(b.samples) > 2 && got.At.Sub(b.samples[1].At) >= backlogWindow {
		b.samples = b.samples[1:]
	}
}

// snapshot returns the last measurement with its drain estimate, counted
// from now. A stale measurement (see backlogWatch) asks run to measure
// again.
func (b *backlogWatch) snapshot(now time.Time) metrics.BacklogSnapshot {
	settled := b.settledNow()
	b.mu.Lock()
	defer b.mu.Unlock()
	s, ok := b.snapshotLocked(now)
	if ok && b.staleLocked(s, settled, now) && b.kick != nil {
		select {
		case b.kick <- struct{}{}:
		default:
		}
	}
	return s
}

// snapshotLocked is snapshot without the staleness check; ok is false
// before the first measurement. The drain time counts down from the
// measurement (never below 0).
func (b *backlogWatch) snapshotLocked(now time.Time) (metrics.BacklogSnapshot, bool) {
	s := metrics.BacklogSnapshot{Errors: b.errs, Now: now}
	if len(b.samples) == 0 {
		return s, false
	}
	cur := b.samples[len(b.samples)-1]
	var prev sourcekit.Backlog
	if len(b.samples) > 1 {
		prev = b.samples[0]
	}
	rate := 0.0
	if b.rate != nil {
		rate = b.rate()
	}
	s.Backlog = cur
	s.Drain, s.Draining = sourcekit.DrainTime(prev, cur, rate)
	if s.Draining {
		s.Drain = max(0, s.Drain-max(0, now.Sub(cur.At))) // a clock stepped back takes nothing off
	}
	return s, true
}

// staleLocked reports whether s, the last measurement, no longer holds at
// now: it counted messages and was shrinking, and the worker has settled
// at least as many since (settled is the worker's count now), or its drain
// time ran out.
func (b *backlogWatch) staleLocked(s metrics.BacklogSnapshot, settled uint64, now time.Time) bool {
	m := s.Backlog.Messages
	if m <= 0 || !s.Draining {
		return false // nothing waited, or it was not shrinking: the figure holds until the next measurement
	}
	return b.settled != nil && settled-b.settledAt >= uint64(m) || s.Drain == 0
}

// stale reports whether the last measurement is stale at now.
func (b *backlogWatch) stale(now time.Time) bool {
	settled := b.settledNow()
	b.mu.Lock()
	defer b.mu.Unlock()
	s, ok := b.snapshotLocked(now)
	return ok && b.staleLocked(s, settled, now)
}

func (b *backlogWatch) lastError() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lastErr
}

// backlogView is the backlog in /status and `pacer status`.
type BacklogView struct {
	Messages   int64                    `json:"messages"`
	Pending    int64                    `json:"pending"`
	AckPending int64                    `json:"ack_pending"`
	Partitions []sourcekit.PartitionLag `json:"partitions,omitempty"`
	// OldestAge is the oldest unsettled message's age ("" when unknown or
	// nothing waits).
	OldestAge        string  `json:"oldest_age,omitempty"`
	OldestAgeSeconds float64 `json:"oldest_age_seconds"`
	// Drain is the time until the backlog drains at the observed pace;
	// "never" when it is not shrinking.
	Drain        string    `json:"drain"`
	DrainSeconds *float64  `json:"drain_seconds"` // null when not shrinking
	MeasuredAt   time.Time `json:"measured_at,omitzero"`
	// Stale: the worker has settled as many messages as this measurement
	// counted since, or its drain time ran out; a new one is under way.
	Stale     bool   `json:"stale,omitempty"`
	Errors    uint64 `json:"errors"`
	LastError string `json:"last_error,omitempty"`
}

// view is the backlog for /status at now.
func (b *backlogWatch) view(now time.Time) *BacklogView {
	stale := b.stale(now)
	v := newBacklogView(b.snapshot(now), b.lastError())
	if stale && !v.MeasuredAt.IsZero() {
		v.Stale, v.Drain, v.DrainSeconds = true, "due: measuring again", nil
	}
	return v
}

func newBacklogView(s metrics.BacklogSnapshot, lastErr string) *BacklogView {
	v := &BacklogView{Errors: s.Errors, LastError: lastErr}
	b := s.Backlog
	if b.At.IsZero() {
		v.Drain = "unknown"
		return v
	}
	v.Messages, v.Pending, v.AckPending, v.Partitions, v.MeasuredAt = b.Messages, b.Pending, b.AckPending, b.Partitions, b.At.UTC()
	if age := b.OldestAge(s.Now); age > 0 {
		v.OldestAge, v.OldestAgeSeconds = RoundDuration(age).String(), age.Seconds()
	}
	if s.Draining {
		secs := s.Drain.Seconds()
		v.Drain, v.DrainSeconds = RoundDuration(s.Drain).String(), &secs
	} else {
		v.Drain = "never (not shrinking)"
	}
	return v
}

// roundDuration keeps two significant units: 1h23m, 4m5s, 1.2s.
func RoundDuration(d time.Duration) time.Duration {
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

// OfflineStatus measures cfg's backlog once, read-only (no group is
// joined, nothing is committed or acked); the drain time assumes the
// configured rate and no new arrivals.
func OfflineStatus(ctx context.Context, cfg *config.Config) (StatusView, error) {
	var v StatusView
	v.Source, v.Sink = cfg.Source.Type, cfg.Sink.Type
	sh := cfg.Shaping
	v.Configured.Rate, v.Configured.RatePerSec, v.Configured.Burst = sh.Rate.String(), sh.Rate.PerSecond(), sh.EffectiveBurst()
	if !sh.Global.RedisURL.IsZero() {
		v.Configured.Global = sh.Global.Rate.String() + " shared as " + sh.Global.Key
		v.UsefulWorkers = usefulWorkers(sh.Global.Rate.PerSecond(), sh.Rate.PerSecond())
	}
	r, err := newBacklogReader(cfg)
	if err != nil {
		return v, err
	}
	defer r.Close()
	b, err := r.ReadBacklog(ctx)
	if err != nil {
		return v, err
	}
	w := &backlogWatch{reader: r, rate: func() float64 { return sh.Rate.PerSecond() }}
	w.record(b, nil)
	v.Backlog = newBacklogView(w.snapshot(time.Now()), "")
	return v, nil
}
