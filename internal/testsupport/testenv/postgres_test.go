package testenv

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestPostgres(t *testing.T) {
	dsn := Postgres(t) // skips, saying why, when there is none
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var one int
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("SELECT 1 = %d, %v", one, err)
	}
}

func TestRedactDSN(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u:secret@h:5432/db?sslmode=disable": "postgres://u:xxxxx@h:5432/db?sslmode=disable",
		"postgres://u@h/db":                             "postgres://u@h/db",
		"host=h user=u":                                 "host=h user=u",
	} {
		if got := redactDSN(in); got != want {
			t.Errorf("redactDSN(%q) = %q want %q", in, got, want)
		}
	}
}
