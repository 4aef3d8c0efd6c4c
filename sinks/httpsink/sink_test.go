package httpsink

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/app/testapi"
	"github.com/pacer-dev/pacer/internal/testsupport/testkit"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/sinks/sinktest"
)

// bodyTmpl puts the ID and the key in every body so the harness can tell
// which messages a request carried.
const bodyTmpl = `{"id":{{json .ID}},"key":{{json .Key}},"value":{{.Value}}}`

func harness(batch bool) sinktest.Harness {
	return sinktest.Harness{
		Features: sinktest.Features{
			Batches: true, BatchAtomic: batch,
			Transient: true, Permanent: true, Hang: true, Poison: !batch,
		},
		New: func(t *testing.T) sinktest.Instance {
			api := testapi.New(testapi.Config{})
			t.Cleanup(api.Close)
			api.RejectBodyContaining(sinktest.PoisonKey, http.StatusUnprocessableEntity)
			s, err := New(Config{URL: api.URL() + "/events", Body: bodyTmpl, Batch: batch, MaxInFlight: 8})
			if err != nil {
				t.Fatal(err)
			}
			return sinktest.Instance{
				Sink:  s,
				Close: s.Close,
				Delivered: func(t *testing.T) []string {
					var out []string
					for _, r := range api.Accepted() {
						var one struct{ ID string }
						var many []struct{ ID string }
						switch {
						case json.Unmarshal(r.Body, &many) == nil:
							for _, m := range many {
								out = append(out, m.ID)
							}
						case json.Unmarshal(r.Body, &one) == nil:
							out = append(out, one.ID)
						default:
							t.Errorf("accepted body is not JSON: %q", r.Body)
						}
					}
					return out
				},
				Fail: func(t *testing.T, f sinktest.Failure) {
					api.SetFailure(map[sinktest.Failure]testapi.Failure{
						sinktest.None: testapi.FailNone, sinktest.Transient: testapi.Fail503,
						sinktest.Permanent: testapi.Fail400, sinktest.Hang: testapi.FailHang,
					}[f])
				},
			}
		},
	}
}

func TestConformance(t *testing.T)        { sinktest.Run(t, harness(false)) }
func TestConformanceBatched(t *testing.T) { sinktest.Run(t, harness(true)) }

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func msg(id, value string) *pacer.Message {
	return &pacer.Message{ID: id, Key: []byte("k-" + id), Value: []byte(value), Headers: map[string]string{"tenant": "acme"}}
}

func newSink(t *testing.T, cfg Config) *Sink {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New(%+v): %v", cfg, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newAPI(t *testing.T, cfg testapi.Config) *testapi.Server {
	t.Helper()
	api := testapi.New(cfg)
	t.Cleanup(api.Close)
	return api
}

func deliver1(s *Sink, m *pacer.Message) (pacer.Result, pacer.Feedback) {
	res := make([]pacer.Result, 1)
	fb := s.Deliver(context.Background(), []*pacer.Message{m}, res)
	return res[0], fb
}

func TestClassifyStatus(t *testing.T) {
	api := newAPI(t, testapi.Config{})
	s := newSink(t, Config{URL: api.URL()})
	tests := []struct {
		status    int
		want      pacer.Outcome
		throttled bool
	}{
		{0, pacer.Delivered, false}, // testapi's own 200
		{201, pacer.Delivered, false},
		{204, pacer.Delivered, false},
		{301, pacer.Reject, false}, // redirects are not followed
		{400, pacer.Reject, false},
		{401, pacer.Reject, false},
		{403, pacer.Reject, false},
		{404, pacer.Reject, false},
		{408, pacer.Retry, false},
		{409, pacer.Reject, false},
		{422, pacer.Reject, false},
		{425, pacer.Retry, false},
		{429, pacer.Retry, true},
		{500, pacer.Retry, false},
		{502, pacer.Retry, false},
		{503, pacer.Retry, true},
		{504, pacer.Retry, false},
		{599, pacer.Retry, false},
	}
	for _, tt := range tests {
		if tt.status != 0 {
			api.FailNext(testapi.FailStatus(tt.status), 1)
		}
		r, fb := deliver1(s, msg("m", `{}`))
		if r.Outcome != tt.want {
			t.Errorf("status %d: outcome %v (%v) want %v", tt.status, r.Outcome, r.Err, tt.want)
		}
		if fb.Throttled != tt.throttled {
			t.Errorf("status %d: Feedback.Throttled = %v want %v", tt.status, fb.Throttled, tt.throttled)
		}
		var se *StatusError
		if tt.want != pacer.Delivered && (!errors.As(r.Err, &se) || se.Status != tt.status) {
			t.Errorf("status %d: err %v is not a *StatusError with that status", tt.status, r.Err)
		}
		if want := tt.status; want != 0 && fb.Status != want {
			t.Errorf("status %d: Feedback.Status = %d", tt.status, fb.Status)
		}
	}
}

