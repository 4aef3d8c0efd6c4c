package sqlsink

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/sinks/sinktest"
)

func TestParseMySQLDSN(t *testing.T) {
	tests := []struct {
		dsn                       string
		user, pass, net, addr, db string
	}{
		{"mysql://app:s3cret@db.internal:3306/orders", "app", "s3cret", "tcp", "db.internal:3306", "orders"},
		{"mysql://app:p%40ss%2Fw@tcp(db:3307)/orders?charset=utf8mb4", "app", "p@ss/w", "tcp", "db:3307", "orders"},
		{"mariadb://root@127.0.0.1:3306/test", "root", "", "tcp", "127.0.0.1:3306", "test"},
		{"app:p@ss@tcp(db:3306)/orders", "app", "p@ss", "tcp", "db:3306", "orders"},
		{"app@unix(/run/mysqld/mysqld.sock)/orders", "app", "", "unix", "/run/mysqld/mysqld.sock", "orders"},
	}
	for _, tt := range tests {
		cfg, err := parseMySQLDSN(tt.dsn)
		if err != nil {
			t.Errorf("parseMySQLDSN(%q): %v", tt.dsn, err)
			continue
		}
		if cfg.User != tt.user || cfg.Passwd != tt.pass || cfg.Net != tt.net || cfg.Addr != tt.addr || cfg.DBName != tt.db {
			t.Errorf("parseMySQLDSN(%q) = user %q pass %q net %q addr %q db %q, want %q %q %q %q %q",
				tt.dsn, cfg.User, cfg.Passwd, cfg.Net, cfg.Addr, cfg.DBName, tt.user, tt.pass, tt.net, tt.addr, tt.db)
		}
		if got := cfg.Params["sql_mode"]; !strings.Contains(got, strictMode) {
			t.Errorf("parseMySQLDSN(%q): sql_mode %q, want %s added", tt.dsn, got, strictMode)
		}
		if cfg.Timeout != mysqlDialTimeout {
			t.Errorf("parseMySQLDSN(%q): dial timeout %v want %v", tt.dsn, cfg.Timeout, mysqlDialTimeout)
		}
	}
	// A DSN's own strict sql_mode is kept.
	if cfg, err := parseMySQLDSN("u@tcp(h:3306)/d?sql_mode=%27TRADITIONAL%27"); err != nil || cfg.Params["sql_mode"] != "'TRADITIONAL'" {
		t.Errorf("own strict sql_mode: %v, %v", cfg, err)
	}
	for _, bad := range []string{
		"mysql://app:pw@db:3306",                        // no database
		"app:pw@tcp(db:3306)/",                          // empty database
		"app:pw@tcp(db:3306",                            // unterminated address
		"u@tcp(h:3306)/d?sql_mode=%27ANSI_QUOTES%27",    // not strict
		"mysql://app:%zz@db:3306/orders",                // bad percent-encoding
		"mysql://app:pw@db:3306/orders?timeout=forever", // the driver's own check
	} {
		_, err := parseMySQLDSN(bad)
		if err == nil {
			t.Errorf("parseMySQLDSN(%q) = nil error", bad)
			continue
		}
		if strings.Contains(err.Error(), "pw") {
			t.Errorf("parseMySQLDSN(%q): error %q shows the password", bad, err)
		}
	}
}

