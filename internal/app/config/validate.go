package config

import (
	"cmp"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/pacer-dev/pacer/internal/base/redact"
)

// Validate returns every problem with c at once, each with its field path
// and, when c came from a file, its line. A nil result means c is usable.
func (c *Config) Validate() Problems {
	v := validator{c: c}
	v.source()
	v.shaping()
	v.fairness()
	v.schedule()
	v.sink()
	v.deadLetter()
	v.misc()
	v.telemetry()
	v.routes()
	v.probs.sort()
	return v.probs
}

type validator struct {
	c     *Config
	probs Problems
}

func (v *validator) add(path, format string, args ...any) {
	pos := v.c.Where(path)
	v.probs = append(v.probs, Problem{Path: path, Line: pos.Line, Column: pos.Column, Msg: fmt.Sprintf(format, args...)})
}

// countOrNone checks a limit that is a count >= 1 or none (off, which
// means what none says). The decoder reads a written 0 as none; a 0 here
// came from code, not from a file.
func (v *validator) countOrNone(path string, got CountOrNone, none string) {
	if got != None && got < 1 {
		v.add(path, "must be >= 1 or none (%s), got %d", none, int(got))
	}
}

func (v *validator) oneOf(path, got string, allowed ...string) bool {
	for _, a := range allowed {
		if got == a {
			return true
		}
	}
	if got == "" {
		v.add(path, "missing: want one of %s", strings.Join(allowed, ", "))
	} else {
		v.add(path, "%q is not one of %s", got, strings.Join(allowed, ", "))
	}
	return false
}

// notUsed flags a settings block that the chosen type ignores.
func (v *validator) notUsed(path, typ, by string) {
	if v.c.Has(path) {
		v.add(path, "set, but %s is %q, so it would be ignored", by, typ)
	}
}

func (v *validator) positive(path string, n int) {
	if n <= 0 {
		v.add(path, "must be > 0, got %d", n)
	}
}

func (v *validator) tls(path string, t TLS) {
	if (t.CertFile == "") != (t.KeyFile == "") {
		v.add(path+".cert_file", "cert_file and key_file go together")
	}
	if !t.Enabled && (t.CAFile != "" || t.CertFile != "" || t.ServerName != "" || t.InsecureSkipVerify) {
		v.add(path+".enabled", "TLS settings are given but tls.enabled is false")
	}
}

