package kafkasource

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/IBM/sarama"
	"github.com/pacer-dev/pacer/pacer"
)

var _ pacer.DeadLetterer = (*DeadLetter)(nil)

// Dead-letter headers, added to the original message's own headers. They
// are spelled as the NATS source's are (Pacer-Dlq-*); pacer before this
// spelling wrote them in lower case (pacer-dlq-*): DeadLetterHeader reads
// either.
const (
	HeaderReason    = pacer.DeadLetterReasonHeader
	HeaderAttempts  = pacer.DeadLetterAttemptsHeader
	HeaderID        = pacer.DeadLetterIDHeader
	HeaderTopic     = "Pacer-Dlq-Original-Topic"
	HeaderPartition = "Pacer-Dlq-Original-Partition"
	HeaderOffset    = "Pacer-Dlq-Original-Offset"
	HeaderDelivered = pacer.DeadLetterDeliveredHeader
	HeaderTime      = pacer.DeadLetterTimeHeader
)

// DeadLetterHeader returns the value of the dead-letter header name (one of
// the Header constants) in a dead letter's headers, in either spelling:
// Pacer-Dlq-* or the lower-case pacer-dlq-* of dead letters written before.
// The last one wins, as the record's newest.
func DeadLetterHeader(headers []*sarama.RecordHeader, name string) (string, bool) {
	value, found := "", false
	for _, h := range headers {
		if h != nil && strings.EqualFold(string(h.Key), name) {
			value, found = string(h.Value), true
		}
	}
	return value, found
}

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
// original key, value and headers, plus the Pacer-Dlq-* headers.
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
