package sqlsink

import (
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/pacer-dev/pacer/pacer"
)

// strictMode is added to the session's sql_mode on every MySQL connection
// (the driver runs SET on connect): without it, a value a column cannot
// hold (too long, out of range, not a number, NULL into NOT NULL in a
// multi-row insert) is truncated or coerced with a warning and the message
// is "delivered" altered. STRICT_ALL_TABLES makes it an error, which
// rejects that message alone.
const strictMode = "STRICT_ALL_TABLES"

// mysqlDialTimeout bounds a connection attempt when the DSN sets none.
const mysqlDialTimeout = 10 * time.Second

// openMySQL parses dsn, a mysql:// (or mariadb://) URL or the driver's own
// DSN (user:pass@tcp(host:3306)/db?param=value), and opens a pool on it
// with strict SQL mode. It connects to nothing yet.
func openMySQL(dsn string) (*sql.DB, error) {
	cfg, err := parseMySQLDSN(dsn)
	if err != nil {
		return nil, err
	}
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("mysql dsn: %v", err)
	}
	return sql.OpenDB(c), nil
}

// parseMySQLDSN turns either DSN form into the driver's config, with the
// session settings pacer relies on. A URL's user and password may be
// percent-encoded; its host:port may be given bare (tcp is assumed) or as
// tcp(host:port) / unix(/path). A DSN that sets sql_mode itself must keep
// a strict mode, or it is refused.
func parseMySQLDSN(dsn string) (*mysql.Config, error) {
	native := dsn
	var user, pass string
	fromURL := false
	for _, scheme := range []string{"mysql://", "mariadb://"} {
		if rest, ok := strings.CutPrefix(dsn, scheme); ok {
			native, fromURL = rest, true
			break
		}
	}
	if fromURL {
		// user:pass@addr/db?params: the address ends at the first / after
		// the last @ that precedes it.
		slash := strings.Index(native, "/")
		at := -1
		if slash >= 0 {
			at = strings.LastIndex(native[:slash], "@")
		}
		if slash < 0 {
			return nil, errors.New("mysql dsn: missing the /database after the host")
		}
		if at >= 0 {
			ui := native[:at]
			u, p, hasPass := strings.Cut(ui, ":")
			var err error
			if user, err = url.PathUnescape(u); err != nil {
				return nil, errors.New("mysql dsn: the user name is not valid percent-encoding")
			}
			if hasPass {
				if pass, err = url.PathUnescape(p); err != nil {
					return nil, errors.New("mysql dsn: the password is not valid percent-encoding")
				}
			}
		}
		addr := native[at+1 : slash]
		if addr != "" && !strings.Contains(addr, "(") {
			addr = "tcp(" + addr + ")"
		}
		native = addr + native[slash:]
	}
	cfg, err := mysql.ParseDSN(native)
	if err != nil {
		// The driver's errors name the part at fault without echoing it.
		return nil, fmt.Errorf("mysql dsn: %v (want a mysql://host:3306/db URL with the user and password before the host, or user:password@tcp(host:3306)/db)", err)
	}
	if fromURL {
		cfg.User, cfg.Passwd = user, pass
	}
	if cfg.DBName == "" {
		return nil, errors.New("mysql dsn: no database named after the /")
	}
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	mode, given := cfg.Params["sql_mode"]
	if !given {
		// Keep the server's modes and add strictness.
		cfg.Params["sql_mode"] = "CONCAT(@@sql_mode, '," + strictMode + "')"
	} else if m := strings.ToUpper(mode); !strings.Contains(m, strictMode) && !strings.Contains(m, "TRADITIONAL") {
		return nil, fmt.Errorf("mysql dsn: sql_mode=%s leaves out %s: without it a value a column cannot hold is truncated or coerced instead of rejecting its message", mode, strictMode)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = mysqlDialTimeout
	}
	// The driver's own logger writes to stderr; its errors are returned
	// to the sink anyway.
	cfg.Logger = mysqlQuiet{}
	return cfg, nil
}

type mysqlQuiet struct{}

func (mysqlQuiet) Print(...any) {}