func TestSplitMultiRow(t *testing.T) {
	tests := []struct {
		stmt   string
		params int
		ok     bool
		two    string // the statement for two rows
	}{
		{"INSERT INTO `t` (a, b) VALUES (?, ?) ON DUPLICATE KEY UPDATE a = a", 2, true,
			"INSERT INTO `t` (a, b) VALUES (?, ?), (?, ?) ON DUPLICATE KEY UPDATE a = a"},
		{"insert into t values (?, 'it''s ?', CONCAT(?, '(')) ;", 2, true,
			"insert into t values (?, 'it''s ?', CONCAT(?, '(')), (?, 'it''s ?', CONCAT(?, '('))"},
		{"REPLACE INTO t VALUES (?)", 1, true, "REPLACE INTO t VALUES (?), (?)"},
		{"INSERT INTO t (v) VALUES (?) AS new ON DUPLICATE KEY UPDATE v = new.v", 1, true,
			"INSERT INTO t (v) VALUES (?), (?) AS new ON DUPLICATE KEY UPDATE v = new.v"},
		{"INSERT INTO `values` (a) VALUES (?)", 1, true, "INSERT INTO `values` (a) VALUES (?), (?)"},
		{"INSERT INTO t (a) VALUES (?) ON DUPLICATE KEY UPDATE a = ?", 2, false, ""}, // a placeholder after the tuple
		{"INSERT INTO t (a) SELECT ?", 1, false, ""},
		{"INSERT INTO t (a) VALUES (?), (?)", 2, false, ""},
		{"INSERT INTO t (a) VALUES (?) -- comment", 1, false, ""},
		{"INSERT INTO t (a) VALUES (?); DELETE FROM t", 1, false, ""},
		{"UPDATE t SET a = ?", 1, false, ""},
		{"INSERT INTO t (a, b) VALUES (?, ?)", 3, false, ""}, // args do not match
		{"INSERT INTO t (a) VALUES ('unterminated, ?)", 1, false, ""},
		{"INSERT INTO t VALUES ROW(?)", 1, false, ""},
	}
	for _, tt := range tests {
		m, ok := splitMultiRow(tt.stmt, tt.params)
		if ok != tt.ok {
			t.Errorf("splitMultiRow(%q, %d) ok = %v want %v", tt.stmt, tt.params, ok, tt.ok)
			continue
		}
		if ok {
			if got := m.statement(2); got != tt.two {
				t.Errorf("splitMultiRow(%q).statement(2) =\n  %q\nwant\n  %q", tt.stmt, got, tt.two)
			}
			if got := m.statement(1); got != strings.TrimRight(strings.TrimSpace(tt.stmt), "; ") {
				t.Errorf("splitMultiRow(%q).statement(1) = %q", tt.stmt, got)
			}
		}
	}
	if n := (multiRow{params: 6}).rowsPerStatement(); n*6 > maxPlaceholders || (n+1)*6 <= maxPlaceholders {
		t.Errorf("rowsPerStatement with 6 params = %d", n)
	}
}

