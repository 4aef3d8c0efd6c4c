package config

import (
	"errors"
	"strings"
	"testing"
)

// TestSQLDrivers: mysql is a driver; a DSN whose URL scheme names another
// driver than sink.sql.driver (postgres by default) is a problem on the
// driver, and the summary names the driver it will use.
func TestSQLDrivers(t *testing.T) {
	sink := func(driver, dsn string) string {
		s := "sink:\n  type: sql\n  sql:\n    dsn: " + dsn + "\n    table: events\n"
		if driver != "" {
			s += "    driver: " + driver + "\n"
		}
		return minimalWith(s)
	}
	for _, tc := range []struct{ driver, dsn string }{
		{"mysql", "mysql://app:pw@db:3306/orders"},
		{"mysql", "mariadb://app:pw@db:3306/orders"},
		{"mysql", "app:pw@tcp(db:3306)/orders"},
		{"", "postgres://app:pw@db/orders"},
		{"sqlite", "file:pacer.db"},
	} {
		c := mustParse(t, sink(tc.driver, tc.dsn), nil)
		want := tc.driver
		if want == "" {
			want = "postgres"
		}
		if sum := c.Summary(); !strings.Contains(sum, `insert each message into `+want+` table "events"`) {
			t.Errorf("driver %q dsn %q: summary lacks the driver:\n%s", tc.driver, tc.dsn, sum)
		}
		if strings.Contains(c.Summary(), "pw") {
			t.Errorf("summary shows the password: %s", c.Summary())
		}
	}
	for _, tc := range []struct{ driver, dsn, msg string }{
		{"", "mysql://app:pw@db:3306/orders", `is "postgres" but the dsn is a mysql:// URL: set driver: mysql`},
		{"sqlite", "mariadb://app:pw@db:3306/orders", "set driver: mysql"},
		{"mysql", "postgresql://app:pw@db/orders", "set driver: postgres"},
		{"oracle", "app:pw@tcp(db:3306)/orders", "not one of"},
	} {
		_, err := Parse([]byte(sink(tc.driver, tc.dsn)), nil)
		var ps Problems
		if !errors.As(err, &ps) {
			t.Errorf("driver %q dsn %q: Parse = %v want problems", tc.driver, tc.dsn, err)
			continue
		}
		found := false
		for _, p := range ps {
			if p.Path == "sink.sql.driver" && strings.Contains(p.Msg, tc.msg) {
				found = true
			}
			if strings.Contains(p.Msg, "pw@") {
				t.Errorf("problem shows the password: %v", p)
			}
		}
		if !found {
			t.Errorf("driver %q dsn %q: want a sink.sql.driver problem containing %q, got %v", tc.driver, tc.dsn, tc.msg, ps)
		}
	}
}