func TestThrottleFeedbackAndStop(t *testing.T) {
	c := testkit.NewClock(t0)
	api := newAPI(t, testapi.Config{Rate: 2, Burst: 2, Now: c.Now})
	s := newSink(t, Config{URL: api.URL(), Now: c.Now})
	msgs := []*pacer.Message{msg("a", "1"), msg("b", "2"), msg("c", "3"), msg("d", "4"), msg("e", "5")}
	res := make([]pacer.Result, len(msgs))
	fb := s.Deliver(context.Background(), msgs, res)
	want := []pacer.Outcome{pacer.Delivered, pacer.Delivered, pacer.Retry, pacer.Retry, pacer.Retry}
	for i := range res {
		if res[i].Outcome != want[i] {
			t.Errorf("result %d = %v want %v", i, res[i].Outcome, want[i])
		}
		if i >= 2 && res[i].RetryAfter != time.Second {
			t.Errorf("result %d RetryAfter = %v want 1s", i, res[i].RetryAfter)
		}
	}
	if st := api.Stats(); st.Throttled != 1 || st.Accepted != 2 {
		t.Errorf("API saw %+v: want exactly one 429 (the sink stops sending after it)", st)
	}
	if !fb.Throttled || fb.Status != 429 || fb.RetryAfter != time.Second {
		t.Errorf("Feedback = %+v", fb)
	}
	want429 := pacer.RateLimitInfo{Limit: 2, Remaining: 0, Reset: time.Second, Window: time.Second, Header: `RateLimit: "bucket";r=0;t=1`, Dialect: "ietf"}
	if fb.RateLimit == nil || *fb.RateLimit != want429 {
		t.Errorf("Feedback.RateLimit = %+v want %+v", fb.RateLimit, want429)
	}
}

func TestRetryAfterHTTPDate(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", t0.Add(90*time.Second).Format(http.TimeFormat))
		w.Header().Set("X-RateLimit-Limit", "100")
		w.Header().Set("X-RateLimit-Remaining", "0")
		w.Header().Set("X-RateLimit-Reset", "1772366490") // t0+90s as a Unix time
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	s := newSink(t, Config{URL: srv.URL, Now: func() time.Time { return t0 }})
	r, fb := deliver1(s, msg("m", "{}"))
	if r.Outcome != pacer.Retry || r.RetryAfter != 90*time.Second {
		t.Errorf("result = %+v want Retry after 90s", r)
	}
	want := pacer.RateLimitInfo{Limit: 100, Remaining: 0, Reset: 90 * time.Second, ResetAt: t0.Add(90 * time.Second), Header: "X-RateLimit-Reset: 1772366490", Dialect: DialectX}
	if !fb.Throttled || fb.RateLimit == nil || *fb.RateLimit != want {
		t.Errorf("Feedback = %+v, RateLimit %+v want %+v", fb, fb.RateLimit, want)
	}
}

func TestIdempotencyKey(t *testing.T) {
	api := newAPI(t, testapi.Config{IdempotencyHeader: "X-Request-Id"})
	for _, tt := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, ""}, // default header name, the API looks at another
		{Config{IdempotencyHeader: "X-Request-Id"}, "id-1"},
		{Config{IdempotencyHeader: "X-Request-Id", NoIdempotencyKey: true}, ""},
	} {
		api.Reset()
		tt.cfg.URL = api.URL()
		s := newSink(t, tt.cfg)
		if r, _ := deliver1(s, msg("id-1", "{}")); r.Outcome != pacer.Delivered {
			t.Fatalf("%+v: %v", tt.cfg, r.Err)
		}
		acc := api.Accepted()
		if got := acc[0].IdempotencyKey; got != tt.want {
			t.Errorf("%+v: key = %q want %q", tt.cfg, got, tt.want)
		}
		if tt.cfg.IdempotencyHeader == "" {
			if got := acc[0].Header.Get("Idempotency-Key"); got != "id-1" {
				t.Errorf("default: Idempotency-Key = %q", got)
			}
		}
	}
}

