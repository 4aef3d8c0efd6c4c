package redislimit

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	crand "crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
	"github.com/pacer-dev/pacer/internal/testsupport/testkit"
)

func TestTagSafe(t *testing.T) {
	seen := map[string]string{}
	for _, k := range []string{"", "t1", "x1", "sx1", "s", "ss", "x", "{a}", "a b", "\xff", "x7b617d", "sx7b617d", "ssx1"} {
		got := tagSafe(k)
		if strings.ContainsAny(got, "{} ") {
			t.Errorf("tagSafe(%q) = %q holds a brace or space", k, got)
		}
		if prev, dup := seen[got]; dup {
			t.Errorf("tagSafe(%q) = tagSafe(%q) = %q", k, prev, got)
		}
		seen[got] = k
	}
}

func TestConfigValidate(t *testing.T) {
	ok := Config{Name: "api", Rate: algorithms.PerSecond(300), Burst: 30, URL: "redis://127.0.0.1:6379/0"}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"no name", func(c *Config) { c.Name = "" }, "name is required"},
		{"brace", func(c *Config) { c.Name = "a{b}" }, "hash tags"},
		{"rate", func(c *Config) { c.Rate = algorithms.Rate{} }, "rate"},
		{"burst", func(c *Config) { c.Burst = 0 }, "burst 0"},
		{"no url", func(c *Config) { c.URL = "" }, "url or client"},
		{"bad url", func(c *Config) { c.URL = "http://x" }, "url"},
		{"policy", func(c *Config) { c.Policy = 7 }, "policy 7"},
		{"timeout", func(c *Config) { c.Timeout = -1 }, "timeout"},
		{"workers", func(c *Config) { c.ExpectedWorkers = -2 }, "expected workers"},
		{"too exact", func(c *Config) { c.Rate = algorithms.Rate{Count: 1, Per: 300 * 24 * time.Hour}; c.Burst = 1e6 }, "2^53"},
		// Exact in Lua, but the fail-open bucket (burst 1e5 at 1/day) spans
		// more than algorithms' 73 years: refused here, not found at outage.
		{"fallback span", func(c *Config) {
			c.Policy, c.Rate, c.Burst = FailOpen, algorithms.Rate{Count: 1, Per: 24 * time.Hour}, 100_000
		}, "fail-open fallback"},
	} {
		c := ok
		tc.edit(&c)
		err := c.Validate()
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate() = %v want ErrInvalidConfig mentioning %q", tc.name, err, tc.want)
		}
		if _, err := New(c, time.Now()); err == nil {
			t.Errorf("%s: New accepted an invalid config", tc.name)
		}
	}
	for _, s := range []string{"fail-open", "fail-closed"} {
		var p Policy
		if err := p.UnmarshalText([]byte(s)); err != nil || p.String() != s {
			t.Errorf("Policy.UnmarshalText(%q) = %v, %v", s, p, err)
		}
	}
	if _, err := ParsePolicy("maybe"); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("ParsePolicy(maybe) err = %v", err)
	}
}

// TestReserveLeases: Reserve never blocks; the first call starts a refill and
// refuses with a small hint; later calls are served from the lease, with far
// fewer Redis calls than admissions.
func TestReserveLeases(t *testing.T) {
	e := newEnv(t)
	cfg := e.cfg("lease", algorithms.PerSecond(10000), 1000)
	cfg.Lease = 100 * time.Millisecond
	l := newLimiter(t, cfg)
	if got, want := l.MaxLease(), 500; got != want {
		t.Fatalf("MaxLease() = %d want %d (min(burst/2, rate*lease))", got, want)
	}
	w, ok := l.Reserve(time.Now(), 1)
	if ok || w != time.Millisecond {
		t.Fatalf("first Reserve = %v, %v; want the 1ms first refill hint and false", w, ok)
	}
	admitted := 0
	for admitted < 2000 {
		if !reserveWithin(l, nil, 1, 5*time.Second) {
			t.Fatalf("no admission within 5s after %d", admitted)
		}
		admitted++
	}
	st := l.Stats()
	if st.Admitted != 2000 || st.Mode != ModeRedis {
		t.Fatalf("stats = %+v want 2000 admitted in mode redis", st)
	}
	if perMsg := float64(st.Calls) / float64(st.Admitted); perMsg > 0.1 {
		t.Fatalf("Redis calls per admitted = %d/%d = %.3f, want <= 0.1 with leasing", st.Calls, st.Admitted, perMsg)
	}
	t.Logf("%d admitted with %d Redis calls (%.4f per admission), lease now %d", st.Admitted, st.Calls, float64(st.Calls)/float64(st.Admitted), st.Lease)
	if _, ok := l.Reserve(time.Now(), cfg.Burst+1); ok {
		t.Fatalf("Reserve(burst+1) admitted")
	}
	if _, ok := l.Reserve(time.Now(), 0); !ok {
		t.Fatalf("Reserve(0) refused")
	}
}