func (v *validator) source() {
	s := v.c.Source
	if bi := s.BacklogInterval.D(); bi < MinBacklogInterval || bi > MaxBacklogInterval {
		v.add("source.backlog_interval", "must be between 1s and 1h (how often the broker is asked for the backlog), got %v", bi)
	}
	if !v.oneOf("source.type", s.Type, "kafka", "nats") {
		return
	}
	switch s.Type {
	case "kafka":
		v.notUsed("source.nats", s.Type, "source.type")
		k := s.Kafka
		if len(k.Brokers) == 0 {
			v.add("source.kafka.brokers", "missing: list at least one broker (host:port)")
		}
		for i, b := range k.Brokers {
			if _, _, err := net.SplitHostPort(b); err != nil {
				v.add(fmt.Sprintf("source.kafka.brokers[%d]", i), "%q is not host:port", b)
			}
		}
		if len(k.Topics) == 0 {
			v.add("source.kafka.topics", "missing: list at least one topic")
		}
		if ci := k.CommitInterval.D(); ci < time.Millisecond || ci > time.Minute {
			v.add("source.kafka.commit_interval", "must be between 1ms and 1m, got %v", ci)
		}
		v.countOrNone("source.kafka.commit_after", k.CommitAfter, "commits wait commit_interval")
		if fw := k.FetchMaxWait.D(); fw < time.Millisecond || fw > 10*time.Second {
			v.add("source.kafka.fetch_max_wait", "must be between 1ms and 10s (offset commits wait behind a held fetch), got %v", fw)
		}
		if k.Group == "" {
			v.add("source.kafka.group", "missing: the consumer group is required")
		}
		v.oneOf("source.kafka.initial_offset", k.InitialOffset, "oldest", "newest")
		if id := k.InstanceID; id != "" && (id == "." || id == ".." || len(id) > 249 || strings.Trim(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != "") {
			v.add("source.kafka.instance_id", "%q is not a group instance ID: up to 249 of a-z A-Z 0-9 . _ -", id)
		}
		if !validVersion(k.Version) {
			v.add("source.kafka.version", "%q is not a Kafka version such as 3.6.0", k.Version)
		}
		v.tls("source.kafka.tls", k.TLS)
		switch k.SASL.Mechanism {
		case "":
			if k.SASL.Username != "" || !k.SASL.Password.IsZero() {
				v.add("source.kafka.sasl.mechanism", "missing: username/password given without a mechanism (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)")
			}
		case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
			if k.SASL.Username == "" {
				v.add("source.kafka.sasl.username", "missing: required with mechanism %s", k.SASL.Mechanism)
			}
			if k.SASL.Password.IsZero() {
				v.add("source.kafka.sasl.password", "missing: required with mechanism %s", k.SASL.Mechanism)
			}
		default:
			v.oneOf("source.kafka.sasl.mechanism", k.SASL.Mechanism, "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
		}
	case "nats":
		v.notUsed("source.kafka", s.Type, "source.type")
		n := s.NATS
		if n.URL == "" {
			v.add("source.nats.url", "missing: the server URL (nats://host:4222)")
		} else {
			for _, u := range strings.Split(n.URL, ",") {
				pu, err := url.Parse(strings.TrimSpace(u))
				if err != nil || pu.Host == "" {
					v.add("source.nats.url", "%q is not a URL such as nats://127.0.0.1:4222", redact.Text(u))
				}
			}
		}
		if n.Stream == "" {
			v.add("source.nats.stream", "missing: the JetStream stream to consume")
		}
		if n.Consumer == "" {
			v.add("source.nats.consumer", "missing: the durable consumer name")
		}
		v.positive("source.nats.fetch_batch", n.FetchBatch)
		v.oneOf("source.nats.deliver_policy", n.DeliverPolicy, "all", "new")
		v.countOrNone("source.nats.max_deliver", n.MaxDeliver, "unlimited")
		if n.AckWait.D() < time.Second {
			v.add("source.nats.ack_wait", "must be at least 1s, got %v", n.AckWait)
		}
		v.tls("source.nats.tls", n.TLS)
		a := n.Auth
		methods := 0
		if !a.Token.IsZero() {
			methods++
		}
		if a.User != "" || !a.Password.IsZero() {
			methods++
			if a.User == "" || a.Password.IsZero() {
				v.add("source.nats.auth.user", "user and password go together")
			}
		}
		if a.CredsFile != "" {
			methods++
		}
		if a.NKeySeedFile != "" {
			methods++
		}
		if methods > 1 {
			v.add("source.nats.auth", "set only one of token, user/password, creds_file, nkey_seed_file")
		}
	}
}

func validVersion(s string) bool {
	parts := strings.Split(s, ".")
	if len(parts) < 2 || len(parts) > 4 {
		return false
	}
	for _, p := range parts {
		if p == "" {
			return false
		}
		for _, c := range p {
			if c < '0' || c > '9' {
				return false
			}
		}
	}
	return true
}

func (v *validator) shaping() {
	s := v.c.Shaping
	if s.Rate.IsZero() {
		v.add("shaping.rate", "missing: the sustained rate is required (e.g. 100/s, 6000/m, 1M/day)")
	}
	if s.Burst < 0 {
		v.add("shaping.burst", "must be >= 0 (0: one second's worth of rate), got %d", s.Burst)
	}
	if !s.Peak.IsZero() && !s.Rate.IsZero() && s.Peak.PerSecond() < s.Rate.PerSecond() {
		v.add("shaping.peak", "peak %s is below rate %s: the peak is a ceiling above the sustained rate", s.Peak, s.Rate)
	}
	v.positive("shaping.queue_size", s.QueueSize)
	v.positive("shaping.max_in_flight", s.MaxInFlight)
	if s.QueueBytes != 0 && s.QueueBytes < MinQueueBytes {
		v.add("shaping.queue_bytes", "%s is below %s: set at least one message's worth, or 0 for no byte bound", s.QueueBytes, MinQueueBytes)
	}
	if s.QueueSize > MaxQueueSize {
		v.add("shaping.queue_size", "%d is above the limit %d (the queue is held in memory; a larger backlog stays in the broker)", s.QueueSize, MaxQueueSize)
	}
	if s.MaxInFlight > MaxInFlightLimit {
		v.add("shaping.max_in_flight", "%d is above the limit %d (one worker each; more concurrency than any downstream takes)", s.MaxInFlight, MaxInFlightLimit)
	}
	pk := s.PerKey
	if !pk.Rate.IsZero() {
		if pk.Burst < 0 {
			v.add("shaping.per_key.burst", "must be >= 0, got %d", pk.Burst)
		}
		if pk.Key != "key" && !strings.HasPrefix(pk.Key, "header:") || pk.Key == "header:" {
			v.add("shaping.per_key.key", "%q: want \"key\" or \"header:NAME\"", pk.Key)
		}
		v.positive("shaping.per_key.max_keys", pk.MaxKeys)
		if !s.Rate.IsZero() && pk.Rate.PerSecond() > s.Rate.PerSecond() {
			v.add("shaping.per_key.rate", "per-key rate %s is above the overall rate %s, so it never binds", pk.Rate, s.Rate)
		}
	} else if v.c.Has("shaping.per_key") && (pk.Burst != 0 || v.c.Has("shaping.per_key.key")) {
		v.add("shaping.per_key.rate", "missing: per_key settings are given without a rate")
	}
	names := map[string]bool{}
	for i, q := range s.Quotas {
		p := fmt.Sprintf("shaping.quotas[%d]", i)
		if q.Limit.IsZero() {
			v.add(p+".limit", "missing: a window limit such as 10000/day")
		}
		if q.Window != "" {
			v.oneOf(p+".window", q.Window, "sliding", "fixed", "calendar")
		}
		if q.Name != "" {
			if names[q.Name] {
				v.add(p+".name", "duplicate quota name %q", q.Name)
			}
			names[q.Name] = true
		}
	}
	g := s.Global
	if !g.RedisURL.IsZero() {
		u, err := url.Parse(g.RedisURL.Reveal())
		if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" {
			v.add("shaping.global.redis_url", "not a redis://host:port/db URL") // never echo the value: it may hold a password
		}
		if g.Rate.IsZero() {
			v.add("shaping.global.rate", "missing: the shared rate is required with redis_url")
		}
		if g.Burst < 0 {
			v.add("shaping.global.burst", "must be >= 0, got %d", g.Burst)
		}
		if g.Lease <= 0 {
			v.add("shaping.global.lease", "must be > 0")
		}
		if g.Timeout <= 0 {
			v.add("shaping.global.timeout", "must be > 0")
		}
		v.positive("shaping.global.expected_workers", g.ExpectedWorkers)
		if strings.ContainsAny(g.Key, "{}") {
			v.add("shaping.global.key", "must not contain { or }")
		}
		if g.Key == "" {
			v.add("shaping.global.key", "missing: name the shared budget")
		}
		v.oneOf("shaping.global.on_failure", g.OnFailure, "open", "closed")
		if gk := g.PerKey; !gk.Rate.IsZero() {
			if gk.Burst < 0 {
				v.add("shaping.global.per_key.burst", "must be >= 0, got %d", gk.Burst)
			}
			if gk.Key != "key" && !strings.HasPrefix(gk.Key, "header:") || gk.Key == "header:" {
				v.add("shaping.global.per_key.key", "%q: want \"key\" or \"header:NAME\"", gk.Key)
			}
			v.positive("shaping.global.per_key.max_keys", gk.MaxKeys)
			if !s.PerKey.Rate.IsZero() && gk.Key != s.PerKey.Key {
				v.add("shaping.global.per_key.key", "%q differs from shaping.per_key.key %q: both stages key messages the same way", gk.Key, s.PerKey.Key)
			}
		} else if v.c.Has("shaping.global.per_key") && (gk.Burst != 0 || v.c.Has("shaping.global.per_key.key")) {
			v.add("shaping.global.per_key.rate", "missing: per_key settings are given without a rate")
		}
	} else if v.c.Has("shaping.global.rate") || v.c.Has("shaping.global.burst") || v.c.Has("shaping.global.per_key") || v.c.Has("shaping.global.learn_alone") {
		v.add("shaping.global.redis_url", "missing: a global limit needs redis_url")
	}
	a := s.Adaptive
	if v.oneOf("shaping.adaptive.mode", a.Mode, "auto", "off", "aimd", "pid") && a.Mode != "off" {
		if !a.Min.IsZero() && !s.Rate.IsZero() && a.Min.PerSecond() > s.Rate.PerSecond() {
			v.add("shaping.adaptive.min", "min %s is above shaping.rate %s (the rate is the ceiling adaptive control moves under)", a.Min, s.Rate)
		}
		if a.Decrease <= 0 || a.Decrease >= 1 {
			v.add("shaping.adaptive.decrease", "must be between 0 and 1 (exclusive), got %g", a.Decrease)
		}
		if a.Interval <= 0 {
			v.add("shaping.adaptive.interval", "must be > 0")
		}
	}
}

func (v *validator) sink() {
	s := v.c.Sink
	if !v.oneOf("sink.type", s.Type, "http", "sql", "stdout") {
		return
	}
	if s.Type != "http" {
		v.notUsed("sink.http", s.Type, "sink.type")
	}
	if s.Type != "sql" {
		v.notUsed("sink.sql", s.Type, "sink.type")
	}
	if s.Type != "stdout" {
		v.notUsed("sink.stdout", s.Type, "sink.type")
	}
	switch s.Type {
	case "http":
		h := s.HTTP
		// With routes, the URL is checked as a destination named "example"
		// would see it.
		checked := strings.ReplaceAll(h.URL, DestinationPlaceholder, "example")
		switch {
		case h.URL == "":
			v.add("sink.http.url", "missing: the URL to send messages to")
		case checked != h.URL && !v.c.Routes.Enabled():
			v.add("sink.http.url", "holds %s, but routes.by is not set: nothing names the destination", DestinationPlaceholder)
		default:
			if u, err := url.Parse(checked); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				v.add("sink.http.url", "%q is not an http:// or https:// URL", redact.Text(h.URL))
			}
		}
		v.oneOf("sink.http.method", h.Method, "POST", "PUT", "PATCH")
		if h.Timeout <= 0 {
			v.add("sink.http.timeout", "must be > 0")
		}
		v.tls("sink.http.tls", h.TLS)
	case "sql":
		q := s.SQL
		v.oneOf("sink.sql.driver", q.Driver, "postgres", "mysql", "sqlite")
		if q.DSN.IsZero() {
			v.add("sink.sql.dsn", "missing: the database to connect to")
		} else if scheme := dsnScheme(q.DSN.Reveal()); scheme != "" && scheme != q.Driver {
			v.add("sink.sql.driver", "is %q but the dsn is a %s:// URL: set driver: %s", q.Driver, scheme, scheme)
		}
		if q.Table == "" && q.Statement == "" {
			v.add("sink.sql.table", "missing: give table or statement")
		}
		if v.c.Has("sink.sql.table") && q.Statement != "" {
			v.add("sink.sql.statement", "give table or statement, not both")
		}
		if q.CreateTable && q.Statement != "" {
			v.add("sink.sql.create_table", "creates the example table, which a custom statement does not use")
		}
		if q.MaxConns < 0 {
			v.add("sink.sql.max_conns", "must be >= 0")
		}
	case "stdout":
		v.oneOf("sink.stdout.format", s.Stdout.Format, "json")
	}
}

