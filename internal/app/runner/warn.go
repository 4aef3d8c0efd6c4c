package runner

import (
	"context"
	"log/slog"
	"net/url"
	"strings"

	"github.com/pacer-dev/pacer/internal/app/config"
	"github.com/pacer-dev/pacer/pacer"
)

// warnInsecure logs a warning for every connection whose TLS verification
// the configuration turns off: verification is on by default everywhere,
// and turning it off must never go unnoticed.
func warnInsecure(cfg *config.Config, log *slog.Logger) {
	warn := func(field string) {
		log.Warn("TLS certificate verification is OFF: anyone on the network path can read and change this traffic; use only for testing", "field", field)
	}
	switch cfg.Source.Type {
	case "kafka":
		if cfg.Source.Kafka.TLS.InsecureSkipVerify {
			warn("source.kafka.tls.insecure_skip_verify")
		}
	case "nats":
		if cfg.Source.NATS.TLS.InsecureSkipVerify {
			warn("source.nats.tls.insecure_skip_verify")
		}
	}
	for _, w := range cfg.Warnings() {
		log.Warn("pacer: config: "+w.Msg, "field", w.Path, "line", w.Line)
	}
	if cfg.Sink.Type == "http" && cfg.Sink.HTTP.TLS.InsecureSkipVerify {
		warn("sink.http.tls.insecure_skip_verify")
	}
	if u := cfg.Shaping.Global.RedisURL; !u.IsZero() {
		// go-redis reads skip_verify=true from a rediss:// URL.
		if p, err := url.Parse(u.Reveal()); err == nil && strings.EqualFold(p.Query().Get("skip_verify"), "true") {
			warn("shaping.global.redis_url skip_verify")
		}
	}
}

// dropDeadLetter is the dead-letter destination of `dead_letter.type: none`:
// the user chose to lose rejected messages, so each one is logged (id,
// reason) and reported written, and the engine settles it.
type dropDeadLetter struct{ log *slog.Logger }

func (d dropDeadLetter) DeadLetter(_ context.Context, m *pacer.Message, reason error) error {
	d.log.Warn("dead_letter: none: dropping a rejected message", "id", m.ID, "topic", m.Topic, "attempts", m.Attempt, "reason", reason)
	return nil
}
