package testenv

import (
	"database/sql"
	"testing"

	_ "github.com/go-sql-driver/mysql" // driver "mysql"
)

func TestMySQL(t *testing.T) {
	dsn := MySQL(t) // skips, saying why, when there is none
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var one int
	if err := db.QueryRow("SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("SELECT 1 = %d, %v", one, err)
	}
}

func TestRedactMySQL(t *testing.T) {
	for in, want := range map[string]string{
		"u:secret@tcp(h:3306)/db": "u:xxxxx@tcp(h:3306)/db",
		"root@tcp(h:3306)/test":   "root@tcp(h:3306)/test",
		"not a dsn":               "not a dsn",
	} {
		if got := redactMySQL(in); got != want {
			t.Errorf("redactMySQL(%q) = %q want %q", in, got, want)
		}
	}
}
