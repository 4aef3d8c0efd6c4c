package sourcekit

import (
	"context"
	"math"
	"time"
)

// BacklogReader is implemented by what can measure the backlog a consumer
// leaves in its broker (sources/kafkasource.LagReader, sources/natssource.PendingReader).
// ReadBacklog makes one round of requests to the broker (no state kept
// between calls beyond a connection) and honours ctx.
type BacklogReader interface {
	ReadBacklog(ctx context.Context) (Backlog, error)
}

// Backlog is what waits in the broker for one consumer (a Kafka consumer
// group, a JetStream durable), measured at At. The zero value is an empty
// backlog measured at no time.
type Backlog struct {
	// At is when the broker was asked.
	At time.Time `json:"at"`
	// Messages is every message not yet settled: for Kafka the sum of the
	// partitions' lags (high watermark minus committed offset), for
	// JetStream Pending plus AckPending. Messages held by pacer (fetched,
	// not yet acknowledged) are included: they are not done.
	Messages int64 `json:"messages"`
	// Pending counts messages not yet delivered to any consumer
	// (JetStream's NumPending); for Kafka it equals Messages.
	Pending int64 `json:"pending"`
	// AckPending counts messages delivered and not yet acknowledged
	// (JetStream's NumAckPending; 0 for Kafka, whose lag includes them).
	AckPending int64 `json:"ack_pending"`
	// Partitions is the per-partition lag (Kafka; nil for JetStream).
	Partitions []PartitionLag `json:"partitions,omitempty"`
	// Oldest is the timestamp of the oldest unsettled message, when the
	// broker could tell (zero: unknown, or nothing waits).
	Oldest time.Time `json:"oldest,omitzero"`
}

// PartitionLag is one Kafka partition's lag. Committed is -1 when the group
// has no committed offset for it; the lag then counts from where the group
// would start (its initial offset).
type PartitionLag struct {
	Topic         string `json:"topic"`
	Partition     int32  `json:"partition"`
	HighWatermark int64  `json:"high_watermark"`
	Committed     int64  `json:"committed"`
	Lag           int64  `json:"lag"`
}

// OldestAge is how old the oldest unsettled message is at now (0 when
// unknown or when nothing waits).
func (b Backlog) OldestAge(now time.Time) time.Duration {
	if b.Oldest.IsZero() || b.Messages == 0 {
		return 0
	}
	return max(0, now.Sub(b.Oldest))
}

// DrainTime estimates how long the backlog takes to drain, from two
// measurements of it, prev then cur (prev.At before cur.At), and the rate
// the worker delivers at (events per second), used when there is no earlier
// measurement (prev.At zero) or no time passed between them.
//
// With two measurements the estimate follows what was observed: the backlog
// shrank by (prev.Messages - cur.Messages) over the interval, the net of
// what was consumed and what arrived, and drains at that pace. It is 0 when
// nothing waits, and +Inf (ok false) when the backlog is not shrinking
// (arrivals keep up with or outrun the rate). With one measurement it is
// cur.Messages / rate, which assumes nothing more arrives.
func DrainTime(prev, cur Backlog, rate float64) (d time.Duration, ok bool) {
	if cur.Messages <= 0 {
		return 0, true
	}
	perSec := rate
	if !prev.At.IsZero() && cur.At.After(prev.At) {
		perSec = float64(prev.Messages-cur.Messages) / cur.At.Sub(prev.At).Seconds()
	}
	if perSec <= 0 || math.IsNaN(perSec) {
		return 0, false
	}
	secs := float64(cur.Messages) / perSec
	if secs >= float64(math.MaxInt64/int64(time.Second)) {
		return 0, false
	}
	return time.Duration(secs * float64(time.Second)), true
}
