package httpsink

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"text/template"

	"github.com/pacer-dev/pacer/pacer"
)

var _ pacer.FailureClassifier = (*Sink)(nil)

// errData marks a template error caused by the message (a field its value
// lacks, a value that is not JSON), as opposed to the template itself.
var errData = errors.New("message data")

// errBuild marks a request that cannot be built locally (bad method, URL or
// header): every message would fail the same way.
var errBuild = errors.New("httpsink: cannot build the request")

// FailureClass implements pacer.FailureClassifier, for the engine's
// systemic-failure breaker:
//
//   - "http <status>" for a non-2xx answer; 401, 403 and 407 (credentials,
//     permissions) are systemic, every other status counts toward the
//     breaker's thresholds;
//   - "http connect" for a downstream that cannot be reached at all
//     (connection refused or reset, unknown host, TLS failure): systemic;
//   - "http request" for a request that cannot be built locally: systemic;
//   - "render template" for a body or header template that fails by itself
//     (a misspelt field, a wrong argument): systemic; "render data" for a
//     message the template cannot render (a missing JSON field): not;
//   - "http header value" for a message whose ID or templated header value
//     holds CR, LF or NUL: not systemic (the message is at fault);
//   - "" (not counted) for timeouts and anything else.
func (s *Sink) FailureClass(err error) (string, bool) {
	var se *StatusError
	switch {
	case err == nil:
		return "", false
	case errors.As(err, &se):
		c := se.Status
		return "http " + strconv.Itoa(c), c == http.StatusUnauthorized || c == http.StatusForbidden || c == http.StatusProxyAuthRequired
	case errors.Is(err, errBuild):
		return "http request", true
	case errors.Is(err, ErrRender):
		if errors.Is(err, errData) || isMissingKey(err) {
			return "render data", false
		}
		return "render template", true
	case errors.Is(err, ErrHeaderInjection):
		return "http header value", false
	case errors.Is(err, ErrUnexpectedBody):
		return "http unexpected body", false
	case isTimeout(err):
		return "", false
	case unreachable(err):
		return "http connect", true
	}
	return "", false
}

// unreachable: the downstream cannot be reached at all.
func unreachable(err error) bool {
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH) {
		return true
	}
	var dns *net.DNSError
	var rec tls.RecordHeaderError
	var cv *tls.CertificateVerificationError
	var ua x509.UnknownAuthorityError
	var hn x509.HostnameError
	return errors.As(err, &dns) || errors.As(err, &rec) || errors.As(err, &cv) || errors.As(err, &ua) || errors.As(err, &hn)
}

// isMissingKey: text/template's missingkey=error on a map (.Headers.x):
// the message lacks the key.
func isMissingKey(err error) bool {
	var ee template.ExecError
	return errors.As(err, &ee) && strings.Contains(ee.Err.Error(), "map has no entry for key")
}
