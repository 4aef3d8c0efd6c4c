// Package config is pacer's configuration: one YAML file decoded strictly
// (an unknown or misspelt field is an error with its line), with human units
// (rates such as 100/s, 6000/m, 1M/day; durations such as 250ms),
// ${ENV} and ${ENV:-default} expansion, and a Validate that reports every
// problem at once with its field path and line.
//
// Default returns the documented defaults; Load and Parse start from them, so
// a field left out of the file keeps its default. Secrets (passwords, tokens,
// DSNs) are typed Secret and never print.
package config

import (
	"time"

	"github.com/pacer-dev/pacer/pacer"

	"github.com/pacer-dev/pacer/sinks/httpsink"
	"github.com/pacer-dev/pacer/sources/kafkasource"
)

// Config is the whole configuration of one pacer worker.
type Config struct {
	Source     Source     `yaml:"source" json:"source"`
	Shaping    Shaping    `yaml:"shaping" json:"shaping"`
	Sink       Sink       `yaml:"sink" json:"sink"`
	DeadLetter DeadLetter `yaml:"dead_letter" json:"dead_letter"`
	Retry      Retry      `yaml:"retry" json:"retry"`
	// Ordering: "none" (default; any order, fastest) or "key" (messages
	// with the same key are delivered one at a time, in order).
	Ordering string   `yaml:"ordering" json:"ordering"`
	Batching Batching `yaml:"batching" json:"batching"`
	Admin    Admin    `yaml:"admin" json:"admin"`
	Log      Log      `yaml:"log" json:"log"`
	// Telemetry is OpenTelemetry tracing (off by default).
	Telemetry Telemetry `yaml:"telemetry" json:"telemetry"`
	// DrainTimeout bounds a clean stop (SIGTERM): in-flight deliveries get
	// this long to finish; what does not finish is left for redelivery.
	DrainTimeout Duration `yaml:"drain_timeout" json:"drain_timeout"`
	// Breaker tells a bad message from a broken pipeline (see Breaker).
	Breaker Breaker `yaml:"breaker" json:"breaker"`
	// Routes paces each destination at its own limit (see Routes).
	Routes Routes `yaml:"routes" json:"routes"`

	// where records the line and column of every field present in the file,
	// by path ("shaping.rate"), for Validate's messages.
	where map[string]Pos
	// hints are warnings found while decoding (a value a comment may have
	// cut), returned by Warnings.
	hints Problems
	// secretLines are the file's lines that hold a secret (see
	// scanSecretLines), hidden by RedactLine even when the YAML is broken.
	secretLines map[int]bool
}

// Bounds of source.backlog_interval, and its default.
const (
	DefaultBacklogInterval = 15 * time.Second
	MinBacklogInterval     = time.Second
	MaxBacklogInterval     = time.Hour
)

// Pos is a place in the YAML file (1-based; zero when unknown).
type Pos struct{ Line, Column int }

// Source selects and configures the broker pacer consumes from.
type Source struct {
	// Type is "kafka" or "nats".
	Type  string `yaml:"type" json:"type"`
	Kafka Kafka  `yaml:"kafka" json:"kafka"`
	NATS  NATS   `yaml:"nats" json:"nats"`
	// BacklogInterval is how often a running worker asks the broker,
	// read-only, how much waits for it (consumer lag, pending count) for
	// /status and /metrics: between 1s and 1h, default 15s.
	BacklogInterval Duration `yaml:"backlog_interval" json:"backlog_interval"`
}

