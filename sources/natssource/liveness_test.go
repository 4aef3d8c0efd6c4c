package natssource_test

import (
	"bytes"
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
	"github.com/pacer-dev/pacer/internal/testsupport/testkit"
	"github.com/pacer-dev/pacer/sources/natssource"
)

// TestBlackholedLinkNoticed: the link to NATS goes silent (a proxy drops
// every packet both ways and resets nothing): within seconds the source is
// not ready and a log line says why (nats.go's default ping interval took
// minutes to notice, /readyz said ready meanwhile); once packets flow
// again it reconnects and consumes.
func TestBlackholedLinkNoticed(t *testing.T) {
	srvURL := testenv.NATS(t)
	u, err := url.Parse(srvURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := testenv.NewTCPProxy(t, u.Host)
	_, js := connect(t, srvURL)
	name := testenv.UniqueName(t, "HOLE")
	stream(t, js, name)
	s, got, logs := runCounting(t, natssource.Config{Conn: natssource.Conn{URL: "nats://" + proxy.Addr(), ReconnectWait: 100 * time.Millisecond},
		Stream: name, Consumer: "c", Create: true, AckWait: 2 * time.Second, Batch: 4, FetchWait: time.Second})
	publishValues(t, js, name+".in", "a", 5)
	testkit.Eventually(t, 30*time.Second, "the first 5", func() bool { return got.Load() == 5 })
	ctx := context.Background()
	if err := s.Ready(ctx); err != nil {
		t.Fatalf("Ready before the blackhole = %v", err)
	}
	proxy.Blackhole(true)
	start := time.Now()
	testkit.Eventually(t, 30*time.Second, "not ready while the link is blackholed", func() bool { return s.Ready(ctx) != nil })
	t.Logf("not ready %v after the blackhole: %v", time.Since(start).Round(100*time.Millisecond), s.Ready(ctx))
	testkit.Eventually(t, 10*time.Second, "a log line", func() bool {
		l := logs.String()
		return strings.Contains(l, "nats: disconnected") || strings.Contains(l, "nats: not consuming")
	})
	publishValues(t, js, name+".in", "b", 5) // straight to the server, not through the proxy
	proxy.Blackhole(false)
	testkit.Eventually(t, 60*time.Second, "the 5 published during the blackhole", func() bool { return got.Load() >= 10 })
	testkit.Eventually(t, 30*time.Second, "ready again", func() bool { return s.Ready(ctx) == nil })
}

// TestFetchAheadBoundedInBytes: with 256 KiB messages and the engine
// taking none (its queue full), what the source holds fetched stays within
// 1.5 x FetchBytes plus the one message the engine holds, where Batch
// alone let a whole batch (32 messages, 8 MiB) pile up; and a FetchBytes smaller than
// one message still delivers every message.
func TestFetchAheadBoundedInBytes(t *testing.T) {
	url := testenv.NATS(t)
	_, js := connect(t, url)
	name := testenv.UniqueName(t, "FBY")
	stream(t, js, name)
	const size = 256 << 10
	payload := bytes.Repeat([]byte("x"), size)
	ctx := context.Background()
	for i := range 40 {
		if _, err := js.Publish(ctx, name+".in", payload); err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
	}
	for _, tc := range []struct {
		consumer   string
		fetchBytes int
	}{{"one-mib", 1 << 20}, {"smaller-than-a-message", 64 << 10}} {
		t.Run(tc.consumer, func(t *testing.T) {
			s := newSource(t, natssource.Config{Conn: natssource.Conn{URL: url}, Stream: name, Consumer: tc.consumer, Create: true,
				Batch: 32, FetchBytes: tc.fetchBytes, FetchWait: time.Second})
			got, release := runHoldingFirst(t, s)
			held := s.Outstanding() * size
			limit := max(tc.fetchBytes*3/2, tc.fetchBytes/2+size) + size // + the one the engine holds
			t.Logf("FetchBytes %d: %d messages (%d KiB) held fetched, bound %d KiB", tc.fetchBytes, s.Outstanding(), held>>10, limit>>10)
			if held > limit {
				t.Errorf("%d bytes held fetched while the engine takes nothing, want <= %d", held, limit)
			}
			release()
			testkit.Eventually(t, 60*time.Second, "all 40", func() bool { return got.Load() >= 40 })
		})
	}
}
