package kafkasource

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/IBM/sarama"
	"github.com/pacer-dev/pacer/pacer"
)

// ErrNoTopic is wrapped by the error of NewDeferral and CheckDeferralTopic
// when the brokers do not hold the deferral topic.
var ErrNoTopic = errors.New("kafka: topic does not exist")

// ErrClosed is wrapped by Defer's error after Close.
var ErrClosed = errors.New("kafka: deferral producer closed")

// Headers on a record republished to the deferral topic (beside the
// original's own headers).
const (
	HeaderDeferredFrom = "pacer-deferred-from" // topic/partition/offset of the original
)

// DeferralConfig configures a Deferral producer.
type DeferralConfig struct {
	Client
	// Topic receives a hot key's excess; the Source must consume it too
	// (list it in Config.Topics), under the same group.
	Topic string
	// Sarama, if set, may adjust the generated producer config last.
	Sarama func(*sarama.Config)
}

// Deferral is the fairness overflow for Kafka (pacer.Fairness.Defer): when
// a hot and a cold key share a partition, holding the hot key back would
// hold the partition, so the hot key's excess is republished to a deferral
// topic instead, with its key, value and headers. Defer queues the record
// and returns; its done is called with nil only once the broker stored it
// (acks as the producer config says: all replicas by default), or with the
// error once the record was refused or its retries are spent. The engine
// acks the original only on done(nil), so the commit watermark never
// passes a message that is not stored somewhere, while the partition reads
// on at its own pace.
//
// Records go out in rounds: one goroutine takes everything queued (up to
// Producer.MaxMessageBytes of it), builds one record batch per partition
// and one produce request per leader, and starts the next round only once
// every record of this one was answered, retries included. So a key's
// records (one partition of the deferral topic) are stored in the order
// Defer was called, and a record is never overtaken by a later one. A
// partition's batch is stored or refused whole by the broker; a batch
// refused as too large (or holding an invalid record) is sent again one
// record at a time, so only the records the broker refuses on their own
// are answered with an error.
//
// The Source consumes the deferral topic within the same budget; a
// message from it (Deferred) is not deferred again. Safe for concurrent
// use; Close after the engine stopped.
type Deferral struct {
	cfg         DeferralConfig
	sc          *sarama.Config
	client      sarama.Client
	partitioner sarama.Partitioner
	maxQueued   int // records Defer may queue before it waits

	mu     sync.Mutex
	queued []*deferredRecord // taken by Defer, not yet in a round
	spare  []*deferredRecord // the previous round's slice, reused
	space  chan struct{}     // closed (and replaced) when a round takes records
	closed bool

	wake    chan struct{} // one token: records queued, or Close
	closing chan struct{} // closed by Close: Defer stops waiting for room
	stopped chan struct{} // closed once the sender answered everything
	once    sync.Once
	errc    error
}

// deferredRecord is one record Defer took, with what its answer needs.
type deferredRecord struct {
	rec       sarama.Record
	at        time.Time // when Defer took it: the record's timestamp
	done      func(error)
	partition int32
	seq       int // its place in its round
	size      int // an upper bound of its encoded size
}

// NewDeferral connects a producer, once the brokers show that the topic
// exists: a missing one is refused with its name (wrapping ErrNoTopic),
// since the Source would otherwise fail to join its group for ever and
// deliver nothing. An unreachable cluster wraps sarama.ErrOutOfBrokers.
func NewDeferral(cfg DeferralConfig) (*Deferral, error) {
	sc, err := cfg.producerConfig()
	if err != nil {
		return nil, err
	}
	client, err := sarama.NewClient(cfg.Brokers, sc)
	if err != nil {
		return nil, fmt.Errorf("kafka: deferral producer: %w", err)
	}
	if err := topicExists(client, cfg.Topic, cfg.Brokers); err != nil {
		_ = client.Close()
		return nil, err
	}
	d := &Deferral{
		cfg: cfg, sc: sc, client: client,
		partitioner: sc.Producer.Partitioner(cfg.Topic),
		maxQueued:   max(sc.ChannelBufferSize, 1),
		space:       make(chan struct{}),
		wake:        make(chan struct{}, 1),
		closing:     make(chan struct{}),
		stopped:     make(chan struct{}),
	}
	go d.send()
	return d, nil
}

// CheckDeferralTopic asks the brokers, each connection bounded by
// timeout, whether the deferral topic exists: nil when it does, an error
// wrapping ErrNoTopic (naming it) when it does not, one wrapping
// sarama.ErrOutOfBrokers when no broker answered. It creates nothing.
func CheckDeferralTopic(cfg DeferralConfig, timeout time.Duration) error {
	sc, err := cfg.producerConfig()
	if err != nil {
		return err
	}
	sc.Net.DialTimeout, sc.Net.ReadTimeout, sc.Net.WriteTimeout = timeout, timeout, timeout
	sc.Metadata.Retry.Max = 0
	client, err := sarama.NewClient(cfg.Brokers, sc)
	if err != nil {
		return fmt.Errorf("kafka: checking deferral topic %q: %w", cfg.Topic, err)
	}
	defer client.Close()
	return topicExists(client, cfg.Topic, cfg.Brokers)
}