// Kafka is a Kafka consumer-group source.
type Kafka struct {
	Brokers []string `yaml:"brokers" json:"brokers"`
	Topics  []string `yaml:"topics" json:"topics"`
	// Group is the consumer group; workers in one group share partitions.
	Group    string `yaml:"group" json:"group"`
	ClientID string `yaml:"client_id" json:"client_id"`
	// Version is the Kafka protocol version to speak (default 3.6.0).
	Version string `yaml:"version" json:"version"`
	// InitialOffset is where a new group starts: "oldest" or "newest".
	InitialOffset string `yaml:"initial_offset" json:"initial_offset"`
	// InstanceID makes the worker a static group member: restarted with
	// the same ID (e.g. ${HOSTNAME}) it takes its partitions back at once,
	// without a rebalance or waiting out the dead one's session. Each
	// worker needs its own. Empty: a dynamic member.
	InstanceID string `yaml:"instance_id" json:"instance_id"`
	// CommitInterval coalesces offset commits (default 100ms): a commit
	// follows a partition's watermark at most this often, and at once on
	// pause, rebalance and stop. CommitAfter starts the next commit early
	// once this many messages were acknowledged since the last (default
	// 16, the default max_in_flight; none: never early). FetchMaxWait is how
	// long the broker may hold an empty fetch (default 100ms): commits wait
	// behind it. Together they bound what a SIGKILL repeats (RELIABILITY.md).
	CommitInterval Duration    `yaml:"commit_interval" json:"commit_interval"`
	CommitAfter    CountOrNone `yaml:"commit_after" json:"commit_after"`
	FetchMaxWait   Duration    `yaml:"fetch_max_wait" json:"fetch_max_wait"`
	TLS            TLS         `yaml:"tls" json:"tls"`
	SASL           SASL        `yaml:"sasl" json:"sasl"`
}

// SASL is Kafka authentication.
type SASL struct {
	// Mechanism: "" (none), "PLAIN", "SCRAM-SHA-256" or "SCRAM-SHA-512".
	Mechanism string `yaml:"mechanism" json:"mechanism"`
	Username  string `yaml:"username" json:"username"`
	Password  Secret `yaml:"password" json:"password"`
}

// NATS is a JetStream pull-consumer source.
type NATS struct {
	URL    string `yaml:"url" json:"url"`
	Stream string `yaml:"stream" json:"stream"`
	// FilterSubject restricts the consumer to matching subjects, e.g.
	// "orders.>" (empty: the whole stream).
	FilterSubject string `yaml:"filter_subject" json:"filter_subject"`
	// Consumer is the durable consumer name; workers sharing it share work.
	Consumer string `yaml:"consumer" json:"consumer"`
	// CreateConsumer creates the durable consumer if it does not exist
	// (default true).
	CreateConsumer bool `yaml:"create_consumer" json:"create_consumer"`
	// DeliverPolicy, for a created consumer: "all" (default) or "new".
	DeliverPolicy string `yaml:"deliver_policy" json:"deliver_policy"`
	// AckWait is how long JetStream waits for an ack before redelivering.
	AckWait Duration `yaml:"ack_wait" json:"ack_wait"`
	// MaxDeliver caps deliveries (default none: unlimited).
	MaxDeliver CountOrNone `yaml:"max_deliver" json:"max_deliver"`
	// FetchBatch is the most messages one pull asks for.
	FetchBatch int `yaml:"fetch_batch" json:"fetch_batch"`
	// TenantInSubject, when > 0, pulls each value of that subject token (a
	// tenant, 1-based: 2 in jobs.<tenant>.>) through its own durable
	// consumer "<consumer>_<tenant>", so with fairness a hot tenant at its
	// share waits alone instead of holding the stream. filter_subject must
	// have '*' at that token; needs create_consumer.
	TenantInSubject int      `yaml:"tenant_in_subject" json:"tenant_in_subject"`
	TLS             TLS      `yaml:"tls" json:"tls"`
	Auth            NATSAuth `yaml:"auth" json:"auth"`
}

// NATSAuth is NATS authentication; set at most one of token, user/password,
// creds_file, nkey_seed_file.
type NATSAuth struct {
	Token        Secret `yaml:"token" json:"token"`
	User         string `yaml:"user" json:"user"`
	Password     Secret `yaml:"password" json:"password"`
	CredsFile    string `yaml:"creds_file" json:"creds_file"`
	NKeySeedFile string `yaml:"nkey_seed_file" json:"nkey_seed_file"`
}