// TestMySQLBatchIsOneInsert: a batch of the example statement reaches the
// server as one multi-row INSERT (the session's Com_insert counter), not
// one statement per message.
func TestMySQLBatchIsOneInsert(t *testing.T) {
	ds := mysqlDownstream(t)
	s := ds.sink(t, Config{MaxOpenConns: 1}) // one connection: its session counters are the sink's
	defer s.Close()
	inserts := func() int {
		t.Helper()
		var name string
		var n int
		if err := s.DB().QueryRow("SHOW SESSION STATUS LIKE 'Com_insert'").Scan(&name, &n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := inserts()
	msgs := sinktest.Messages(50)
	for i, r := range deliver(s, msgs...) {
		if r.Outcome != pacer.Delivered {
			t.Fatalf("result %d = %v (%v)", i, r.Outcome, r.Err)
		}
	}
	if got := inserts() - before; got != 1 {
		t.Errorf("a batch of 50 ran %d INSERT statements, want 1", got)
	}
	if got := len(ds.ids(t)); got != 50 {
		t.Errorf("%d rows want 50", got)
	}
}

// TestMySQLStrictValues: a value a column cannot hold rejects its message
// alone, and nothing is stored altered, even in a non-transactional (Aria)
// table and past the first row of a multi-row insert, where the server's
// usual STRICT_TRANS_TABLES would only warn and truncate or coerce. Each
// refusal is the message's (not systemic) with the server's error number
// as its class.
func TestMySQLStrictValues(t *testing.T) {
	ds := mysqlDownstream(t)
	for _, engine := range []string{"InnoDB", "Aria"} {
		t.Run(engine, func(t *testing.T) {
			table := uniqueTable("strict")
			if _, err := ds.ctl.Exec(`CREATE TABLE "` + table + `" (id varchar(64) PRIMARY KEY, name varchar(5) NOT NULL, n tinyint NOT NULL) ENGINE=` + engine); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _, _ = ds.ctl.Exec(`DROP TABLE "` + table + `"`) })
			s := ds.sink(t, Config{
				Statement: "INSERT INTO " + ds.q(table) + " (id, name, n) VALUES (?, ?, ?) ON DUPLICATE KEY UPDATE id = id",
				Args:      []string{"id", "json?:name", "json?:n"},
			})
			defer s.Close()
			batch := []*pacer.Message{
				msg("ok1", `{"name":"ann","n":1}`),
				msg("long", `{"name":"annabelle","n":2}`),
				msg("ok2", `{"name":"bob","n":3}`),
				msg("range", `{"name":"cy","n":300}`),
				msg("text", `{"name":"dee","n":"four"}`),
				msg("null", `{"n":5}`),
			}
			want := map[string]int{"long": myDataTooLong, "range": myOutOfRange, "text": myIncorrectVal, "null": myNullValue}
			for i, r := range deliver(s, batch...) {
				id := batch[i].ID
				code, bad := want[id]
				if !bad {
					if r.Outcome != pacer.Delivered {
						t.Errorf("%s = %v (%v) want Delivered", id, r.Outcome, r.Err)
					}
					continue
				}
				var me *mysql.MySQLError
				if r.Outcome != pacer.Reject || !errors.As(r.Err, &me) || int(me.Number) != code {
					t.Errorf("%s = %v (%v) want Reject with error %d", id, r.Outcome, r.Err, code)
					continue
				}
				class, systemic := s.FailureClass(r.Err)
				if class != fmt.Sprintf("mysql %d", code) || systemic {
					t.Errorf("%s: FailureClass = %q, %v want %q, false", id, class, systemic, fmt.Sprintf("mysql %d", code))
				}
			}
			rows, err := ds.ctl.Query(`SELECT id, name, n FROM "` + table + `" ORDER BY id`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var got []string
			for rows.Next() {
				var id, name string
				var n int
				if err := rows.Scan(&id, &name, &n); err != nil {
					t.Fatal(err)
				}
				got = append(got, fmt.Sprintf("%s:%s:%d", id, name, n))
			}
			if strings.Join(got, " ") != "ok1:ann:1 ok2:bob:3" {
				t.Errorf("table holds %v, want [ok1:ann:1 ok2:bob:3]", got)
			}
		})
	}
}

// TestMySQLSystemic: an unknown table or column, and a denied access
// (wrong password, no INSERT privilege) reject every message and are
// systemic for the breaker, as the matching PostgreSQL errors are.
func TestMySQLSystemic(t *testing.T) {
	ds := mysqlDownstream(t)
	user := uniqueTable("pacer_ro")
	for _, q := range []string{
		`CREATE USER '` + user + `'@'%' IDENTIFIED BY 'pacer-test'`,
		`GRANT SELECT ON "` + ds.table + `" TO '` + user + `'@'%'`,
	} {
		if _, err := ds.ctl.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() { _, _ = ds.ctl.Exec(`DROP USER '` + user + `'@'%'`) })
	cfg, err := mysql.ParseDSN(ds.dsn)
	if err != nil {
		t.Fatal(err)
	}
	asUser := func(pass string) string {
		c := cfg.Clone()
		c.User, c.Passwd = user, pass
		return c.FormatDSN()
	}
	tests := []struct {
		name string
		cfg  Config
		code int
	}{
		{"unknown table", Config{Table: uniqueTable("missing")}, myUnknownTable},
		{"unknown column", Config{Statement: "INSERT INTO " + ds.q(ds.table) + " (message_id, nope) VALUES (?, ?)", Args: []string{"id", "value"}}, myUnknownColumn},
		{"wrong password", Config{DSN: asUser("wrong")}, myAccessDenied},
		{"no insert privilege", Config{DSN: asUser("pacer-test")}, myTableAccessDenied},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.cfg
			c.Driver = "mysql"
			if c.DSN == "" {
				c.DSN = ds.dsn
			}
			if c.Statement == "" && c.Table == "" {
				c.Table = ds.table
			}
			s, err := New(c)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for _, n := range []int{1, 3} {
				for i, r := range deliver(s, sinktest.Messages(n)...) {
					var me *mysql.MySQLError
					if r.Outcome != pacer.Reject || !errors.As(r.Err, &me) || int(me.Number) != tt.code {
						t.Errorf("batch of %d, result %d = %v (%v) want Reject with error %d", n, i, r.Outcome, r.Err, tt.code)
						continue
					}
					if class, systemic := s.FailureClass(r.Err); !systemic || class != fmt.Sprintf("mysql %d", tt.code) {
						t.Errorf("FailureClass = %q, %v want systemic mysql %d", class, systemic, tt.code)
					}
					if strings.Contains(r.Err.Error(), "pacer-test") {
						t.Errorf("error shows the password: %v", r.Err)
					}
				}
			}
		})
	}
}

