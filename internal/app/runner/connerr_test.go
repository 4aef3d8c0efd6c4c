package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/app/config"
	"github.com/pacer-dev/pacer/internal/base/redact"
	"github.com/pacer-dev/pacer/pacer"
)

// newFrom parses text and builds a Runner from it.
func newFrom(t *testing.T, text string) (*Runner, error) {
	t.Helper()
	cfg, err := config.Parse([]byte(text), nil)
	if err != nil {
		t.Fatal(err)
	}
	return New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), io.Discard, os.LookupEnv)
}

// TestConnectErrorsNameFieldAndAddress: a dead letter (NATS subject or
// Kafka topic) or an SQL sink whose server does not answer fails the
// start with an error naming the part, the address with its credentials
// masked, and the config field; start-up still sees it as unreachable
// (and retries), and the adapters' "connect:" prefix is not repeated.
func TestConnectErrorsNameFieldAndAddress(t *testing.T) {
	dead := freeAddr(t) // nothing listens there
	const admin = "admin:\n  listen: \"\"\n"
	for _, tc := range []struct {
		name, config string
		want         []string
	}{
		{"nats subject dead letter", fmt.Sprintf("source:\n  type: nats\n  nats:\n    url: nats://pacer:s3cretpw@%s\n    stream: S\n    filter_subject: in.>\nshaping:\n  rate: 10/s\nsink:\n  type: stdout\ndead_letter:\n  type: subject\n  subject: dlq\n"+admin, dead),
			[]string{fmt.Sprintf("dead_letter: connect nats://***@%s (source.nats.url): nats: no servers available", dead)}},
		{"kafka topic dead letter", fmt.Sprintf("source:\n  type: kafka\n  kafka:\n    brokers: [%q]\n    group: g\n    topics: [t]\nshaping:\n  rate: 10/s\nsink:\n  type: stdout\ndead_letter:\n  type: topic\n  topic: dlq\n"+admin, dead),
			[]string{fmt.Sprintf("dead_letter: connect %s (source.kafka.brokers): kafka: client has run out of available brokers", dead)}},
		{"sql sink", fmt.Sprintf("source:\n  type: nats\n  nats:\n    url: nats://%s\n    stream: S\nshaping:\n  rate: 10/s\nsink:\n  type: sql\n  sql:\n    driver: postgres\n    dsn: postgres://pacer:s3cretpw@%s/db?sslmode=disable\n    table: t\n    create_table: true\ndead_letter:\n  type: none\n"+admin, dead, dead),
			[]string{fmt.Sprintf("sink: connect postgres://***@%s/db?sslmode=*** (sink.sql.dsn): ", dead)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := newFrom(t, tc.config)
			if err == nil {
				w.Close()
				t.Fatal("started against an address where nothing listens")
			}
			msg := err.Error() // as built, before the log's redactor
			for _, want := range tc.want {
				if !strings.Contains(msg, want) {
					t.Errorf("error\n  %s\nwant it to contain\n  %s", msg, want)
				}
			}
			if strings.Contains(msg, "s3cretpw") {
				t.Errorf("error shows the password: %s", err)
			}
			if strings.Contains(msg, "connect: nats") || strings.HasPrefix(msg, "source: dead_letter") {
				t.Errorf("error repeats its prefixes: %s", msg)
			}
			if !unreachable(err) {
				t.Errorf("unreachable(%q) = false: start-up would not retry", msg)
			}
		})
	}
}

// TestAdminPortClash: an admin listener whose address is taken fails with
// an error naming admin.listen and the address.
func TestAdminPortClash(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	w := &Runner{lookup: os.LookupEnv}
	stop, _, err := w.ServeAdminAt(ln.Addr().String(), "", slog.New(slog.DiscardHandler))
	if err == nil {
		stop()
		t.Fatal("listened on a taken address")
	}
	for _, want := range []string{"admin.listen: ", "listen tcp " + ln.Addr().String() + ": bind: address already in use", "set admin.listen"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

// TestBacklogConnectError: a backlog measurement that cannot reach the
// broker names the source's address and field in /status's last_error.
func TestBacklogConnectError(t *testing.T) {
	dead := freeAddr(t)
	cfg, err := config.Parse(fmt.Appendf(nil, "source:\n  type: nats\n  nats:\n    url: nats://pacer:s3cretpw@%s\n    stream: S\nshaping:\n  rate: 10/s\nsink:\n  type: stdout\ndead_letter:\n  type: none\nadmin:\n  listen: \"\"\n", dead), nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := newBacklogReader(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b := newBacklogWatch(cfg, r, func() pacer.Status { return pacer.Status{} })
	b.measure(context.Background())
	want := fmt.Sprintf("source.backlog: connect nats://***@%s (source.nats.url): ", dead)
	if got := b.view(time.Now()).LastError; !strings.Contains(got, want) || strings.Contains(got, "s3cretpw") {
		t.Errorf("last_error %q, want it to contain %q (and no password)", got, want)
	}
}

// TestRedactedErrorKeepsTheCause: a library error that echoes a secret (a DSN)
// loses the secret but not its cause, so a refused connection is still
// seen as unreachable and retried.
func TestRedactedErrorKeepsTheCause(t *testing.T) {
	dsn := config.NewSecret("postgres://app:s3cretpw@db:5432/app")
	err := redact.New(dsn.Reveal()).Wrap(fmt.Errorf("connect %s: %w", dsn.Reveal(), &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}))
	if strings.Contains(err.Error(), "s3cretpw") || strings.Contains(err.Error(), dsn.Reveal()) {
		t.Errorf("redacted error %q shows the secret", err)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) || !unreachable(err) {
		t.Errorf("redacted error %q lost its cause: errors.Is ECONNREFUSED %v, unreachable %v", err, errors.Is(err, syscall.ECONNREFUSED), unreachable(err))
	}
}
