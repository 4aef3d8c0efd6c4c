package testenv

import (
	"context"
	"database/sql"
	"os"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
)

// MySQL returns a MySQL or MariaDB DSN for t, in go-sql-driver/mysql's
// form (user:pass@tcp(host:3306)/db): PACER_TEST_MYSQL_DSN when set (the
// server must answer, or the test fails), else a testcontainers
// mariadb:11 container when Docker answers (removed by t.Cleanup), else it
// skips t, saying why. There is no in-process MySQL.
//
// The database may be shared by other tests and other runs: a test must
// create its own uniquely named tables and drop them in t.Cleanup, never
// touch anything else.
func MySQL(t testing.TB) (dsn string) {
	t.Helper()
	if dsn := os.Getenv("PACER_TEST_MYSQL_DSN"); dsn != "" {
		if err := pingMySQL(dsn); err != nil {
			t.Fatalf("testenv: PACER_TEST_MYSQL_DSN=%s does not answer: %v", redactMySQL(dsn), err)
		}
		logf(t, "mysql from PACER_TEST_MYSQL_DSN=%s", redactMySQL(dsn))
		return dsn
	}
	ok, why := Docker()
	if !ok {
		t.Skipf("testenv: no MySQL/MariaDB: PACER_TEST_MYSQL_DSN is unset and %s, and there is no in-process MySQL "+
			"(set PACER_TEST_MYSQL_DSN='root@tcp(127.0.0.1:3306)/test' to run this test)", why)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := testcontainers.Run(ctx, "mariadb:11",
		testcontainers.WithExposedPorts("3306/tcp"),
		testcontainers.WithEnv(map[string]string{
			"MARIADB_ALLOW_EMPTY_ROOT_PASSWORD": "1", "MARIADB_DATABASE": "test",
		}),
		testcontainers.WithWaitStrategy(
			// The entrypoint starts a temporary server for initialisation
			// first: wait for the second start.
			wait.ForLog("ready for connections").WithOccurrence(2),
			wait.ForListeningPort("3306/tcp")))
	testcontainers.CleanupContainer(t, c)
	if err != nil {
		t.Fatalf("testenv: mariadb container: %v", err)
	}
	ep, err := c.PortEndpoint(ctx, "3306/tcp", "")
	if err != nil {
		t.Fatalf("testenv: mariadb container endpoint: %v", err)
	}
	dsn = "root@tcp(" + ep + ")/test"
	logf(t, "mysql from a testcontainers mariadb:11 at %s", ep)
	return dsn
}

func pingMySQL(dsn string) error {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return err
	}
	cfg.Timeout = 10 * time.Second
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		return err
	}
	db := sql.OpenDB(c)
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return db.PingContext(ctx)
}

// redactMySQL hides the password of a go-sql-driver DSN for logs.
func redactMySQL(dsn string) string {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil || cfg.Passwd == "" {
		return dsn // not a DSN the driver reads, or nothing to hide: as given
	}
	cfg.Passwd = "xxxxx"
	return cfg.FormatDSN()
}
