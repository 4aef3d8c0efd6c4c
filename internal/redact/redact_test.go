package redact_test

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/pacer-dev/pacer/internal/redact"
)

func TestText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain text", "plain text"},
		{"nats://user:pw@host:4222", "nats://***@host:4222"},
		{`Post "https://u:p4ss@api.example.com/v1?api_key=K3Y&x=1": dial tcp`, `Post "https://***@api.example.com/v1?api_key=***&x=***": dial tcp`},
		{"redis://:s3cret@127.0.0.1:6379/0 down", "redis://***@127.0.0.1:6379/0 down"},
		{"postgres://app:pw@db/x?sslmode=disable&password=zz", "postgres://***@db/x?sslmode=***&password=***"},
		{"host=db user=app password=s3cret dbname=x", "host=db user=app password=*** dbname=x"},
		{"host=db password='a b c' x=1", "host=db password=*** x=1"},
		{"http://api.example.com/ok", "http://api.example.com/ok"},
		{"no scheme ://here", "no scheme ://here"},
		{"dsn app:s3cret@tcp(db:3306)/orders?x=1 refused", "dsn app:***@tcp(db:3306)/orders?x=1 refused"},
		{"mysql://app:p@ss:w@tcp(db:3306)/orders", "mysql://***@tcp(db:3306)/orders"},
		{`dsn="root@unix(/run/mysqld.sock)/x" a=b:c@tcp6([::1]:3306)/y`, `dsn="root@unix(/run/mysqld.sock)/x" a=b:***@tcp6([::1]:3306)/y`},
	} {
		if got := redact.Text(tc.in); got != tc.want {
			t.Errorf("Text(%q) = %q want %q", tc.in, got, tc.want)
		}
	}
}

func TestRedactorLiteralsAndHandler(t *testing.T) {
	r := redact.New("tok-SECRET-4711", "a", "p@ss word")
	if got := r.String("bearer tok-SECRET-4711 and p%40ss+word"); got != "bearer *** and ***" {
		t.Errorf("String = %q", got)
	}
	var buf bytes.Buffer
	log := slog.New(r.Handler(slog.NewJSONHandler(&buf, nil)))
	log.With("dsn", "postgres://u:pw@h/db").Warn("failed tok-SECRET-4711",
		"err", errors.New("dial http://x:y@h?k=v"), slog.Group("g", "s", "tok-SECRET-4711"), "list", []string{"tok-SECRET-4711"}, "n", 3)
	out := buf.String()
	for _, leak := range []string{"tok-SECRET-4711", "u:pw", "x:y", "k=v"} {
		if strings.Contains(out, leak) {
			t.Errorf("log leaks %q: %s", leak, out)
		}
	}
	if !strings.Contains(out, `"n":3`) || !strings.Contains(out, `"level":"WARN"`) {
		t.Errorf("log lost fields: %s", out)
	}
}