// TLS configures a client TLS connection.
type TLS struct {
	Enabled            bool   `yaml:"enabled" json:"enabled"`
	CAFile             string `yaml:"ca_file" json:"ca_file"`
	CertFile           string `yaml:"cert_file" json:"cert_file"`
	KeyFile            string `yaml:"key_file" json:"key_file"`
	ServerName         string `yaml:"server_name" json:"server_name"`
	InsecureSkipVerify bool   `yaml:"insecure_skip_verify" json:"insecure_skip_verify"`
}

// Shaping decides when each message may go on.
//
// Stages in order: per-key limit, quotas, token bucket (rate, burst), peak
// pacer (peak), global Redis limit. Adaptive control moves rate between
// adaptive.min and adaptive.max from the downstream's feedback.
type Shaping struct {
	// Rate is the sustained rate (required).
	Rate Rate `yaml:"rate" json:"rate"`
	// Burst is how many messages may go at once above the sustained rate
	// (default: one second's worth of rate, at least 1).
	Burst int `yaml:"burst" json:"burst"`
	// Peak, when set, is a hard ceiling, even inside a burst: never two
	// messages closer than 1/peak (at most peak*t + 1 in any interval t).
	// Must be >= rate.
	Peak Rate `yaml:"peak" json:"peak"`
	// MaxWait is how far ahead the bucket may promise permits (default 5s);
	// beyond it the shaper refuses and the source is paused. none (or 0):
	// never promise ahead.
	MaxWait DurationOrNone `yaml:"max_wait" json:"max_wait"`
	// QueueSize bounds messages held waiting for admission; beyond it the
	// source is paused.
	QueueSize int `yaml:"queue_size" json:"queue_size"`
	// QueueBytes, when set, also bounds the payload bytes (key, value,
	// headers) of the queued messages: beyond it the source is paused and
	// the next message waits (one larger than the bound passes alone).
	QueueBytes ByteSize `yaml:"queue_bytes" json:"queue_bytes"`
	// MaxInFlight bounds concurrent deliveries to the sink.
	MaxInFlight int `yaml:"max_in_flight" json:"max_in_flight"`
	// StartEmpty starts the bucket with no tokens (no burst at start-up),
	// when no state is restored (StateDir, StateKey). Default true: a
	// restart (a crash loop, a rolling deploy) is then no second burst at
	// the API; false gives a fresh worker a full burst at once.
	StartEmpty bool `yaml:"start_empty" json:"start_empty"`
	// Warmup ramps the rate linearly from a tenth to rate over this long
	// after start-up (0: no ramp).
	Warmup Duration `yaml:"warmup" json:"warmup"`
	// WarmupAfterIdle makes the warm-up Guava's: it cools again after every
	// idle period (and, pacing at most rate, caps bursts for good). By
	// default the ramp applies only during the warmup period after start-up.
	WarmupAfterIdle bool `yaml:"warmup_after_idle" json:"warmup_after_idle"`
	// StateDir, when set, keeps the token bucket and peak pacer across
	// restarts in StateDir/shaper.json (one worker per directory): saved
	// every StateInterval and on a clean stop, restored at start-up, so a
	// restarted worker never spends a second burst. With a StateDir but no
	// saved state yet, the bucket starts empty.
	StateDir string `yaml:"state_dir" json:"state_dir"`
	// StateKey, with shaping.global's Redis, keeps the same state in Redis
	// instead of a file, under Prefix+"{"+key+"}:state:"+StateKey (it
	// expires after a minute unsaved). One per worker, e.g. ${HOSTNAME}:
	// two workers sharing one would overwrite each other's state. Exclusive
	// with StateDir.
	StateKey string `yaml:"state_key" json:"state_key"`
	// StateInterval is how often the state is saved (default 250ms).
	StateInterval Duration `yaml:"state_interval" json:"state_interval"`
	PerKey        PerKey   `yaml:"per_key" json:"per_key"`
	Quotas        []Quota  `yaml:"quotas" json:"quotas"`
	Global        Global   `yaml:"global" json:"global"`
	Adaptive      Adaptive `yaml:"adaptive" json:"adaptive"`
	// Fairness and Priority order the waiting messages (see fairness.go).
	Fairness Fairness `yaml:"fairness" json:"fairness"`
	Priority Priority `yaml:"priority" json:"priority"`
	// Timezone (IANA name, default UTC) is the local time of schedule and
	// of calendar quotas.
	Timezone string `yaml:"timezone" json:"timezone"`
	// Schedule caps the rate by day of week and local time (see schedule.go).
	Schedule []ScheduleRule `yaml:"schedule" json:"schedule"`
}

