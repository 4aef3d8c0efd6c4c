package natssource

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pacer-dev/pacer/pacer/sourcekit"
)

var _ sourcekit.BacklogReader = (*PendingReader)(nil)

// PendingConfig says whose backlog a PendingReader measures: a durable
// consumer on a stream.
type PendingConfig struct {
	Conn
	// NC, if set, is used instead of dialling Conn (and left open by Close).
	NC       *nats.Conn
	Stream   string
	Consumer string
}

// PendingReader measures a JetStream durable's backlog, read-only, from
// the consumer's info (NumPending: not yet delivered; NumAckPending:
// delivered, not yet acknowledged) and the oldest unacknowledged message's
// timestamp (the first stored message above the consumer's ack floor that
// matches its filter). It never creates, updates or pauses the consumer.
// It connects on the first ReadBacklog. Safe for concurrent use.
type PendingReader struct {
	cfg PendingConfig

	mu  sync.Mutex
	nc  *nats.Conn
	own bool
}

// NewPendingReader validates cfg; it does not connect.
func NewPendingReader(cfg PendingConfig) (*PendingReader, error) {
	if cfg.Stream == "" {
		return nil, fmt.Errorf("%w: stream is empty", ErrInvalidConfig)
	}
	if cfg.Consumer == "" {
		return nil, fmt.Errorf("%w: consumer (durable name) is empty", ErrInvalidConfig)
	}
	if cfg.NC == nil {
		if err := cfg.Conn.validate(); err != nil {
			return nil, err
		}
	}
	return &PendingReader{cfg: cfg, nc: cfg.NC}, nil
}

// Close closes the connection the reader dialled, if any.
func (r *PendingReader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.own && r.nc != nil {
		r.nc.Close()
		r.nc = nil
	}
	return nil
}

// ReadBacklog implements sourcekit.BacklogReader.
func (r *PendingReader) ReadBacklog(ctx context.Context) (sourcekit.Backlog, error) {
	b, err := r.read(ctx)
	if err != nil {
		return sourcekit.Backlog{}, fmt.Errorf("nats: pending of consumer %s on stream %s: %w", r.cfg.Consumer, r.cfg.Stream, err)
	}
	return b, nil
}

func (r *PendingReader) conn() (*nats.Conn, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.nc != nil {
		return r.nc, nil
	}
	c := r.cfg.Conn
	if c.Name == "" {
		c.Name = "pacer-backlog"
	}
	nc, err := c.connect(slog.New(slog.DiscardHandler)) // a failed read says it
	if err != nil {
		return nil, err
	}
	r.nc, r.own = nc, true
	return nc, nil
}

func (r *PendingReader) read(ctx context.Context) (sourcekit.Backlog, error) {
	nc, err := r.conn()
	if err != nil {
		return sourcekit.Backlog{}, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return sourcekit.Backlog{}, err
	}
	st, err := js.Stream(ctx, r.cfg.Stream)
	if err != nil {
		return sourcekit.Backlog{}, err
	}
	cons, err := st.Consumer(ctx, r.cfg.Consumer)
	if err != nil {
		return sourcekit.Backlog{}, err
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return sourcekit.Backlog{}, err
	}
	b := sourcekit.Backlog{At: time.Now(), Pending: int64(info.NumPending), AckPending: int64(info.NumAckPending)}
	b.Messages = b.Pending + b.AckPending
	if b.Messages == 0 {
		return b, nil
	}
	filters := info.Config.FilterSubjects
	if info.Config.FilterSubject != "" {
		filters = []string{info.Config.FilterSubject}
	}
	if len(filters) == 0 {
		filters = []string{">"}
	}
	for _, f := range filters {
		m, err := st.GetMsg(ctx, info.AckFloor.Stream+1, jetstream.WithGetMsgSubject(f))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return b, nil // the counts stand; the age stays unknown
		}
		if b.Oldest.IsZero() || m.Time.Before(b.Oldest) {
			b.Oldest = m.Time
		}
	}
	return b, nil
}