// TestMySQLLockWaitRetries: a row held by another transaction past
// innodb_lock_wait_timeout (1s here) is a Retry, throttling feedback, and
// the message goes through once the lock is released.
func TestMySQLLockWaitRetries(t *testing.T) {
	ds := mysqlDownstream(t)
	dsn := ds.dsn + map[bool]string{true: "&", false: "?"}[strings.Contains(ds.dsn, "?")] + "innodb_lock_wait_timeout=1"
	s, err := New(Config{Driver: "mysql", DSN: dsn, Table: ds.table})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m := sinktest.Messages(1)[0]
	tx, err := ds.ctl.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`INSERT INTO "`+ds.table+`" (message_id, payload) VALUES (?, 'held')`, m.ID); err != nil {
		t.Fatal(err)
	}
	res := make([]pacer.Result, 1)
	fb := s.Deliver(context.Background(), []*pacer.Message{m}, res)
	var me *mysql.MySQLError
	if res[0].Outcome != pacer.Retry || !errors.As(res[0].Err, &me) || me.Number != myLockWait {
		t.Errorf("behind a held row: %v (%v) want Retry with 1205", res[0].Outcome, res[0].Err)
	}
	if !fb.Throttled {
		t.Error("lock wait timeout: Feedback.Throttled = false")
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if r := deliver(s, m); r[0].Outcome != pacer.Delivered {
		t.Errorf("after the lock: %v (%v)", r[0].Outcome, r[0].Err)
	}
}

// TestMySQLConnectionLoss: the server kills the sink's connections (as a
// failover or restart would); the next delivery is retried or
// transparently reconnected, never rejected, and the one after that goes
// through.
func TestMySQLConnectionLoss(t *testing.T) {
	ds := mysqlDownstream(t)
	s := ds.sink(t, Config{MaxOpenConns: 1}) // one connection: CONNECTION_ID() names the sink's
	defer s.Close()
	for round := range 3 {
		if r := deliver(s, sinktest.Messages(3)...); r[0].Outcome != pacer.Delivered {
			t.Fatalf("round %d warm-up: %+v", round, r)
		}
		var id int64
		if err := s.DB().QueryRow("SELECT CONNECTION_ID()").Scan(&id); err != nil {
			t.Fatal(err)
		}
		if _, err := ds.ctl.Exec(fmt.Sprintf("KILL CONNECTION %d", id)); err != nil {
			t.Fatalf("round %d: KILL CONNECTION %d: %v", round, id, err)
		}
		for _, n := range []int{1, 3} {
			for i, r := range deliver(s, sinktest.Messages(n)...) {
				if r.Outcome == pacer.Reject {
					t.Errorf("round %d, batch of %d, result %d: Reject (%v) after a lost connection", round, n, i, r.Err)
				}
			}
		}
		if r := deliver(s, sinktest.Messages(2)...); r[0].Outcome != pacer.Delivered || r[1].Outcome != pacer.Delivered {
			t.Errorf("round %d: after reconnecting: %+v", round, r)
		}
	}
}

