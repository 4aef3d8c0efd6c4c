package testenv

import (
	"context"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
)

// Postgres returns a PostgreSQL DSN for t: PACER_TEST_POSTGRES_DSN when set
// (the server must answer, or the test fails), else a testcontainers
// postgres:16-alpine container when Docker answers (removed by t.Cleanup),
// else it skips t, saying why. There is no in-process PostgreSQL.
//
// The database may be shared by other tests and other runs: a test must
// create its own uniquely named tables and drop them in t.Cleanup, never
// touch anything else.
func Postgres(t testing.TB) (dsn string) {
	t.Helper()
	if dsn := os.Getenv("PACER_TEST_POSTGRES_DSN"); dsn != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatalf("testenv: PACER_TEST_POSTGRES_DSN=%s does not answer: %v", redactDSN(dsn), err)
		}
		_ = conn.Close(ctx)
		logf(t, "postgres from PACER_TEST_POSTGRES_DSN=%s", redactDSN(dsn))
		return dsn
	}
	ok, why := Docker()
	if !ok {
		t.Skipf("testenv: no PostgreSQL: PACER_TEST_POSTGRES_DSN is unset and %s "+
			"(set PACER_TEST_POSTGRES_DSN=postgres://user@host:5432/db?sslmode=disable to run this test)", why)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := testcontainers.Run(ctx, "postgres:16-alpine",
		testcontainers.WithExposedPorts("5432/tcp"),
		testcontainers.WithEnv(map[string]string{
			"POSTGRES_USER": "postgres", "POSTGRES_PASSWORD": "pacer", "POSTGRES_DB": "test",
		}),
		testcontainers.WithWaitStrategy(
			// The server restarts once after initdb: wait for the second start.
			wait.ForLog("database system is ready to accept connections").WithOccurrence(2),
			wait.ForListeningPort("5432/tcp")))
	testcontainers.CleanupContainer(t, c)
	if err != nil {
		t.Fatalf("testenv: postgres container: %v", err)
	}
	ep, err := c.PortEndpoint(ctx, "5432/tcp", "")
	if err != nil {
		t.Fatalf("testenv: postgres container endpoint: %v", err)
	}
	dsn = "postgres://postgres:pacer@" + ep + "/test?sslmode=disable"
	logf(t, "postgres from a testcontainers postgres:16-alpine at %s", ep)
	return dsn
}

// redactDSN hides a password in a postgres:// URL for logs.
func redactDSN(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.User == nil {
		return dsn // not a URL, or nothing to hide: as given
	}
	return u.Redacted()
}
