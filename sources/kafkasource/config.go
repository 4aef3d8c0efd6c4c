package kafkasource

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/IBM/sarama"
	"github.com/xdg-go/scram"

	"github.com/pacer-dev/pacer/internal/base/tlsconf"
)

// ErrInvalidConfig is wrapped by every configuration error.
var ErrInvalidConfig = errors.New("kafka: invalid config")

// DefaultVersion is the Kafka protocol version assumed when Config.Version
// is empty. (kfake, the in-process test broker, needs at least this one.)
const DefaultVersion = "3.6.0"

// Client holds what every Kafka client of pacer needs to reach the cluster.
type Client struct {
	Brokers []string
	// ClientID names this client in broker logs and quotas ("pacer" if empty).
	ClientID string
	// Version is the Kafka protocol version, e.g. "3.6.0" (DefaultVersion if empty).
	Version string
	TLS     TLS
	SASL    SASL
}

// TLS configures transport security. Server certificates are verified unless
// InsecureSkipVerify is set.
type TLS struct {
	Enable             bool
	CAFile             string // PEM roots; system roots if empty
	CertFile           string // client certificate (mutual TLS), with KeyFile
	KeyFile            string
	ServerName         string
	InsecureSkipVerify bool
}

// SASL configures authentication. Mechanism is "", "PLAIN", "SCRAM-SHA-256"
// or "SCRAM-SHA-512". The password is never logged.
type SASL struct {
	Mechanism string
	User      string
	Password  string
}

// InitialOffset says where a group with no committed offset starts.
type InitialOffset string

const (
	// OffsetOldest starts at the earliest retained message (the default).
	OffsetOldest InitialOffset = "oldest"
	// OffsetNewest starts after the last message at join time.
	OffsetNewest InitialOffset = "newest"
)

// Config configures a Source. The zero value is not usable: Brokers, Group
// and Topics are required; everything else has a default.
type Config struct {
	Client
	Group  string
	Topics []string
	// InitialOffset applies when the group has no committed offset for a
	// partition (OffsetOldest if empty).
	InitialOffset InitialOffset
	// InstanceID makes this worker a static member of the group (KIP-345):
	// a worker restarted with the same InstanceID, after a crash or a stop,
	// takes its partitions back at once, with no rebalance and without
	// waiting out SessionTimeout. A stopped static member does not leave
	// the group: its partitions wait for it until SessionTimeout passes.
	// Every worker of a group needs its own (e.g. the host or pod name);
	// two running with one InstanceID fence each other. Empty: a dynamic
	// member (the default).
	InstanceID string
	// Balance is the partition assignment strategy: "range" (default),
	// "roundrobin" or "sticky". All are eager: a rebalance ends the whole
	// session, which is what lets a blocked hand-over see it.
	Balance string

	// ChannelBufferSize is sarama's per-partition message channel size
	// (default 16). Together with FetchDefault it bounds what sarama holds
	// in memory per partition while paused; see Source.
	ChannelBufferSize int
	// FetchDefault is the bytes asked per partition per fetch (default 64 KiB).
	FetchDefault int32
	// FetchMaxWait is how long the broker may hold a fetch that finds no
	// new data (default 100ms; sarama's own is 500ms). Offset commits go to
	// the group coordinator over the same connection and wait behind a held
	// fetch, so this bounds how late a commit is, hence what a crash
	// repeats: with 500ms, a SIGKILL at 100/s repeated 35-47 messages.
	FetchMaxWait time.Duration
	// FetchMax caps one fetch per partition (0: no cap beyond the broker's).
	FetchMax int32
	// MaxInFlightPerPartition caps messages handed over but not yet final,
	// per partition (default 1024). When reached, the partition waits; this
	// bounds how much is redelivered after a crash.
	MaxInFlightPerPartition int

	SessionTimeout time.Duration // default 10s
	// HeartbeatInterval is how often the member heartbeats, which is also
	// how soon it notices a rebalance (default SessionTimeout/3).
	HeartbeatInterval time.Duration
	RebalanceTimeout  time.Duration // default 60s
	// CommitInterval coalesces commits (default 100ms): offsets are
	// committed as soon as a partition's watermark advances, at most once
	// per CommitInterval (the advances in between go in the next commit),
	// at once when the source is paused, and synchronously when a session
	// ends (rebalance, stop). A SIGKILL therefore repeats what was in
	// flight plus at most CommitInterval's worth of acknowledged messages,
	// or CommitAfter of them, whichever is fewer (plus those acknowledged
	// during one commit's round trip).
	CommitInterval time.Duration
	// CommitAfter starts the next commit without waiting out
	// CommitInterval once this many messages were acknowledged since the
	// last one (default 16, pacer's default max_in_flight; pacer.None:
	// never).
	// Commits then follow each other as fast as the broker answers them,
	// one at a time.
	CommitAfter int
	// RevokeTimeout bounds how long a partition being given up (a
	// rebalance, a stop) waits for its deliveries already at the sink, so
	// their acknowledgements are committed before another member reads the
	// partition again (default 10s, at most half of RebalanceTimeout). A
	// delivery that takes longer is repeated by the next owner.
	RevokeTimeout time.Duration

	Logger *slog.Logger
	// Sarama, if set, may adjust the generated sarama config last. Changes
	// that break the guarantees (auto-commit off without committing, a
	// cooperative strategy) are the caller's responsibility.
	Sarama func(*sarama.Config)
}