func TestHeaderInjectionRefused(t *testing.T) {
	api := newAPI(t, testapi.Config{})
	s := newSink(t, Config{URL: api.URL(), Headers: map[string]string{"X-Tenant": "{{.Headers.tenant}}"}})
	bad := msg("ok", "{}")
	bad.ID = "id\r\nX-Evil: 1"
	if r, _ := deliver1(s, bad); r.Outcome != pacer.Reject || !errors.Is(r.Err, ErrHeaderInjection) {
		t.Errorf("ID with CRLF: %+v", r)
	}
	bad = msg("ok2", "{}")
	bad.Headers["tenant"] = "acme\nX-Evil: 1"
	if r, _ := deliver1(s, bad); r.Outcome != pacer.Reject || !errors.Is(r.Err, ErrHeaderInjection) {
		t.Errorf("templated header with LF: %+v", r)
	}
	if r, _ := deliver1(s, msg("ok3", "{}")); r.Outcome != pacer.Delivered {
		t.Errorf("clean message: %+v", r)
	}
	if n := api.Stats().Accepted; n != 1 {
		t.Errorf("API accepted %d requests, want only the clean one", n)
	}
	if got := api.Accepted()[0].Header.Get("X-Tenant"); got != "acme" {
		t.Errorf("X-Tenant = %q", got)
	}
	if _, err := New(Config{URL: api.URL(), Headers: map[string]string{"X": "a\r\nb"}}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("static CRLF header: err = %v", err)
	}
}

func TestBodyTemplate(t *testing.T) {
	api := newAPI(t, testapi.Config{})
	s := newSink(t, Config{URL: api.URL(),
		Body: `{"user":{{json (.Field "user.name")}},"raw":{{.Raw "user"}},"k":{{json .Key}},"t":"{{.Headers.tenant}}","b":"{{base64 .Key}}"}`})
	r, _ := deliver1(s, msg("m1", `{"user":{"name":"Ann \"A\""}}`))
	if r.Outcome != pacer.Delivered {
		t.Fatalf("%+v", r)
	}
	want := `{"user":"Ann \"A\"","raw":{"name":"Ann \"A\""},"k":"k-m1","t":"acme","b":"ay1tMQ=="}`
	if got := string(api.Accepted()[0].Body); got != want {
		t.Errorf("body = %s\nwant   %s", got, want)
	}
	for _, tt := range []struct{ name, value string }{
		{"missing field", `{"other":1}`},
		{"not JSON", `user=ann`},
		{"empty", ``},
	} {
		r, _ := deliver1(s, msg("bad", tt.value))
		if r.Outcome != pacer.Reject || !errors.Is(r.Err, ErrRender) {
			t.Errorf("%s: %+v want Reject wrapping ErrRender", tt.name, r)
		}
	}
	m := msg("m2", "{}")
	m.Headers = nil // missing header key renders as an error, not "<no value>"
	if r, _ := deliver1(s, m); r.Outcome != pacer.Reject {
		t.Errorf("missing header: %+v", r)
	}
}

// TestValuesUsedAsGiven: the sink never expands ${X}: a config loader
// did that already, so "${X}" or "$5" in a value is sent as written.
func TestValuesUsedAsGiven(t *testing.T) {
	api := newAPI(t, testapi.Config{})
	t.Setenv("NOT_AN_ENV_VAR", "expanded")
	s := newSink(t, Config{URL: api.URL() + "/v1",
		Headers: map[string]string{"X-Template": "${NOT_AN_ENV_VAR}", "X-Price": "$5"}})
	if r, _ := deliver1(s, msg("m", "{}")); r.Outcome != pacer.Delivered {
		t.Fatal(r.Err)
	}
	got := api.Accepted()[0]
	if got.Header.Get("X-Template") != "${NOT_AN_ENV_VAR}" || got.Header.Get("X-Price") != "$5" || got.Path != "/v1" {
		t.Errorf("request = %+v", got)
	}
}

