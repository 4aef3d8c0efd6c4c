package natssource

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/pacer-dev/pacer/pacer"
)

var _ pacer.DeadLetterer = (*DeadLetter)(nil)

// Dead-letter headers, added to the original message's own headers.
const (
	HeaderReason    = pacer.DeadLetterReasonHeader
	HeaderAttempts  = pacer.DeadLetterAttemptsHeader
	HeaderID        = pacer.DeadLetterIDHeader
	HeaderSubject   = "Pacer-Dlq-Original-Subject"
	HeaderSequence  = "Pacer-Dlq-Original-Sequence"
	HeaderDelivered = pacer.DeadLetterDeliveredHeader
	HeaderTime      = pacer.DeadLetterTimeHeader
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
// subject; DeadLetter returns nil only once the dead letter is known stored:
// the stream acknowledged the publish, and an acknowledgement that reports
// a duplicate counts only if the record stored under that ID is this
// message's dead letter (same original ID, same dead-letter subject). The
// original payload is kept with the producer's application headers (every
// header but the Nats-* ones, which are JetStream's instructions for the
// original publish: Nats-Expected-Stream, Nats-Rollup, Nats-Msg-Id,
// Nats-TTL...) and the Pacer-Dlq-* headers added. Nats-Msg-Id is
// "dlq/<subject>/<original ID>", so a retried write is de-duplicated by the
// stream, and two pipelines dead-lettering the same message to different
// subjects of one stream both store theirs.
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
		if isControlHeader(k) {
			continue
		}
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
		opts = append(opts, jetstream.WithMsgID("dlq/"+d.cfg.Subject+"/"+m.ID))
	}
	ack, err := d.js.PublishMsg(ctx, msg, opts...)
	if err != nil {
		return fmt.Errorf("nats: dead-letter of %q to %s: %w", m.ID, d.cfg.Subject, err)
	}
	if ack.Duplicate {
		return d.checkDuplicate(ctx, m, ack)
	}
	return nil
}

// checkDuplicate returns nil if the record the stream reports holding under
// m's dead-letter ID is m's dead letter on this subject (a retried write),
// and an error otherwise: the dead letter is not stored.
func (d *DeadLetter) checkDuplicate(ctx context.Context, m *pacer.Message, ack *jetstream.PubAck) error {
	str, err := d.js.Stream(ctx, ack.Stream)
	if err == nil {
		var raw *jetstream.RawStreamMsg
		if raw, err = str.GetMsg(ctx, ack.Sequence); err == nil {
			if raw.Subject == d.cfg.Subject && raw.Header.Get(HeaderID) == m.ID {
				return nil
			}
			return fmt.Errorf("%w: %q to %s: stream %s holds record %d under its ID, dead letter of %q on %s",
				ErrDeadLetterDuplicate, m.ID, d.cfg.Subject, ack.Stream, ack.Sequence, raw.Header.Get(HeaderID), raw.Subject)
		}
	}
	return fmt.Errorf("%w: %q to %s: stream %s reports a duplicate (record %d) that cannot be read back: %w",
		ErrDeadLetterDuplicate, m.ID, d.cfg.Subject, ack.Stream, ack.Sequence, err)
}

// ErrDeadLetterDuplicate is wrapped by a dead-letter write the stream
// de-duplicated against a record that is not this message's dead letter.
var ErrDeadLetterDuplicate = errors.New("nats: dead letter dropped as a duplicate")

// isControlHeader reports whether a header is JetStream's (Nats-*, in any
// case): never copied into a dead letter.
func isControlHeader(k string) bool {
	return len(k) >= 5 && strings.EqualFold(k[:5], "nats-")
}

// Close closes the connection if the publisher dialled it.
func (d *DeadLetter) Close() error {
	if d.ownNC && d.nc != nil {
		d.nc.Close()
	}
	return nil
}