// PerKey limits each message key separately (enabled when rate is set).
type PerKey struct {
	Rate  Rate `yaml:"rate" json:"rate"`
	Burst int  `yaml:"burst" json:"burst"`
	// Key is what identifies a key: "key" (the message key) or
	// "header:NAME".
	Key string `yaml:"key" json:"key"`
	// MaxKeys bounds the keys tracked at once; the least recently used
	// idle key is forgotten first.
	MaxKeys int      `yaml:"max_keys" json:"max_keys"`
	IdleTTL Duration `yaml:"idle_ttl" json:"idle_ttl"`
}

// Quota is a window limit, e.g. 10000/day: at most Limit.Count messages in
// any Limit.Per ("sliding") or in each calendar-aligned Limit.Per ("fixed").
type Quota struct {
	Name  string `yaml:"name" json:"name"`
	Limit Rate   `yaml:"limit" json:"limit"`
	// Window: "sliding" (default), "fixed" (aligned to the Unix epoch) or
	// "calendar" (per day, week or month of shaping.timezone: resets at
	// local midnight, on Monday, on the 1st).
	Window string `yaml:"window" json:"window"`
}

// Global is a budget shared by every worker through Redis (enabled when
// redis_url is set).
type Global struct {
	RedisURL Secret `yaml:"redis_url" json:"redis_url"`
	// Key names the shared budget; workers with the same key share it.
	Key string `yaml:"key" json:"key"`
	// Prefix starts every Redis key (default "pacer:").
	Prefix string `yaml:"prefix" json:"prefix"`
	Rate   Rate   `yaml:"rate" json:"rate"`
	// Burst is the shared bucket's size (0: one second's worth of rate,
	// at least 1; see EffectiveBurst). A lease is at most half of it.
	Burst int `yaml:"burst" json:"burst"`
	// Lease is the lease window: a worker takes about this long's worth of
	// its recent rate from Redis at a time (default 100ms).
	Lease Duration `yaml:"lease" json:"lease"`
	// Timeout bounds each Redis call (default 100ms).
	Timeout Duration `yaml:"timeout" json:"timeout"`
	// ExpectedWorkers divides the budget for the fail-open fallback.
	ExpectedWorkers int `yaml:"expected_workers" json:"expected_workers"`
	// OnFailure is what happens while Redis is unreachable: "closed"
	// (default: admit nothing, pause) or "open" (fall back to the local
	// limits alone).
	OnFailure string `yaml:"on_failure" json:"on_failure"`
	// PerKey, enabled when its rate is set, gives every key (tenant) one
	// budget shared by all workers through the same Redis: one bucket per
	// key, applied after the shared budget above.
	PerKey GlobalPerKey `yaml:"per_key" json:"per_key"`
	// LearnAlone makes each worker learn the downstream's limit from its
	// own answers. Default (false): with shaping.adaptive.mode auto or pid,
	// the workers of this budget share one learned limit through the same
	// Redis (their accepted rate is the evidence; the shared rate follows
	// it), so together they converge to the API's limit.
	LearnAlone bool `yaml:"learn_alone" json:"learn_alone"`
}

// GlobalPerKey is a per-key limit shared by every worker through Redis.
type GlobalPerKey struct {
	Rate  Rate `yaml:"rate" json:"rate"`
	Burst int  `yaml:"burst" json:"burst"` // 0: 1
	// Key is what identifies a key: "key" (the message key, default) or
	// "header:NAME", as for shaping.per_key.
	Key string `yaml:"key" json:"key"`
	// MaxKeys bounds the per-key leases held locally (default 10000).
	MaxKeys int `yaml:"max_keys" json:"max_keys"`
}

