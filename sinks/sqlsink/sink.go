// Package sqlsink delivers messages to a SQL database through database/sql:
// PostgreSQL with pgx (driver "pgx"), MySQL or MariaDB with
// go-sql-driver/mysql (driver "mysql"), or SQLite with modernc.org/sqlite
// (driver "sqlite", pure Go, the embedded default).
//
// Every message runs one parameterized statement whose arguments are mapped
// from message fields (Config.Args); message content is only ever bound as a
// parameter, never spliced into SQL text. A batch runs in one transaction
// with a result per message: a row that fails for good is rejected alone
// and the others are committed (see Deliver). The example schema keys rows
// by the message ID with ON CONFLICT DO NOTHING (MySQL: ON DUPLICATE KEY
// UPDATE message_id = message_id), so redelivery never writes twice.
//
// The package lives in sinks/sqlsink and is named sqlsink so that it does not
// shadow database/sql.
package sqlsink

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib" // driver "pgx"
	"github.com/tidwall/gjson"
	_ "modernc.org/sqlite" // driver "sqlite"

	"github.com/pacer-dev/pacer/pacer"
)

// Sentinel errors.
var (
	// ErrInvalidConfig is wrapped by every error New returns.
	ErrInvalidConfig = errors.New("sqlsink: invalid config")
	// errArg marks a message whose arguments cannot be built (missing JSON
	// field, text that is not UTF-8): a Reject.
	errArg = errors.New("sqlsink: cannot map message to arguments")
)

// ErrArg is wrapped by the Reject of a message whose statement arguments
// cannot be built from it.
var ErrArg = errArg

// Dialect is the SQL flavour; it decides placeholders and the example
// schema.
type Dialect string

const (
	Postgres Dialect = "postgres"
	MySQL    Dialect = "mysql" // MySQL and MariaDB
	SQLite   Dialect = "sqlite"
)

// Config configures a Sink.
type Config struct {
	// Driver is "sqlite" (the default), "pgx" or "mysql" (also "mariadb");
	// it sets the Dialect.
	Driver string
	// DSN is the data source: a file name or "file:..." URI for SQLite, a
	// postgres:// URL or key=value string for PostgreSQL, a
	// mysql://user:pass@host:3306/db URL or the MySQL driver's own
	// user:pass@tcp(host:3306)/db?param=value for MySQL. For SQLite, unless
	// the DSN sets them, busy_timeout(5000), journal_mode(WAL) and
	// _txlock=immediate are added. For MySQL, STRICT_ALL_TABLES is added to
	// the session's sql_mode (a DSN whose sql_mode leaves it out is
	// refused: without it a value a column cannot hold is silently
	// truncated or coerced), and the dial timeout is 10s unless set.
	DSN string
	// Statement is run once per message, with placeholders native to the
	// dialect: $1, $2... for PostgreSQL; ? for MySQL; ?1, ?2... (or ?)
	// for SQLite. "" means the example statement for Table (see
	// ExampleStatement). On MySQL, an INSERT ... VALUES (...) [ON
	// DUPLICATE KEY UPDATE ...] with its placeholders in the one tuple
	// takes a whole batch as one multi-row statement.
	Statement string
	// Args maps each placeholder, in order, to a message field: id, key,
	// value, key_bytes, value_bytes, topic, partition, offset (sequence),
	// timestamp, attempt, headers.NAME, json:PATH, json?:PATH. nil with an
	// empty Statement means ExampleArgs.
	Args []string
	// Table names the example table when Statement is empty; "" means
	// "pacer_messages".
	Table string
	// MaxOpenConns bounds the connection pool; set it to the engine's max
	// in flight. 0 means 16 for PostgreSQL and MySQL and 1 for SQLite (one
	// writer at a time is what SQLite allows; more connections only add
	// SQLITE_BUSY).
	MaxOpenConns int
	// MaxBatch splits a larger Deliver call into transactions of at most
	// this many messages; 0 means 1000.
	MaxBatch int

	// DB replaces Driver/DSN with an open pool (Dialect must then be set).
	// The sink does not close it.
	DB      *sql.DB
	Dialect Dialect
}

// Sink writes messages to a database. Safe for concurrent use. Close
// releases its pool (unless Config.DB was given).
type Sink struct {
	db       *sql.DB
	ownDB    bool
	dialect  Dialect
	stmtText string
	args     []arg
	maxBatch int
	// multi is set when stmtText can take several rows (MySQL only).
	multi *multiRow
}

var _ pacer.Sink = (*Sink)(nil)

