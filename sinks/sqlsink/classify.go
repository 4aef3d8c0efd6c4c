package sqlsink

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"

	"github.com/pacer-dev/pacer/pacer"
)

// SQLite primary result codes (sqlite3.h) that are worth retrying; every
// other code (SQLITE_CONSTRAINT, SQLITE_MISMATCH, SQLITE_ERROR...) rejects.
const (
	sqliteInterrupt = 9
	sqliteBusy      = 5
	sqliteLocked    = 6
	sqliteNoMem     = 7
	sqliteReadOnly  = 8
	sqliteIOErr     = 10
	sqliteCorrupt   = 11
	sqliteFull      = 13
	sqliteCantOpen  = 14
	sqliteProtocol  = 15
	sqliteSchema    = 17
)

// Classify decides whether a database error is worth retrying:
//
//   - Retry: context ends, lost or refused connections (driver.ErrBadConn,
//     network errors, PostgreSQL class 08), serialization failure (40001),
//     deadlock (40P01), too many connections and other resource shortages
//     (class 53), lock not available (55P03), query canceled or server
//     shutting down (57014, 57P01-57P03), system and internal errors (58,
//     XX); SQLITE_BUSY, SQLITE_LOCKED, SQLITE_IOERR, SQLITE_FULL,
//     SQLITE_NOMEM, SQLITE_INTERRUPT, SQLITE_PROTOCOL, SQLITE_SCHEMA,
//     SQLITE_READONLY, SQLITE_CANTOPEN, SQLITE_CORRUPT (the database, not
//     the message, is at fault); MySQL's lost connections (the driver's
//     invalid connection, SQLSTATE class 08), deadlock (1213), lock wait
//     timeout (1205), too many connections (1040, 1203), statement
//     timeouts, a server shutting down, out of memory or disk, read-only
//     (a failover under way), see classifyMySQL.
//   - Reject: everything a retry cannot fix: integrity constraint violations
//     (class 23, SQLITE_CONSTRAINT), data exceptions and type errors (class
//     22, SQLITE_MISMATCH, SQLITE_TOOBIG, SQLITE_RANGE), bad SQL or missing
//     objects and privileges (class 42, SQLITE_ERROR), and every other
//     PostgreSQL class; every other MySQL server error (data too long 1406,
//     out of range 1264, incorrect value 1366, NULL 1048, duplicate key,
//     CHECK, unknown table or column, access denied).
//
// An error of a kind it does not know is retried: the engine's retry budget
// dead-letters it in the end, whereas a wrong Reject would lose a message
// that a moment later would have gone through.
func Classify(err error) pacer.Outcome {
	if err == nil {
		return pacer.Delivered
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return pacer.Retry
	}
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return classifyPG(pg.Code)
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		return classifySQLite(se.Code())
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return classifyMySQL(me)
	}
	if errors.Is(err, mysql.ErrInvalidConn) || errors.Is(err, mysql.ErrMalformPkt) {
		return pacer.Retry
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	if errors.As(err, &ce) || errors.As(err, &ne) || pgconn.SafeToRetry(err) || pgconn.Timeout(err) {
		return pacer.Retry
	}
	if errors.Is(err, errArg) {
		return pacer.Reject
	}
	return pacer.Retry
}

func classifyPG(code string) pacer.Outcome {
	switch code {
	case "40001", "40P01", "55P03", "57014", "57P01", "57P02", "57P03", "57P05", "25P03":
		return pacer.Retry
	}
	switch {
	case strings.HasPrefix(code, "08"), // connection exception
		strings.HasPrefix(code, "53"), // insufficient resources (53300 too many connections)
		strings.HasPrefix(code, "58"), // system error
		strings.HasPrefix(code, "XX"), // internal error
		strings.HasPrefix(code, "40"): // transaction rollback
		return pacer.Retry
	}
	return pacer.Reject
}

func classifySQLite(code int) pacer.Outcome {
	switch code & 0xff {
	case sqliteBusy, sqliteLocked, sqliteIOErr, sqliteFull, sqliteNoMem, sqliteInterrupt,
		sqliteProtocol, sqliteSchema, sqliteReadOnly, sqliteCantOpen, sqliteCorrupt:
		return pacer.Retry
	}
	return pacer.Reject
}

// Overloaded reports whether err says the database is saturated, which the
// sink passes on as Feedback.Throttled for the adaptive rate controller:
// PostgreSQL class 53 (too many connections, out of memory or disk), lock
// not available (55P03), a statement timeout (57014); SQLITE_BUSY and
// SQLITE_LOCKED; MySQL's too many connections, lock wait and statement
// timeouts, out of memory (see mysqlOverloaded).
func Overloaded(err error) bool {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return mysqlOverloaded(me)
	}
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return strings.HasPrefix(pg.Code, "53") || pg.Code == "55P03" || pg.Code == "57014"
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		c := se.Code() & 0xff
		return c == sqliteBusy || c == sqliteLocked
	}
	return false
}

var _ pacer.FailureClassifier = (*Sink)(nil)

// FailureClass implements pacer.FailureClassifier, for the engine's
// systemic-failure breaker: "sqlstate <code>" for a PostgreSQL error and
// "sqlite <code>" for a SQLite one. Systemic (the pipeline, not the
// message, is at fault): undefined table, column, function or schema
// (42P01, 42703, 42883, 3F000), an unknown database (3D000), insufficient
// privilege (42501), failed authentication (class 28), a syntax error in
// the configured statement (42601), and SQLite's "no such table" / "no
// such column"; MySQL's unknown table, column, database or function
// (1146, 1054, 1049, 1305), access denied (1045, 1044, 1142, 1143, 1227),
// a syntax error (1064) or a column count that does not match (1136), as
// "mysql <number>". Everything else counts toward the breaker's thresholds;
// an error with no code is left out ("").
func (s *Sink) FailureClass(err error) (string, bool) {
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		switch {
		case pg.Code == "42P01", pg.Code == "42703", pg.Code == "42883", pg.Code == "3F000", pg.Code == "3D000",
			pg.Code == "42501", pg.Code == "42601", strings.HasPrefix(pg.Code, "28"):
			return "sqlstate " + pg.Code, true
		}
		return "sqlstate " + pg.Code, false
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return mysqlClass(me), mysqlSystemic(me)
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		msg := se.Error()
		if strings.Contains(msg, "no such table") || strings.Contains(msg, "no such column") {
			return "sqlite no such object", true
		}
		return "sqlite " + strconv.Itoa(se.Code()&0xff), false
	}
	if errors.Is(err, errArg) {
		return "sql argument", false
	}
	return "", false
}