// Adaptive moves the sustained rate between min and shaping.rate (the
// ceiling) from the downstream's feedback (429, 503, Retry-After, latency).
// Retry-After and RateLimit headers are honoured even when mode is off.
type Adaptive struct {
	// Mode: "auto" (default: find and hold the downstream's real limit,
	// from its rate-limit headers or from what it accepted before a 429),
	// "off" (pin shaping.rate), "aimd" or "pid" (PID is not sound on a
	// 429 signal; prefer auto).
	Mode string `yaml:"mode" json:"mode"`
	// Min is the floor (default: 1% of shaping.rate).
	Min Rate `yaml:"min" json:"min"`
	// Increase (aimd) is added to the rate after each clean interval
	// (default: 5% of shaping.rate).
	Increase Rate `yaml:"increase" json:"increase"`
	// Decrease (aimd) multiplies the rate on throttling (0 < decrease < 1).
	Decrease float64 `yaml:"decrease" json:"decrease"`
	// Interval between adjustments.
	Interval Duration `yaml:"interval" json:"interval"`
}

// Sink selects and configures the downstream.
type Sink struct {
	// Type is "http", "sql" or "stdout".
	Type   string `yaml:"type" json:"type"`
	HTTP   HTTP   `yaml:"http" json:"http"`
	SQL    SQL    `yaml:"sql" json:"sql"`
	Stdout Stdout `yaml:"stdout" json:"stdout"`
}

// HTTP posts each message (or batch) to an API.
type HTTP struct {
	URL    string `yaml:"url" json:"url"`
	Method string `yaml:"method" json:"method"`
	// Headers are sent with every request; values are secrets (API keys).
	Headers     map[string]Secret `yaml:"headers" json:"headers"`
	BearerToken Secret            `yaml:"bearer_token" json:"bearer_token"`
	ContentType string            `yaml:"content_type" json:"content_type"`
	Timeout     Duration          `yaml:"timeout" json:"timeout"`
	// Body is a text/template over the message (.ID, .Key, .Value,
	// .Headers, .Field "a.b", ...); empty sends the value as is.
	Body string `yaml:"body" json:"body"`
	// IdempotencyHeader carries the message ID (default Idempotency-Key).
	IdempotencyHeader string `yaml:"idempotency_header" json:"idempotency_header"`
	// SuccessPath, if set, is a gjson path that must be truthy in a 2xx body.
	SuccessPath string `yaml:"success_path" json:"success_path"`
	TLS         TLS    `yaml:"tls" json:"tls"`
}

// SQL writes each message (or batch) to a database.
type SQL struct {
	// Driver: "postgres", "mysql" (MySQL or MariaDB) or "sqlite". A mysql
	// DSN is mysql://user:pass@host:3306/db or the driver's own
	// user:pass@tcp(host:3306)/db; the session runs in STRICT_ALL_TABLES,
	// so a value a column cannot hold rejects its message.
	Driver string `yaml:"driver" json:"driver"`
	DSN    Secret `yaml:"dsn" json:"dsn"`
	// Table receives (id, key, value, headers, topic, received_at) rows;
	// or give Statement, a parameterised statement of your own.
	Table     string `yaml:"table" json:"table"`
	Statement string `yaml:"statement" json:"statement"`
	// CreateTable creates the example table (id, key, payload, topic,
	// partition, offset, received_at) at start-up if it does not exist.
	CreateTable bool `yaml:"create_table" json:"create_table"`
	// MaxConns bounds the connection pool (default: shaping.max_in_flight).
	MaxConns int `yaml:"max_conns" json:"max_conns"`
}

// Stdout prints messages, for trying things out.
type Stdout struct {
	// Format: "json" (one JSON object per line; the only format so far).
	Format string `yaml:"format" json:"format"`
}

// DeadLetter is where rejected messages go.
type DeadLetter struct {
	// Type: "file" (default: JSON lines appended to path, default
	// pacer-dead-letters.jsonl in the working directory), "topic" (Kafka),
	// "subject" (NATS), or "none": a rejected message is logged and dropped
	// (acked). "none" is the only setting that loses messages, so it must
	// be chosen explicitly.
	Type    string `yaml:"type" json:"type"`
	Topic   string `yaml:"topic" json:"topic"`
	Subject string `yaml:"subject" json:"subject"`
	Path    string `yaml:"path" json:"path"`
}