// TestNoLeasing: with Lease < 0 every admission is one all-or-nothing call.
func TestNoLeasing(t *testing.T) {
	e := newEnv(t)
	cfg := e.cfg("nolease", algorithms.PerSecond(10000), 100)
	cfg.Lease = -1
	l := newLimiter(t, cfg)
	for i := 0; i < 50; i++ {
		if !reserveWithin(l, nil, 2, 5*time.Second) {
			t.Fatalf("no admission %d", i)
		}
	}
	st := l.Stats()
	if st.Taken != 100 || st.Admitted != 100 || st.Calls < 50 {
		t.Fatalf("stats = %+v; want 100 taken = admitted in >= 50 calls", st)
	}
}

// TestCloseReturnsLease: a slow budget (10/h, so nothing refills during the
// test) shows Close giving the unused lease back to Redis, and Cancel
// returning permits to the lease.
func TestCloseReturnsLease(t *testing.T) {
	e := newEnv(t)
	cfg := e.cfg("close", algorithms.Rate{Count: 10, Per: time.Hour}, 10)
	cfg.Lease = time.Hour // lease up to burst/2 = 5
	l := newLimiter(t, cfg)
	fill(t, l, nil)
	// Reserve(2) leaves 3 of 5: not below half the lease, so no prefetch
	// refill runs behind the checks below.
	if !reserveWithin(l, nil, 2, 5*time.Second) {
		t.Fatal("no admission")
	}
	if st := l.Stats(); st.Lease != 3 || st.Taken != 5 {
		t.Fatalf("after Reserve(2): %+v want lease 3 of 5 taken", st)
	}
	l.Cancel(time.Now(), 1)
	if st := l.Stats(); st.Lease != 4 || st.Admitted != 1 {
		t.Fatalf("after Cancel(1): %+v want lease 4, admitted 1", st)
	}
	ctx := context.Background()
	if err := l.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := l.Close(ctx); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, ok := l.Reserve(time.Now(), 1); ok {
		t.Fatalf("Reserve after Close admitted")
	}
	if st := l.Stats(); st.Returned != 4 || st.Calls != 2 {
		t.Fatalf("after Close: %+v; want 4 returned, 2 calls (one refill, one return)", st)
	}
	other := newLimiter(t, cfg)
	got, _, err := other.Take(ctx, nil, 10, false)
	if err != nil || got != 9 {
		t.Fatalf("another worker's Take(10) after Close = %d, %v; want 5 never leased + 4 returned", got, err)
	}
	if _, _, err := l.Take(ctx, nil, 1, false); !errors.Is(err, ErrClosed) {
		t.Fatalf("Take after Close err = %v want ErrClosed", err)
	}
}

