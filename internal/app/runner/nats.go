package runner

import (
	"fmt"
	"log/slog"

	"github.com/pacer-dev/pacer/internal/app/config"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/sources/natssource"
)

func natsConn(n config.NATS) natssource.Conn {
	return natssource.Conn{
		URL:          n.URL,
		URLField:     "source.nats.url",
		CredsFile:    n.Auth.CredsFile,
		NKeySeedFile: n.Auth.NKeySeedFile,
		User:         n.Auth.User,
		Password:     n.Auth.Password.Reveal(),
		Token:        n.Auth.Token.Reveal(),
		TLS: natssource.TLS{Enable: n.TLS.Enabled, CAFile: n.TLS.CAFile, CertFile: n.TLS.CertFile, KeyFile: n.TLS.KeyFile,
			ServerName: n.TLS.ServerName, InsecureSkipVerify: n.TLS.InsecureSkipVerify},
	}
}

// natsSourceConfig maps source.nats to the JetStream source's config.
func natsSourceConfig(cfg *config.Config, log *slog.Logger) natssource.Config {
	n := cfg.Source.NATS
	return natssource.Config{
		Conn:          natsConn(n),
		Stream:        n.Stream,
		Consumer:      n.Consumer,
		FilterSubject: n.FilterSubject,
		Create:        n.CreateConsumer,
		AckWait:       n.AckWait.D(),
		MaxDeliver:    count(n.MaxDeliver),
		DeliverPolicy: natssource.DeliverPolicy(n.DeliverPolicy),
		Batch:         n.FetchBatch,
		FetchBytes:    natsFetchBytes(cfg.Shaping.QueueBytes),
		SubjectToken:  n.TenantInSubject,
		Logger:        log,
	}
}

// natsFetchBytes is the source's FetchBytes for shaping.queue_bytes: half
// of it, so what is fetched ahead (at most 1.5 x FetchBytes, or half of it
// plus one larger message) adds at most 3/4 of queue_bytes to what the
// queue holds; the source's default without a byte bound.
func natsFetchBytes(queueBytes config.ByteSize) int {
	if queueBytes <= 0 {
		return 0
	}
	return int(max(queueBytes/2, 1))
}

// buildNATSSource builds the JetStream source (and a subject dead-letter
// publisher when configured).
func buildNATSSource(cfg *config.Config, log *slog.Logger, cl *closers) (pacer.Source, pacer.DeadLetterer, error) {
	n := cfg.Source.NATS
	src, err := natssource.New(natsSourceConfig(cfg, log))
	if err != nil {
		return nil, nil, err
	}
	cl.add(src.Close)
	var dl pacer.DeadLetterer
	if cfg.DeadLetter.Type == "subject" {
		d, err := natssource.NewDeadLetter(natssource.DeadLetterConfig{Conn: natsConn(n), Subject: cfg.DeadLetter.Subject, Logger: log})
		if err != nil {
			if unreachable(err) {
				return nil, nil, connectErr("dead_letter", "source.nats.url", n.URL, err)
			}
			return nil, nil, fmt.Errorf("dead_letter: %w", err)
		}
		cl.add(d.Close)
		dl = d
	}
	return src, dl, nil
}