// MySQL server error numbers the sink tells apart (MySQL and MariaDB share
// them; MariaDB's own are 19xx and 4xxx).
const (
	myAccessDenied       = 1045 // ER_ACCESS_DENIED_ERROR: wrong user or password
	myDBAccessDenied     = 1044 // ER_DBACCESS_DENIED_ERROR
	myTableAccessDenied  = 1142 // ER_TABLEACCESS_DENIED_ERROR
	myColumnAccessDenied = 1143 // ER_COLUMNACCESS_DENIED_ERROR
	mySpecificAccess     = 1227 // ER_SPECIFIC_ACCESS_DENIED_ERROR
	myUnknownDB          = 1049 // ER_BAD_DB_ERROR
	myUnknownTable       = 1146 // ER_NO_SUCH_TABLE
	myUnknownColumn      = 1054 // ER_BAD_FIELD_ERROR
	mySyntax             = 1064 // ER_PARSE_ERROR
	myColumnCount        = 1136 // ER_WRONG_VALUE_COUNT_ON_ROW
	myNoSuchFunction     = 1305 // ER_SP_DOES_NOT_EXIST

	myDeadlock         = 1213 // ER_LOCK_DEADLOCK: the whole transaction was rolled back
	myLockWait         = 1205 // ER_LOCK_WAIT_TIMEOUT
	myTooManyConns     = 1040 // ER_CON_COUNT_ERROR
	myUserConns        = 1203 // ER_TOO_MANY_USER_CONNECTIONS
	myShutdown         = 1053 // ER_SERVER_SHUTDOWN
	myInterrupted      = 1317 // ER_QUERY_INTERRUPTED
	myStatementTimeout = 1969 // MariaDB ER_STATEMENT_TIMEOUT (max_statement_time)
	myExecutionTimeout = 3024 // MySQL ER_QUERY_TIMEOUT (max_execution_time)
	myConnKilled       = 1927 // MariaDB ER_CONNECTION_KILLED
	myOutOfMemory      = 1037 // ER_OUTOFMEMORY
	myOutOfSortMemory  = 1038 // ER_OUT_OF_SORTMEMORY
	myOutOfResources   = 1041 // ER_OUT_OF_RESOURCES
	myDiskFull         = 1021 // ER_DISK_FULL
	myTableFull        = 1114 // ER_RECORD_FILE_FULL
	myReadOnly         = 1290 // ER_OPTION_PREVENTS_STATEMENT (--read-only: a replica, or a failover under way)
	myReadOnlyTx       = 1792 // ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION
	myReadOnlyMode     = 1836 // ER_READ_ONLY_MODE
	myAbortedConn      = 1152 // ER_ABORTING_CONNECTION
	myNetRead          = 1158 // ER_NET_READ_ERROR (1158-1161: network errors)
	myNetWriteTimeout  = 1161 // ER_NET_WRITE_INTERRUPTED
	myTooManyTx        = 1637 // ER_TOO_MANY_CONCURRENT_TRXS
	myLockTableFull    = 1206 // ER_LOCK_TABLE_FULL
	myXADeadlock       = 1614 // ER_XA_RBDEADLOCK
	myIdleDisconnect   = 4031 // MySQL 8 ER_CLIENT_INTERACTION_TIMEOUT

	// Errors of one message's values under strict mode (Reject, counted by
	// the breaker but not systemic): data too long (1406), out of range
	// (1264), incorrect value (1366), NULL into NOT NULL (1048), and their
	// kin. Every server error not listed as retryable rejects.
	myDataTooLong  = 1406
	myOutOfRange   = 1264
	myIncorrectVal = 1366
	myNullValue    = 1048
)

// classifyMySQL decides a server error's outcome: Retry for the lost or
// refused connections, lock conflicts, timeouts, resource shortages and
// read-only servers listed above (and any SQLSTATE of class 08
// "connection exception" or 40 "transaction rollback"), Reject for every
// other error the server answers: a refusal of this message's values, or
// of the statement itself (which FailureClass marks systemic).
func classifyMySQL(e *mysql.MySQLError) pacer.Outcome {
	switch e.Number {
	case myDeadlock, myLockWait, myTooManyConns, myUserConns, myShutdown, myInterrupted,
		myStatementTimeout, myExecutionTimeout, myConnKilled, myOutOfMemory, myOutOfSortMemory,
		myOutOfResources, myDiskFull, myTableFull, myReadOnly, myReadOnlyTx, myReadOnlyMode,
		myAbortedConn, myTooManyTx, myLockTableFull, myXADeadlock, myIdleDisconnect:
		return pacer.Retry
	}
	if e.Number >= myNetRead && e.Number <= myNetWriteTimeout {
		return pacer.Retry
	}
	if class := string(e.SQLState[:2]); class == "08" || class == "40" {
		return pacer.Retry
	}
	return pacer.Reject
}

// mysqlOverloaded: too many connections, a lock wait or statement timeout,
// or a server out of memory: the database is saturated.
func mysqlOverloaded(e *mysql.MySQLError) bool {
	switch e.Number {
	case myTooManyConns, myUserConns, myLockWait, myStatementTimeout, myExecutionTimeout,
		myOutOfMemory, myOutOfResources, myTooManyTx:
		return true
	}
	return false
}

// mysqlSystemic reports whether a server error is the pipeline's, not the
// message's: an unknown table, column, database or function, a denied
// access, a statement that does not parse or whose values do not match
// its columns.
func mysqlSystemic(e *mysql.MySQLError) bool {
	switch e.Number {
	case myUnknownTable, myUnknownColumn, myUnknownDB, myAccessDenied, myDBAccessDenied,
		myTableAccessDenied, myColumnAccessDenied, mySpecificAccess, mySyntax, myColumnCount,
		myNoSuchFunction:
		return true
	}
	return false
}

// mysqlClass is the breaker's failure class of a server error.
func mysqlClass(e *mysql.MySQLError) string {
	return "mysql " + strconv.Itoa(int(e.Number))
}
