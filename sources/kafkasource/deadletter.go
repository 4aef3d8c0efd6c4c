package kafkasource

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/IBM/sarama"
	"github.com/pacer-dev/pacer/pacer"
)

var _ pacer.DeadLetterer = (*DeadLetter)(nil)

// Dead-letter headers, added to the original message's own headers.
const (
	HeaderReason    = "pacer-dlq-reason"
	HeaderAttempts  = "pacer-dlq-attempts"
	HeaderID        = "pacer-dlq-original-id"
	HeaderTopic     = "pacer-dlq-original-topic"
	HeaderPartition = "pacer-dlq-original-partition"
	HeaderOffset    = "pacer-dlq-original-offset"
	HeaderDelivered = "pacer-dlq-delivered"
	HeaderTime      = "pacer-dlq-time"
)

// DeadLetterConfig configures a DeadLetter producer.
type DeadLetterConfig struct {
	Client
	// Topic receives the dead letters.
	Topic string
	// Now stamps HeaderTime (time.Now if nil).
	Now func() time.Time
	// Sarama, if set, may adjust the generated producer config last.
	Sarama func(*sarama.Config)
}

// DeadLetter writes messages that will never be delivered to a Kafka topic
// with a synchronous, acks=all, idempotent-safe producer: DeadLetter returns
// nil only once the broker stored the record. The record keeps the
// original key, value and headers, plus the pacer-dlq-* headers.
// It is safe for concurrent use.
type DeadLetter struct {
	cfg DeadLetterConfig
	p   sarama.SyncProducer
}

// NewDeadLetter connects a producer.
func NewDeadLetter(cfg DeadLetterConfig) (*DeadLetter, error) {
	sc, err := cfg.producerConfig()
	if err != nil {
		return nil, err
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	p, err := sarama.NewSyncProducer(cfg.Brokers, sc)
	if err != nil {
		return nil, fmt.Errorf("kafka: dead-letter producer: %w", err)
	}
	return &DeadLetter{cfg: cfg, p: p}, nil
}

// DeadLetter writes m with reason. sarama's SyncProducer does not take a
// context: ctx is checked before sending, and the send is bounded by the
// producer's own timeouts.
func (d *DeadLetter) DeadLetter(ctx context.Context, m *pacer.Message, reason error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	pm := &sarama.ProducerMessage{Topic: d.cfg.Topic, Value: sarama.ByteEncoder(m.Value)}
	if m.Key != nil {
		pm.Key = sarama.ByteEncoder(m.Key)
	}
	pm.Headers = make([]sarama.RecordHeader, 0, len(m.Headers)+8)
	add := func(k, v string) {
		pm.Headers = append(pm.Headers, sarama.RecordHeader{Key: []byte(k), Value: []byte(v)})
	}
	for k, v := range m.Headers {
		add(k, v)
	}
	why := "unknown"
	if reason != nil {
		why = reason.Error()
	}
	add(HeaderReason, why)
	add(HeaderAttempts, strconv.Itoa(m.Attempt))
	add(HeaderID, m.ID)
	add(HeaderTopic, m.Topic)
	add(HeaderPartition, strconv.FormatInt(int64(m.Partition), 10))
	add(HeaderOffset, strconv.FormatInt(m.Offset, 10))
	add(HeaderDelivered, strconv.Itoa(m.Delivered))
	add(HeaderTime, d.cfg.Now().UTC().Format(time.RFC3339Nano))
	if _, _, err := d.p.SendMessage(pm); err != nil {
		return fmt.Errorf("kafka: dead-letter to %s: %w", d.cfg.Topic, err)
	}
	return nil
}

// Close closes the producer.
func (d *DeadLetter) Close() error { return d.p.Close() }

// CheckDeadLetter validates cfg as NewDeadLetter does (TLS files
// included) without connecting.
func CheckDeadLetter(cfg DeadLetterConfig) error {
	_, err := cfg.producerConfig()
	return err
}

func (cfg DeadLetterConfig) producerConfig() (*sarama.Config, error) {
	if cfg.Topic == "" {
		return nil, fmt.Errorf("%w: dead-letter topic is empty", ErrInvalidConfig)
	}
	if err := cfg.Client.validate(); err != nil {
		return nil, err
	}
	sc := sarama.NewConfig()
	if err := cfg.Client.sarama(sc); err != nil {
		return nil, err
	}
	sc.Producer.RequiredAcks = sarama.WaitForAll
	sc.Producer.Return.Successes = true
	sc.Producer.Return.Errors = true
	sc.Producer.Retry.Max = 5
	if cfg.Sarama != nil {
		cfg.Sarama(sc)
	}
	return sc, nil
}
