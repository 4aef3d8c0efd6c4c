package sqlsink

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pacer-dev/pacer/pacer"
)

// benchDownstreams yields SQLite (a WAL file in a temp dir, synchronous=NORMAL
// as is usual with WAL), PostgreSQL when PACER_TEST_POSTGRES_DSN is set and
// MySQL when PACER_TEST_MYSQL_DSN is set.
func benchDownstreams(b *testing.B) map[string]*downstream {
	out := map[string]*downstream{}
	dir := b.TempDir()
	out["sqlite"] = benchDownstream(b, SQLite, "file:"+filepath.Join(dir, "bench.db")+"?_pragma=synchronous(NORMAL)", "sqlite")
	if dsn := os.Getenv("PACER_TEST_POSTGRES_DSN"); dsn != "" {
		out["postgres"] = benchDownstream(b, Postgres, dsn, "pgx")
	}
	if dsn := os.Getenv("PACER_TEST_MYSQL_DSN"); dsn != "" {
		out["mysql"] = benchDownstream(b, MySQL, dsn, "mysql")
	}
	return out
}

func benchDownstream(b *testing.B, d Dialect, dsn, driver string) *downstream {
	ds := &downstream{dialect: d, dsn: dsn, table: uniqueTable("bench")}
	ctlDSN := dsn
	if d == SQLite {
		ctlDSN = sqliteDefaults(dsn)
	}
	ctl, err := sql.Open(driver, ctlDSN)
	if err != nil {
		b.Fatal(err)
	}
	ds.ctl = ctl
	if err := CreateExampleSchema(context.Background(), ctl, d, ds.table); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_, _ = ctl.Exec(`DROP TABLE IF EXISTS ` + ds.q(ds.table))
		ctl.Close()
	})
	return ds
}

var benchSeq int

func benchBatch(n int) []*pacer.Message {
	out := make([]*pacer.Message, n)
	for i := range out {
		benchSeq++
		out[i] = &pacer.Message{ID: fmt.Sprintf("bench/%d", benchSeq), Key: []byte("k"), Topic: "bench",
			Value: []byte(`{"user":{"name":"Ann","id":12345},"amount":42.5,"items":[1,2,3]}`), Offset: int64(benchSeq)}
	}
	return out
}

// BenchmarkDeliver: rows/s through the sink, one message per Deliver call
// (autocommit) and 100 per call (one transaction).
func BenchmarkDeliver(b *testing.B) {
	for name, ds := range benchDownstreams(b) {
		for _, batch := range []int{1, 100} {
			b.Run(fmt.Sprintf("%s/batch%d", name, batch), func(b *testing.B) {
				s, err := New(Config{Driver: map[Dialect]string{Postgres: "pgx", SQLite: "sqlite", MySQL: "mysql"}[ds.dialect], DSN: ds.dsn, Table: ds.table})
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				res := make([]pacer.Result, batch)
				b.ReportAllocs()
				for b.Loop() {
					b.StopTimer()
					msgs := benchBatch(batch)
					b.StartTimer()
					s.Deliver(context.Background(), msgs, res)
					if res[0].Outcome != pacer.Delivered {
						b.Fatal(res[0].Err)
					}
				}
				b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "rows/s")
			})
		}
	}
}

// BenchmarkPeerDatabaseSQL is the floor: the same insert through bare
// database/sql, 100 rows per transaction with a prepared statement.
func BenchmarkPeerDatabaseSQL(b *testing.B) {
	for name, ds := range benchDownstreams(b) {
		b.Run(name+"/batch100", func(b *testing.B) {
			db := ds.ctl
			st, _ := ExampleStatement(ds.dialect, ds.table)
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				msgs := benchBatch(100)
				b.StartTimer()
				tx, err := db.Begin()
				if err != nil {
					b.Fatal(err)
				}
				stmt, err := tx.Prepare(st)
				if err != nil {
					b.Fatal(err)
				}
				for _, m := range msgs {
					if _, err := stmt.Exec(m.ID, string(m.Key), string(m.Value), m.Topic, int64(m.Partition), m.Offset); err != nil {
						b.Fatal(err)
					}
				}
				stmt.Close()
				if err := tx.Commit(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*100)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// BenchmarkPeerPgxBatch is the PostgreSQL ceiling for this statement: a bare
// pgx connection sending 100 inserts as one pgx.Batch in a transaction.
func BenchmarkPeerPgxBatch(b *testing.B) {
	ds, ok := benchDownstreams(b)["postgres"]
	if !ok {
		b.Skip("PACER_TEST_POSTGRES_DSN is unset")
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, ds.dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	st, _ := ExampleStatement(Postgres, ds.table)
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		msgs := benchBatch(100)
		b.StartTimer()
		tx, err := conn.Begin(ctx)
		if err != nil {
			b.Fatal(err)
		}
		batch := &pgx.Batch{}
		for _, m := range msgs {
			batch.Queue(st, m.ID, string(m.Key), string(m.Value), m.Topic, int64(m.Partition), m.Offset)
		}
		if err := tx.SendBatch(ctx, batch).Close(); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*100)/b.Elapsed().Seconds(), "rows/s")
}
