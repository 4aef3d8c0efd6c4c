package httpsink

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/pacer-dev/pacer/pacer"
)

// benchServer answers 200 to everything, draining the body, so that the
// benchmarks measure the client side.
func benchServer(b *testing.B) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("X-RateLimit-Limit", "1000000")
		w.Header().Set("X-RateLimit-Remaining", "999999")
		w.WriteHeader(http.StatusOK)
	}))
	b.Cleanup(srv.Close)
	return srv
}

func benchMsgs(n int) []*pacer.Message {
	out := make([]*pacer.Message, n)
	for i := range out {
		out[i] = &pacer.Message{ID: fmt.Sprintf("bench/0/%d", i), Key: []byte("k"),
			Value: []byte(`{"user":{"name":"Ann","id":12345},"amount":42.5,"items":[1,2,3]}`)}
	}
	return out
}

func reportPerMsg(b *testing.B, perOp int) {
	b.ReportMetric(float64(b.N*perOp)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkDeliver: one message per request, sequential and with 8 in
// flight, raw value and a body template; then batches of 100 per request.
func BenchmarkDeliver(b *testing.B) {
	srv := benchServer(b)
	for _, tc := range []struct {
		name     string
		cfg      Config
		batch    int
		parallel bool
	}{
		{"single/value", Config{}, 1, false},
		{"single/template", Config{Body: `{"name":{{json (.Field "user.name")}},"v":{{.Value}}}`}, 1, false},
		{"single/value/8-in-flight", Config{MaxInFlight: 8}, 1, true},
		{"batch100/value", Config{Batch: true}, 100, false},
	} {
		b.Run(tc.name, func(b *testing.B) {
			tc.cfg.URL = srv.URL
			s, err := New(tc.cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			msgs := benchMsgs(tc.batch)
			b.ReportAllocs()
			b.ResetTimer()
			if tc.parallel {
				b.SetParallelism(4) // 4*GOMAXPROCS goroutines (8 on this 2-core machine)
				b.RunParallel(func(pb *testing.PB) {
					res := make([]pacer.Result, len(msgs))
					for pb.Next() {
						s.Deliver(context.Background(), msgs, res)
						if res[0].Outcome != pacer.Delivered {
							b.Error(res[0].Err)
							return
						}
					}
				})
			} else {
				res := make([]pacer.Result, len(msgs))
				for b.Loop() {
					s.Deliver(context.Background(), msgs, res)
					if res[0].Outcome != pacer.Delivered {
						b.Fatal(res[0].Err)
					}
				}
			}
			reportPerMsg(b, tc.batch)
		})
	}
}

// BenchmarkPeerNetHTTP is the floor: a bare net/http POST with the same
// body and keep-alive, no classification, no feedback parsing.
func BenchmarkPeerNetHTTP(b *testing.B) {
	srv := benchServer(b)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	defer client.CloseIdleConnections()
	body := benchMsgs(1)[0].Value
	b.ReportAllocs()
	for b.Loop() {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "bench/0/0")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	reportPerMsg(b, 1)
}
