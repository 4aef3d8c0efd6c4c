package binarytest

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pacer-dev/pacer/internal/app/testapi"
	"github.com/pacer-dev/pacer/internal/testsupport/binharness"
	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
)

// Systemic failures (issue: "a failure that hits every message
// dead-letters the whole backlog"): each scenario breaks the pipeline, not
// the messages, and checks, through the real binary, that nothing is
// dead-lettered, the source is paused, /readyz is 503 with the cause and
// exactly one ERROR line is logged; then fixes the fault and checks every
// message is delivered.

const systemicTail = `breaker:
  probe_initial: 200ms
  probe_max: 1s
dead_letter:
  type: file
  path: %s
admin:
  listen: %s
drain_timeout: 5s
`

func systemicHTTPConfig(natsURL, stream, apiURL, extraSink, retry, dlq, admin string) string {
	return fmt.Sprintf(`source:
  type: nats
  nats:
    url: %s
    stream: %s
shaping:
  rate: 500/s
  burst: 20
  queue_size: 50
  max_in_flight: 4
sink:
  type: http
  http:
    url: %s/orders
    timeout: 2s
%s
retry:
%s
`, natsURL, stream, apiURL, extraSink, retry) + fmt.Sprintf(systemicTail, dlq, admin)
}

// checkHeldNotDrained checks the broken state: breaker open, 0 dead
// letters (status and file), source paused for systemic_failure, /readyz
// 503 naming the class, one ERROR line.
func checkHeldNotDrained(t *testing.T, p *binharness.Proc, addr, dlq, class string) {
	t.Helper()
	binharness.Eventually(t, 30*time.Second, "breaker open on "+class, func() bool {
		st, err := binharness.Status(addr)
		if err != nil {
			return false
		}
		b, _ := st["engine"].(map[string]any)["breaker"].(map[string]any)
		return b != nil && b["open"] == true && b["class"] == class
	})
	time.Sleep(2 * time.Second) // probes keep failing meanwhile: still nothing dead-lettered
	st, err := binharness.Status(addr)
	if err != nil {
		t.Fatal(err)
	}
	if n := binharness.Num(st, "engine", "dead_lettered"); n != 0 {
		t.Errorf("dead_lettered = %v while the pipeline is broken, want 0", n)
	}
	if b, err := os.ReadFile(dlq); err == nil && len(b) > 0 {
		t.Errorf("dead-letter file holds %d bytes, want none:\n%s", len(b), b)
	}
	eng := st["engine"].(map[string]any)
	reasons := fmt.Sprint(eng["pause_reasons"])
	if eng["paused"] != true || !strings.Contains(reasons, "systemic_failure") {
		t.Errorf("paused = %v reasons %s, want paused for systemic_failure", eng["paused"], reasons)
	}
	if code, body := binharness.Readyz(addr); code != 503 || !strings.Contains(body, "systemic failure ("+class+")") {
		t.Errorf("/readyz = %d %q, want 503 naming %s", code, body, class)
	}
	if n := strings.Count(p.Stderr(), "level=ERROR"); n != 1 {
		t.Errorf("%d ERROR lines, want 1:\n%s", n, p.Stderr())
	}
}

// TestSystemicHTTP401: an expired token (401 for every request).
func TestSystemicHTTP401(t *testing.T) {
	const n = 200
	url, stream, _ := setupNATS(t, n)
	api := testapi.New(testapi.Config{})
	t.Cleanup(api.Close)
	api.SetFailure(testapi.FailStatus(401))
	addr := binharness.FreeAddr(t)
	dlq := filepath.Join(t.TempDir(), "dlq.jsonl")
	cfg := binharness.WriteFile(t, "c.yaml", systemicHTTPConfig(url, stream, api.URL(), "", "  max_attempts: 3", dlq, addr))
	p := binharness.Start(t, nil, "run", "-c", cfg)
	checkHeldNotDrained(t, p, addr, dlq, "http 401")

	api.SetFailure(testapi.FailNone)
	binharness.Eventually(t, 60*time.Second, "every message delivered after the token is fixed", func() bool {
		st, err := binharness.Status(addr)
		return err == nil && binharness.Num(st, "engine", "acked") == n
	})
	if code, _ := binharness.Readyz(addr); code != 200 {
		t.Errorf("/readyz = %d after the fix, want 200", code)
	}
	if code := p.Stop(t, 30*time.Second); code != 0 {
		t.Errorf("exit = %d", code)
	}
	if n := strings.Count(p.Stderr(), "level=ERROR"); n != 1 {
		t.Errorf("%d ERROR lines, want 1", n)
	}
	if c := distinctKeys(api.Accepted()); c != n {
		t.Errorf("API accepted %d distinct, want %d", c, n)
	}
	checkAPIEnvelope(t, api, cfg) // the held messages and the probes too
}