func (v *validator) deadLetter() {
	d := v.c.DeadLetter
	if !v.oneOf("dead_letter.type", d.Type, "none", "topic", "subject", "file") {
		return
	}
	switch d.Type {
	case "topic":
		if v.c.Source.Type != "kafka" {
			v.add("dead_letter.type", "topic dead letters need a kafka source (source.type is %q); use subject or file", v.c.Source.Type)
		}
		if d.Topic == "" {
			v.add("dead_letter.topic", "missing: required with type topic")
		}
		for _, t := range v.c.Source.Kafka.Topics {
			if t == d.Topic && v.c.Source.Type == "kafka" {
				v.add("dead_letter.topic", "%q is also a source topic: pacer would consume its own dead letters", d.Topic)
			}
		}
	case "subject":
		if v.c.Source.Type != "nats" {
			v.add("dead_letter.type", "subject dead letters need a nats source (source.type is %q); use topic or file", v.c.Source.Type)
		}
		if d.Subject == "" {
			v.add("dead_letter.subject", "missing: required with type subject")
		}
		if n := v.c.Source.NATS; v.c.Source.Type == "nats" && d.Subject != "" && (n.FilterSubject == "" || subjectMatches(n.FilterSubject, d.Subject)) {
			v.add("dead_letter.subject", "%q is within source.nats.filter_subject %q: pacer would consume its own dead letters (if the stream captures it)", d.Subject, cmp.Or(n.FilterSubject, "(the whole stream)"))
		}
	case "file":
		if d.Path == "" {
			v.add("dead_letter.path", "missing: required with type file")
		}
	}
}