// TestInvalidConfig: New refuses every config it could not deliver with,
// before the first message.
func TestInvalidConfig(t *testing.T) {
	api := newAPI(t, testapi.Config{})
	for _, cfg := range []Config{
		{URL: ""},
		{URL: "ftp://x"},
		{URL: api.URL(), Body: "{{.Nope"},
		{URL: api.URL(), Headers: map[string]string{"bad name": "x"}},
		{URL: api.URL(), Headers: map[string]string{"A": "x\ny"}},
		{URL: api.URL(), Timeout: -1},
		{URL: api.URL(), ContentType: "application/json\r\nX-Evil: 1"},
		{URL: api.URL(), IdempotencyHeader: "Idem Key"},
		{URL: api.URL(), SuccessPath: "data.#(ok==true"},
		{URL: api.URL(), SuccessPath: "data|@nosuchmodifier"},
		{URL: "https://x", TLS: TLSConfig{CertFile: "a.pem"}},
		{URL: "https://x", TLS: TLSConfig{CAFile: "/does/not/exist"}},
	} {
		if _, err := New(cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("New(%+v) err = %v want ErrInvalidConfig", cfg, err)
		}
	}
	for _, p := range []string{"ok", "data.#(ok==true).id", "items.0", `a\.b`, "@this", "data|@reverse", `{"a":b}`} {
		if err := checkPath(p); err != nil {
			t.Errorf("checkPath(%q) = %v want nil", p, err)
		}
	}
}

func TestBatchBody(t *testing.T) {
	api := newAPI(t, testapi.Config{})
	s := newSink(t, Config{URL: api.URL(), Batch: true})
	msgs := []*pacer.Message{msg("a", `{"x":1}`), msg("b", `plain text`), msg("c", "\xff\xfe")}
	res := make([]pacer.Result, 3)
	s.Deliver(context.Background(), msgs, res)
	for i, r := range res {
		if r.Outcome != pacer.Delivered {
			t.Errorf("result %d: %+v", i, r)
		}
	}
	acc := api.Accepted()
	if len(acc) != 1 {
		t.Fatalf("%d requests, want 1", len(acc))
	}
	if got, want := string(acc[0].Body), `[{"x":1},"plain text","//4="]`; got != want {
		t.Errorf("body = %s want %s", got, want)
	}
	if !strings.HasPrefix(acc[0].IdempotencyKey, "batch-") {
		t.Errorf("batch key = %q", acc[0].IdempotencyKey)
	}
	// Same batch again: same key, so the API can dedupe.
	s.Deliver(context.Background(), msgs, res)
	if st := api.Stats(); st.Duplicates != 1 {
		t.Errorf("redelivered batch: duplicates = %d want 1", st.Duplicates)
	}
	// A message that cannot render is rejected alone; the rest still go.
	ts := newSink(t, Config{URL: api.URL(), Batch: true, Body: `{{.Field "x"}}`})
	ts.Deliver(context.Background(), msgs[:2], res[:2])
	if res[0].Outcome != pacer.Delivered || res[1].Outcome != pacer.Reject {
		t.Errorf("mixed batch: %+v", res[:2])
	}
}

func TestSuccessPath(t *testing.T) {
	api := newAPI(t, testapi.Config{})
	ok := newSink(t, Config{URL: api.URL(), SuccessPath: "ok"})
	if r, _ := deliver1(ok, msg("m", "{}")); r.Outcome != pacer.Delivered {
		t.Errorf("ok=true: %+v", r)
	}
	for _, path := range []string{"missing", "duplicate"} { // absent; present but false
		api := newAPI(t, testapi.Config{})
		s := newSink(t, Config{URL: api.URL(), SuccessPath: path})
		if r, _ := deliver1(s, msg("m", "{}")); r.Outcome != pacer.Reject || !errors.Is(r.Err, ErrUnexpectedBody) {
			t.Errorf("%s: %+v want Reject wrapping ErrUnexpectedBody", path, r)
		}
	}
}

