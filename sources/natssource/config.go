package natssource

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/pacer-dev/pacer/internal/base/redact"
	"github.com/pacer-dev/pacer/internal/base/tlsconf"
)

// ErrInvalidConfig is wrapped by every configuration error.
var ErrInvalidConfig = errors.New("nats: invalid config")

// Conn says how to reach NATS. Exactly one authentication method may be
// set: CredsFile, NKeySeedFile, User/Password or Token. Secrets are never
// logged.
type Conn struct {
	URL  string // comma separated server URLs (nats.DefaultURL if empty)
	Name string // client name shown by the server ("pacer" if empty)
	// URLField is the configuration setting URL comes from
	// ("source.nats.url"): log lines about the connection (server
	// unreachable, disconnected) name it next to URL, whose credentials
	// and query values internal/base/redact masks. Empty: no field is named.
	URLField string

	CredsFile    string
	NKeySeedFile string
	User         string
	Password     string
	Token        string

	TLS TLS

	// ReconnectWait is the pause between reconnect attempts (default 250ms);
	// the client reconnects forever.
	ReconnectWait time.Duration
	// PingInterval and MaxPingsOut: the client pings the server every
	// PingInterval and drops the connection as stale (then reconnects,
	// logging it) after MaxPingsOut pings unanswered (defaults
	// DefaultPingInterval, DefaultMaxPingsOut).
	PingInterval time.Duration
	MaxPingsOut  int
}

// TLS configures transport security; certificates are verified unless
// InsecureSkipVerify is set.
type TLS struct {
	Enable             bool
	CAFile             string
	CertFile           string
	KeyFile            string
	ServerName         string
	InsecureSkipVerify bool
}

func (c *Conn) validate() error {
	n := 0
	for _, set := range []bool{c.CredsFile != "", c.NKeySeedFile != "", c.User != "", c.Token != ""} {
		if set {
			n++
		}
	}
	if n > 1 {
		return fmt.Errorf("%w: more than one of creds_file, nkey_seed_file, user, token", ErrInvalidConfig)
	}
	if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
		return fmt.Errorf("%w: tls.cert_file and tls.key_file go together", ErrInvalidConfig)
	}
	return c.checkFiles()
}

// checkFiles reads the TLS, creds and nkey files as connect will, so a
// missing or malformed file is a config error before the first connect.
func (c *Conn) checkFiles() error {
	if c.TLS.CAFile != "" {
		pem, err := os.ReadFile(c.TLS.CAFile)
		if err != nil {
			return fmt.Errorf("%w: tls.ca_file: %v", ErrInvalidConfig, err)
		}
		if !x509.NewCertPool().AppendCertsFromPEM(pem) {
			return fmt.Errorf("%w: tls.ca_file %s holds no PEM certificate", ErrInvalidConfig, c.TLS.CAFile)
		}
	}
	if c.TLS.CertFile != "" {
		if _, err := tls.LoadX509KeyPair(c.TLS.CertFile, c.TLS.KeyFile); err != nil {
			return fmt.Errorf("%w: tls client certificate: %v", ErrInvalidConfig, err)
		}
	}
	if c.CredsFile != "" {
		if _, err := os.ReadFile(c.CredsFile); err != nil {
			return fmt.Errorf("%w: creds_file: %v", ErrInvalidConfig, err)
		}
	}
	if c.NKeySeedFile != "" {
		if _, err := nats.NkeyOptionFromSeed(c.NKeySeedFile); err != nil {
			return fmt.Errorf("%w: nkey_seed_file: %v", ErrInvalidConfig, err)
		}
	}
	return nil
}

// onDisconnect logs a lost connection as a warning, naming c's servers
// (logAttrs); a connection closed on purpose (err nil: Close, a clean
// stop) is logged at debug level only.
func onDisconnect(log *slog.Logger, c *Conn) nats.ConnErrHandler {
	return func(_ *nats.Conn, err error) {
		if err == nil {
			log.Debug("nats: connection closed")
			return
		}
		log.Warn("nats: disconnected", append(c.logAttrs(), "err", err)...)
	}
}