// TestPerKey: one budget per key shared by every worker; keys are apart.
func TestPerKey(t *testing.T) {
	e := newEnv(t)
	cfg := e.cfg("tenant", algorithms.Rate{Count: 5, Per: time.Hour}, 5)
	cfg.Lease = time.Hour
	a, b := newLimiter(t, cfg), newLimiter(t, cfg)
	for _, k := range []string{"t1", "t2", "odd{key}\n"} {
		fill(t, a, []byte(k))
	}
	fill(t, a, nil)
	for i := 0; i < 5; i++ {
		if !reserveWithin(a, []byte("t1"), 1, 5*time.Second) {
			t.Fatalf("a: key t1 admission %d refused", i)
		}
	}
	if reserveWithin(b, []byte("t1"), 1, 100*time.Millisecond) {
		t.Fatalf("b admitted on t1 whose budget a took")
	}
	if !reserveWithin(b, []byte("t2"), 1, 5*time.Second) {
		t.Fatalf("b refused on t2, an untouched key")
	}
	if !reserveWithin(b, []byte("odd{key}\n"), 1, 5*time.Second) {
		t.Fatalf("b refused on a key with braces")
	}
	if !reserveWithin(a, nil, 1, 5*time.Second) {
		t.Fatalf("the shared budget is apart from the keys")
	}
	ctx := context.Background()
	for _, k := range []string{"{tenant:t1}", "{tenant:t2}", "{tenant:x6f64647b6b65797d0a}", "{tenant}"} {
		if n, err := e.client.Exists(ctx, e.srv.Prefix+k).Result(); err != nil || n != 1 {
			t.Errorf("key %q exists = %d, %v; want 1", e.srv.Prefix+k, n, err)
		}
	}
	a.CancelKey(time.Now(), []byte("t1"), 1)
	if w, ok := a.ReserveKey(time.Now(), []byte("t1"), 1); !ok || w != 0 {
		t.Fatalf("ReserveKey after CancelKey = %v, %v; want the permit back", w, ok)
	}
}

// TestPerKeyEviction: with MaxKeys buckets held, a new key drops the least
// recently reserved one, not the most recently added.
func TestPerKeyEviction(t *testing.T) {
	e := newEnv(t)
	cfg := e.cfg("evict", algorithms.PerSecond(1000), 10)
	cfg.Lease, cfg.MaxKeys = -1, 2 // no leasing: an admitted key has no refill queued
	l := newLimiter(t, cfg)
	for _, k := range []string{"a", "b", "a", "c"} {
		if !reserveWithin(l, []byte(k), 1, 5*time.Second) {
			t.Fatalf("key %s refused", k)
		}
	}
	l.mu.Lock()
	var held []string
	for k := range l.keys {
		held = append(held, k)
	}
	l.mu.Unlock()
	slices.Sort(held)
	if want := []string{"a", "c"}; !slices.Equal(held, want) {
		t.Fatalf("keys held = %q want %q (b least recently reserved)", held, want)
	}
}

// TestEnvelopeProperty: W workers (each its own Limiter, as separate
// processes would be) with random seeded demand never admit more than
// r*T + b + W*maxLease in any interval [t1, t2], timed by the admissions.
// The workers also cancel some grants (Cancel gives permits back to the
// lease) and now and then restart (Close gives the lease back to Redis, and
// a new Limiter starts empty): neither may mint permits.
//
// It runs a fixed seed (the same in every run, CI included), then one from
// the clock; PACER_REDIS_SEED replays a failure in place of the latter.
func TestEnvelopeProperty(t *testing.T) {
	e := newEnv(t)
	for _, seed := range testkit.Seeds(t, "PACER_REDIS_SEED", 1) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { envelopeProperty(t, e, seed) })
	}
}

