package sqlsink

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// ExampleArgs maps the example statement's placeholders.
var ExampleArgs = []string{"id", "key", "value", "topic", "partition", "offset"}

// ExampleSchema returns the DDL of the example table: the message ID is the
// primary key, so with ExampleStatement's ON CONFLICT DO NOTHING a
// redelivered message is never written twice.
//
// PostgreSQL:
//
//	CREATE TABLE IF NOT EXISTS "pacer_messages" (
//	    message_id  text PRIMARY KEY,
//	    msg_key     text,
//	    payload     text NOT NULL,
//	    topic       text NOT NULL DEFAULT '',
//	    part        integer NOT NULL DEFAULT 0,
//	    msg_offset  bigint NOT NULL DEFAULT 0,
//	    received_at timestamptz NOT NULL DEFAULT now()
//	)
//
// MySQL and MariaDB (the ID as exact bytes, so that IDs differing only in
// case or trailing spaces never collide and drop a message as a
// duplicate):
//
//	CREATE TABLE IF NOT EXISTS `pacer_messages` (
//	    message_id  VARBINARY(512) NOT NULL PRIMARY KEY,
//	    msg_key     TEXT,
//	    payload     LONGTEXT NOT NULL,
//	    topic       VARCHAR(255) NOT NULL DEFAULT '',
//	    part        INT NOT NULL DEFAULT 0,
//	    msg_offset  BIGINT NOT NULL DEFAULT 0,
//	    received_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)
//	) CHARACTER SET utf8mb4
//
// SQLite:
//
//	CREATE TABLE IF NOT EXISTS "pacer_messages" (
//	    message_id  TEXT PRIMARY KEY NOT NULL,
//	    msg_key     TEXT,
//	    payload     TEXT NOT NULL,
//	    topic       TEXT NOT NULL DEFAULT '',
//	    part        INTEGER NOT NULL DEFAULT 0,
//	    msg_offset  INTEGER NOT NULL DEFAULT 0,
//	    received_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
//	)
func ExampleSchema(d Dialect, table string) (string, error) {
	q, err := quoteTable(d, table)
	if err != nil {
		return "", err
	}
	switch d {
	case MySQL:
		return "CREATE TABLE IF NOT EXISTS " + q + ` (
    message_id  VARBINARY(512) NOT NULL PRIMARY KEY,
    msg_key     TEXT,
    payload     LONGTEXT NOT NULL,
    topic       VARCHAR(255) NOT NULL DEFAULT '',
    part        INT NOT NULL DEFAULT 0,
    msg_offset  BIGINT NOT NULL DEFAULT 0,
    received_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)
) CHARACTER SET utf8mb4`, nil
	case Postgres:
		return `CREATE TABLE IF NOT EXISTS ` + q + ` (
    message_id  text PRIMARY KEY,
    msg_key     text,
    payload     text NOT NULL,
    topic       text NOT NULL DEFAULT '',
    part        integer NOT NULL DEFAULT 0,
    msg_offset  bigint NOT NULL DEFAULT 0,
    received_at timestamptz NOT NULL DEFAULT now()
)`, nil
	case SQLite:
		return `CREATE TABLE IF NOT EXISTS ` + q + ` (
    message_id  TEXT PRIMARY KEY NOT NULL,
    msg_key     TEXT,
    payload     TEXT NOT NULL,
    topic       TEXT NOT NULL DEFAULT '',
    part        INTEGER NOT NULL DEFAULT 0,
    msg_offset  INTEGER NOT NULL DEFAULT 0,
    received_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
)`, nil
	}
	return "", fmt.Errorf("sqlsink: unknown dialect %q", d)
}

// ExampleStatement returns the idempotent insert into the example table,
// with ExampleArgs as its arguments. On MySQL it is ON DUPLICATE KEY UPDATE
// message_id = message_id, not INSERT IGNORE: IGNORE would also turn a
// value a column refuses into a warning and store it altered.
func ExampleStatement(d Dialect, table string) (string, error) {
	q, err := quoteTable(d, table)
	if err != nil {
		return "", err
	}
	const cols = ` (message_id, msg_key, payload, topic, part, msg_offset) VALUES `
	switch d {
	case MySQL:
		return `INSERT INTO ` + q + cols + `(?, ?, ?, ?, ?, ?) ON DUPLICATE KEY UPDATE message_id = message_id`, nil
	case Postgres:
		return `INSERT INTO ` + q + cols + `($1, $2, $3, $4, $5, $6) ON CONFLICT (message_id) DO NOTHING`, nil
	case SQLite:
		return `INSERT INTO ` + q + cols + `(?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (message_id) DO NOTHING`, nil
	}
	return "", fmt.Errorf("sqlsink: unknown dialect %q", d)
}

// CreateExampleSchema creates the example table if it does not exist.
func CreateExampleSchema(ctx context.Context, db *sql.DB, d Dialect, table string) error {
	ddl, err := ExampleSchema(d, table)
	if err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, ddl); err != nil {
		return fmt.Errorf("sqlsink: creating %s: %w", table, err)
	}
	return nil
}

// quoteTable validates a table name, optionally schema-qualified, made of
// letters, digits and underscores, and quotes each part: double quotes,
// or backticks on MySQL (where "..." is a string unless ANSI_QUOTES).
func quoteTable(d Dialect, name string) (string, error) {
	quote := `"`
	if d == MySQL {
		quote = "`"
	}
	parts := strings.Split(name, ".")
	if len(parts) > 2 {
		return "", fmt.Errorf("sqlsink: table name %q: at most schema.table", name)
	}
	for i, p := range parts {
		if p == "" || len(p) > 63 || (p[0] >= '0' && p[0] <= '9') {
			return "", fmt.Errorf("sqlsink: table name %q is not a plain identifier", name)
		}
		for _, c := range p {
			if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
				return "", fmt.Errorf("sqlsink: table name %q: only letters, digits and _ are allowed", name)
			}
		}
		parts[i] = quote + p + quote
	}
	return strings.Join(parts, "."), nil
}
