package redact_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"syscall"
	"testing"

	"github.com/pacer-dev/pacer/internal/base/redact"
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

// TestWrapKeepsTheChain: a wrapped error's text loses the secrets and the
// URL credentials, and errors.Is and errors.As still find its cause.
func TestWrapKeepsTheChain(t *testing.T) {
	cause := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	err := fmt.Errorf("connect postgres://app:pw@db/x token tok-SECRET-4711: %w", cause)
	for _, tc := range []struct {
		name string
		got  error
		want string
	}{
		{"Wrap", redact.Wrap(err), "connect postgres://***@db/x token tok-SECRET-4711: dial tcp: connection refused"},
		{"Redactor.Wrap", redact.New("tok-SECRET-4711").Wrap(err), "connect postgres://***@db/x token ***: dial tcp: connection refused"},
		{"nil Redactor", (*redact.Redactor)(nil).Wrap(err), "connect postgres://***@db/x token tok-SECRET-4711: dial tcp: connection refused"},
	} {
		if tc.got.Error() != tc.want {
			t.Errorf("%s: text %q, want %q", tc.name, tc.got, tc.want)
		}
		if !errors.Is(tc.got, syscall.ECONNREFUSED) {
			t.Errorf("%s: errors.Is(ECONNREFUSED) = false: the chain is lost", tc.name)
		}
		var op *net.OpError
		if !errors.As(tc.got, &op) || op != cause {
			t.Errorf("%s: errors.As(*net.OpError) = %v: the chain is lost", tc.name, op)
		}
	}
	clean := errors.New("nothing secret")
	if got := redact.Wrap(clean); got != clean {
		t.Errorf("Wrap(clean) = %#v, want the error itself", got)
	}
	if got := redact.New("x-secret").Wrap(nil); got != nil {
		t.Errorf("Wrap(nil) = %v, want nil", got)
	}
}
