package sqlsink

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"pgregory.net/rapid"

	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/sinks/sinktest"
)

// downstream is one database prepared for a test: a unique table with the
// example schema plus a CHECK that rejects sinktest.PoisonKey, and a
// separate control pool for injecting failures.
type downstream struct {
	dialect Dialect
	dsn     string
	table   string
	ctl     *sql.DB
	lock    *sql.Tx // held while a lock-based failure is on
	// tableLock holds MySQL's LOCK TABLES ... WRITE (a session lock, which
	// a transaction would commit at once).
	tableLock *sql.Conn
}

func uniqueTable(prefix string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return prefix + "_" + hex.EncodeToString(b)
}

func sqliteDownstream(t *testing.T) *downstream {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sink.db")
	// busy_timeout(0): a locked database answers SQLITE_BUSY at once, which
	// is how Fail(Transient) is injected.
	return newDownstream(t, SQLite, "file:"+path+"?_pragma=busy_timeout(0)", "sqlite")
}

func postgresDownstream(t *testing.T) *downstream {
	t.Helper()
	return newDownstream(t, Postgres, testenv.Postgres(t), "pgx")
}

func mysqlDownstream(t *testing.T) *downstream {
	t.Helper()
	return newDownstream(t, MySQL, testenv.MySQL(t), "mysql")
}

// q quotes a table name for a statement the sink runs.
func (ds *downstream) q(name string) string {
	if ds.dialect == MySQL {
		return "`" + name + "`"
	}
	return `"` + name + `"`
}

// ph is the nth placeholder of the dialect.
func (ds *downstream) ph(n int) string {
	switch ds.dialect {
	case Postgres:
		return fmt.Sprintf("$%d", n)
	case MySQL:
		return "?"
	}
	return fmt.Sprintf("?%d", n)
}

// textKey is a text type a primary key may have (MySQL's TEXT needs a
// key length).
func (ds *downstream) textKey() string {
	if ds.dialect == MySQL {
		return "varchar(64)"
	}
	return "text"
}

func newDownstream(t *testing.T, d Dialect, dsn, driver string) *downstream {
	t.Helper()
	ds := &downstream{dialect: d, dsn: dsn, table: uniqueTable("sinktest")}
	ctlDSN := dsn
	switch d {
	case SQLite:
		ctlDSN = sqliteDefaults(dsn)
	case MySQL:
		// The control pool reads "name" as an identifier, as the other
		// dialects do, so the tests' own SQL is the same for all three.
		ctlDSN = dsn + map[bool]string{true: "&", false: "?"}[strings.Contains(dsn, "?")] + "sql_mode=%27ANSI_QUOTES,STRICT_ALL_TABLES%27"
	}
	ctl, err := sql.Open(driver, ctlDSN)
	if err != nil {
		t.Fatal(err)
	}
	ds.ctl = ctl
	ddl, err := ExampleSchema(d, ds.table)
	if err != nil {
		t.Fatal(err)
	}
	col := map[Dialect]string{Postgres: "msg_key     text,", SQLite: "msg_key     TEXT,", MySQL: "msg_key     TEXT,"}[d]
	ddl = strings.Replace(ddl, col, col[:len(col)-1]+" CHECK (msg_key IS NULL OR msg_key <> '"+sinktest.PoisonKey+"'),", 1)
	if _, err := ctl.Exec(ddl); err != nil {
		t.Fatalf("creating %s: %v", ds.table, err)
	}
	t.Cleanup(func() {
		ds.release()
		if d == Postgres || d == MySQL {
			if _, err := ctl.Exec(`DROP TABLE IF EXISTS "` + ds.table + `"`); err != nil {
				t.Errorf("dropping %s: %v", ds.table, err)
			}
			_, _ = ctl.Exec(`DROP FUNCTION IF EXISTS "` + ds.table + `_fail"()`)
		}
		ctl.Close()
	})
	return ds
}

