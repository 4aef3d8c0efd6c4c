package gateway

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"
)

// fire sends n GET requests at once (n goroutines) and returns the
// statuses and Retry-After values of the answers, in no order.
func fire(t *testing.T, url string, n int) (statuses []int, retry []string) {
	t.Helper()
	var mu sync.Mutex
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: n}}
	defer client.CloseIdleConnections()
	for i := range n {
		wg.Go(func() {
			res, err := client.Get(fmt.Sprintf("%s/item/%d", url, i))
			if err != nil {
				t.Errorf("GET: %v", err)
				return
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			mu.Lock()
			statuses = append(statuses, res.StatusCode)
			retry = append(retry, res.Header.Get("Retry-After"))
			mu.Unlock()
		})
	}
	wg.Wait()
	return statuses, retry
}

func count(xs []int, v int) int {
	n := 0
	for _, x := range xs {
		if x == v {
			n++
		}
	}
	return n
}

// check holds for every limiter: what the client was answered 200 is what
// the backend received, the access log has every answer, 429s carry
// Retry-After exactly when configured.
func check(t *testing.T, g *Gateway, statuses []int, retry []string) (ok, refused int) {
	t.Helper()
	ok, refused = count(statuses, 200), count(statuses, 429)
	if ok+refused != len(statuses) {
		t.Errorf("statuses %v: want only 200 and 429", statuses)
	}
	if got := g.Backend.Stats().Accepted; got != ok {
		t.Errorf("backend accepted %d, client got %d 200s", got, ok)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := g.WaitLogged(ctx, len(statuses)); err != nil {
		t.Fatal(err)
	}
	logged, err := g.Statuses()
	if err != nil {
		t.Fatal(err)
	}
	if logged[200] != ok || logged[429] != refused {
		t.Errorf("access log counts %v, client saw 200: %d, 429: %d", logged, ok, refused)
	}
	want := ""
	if g.Config.RetryAfter > 0 {
		want = fmt.Sprint(g.Config.RetryAfter)
	}
	for i, s := range statuses {
		switch {
		case s == 429 && retry[i] != want:
			t.Errorf("429 with Retry-After %q, want %q", retry[i], want)
		case s == 200 && retry[i] != "":
			t.Errorf("200 with Retry-After %q, want none", retry[i])
		}
	}
	return ok, refused
}

func TestNginxNodelayRefusesBeyondBurst(t *testing.T) {
	for _, retryAfter := range []int{0, 1} {
		t.Run(fmt.Sprintf("RetryAfter=%d", retryAfter), func(t *testing.T) {
			g := Start(t, Nginx, Config{Rate: 2, Burst: 5, RetryAfter: retryAfter})
			start := time.Now()
			statuses, retry := fire(t, g.URL, 30)
			elapsed := time.Since(start)
			ok, refused := check(t, g, statuses, retry)
			// nodelay: the first request and the burst pass at once; the
			// rate adds one per 500 ms while the requests were sent.
			if hi := 1 + 5 + int(elapsed.Seconds()*2) + 1; ok < 6 || ok > hi {
				t.Errorf("nginx let %d of 30 through in %v, want 6..%d", ok, elapsed, hi)
			}
			if refused == 0 {
				t.Error("no 429: the limiter did not refuse")
			}
		})
	}
}

func TestNginxDelayModeQueuesInsteadOfRefusing(t *testing.T) {
	g := Start(t, Nginx, Config{Rate: 10, Burst: 5, Delay: true})
	statuses, retry := fire(t, g.URL, 6)
	ok, _ := check(t, g, statuses, retry)
	if ok != 6 {
		t.Fatalf("delay mode let %d of 6 through, want all (within the burst)", ok)
	}
	// The 5 excess requests were delayed to 10/s: the backend saw them
	// spread over at least 400 ms (a lower bound; a slow machine only
	// spreads them more).
	arr := g.Backend.Arrivals()
	first, last := slices.MinFunc(arr, time.Time.Compare), slices.MaxFunc(arr, time.Time.Compare)
	if span := last.Sub(first); span < 400*time.Millisecond {
		t.Errorf("backend arrivals spread over %v, want >= 400ms (delayed to 10/s)", span)
	}
	answers, err := g.Answers()
	if err != nil {
		t.Fatal(err)
	}
	slowest := time.Duration(0)
	for _, a := range answers {
		slowest = max(slowest, a.Duration)
	}
	if slowest < 400*time.Millisecond {
		t.Errorf("slowest logged answer %v, want >= 400ms (queued in nginx)", slowest)
	}
}

func TestHAProxyCountsRefusedRequests(t *testing.T) {
	for _, retryAfter := range []int{0, 2} {
		t.Run(fmt.Sprintf("RetryAfter=%d", retryAfter), func(t *testing.T) {
			g := Start(t, HAProxy, Config{Rate: 5, RetryAfter: retryAfter})
			statuses, retry := fire(t, g.URL, 100)
			burstDone := time.Now()
			ok, _ := check(t, g, statuses, retry)
			if ok != 5 {
				t.Errorf("haproxy let %d of 100 through, want 5 (gt 5 is denied)", ok)
			}
			// 1.2 s later a limiter counting only what it accepted would
			// have room again (5 accepted, weighted 0.8 over the last
			// period); HAProxy counts the 95 refusals too: still refused.
			time.Sleep(time.Until(burstDone.Add(1200 * time.Millisecond)))
			statuses, _ = fire(t, g.URL, 1)
			if late := time.Since(burstDone); late > 1600*time.Millisecond {
				t.Skipf("the probe went %v after the burst (machine too loaded to tell a penalty box)", late)
			}
			if statuses[0] != 429 {
				t.Errorf("a request 1.2 s after 95 refusals got %d, want 429 (refused requests count)", statuses[0])
			}
		})
	}
}

func TestStartRejectsAConfigTheLimiterCannotHave(t *testing.T) {
	if _, err := lookBinary("haproxy"); err != nil {
		t.Skipf("%v", err)
	}
	ft := &fatalRecorder{TB: t}
	func() {
		defer func() { _ = recover() }()
		Start(ft, HAProxy, Config{Rate: 5, Burst: 3})
	}()
	if ft.msg == "" {
		t.Fatal("Start(haproxy, Burst 3) did not fail")
	}
}

// fatalRecorder records Fatalf instead of failing the test.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic(f.msg)
}

func (f *fatalRecorder) Helper() {}

func TestNginxWithoutBurst(t *testing.T) {
	g := Start(t, Nginx, Config{Rate: 1})
	statuses, retry := fire(t, g.URL, 5)
	if ok, _ := check(t, g, statuses, retry); ok != 1 {
		t.Errorf("nginx without burst let %d of 5 through at once, want 1", ok)
	}
}
