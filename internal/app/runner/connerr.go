package runner

import (
	"errors"
	"fmt"
	"strings"
	"syscall"

	"github.com/pacer-dev/pacer/internal/app/config"
	"github.com/pacer-dev/pacer/internal/base/redact"
)

// connectError is a failure to reach something the configuration points
// at. Its text names the part of the pipeline, the address (credentials
// and query values masked by internal/base/redact) and the config field that
// holds it, then the cause:
//
//	dead_letter: connect nats://127.0.0.1:4999 (source.nats.url): nats: no servers available
//
// It unwraps to the cause, so errors.Is/As (and unreachable, which decides
// whether start-up retries) see through it.
type connectError struct {
	part  string // "source", "dead_letter", "sink", "shaping.global", "source.backlog"
	addr  string // redacted
	field string // the config field holding addr
	err   error
}

func (e *connectError) Error() string {
	return fmt.Sprintf("%s: connect %s (%s): %s", e.part, e.addr, e.field, causeText(e.err))
}

func (e *connectError) Unwrap() error { return e.err }

// connectErr wraps err (nil stays nil) as part's failure to connect to
// addr, configured in field. addr is redacted here.
func connectErr(part, field, addr string, err error) error {
	if err == nil {
		return nil
	}
	var ce *connectError
	if errors.As(err, &ce) {
		return err
	}
	return &connectError{part: part, addr: redact.Text(addr), field: field, err: err}
}

// adapterOps are the adapters' own prefixes for the operation a
// connectError already names ("connect"): left out of its text.
var adapterOps = []string{"nats: connect: ", "kafka: dead-letter producer: "}

// causeText is err's text without an adapter's "connect" prefix.
func causeText(err error) string {
	s := err.Error()
	for _, p := range adapterOps {
		s = strings.TrimPrefix(s, p)
	}
	return s
}

// inPart prefixes err with part, unless it is a connectError, which names
// its part already.
func inPart(part string, err error) error {
	var ce *connectError
	if err == nil || errors.As(err, &ce) {
		return err
	}
	return fmt.Errorf("%s: %w", part, err)
}

// kafkaAddr is source.kafka.brokers as one address list.
func kafkaAddr(k config.Kafka) string { return strings.Join(k.Brokers, ",") }

// adminListenErr names admin.listen in a failure to listen (net's error
// names the address: "listen tcp 127.0.0.1:8484: bind: address already in
// use").
func adminListenErr(err error) error {
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("admin.listen: %w (another process holds the address: set admin.listen to a free one, or \"\" for none)", err)
	}
	return fmt.Errorf("admin.listen: %w", err)
}

// partAddrs maps the parts the engine's readiness names ("source: ...",
// "sink: ...", "dead letter: ...") to the config field and address each
// one connects to ("" when it connects to nothing: stdout, a file).
func partAddrs(cfg *config.Config) map[string][2]string {
	m := map[string][2]string{}
	var src [2]string
	switch cfg.Source.Type {
	case "kafka":
		src = [2]string{"source.kafka.brokers", kafkaAddr(cfg.Source.Kafka)}
	case "nats":
		src = [2]string{"source.nats.url", cfg.Source.NATS.URL}
	}
	m["source"] = src
	switch cfg.Sink.Type {
	case "http":
		m["sink"] = [2]string{"sink.http.url", cfg.Sink.HTTP.URL}
	case "sql":
		if cfg.Sink.SQL.Driver != "sqlite" { // a file, not a server
			m["sink"] = [2]string{"sink.sql.dsn", cfg.Sink.SQL.DSN.Reveal()}
		}
	}
	switch cfg.DeadLetter.Type {
	case "subject", "topic":
		m["dead letter"] = src
	}
	return m
}

// withAddresses adds to each part the engine's readiness error names the
// config field and the redacted address it connects to:
//
//	source: nats: connection RECONNECTING (source.nats.url nats://***@10.0.0.5:4222)
//
// Parts that connect to nothing, and other errors, are left as they are.
func withAddresses(cfg *config.Config, err error) error {
	if err == nil || cfg == nil {
		return err
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	addrs := partAddrs(cfg)
	out := make([]error, len(errs))
	for i, e := range errs {
		out[i] = e
		part, _, ok := strings.Cut(e.Error(), ": ")
		if fa, known := addrs[part]; ok && known && fa[1] != "" {
			out[i] = fmt.Errorf("%w (%s %s)", e, fa[0], redact.Text(fa[1]))
		}
	}
	return errors.Join(out...)
}