func (v *validator) misc() {
	c := v.c
	r := c.Retry
	v.countOrNone("retry.max_attempts", r.MaxAttempts, "retry forever")
	if r.MaxTime != None && r.MaxTime <= 0 {
		v.add("retry.max_time", "must be > 0 or none (no limit), got %v", r.MaxTime)
	}
	if r.InitialBackoff <= 0 {
		v.add("retry.initial_backoff", "must be > 0")
	}
	if r.MaxBackoff < r.InitialBackoff {
		v.add("retry.max_backoff", "max_backoff %v is below initial_backoff %v", r.MaxBackoff, r.InitialBackoff)
	}
	if r.MaxPause < 0 {
		v.add("retry.max_pause", "must be >= 0, got %v", r.MaxPause)
	}
	v.oneOf("ordering", c.Ordering, "none", "key")
	v.positive("batching.size", c.Batching.Size)
	if c.Batching.Size > c.Shaping.QueueSize && c.Shaping.QueueSize > 0 {
		v.add("batching.size", "batch size %d is larger than shaping.queue_size %d", c.Batching.Size, c.Shaping.QueueSize)
	}
	if c.Batching.Size > c.Shaping.EffectiveBurst() && !c.Shaping.Rate.IsZero() {
		v.add("batching.size", "batch size %d is above shaping.burst %d: a batch could never be admitted", c.Batching.Size, c.Shaping.EffectiveBurst())
	}
	if c.Batching.Size == 1 && c.Batching.Linger > 0 {
		v.add("batching.linger", "linger is set but batching.size is 1")
	}
	if c.Admin.Listen != "" {
		host, port, err := net.SplitHostPort(c.Admin.Listen)
		if err != nil || port == "" {
			v.add("admin.listen", "%q is not host:port", c.Admin.Listen)
		} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
			v.add("admin.listen", "port %q: want a number from 1 to 65535 (0: any free port)", port)
		} else if !c.Admin.AllowRemote && !isLoopback(host) {
			v.add("admin.listen", "%q is not a loopback address; set admin.allow_remote: true to expose the admin listener", c.Admin.Listen)
		}
	}
	if c.Admin.TokenEnv != "" && !validEnvName(c.Admin.TokenEnv) {
		v.add("admin.token_env", "%q is not an environment variable name", c.Admin.TokenEnv)
	}
	v.oneOf("log.level", c.Log.Level, "debug", "info", "warn", "error")
	v.oneOf("log.format", c.Log.Format, "text", "json")
	if c.DrainTimeout <= 0 {
		v.add("drain_timeout", "must be > 0")
	}
	if c.Shaping.StateInterval < 0 {
		v.add("shaping.state_interval", "must be >= 0")
	}
	if k := c.Shaping.StateKey; k != "" {
		switch {
		case c.Shaping.StateDir != "":
			v.add("shaping.state_key", "state_dir and state_key are exclusive: the state goes to a file or to Redis")
		case c.Shaping.Global.RedisURL.IsZero():
			v.add("shaping.state_key", "needs shaping.global.redis_url: the state is kept in that Redis")
		case strings.ContainsAny(k, "{}"):
			v.add("shaping.state_key", "%q must not contain '{' or '}'", k)
		}
	}
	v.breaker()
}

