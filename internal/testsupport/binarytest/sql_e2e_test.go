package binarytest

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/pacer-dev/pacer/internal/testsupport/binharness"
	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
)

func sqlConfig(url, stream, driver, dsn, table, admin string) string {
	return fmt.Sprintf(`source:
  type: nats
  nats:
    url: %s
    stream: %s
shaping:
  rate: 500/s
  burst: 50
sink:
  type: sql
  sql:
    driver: %s
    dsn: %q
    table: %s
    create_table: true
batching:
  size: 10
  linger: 20ms
admin:
  listen: %s
drain_timeout: 5s
`, url, stream, driver, dsn, table, admin)
}

// runToSQL runs NATS -> pacer -> SQL and checks every message became one row.
func runToSQL(t *testing.T, driver, sqlDriver, dsn, table string) {
	const n = 120
	url, stream, _ := setupNATS(t, n)
	addr := binharness.FreeAddr(t)
	cfg := binharness.WriteFile(t, "sql.yaml", sqlConfig(url, stream, driver, dsn, table, addr))
	p := binharness.Start(t, nil, "run", "-c", cfg)
	binharness.Eventually(t, 60*time.Second, "all messages acked", func() bool {
		st, err := binharness.Status(addr)
		return err == nil && binharness.Num(st, "engine", "acked") == n
	})
	if code := p.Stop(t, 30*time.Second); code != 0 {
		t.Errorf("exit after SIGTERM = %d want 0", code)
	}
	db, err := sql.Open(sqlDriver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var rows, distinct int
	quote := `"`
	if sqlDriver == "mysql" {
		quote = "`"
	}
	if err := db.QueryRowContext(context.Background(), `SELECT count(*), count(DISTINCT message_id) FROM `+quote+table+quote).Scan(&rows, &distinct); err != nil {
		t.Fatal(err)
	}
	if rows != n || distinct != n {
		t.Errorf("%s: %d rows (%d distinct) want %d", table, rows, distinct, n)
	}
}

// TestRunNATSToSQLite is the NATS -> SQL scenario on the embedded SQL
// fallback (SQLite, see internal/testsupport/testenv), so it runs everywhere.
func TestRunNATSToSQLite(t *testing.T) {
	dsn := filepath.Join(t.TempDir(), "pacer.db")
	runToSQL(t, "sqlite", "sqlite", dsn, "pacer_e2e")
}

// TestRunNATSToPostgres: the same against PostgreSQL (env or container;
// skipped, saying why, when there is none).
func TestRunNATSToPostgres(t *testing.T) {
	dsn := testenv.Postgres(t)
	table := testenv.UniqueName(t, "pacer_e2e")
	t.Cleanup(func() {
		db, err := sql.Open("pgx", dsn)
		if err == nil {
			_, _ = db.Exec(`DROP TABLE IF EXISTS "` + table + `"`)
			db.Close()
		}
	})
	runToSQL(t, "postgres", "pgx", dsn, table)
}

// TestRunNATSToMySQL: the same against MySQL/MariaDB (PACER_TEST_MYSQL_DSN
// or a container; skipped, saying why, when there is none).
func TestRunNATSToMySQL(t *testing.T) {
	dsn := testenv.MySQL(t)
	table := testenv.UniqueName(t, "pacer_e2e")
	t.Cleanup(func() {
		db, err := sql.Open("mysql", dsn)
		if err == nil {
			_, _ = db.Exec("DROP TABLE IF EXISTS `" + table + "`")
			db.Close()
		}
	})
	runToSQL(t, "mysql", "mysql", dsn, table)
}
