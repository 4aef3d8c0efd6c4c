package tlsconf

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// pki writes a CA, a server certificate for 127.0.0.1 signed by it, and a
// second, unrelated key into dir.
type pki struct {
	caFile, certFile, keyFile, otherKey, garbage string
	serverCert                                   tls.Certificate
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

func newPKI(t *testing.T) pki {
	t.Helper()
	dir := t.TempDir()
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "pacer test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	otherDER, _ := x509.MarshalECPrivateKey(other)
	p := pki{caFile: filepath.Join(dir, "ca.pem"), certFile: filepath.Join(dir, "cert.pem"),
		keyFile: filepath.Join(dir, "key.pem"), otherKey: filepath.Join(dir, "other.pem"), garbage: filepath.Join(dir, "garbage.pem")}
	writePEM(t, p.caFile, "CERTIFICATE", caDER)
	writePEM(t, p.certFile, "CERTIFICATE", der)
	writePEM(t, p.keyFile, "EC PRIVATE KEY", keyDER)
	writePEM(t, p.otherKey, "EC PRIVATE KEY", otherDER)
	if err := os.WriteFile(p.garbage, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p.serverCert, err = tls.LoadX509KeyPair(p.certFile, p.keyFile)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestBuild(t *testing.T) {
	p := newPKI(t)
	cases := []struct {
		name    string
		cfg     Config
		wantErr string // "" for success; else a substring of the error
		check   func(t *testing.T, tc *tls.Config)
	}{
		{name: "zero value: system roots, TLS 1.2+", cfg: Config{}, check: func(t *testing.T, tc *tls.Config) {
			if tc.RootCAs != nil || len(tc.Certificates) != 0 || tc.InsecureSkipVerify || tc.MinVersion != tls.VersionTLS12 {
				t.Errorf("Build() = roots %v, %d certificates, insecure %v, min version %x; want nil, 0, false, TLS 1.2",
					tc.RootCAs, len(tc.Certificates), tc.InsecureSkipVerify, tc.MinVersion)
			}
		}},
		{name: "server name and insecure carried", cfg: Config{ServerName: "kafka.internal", InsecureSkipVerify: true}, check: func(t *testing.T, tc *tls.Config) {
			if tc.ServerName != "kafka.internal" || !tc.InsecureSkipVerify {
				t.Errorf("ServerName, InsecureSkipVerify = %q, %v want kafka.internal, true", tc.ServerName, tc.InsecureSkipVerify)
			}
		}},
		{name: "CA and client certificate", cfg: Config{CAFile: p.caFile, CertFile: p.certFile, KeyFile: p.keyFile}, check: func(t *testing.T, tc *tls.Config) {
			if tc.RootCAs == nil || len(tc.Certificates) != 1 {
				t.Fatalf("roots %v, %d certificates; want the CA and 1", tc.RootCAs, len(tc.Certificates))
			}
			leaf, _ := x509.ParseCertificate(p.serverCert.Certificate[0])
			if _, err := leaf.Verify(x509.VerifyOptions{Roots: tc.RootCAs}); err != nil {
				t.Errorf("a certificate signed by ca_file does not verify against RootCAs: %v", err)
			}
		}},
		{name: "cert without key", cfg: Config{CertFile: p.certFile}, wantErr: "without key_file"},
		{name: "key without cert", cfg: Config{KeyFile: p.keyFile}, wantErr: "without cert_file"},
		{name: "key of another certificate", cfg: Config{CertFile: p.certFile, KeyFile: p.otherKey}, wantErr: "cert_file"},
		{name: "missing CA file", cfg: Config{CAFile: filepath.Join(t.TempDir(), "none.pem")}, wantErr: "ca_file"},
		{name: "CA file without PEM", cfg: Config{CAFile: p.garbage}, wantErr: "holds no PEM certificate"},
		{name: "missing cert file", cfg: Config{CertFile: p.garbage + ".none", KeyFile: p.keyFile}, wantErr: "cert_file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tc, err := c.cfg.Build()
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) || !errors.Is(err, ErrInvalid) {
					t.Fatalf("Build(%+v) = %v want an ErrInvalid error containing %q", c.cfg, err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Build(%+v): %v", c.cfg, err)
			}
			c.check(t, tc)
		})
	}
}

// TestBuildHandshake: the built configs complete a mutual-TLS handshake
// against a server that trusts the same CA, and a client without the CA
// refuses the server.
func TestBuildHandshake(t *testing.T) {
	p := newPKI(t)
	caPool := x509.NewCertPool()
	caPEM, _ := os.ReadFile(p.caFile)
	caPool.AppendCertsFromPEM(caPEM)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{p.serverCert},
		ClientCAs: caPool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.(*tls.Conn).Handshake()
			c.Close()
		}
	}()
	dial := func(cfg Config) error {
		tc, err := cfg.Build()
		if err != nil {
			return err
		}
		c, err := tls.Dial("tcp", ln.Addr().String(), tc)
		if err != nil {
			return err
		}
		defer c.Close()
		return c.Handshake()
	}
	if err := dial(Config{CAFile: p.caFile, CertFile: p.certFile, KeyFile: p.keyFile}); err != nil {
		t.Errorf("mutual TLS with the CA and a client certificate: %v", err)
	}
	if err := dial(Config{CertFile: p.certFile, KeyFile: p.keyFile}); err == nil {
		t.Errorf("a client trusting only the system roots accepted a server signed by a private CA")
	}
}