// logAttrs are the attributes naming c's servers in a log line: "url",
// redacted by internal/base/redact (userinfo and query values masked), and
// "field", the setting it comes from (URLField, when set).
func (c *Conn) logAttrs() []any {
	addr := c.URL
	if addr == "" {
		addr = nats.DefaultURL
	}
	attrs := []any{"url", redact.Text(addr)}
	if c.URLField != "" {
		attrs = append(attrs, "field", c.URLField)
	}
	return attrs
}

// connect dials NATS with reconnect-forever and logging handlers.
func (c *Conn) connect(log *slog.Logger) (*nats.Conn, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	url := c.URL
	if url == "" {
		url = nats.DefaultURL
	}
	name := c.Name
	if name == "" {
		name = "pacer"
	}
	wait := c.ReconnectWait
	if wait == 0 {
		wait = 250 * time.Millisecond
	}
	ping, pings := c.PingInterval, c.MaxPingsOut
	if ping <= 0 {
		ping = DefaultPingInterval
	}
	if pings <= 0 {
		pings = DefaultMaxPingsOut
	}
	opts := []nats.Option{
		nats.Name(name),
		nats.PingInterval(ping),
		nats.MaxPingsOutstanding(pings),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(wait),
		nats.DisconnectErrHandler(onDisconnect(log, c)),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			// A slow-consumer drop (seen after reconnects) costs a delay,
			// not a message: the server redelivers after AckWait.
			subj := ""
			if sub != nil {
				subj = sub.Subject
			}
			log.Warn("nats: async error", "subject", subj, "err", err)
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			log.Info("nats: reconnected", "server", nc.ConnectedUrlRedacted())
		}),
	}
	switch {
	case c.CredsFile != "":
		opts = append(opts, nats.UserCredentials(c.CredsFile))
	case c.NKeySeedFile != "":
		o, err := nats.NkeyOptionFromSeed(c.NKeySeedFile)
		if err != nil {
			return nil, fmt.Errorf("nats: nkey seed: %w", err)
		}
		opts = append(opts, o)
	case c.User != "":
		opts = append(opts, nats.UserInfo(c.User, c.Password))
	case c.Token != "":
		opts = append(opts, nats.Token(c.Token))
	}
	if c.TLS.Enable || c.TLS.CAFile != "" || c.TLS.CertFile != "" {
		tc, err := tlsconf.Config{CAFile: c.TLS.CAFile, CertFile: c.TLS.CertFile, KeyFile: c.TLS.KeyFile,
			ServerName: c.TLS.ServerName, InsecureSkipVerify: c.TLS.InsecureSkipVerify}.Build()
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
		opts = append(opts, nats.Secure(tc))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, fmt.Errorf("nats: connect: %w", err)
	}
	return nc, nil
}

// DefaultFetchBytes is Config.FetchBytes when unset.
const DefaultFetchBytes = 4 << 20

// Link liveness defaults (Conn.PingInterval, Conn.MaxPingsOut): a link
// that stops answering (packets dropped, no reset) is declared stale after
// about PingInterval x (MaxPingsOut + 1), then reconnected; nats.go's own
// defaults (2 minutes, 2) take minutes.
const (
	DefaultPingInterval = 2 * time.Second
	DefaultMaxPingsOut  = 2
)

// DeliverPolicy says where a newly created consumer starts.
type DeliverPolicy string

const (
	DeliverAll DeliverPolicy = "all" // the default
	DeliverNew DeliverPolicy = "new"
)