// TestSystemicTemplateError: a body template with a misspelt field fails
// every message; the fix is a corrected config and a restart.
func TestSystemicTemplateError(t *testing.T) {
	const n = 100
	url, stream, _ := setupNATS(t, n)
	api := testapi.New(testapi.Config{})
	t.Cleanup(api.Close)
	addr := binharness.FreeAddr(t)
	dlq := filepath.Join(t.TempDir(), "dlq.jsonl")
	bad := binharness.WriteFile(t, "bad.yaml", systemicHTTPConfig(url, stream, api.URL(), `    body: '{"v": {{.Valeu}}}'`, "  max_attempts: 3", dlq, addr))
	p := binharness.Start(t, nil, "run", "-c", bad)
	checkHeldNotDrained(t, p, addr, dlq, "render template")
	if code := p.Stop(t, 30*time.Second); code != 0 {
		t.Errorf("exit = %d", code)
	}

	good := binharness.WriteFile(t, "good.yaml", systemicHTTPConfig(url, stream, api.URL(), `    body: '{"v": {{.Value}}}'`, "  max_attempts: 3", dlq, addr))
	p2 := binharness.Start(t, nil, "run", "-c", good)
	binharness.Eventually(t, 60*time.Second, "every message delivered after the fix", func() bool {
		st, err := binharness.Status(addr)
		return err == nil && binharness.Num(st, "engine", "acked") == n
	})
	p2.Stop(t, 30*time.Second)
	if c := distinctKeys(api.Accepted()); c != n {
		t.Errorf("API accepted %d distinct, want %d", c, n)
	}
	if b, err := os.ReadFile(dlq); err == nil && len(b) > 0 {
		t.Errorf("dead letters after the fix:\n%s", b)
	}
	checkAPIEnvelope(t, api, good) // the broken run sent nothing
}

// TestSystemicRefusedConnection: the API refuses connections (down for
// longer than the retries last): retries warn, then the breaker holds
// everything; when the API is back, everything is delivered.
func TestSystemicRefusedConnection(t *testing.T) {
	const n = 100
	url, stream, _ := setupNATS(t, n)
	api := testapi.New(testapi.Config{})
	t.Cleanup(api.Close)
	proxy := testenv.NewTCPProxy(t, strings.TrimPrefix(api.URL(), "http://"))
	proxy.Stop()
	addr := binharness.FreeAddr(t)
	dlq := filepath.Join(t.TempDir(), "dlq.jsonl")
	cfg := binharness.WriteFile(t, "c.yaml", systemicHTTPConfig(url, stream, "http://"+proxy.Addr(), "",
		"  max_attempts: 5\n  initial_backoff: 10ms\n  max_backoff: 50ms", dlq, addr))
	p := binharness.Start(t, nil, "run", "-c", cfg)
	checkHeldNotDrained(t, p, addr, dlq, "http connect")
	if !strings.Contains(p.Stderr(), "retry burst") {
		t.Errorf("no WARN about the retries:\n%s", p.Stderr())
	}

	if err := proxy.Start(); err != nil {
		t.Fatal(err)
	}
	binharness.Eventually(t, 60*time.Second, "every message delivered once the API is back", func() bool {
		st, err := binharness.Status(addr)
		return err == nil && binharness.Num(st, "engine", "acked") == n
	})
	p.Stop(t, 30*time.Second)
	if c := distinctKeys(api.Accepted()); c != n {
		t.Errorf("API accepted %d distinct, want %d", c, n)
	}
	checkAPIEnvelope(t, api, cfg) // everything held goes out paced once the API is back
}