// New opens the pool (without connecting) and validates cfg.
func New(cfg Config) (*Sink, error) {
	s := &Sink{maxBatch: cfg.MaxBatch, dialect: cfg.Dialect}
	if s.maxBatch <= 0 {
		s.maxBatch = 1000
	}
	if cfg.DB != nil {
		if s.dialect != Postgres && s.dialect != SQLite && s.dialect != MySQL {
			return nil, fmt.Errorf("%w: with DB, Dialect must be %q, %q or %q", ErrInvalidConfig, Postgres, MySQL, SQLite)
		}
		s.db = cfg.DB
	} else {
		driver := cfg.Driver
		switch driver {
		case "", "sqlite", "sqlite3":
			driver, s.dialect = "sqlite", SQLite
		case "pgx", "postgres", "postgresql":
			driver, s.dialect = "pgx", Postgres
		case "mysql", "mariadb":
			driver, s.dialect = "mysql", MySQL
		default:
			return nil, fmt.Errorf("%w: driver %q (want sqlite, pgx or mysql)", ErrInvalidConfig, cfg.Driver)
		}
		if cfg.DSN == "" {
			return nil, fmt.Errorf("%w: dsn is required", ErrInvalidConfig)
		}
		var db *sql.DB
		var err error
		switch s.dialect {
		case SQLite:
			db, err = sql.Open(driver, sqliteDefaults(cfg.DSN))
		case MySQL:
			db, err = openMySQL(cfg.DSN)
		default:
			db, err = sql.Open(driver, cfg.DSN)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
		}
		n := cfg.MaxOpenConns
		if n <= 0 {
			n = 16
			if s.dialect == SQLite {
				n = 1
			}
		}
		db.SetMaxOpenConns(n)
		db.SetMaxIdleConns(n)
		db.SetConnMaxIdleTime(5 * time.Minute)
		s.db, s.ownDB = db, true
	}

	s.stmtText = cfg.Statement
	specs := cfg.Args
	if s.stmtText == "" {
		table := cfg.Table
		if table == "" {
			table = "pacer_messages"
		}
		st, err := ExampleStatement(s.dialect, table)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
		}
		s.stmtText = st
		if specs == nil {
			specs = ExampleArgs
		}
	}
	for i, spec := range specs {
		f, err := parseArg(strings.TrimSpace(spec))
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("%w: args[%d]: %v", ErrInvalidConfig, i, err)
		}
		s.args = append(s.args, f)
	}
	if s.dialect == MySQL {
		if m, ok := splitMultiRow(s.stmtText, len(s.args)); ok {
			s.multi = &m
		}
	}
	return s, nil
}

// sqliteDefaults adds busy_timeout, WAL and immediate transactions to a
// SQLite DSN that does not choose them.
func sqliteDefaults(dsn string) string {
	base, query, _ := strings.Cut(dsn, "?")
	q, err := url.ParseQuery(query)
	if err != nil {
		return dsn
	}
	add := func(s string) {
		if query == "" {
			query = s
		} else {
			query += "&" + s
		}
	}
	pragmas := strings.ToLower(strings.Join(q["_pragma"], ","))
	if !strings.Contains(pragmas, "busy_timeout") {
		add("_pragma=busy_timeout(5000)")
	}
	if !strings.Contains(pragmas, "journal_mode") && !strings.Contains(base, ":memory:") && !strings.Contains(dsn, "mode=memory") {
		add("_pragma=journal_mode(WAL)")
	}
	if q.Get("_txlock") == "" {
		add("_txlock=immediate")
	}
	return base + "?" + query
}

// DB returns the sink's pool (for creating the schema, or for tests).
func (s *Sink) DB() *sql.DB { return s.db }

// Dialect returns the sink's dialect.
func (s *Sink) Dialect() Dialect { return s.dialect }

// Close closes the pool the sink opened.
func (s *Sink) Close() error {
	if s.ownDB {
		return s.db.Close()
	}
	return nil
}

