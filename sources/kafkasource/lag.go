package kafkasource

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/IBM/sarama"

	"github.com/pacer-dev/pacer/pacer/sourcekit"
)

var _ sourcekit.BacklogReader = (*LagReader)(nil)

// LagConfig says whose lag a LagReader measures: a consumer group on
// topics. InitialOffset is the group's (OffsetOldest if empty): it decides
// what a partition without a committed offset owes.
type LagConfig struct {
	Client
	Group         string
	Topics        []string
	InitialOffset InitialOffset
	// OldestPartitions caps how many lagging partitions (the most lagging
	// first) are read for the oldest message's timestamp, one fetch each
	// (default 8; negative: none).
	OldestPartitions int
	// Timeout bounds each broker request (default 5s).
	Timeout time.Duration
}

// LagReader measures a consumer group's lag, read-only: per partition the
// high watermark minus the group's committed offset, and the timestamp of
// the oldest uncommitted message. It never joins the group and never
// commits. It connects on the first ReadBacklog and reconnects after a
// failed one. Safe for concurrent use (reads are serialised).
type LagReader struct {
	cfg LagConfig
	sc  *sarama.Config

	mu     sync.Mutex
	client sarama.Client
	admin  sarama.ClusterAdmin
}

// NewLagReader validates cfg; it does not connect.
func NewLagReader(cfg LagConfig) (*LagReader, error) {
	if cfg.Group == "" {
		return nil, fmt.Errorf("%w: group is empty", ErrInvalidConfig)
	}
	if len(cfg.Topics) == 0 {
		return nil, fmt.Errorf("%w: topics is empty", ErrInvalidConfig)
	}
	if err := cfg.Client.validate(); err != nil {
		return nil, err
	}
	if cfg.InitialOffset == "" {
		cfg.InitialOffset = OffsetOldest
	}
	if cfg.OldestPartitions == 0 {
		cfg.OldestPartitions = 8
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	sc := sarama.NewConfig()
	if err := cfg.Client.sarama(sc); err != nil {
		return nil, err
	}
	sc.Net.DialTimeout, sc.Net.ReadTimeout, sc.Net.WriteTimeout = cfg.Timeout, cfg.Timeout, cfg.Timeout
	sc.Metadata.Retry.Max = 1
	sc.Consumer.Return.Errors = true
	sc.Consumer.Offsets.AutoCommit.Enable = false
	return &LagReader{cfg: cfg, sc: sc}, nil
}

// Close closes the connection, if any.
func (r *LagReader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.disconnect()
}

func (r *LagReader) disconnect() error {
	var err error
	if r.admin != nil {
		err = r.admin.Close() // closes the client too
	} else if r.client != nil {
		err = r.client.Close()
	}
	r.admin, r.client = nil, nil
	return err
}

// ReadBacklog implements sourcekit.BacklogReader. sarama's calls take no
// context: ctx is checked between requests, each bounded by Timeout.
func (r *LagReader) ReadBacklog(ctx context.Context) (sourcekit.Backlog, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	b, err := r.read(ctx)
	if err != nil {
		_ = r.disconnect()
		return sourcekit.Backlog{}, fmt.Errorf("kafka: lag of group %q: %w", r.cfg.Group, err)
	}
	return b, nil
}

func (r *LagReader) read(ctx context.Context) (sourcekit.Backlog, error) {
	if r.client == nil {
		c, err := sarama.NewClient(r.cfg.Brokers, r.sc)
		if err != nil {
			return sourcekit.Backlog{}, err
		}
		a, err := sarama.NewClusterAdminFromClient(c)
		if err != nil {
			_ = c.Close()
			return sourcekit.Backlog{}, err
		}
		r.client, r.admin = c, a
	}
	if err := r.client.RefreshMetadata(r.cfg.Topics...); err != nil {
		return sourcekit.Backlog{}, err
	}
	b := sourcekit.Backlog{At: time.Now()}
	want := map[string][]int32{}
	for _, t := range r.cfg.Topics {
		ps, err := r.client.Partitions(t)
		if err != nil {
			return sourcekit.Backlog{}, fmt.Errorf("topic %q: %w", t, err)
		}
		want[t] = ps
	}
	// A group that never committed is unknown to some brokers: nothing
	// committed, not a failure.
	resp, err := r.admin.ListConsumerGroupOffsets(r.cfg.Group, want)
	noGroup := errors.Is(err, sarama.ErrGroupIDNotFound)
	if err != nil && !noGroup {
		return sourcekit.Backlog{}, err
	}
	if resp == nil {
		resp = &sarama.OffsetFetchResponse{}
	}
	noGroup = noGroup || resp.Err == sarama.ErrGroupIDNotFound
	if resp.Err != sarama.ErrNoError && !noGroup {
		return sourcekit.Backlog{}, resp.Err
	}
	for _, t := range r.cfg.Topics {
		for _, p := range want[t] {
			if err := ctx.Err(); err != nil {
				return sourcekit.Backlog{}, err
			}
			hwm, err := r.client.GetOffset(t, p, sarama.OffsetNewest)
			if err != nil {
				return sourcekit.Backlog{}, fmt.Errorf("%s/%d: high watermark: %w", t, p, err)
			}
			committed := int64(-1)
			if blk := resp.GetBlock(t, p); blk != nil && !noGroup && blk.Err != sarama.ErrGroupIDNotFound {
				if blk.Err != sarama.ErrNoError {
					return sourcekit.Backlog{}, fmt.Errorf("%s/%d: committed offset: %w", t, p, blk.Err)
				}
				committed = blk.Offset
			}
			from := committed
			if from < 0 {
				from = hwm // initial offset newest: nothing owed
				if r.cfg.InitialOffset == OffsetOldest {
					if from, err = r.client.GetOffset(t, p, sarama.OffsetOldest); err != nil {
						return sourcekit.Backlog{}, fmt.Errorf("%s/%d: log start: %w", t, p, err)
					}
				}
			}
			pl := sourcekit.PartitionLag{Topic: t, Partition: p, HighWatermark: hwm, Committed: committed, Lag: max(0, hwm-from)}
			b.Partitions = append(b.Partitions, pl)
			b.Messages += pl.Lag
		}
	}
	b.Pending = b.Messages
	b.Oldest = r.oldest(ctx, b.Partitions)
	return b, nil
}

// oldest fetches the first uncommitted message of the most lagging
// partitions (at most OldestPartitions) and returns the earliest timestamp
// (zero if none could be read).
func (r *LagReader) oldest(ctx context.Context, parts []sourcekit.PartitionLag) time.Time {
	if r.cfg.OldestPartitions < 0 {
		return time.Time{}
	}
	lagging := make([]sourcekit.PartitionLag, 0, len(parts))
	for _, p := range parts {
		if p.Lag > 0 {
			lagging = append(lagging, p)
		}
	}
	sort.Slice(lagging, func(i, j int) bool { return lagging[i].Lag > lagging[j].Lag })
	lagging = lagging[:min(len(lagging), r.cfg.OldestPartitions)]
	if len(lagging) == 0 {
		return time.Time{}
	}
	cons, err := sarama.NewConsumerFromClient(r.client)
	if err != nil {
		return time.Time{}
	}
	defer cons.Close()
	var oldest time.Time
	for _, p := range lagging {
		if ctx.Err() != nil {
			break
		}
		off := p.Committed
		if off < 0 {
			off = p.HighWatermark - p.Lag
		}
		pc, err := cons.ConsumePartition(p.Topic, p.Partition, off)
		if err != nil {
			continue
		}
		t := time.NewTimer(r.cfg.Timeout)
		select {
		case m := <-pc.Messages():
			if m != nil && !m.Timestamp.IsZero() && m.Timestamp.Unix() > 0 && (oldest.IsZero() || m.Timestamp.Before(oldest)) {
				oldest = m.Timestamp
			}
		case <-pc.Errors():
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
		pc.AsyncClose()
		for range pc.Messages() { // drain until closed
		}
	}
	return oldest
}
