package kafkasource

import (
	"context"
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
// topic instead, with its key, value and headers, through an asynchronous
// acks=all producer: Defer queues the record and returns, and calls its
// done with nil only once the broker stored it (or with the producer's
// error once its retries are spent). The engine acks the original only on
// done(nil), so the commit watermark never passes a message that is not
// stored somewhere, while the partition reads on at its own pace: records
// go out in batches, one request in flight per broker, so a key's records
// (one partition of the deferral topic) are stored in the order Defer was
// called, retries included. The Source consumes the deferral topic within
// the same budget; a message from it (Deferred) is not deferred again.
// Safe for concurrent use; Close after the engine stopped.
type Deferral struct {
	cfg    DeferralConfig
	client sarama.Client
	p      sarama.AsyncProducer

	mu      sync.RWMutex // held (read) while sending to p.Input, (write) to close
	closed  bool
	closing chan struct{} // closed by Close: Defer stops waiting for the input
	done    sync.WaitGroup
	once    sync.Once
	errc    error
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
	p, err := sarama.NewAsyncProducerFromClient(client)
	if err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("kafka: deferral producer: %w", err)
	}
	d := &Deferral{cfg: cfg, client: client, p: p, closing: make(chan struct{})}
	d.done.Add(2)
	go func() {
		defer d.done.Done()
		for pm := range p.Successes() {
			pm.Metadata.(func(error))(nil)
		}
	}()
	go func() {
		defer d.done.Done()
		for pe := range p.Errors() {
			pe.Msg.Metadata.(func(error))(fmt.Errorf("kafka: defer to %s: %w", cfg.Topic, pe.Err))
		}
	}()
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
	dl := DeadLetterConfig{Client: cfg.Client, Topic: cfg.Topic, Sarama: func(sc *sarama.Config) {
		// One request in flight per broker: a retried batch is never
		// overtaken by a later one, so a key's records keep their order.
		sc.Net.MaxOpenRequests = 1
		if cfg.Sarama != nil {
			cfg.Sarama(sc)
		}
	}}
	return dl.producerConfig()
}

// Topic is the deferral topic.
func (d *Deferral) Topic() string { return d.cfg.Topic }

// Defer queues m for the deferral topic (same key, so one key's deferred
// records stay in order in one partition) and returns; done is called once
// the broker stored the record (nil) or the producer gave up on it. It
// waits while the producer's input is full, until ctx is done; after
// Close it refuses (ErrClosed). An error means m was not taken and done
// will not be called.
func (d *Deferral) Defer(ctx context.Context, m *pacer.Message, done func(error)) error {
	pm := &sarama.ProducerMessage{Topic: d.cfg.Topic, Value: sarama.ByteEncoder(m.Value), Metadata: done}
	if m.Key != nil {
		pm.Key = sarama.ByteEncoder(m.Key)
	}
	pm.Headers = make([]sarama.RecordHeader, 0, len(m.Headers)+1)
	for k, v := range m.Headers {
		if k == HeaderDeferredFrom {
			continue
		}
		pm.Headers = append(pm.Headers, sarama.RecordHeader{Key: []byte(k), Value: []byte(v)})
	}
	from := m.Topic + "/" + strconv.FormatInt(int64(m.Partition), 10) + "/" + strconv.FormatInt(m.Offset, 10)
	pm.Headers = append(pm.Headers, sarama.RecordHeader{Key: []byte(HeaderDeferredFrom), Value: []byte(from)})
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.closed {
		return fmt.Errorf("kafka: defer to %s: %w", d.cfg.Topic, ErrClosed)
	}
	select {
	case d.p.Input() <- pm:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-d.closing:
		return fmt.Errorf("kafka: defer to %s: %w", d.cfg.Topic, ErrClosed)
	}
}

// Deferred reports whether m came from the deferral topic.
func (d *Deferral) Deferred(m *pacer.Message) bool { return m.Topic == d.cfg.Topic }

// Close flushes what Defer queued (each done is called: nil for what the
// broker stored), then closes the producer and its client. Later Defer
// calls are refused. Later Close calls return the first one's error.
func (d *Deferral) Close() error {
	d.once.Do(func() {
		close(d.closing)
		d.mu.Lock()
		d.closed = true
		d.mu.Unlock()
		d.p.AsyncClose()
		d.done.Wait()
		d.errc = d.client.Close()
	})
	return d.errc
}