// Deliver implements pacer.Sink. One message runs in autocommit. A batch
// runs in one transaction, in two passes at most:
//
//  1. all statements, then COMMIT: the common case, one round trip each
//     (PostgreSQL pipelines them in one; MySQL sends an INSERT ... VALUES
//     statement as one multi-row insert of the whole batch);
//  2. if some statement failed for good, ROLLBACK and run the batch again
//     with a SAVEPOINT around each statement: a failing one is rolled back
//     to its savepoint and rejected, the others are committed (MySQL rolls
//     a failed statement back by itself: no savepoints there).
//
// A batch that cannot start (no connection, a denied login) is Retry, or
// Reject when the database refused it for good.
//
// A retryable error (lost connection, serialization failure, deadlock,
// SQLITE_BUSY) aborts the transaction: every message not rejected is Retry.
// A message whose arguments cannot be built is rejected before any SQL runs.
func (s *Sink) Deliver(ctx context.Context, msgs []*pacer.Message, results []pacer.Result) pacer.Feedback {
	start := time.Now()
	for lo := 0; lo < len(msgs); lo += s.maxBatch {
		hi := min(lo+s.maxBatch, len(msgs))
		s.deliverChunk(ctx, msgs[lo:hi], results[lo:hi])
	}
	fb := pacer.Feedback{Latency: time.Since(start)}
	for _, r := range results {
		if r.Outcome == pacer.Retry && Overloaded(r.Err) {
			fb.Throttled = true
			break
		}
	}
	return fb
}

func (s *Sink) deliverChunk(ctx context.Context, msgs []*pacer.Message, results []pacer.Result) {
	if err := ctx.Err(); err != nil {
		fill(results, pacer.Result{Outcome: pacer.Retry, Err: fmt.Errorf("sqlsink: %w", err)})
		return
	}
	// Build every message's arguments first; bad input never reaches SQL.
	args := make([][]any, len(msgs))
	var todo []int
	for i, m := range msgs {
		a, err := s.argsOf(m)
		if err != nil {
			results[i] = pacer.Result{Outcome: pacer.Reject, Err: err}
			continue
		}
		args[i] = a
		todo = append(todo, i)
	}
	if len(todo) == 0 {
		return
	}
	if len(todo) == 1 {
		i := todo[0]
		_, err := s.db.ExecContext(ctx, s.stmtText, args[i]...)
		results[i] = s.result(msgs[i], err)
		return
	}
	if s.multi != nil {
		if s.multiRowTx(ctx, args, todo, results) {
			return
		}
		s.runTx(ctx, msgs, args, todo, results, true)
		return
	}
	if s.dialect == Postgres {
		if done, ok := s.pgPipeline(ctx, args, todo, results); ok {
			if done {
				return
			}
			s.runTx(ctx, msgs, args, todo, results, true)
			return
		}
	}
	if s.runTx(ctx, msgs, args, todo, results, false) {
		return
	}
	s.runTx(ctx, msgs, args, todo, results, true)
}

// pgPipeline is the first pass on PostgreSQL through pgx's own connection:
// BEGIN, every statement queued in one pgx.Batch (one round trip for the
// lot), COMMIT. ok is false when the pool is not pgx's (the caller uses the
// database/sql path); done is false when a statement failed for good, so
// the caller reruns with savepoints (which cannot be pipelined: an error
// aborts the rest of a pipeline).
func (s *Sink) pgPipeline(ctx context.Context, args [][]any, todo []int, results []pacer.Result) (done, ok bool) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		failAll(ctx, results, todo, err)
		return true, true
	}
	defer conn.Close()
	ok = true
	rerr := conn.Raw(func(dc any) error {
		sc, isPgx := dc.(*stdlib.Conn)
		if !isPgx {
			ok = false
			return nil
		}
		tx, err := sc.Conn().Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after Commit
		b := &pgx.Batch{}
		for _, i := range todo {
			b.Queue(s.stmtText, args[i]...)
		}
		br := tx.SendBatch(ctx, b)
		var first error
		for range todo {
			if _, err := br.Exec(); err != nil {
				first = err
				break
			}
		}
		if cerr := br.Close(); first == nil {
			first = cerr
		}
		if first != nil {
			return first
		}
		return tx.Commit(ctx)
	})
	if !ok {
		return false, false
	}
	if rerr != nil {
		if Classify(rerr) == pacer.Reject && ctx.Err() == nil {
			return false, true
		}
		markRetry(results, todo, rerr)
		return true, true
	}
	for _, i := range todo {
		results[i] = pacer.Result{Outcome: pacer.Delivered}
	}
	return true, true
}

// failAll gives every message of todo the outcome of err, a failure to
// start the batch (no connection, a refused login): Reject when it is one
// (a denied access, which the breaker reads as systemic), else Retry.
func failAll(ctx context.Context, results []pacer.Result, todo []int, err error) {
	if Classify(err) != pacer.Reject || ctx.Err() != nil {
		markRetry(results, todo, err)
		return
	}
	for _, i := range todo {
		results[i] = pacer.Result{Outcome: pacer.Reject, Err: fmt.Errorf("sqlsink: batch of %d not started: %w", len(todo), err)}
	}
}