func (ds *downstream) sink(t *testing.T, cfg Config) *Sink {
	t.Helper()
	cfg.Driver = map[Dialect]string{Postgres: "pgx", SQLite: "sqlite", MySQL: "mysql"}[ds.dialect]
	cfg.DSN = ds.dsn
	if cfg.Statement == "" && cfg.Table == "" {
		cfg.Table = ds.table
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

func (ds *downstream) ids(t *testing.T) []string {
	t.Helper()
	rows, err := ds.ctl.Query(`SELECT message_id FROM "` + ds.table + `"`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		out = append(out, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func (ds *downstream) release() {
	if ds.lock != nil {
		_ = ds.lock.Rollback()
		ds.lock = nil
	}
	if ds.tableLock != nil {
		_, _ = ds.tableLock.ExecContext(context.Background(), "UNLOCK TABLES")
		_ = ds.tableLock.Close()
		ds.tableLock = nil
	}
}

// fail injects f: PostgreSQL through a trigger raising the SQLSTATE (40001
// serialization failure, 23514 check violation) or an ACCESS EXCLUSIVE lock
// (hang); MySQL through a trigger signalling a deadlock (1213) or a
// user error (SQLSTATE 45000), or LOCK TABLES ... WRITE (hang); SQLite
// through a held write lock (SQLITE_BUSY) or a trigger that aborts (a
// constraint error).
func (ds *downstream) fail(t *testing.T, f sinktest.Failure) {
	t.Helper()
	exec := func(q string) {
		t.Helper()
		if _, err := ds.ctl.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	trig := `"` + ds.table + `_fail"`
	ds.release()
	exec(`DROP TRIGGER IF EXISTS ` + trig + map[Dialect]string{Postgres: ` ON "` + ds.table + `"`}[ds.dialect])
	raise := func(code string) {
		if ds.dialect == MySQL {
			signal := map[string]string{"40001": `SIGNAL SQLSTATE '40001' SET MYSQL_ERRNO = 1213, MESSAGE_TEXT = 'injected deadlock'`,
				"23514": `SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'injected failure'`}[code]
			exec(`CREATE TRIGGER ` + trig + ` BEFORE INSERT ON "` + ds.table + `" FOR EACH ROW ` + signal)
			return
		}
		if ds.dialect == SQLite {
			exec(`CREATE TRIGGER ` + trig + ` BEFORE INSERT ON "` + ds.table + `" BEGIN SELECT RAISE(ABORT, 'injected'); END`)
			return
		}
		exec(`CREATE OR REPLACE FUNCTION ` + trig + `() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN RAISE EXCEPTION 'injected failure' USING ERRCODE = '` + code + `'; END $$`)
		exec(`CREATE TRIGGER ` + trig + ` BEFORE INSERT ON "` + ds.table + `" FOR EACH ROW EXECUTE FUNCTION ` + trig + `()`)
	}
	lock := func() {
		if ds.dialect == MySQL {
			c, err := ds.ctl.Conn(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.ExecContext(context.Background(), `LOCK TABLES "`+ds.table+`" WRITE`); err != nil {
				t.Fatalf("LOCK TABLES: %v", err)
			}
			ds.tableLock = c
			return
		}
		tx, err := ds.ctl.Begin()
		if err != nil {
			t.Fatal(err)
		}
		q := `LOCK TABLE "` + ds.table + `" IN ACCESS EXCLUSIVE MODE`
		if ds.dialect == SQLite {
			// _txlock=immediate took the write lock; make it real with a write.
			q = `DELETE FROM "` + ds.table + `" WHERE 0`
		}
		if _, err := tx.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		ds.lock = tx
	}
	switch f {
	case sinktest.Transient:
		if ds.dialect == SQLite {
			lock()
		} else {
			raise("40001")
		}
	case sinktest.Permanent:
		raise("23514")
	case sinktest.Hang:
		lock()
	}
}

var allFeatures = sinktest.Features{
	Batches: true, Transient: true, Permanent: true, Hang: true, Poison: true, Idempotent: true,
}

func harness(open func(t *testing.T) *downstream, f sinktest.Features) sinktest.Harness {
	return sinktest.Harness{
		Features: f,
		New: func(t *testing.T) sinktest.Instance {
			ds := open(t)
			s := ds.sink(t, Config{})
			return sinktest.Instance{
				Sink: s, Close: s.Close,
				Delivered: ds.ids,
				Fail:      ds.fail,
			}
		},
	}
}

func TestConformanceSQLite(t *testing.T) {
	f := allFeatures
	f.Hang = false // with busy_timeout(0) a lock is an error, not a wait
	sinktest.Run(t, harness(sqliteDownstream, f))
}

// TestConformanceSQLiteBusyWait: with a long busy_timeout a held lock makes
// the sink wait, and cancelling the context must end the wait.
func TestConformanceSQLiteBusyWait(t *testing.T) {
	open := func(t *testing.T) *downstream {
		return newDownstream(t, SQLite, "file:"+filepath.Join(t.TempDir(), "sink.db")+"?_pragma=busy_timeout(600000)", "sqlite")
	}
	f := allFeatures
	f.Transient = false // a held lock is a wait here, not SQLITE_BUSY
	sinktest.Run(t, harness(open, f))
}

func TestConformancePostgres(t *testing.T) {
	testenv.Postgres(t) // skip the whole suite at once, saying why, when there is none
	sinktest.Run(t, harness(postgresDownstream, allFeatures))
}

func TestConformanceMySQL(t *testing.T) {
	testenv.MySQL(t) // skip the whole suite at once, saying why, when there is none
	sinktest.Run(t, harness(mysqlDownstream, allFeatures))
}

func msg(id string, value string) *pacer.Message {
	return &pacer.Message{ID: id, Key: []byte("k"), Value: []byte(value), Topic: "t", Partition: 1, Offset: 7,
		Headers: map[string]string{"tenant": "acme"}}
}

func deliver(s *Sink, msgs ...*pacer.Message) []pacer.Result {
	res := make([]pacer.Result, len(msgs))
	s.Deliver(context.Background(), msgs, res)
	return res
}

// eachDialect runs fn on SQLite, and on PostgreSQL and MySQL when there
// are ones.
func eachDialect(t *testing.T, fn func(t *testing.T, ds *downstream)) {
	t.Run("sqlite", func(t *testing.T) { fn(t, sqliteDownstream(t)) })
	t.Run("postgres", func(t *testing.T) { fn(t, postgresDownstream(t)) })
	t.Run("mysql", func(t *testing.T) { fn(t, mysqlDownstream(t)) })
}

func TestArgsFromMessage(t *testing.T) {
	eachDialect(t, func(t *testing.T, ds *downstream) {
		custom := uniqueTable("args")
		ph := ds.ph
		if _, err := ds.ctl.Exec(`CREATE TABLE "` + custom + `" (id ` + ds.textKey() + ` PRIMARY KEY, n bigint, f double precision, ok boolean, name text, tenant text, obj text, part bigint, off bigint)`); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = ds.ctl.Exec(`DROP TABLE "` + custom + `"`) })
		var phs []string
		for i := range 9 {
			phs = append(phs, ph(i+1))
		}
		s := ds.sink(t, Config{
			Statement: `INSERT INTO ` + ds.q(custom) + ` VALUES (` + strings.Join(phs, ",") + `)`,
			Args:      []string{"id", "json:n", "json:f", "json:ok", "json?:user.name", "headers.tenant", "json:obj", "partition", "offset"},
		})
		defer s.Close()
		res := deliver(s,
			msg("a", `{"n":42,"f":1.5,"ok":true,"user":{"name":"Ann"},"obj":{"x":[1,2]}}`),
			msg("b", `{"n":1,"f":2,"ok":false,"obj":null}`), // optional name missing: NULL; obj null: NULL
			msg("c", `{"f":2,"ok":false,"obj":1}`),          // required n missing
			msg("d", `not json`),
		)
		want := []pacer.Outcome{pacer.Delivered, pacer.Delivered, pacer.Reject, pacer.Reject}
		for i, r := range res {
			if r.Outcome != want[i] {
				t.Errorf("result %d = %v (%v) want %v", i, r.Outcome, r.Err, want[i])
			}
			if r.Outcome == pacer.Reject && !errors.Is(r.Err, ErrArg) {
				t.Errorf("result %d: %v does not wrap ErrArg", i, r.Err)
			}
		}
		var (
			n          int64
			f          float64
			ok         bool
			name       sql.NullString
			tenant     string
			obj        sql.NullString
			part, offs int64
		)
		row := ds.ctl.QueryRow(`SELECT n, f, ok, name, tenant, obj, part, off FROM "`+custom+`" WHERE id = `+ph(1), "a")
		if err := row.Scan(&n, &f, &ok, &name, &tenant, &obj, &part, &offs); err != nil {
			t.Fatal(err)
		}
		if n != 42 || f != 1.5 || !ok || name.String != "Ann" || tenant != "acme" || obj.String != `{"x":[1,2]}` || part != 1 || offs != 7 {
			t.Errorf("row a = %v %v %v %v %v %v %v %v", n, f, ok, name, tenant, obj, part, offs)
		}
		if err := ds.ctl.QueryRow(`SELECT name, obj FROM "`+custom+`" WHERE id = `+ph(1), "b").Scan(&name, &obj); err != nil || name.Valid || obj.Valid {
			t.Errorf("row b: name %v obj %v err %v, want NULLs", name, obj, err)
		}
	})
}

func TestBadInputIsPermanent(t *testing.T) {
	eachDialect(t, func(t *testing.T, ds *downstream) {
		s := ds.sink(t, Config{})
		defer s.Close()
		bin := msg("bin", "")
		bin.Value = []byte{0xff, 0x00, 0xfe}
		res := deliver(s, bin)
		if res[0].Outcome != pacer.Reject || !errors.Is(res[0].Err, ErrArg) {
			t.Errorf("binary value into text: %+v", res[0])
		}
		// A type mismatch found by the database: text into an integer column.
		typed := uniqueTable("typed")
		if _, err := ds.ctl.Exec(`CREATE TABLE "` + typed + `" (id ` + ds.textKey() + ` PRIMARY KEY, n integer NOT NULL) ` +
			map[Dialect]string{SQLite: "STRICT"}[ds.dialect]); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = ds.ctl.Exec(`DROP TABLE "` + typed + `"`) })
		ph := ds.ph(1) + ", " + ds.ph(2)
		ts := ds.sink(t, Config{Statement: `INSERT INTO ` + ds.q(typed) + ` VALUES (` + ph + `)`, Args: []string{"id", "json:n"}})
		defer ts.Close()
		res = deliver(ts, msg("ok", `{"n":3}`), msg("text", `{"n":"three"}`), msg("ok2", `{"n":4}`))
		want := []pacer.Outcome{pacer.Delivered, pacer.Reject, pacer.Delivered}
		for i, r := range res {
			if r.Outcome != want[i] {
				t.Errorf("typed %d = %v (%v) want %v", i, r.Outcome, r.Err, want[i])
			}
		}
		// Bad SQL: every message rejected, none retried forever.
		bs := ds.sink(t, Config{Statement: `INSERT INTO ` + ds.q("no_such_table_x") + ` VALUES (` + ph + `)`, Args: []string{"id", "value"}})
		defer bs.Close()
		for _, n := range []int{1, 3} {
			msgs := make([]*pacer.Message, n)
			for i := range msgs {
				msgs[i] = msg(fmt.Sprint(i), "v")
			}
			for i, r := range deliver(bs, msgs...) {
				if r.Outcome != pacer.Reject {
					t.Errorf("bad SQL, batch of %d, result %d = %v (%v)", n, i, r.Outcome, r.Err)
				}
			}
		}
	})
}

func TestMaxBatchSplits(t *testing.T) {
	ds := sqliteDownstream(t)
	s := ds.sink(t, Config{MaxBatch: 3})
	defer s.Close()
	msgs := sinktest.Messages(10)
	msgs[4].Key = []byte(sinktest.PoisonKey)
	for i, r := range deliver(s, msgs...) {
		want := pacer.Delivered
		if i == 4 {
			want = pacer.Reject
		}
		if r.Outcome != want {
			t.Errorf("result %d = %v (%v) want %v", i, r.Outcome, r.Err, want)
		}
	}
	if n := len(ds.ids(t)); n != 9 {
		t.Errorf("%d rows want 9", n)
	}
}

// TestBatchProperty: over random batches mixing good, poison and already
// delivered messages, every result is what the model says and the table
// holds each good message exactly once.
func TestBatchProperty(t *testing.T) {
	eachDialect(t, func(t *testing.T, ds *downstream) {
		s := ds.sink(t, Config{})
		defer s.Close()
		delivered := map[string]bool{}
		var pool []*pacer.Message
		rapid.Check(t, func(rt *rapid.T) {
			n := rapid.IntRange(1, 12).Draw(rt, "n")
			var batch []*pacer.Message
			seen := map[string]bool{}
			for i := range n {
				var m *pacer.Message
				if len(pool) > 0 && rapid.Bool().Draw(rt, fmt.Sprint("redeliver", i)) {
					m = pool[rapid.IntRange(0, len(pool)-1).Draw(rt, fmt.Sprint("which", i))]
				} else {
					m = sinktest.Messages(1)[0]
					if rapid.IntRange(0, 4).Draw(rt, fmt.Sprint("poison", i)) == 0 {
						m.Key = []byte(sinktest.PoisonKey)
					}
					pool = append(pool, m)
				}
				if seen[m.ID] {
					continue // a batch never holds the same message twice
				}
				seen[m.ID] = true
				batch = append(batch, m)
			}
			for i, r := range deliver(s, batch...) {
				want := pacer.Delivered
				if string(batch[i].Key) == sinktest.PoisonKey {
					want = pacer.Reject
				} else {
					delivered[batch[i].ID] = true
				}
				if r.Outcome != want {
					rt.Fatalf("%s: %v (%v) want %v", batch[i].ID, r.Outcome, r.Err, want)
				}
			}
		})
		got := ds.ids(t)
		if len(got) != len(delivered) {
			t.Errorf("table holds %d rows, want %d", len(got), len(delivered))
		}
		for _, id := range got {
			if !delivered[id] {
				t.Errorf("table holds %s, never delivered", id)
			}
		}
	})
}

func TestClassify(t *testing.T) {
	tests := []struct {
		err  error
		want pacer.Outcome
	}{
		{nil, pacer.Delivered},
		{context.Canceled, pacer.Retry},
		{fmt.Errorf("x: %w", context.DeadlineExceeded), pacer.Retry},
		{sql.ErrConnDone, pacer.Retry},
		{&pgconn.PgError{Code: "40001"}, pacer.Retry},
		{&pgconn.PgError{Code: "40P01"}, pacer.Retry},
		{&pgconn.PgError{Code: "53300"}, pacer.Retry},
		{&pgconn.PgError{Code: "08006"}, pacer.Retry},
		{&pgconn.PgError{Code: "57P01"}, pacer.Retry},
		{&pgconn.PgError{Code: "55P03"}, pacer.Retry},
		{&pgconn.PgError{Code: "XX000"}, pacer.Retry},
		{&pgconn.PgError{Code: "23505"}, pacer.Reject},
		{&pgconn.PgError{Code: "23514"}, pacer.Reject},
		{&pgconn.PgError{Code: "22P02"}, pacer.Reject},
		{&pgconn.PgError{Code: "42P01"}, pacer.Reject},
		{&pgconn.PgError{Code: "42601"}, pacer.Reject},
		{fmt.Errorf("%w: x", ErrArg), pacer.Reject},
		{errors.New("something new"), pacer.Retry},
	}
	for _, tt := range tests {
		if got := Classify(tt.err); got != tt.want {
			t.Errorf("Classify(%v) = %v want %v", tt.err, got, tt.want)
		}
	}
	for code, want := range map[int]pacer.Outcome{
		5: pacer.Retry, 5 | 1<<8: pacer.Retry, 6: pacer.Retry, 10: pacer.Retry, 13: pacer.Retry,
		19: pacer.Reject, 19 | 12<<8: pacer.Reject, 20: pacer.Reject, 1: pacer.Reject, 18: pacer.Reject,
	} {
		if got := classifySQLite(code); got != want {
			t.Errorf("classifySQLite(%d) = %v want %v", code, got, want)
		}
	}
}

func TestConfig(t *testing.T) {
	dir := t.TempDir()
	for _, cfg := range []Config{
		{Driver: "oracle", DSN: "x"},
		{Driver: "mysql", DSN: "root@tcp(127.0.0.1:3306)"},
		{Driver: "mysql", DSN: "mysql://root@127.0.0.1:3306"},
		{Driver: "mysql", DSN: "root@tcp(127.0.0.1:3306)/test?sql_mode=%27ANSI_QUOTES%27"},
		{Driver: "sqlite"},
		{DSN: filepath.Join(dir, "a.db"), Table: "bad name"},
		{DSN: filepath.Join(dir, "a.db"), Table: "a.b.c"},
		{DSN: filepath.Join(dir, "a.db"), Statement: "INSERT", Args: []string{"nope"}},
		{DSN: filepath.Join(dir, "a.db"), Statement: "INSERT", Args: []string{"json:"}},
		{DB: &sql.DB{}},
	} {
		if s, err := New(cfg); !errors.Is(err, ErrInvalidConfig) {
			if s != nil {
				s.Close()
			}
			t.Errorf("New(%+v) = %v want ErrInvalidConfig", cfg, err)
		}
	}
	for in, want := range map[string]string{
		"a.db":                               "a.db?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_txlock=immediate",
		"file:a.db?_pragma=busy_timeout(10)": "file:a.db?_pragma=busy_timeout(10)&_pragma=journal_mode(WAL)&_txlock=immediate",
		":memory:":                           ":memory:?_pragma=busy_timeout(5000)&_txlock=immediate",
		"a.db?_txlock=deferred":              "a.db?_txlock=deferred&_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)",
	} {
		if got := sqliteDefaults(in); got != want {
			t.Errorf("sqliteDefaults(%q) = %q want %q", in, got, want)
		}
	}
}

func TestCreateExampleSchema(t *testing.T) {
	eachDialect(t, func(t *testing.T, ds *downstream) {
		table := uniqueTable("example")
		if err := CreateExampleSchema(context.Background(), ds.ctl, ds.dialect, table); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = ds.ctl.Exec(`DROP TABLE "` + table + `"`) })
		// Idempotent DDL, idempotent inserts.
		if err := CreateExampleSchema(context.Background(), ds.ctl, ds.dialect, table); err != nil {
			t.Fatal(err)
		}
		s := ds.sink(t, Config{Table: table})
		defer s.Close()
		m := msg("only-once", `{"a":1}`)
		for range 3 {
			if r := deliver(s, m, msg("other", "x")); r[0].Outcome != pacer.Delivered || r[1].Outcome != pacer.Delivered {
				t.Fatalf("%+v", r)
			}
		}
		var n int
		if err := ds.ctl.QueryRow(`SELECT count(*) FROM "` + table + `"`).Scan(&n); err != nil || n != 2 {
			t.Errorf("count = %d, %v want 2", n, err)
		}
	})
}

func TestOverloadFeedback(t *testing.T) {
	ds := sqliteDownstream(t)
	s := ds.sink(t, Config{})
	defer s.Close()
	ds.fail(t, sinktest.Transient) // a held write lock: SQLITE_BUSY
	msgs := sinktest.Messages(3)
	res := make([]pacer.Result, len(msgs))
	fb := s.Deliver(context.Background(), msgs, res)
	if !fb.Throttled {
		t.Errorf("SQLITE_BUSY: Feedback.Throttled = false")
	}
	for i, r := range res {
		if r.Outcome != pacer.Retry {
			t.Errorf("result %d = %v (%v) want Retry", i, r.Outcome, r.Err)
		}
	}
	ds.fail(t, sinktest.None)
	if fb := s.Deliver(context.Background(), msgs, res); fb.Throttled {
		t.Errorf("after the lock: Throttled")
	}
	for code, want := range map[string]bool{"53300": true, "53200": true, "55P03": true, "57014": true, "40001": false, "23505": false} {
		if got := Overloaded(&pgconn.PgError{Code: code}); got != want {
			t.Errorf("Overloaded(%s) = %v want %v", code, got, want)
		}
	}
}

// FuzzArgs: argument mapping never panics; a failure always wraps ErrArg.
func FuzzArgs(f *testing.F) {
	f.Add([]byte(`{"a":{"b":[1,2,{"c":true}]}}`), []byte("k"), "h")
	f.Add([]byte("\xff"), []byte{0xfe}, "")
	f.Add([]byte(`{"a":1e400}`), []byte(nil), "x")
	s := &Sink{}
	for _, spec := range []string{"id", "key", "value", "key_bytes", "value_bytes", "headers.h", "json:a.b.2.c", "json?:a.x", "json:a", "timestamp"} {
		a, err := parseArg(spec)
		if err != nil {
			f.Fatal(err)
		}
		s.args = append(s.args, a)
	}
	f.Fuzz(func(t *testing.T, value, key []byte, h string) {
		_, err := s.argsOf(&pacer.Message{ID: "x", Key: key, Value: value, Headers: map[string]string{"h": h}})
		if err != nil && !errors.Is(err, ErrArg) {
			t.Fatalf("argsOf: %v does not wrap ErrArg", err)
		}
	})
}

// TestPostgresConnectionLoss: the server kills the sink's connections (as a
// failover or restart would); the next delivery is retried or transparently
// reconnected, never rejected, and the one after that goes through.
func TestPostgresConnectionLoss(t *testing.T) {
	ds := postgresDownstream(t)
	app := uniqueTable("pacer_conn_loss")
	dsn := ds.dsn
	if strings.Contains(dsn, "?") {
		dsn += "&application_name=" + app
	} else {
		dsn += "?application_name=" + app
	}
	s, err := New(Config{Driver: "pgx", DSN: dsn, Table: ds.table, MaxOpenConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for round := range 3 {
		batch := sinktest.Messages(3)
		if r := deliver(s, batch...); r[0].Outcome != pacer.Delivered {
			t.Fatalf("round %d warm-up: %+v", round, r)
		}
		var killed int
		if err := ds.ctl.QueryRow(`SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&killed); err != nil {
			t.Fatal(err)
		}
		if killed == 0 {
			t.Fatalf("round %d: no connection of the sink to kill", round)
		}
		for _, n := range []int{1, 3} {
			msgs := sinktest.Messages(n)
			for i, r := range deliver(s, msgs...) {
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