// topicExists lists the cluster's topics (a metadata request for all of
// them, which never creates one, unlike a request naming the topic on a
// broker that creates topics on first use) and looks for topic.
func topicExists(client sarama.Client, topic string, brokers []string) error {
	if err := client.RefreshMetadata(); err != nil {
		return fmt.Errorf("kafka: listing topics to find deferral topic %q: %w", topic, err)
	}
	topics, err := client.Topics()
	if err != nil {
		return fmt.Errorf("kafka: listing topics to find deferral topic %q: %w", topic, err)
	}
	if !slices.Contains(topics, topic) {
		return fmt.Errorf("%w: deferral topic %q is not on the brokers (%s); create it (pacer republishes a hot key's excess to it and consumes it under the same group)",
			ErrNoTopic, topic, strings.Join(brokers, ", "))
	}
	return nil
}

// CheckDeferral validates cfg as NewDeferral does, without connecting.
func CheckDeferral(cfg DeferralConfig) error {
	_, err := cfg.producerConfig()
	return err
}

func (cfg DeferralConfig) producerConfig() (*sarama.Config, error) {
	if cfg.Topic == "" {
		return nil, fmt.Errorf("%w: deferral topic is empty", ErrInvalidConfig)
	}
	dl := DeadLetterConfig{Client: cfg.Client, Topic: cfg.Topic, Sarama: cfg.Sarama}
	sc, err := dl.producerConfig()
	if err != nil {
		return nil, err
	}
	// The Deferral sends its own record batches (deferralsend.go): it
	// needs record headers (Kafka 0.11) and an answer for every record,
	// and does not speak the idempotent or transactional protocol.
	switch {
	case !sc.Version.IsAtLeast(sarama.V0_11_0_0):
		return nil, fmt.Errorf("%w: the deferral topic needs Kafka 0.11 or later (record headers); version is %s", ErrInvalidConfig, sc.Version)
	case sc.Producer.RequiredAcks == sarama.NoResponse:
		return nil, fmt.Errorf("%w: the deferral producer needs acks (an original is acked only once its copy is stored)", ErrInvalidConfig)
	case sc.Producer.Idempotent || sc.Producer.Transaction.ID != "":
		return nil, fmt.Errorf("%w: the deferral producer is neither idempotent nor transactional", ErrInvalidConfig)
	}
	return sc, nil
}

// Topic is the deferral topic.
func (d *Deferral) Topic() string { return d.cfg.Topic }

// Defer queues m for the deferral topic (same key, so one key's deferred
// records stay in order in one partition) and returns; done is called,
// from the Deferral's own goroutine, once the broker stored the record
// (nil) or refused it, or its retries are spent (the error). It waits
// while ChannelBufferSize records are queued, until ctx is done; after
// Close it refuses (ErrClosed). An error means m was not taken and done
// will not be called.
func (d *Deferral) Defer(ctx context.Context, m *pacer.Message, done func(error)) error {
	r := newDeferredRecord(m, done)
	d.mu.Lock()
	for {
		if d.closed {
			d.mu.Unlock()
			return fmt.Errorf("kafka: defer to %s: %w", d.cfg.Topic, ErrClosed)
		}
		if len(d.queued) < d.maxQueued {
			break
		}
		space := d.space
		d.mu.Unlock()
		select {
		case <-space:
		case <-ctx.Done():
			return ctx.Err()
		case <-d.closing:
			return fmt.Errorf("kafka: defer to %s: %w", d.cfg.Topic, ErrClosed)
		}
		d.mu.Lock()
	}
	d.queued = append(d.queued, r)
	d.mu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default: // the sender is woken already
	}
	return nil
}

// newDeferredRecord is m's copy for the deferral topic: its key, value
// and headers, HeaderDeferredFrom naming m.
func newDeferredRecord(m *pacer.Message, done func(error)) *deferredRecord {
	r := &deferredRecord{at: time.Now(), done: done}
	r.rec.Key, r.rec.Value = m.Key, m.Value
	headers := make([]sarama.RecordHeader, 0, len(m.Headers)+1)
	for k, v := range m.Headers {
		if k == HeaderDeferredFrom {
			continue
		}
		headers = append(headers, sarama.RecordHeader{Key: []byte(k), Value: []byte(v)})
	}
	from := make([]byte, 0, len(m.Topic)+24)
	from = append(append(from, m.Topic...), '/')
	from = append(strconv.AppendInt(from, int64(m.Partition), 10), '/')
	from = strconv.AppendInt(from, m.Offset, 10)
	headers = append(headers, sarama.RecordHeader{Key: []byte(HeaderDeferredFrom), Value: from})
	r.rec.Headers = make([]*sarama.RecordHeader, len(headers))
	r.size = maxRecordOverhead + len(m.Key) + len(m.Value)
	for i := range headers {
		r.rec.Headers[i] = &headers[i]
		r.size += len(headers[i].Key) + len(headers[i].Value) + 2*binary.MaxVarintLen32
	}
	return r
}

// Deferred reports whether m came from the deferral topic.
func (d *Deferral) Deferred(m *pacer.Message) bool { return m.Topic == d.cfg.Topic }

// Close sends what Defer queued (each done is called: nil for what the
// broker stored), then closes the client. Later Defer calls are refused.
// Later Close calls return the first one's error.
func (d *Deferral) Close() error {
	d.once.Do(func() {
		d.mu.Lock()
		d.closed = true
		d.mu.Unlock()
		close(d.closing)
		select {
		case d.wake <- struct{}{}:
		default:
		}
		<-d.stopped
		d.errc = d.client.Close()
	})
	return d.errc
}