// DefaultCommitInterval is Config.CommitInterval's default.
const DefaultCommitInterval = 100 * time.Millisecond

// DefaultFetchMaxWait is Config.FetchMaxWait's default.
const DefaultFetchMaxWait = 100 * time.Millisecond

// DefaultCommitAfter is Config.CommitAfter's default.
const DefaultCommitAfter = 16

// DefaultRevokeTimeout is Config.RevokeTimeout's default.
const DefaultRevokeTimeout = 10 * time.Second

func (c *Config) withDefaults() Config {
	cc := *c
	if cc.InitialOffset == "" {
		cc.InitialOffset = OffsetOldest
	}
	if cc.Balance == "" {
		cc.Balance = "range"
	}
	if cc.ChannelBufferSize == 0 {
		cc.ChannelBufferSize = 16
	}
	if cc.FetchMaxWait == 0 {
		cc.FetchMaxWait = DefaultFetchMaxWait
	}
	if cc.FetchDefault == 0 {
		cc.FetchDefault = 64 << 10
	}
	if cc.MaxInFlightPerPartition == 0 {
		cc.MaxInFlightPerPartition = 1024
	}
	if cc.SessionTimeout == 0 {
		cc.SessionTimeout = 10 * time.Second
	}
	if cc.HeartbeatInterval == 0 {
		cc.HeartbeatInterval = cc.SessionTimeout / 3
	}
	if cc.RebalanceTimeout == 0 {
		cc.RebalanceTimeout = 60 * time.Second
	}
	if cc.CommitInterval == 0 {
		cc.CommitInterval = DefaultCommitInterval
	}
	if cc.CommitAfter == 0 {
		cc.CommitAfter = DefaultCommitAfter
	}
	if cc.RevokeTimeout == 0 {
		cc.RevokeTimeout = DefaultRevokeTimeout
	}
	cc.RevokeTimeout = min(cc.RevokeTimeout, cc.RebalanceTimeout/2)
	if cc.Logger == nil {
		cc.Logger = slog.New(slog.DiscardHandler)
	}
	return cc
}

// Validate reports the first invalid field.
func (c *Config) Validate() error {
	if len(c.Topics) == 0 {
		return fmt.Errorf("%w: topics is empty", ErrInvalidConfig)
	}
	if c.Group == "" {
		return fmt.Errorf("%w: group is empty", ErrInvalidConfig)
	}
	switch c.InitialOffset {
	case "", OffsetOldest, OffsetNewest:
	default:
		return fmt.Errorf("%w: initial_offset %q (want oldest or newest)", ErrInvalidConfig, c.InitialOffset)
	}
	switch c.Balance {
	case "", "range", "roundrobin", "sticky":
	default:
		return fmt.Errorf("%w: balance %q (want range, roundrobin or sticky)", ErrInvalidConfig, c.Balance)
	}
	if c.ChannelBufferSize < 0 || c.FetchDefault < 0 || c.FetchMax < 0 || c.MaxInFlightPerPartition < 0 || c.HeartbeatInterval < 0 || c.RevokeTimeout < 0 || c.FetchMaxWait < 0 {
		return fmt.Errorf("%w: negative size", ErrInvalidConfig)
	}
	return c.Client.validate()
}

