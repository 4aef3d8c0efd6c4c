package nats

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/pacer-dev/pacer/pacer"
)

var _ pacer.DeadLetterer = (*DeadLetter)(nil)

// Dead-letter headers, added to the original message's own headers.
const (
	HeaderReason    = "Pacer-Dlq-Reason"
	HeaderAttempts  = "Pacer-Dlq-Attempts"
	HeaderID        = "Pacer-Dlq-Original-Id"
	HeaderSubject   = "Pacer-Dlq-Original-Subject"
	HeaderSequence  = "Pacer-Dlq-Original-Sequence"
	HeaderDelivered = "Pacer-Dlq-Delivered"
	HeaderTime      = "Pacer-Dlq-Time"
)

// DeadLetterConfig configures a DeadLetter publisher.
type DeadLetterConfig struct {
	Conn
	// NC, if set, is used instead of dialling Conn (and is not closed).
	NC *nats.Conn
	// Subject receives the dead letters; a stream must capture it.
	Subject string
	Now     func() time.Time
	Logger  *slog.Logger
}

// DeadLetter publishes messages that will never be delivered to a JetStream
// subject; DeadLetter returns nil only once the stream acknowledged the
// publish. The original payload and headers are kept, with Pacer-Dlq-*
// headers added; Nats-Msg-Id is set to the original ID so a retried
// dead-letter write is de-duplicated by the stream.
// It is safe for concurrent use.
type DeadLetter struct {
	cfg   DeadLetterConfig
	nc    *nats.Conn
	ownNC bool
	js    jetstream.JetStream
}

// NewDeadLetter connects a publisher.
func NewDeadLetter(cfg DeadLetterConfig) (*DeadLetter, error) {
	if cfg.Subject == "" {
		return nil, fmt.Errorf("%w: dead-letter subject is empty", ErrInvalidConfig)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	d := &DeadLetter{cfg: cfg, nc: cfg.NC}
	if d.nc == nil {
		nc, err := cfg.Conn.connect(cfg.Logger)
		if err != nil {
			return nil, err
		}
		d.nc, d.ownNC = nc, true
	}
	js, err := jetstream.New(d.nc)
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("nats: jetstream: %w", err)
	}
	d.js = js
	return d, nil
}

// DeadLetter publishes m with reason and waits for the stream's ack.
func (d *DeadLetter) DeadLetter(ctx context.Context, m *pacer.Message, reason error) error {
	msg := nats.NewMsg(d.cfg.Subject)
	msg.Data = m.Value
	for k, v := range m.Headers {
		msg.Header.Set(k, v)
	}
	why := "unknown"
	if reason != nil {
		why = reason.Error()
	}
	msg.Header.Set(HeaderReason, why)
	msg.Header.Set(HeaderAttempts, strconv.Itoa(m.Attempt))
	msg.Header.Set(HeaderID, m.ID)
	msg.Header.Set(HeaderSubject, m.Topic)
	msg.Header.Set(HeaderSequence, strconv.FormatInt(m.Offset, 10))
	msg.Header.Set(HeaderDelivered, strconv.Itoa(m.Delivered))
	msg.Header.Set(HeaderTime, d.cfg.Now().UTC().Format(time.RFC3339Nano))
	var opts []jetstream.PublishOpt
	if m.ID != "" {
		opts = append(opts, jetstream.WithMsgID("dlq/"+m.ID))
	}
	if _, err := d.js.PublishMsg(ctx, msg, opts...); err != nil {
		return fmt.Errorf("nats: dead-letter to %s: %w", d.cfg.Subject, err)
	}
	return nil
}

// Close closes the connection if the publisher dialled it.
func (d *DeadLetter) Close() error {
	if d.ownNC && d.nc != nil {
		d.nc.Close()
	}
	return nil
}