// Retry governs transient failures. Every attempt is admitted by the
// shaper. Backoff is exponential with equal jitter (half the step fixed,
// half random), from initial_backoff up to max_backoff, or the
// downstream's Retry-After if later.
type Retry struct {
	// MaxAttempts counts deliveries including the first; after the last a
	// message is dead-lettered. none retries forever.
	MaxAttempts    CountOrNone `yaml:"max_attempts" json:"max_attempts"`
	InitialBackoff Duration    `yaml:"initial_backoff" json:"initial_backoff"`
	MaxBackoff     Duration    `yaml:"max_backoff" json:"max_backoff"`
	// MaxTime gives up (dead-letters) this long after the first attempt;
	// none (the default): no limit.
	MaxTime DurationOrNone `yaml:"max_time" json:"max_time"`
	// MaxPause caps every wait the downstream imposes (Retry-After, a
	// spent rate-limit window); a longer one is cut to it with a WARN.
	// max_time, when set, caps them too. Default 5m.
	MaxPause Duration `yaml:"max_pause" json:"max_pause"`
}

// Breaker is the systemic-failure breaker: when permanent failures of one
// class (an HTTP status, a SQLSTATE, a template error) keep coming, pacer
// stops dead-lettering, pauses the source, reports not ready and probes
// with one delivery at a time until one succeeds. 401, 403, 407, an
// undefined table or column, and a request that cannot be built trip it at
// once.
type Breaker struct {
	// Enabled (default true) turns the breaker on.
	Enabled bool `yaml:"enabled" json:"enabled"`
	// Consecutive failures of one class in a row trip it (default 10).
	Consecutive int `yaml:"consecutive" json:"consecutive"`
	// Window and Ratio: so do failures of one class making up ratio of the
	// last window outcomes (default 100 and 0.5).
	Window int     `yaml:"window" json:"window"`
	Ratio  float64 `yaml:"ratio" json:"ratio"`
	// ProbeInitial is the wait before the first probe, doubled after each
	// failed probe of a held message (or with a systemic class) up to
	// ProbeMax; a newer message that fails otherwise waits ProbeInitial for
	// the next (defaults 1s and 1m).
	ProbeInitial Duration `yaml:"probe_initial" json:"probe_initial"`
	ProbeMax     Duration `yaml:"probe_max" json:"probe_max"`
	// Systemic lists more failure classes that trip it at once
	// ("http 404", "sqlstate 23502").
	Systemic []string `yaml:"systemic" json:"systemic"`
}

// Batching groups admitted messages into one Deliver call (1: no batching).
type Batching struct {
	Size   int      `yaml:"size" json:"size"`
	Linger Duration `yaml:"linger" json:"linger"`
}

// Admin is the admin HTTP listener: /metrics, /healthz, /readyz, /status,
// the status page and PUT /rate.
type Admin struct {
	// Listen is host:port; "" turns the listener off. Loopback by default.
	Listen string `yaml:"listen" json:"listen"`
	// AllowRemote must be true to listen on a non-loopback address.
	AllowRemote bool `yaml:"allow_remote" json:"allow_remote"`
	// TokenEnv names the environment variable holding the bearer token
	// for PUT /rate; unset or empty variable: the endpoint is off.
	TokenEnv string `yaml:"token_env" json:"token_env"`
}

// Log configures log/slog output (on stderr).
type Log struct {
	// Level: "debug", "info" (default), "warn" or "error".
	Level string `yaml:"level" json:"level"`
	// Format: "text" (default) or "json".
	Format string `yaml:"format" json:"format"`
}