func (c *Client) validate() error {
	if len(c.Brokers) == 0 {
		return fmt.Errorf("%w: brokers is empty", ErrInvalidConfig)
	}
	if c.Version != "" {
		if _, err := sarama.ParseKafkaVersion(c.Version); err != nil {
			return fmt.Errorf("%w: version %q: %v", ErrInvalidConfig, c.Version, err)
		}
	}
	switch c.SASL.Mechanism {
	case "":
	case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
		if c.SASL.User == "" {
			return fmt.Errorf("%w: sasl.user is empty for %s", ErrInvalidConfig, c.SASL.Mechanism)
		}
	default:
		return fmt.Errorf("%w: sasl.mechanism %q (want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)", ErrInvalidConfig, c.SASL.Mechanism)
	}
	if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
		return fmt.Errorf("%w: tls.cert_file and tls.key_file go together", ErrInvalidConfig)
	}
	return nil
}

// sarama fills the connection part of a sarama config.
func (c *Client) sarama(sc *sarama.Config) error {
	sc.ClientID = c.ClientID
	if sc.ClientID == "" {
		sc.ClientID = "pacer"
	}
	v := c.Version
	if v == "" {
		v = DefaultVersion
	}
	ver, err := sarama.ParseKafkaVersion(v)
	if err != nil {
		return fmt.Errorf("%w: version %q: %v", ErrInvalidConfig, v, err)
	}
	sc.Version = ver
	if c.TLS.Enable {
		tc, err := c.TLS.config()
		if err != nil {
			return err
		}
		sc.Net.TLS.Enable = true
		sc.Net.TLS.Config = tc
	}
	if m := c.SASL.Mechanism; m != "" {
		sc.Net.SASL.Enable = true
		sc.Net.SASL.Handshake = true
		sc.Net.SASL.User = c.SASL.User
		sc.Net.SASL.Password = c.SASL.Password
		switch m {
		case "PLAIN":
			sc.Net.SASL.Mechanism = sarama.SASLTypePlaintext
		case "SCRAM-SHA-256":
			sc.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA256
			sc.Net.SASL.SCRAMClientGeneratorFunc = newSCRAMClient(scram.SHA256)
		case "SCRAM-SHA-512":
			sc.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA512
			sc.Net.SASL.SCRAMClientGeneratorFunc = newSCRAMClient(scram.SHA512)
		}
	}
	return nil
}

func (t *TLS) config() (*tls.Config, error) {
	tc, err := tlsconf.Config{CAFile: t.CAFile, CertFile: t.CertFile, KeyFile: t.KeyFile,
		ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify}.Build()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return tc, nil
}

// saramaConfig builds the consumer group's sarama config.
func (c *Config) saramaConfig() (*sarama.Config, error) {
	sc := sarama.NewConfig()
	if err := c.Client.sarama(sc); err != nil {
		return nil, err
	}
	sc.Consumer.Return.Errors = true
	sc.Consumer.Offsets.Initial = sarama.OffsetOldest
	if c.InitialOffset == OffsetNewest {
		sc.Consumer.Offsets.Initial = sarama.OffsetNewest
	}
	sc.Consumer.Offsets.AutoCommit.Enable = true
	sc.Consumer.Offsets.AutoCommit.Interval = c.CommitInterval
	sc.Consumer.Group.Session.Timeout = c.SessionTimeout
	sc.Consumer.Group.Heartbeat.Interval = c.HeartbeatInterval
	sc.Consumer.Group.Rebalance.Timeout = c.RebalanceTimeout
	sc.Consumer.Group.InstanceId = c.InstanceID
	switch c.Balance {
	case "roundrobin":
		sc.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategyRoundRobin()}
	case "sticky":
		sc.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategySticky()}
	default:
		sc.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategyRange()}
	}
	sc.ChannelBufferSize = c.ChannelBufferSize
	sc.Consumer.Fetch.Default = c.FetchDefault
	sc.Consumer.Fetch.Max = c.FetchMax
	sc.Consumer.MaxWaitTime = c.FetchMaxWait
	// A partition whose hand-over waits (a key at its fair share, the
	// fairness overflow's deferral topic waiting for its key's share)
	// would otherwise hold every other partition fetched from the same
	// broker until sarama delivered its whole fetch response: sarama
	// only gives up on a partition whose channel took nothing for one
	// MaxProcessingTime, and a hand-over freed every few milliseconds
	// resets that clock. At 5 ms, such a partition is set aside and the
	// broker's other partitions are read on (measured by
	// BenchmarkSmallTenantsBesideHot: without it, the partition beside a
	// waiting deferral topic was read seconds late).
	sc.Consumer.MaxProcessingTime = partitionWait
	if c.Sarama != nil {
		c.Sarama(sc)
	}
	if err := sc.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	return sc, nil
}

// partitionWait is sarama's Consumer.MaxProcessingTime for the Source: how
// long one partition's waiting hand-over may hold the broker's other
// partitions.
const partitionWait = 5 * time.Millisecond
