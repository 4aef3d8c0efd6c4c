package binarytest

import (
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/testsupport/binharness"
)

// BenchmarkAdminIdleConnections: the worker's peak RSS before and after
// 15,000 connections are opened to its admin listener and left silent (the
// issue's attack), and whether /healthz then answers (1) or not (0). The
// worker waits for an unreachable NATS, so its starting listener serves:
// the same admin server as the running one. Run with -benchtime 1x:
//
//	go test -run '^$' -bench AdminIdleConnections -benchtime 1x ./internal/testsupport/binarytest
func BenchmarkAdminIdleConnections(b *testing.B) {
	const n = 15000
	addr := binharness.FreeAddr(b)
	cfg := binharness.WriteFile(b, "idle.yaml", fmt.Sprintf(`source:
  type: nats
  nats:
    url: nats://127.0.0.1:1
    stream: S
shaping:
  rate: 100/s
sink:
  type: stdout
admin:
  listen: %s
`, addr))
	for b.Loop() {
		p := binharness.Start(b, nil, "run", "-c", cfg)
		binharness.Eventually(b, 30*time.Second, "the admin listener answering", func() bool {
			code, _, err := binharness.Get(addr, "/healthz")
			return err == nil && code == http.StatusOK
		})
		before := p.PeakRSS()
		conns := make([]net.Conn, 0, n)
		for range n {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				b.Fatalf("dial %d: %v", len(conns), err)
			}
			conns = append(conns, c)
		}
		// The probe queues behind every connection above: once it is
		// answered (or refused) they were all accepted.
		ok := 0.0
		if code, _, err := binharness.Get(addr, "/healthz"); err == nil && code == http.StatusOK {
			ok = 1
		}
		after := p.PeakRSS()
		for _, c := range conns {
			c.Close()
		}
		p.Kill()
		b.ReportMetric(float64(before)/(1<<20), "rss-before-MiB")
		b.ReportMetric(float64(after)/(1<<20), "rss-after-MiB")
		b.ReportMetric(ok, "healthz-ok")
	}
}
