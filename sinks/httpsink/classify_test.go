package httpsink

import (
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/pacer-dev/pacer/internal/app/testapi"
	"github.com/pacer-dev/pacer/pacer"
)

// TestFailureClass: the class and systemic flag of every kind of failure,
// from real requests to the test API (and to a closed port).
func TestFailureClass(t *testing.T) {
	api := newAPI(t, testapi.Config{})
	plain := newSink(t, Config{URL: api.URL()})
	typo := newSink(t, Config{URL: api.URL(), Body: `{"v": {{.Valeu}}}`})
	field := newSink(t, Config{URL: api.URL(), Body: `{"v": {{.Field "a.b"}}}`})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	refused := newSink(t, Config{URL: "http://u:pw@" + closed + "/x?api_key=K3Y"})

	tests := []struct {
		name     string
		s        *Sink
		status   int
		class    string
		systemic bool
	}{
		{"401", plain, 401, "http 401", true},
		{"403", plain, 403, "http 403", true},
		{"400", plain, 400, "http 400", false},
		{"422", plain, 422, "http 422", false},
		{"template typo", typo, 0, "render template", true},
		{"missing JSON field", field, 0, "render data", false},
		{"refused", refused, 0, "http connect", true},
	}
	for _, tt := range tests {
		if tt.status != 0 {
			api.FailNext(testapi.FailStatus(tt.status), 1)
		}
		r, _ := deliver1(tt.s, msg("m", `{"x":1}`))
		if r.Outcome == pacer.Delivered {
			t.Errorf("%s: delivered", tt.name)
			continue
		}
		c, sys := tt.s.FailureClass(r.Err)
		if c != tt.class || sys != tt.systemic {
			t.Errorf("%s: FailureClass(%v) = %q, %v want %q, %v", tt.name, r.Err, c, sys, tt.class, tt.systemic)
		}
		if strings.Contains(r.Err.Error(), "pw@") || strings.Contains(r.Err.Error(), "K3Y") {
			t.Errorf("%s: error leaks the URL's credentials: %v", tt.name, r.Err)
		}
	}
	if c, _ := plain.FailureClass(errors.New("other")); c != "" {
		t.Errorf("unknown error class %q, want none", c)
	}
}

// TestConfigRefusesBadHeaderSettings: a content type with CR/LF and an
// idempotency header that is not a token fail at New, not per message.
func TestConfigRefusesBadHeaderSettings(t *testing.T) {
	for _, cfg := range []Config{
		{URL: "http://h/", ContentType: "application/json\r\nX-Evil: 1"},
		{URL: "http://h/", IdempotencyHeader: "Idem Key"},
	} {
		if _, err := New(cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("New(%+v) = %v, want ErrInvalidConfig", cfg, err)
		}
	}
	if _, err := New(Config{URL: "ftp://u:pw@h/?k=SECRETV"}); err == nil || strings.Contains(err.Error(), "pw") || strings.Contains(err.Error(), "SECRETV") {
		t.Errorf("New with a bad URL: %v (want an error without the credentials)", err)
	}
}
