package binarytest

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/twmb/franz-go/pkg/kgo"
	_ "modernc.org/sqlite"

	"github.com/pacer-dev/pacer/internal/app/testapi"
	"github.com/pacer-dev/pacer/internal/testsupport/binharness"
	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
)

// Hostile messages, end to end through the binary. The unit-level proofs
// live with the adapters (see RELIABILITY.md): sinks/httpsink
// TestHeaderInjectionRefused, TestBodyTemplate and FuzzPrepare; sinks/sqlsink
// TestBadInputIsPermanent and FuzzArgs.

// publishMsg publishes one message with an optional tenant header.
func publishMsg(t *testing.T, js jetstream.JetStream, subject string, data []byte, tenant string) {
	t.Helper()
	m := nats.NewMsg(subject)
	m.Data = data
	if tenant != "" {
		m.Header.Set("tenant", tenant)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.PublishMsg(ctx, m); err != nil {
		t.Fatal(err)
	}
}

// TestHostileHTTP: a 512 KiB value, invalid UTF-8 and non-JSON values reach
// the API byte for byte; a Kafka record header with CR/LF, used by a
// templated HTTP header, is refused and dead-lettered with its reason, never
// sent; the message after them is delivered (nothing stalls). Kafka, because
// its headers are bytes: NATS headers cannot carry CR/LF at all.
func TestHostileHTTP(t *testing.T) {
	k := testenv.StartKafka(t)
	topic := testenv.UniqueName(t, "hostile")
	huge := append([]byte(`{"n":0,"pad":"`), bytes.Repeat([]byte("x"), 512<<10)...)
	huge = append(huge, `"}`...)
	values := []struct {
		data   []byte
		tenant string
	}{
		{huge, "t0"},
		{[]byte("\xff\xfe\xfd not utf-8 \xc3\x28"), "t1"},
		{[]byte(`<<not json {"n": >>`), "t2"},
		{[]byte(`{"n":3,"evil":true}`), "acme\r\nX-Injected: yes"},
		{[]byte(`{"n":4,"evil":true}`), "acme\nX-Injected: yes"},
		{[]byte(`{"n":5}`), "t5"},
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers()...), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(2<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, v := range values {
		r := &kgo.Record{Value: v.data, Headers: []kgo.RecordHeader{{Key: "tenant", Value: []byte(v.tenant)}}}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	api := testapi.New(testapi.Config{})
	t.Cleanup(api.Close)
	admin := binharness.FreeAddr(t)
	dlq := filepath.Join(t.TempDir(), "dlq.jsonl")
	cfg := kafkaConfig(k.Brokers(), topic, topic+"-g", api.URL(), admin, "rate: 100/s\nburst: 10\nqueue_size: 10\nmax_in_flight: 2",
		"dead_letter:\n  type: file\n  path: "+dlq+"\n")
	cfg = strings.Replace(cfg, "    timeout: 5s\n", "    timeout: 5s\n    headers:\n      X-Tenant: '{{index .Headers \"tenant\"}}'\n", 1)
	w := startWorker(t, binharness.WriteFile(t, "hostile.yaml", cfg), admin)
	binharness.Eventually(t, 30*time.Second, "every message settled", func() bool {
		st, ok := w.status()
		return ok && st.Engine.Acked+st.Engine.Terminated >= uint64(len(values))
	})
	st, _ := w.status()
	if code := w.Stop(t, time.Minute); code != 0 {
		t.Errorf("SIGTERM: exit %d want 0", code)
	}
	checkArrivals(t, api, 100, 10, 0, jitterSlack(100))
	got := map[string]bool{}
	for _, r := range api.Accepted() {
		got[string(r.Body)] = true
		if r.Header.Get("X-Injected") != "" || strings.ContainsAny(r.Header.Get("X-Tenant"), "\r\n") {
			t.Errorf("an injected header reached the API: %v", r.Header)
		}
	}
	for i, v := range values {
		evil := strings.ContainsAny(v.tenant, "\r\n")
		if got[string(v.data)] == evil {
			t.Errorf("message %d (tenant %q, %d bytes): accepted=%v want %v", i, v.tenant, len(v.data), got[string(v.data)], !evil)
		}
	}
	lines, _ := os.ReadFile(dlq)
	if n := bytes.Count(lines, []byte("\n")); n != 2 || !bytes.Contains(bytes.ToLower(lines), []byte("header")) {
		t.Errorf("dead-letter file: %d lines want 2, with a reason naming the header:\n%s", n, lines)
	}
	t.Logf("RESULT hostile http: %d accepted verbatim (incl. 512 KiB, invalid UTF-8, non-JSON), %d header injections dead-lettered; acked %d terminated %d",
		len(api.Accepted()), bytes.Count(lines, []byte("\n")), st.Engine.Acked, st.Engine.Terminated)
}

// sqlHostile are values that would do harm if spliced into SQL text.
var sqlHostile = []string{
	`'); DROP TABLE %[1]s; --`,
	`" OR 1=1 --`,
	`Robert'); DELETE FROM %[1]s WHERE ('1'='1`,
	`\'; SELECT pg_sleep(30); --`,
	`$1 ?1 :name @p1 %%s`,
	"multi\nline\ttab ünïcødé ✓",
}

// TestHostileSQL: SQL injection text lands verbatim as a bound parameter,
// in SQLite and (when PACER_TEST_POSTGRES_DSN or Docker gives one)
// PostgreSQL; the table is intact afterwards.
func TestHostileSQL(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		dsn := filepath.Join(t.TempDir(), "chaos.db")
		hostileSQL(t, "sqlite", "sqlite", dsn)
	})
	t.Run("postgres", func(t *testing.T) {
		dsn := testenv.Postgres(t)
		hostileSQL(t, "postgres", "pgx", dsn)
	})
}

func hostileSQL(t *testing.T, driver, goDriver, dsn string) {
	url := testenv.NATS(t)
	js, stream := natsStream(t, url)
	table := strings.ToLower(testenv.UniqueName(t, "chaos"))
	var want []string
	for _, v := range sqlHostile {
		want = append(want, fmt.Sprintf(v, table))
	}
	for _, v := range want {
		publishMsg(t, js, stream+".in", []byte(v), "")
	}
	db, err := sql.Open(goDriver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = db.Exec(`DROP TABLE IF EXISTS "` + table + `"`)
		db.Close()
	})
	admin := binharness.FreeAddr(t)
	cfg := natsConfig(url, stream, "http://unused", admin, "rate: 100/s\nburst: 10\nqueue_size: 10\nmax_in_flight: 2", "")
	cfg = strings.Replace(cfg, "  type: http\n  http:\n    url: http://unused/chaos\n    timeout: 5s\n",
		fmt.Sprintf("  type: sql\n  sql:\n    driver: %s\n    dsn: %q\n    table: %s\n    create_table: true\n", driver, dsn, table), 1)
	w := startWorker(t, binharness.WriteFile(t, "sql.yaml", cfg), admin)
	binharness.Eventually(t, 30*time.Second, "every row acked", func() bool {
		st, ok := w.status()
		return ok && st.Engine.Acked >= uint64(len(want))
	})
	if code := w.Stop(t, time.Minute); code != 0 {
		t.Errorf("SIGTERM: exit %d want 0", code)
	}
	rows, err := db.Query(`SELECT payload FROM "` + table + `"`)
	if err != nil {
		t.Fatalf("the table is gone or unreadable: %v", err)
	}
	defer rows.Close()
	got := map[string]bool{}
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			t.Fatal(err)
		}
		got[p] = true
	}
	for _, v := range want {
		if !got[v] {
			t.Errorf("payload %q not stored verbatim (rows: %d)", v, len(got))
		}
	}
	t.Logf("RESULT hostile sql %s: %d injection strings stored verbatim, table intact", driver, len(got))
}