func TestClassifyMySQL(t *testing.T) {
	state := func(s string) [5]byte { var b [5]byte; copy(b[:], s); return b }
	tests := []struct {
		err        error
		want       pacer.Outcome
		overloaded bool
		systemic   bool
	}{
		{&mysql.MySQLError{Number: myDeadlock, SQLState: state("40001")}, pacer.Retry, false, false},
		{&mysql.MySQLError{Number: myLockWait, SQLState: state("HY000")}, pacer.Retry, true, false},
		{&mysql.MySQLError{Number: myTooManyConns, SQLState: state("08004")}, pacer.Retry, true, false},
		{&mysql.MySQLError{Number: myReadOnly, SQLState: state("HY000")}, pacer.Retry, false, false},
		{&mysql.MySQLError{Number: 1644, SQLState: state("40001")}, pacer.Retry, false, false}, // SIGNAL of a rollback state
		{&mysql.MySQLError{Number: myNetRead + 1, SQLState: state("08S01")}, pacer.Retry, false, false},
		{&mysql.MySQLError{Number: myDataTooLong, SQLState: state("22001")}, pacer.Reject, false, false},
		{&mysql.MySQLError{Number: myOutOfRange, SQLState: state("22003")}, pacer.Reject, false, false},
		{&mysql.MySQLError{Number: myIncorrectVal, SQLState: state("22007")}, pacer.Reject, false, false},
		{&mysql.MySQLError{Number: myNullValue, SQLState: state("23000")}, pacer.Reject, false, false},
		{&mysql.MySQLError{Number: 1062, SQLState: state("23000")}, pacer.Reject, false, false},
		{&mysql.MySQLError{Number: myUnknownTable, SQLState: state("42S02")}, pacer.Reject, false, true},
		{&mysql.MySQLError{Number: myUnknownColumn, SQLState: state("42S22")}, pacer.Reject, false, true},
		{&mysql.MySQLError{Number: myAccessDenied, SQLState: state("28000")}, pacer.Reject, false, true},
		{&mysql.MySQLError{Number: myDBAccessDenied, SQLState: state("42000")}, pacer.Reject, false, true},
		{&mysql.MySQLError{Number: myTableAccessDenied, SQLState: state("42000")}, pacer.Reject, false, true},
		{fmt.Errorf("x: %w", mysql.ErrInvalidConn), pacer.Retry, false, false},
		{fmt.Errorf("x: %w", driver.ErrBadConn), pacer.Retry, false, false},
	}
	s := &Sink{}
	for _, tt := range tests {
		if got := Classify(tt.err); got != tt.want {
			t.Errorf("Classify(%v) = %v want %v", tt.err, got, tt.want)
		}
		if got := Overloaded(tt.err); got != tt.overloaded {
			t.Errorf("Overloaded(%v) = %v want %v", tt.err, got, tt.overloaded)
		}
		if _, got := s.FailureClass(tt.err); got != tt.systemic {
			t.Errorf("FailureClass(%v) systemic = %v want %v", tt.err, got, tt.systemic)
		}
	}
}

// TestReadyMySQL: Ready pings MariaDB, given the driver's DSN or the same
// as a mysql:// URL, and fails on a port with no server.
func TestReadyMySQL(t *testing.T) {
	dsn := testenv.MySQL(t)
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	userinfo := url.UserPassword(cfg.User, cfg.Passwd).String()
	if cfg.Passwd == "" {
		userinfo = url.User(cfg.User).String()
	}
	asURL := "mysql://" + userinfo + "@" + cfg.Addr + "/" + cfg.DBName
	for _, d := range []string{dsn, asURL} {
		s, err := New(Config{Driver: "mysql", DSN: d, Table: "unused"})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if err := s.Ready(context.Background()); err != nil {
			t.Errorf("Ready with %s = %v", d, err)
		}
	}
	down, err := New(Config{Driver: "mysql", DSN: "mysql://pacer:pw@127.0.0.1:1/none", Table: "unused"})
	if err != nil {
		t.Fatal(err)
	}
	defer down.Close()
	if err := down.Ready(context.Background()); err == nil {
		t.Error("Ready with MySQL unreachable (port 1) = nil, want an error")
	}
}

// TestMySQLLargeBatch: a multi-row insert larger than the packet limits
// (the server's max_allowed_packet, 16 MiB here, and the driver's 64 MiB)
// still goes through, since the driver streams each large argument of a
// prepared statement on its own: 70 values of 1 MiB, 70 MiB in all, are
// all delivered.
func TestMySQLLargeBatch(t *testing.T) {
	ds := mysqlDownstream(t)
	s := ds.sink(t, Config{})
	defer s.Close()
	msgs := sinktest.Messages(70)
	big := strings.Repeat("x", 1<<20)
	for _, m := range msgs {
		m.Value = []byte(big)
	}
	for i, r := range deliver(s, msgs...) {
		if r.Outcome != pacer.Delivered {
			t.Fatalf("result %d = %v (%v) want Delivered", i, r.Outcome, r.Err)
		}
	}
	if got := len(ds.ids(t)); got != 70 {
		t.Errorf("%d rows want 70", got)
	}
}
