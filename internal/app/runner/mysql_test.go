package runner

import (
	"strings"
	"testing"

	"github.com/pacer-dev/pacer/internal/app/config"
)

// TestCheckMySQLDSN: the MySQL sink is built offline as run builds it: a
// DSN the driver cannot read, or one whose sql_mode is not strict, is a
// problem on sink.sql.dsn that does not show the password; a good one is
// none.
func TestCheckMySQLDSN(t *testing.T) {
	cfgOf := func(dsn string) *config.Config {
		t.Helper()
		c, err := config.Parse([]byte("source:\n  type: nats\n  nats:\n    stream: S\nshaping:\n  rate: 10/s\nsink:\n  type: sql\n  sql:\n    driver: mysql\n    table: events\n    dsn: \""+dsn+"\"\n"), nil)
		if err != nil {
			t.Fatalf("Parse(%s): %v", dsn, err)
		}
		return c
	}
	for _, dsn := range []string{"mysql://app:s3cret@db:3306/orders", "app:s3cret@tcp(db:3306)/orders"} {
		if ps := Check(cfgOf(dsn)); len(ps) > 0 {
			t.Errorf("Check(%s) = %v, want no problem", dsn, ps)
		}
	}
	for _, dsn := range []string{"app:s3cret@tcp(db:3306", "app:s3cret@tcp(db:3306)/orders?sql_mode=%27ANSI%27"} {
		ps := Check(cfgOf(dsn))
		if len(ps) != 1 || ps[0].Path != "sink.sql.dsn" || ps[0].Line != 12 {
			t.Errorf("Check(%s) = %v, want one problem on sink.sql.dsn, line 12", dsn, ps)
			continue
		}
		if strings.Contains(ps[0].Msg, "s3cret") {
			t.Errorf("Check(%s): %q shows the password", dsn, ps[0].Msg)
		}
	}
}
