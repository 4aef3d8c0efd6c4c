// Package httpsink delivers messages to an HTTP API as a careful production
// client would: one request per message (or one JSON array per batch), an
// Idempotency-Key from the message ID so redelivery is safe, every answer
// classified (2xx delivered; 408, 425, 429, 5xx, timeouts and connection
// errors retried; other 4xx, and 3xx since redirects are never followed,
// rejected for good), Retry-After honoured in both
// forms, and the rate-limit headers the API sends parsed into Feedback for
// the adaptive rate controller.
//
// The package lives in sinks/httpsink and is named httpsink so that it does not
// shadow net/http.
package httpsink

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/pacer-dev/pacer/internal/base/redact"
	"github.com/pacer-dev/pacer/internal/base/tlsconf"
)

// Sentinel errors; results and New wrap them.
var (
	// ErrInvalidConfig is wrapped by every error New returns.
	ErrInvalidConfig = errors.New("httpsink: invalid config")
	// ErrRender is wrapped by a Reject for a message the body or header
	// templates cannot render (a missing JSON field, a value that is not
	// JSON).
	ErrRender = errors.New("httpsink: cannot render message")
	// ErrHeaderInjection is wrapped by a Reject for a message whose ID or
	// templated header value contains CR, LF or NUL.
	ErrHeaderInjection = errors.New("httpsink: header value contains CR, LF or NUL")
	// ErrUnexpectedBody is wrapped by a Reject when a 2xx response's body
	// does not satisfy Config.SuccessPath.
	ErrUnexpectedBody = errors.New("httpsink: unexpected response body")
)

// StatusError is the error of a result decided by a non-2xx status.
type StatusError struct {
	Method, URL string
	Status      int
	// Body is the start of the response body (at most 256 bytes).
	Body string
}

func (e *StatusError) Error() string {
	s := fmt.Sprintf("httpsink: %s %s: %d %s", e.Method, redact.URL(e.URL), e.Status, http.StatusText(e.Status))
	if e.Body != "" {
		s += ": " + e.Body
	}
	return s
}

// Defaults for the zero values of Config.
const (
	DefaultContentType       = "application/json"
	DefaultTimeout           = 10 * time.Second
	DefaultIdempotencyHeader = "Idempotency-Key"
	DefaultMaxInFlight       = 16
	DefaultIdleTimeout       = 30 * time.Second
)

// Config configures a Sink. Only URL is required.
type Config struct {
	// Method is the HTTP method; "" means POST.
	Method string
	// URL is where requests go, used as given (a config loader expands
	// environment variables before; the sink never does).
	URL string
	// Headers are sent with every request. A value containing "{{" is a
	// text/template over the message (see Body); other values are sent as
	// given.
	Headers map[string]string
	// Body is a text/template rendered per message; "" sends the message
	// value as is. The template sees .ID, .Key, .Value (strings), .Headers,
	// .Topic, .Partition, .Offset, and the methods .Field "a.b" (a JSON
	// field of the value, via gjson, as a string) and .Raw "a.b" (the
	// field's raw JSON); the functions json (encode as a JSON value) and
	// base64. A missing field makes the message a Reject, never a silent
	// empty string.
	Body string
	// ContentType is the Content-Type header; "" means DefaultContentType.
	ContentType string
	// Timeout bounds each request, connection included; 0 means
	// DefaultTimeout.
	Timeout time.Duration
	// MaxInFlight sizes the keep-alive pool (idle connections kept per
	// host); set it to the engine's max in flight. 0 means
	// DefaultMaxInFlight.
	MaxInFlight int
	// PreDial is how many keep-alive connections the sink opens before its
	// first request (Warm) and keeps open while it runs, re-dialling one
	// the server closes or that sat unused for IdleTimeout, so a request
	// never waits for a TCP or TLS handshake and connection set-up never
	// bunches requests together at the API. 0 means MaxInFlight; negative
	// turns it off (connections are dialled when a request needs one).
	// Not used through a proxy, nor with Client.
	PreDial int
	// IdleTimeout closes a connection unused this long (a pre-dialled one
	// is then re-dialled). Keep it below the API's own keep-alive timeout
	// so the API never closes a connection as a request starts on it.
	// 0 means DefaultIdleTimeout.
	IdleTimeout time.Duration
	// TLS configures https URLs.
	TLS TLSConfig
	// IdempotencyHeader names the header carrying the message ID; "" means
	// DefaultIdempotencyHeader. NoIdempotencyKey turns it off.
	IdempotencyHeader string
	NoIdempotencyKey  bool
	// Batch sends all messages of a Deliver call as one request whose body
	// is a JSON array of the rendered bodies (a body that is not JSON is
	// sent as a JSON string). The idempotency key is then a digest of the
	// batch's message IDs (the ID itself for a batch of one), and templated
	// headers are rendered from the batch's first message. The batch
	// succeeds or fails as a whole; a message that cannot be rendered is
	// rejected alone and left out of the request.
	Batch bool
	// SuccessPath, if set, is a gjson path that must exist and not be
	// false/null in a 2xx response body; otherwise the result is a Reject
	// wrapping ErrUnexpectedBody (an API that answers 200 with an error
	// document).
	SuccessPath string

	// Client replaces the HTTP client the sink builds (then Timeout still
	// applies per request, but MaxInFlight and TLS do not). For tests.
	Client *http.Client
	// WrapTransport, if set, wraps the transport the sink builds (not a
	// Client given above), for example to carry trace context in every
	// request (pacer/otelhook.Transport).
	WrapTransport func(http.RoundTripper) http.RoundTripper
	// Now replaces time.Now (HTTP-date Retry-After, latency). For tests.
	Now func() time.Time
}

// TLSConfig configures TLS to the API. Certificate verification is on
// unless InsecureSkipVerify is set.
type TLSConfig struct {
	// CAFile is a PEM bundle of roots to trust instead of the system pool.
	CAFile string
	// CertFile and KeyFile are a PEM client certificate and key (mutual TLS).
	CertFile string
	KeyFile  string
	// ServerName overrides the name checked against the certificate.
	ServerName string
	// InsecureSkipVerify turns verification off. Only for testing.
	InsecureSkipVerify bool
}

func (c TLSConfig) build() (*tls.Config, error) {
	tc, err := tlsconf.Config{CAFile: c.CAFile, CertFile: c.CertFile, KeyFile: c.KeyFile,
		ServerName: c.ServerName, InsecureSkipVerify: c.InsecureSkipVerify}.Build()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return tc, nil
}
