package sqlsink

import (
	"context"
	"strings"

	"github.com/pacer-dev/pacer/pacer"
)

// maxPlaceholders is MySQL's limit on the parameters of one prepared
// statement.
const maxPlaceholders = 65535

// multiRow is an INSERT whose VALUES tuple can be repeated, so that a batch
// goes in one statement: head "INSERT INTO t (a, b) VALUES ", tuple
// "(?, ?)", tail " ON DUPLICATE KEY UPDATE ..." (or ""). Built once per
// sink; the statement for n rows is cached by n.
type multiRow struct {
	head, tuple, tail string
	params            int // placeholders in tuple
}

// splitMultiRow recognises a statement that can take several rows: INSERT
// or REPLACE ... VALUES (tuple) with every placeholder inside the one tuple,
// followed by nothing, by ON DUPLICATE KEY UPDATE (without placeholders) or
// by a row alias (AS new ...). Anything else (INSERT ... SELECT, several
// tuples, comments, placeholders outside the tuple, a statement it cannot
// read) is run once per message, which is always correct, only slower.
func splitMultiRow(stmt string, params int) (multiRow, bool) {
	s := strings.TrimRight(strings.TrimSpace(stmt), "; \t\n")
	if params == 0 || !(hasPrefixFold(s, "INSERT") || hasPrefixFold(s, "REPLACE")) {
		return multiRow{}, false
	}
	// Walk the statement outside quotes, finding the VALUES keyword, its
	// tuple and every placeholder.
	valuesAt, open, close, depth, inTuple, outside := -1, -1, -1, 0, 0, 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'' || c == '"' || c == '`':
			j := i + 1
			for j < len(s) && s[j] != c {
				if s[j] == '\\' && c != '`' {
					j++
				}
				j++
			}
			if j >= len(s) {
				return multiRow{}, false // unterminated quote
			}
			i = j
		case c == '#', c == '-' && i+1 < len(s) && s[i+1] == '-', c == '/' && i+1 < len(s) && s[i+1] == '*', c == ';':
			return multiRow{}, false
		case c == '?':
			if open >= 0 && close < 0 {
				inTuple++
			} else {
				outside++
			}
		case valuesAt < 0 && (c == 'V' || c == 'v') && hasPrefixFold(s[i:], "VALUES") &&
			(i == 0 || !isIdent(s[i-1])) && (i+6 == len(s) || !isIdent(s[i+6])):
			valuesAt = i
			j := i + 6
			for j < len(s) && (s[j] == ' ' || s[j] == '\t' || s[j] == '\n' || s[j] == '\r') {
				j++
			}
			if j >= len(s) || s[j] != '(' {
				return multiRow{}, false // VALUES ROW(...) and the like
			}
			open, depth = j, 1
			i = j
		case c == '(' && open >= 0 && close < 0:
			depth++
		case c == ')' && open >= 0 && close < 0:
			depth--
			if depth == 0 {
				close = i
			}
		}
	}
	if close < 0 || outside > 0 || inTuple != params {
		return multiRow{}, false
	}
	tail := s[close+1:]
	t := strings.Join(strings.Fields(tail), " ")
	if t != "" && !hasPrefixFold(t, "ON DUPLICATE KEY UPDATE ") && !hasPrefixFold(t, "AS ") {
		return multiRow{}, false
	}
	return multiRow{head: s[:open], tuple: s[open : close+1], tail: tail, params: params}, true
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

func isIdent(c byte) bool {
	return c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// rowsPerStatement is how many rows one statement takes within MySQL's
// placeholder limit.
func (m multiRow) rowsPerStatement() int {
	return max(1, maxPlaceholders/m.params)
}

// statement returns the insert of n rows.
func (m multiRow) statement(n int) string {
	var b strings.Builder
	b.Grow(len(m.head) + n*(len(m.tuple)+2) + len(m.tail))
	b.WriteString(m.head)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(m.tuple)
	}
	b.WriteString(m.tail)
	return b.String()
}

// multiRowTx is the first pass on MySQL for a statement that takes several
// rows: BEGIN, the batch as multi-row inserts of up to rowsPerStatement
// rows each (one round trip per statement), COMMIT. It reports false, and
// writes nothing into results, when a statement failed for good (a value
// a column refuses fails the whole multi-row statement), so the caller
// reruns the batch one statement per message with savepoints and rejects
// only the messages at fault.
func (s *Sink) multiRowTx(ctx context.Context, args [][]any, todo []int, results []pacer.Result) bool {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		failAll(ctx, results, todo, err)
		return true
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	per := s.multi.rowsPerStatement()
	for lo := 0; lo < len(todo); lo += per {
		hi := min(lo+per, len(todo))
		flat := make([]any, 0, (hi-lo)*s.multi.params)
		for _, i := range todo[lo:hi] {
			flat = append(flat, args[i]...)
		}
		if _, err := tx.ExecContext(ctx, s.multi.statement(hi-lo), flat...); err != nil {
			if Classify(err) == pacer.Reject && ctx.Err() == nil {
				return false
			}
			markRetry(results, todo, err)
			return true
		}
	}
	if err := tx.Commit(); err != nil {
		markRetry(results, todo, err)
		return true
	}
	for _, i := range todo {
		results[i] = pacer.Result{Outcome: pacer.Delivered}
	}
	return true
}