// Default returns the documented defaults. A file only needs the source,
// the sink and shaping.rate. (Top-level keys starting with "x-" are
// ignored: a place for YAML anchors, as in compose files.)
func Default() Config {
	return Config{
		Source: Source{
			Kafka: Kafka{
				Group:          "pacer",
				ClientID:       "pacer",
				Version:        kafkasource.DefaultVersion,
				InitialOffset:  "oldest",
				CommitInterval: Duration(kafkasource.DefaultCommitInterval),
				CommitAfter:    CountOrNone(kafkasource.DefaultCommitAfter),
				FetchMaxWait:   Duration(kafkasource.DefaultFetchMaxWait),
			},
			NATS: NATS{
				URL:            "nats://127.0.0.1:4222",
				Consumer:       "pacer",
				CreateConsumer: true,
				DeliverPolicy:  "all",
				AckWait:        Duration(30 * time.Second),
				FetchBatch:     32,
				MaxDeliver:     None,
			},
			BacklogInterval: Duration(DefaultBacklogInterval),
		},
		Shaping: Shaping{
			MaxWait:     DurationOrNone(pacer.DefaultMaxWait),
			QueueSize:   pacer.DefaultQueueSize,
			MaxInFlight: pacer.DefaultMaxInFlight,
			StartEmpty:  true,
			PerKey:      PerKey{Key: "key", MaxKeys: pacer.DefaultPerKeyMaxKeys, IdleTTL: Duration(pacer.DefaultPerKeyIdleTTL)},
			Global: Global{Key: "pacer", Prefix: "pacer:", Lease: Duration(100 * time.Millisecond), Timeout: Duration(100 * time.Millisecond),
				ExpectedWorkers: 1, OnFailure: "closed", PerKey: GlobalPerKey{Key: "key", MaxKeys: 10000}},
			Adaptive: Adaptive{Mode: "auto", Decrease: 0.5, Interval: Duration(time.Second)},
			Fairness: Fairness{Key: "key", MaxShare: 0.5},
		},
		Sink: Sink{
			HTTP:   HTTP{Method: "POST", ContentType: httpsink.DefaultContentType, Timeout: Duration(httpsink.DefaultTimeout)},
			SQL:    SQL{Driver: "postgres", Table: "pacer_messages"},
			Stdout: Stdout{Format: "json"},
		},
		DeadLetter: DeadLetter{Type: "file", Path: "pacer-dead-letters.jsonl"},
		Retry: Retry{
			MaxAttempts:    pacer.DefaultMaxAttempts,
			MaxTime:        None,
			InitialBackoff: Duration(pacer.DefaultRetryInitial),
			MaxBackoff:     Duration(pacer.DefaultRetryMax),
			MaxPause:       Duration(pacer.DefaultMaxPause),
		},
		Ordering:     "none",
		Batching:     Batching{Size: 1},
		Admin:        Admin{Listen: "127.0.0.1:8484", TokenEnv: "PACER_ADMIN_TOKEN"},
		Log:          Log{Level: "info", Format: "text"},
		Telemetry:    DefaultTelemetry(),
		DrainTimeout: Duration(pacer.DefaultDrainTimeout),
		Breaker: Breaker{Enabled: true, Consecutive: 10, Window: 100, Ratio: 0.5,
			ProbeInitial: Duration(time.Second), ProbeMax: Duration(time.Minute)},
	}
}

// Has reports whether the file set the field at path ("shaping.peak").
func (c *Config) Has(path string) bool {
	_, ok := c.where[path]
	return ok
}

// Where returns the position of path in the file, or of its closest
// ancestor present there (zero Pos when none).
func (c *Config) Where(path string) Pos {
	for p := path; p != ""; p = parent(p) {
		if pos, ok := c.where[p]; ok {
			return pos
		}
	}
	return Pos{}
}

func parent(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '.' || p[i] == '[' {
			return p[:i]
		}
	}
	return ""
}

// SharesLearnedLimit reports whether the workers of shaping.global share one
// learned limit of the downstream: the auto or pid controller under a
// configured rate, with learn_alone off.
func (s Shaping) SharesLearnedLimit() bool {
	return (s.Adaptive.Mode == "auto" || s.Adaptive.Mode == "pid") &&
		!s.Global.LearnAlone && !s.Global.RedisURL.IsZero() && !s.Rate.IsZero()
}