// TestSystemicPostgresRenamedTable: the target table is renamed away
// (42P01 for every insert) and back.
func TestSystemicPostgresRenamedTable(t *testing.T) {
	dsn := testenv.Postgres(t)
	systemicRenamedTable(t, "postgres", "pgx", dsn, `"`, "sqlstate 42P01")
}

// TestSystemicMySQLRenamedTable: the same on MySQL/MariaDB (1146 "table
// doesn't exist" is systemic): held, not dead-lettered, all delivered once
// the table is back (real MariaDB, PACER_TEST_MYSQL_DSN; skipped with the
// reason when unset).
func TestSystemicMySQLRenamedTable(t *testing.T) {
	dsn := testenv.MySQL(t)
	systemicRenamedTable(t, "mysql", "mysql", dsn, "`", "mysql 1146")
}

// systemicRenamedTable renames the sink's table away once the first
// messages are in: the next ones are held with the breaker open on class
// (checkHeldNotDrained), and all are delivered once it is renamed back.
func systemicRenamedTable(t *testing.T, driver, sqlDriver, dsn, quote, class string) {
	const n = 120
	url, stream, js := setupNATS(t, n)
	table := testenv.UniqueName(t, "pacer_sys")
	q := func(name string) string { return quote + name + quote }
	db, err := sql.Open(sqlDriver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = db.Exec(`DROP TABLE IF EXISTS ` + q(table))
		_, _ = db.Exec(`DROP TABLE IF EXISTS ` + q(table+"_moved"))
		db.Close()
	})
	addr := binharness.FreeAddr(t)
	dlq := filepath.Join(t.TempDir(), "dlq.jsonl")
	cfg := binharness.WriteFile(t, "c.yaml", fmt.Sprintf(`source:
  type: nats
  nats:
    url: %s
    stream: %s
shaping:
  rate: 500/s
  burst: 20
  max_in_flight: 4
sink:
  type: sql
  sql:
    driver: %s
    dsn: %q
    table: %s
    create_table: true
retry:
  max_attempts: 3
`, url, stream, driver, dsn, table)+fmt.Sprintf(systemicTail, dlq, addr))
	p := binharness.Start(t, nil, "run", "-c", cfg)
	binharness.Eventually(t, 60*time.Second, "the first messages acked", func() bool {
		st, err := binharness.Status(addr)
		return err == nil && binharness.Num(st, "engine", "acked") == n
	})
	if _, err := db.Exec(`ALTER TABLE ` + q(table) + ` RENAME TO ` + q(table+"_moved")); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range n {
		if _, err := js.Publish(ctx, stream+".orders", fmt.Appendf(nil, `{"n":%d}`, n+i)); err != nil {
			t.Fatal(err)
		}
	}
	checkHeldNotDrained(t, p, addr, dlq, class)
	if _, err := db.Exec(`ALTER TABLE ` + q(table+"_moved") + ` RENAME TO ` + q(table)); err != nil {
		t.Fatal(err)
	}
	binharness.Eventually(t, 60*time.Second, "every message delivered once the table is back", func() bool {
		st, err := binharness.Status(addr)
		return err == nil && binharness.Num(st, "engine", "acked") == 2*n
	})
	p.Stop(t, 30*time.Second)
	var rows, distinct int
	if err := db.QueryRow(`SELECT count(*), count(DISTINCT message_id) FROM `+q(table)).Scan(&rows, &distinct); err != nil {
		t.Fatal(err)
	}
	if distinct != 2*n {
		t.Errorf("%d distinct rows, want %d", distinct, 2*n)
	}
}

// count is how many distinct message IDs (Idempotency-Key) the API accepted.
func distinctKeys(reqs []testapi.Request) int {
	seen := map[string]bool{}
	for _, r := range reqs {
		seen[r.IdempotencyKey] = true
	}
	return len(seen)
}

