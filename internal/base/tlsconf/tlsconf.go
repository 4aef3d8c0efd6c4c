// Package tlsconf owns building the client-side *tls.Config that every
// pacer client shares (the Kafka and NATS sources, the HTTP sink): the
// files read once, every problem reported with the field it came from, and
// one policy (TLS 1.2 or later; the server's certificate verified unless
// InsecureSkipVerify says otherwise).
package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// ErrInvalid is wrapped by every error Build returns.
var ErrInvalid = errors.New("tls: invalid configuration")

// Config is the TLS part of a client's configuration. The zero value is TLS
// with the system's roots and no client certificate.
type Config struct {
	// CAFile is a PEM bundle of roots to trust instead of the system pool.
	CAFile string
	// CertFile and KeyFile are a PEM client certificate and its key, for
	// mutual TLS. They go together: one without the other is an error.
	CertFile, KeyFile string
	// ServerName overrides the name checked against the server's
	// certificate (default: the host dialled).
	ServerName string
	// InsecureSkipVerify turns verification of the server off. For tests
	// only; callers warn when it is set.
	InsecureSkipVerify bool
}

// Build reads the files and returns a client *tls.Config. Errors wrap
// ErrInvalid and name the field (ca_file, cert_file, key_file), so a caller
// can prefix its own config path.
func (c Config) Build() (*tls.Config, error) {
	tc := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         c.ServerName,
		InsecureSkipVerify: c.InsecureSkipVerify, //nolint:gosec // explicit, documented opt-out
	}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("%w: ca_file: %v", ErrInvalid, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: ca_file %s holds no PEM certificate", ErrInvalid, c.CAFile)
		}
		tc.RootCAs = pool
	}
	switch {
	case c.CertFile != "" && c.KeyFile == "":
		return nil, fmt.Errorf("%w: cert_file %s is set without key_file: they go together", ErrInvalid, c.CertFile)
	case c.CertFile == "" && c.KeyFile != "":
		return nil, fmt.Errorf("%w: key_file %s is set without cert_file: they go together", ErrInvalid, c.KeyFile)
	case c.CertFile != "":
		cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("%w: cert_file %s and key_file %s: %v", ErrInvalid, c.CertFile, c.KeyFile, err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}