// Limits on what the engine may hold in memory: the queue grows with what
// it holds (up to queue_size) and each busy in-flight slot is a goroutine.
const (
	MaxQueueSize     = 1_000_000
	MaxInFlightLimit = 10_000
	// MinQueueBytes is the smallest byte bound (0 turns it off).
	MinQueueBytes ByteSize = 1 << 10
)

func (v *validator) breaker() {
	b := v.c.Breaker
	if !b.Enabled {
		return
	}
	if b.Consecutive < 1 {
		v.add("breaker.consecutive", "must be >= 1, got %d", b.Consecutive)
	}
	if b.Window < 1 {
		v.add("breaker.window", "must be >= 1, got %d", b.Window)
	}
	if !(b.Ratio > 0 && b.Ratio <= 1) {
		v.add("breaker.ratio", "must be in (0, 1], got %g", b.Ratio)
	}
	if b.ProbeInitial <= 0 {
		v.add("breaker.probe_initial", "must be > 0")
	}
	if b.ProbeMax < b.ProbeInitial {
		v.add("breaker.probe_max", "probe_max %v is below probe_initial %v", b.ProbeMax, b.ProbeInitial)
	}
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// subjectMatches reports whether NATS subject s matches filter f ("*" one
// token, ">" the rest).
func subjectMatches(f, s string) bool {
	ft, st := strings.Split(f, "."), strings.Split(s, ".")
	for i, t := range ft {
		if t == ">" {
			return len(st) > i
		}
		if i >= len(st) || (t != "*" && t != st[i]) {
			return false
		}
	}
	return len(ft) == len(st)
}

// dsnScheme names the driver a DSN's URL scheme belongs to (postgres for
// postgres:// and postgresql://, mysql for mysql:// and mariadb://), or ""
// when the DSN is not such a URL (a file, a key=value or native DSN).
func dsnScheme(dsn string) string {
	scheme, _, ok := strings.Cut(dsn, "://")
	if !ok {
		return ""
	}
	switch strings.ToLower(scheme) {
	case "postgres", "postgresql":
		return "postgres"
	case "mysql", "mariadb":
		return "mysql"
	}
	return ""
}
