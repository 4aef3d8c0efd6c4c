package sqlsink_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/sinks/sqlsink"
)

func Example() {
	dir, _ := os.MkdirTemp("", "sqlsink-example")
	defer os.RemoveAll(dir)

	s, err := sqlsink.New(sqlsink.Config{Driver: "sqlite", DSN: filepath.Join(dir, "pacer.db"), Table: "events"})
	if err != nil {
		panic(err)
	}
	defer s.Close()
	ctx := context.Background()
	if err := sqlsink.CreateExampleSchema(ctx, s.DB(), s.Dialect(), "events"); err != nil {
		panic(err)
	}

	batch := []*pacer.Message{
		{ID: "orders/0/1", Value: []byte(`{"n":1}`), Topic: "orders"},
		{ID: "orders/0/2", Value: []byte("\xff\xfe"), Topic: "orders"}, // not text: rejected alone
		{ID: "orders/0/1", Value: []byte(`{"n":1}`), Topic: "orders"},  // redelivered: written once
	}
	results := make([]pacer.Result, len(batch))
	s.Deliver(ctx, batch, results)
	for i, r := range results {
		fmt.Println(batch[i].ID, r.Outcome)
	}
	var n int
	_ = s.DB().QueryRow(`SELECT count(*) FROM events`).Scan(&n)
	fmt.Println("rows", n)
	// Output:
	// orders/0/1 delivered
	// orders/0/2 reject
	// orders/0/1 delivered
	// rows 1
}
