// Package testenv owns how tests get a real broker or service (Kafka, NATS
// JetStream, PostgreSQL, MySQL/MariaDB, Redis) and a free port. It tries,
// in order:
//
//  1. an address from the environment (PACER_TEST_KAFKA_BROKERS,
//     PACER_TEST_NATS_URL, PACER_TEST_POSTGRES_DSN, PACER_TEST_MYSQL_DSN,
//     PACER_TEST_REDIS_URL);
//  2. a testcontainers-go container when a Docker engine answers;
//  3. an in-process real server (kfake for Kafka, nats-server for NATS,
//     miniredis for Redis); for PostgreSQL and MySQL there is none, and the
//     test skips, saying why.
//
// Every helper registers its cleanup with t.Cleanup and logs which of the
// three it used, so a reader of `go test -v` output knows what was tested.
package testenv

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/testcontainers/testcontainers-go"
)

var (
	dockerOnce sync.Once
	dockerOK   bool
	dockerWhy  string
)

// Docker reports whether a Docker engine answers, and if not, why. It is
// decided once per test binary and never takes more than a few seconds:
// without DOCKER_HOST or a socket file it answers at once.
func Docker() (ok bool, why string) {
	dockerOnce.Do(func() {
		if os.Getenv("PACER_TEST_NO_DOCKER") != "" {
			dockerWhy = "PACER_TEST_NO_DOCKER is set"
			return
		}
		if os.Getenv("DOCKER_HOST") == "" {
			if _, err := os.Stat("/var/run/docker.sock"); err != nil {
				dockerWhy = "no Docker engine: DOCKER_HOST is unset and /var/run/docker.sock does not exist"
				return
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		p, err := testcontainers.NewDockerProvider()
		if err != nil {
			dockerWhy = "no Docker engine: " + err.Error()
			return
		}
		defer p.Close()
		if err := p.Health(ctx); err != nil {
			dockerWhy = "no Docker engine: " + err.Error()
			return
		}
		dockerOK = true
	})
	return dockerOK, dockerWhy
}

// logf logs which backend a helper chose.
func logf(t testing.TB, format string, args ...any) {
	t.Helper()
	t.Logf("testenv: "+format, args...)
}