// Config configures a Source. Stream and Consumer are required; with
// Create, the durable consumer is created (or updated) with the settings
// below, else the Source binds to an existing one and takes its AckWait.
type Config struct {
	Conn
	// NC, if set, is used instead of dialling Conn; the Source then does
	// not close it.
	NC *nats.Conn

	Stream   string
	Consumer string // durable name
	// FilterSubject restricts the consumer to matching subjects (all if empty).
	FilterSubject string
	Create        bool

	// For a created consumer:
	AckWait time.Duration // default 30s
	// MaxAckPending: 0 derives it from the engine's bound (HoldBound:
	// what the engine holds + 1.5 x Batch fetched ahead), or 1000 when the
	// source runs without an engine that passes one.
	MaxAckPending int
	MaxDeliver    int // default unlimited
	DeliverPolicy DeliverPolicy

	// Batch is the most messages asked per pull (default 32). The next pull
	// starts once at most Batch/2 fetched messages wait for the engine, so
	// at most 1.5 x Batch wait in pacer's hands unseen by the engine, never
	// the library's 500-message default.
	Batch int
	// FetchWait is the expiry of one pull request (default 5s). A pull
	// asks the server for idle heartbeats every FetchWait/5; two missed
	// make the source check its consumer (see rebind.go).
	FetchWait time.Duration
	// FetchBytes is the most payload bytes asked per pull (default
	// DefaultFetchBytes): what waits unseen by the engine stays within
	// 1.5 x FetchBytes, or FetchBytes/2 plus one larger message (see pull).
	FetchBytes int
	// KeyHeader names the header whose value becomes Message.Key
	// ("Pacer-Key" if empty).
	KeyHeader string
	// SubjectToken, when > 0, pulls each value of this subject token
	// (1-based; FilterSubject must have '*' there, e.g. jobs.*.> with 2)
	// through its own durable consumer Consumer_<value>, so a hot tenant
	// at its fairness share waits alone (see subjects.go). Needs Create.
	SubjectToken int
	// DiscoverInterval is how often new tenants are looked for in the
	// stream (default 2s); ConsumerInactive is when the server removes a
	// tenant's unused consumer (default 1h).
	DiscoverInterval time.Duration
	ConsumerInactive time.Duration
	// ReturnDelay is the NakWithDelay used for messages fetched but never
	// handed over because the Source stopped (default 100ms).
	ReturnDelay time.Duration

	Logger *slog.Logger
}

// Validate reports the first invalid field.
func (c *Config) Validate() error {
	if c.Stream == "" {
		return fmt.Errorf("%w: stream is empty", ErrInvalidConfig)
	}
	if c.Consumer == "" {
		return fmt.Errorf("%w: consumer (durable name) is empty", ErrInvalidConfig)
	}
	switch c.DeliverPolicy {
	case "", DeliverAll, DeliverNew:
	default:
		return fmt.Errorf("%w: deliver_policy %q (want all or new)", ErrInvalidConfig, c.DeliverPolicy)
	}
	if c.Batch < 0 || c.MaxAckPending < 0 || c.AckWait < 0 || c.FetchWait < 0 || c.FetchBytes < 0 {
		return fmt.Errorf("%w: negative value", ErrInvalidConfig)
	}
	if c.MaxAckPending > 0 && c.Batch > c.MaxAckPending {
		return fmt.Errorf("%w: batch %d exceeds max_ack_pending %d", ErrInvalidConfig, c.Batch, c.MaxAckPending)
	}
	if err := c.validateSubjectToken(); err != nil {
		return err
	}
	if c.NC == nil {
		return c.Conn.validate()
	}
	return nil
}

func (c *Config) withDefaults() Config {
	cc := *c
	if cc.AckWait == 0 {
		cc.AckWait = 30 * time.Second
	}
	if cc.MaxDeliver == 0 {
		cc.MaxDeliver = -1
	}
	if cc.DeliverPolicy == "" {
		cc.DeliverPolicy = DeliverAll
	}
	if cc.Batch == 0 {
		cc.Batch = 32
	}
	if cc.FetchWait == 0 {
		cc.FetchWait = 5 * time.Second
	}
	if cc.FetchBytes == 0 {
		cc.FetchBytes = DefaultFetchBytes
	}
	if cc.KeyHeader == "" {
		cc.KeyHeader = "Pacer-Key"
	}
	if cc.DiscoverInterval == 0 {
		cc.DiscoverInterval = 2 * time.Second
	}
	if cc.ConsumerInactive == 0 {
		cc.ConsumerInactive = time.Hour
	}
	if cc.ReturnDelay == 0 {
		cc.ReturnDelay = 100 * time.Millisecond
	}
	if cc.Logger == nil {
		cc.Logger = slog.New(slog.DiscardHandler)
	}
	return cc
}