func envelopeProperty(t *testing.T, e *env, seed uint64) {
	for round := 0; round < 3; round++ {
		rng := rand.New(rand.NewPCG(seed, uint64(round)))
		workers := 2 + rng.IntN(3)
		rate := 100 + rng.IntN(400)
		burst := 5 + rng.IntN(40)
		maxN := 1 + rng.IntN(3)
		t.Run(fmt.Sprintf("w%d_r%d_b%d_n%d", workers, rate, burst, maxN), func(t *testing.T) {
			cfg := e.cfg(fmt.Sprintf("env%d_%d", seed, round), algorithms.PerSecond(float64(rate)), burst)
			cfg.Lease = time.Duration(20+rng.IntN(100)) * time.Millisecond
			var (
				mu    sync.Mutex
				times []time.Time
				wg    sync.WaitGroup
				slack int
			)
			stop := time.Now().Add(1200 * time.Millisecond)
			var restarts, cancels atomic.Int64
			for w := 0; w < workers; w++ {
				l, err := New(cfg, time.Now())
				if err != nil {
					t.Fatal(err)
				}
				slack += max(l.MaxLease(), maxN)
				wrng := rand.New(rand.NewPCG(seed, uint64(round*100+w)))
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer func() { _ = l.Close(context.Background()) }()
					for time.Now().Before(stop) {
						if wrng.IntN(300) == 0 { // a worker restarts
							if err := l.Close(context.Background()); err != nil {
								t.Errorf("Close: %v", err)
							}
							if l, err = New(cfg, time.Now()); err != nil {
								t.Errorf("New: %v", err)
								return
							}
							restarts.Add(1)
						}
						n := 1 + wrng.IntN(maxN)
						wt, ok := l.Reserve(time.Now(), n)
						if ok && wrng.IntN(8) == 0 { // dropped before use
							l.Cancel(time.Now(), n)
							cancels.Add(1)
							continue
						}
						if ok {
							at := time.Now() // after the grant, so after Redis took the tokens
							mu.Lock()
							for range n {
								times = append(times, at)
							}
							mu.Unlock()
							if wrng.IntN(4) == 0 {
								time.Sleep(time.Duration(wrng.IntN(3000)) * time.Microsecond) // random think time
							}
							continue
						}
						time.Sleep(min(max(wt, 100*time.Microsecond), 5*time.Millisecond))
					}
				}()
			}
			wg.Wait()
			slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
			if len(times) <= burst {
				t.Fatalf("only %d admitted in 1.2s at %d/s", len(times), rate)
			}
			r := float64(rate)
			worst, wi, wj := -1e18, 0, 0
			for i := range times {
				for j := i; j < len(times); j++ {
					// admissions in [times[i], times[j]] minus the bound
					over := float64(j-i+1) - (r*times[j].Sub(times[i]).Seconds() + float64(burst+slack))
					if over > worst {
						worst, wi, wj = over, i, j
					}
				}
			}
			t.Logf("%d admitted in 1.2s by %d workers at %d/s burst %d lease slack %d (%d cancels, %d restarts); worst interval margin %.1f (%d..%d)",
				len(times), workers, rate, burst, slack, cancels.Load(), restarts.Load(), -worst, wi, wj)
			if worst > 0 {
				t.Fatalf("envelope broken: %d admitted in %v > %d/s*T + %d + %d",
					wj-wi+1, times[wj].Sub(times[wi]), rate, burst, slack)
			}
		})
	}
}