func markRetry(results []pacer.Result, todo []int, err error) {
	for _, i := range todo {
		results[i] = pacer.Result{Outcome: pacer.Retry, Err: fmt.Errorf("sqlsink: batch of %d not committed: %w", len(todo), err)}
	}
}

// runTx runs the statements of todo in one transaction. Without savepoints
// it reports false (and writes nothing into results) when a statement
// failed for good, so the caller can rerun with savepoints.
func (s *Sink) runTx(ctx context.Context, msgs []*pacer.Message, args [][]any, todo []int, results []pacer.Result, savepoints bool) bool {
	for _, i := range todo {
		results[i] = pacer.Result{}
	}
	retryAll := func(err error) bool {
		for _, i := range todo {
			if !savepoints || results[i].Outcome != pacer.Reject {
				results[i] = pacer.Result{Outcome: pacer.Retry, Err: fmt.Errorf("sqlsink: batch of %d not committed: %w", len(todo), err)}
			}
		}
		return true
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		failAll(ctx, results, todo, err)
		return true
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	exec := func(args []any) error {
		_, err := tx.ExecContext(ctx, s.stmtText, args...)
		return err
	}
	if s.dialect == SQLite || s.dialect == MySQL {
		// modernc.org/sqlite compiles the statement on every Exec unless it
		// is prepared, and go-sql-driver/mysql prepares and closes it on
		// the server each time; pgx caches prepared statements itself.
		stmt, err := tx.PrepareContext(ctx, s.stmtText)
		if err != nil {
			if Classify(err) == pacer.Reject {
				// Bad SQL: every message fails the same way.
				for _, i := range todo {
					results[i] = pacer.Result{Outcome: pacer.Reject, Err: fmt.Errorf("sqlsink: preparing statement: %w", err)}
				}
				return true
			}
			return retryAll(err)
		}
		defer stmt.Close()
		exec = func(args []any) error {
			_, err := stmt.ExecContext(ctx, args...)
			return err
		}
	}
	// MySQL rolls a failed statement back alone and keeps the
	// transaction (the errors that end it, deadlock and lock wait timeout,
	// are retried whole): no savepoints, which non-transactional engines
	// (MyISAM, Aria) refuse anyway.
	savepointSQL := savepoints && s.dialect != MySQL
	for _, i := range todo {
		if savepointSQL {
			if _, err := tx.ExecContext(ctx, "SAVEPOINT pacer_row"); err != nil {
				return retryAll(err)
			}
		}
		err := exec(args[i])
		if err == nil {
			if savepointSQL {
				if _, err := tx.ExecContext(ctx, "RELEASE SAVEPOINT pacer_row"); err != nil {
					return retryAll(err)
				}
			}
			results[i] = pacer.Result{Outcome: pacer.Delivered}
			continue
		}
		if Classify(err) == pacer.Retry || ctx.Err() != nil {
			return retryAll(err)
		}
		if !savepoints {
			return false
		}
		results[i] = s.result(msgs[i], err)
		if !savepointSQL {
			continue
		}
		if _, err := tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT pacer_row"); err != nil {
			return retryAll(err)
		}
		if _, err := tx.ExecContext(ctx, "RELEASE SAVEPOINT pacer_row"); err != nil {
			return retryAll(err)
		}
	}
	if err := tx.Commit(); err != nil {
		return retryAll(err)
	}
	return true
}

func (s *Sink) argsOf(m *pacer.Message) ([]any, error) {
	out := make([]any, len(s.args))
	jsonChecked := false
	for j, a := range s.args {
		if a.jsonPath != "" && !jsonChecked {
			if !gjson.ValidBytes(m.Value) {
				return nil, fmt.Errorf("%w: message %q, argument %d: value is not valid JSON (looking up %q)", errArg, m.ID, j+1, a.jsonPath)
			}
			jsonChecked = true
		}
		v, err := a.get(m)
		if err != nil {
			return nil, fmt.Errorf("%w: message %q, argument %d: %v", errArg, m.ID, j+1, err)
		}
		out[j] = v
	}
	return out, nil
}

func (s *Sink) result(m *pacer.Message, err error) pacer.Result {
	if err == nil {
		return pacer.Result{Outcome: pacer.Delivered}
	}
	return pacer.Result{Outcome: Classify(err), Err: fmt.Errorf("sqlsink: message %q: %w", m.ID, err)}
}

func fill(results []pacer.Result, r pacer.Result) {
	for i := range results {
		results[i] = r
	}
}