var _ jetstream.JetStream

// TestSystemicClearedByOperator: with the next probe an hour away, the
// operator brings a fixed pipeline back at once: SIGHUP closes the open
// breaker (here while the API still fails: it trips again on the next
// failure, nothing dead-lettered), and, once the API is fixed, an
// authenticated POST /resume closes it and every held message is delivered.
func TestSystemicClearedByOperator(t *testing.T) {
	const n = 100
	url, stream, _ := setupNATS(t, n)
	api := testapi.New(testapi.Config{})
	t.Cleanup(api.Close)
	api.SetFailure(testapi.FailStatus(401))
	addr := binharness.FreeAddr(t)
	dlq := filepath.Join(t.TempDir(), "dlq.jsonl")
	text := systemicHTTPConfig(url, stream, api.URL(), "", "  max_attempts: 3", dlq, addr)
	text = strings.Replace(text, "  probe_initial: 200ms\n  probe_max: 1s\n", "  probe_initial: 1h\n  probe_max: 1h\n", 1)
	text = strings.Replace(text, "admin:\n", "admin:\n  token_env: PACER_TEST_ADMIN_TOKEN\n", 1)
	cfg := binharness.WriteFile(t, "c.yaml", text)
	p := binharness.Start(t, []string{"PACER_TEST_ADMIN_TOKEN=op-token"}, "run", "-c", cfg)
	breaker := func() map[string]any {
		st, err := binharness.Status(addr)
		if err != nil {
			return nil
		}
		b, _ := st["engine"].(map[string]any)["breaker"].(map[string]any)
		return b
	}
	binharness.Eventually(t, 30*time.Second, "breaker open on http 401", func() bool {
		b := breaker()
		return b != nil && b["open"] == true
	})

	// SIGHUP while still broken: cleared, then tripped again.
	p.Signal(syscall.SIGHUP)
	binharness.Eventually(t, 30*time.Second, "reset by SIGHUP, tripped again", func() bool {
		b := breaker()
		return b != nil && b["resets"] == float64(1) && b["trips"] == float64(2) && b["open"] == true
	})
	if !strings.Contains(p.Stderr(), "cleared by the operator") {
		t.Errorf("no log line for the SIGHUP reset:\n%s", p.Stderr())
	}

	// POST /resume with the token: everything goes out now, not in an
	// hour. A wrong token changes nothing (checked while the API still
	// fails: a delivery in flight that succeeds closes the breaker by
	// itself, as it should, so nothing else may close it meanwhile).
	post := func(token string) (int, string) {
		req, _ := http.NewRequest("POST", "http://"+addr+"/resume", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := post("wrong"); code != 401 {
		t.Errorf("POST /resume with a wrong token = %d, want 401", code)
	}
	if b := breaker(); b == nil || b["open"] != true {
		t.Fatalf("breaker %v after a refused resume, want still open", b)
	}
	api.SetFailure(testapi.FailNone)
	code, body := post("op-token")
	if code != 200 {
		t.Errorf("POST /resume = %d %q, want 200", code, body)
	}
	if !strings.Contains(body, `"breaker":true`) {
		// Only a delivery in flight that succeeded in the moment between
		// the fix and the resume may have closed it first.
		if b := breaker(); b == nil || b["open"] != false || !strings.Contains(p.Stderr(), "a delivery succeeded") {
			t.Errorf("POST /resume = %q did not clear the breaker, and no delivery closed it: %v", body, b)
		}
	}
	binharness.Eventually(t, 60*time.Second, "every message delivered after the resume", func() bool {
		st, err := binharness.Status(addr)
		return err == nil && binharness.Num(st, "engine", "acked") == n
	})
	st, _ := binharness.Status(addr)
	if d := binharness.Num(st, "engine", "dead_lettered"); d != 0 {
		t.Errorf("dead_lettered = %v, want 0", d)
	}
	checkAPIEnvelope(t, api, cfg)
	if code := p.Stop(t, 30*time.Second); code != 0 {
		t.Errorf("exit = %d", code)
	}
}