// TestOutage puts a TCP proxy in front of the server and cuts it mid-run:
// both policies are observed (hooks, Mode, a log line) and the limiter goes
// back to Redis when the proxy returns.
func TestOutage(t *testing.T) {
	e := newEnv(t)
	for _, policy := range []Policy{FailClosed, FailOpen} {
		t.Run(policy.String(), func(t *testing.T) {
			p := testenv.NewTCPProxy(t, e.client.Options().Addr)
			opt, err := goredis.ParseURL(e.srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			opt.Addr = p.Addr()
			opt.MaxRetries = -1
			opt.ContextTimeoutEnabled = true
			c := goredis.NewClient(opt)
			t.Cleanup(func() { _ = c.Close() })
			var logs testkit.LogBuffer
			hooks := &recHooks{}
			cfg := e.cfg("outage-"+policy.String(), algorithms.PerSecond(1000), 20)
			cfg.URL, cfg.Client = "", c
			cfg.Policy, cfg.ExpectedWorkers = policy, 2
			cfg.Timeout = 100 * time.Millisecond
			cfg.Logger, cfg.Hooks = textLogger(&logs), hooks
			l := newLimiter(t, cfg)
			for i := 0; i < 50; i++ {
				if !reserveWithin(l, nil, 1, 5*time.Second) {
					t.Fatalf("admission %d refused before the outage", i)
				}
			}
			p.Stop()
			// Spend the lease held; then Redis is needed and fails.
			waitMode(t, l, map[Policy]Mode{FailClosed: ModeFailClosed, FailOpen: ModeFailOpen}[policy], 5*time.Second)
			// The mode is published before its log line is written.
			for deadline := time.Now().Add(5 * time.Second); !strings.Contains(logs.String(), "redis failed"); {
				if time.Now().After(deadline) {
					t.Fatalf("no log line on failure: %q", logs.String())
				}
				time.Sleep(time.Millisecond)
			}
			for l.Stats().Lease > 0 {
				l.Reserve(time.Now(), 1)
			}
			before := l.Stats()
			admitted := 0
			deadline := time.Now().Add(300 * time.Millisecond)
			for time.Now().Before(deadline) {
				if _, ok := l.Reserve(time.Now(), 1); ok {
					admitted++
				}
				time.Sleep(time.Millisecond)
			}
			switch policy {
			case FailClosed:
				if admitted != 0 {
					t.Fatalf("fail-closed admitted %d during the outage", admitted)
				}
			case FailOpen:
				// the fallback runs at 1000/s / 2 workers, starting empty
				if admitted == 0 || l.Stats().Fallback == before.Fallback {
					t.Fatalf("fail-open admitted %d during the outage (fallback %d)", admitted, l.Stats().Fallback)
				}
				if admitted > 500*400/1000+1 {
					t.Fatalf("fail-open admitted %d in ~300ms at 500/s", admitted)
				}
			}
			if st := l.Stats(); st.Errors == 0 {
				t.Fatalf("no errors counted: %+v", st)
			}
			if err := p.Start(); err != nil {
				t.Fatal(err)
			}
			waitMode(t, l, ModeRedis, 5*time.Second)
			if !reserveWithin(l, nil, 1, 5*time.Second) {
				t.Fatalf("no admission after Redis returned")
			}
			if got := hooks.seen(); len(got) != 2 || got[1] != ModeRedis {
				t.Fatalf("mode changes = %v want [%v redis]", got, policy)
			}
			if !strings.Contains(logs.String(), "redis answers again") {
				t.Fatalf("no log line on recovery: %q", logs.String())
			}
		})
	}
}

// TestMiniredisRestart: the in-process server itself goes away and comes
// back (no proxy): same recovery.
func TestMiniredisRestart(t *testing.T) {
	e := newEnv(t)
	if e.srv.Mini == nil {
		t.Skipf("needs the in-process miniredis (testenv chose %s)", e.srv.Kind)
	}
	cfg := e.cfg("restart", algorithms.PerSecond(1000), 5)
	l := newLimiter(t, cfg)
	if !reserveWithin(l, nil, 1, 5*time.Second) {
		t.Fatal("no admission")
	}
	e.srv.Mini.Close()
	waitMode(t, l, ModeFailClosed, 5*time.Second)
	if err := e.srv.Mini.Restart(); err != nil {
		t.Fatal(err)
	}
	waitMode(t, l, ModeRedis, 5*time.Second)
	if !reserveWithin(l, nil, 1, 5*time.Second) {
		t.Fatal("no admission after restart")
	}
}

// TestSlowRedis: answers slower than Timeout count as failures (here a
// fail-closed limiter built from a URL through a delaying proxy), and the
// limiter comes back when Redis is fast again.
func TestSlowRedis(t *testing.T) {
	e := newEnv(t)
	p, proxyURL := e.proxied(t)
	hooks := &recHooks{}
	cfg := e.cfg("slow", algorithms.PerSecond(1000), 5)
	cfg.URL, cfg.Timeout, cfg.Hooks = proxyURL, 50*time.Millisecond, hooks
	l := newLimiter(t, cfg)
	if !reserveWithin(l, nil, 1, 5*time.Second) {
		t.Fatal("no admission")
	}
	p.SetDelay(400 * time.Millisecond)
	waitMode(t, l, ModeFailClosed, 5*time.Second)
	p.SetDelay(0)
	waitMode(t, l, ModeRedis, 5*time.Second)
	if !reserveWithin(l, nil, 1, 5*time.Second) {
		t.Fatal("no admission after Redis is fast again")
	}
	if got := hooks.seen(); len(got) < 2 || got[0] != ModeFailClosed || got[len(got)-1] != ModeRedis {
		t.Fatalf("mode changes = %v", got)
	}
}

// TestURLAuthTLSDB: a rediss:// URL with a password and a database number
// reaches an in-process TLS miniredis that requires AUTH, and the bucket
// lands in that database. A wrong password is a failure, handled by policy.
func TestURLAuthTLSDB(t *testing.T) {
	m, err := miniredis.RunTLS(selfSignedTLS(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	m.RequireAuth("s3cret")
	base := Config{Name: "tls", Rate: algorithms.PerSecond(100), Burst: 5, Timeout: time.Second, RetryInterval: 10 * time.Millisecond}

	cfg := base
	cfg.URL = "rediss://:s3cret@" + m.Addr() + "/3?skip_verify=true"
	l := newLimiter(t, cfg)
	if !reserveWithin(l, nil, 1, 5*time.Second) {
		t.Fatalf("no admission over TLS with AUTH (mode %v, %+v)", l.Mode(), l.Stats())
	}
	if !m.DB(3).Exists("pacer:{tls}") || m.DB(0).Exists("pacer:{tls}") {
		t.Fatalf("bucket not in db 3: db3 %v db0 %v", m.DB(3).Keys(), m.DB(0).Keys())
	}

	var logs testkit.LogBuffer
	bad := base
	bad.URL, bad.Logger = "rediss://:wrong@"+m.Addr()+"/3?skip_verify=true", textLogger(&logs)
	lb := newLimiter(t, bad)
	waitMode(t, lb, ModeFailClosed, 5*time.Second)
	if strings.Contains(logs.String(), "wrong") {
		t.Fatalf("the password was logged: %q", logs.String())
	}
}

func selfSignedTLS(t *testing.T) *tls.Config {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), crand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:   time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(crand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
}

// TestClusterClient runs the limiter through a go-redis ClusterClient (a
// redis.UniversalClient) against miniredis acting as a one-node cluster:
// EVALSHA is routed by the key's hash tag; shared and per-key buckets work.
// Every bucket is one key, and its hash tag {name} or {name:key} pins it to
// one slot, so the script never crosses slots.
func TestClusterClient(t *testing.T) {
	m := miniredis.RunT(t)
	c := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: []string{m.Addr()}, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	l := newLimiter(t, Config{Name: "cl", Client: c, Rate: algorithms.PerSecond(100), Burst: 10})
	if !reserveWithin(l, nil, 1, 5*time.Second) {
		t.Fatalf("no admission through a ClusterClient: %+v", l.Stats())
	}
	if !reserveWithin(l, []byte("tenant"), 1, 5*time.Second) {
		t.Fatalf("no per-key admission through a ClusterClient: %+v", l.Stats())
	}
	ctx := context.Background()
	for _, k := range []string{"pacer:{cl}", "pacer:{cl:tenant}"} {
		if !m.Exists(k) {
			t.Errorf("key %s missing; keys %v", k, m.Keys())
		}
		slot, err := c.ClusterKeySlot(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		tag := k[strings.Index(k, "{")+1 : strings.Index(k, "}")]
		if want, _ := c.ClusterKeySlot(ctx, tag).Result(); slot != want {
			t.Errorf("slot(%s) = %d want slot(%s) = %d", k, slot, tag, want)
		}
	}
}

// TestReserveDoesNotWaitForRedis: with every Redis answer 300ms late, Reserve
// returns at once, refusing with a hint, while the refill is still in flight
// (no call has completed yet); the answer then serves later Reserves.
func TestReserveDoesNotWaitForRedis(t *testing.T) {
	e := newEnv(t)
	p, proxyURL := e.proxied(t)
	p.SetDelay(150 * time.Millisecond) // per chunk each way: the dial, HELLO and script take several
	cfg := e.cfg("nowait", algorithms.PerSecond(1000), 10)
	cfg.URL, cfg.Timeout = proxyURL, 10*time.Second
	l := newLimiter(t, cfg)
	for i := 0; i < 100; i++ {
		if w, ok := l.Reserve(time.Now(), 1); ok || w <= 0 {
			t.Fatalf("Reserve %d while Redis is slow = %v, %v; want a refusal with a hint", i, w, ok)
		}
	}
	if st := l.Stats(); st.Calls != 0 {
		t.Fatalf("a Redis call completed during the Reserves (%+v): the proxy delays every exchange, so Reserve waited", st)
	}
	if !reserveWithin(l, nil, 1, 10*time.Second) {
		t.Fatalf("no admission once Redis answered: %+v", l.Stats())
	}
	if st := l.Stats(); st.Calls == 0 || st.Mode != ModeRedis {
		t.Fatalf("after the answer: %+v", st)
	}
}

// TestSetRateBurst: a new burst applies to the next script call (a bucket
// filled after it holds the new size) and to the lease bound; invalid
// values are refused and change nothing.
func TestSetRateBurst(t *testing.T) {
	e := newEnv(t)
	cfg := e.cfg("reshape", algorithms.Rate{Count: 1, Per: time.Hour}, 2)
	cfg.Lease = time.Hour
	l := newLimiter(t, cfg)
	if got := l.MaxLease(); got != 1 {
		t.Fatalf("MaxLease() = %d want 1", got)
	}
	now := time.Now()
	if err := l.SetBurst(now, 0); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("SetBurst(0) = %v want ErrInvalidConfig", err)
	}
	if err := l.SetRate(now, algorithms.Rate{}); err == nil {
		t.Fatalf("SetRate(zero) accepted")
	}
	if err := l.SetRate(now, algorithms.Rate{Count: 10, Per: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if err := l.SetBurst(now, 6); err != nil {
		t.Fatal(err)
	}
	if got := l.MaxLease(); got != 3 {
		t.Fatalf("MaxLease() after SetBurst(6) at 10/h with a 1h lease = %d want 3", got)
	}
	fill(t, l, nil)
	got, _, err := l.Take(context.Background(), nil, 10, false)
	if err != nil || got != 6 {
		t.Fatalf("Take(10) from a full bucket after SetBurst(6) = %d, %v; want 6", got, err)
	}
	if _, ok := l.Reserve(now, 7); ok {
		t.Fatalf("Reserve(7) > burst 6 admitted")
	}
}

// TestManyKeysPipelined: refills for many keys go out together, several per
// round trip, and a pipeline that meets NOSCRIPT (after SCRIPT FLUSH) falls
// back per call without an error.
func TestManyKeysPipelined(t *testing.T) {
	e := newEnv(t)
	cfg := e.cfg("many", algorithms.PerSecond(100), 10)
	cfg.RetryInterval = time.Hour // an error would show as a stuck key
	l := newLimiter(t, cfg)
	ctx := context.Background()
	for round, flush := range []bool{false, true} {
		if flush {
			if err := e.client.ScriptFlush(ctx).Err(); err != nil {
				t.Fatal(err)
			}
		}
		keys := make([][]byte, 200)
		for i := range keys {
			keys[i] = fmt.Appendf(nil, "r%d-k%d", round, i)
		}
		for _, k := range keys {
			fill(t, l, k)
		}
		for _, k := range keys {
			l.ReserveKey(time.Now(), k, 1) // queue them all
		}
		for i, k := range keys {
			if !reserveWithin(l, k, 1, 5*time.Second) {
				t.Fatalf("round %d key %d: no admission: %+v", round, i, l.Stats())
			}
		}
	}
	st := l.Stats()
	if st.Errors != 0 || st.Mode != ModeRedis {
		t.Fatalf("stats %+v: want no errors", st)
	}
	if st.Calls < 400 || st.RoundTrips >= st.Calls/2 {
		t.Fatalf("stats %+v: want >= 400 script calls in far fewer round trips", st)
	}
	t.Logf("%d script calls in %d round trips", st.Calls, st.RoundTrips)
}

// TestLongKeysBounded: a per-key budget for a 60 KB key is kept under a
// Redis key of bounded length (the key's SHA-256, algorithms.BoundKey), two
// long keys that differ only at their end get budgets of their own, and the
// in-process table keeps no 60 KB copy (3,000 such keys kept 180 MB).
func TestLongKeysBounded(t *testing.T) {
	e := newEnv(t)
	l := newLimiter(t, e.cfg("longkeys", algorithms.PerSecond(1), 1))
	ctx := context.Background()
	a := bytes.Repeat([]byte("k"), 60<<10)
	b := append(bytes.Repeat([]byte("k"), 60<<10-1), 'z')
	for _, key := range [][]byte{a, b} {
		if _, _, err := l.Take(ctx, key, 1, false); err != nil {
			t.Fatal(err)
		}
		l.ReserveKey(time.Now(), key, 1)
	}
	keys, err := e.client.Keys(ctx, e.srv.Prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2 {
		t.Errorf("Redis keys %d, want 2 (one per long key)", len(keys))
	}
	for _, k := range keys {
		if len(k) > len(e.srv.Prefix)+200 {
			t.Errorf("Redis key of %d bytes for a 60 KB key, want bounded", len(k))
		}
	}
	l.mu.Lock()
	for name := range l.keys {
		if len(name) > algorithms.MaxKeyBytes+1 {
			t.Errorf("bucket table keeps a %d-byte key", len(name))
		}
	}
	l.mu.Unlock()
}