func TestTransportFailures(t *testing.T) {
	api := newAPI(t, testapi.Config{})
	s := newSink(t, Config{URL: api.URL(), Timeout: 50 * time.Millisecond})
	api.FailNext(testapi.FailDrop, 1)
	if r, fb := deliver1(s, msg("m", "{}")); r.Outcome != pacer.Retry || fb.Status != 0 {
		t.Errorf("dropped connection: %+v %+v", r, fb)
	}
	api.FailNext(testapi.FailHang, 1)
	r, fb := deliver1(s, msg("m", "{}"))
	if r.Outcome != pacer.Retry || !fb.Throttled {
		t.Errorf("timeout: %+v %+v want Retry, Throttled", r, fb)
	}
	// Nobody listening.
	api2 := testapi.New(testapi.Config{})
	url := api2.URL()
	api2.Close()
	s2 := newSink(t, Config{URL: url})
	if r, _ := deliver1(s2, msg("m", "{}")); r.Outcome != pacer.Retry {
		t.Errorf("connection refused: %+v", r)
	}
}

func TestTLS(t *testing.T) {
	api := newAPI(t, testapi.Config{TLS: true})
	cert := api.HTTPTest().Certificate()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		tls  TLSConfig
		want pacer.Outcome
	}{
		{"system roots refuse the test CA", TLSConfig{}, pacer.Retry},
		{"CA file", TLSConfig{CAFile: ca}, pacer.Delivered},
		{"CA file, wrong server name", TLSConfig{CAFile: ca, ServerName: "other.invalid"}, pacer.Retry},
		{"CA file, server name", TLSConfig{CAFile: ca, ServerName: "example.com"}, pacer.Delivered},
		{"verification off", TLSConfig{InsecureSkipVerify: true}, pacer.Delivered},
	}
	for _, tt := range tests {
		s := newSink(t, Config{URL: api.URL(), TLS: tt.tls})
		if r, _ := deliver1(s, msg("m", "{}")); r.Outcome != tt.want {
			t.Errorf("%s: %v (%v) want %v", tt.name, r.Outcome, r.Err, tt.want)
		}
	}
}

func TestMutualTLS(t *testing.T) {
	dir := t.TempDir()
	// A self-signed client certificate the server trusts.
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "pacer-client"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	clientCert, _ := x509.ParseCertificate(der)
	keyDER, _ := x509.MarshalECPrivateKey(key)
	certFile, keyFile := filepath.Join(dir, "client.pem"), filepath.Join(dir, "client.key")
	_ = os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	_ = os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)

	pool := x509.NewCertPool()
	pool.AddCert(clientCert)
	api := testapi.NewHandler(testapi.Config{})
	srv := httptest.NewUnstartedServer(api)
	srv.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	ca := filepath.Join(dir, "ca.pem")
	_ = os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600)

	without := newSink(t, Config{URL: srv.URL, TLS: TLSConfig{CAFile: ca}})
	if r, _ := deliver1(without, msg("m", "{}")); r.Outcome != pacer.Retry {
		t.Errorf("without a client certificate: %v (%v) want Retry", r.Outcome, r.Err)
	}
	with := newSink(t, Config{URL: srv.URL, TLS: TLSConfig{CAFile: ca, CertFile: certFile, KeyFile: keyFile}})
	if r, _ := deliver1(with, msg("m", "{}")); r.Outcome != pacer.Delivered {
		t.Errorf("with a client certificate: %v (%v)", r.Outcome, r.Err)
	}
	if n := api.Stats().Accepted; n != 1 {
		t.Errorf("accepted %d want 1", n)
	}
}

func TestRetryAfterFromRateLimitReset(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("RateLimit", `"min";r=0;t=17`)
		w.Header().Set("RateLimit-Policy", `"min";q=60;w=60`)
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	t.Cleanup(srv.Close)
	s := newSink(t, Config{URL: srv.URL})
	r, fb := deliver1(s, msg("m", "{}"))
	if r.Outcome != pacer.Retry || r.RetryAfter != 17*time.Second || fb.RetryAfter != 0 {
		t.Errorf("result %+v, feedback RetryAfter %v: want Retry after the quota reset (17s), no Retry-After header", r, fb.RetryAfter)
	}
}
