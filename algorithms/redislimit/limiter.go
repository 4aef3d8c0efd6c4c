// Package redislimit is pacer's distributed limiter: one token bucket in Redis
// shared by every worker, served locally from small leases.
//
// Model. The bucket (Config.Rate, Config.Burst) lives in Redis and is changed
// only by one Lua script (see bucketScript) that reads the Redis server's
// clock, so workers' clock skew does not matter. A worker does not ask Redis
// per message: it takes a lease of whole tokens (about Config.Lease worth of
// its recent admission rate, at most Rate*Lease and Burst/2) and serves
// Reserve from it. Tokens come out of the bucket before they are admitted, so
// for every interval of length T, all workers together admit at most
//
//	r*T + b + workers * maxLease
//
// where maxLease = max(min(max(1, Burst/2), max(1, ceil(Rate*Lease))), largest
// n asked): the bucket's envelope plus the leases held at the interval's
// start. (Half the burst at most, so that a worker waiting for its lease never
// needs a full bucket, and no token overflows while every worker waits.)
//
// Reserve never blocks on the network. When the lease is short it returns
// ok=false with a small wait hint and queues a refill; one background
// goroutine (the one exception to "algorithms have no goroutines", started by
// New and stopped by Close) runs refills one at a time, each bounded by
// Config.Timeout. Cancel returns permits to the local lease; Close returns
// unused lease tokens to Redis. A call that times out may still have taken
// tokens on the server; they are lost, never double-spent (the error is on the
// safe side). Per-key buckets (ReserveKey) are refilled by the same goroutine,
// one after another.
//
// Fail modes: a refill error or timeout switches the Limiter to the policy's
// mode at once; tokens already leased are still served.
//
// When Redis fails or is slow, Config.Policy decides (FailClosed: admit
// nothing beyond the lease held; FailOpen: a local algorithms.TokenBucket at
// Rate/ExpectedWorkers); the Limiter keeps probing every RetryInterval and
// switches back when Redis answers. Mode, Stats, the Logger and Hooks show it.
//
// Time: Reserve's now orders the local decisions (when to ask Redis again);
// the bucket itself runs on the Redis server's clock.
package redislimit

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pacer-dev/pacer/algorithms"
)

// Limiter is a Redis-backed global token bucket with local leases. It
// implements algorithms.Limiter for one shared budget (Reserve, Cancel) and
// offers per-key budgets (ReserveKey, CancelKey: one bucket per key shared by
// all workers). Safe for concurrent use. Create with New; Close when done.
type Limiter struct {
	cfg       Config
	u         units
	client    goredis.UniversalClient
	ownClient bool
	maxLease  int
	leasing   bool
	fbRate    algorithms.Rate
	fbBurst   int
	callHooks CallHooks

	ctx    context.Context // cancelled by Close: aborts an in-flight call
	cancel context.CancelFunc
	wake   chan struct{}
	done   chan struct{}

	mu         sync.Mutex
	closed     bool
	mode       Mode
	stampRetry bool      // a failure happened; next Reserve sets nextProbe
	nextProbe  time.Time // while failing, no probe before this (Reserve's clock)
	main       *bucket
	lanes      []*bucket // priority lanes' leases of the shared budget (Config.Lanes)
	keys       map[string]*bucket
	lru        list.List // per-key buckets, most recently reserved first
	queue      []*bucket
	rtt        time.Duration // smoothed round trip of successful calls
	st         Stats
}

var _ algorithms.Limiter = (*Limiter)(nil)

// Stats is a snapshot of a Limiter's counters, for metrics.
type Stats struct {
	Mode       Mode   // current mode
	Calls      uint64 // Redis script calls (refills, probes, returns)
	RoundTrips uint64 // background round trips (a pipeline of refills is one)
	Errors     uint64 // failed or timed-out calls
	Taken      uint64 // tokens taken from Redis
	Returned   uint64 // tokens given back to Redis (Close)
	Admitted   uint64 // permits granted by Reserve/ReserveKey, less Cancel
	Fallback   uint64 // permits granted by the fail-open fallback
	Lease      int    // tokens held locally for the shared budget
	Keys       int    // per-key buckets held locally
}

// bucket is the local side of one Redis bucket: the lease held and the
// demand seen.
type bucket struct {
	key  string // Redis key
	name string // per-key map key ("" for the main bucket)

	lease  int // whole tokens held
	want   int // latest unmet n
	queued bool

	rate     float64 // admitted permits/s, smoothed
	winStart time.Time
	winCount int

	notBefore time.Time     // no refill before (Reserve's clock)
	pending   time.Duration // server wait from the last refill, to stamp
	stamp     bool

	fallback *algorithms.TokenBucket // fail-open local bucket
	elem     *list.Element           // in Limiter.lru (per-key buckets)
	lane     *laneArgs               // a lane's lease of the shared budget (laneScript); nil otherwise
}

// New validates cfg, connects (lazily: go-redis dials on first use) and
// starts the background refill goroutine. now is unused by the bucket but
// starts the local demand estimate.
func New(cfg Config, now time.Time) (*Limiter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	u, _ := unitsFor(cfg.Rate, cfg.Burst)
	l := &Limiter{cfg: cfg, u: u, client: cfg.Client, leasing: cfg.Lease > 0,
		wake: make(chan struct{}, 1), done: make(chan struct{}), keys: map[string]*bucket{}}
	if l.client == nil {
		opt, err := goredis.ParseURL(cfg.URL)
		if err != nil {
			return nil, fmt.Errorf("%w: url: %v", ErrInvalidConfig, err)
		}
		// go-redis ignores context deadlines unless told otherwise; the
		// Timeout (a slow Redis is a failing Redis) depends on them.
		opt.ContextTimeoutEnabled = true
		l.client, l.ownClient = goredis.NewClient(opt), true
	} else if !contextTimeouts(l.client) {
		cfg.Logger.Warn("redis limiter: the given client ignores context deadlines (go-redis ContextTimeoutEnabled is false); a slow Redis is noticed only after the client's own read timeout",
			"limiter", cfg.Name, "timeout", cfg.Timeout)
	}
	if ch, ok := cfg.Hooks.(CallHooks); ok {
		l.callHooks = ch
	}
	l.maxLease = l.maxLeaseFor(cfg.Rate, cfg.Burst)
	if cfg.Policy == FailOpen {
		l.fbRate, l.fbBurst, _ = fallbackRate(cfg.Rate, cfg.Burst, cfg.ExpectedWorkers)
	}
	l.main = l.newBucket(l.redisKey(nil), "", now)
	l.newLanes(now)
	l.ctx, l.cancel = context.WithCancel(context.Background())
	go l.loop()
	return l, nil
}

// maxLeaseFor is min(max(1, burst/2), max(1, ceil(r*Lease))), or 1 without
// leasing. At most half the burst: a worker waiting for its lease to fill
// then never needs the bucket full, so tokens do not overflow while every
// worker waits.
func (l *Limiter) maxLeaseFor(r algorithms.Rate, burst int) int {
	if !l.leasing {
		return 1
	}
	per := r.PerSecond() * l.cfg.Lease.Seconds()
	return int(math.Min(float64(max(1, burst/2)), math.Max(1, math.Ceil(per))))
}

// SetRate changes the shared rate as this worker applies it from now on
// (every script call carries the rate, so the bucket refills at the rate of
// whichever worker calls; give every worker the same rate). Leases already
// held are kept.
func (l *Limiter) SetRate(now time.Time, r algorithms.Rate) error {
	l.mu.Lock()
	burst := l.cfg.Burst
	l.mu.Unlock()
	return l.reshape(r, burst)
}

// SetBurst changes the shared bucket's capacity, like SetRate.
func (l *Limiter) SetBurst(now time.Time, burst int) error {
	l.mu.Lock()
	r := l.cfg.Rate
	l.mu.Unlock()
	return l.reshape(r, burst)
}

// Reshape changes rate and burst together, like SetRate and SetBurst, or
// neither: an invalid pair is refused before anything changes (a reload
// needs no rollback).
func (l *Limiter) Reshape(now time.Time, r algorithms.Rate, burst int) error {
	return l.reshape(r, burst)
}

func (l *Limiter) reshape(r algorithms.Rate, burst int) error {
	if burst < 1 {
		return fmt.Errorf("%w: burst %d must be >= 1", ErrInvalidConfig, burst)
	}
	u, err := unitsFor(r, burst)
	if err != nil {
		return err
	}
	var fr algorithms.Rate
	fb := 0
	if l.cfg.Policy == FailOpen {
		if fr, fb, err = fallbackRate(r, burst, l.cfg.ExpectedWorkers); err != nil {
			return fmt.Errorf("%w: fail-open fallback: %w", ErrInvalidConfig, err)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cfg.Rate, l.cfg.Burst, l.u = r, burst, u
	l.maxLease = l.maxLeaseFor(r, burst)
	l.fbRate, l.fbBurst = fr, fb
	l.dropFallbacksLocked()
	return nil
}

// dropFallbacksLocked discards every fail-open bucket, so the next failure
// starts fresh ones at the current fallback rate.
func (l *Limiter) dropFallbacksLocked() {
	l.main.fallback = nil
	for _, b := range l.lanes {
		b.fallback = nil
	}
	for _, b := range l.keys {
		b.fallback = nil
	}
}

func (l *Limiter) newBucket(key, name string, now time.Time) *bucket {
	return &bucket{key: key, name: name, winStart: now,
		rate: l.cfg.Rate.PerSecond() / float64(l.cfg.ExpectedWorkers)}
}

// Reserve asks for n permits of the shared budget at now. It never blocks on
// the network: ok=true (wait always 0) when the local lease covers n;
// otherwise ok=false, nothing consumed, and wait hints when to ask again
// while a refill runs in the background. n > Burst is refused with
// algorithms.Never; a closed limiter refuses with wait 0.
func (l *Limiter) Reserve(now time.Time, n int) (time.Duration, bool) {
	return l.reserve(now, nil, n)
}

// Cancel returns n permits from an earlier grant to the local lease.
func (l *Limiter) Cancel(now time.Time, n int) { l.cancelN(now, nil, n) }

// ReserveKey is Reserve for key's own budget (Rate, Burst per key, shared by
// all workers): one tenant's limit across the fleet.
func (l *Limiter) ReserveKey(now time.Time, key []byte, n int) (time.Duration, bool) {
	return l.reserve(now, boundKey(key), n)
}

// CancelKey returns n permits of key's budget to the local lease.
func (l *Limiter) CancelKey(now time.Time, key []byte, n int) {
	l.cancelN(now, boundKey(key), n)
}

// boundKey is key as the per-key buckets keep it: at most
// algorithms.MaxKeyBytes+1 bytes (a longer key by its SHA-256, see
// algorithms.BoundKey), so the bucket table and the Redis key names stay
// bounded whatever the keys; nil is the empty key.
func boundKey(key []byte) []byte {
	if key == nil {
		return []byte{}
	}
	if len(key) > algorithms.MaxKeyBytes {
		var kb algorithms.KeyBuf
		return algorithms.BoundKey(key, &kb)
	}
	return key
}

// bucketLocked returns the bucket for key (nil: the main one), creating it.
func (l *Limiter) bucketLocked(now time.Time, key []byte) *bucket {
	if key == nil {
		return l.main
	}
	if b, ok := l.keys[string(key)]; ok {
		return b
	}
	if len(l.keys) >= l.cfg.MaxKeys {
		// The least recently reserved bucket without a refill in flight;
		// its lease is dropped: conservative, never minted.
		for e := l.lru.Back(); e != nil; e = e.Prev() {
			if old := e.Value.(*bucket); !old.queued {
				l.lru.Remove(e)
				delete(l.keys, old.name)
				break
			}
		}
	}
	name := string(key)
	b := l.newBucket(l.redisKey(key), name, now)
	b.elem = l.lru.PushFront(b)
	l.keys[name] = b
	return b
}

// redisKey is the Redis key of key's bucket (nil: the shared budget's); the
// braces make every bucket of one limiter hash to one cluster slot.
func (l *Limiter) redisKey(key []byte) string {
	if key == nil {
		return l.cfg.Prefix + "{" + l.cfg.Name + "}"
	}
	return l.cfg.Prefix + "{" + l.cfg.Name + ":" + tagSafe(string(key)) + "}"
}

// tagSafe keeps a key printable and free of braces (which would break the
// hash tag); otherwise it is hex-encoded with an "x" prefix. Raw keys that
// start with 'x' or 's' get an "s" prefix, so the mapping is one-to-one.
func tagSafe(k string) string {
	for i := 0; i < len(k); i++ {
		if c := k[i]; c < 0x21 || c > 0x7e || c == '{' || c == '}' {
			return fmt.Sprintf("x%x", k)
		}
	}
	if strings.HasPrefix(k, "x") || strings.HasPrefix(k, "s") {
		return "s" + k
	}
	return k
}

func (l *Limiter) reserve(now time.Time, key []byte, n int) (time.Duration, bool) {
	return l.reserveOn(now, key, n)
}

// reserveOn reserves n permits of the bucket for key ([]byte, nil: the
// shared budget) or of a lane's lease (*bucket).
func (l *Limiter) reserveOn(now time.Time, which any, n int) (time.Duration, bool) {
	if n <= 0 {
		return 0, true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if n > l.cfg.Burst {
		return algorithms.Never, false
	}
	if l.closed {
		return 0, false
	}
	if l.stampRetry {
		l.nextProbe, l.stampRetry = now.Add(l.cfg.RetryInterval), false
	}
	b := l.pickLocked(now, which)
	if b.elem != nil {
		l.lru.MoveToFront(b.elem)
	}
	if b.stamp {
		b.notBefore, b.stamp = now.Add(b.pending), false
	}
	if b.lease >= n {
		b.lease -= n
		l.admitLocked(b, now, n)
		if l.leasing && l.mode == ModeRedis && b.lease*2 < l.targetLocked(b) {
			l.requestLocked(b, now)
		}
		return 0, true
	}
	b.want = n
	if l.mode != ModeRedis {
		if !now.Before(l.nextProbe) && !b.queued {
			l.nextProbe = now.Add(l.cfg.RetryInterval)
			l.enqueueLocked(b)
		}
		if l.mode == ModeFailOpen {
			if b.fallback == nil {
				// fallbackRate checked that it builds: no error here.
				b.fallback, _ = newFallback(l.fbRate, l.fbBurst, now)
			}
			w, ok := b.fallback.Reserve(now, n)
			if ok && w == 0 {
				l.st.Fallback += uint64(n)
				l.admitLocked(b, now, n)
				return 0, true
			}
			if ok { // a borrowing fallback: give it back, hint the wait
				b.fallback.Cancel(now, n)
			}
			if w == algorithms.Never { // above the fallback's burst: not Redis's
				w = 0
			}
			return max(w, l.hintLocked()), false
		}
		return max(l.nextProbe.Sub(now), l.hintLocked()), false
	}
	l.requestLocked(b, now)
	if b.queued {
		return l.hintLocked(), false
	}
	return max(b.notBefore.Sub(now), l.hintLocked()), false
}

// hintLocked is the wait suggested while a refill is in flight: RefillHint,
// or the smoothed round trip within [100µs, 2ms] (1ms before any answer).
func (l *Limiter) hintLocked() time.Duration {
	if l.cfg.RefillHint > 0 {
		return l.cfg.RefillHint
	}
	if l.rtt == 0 {
		return time.Millisecond
	}
	return min(max(l.rtt, 100*time.Microsecond), 2*time.Millisecond)
}

func (l *Limiter) cancelN(now time.Time, key []byte, n int) { l.cancelOn(now, key, n) }

// pickLocked is the bucket reserveOn and cancelOn work on.
func (l *Limiter) pickLocked(now time.Time, which any) *bucket {
	if b, ok := which.(*bucket); ok {
		return b
	}
	return l.bucketLocked(now, which.([]byte))
}

func (l *Limiter) cancelOn(now time.Time, which any, n int) {
	if n <= 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	b := l.pickLocked(now, which)
	if l.mode == ModeFailOpen && b.fallback != nil {
		b.fallback.Cancel(now, n)
	} else {
		b.lease = min(b.lease+n, max(l.maxLease, n))
	}
	b.winCount = max(0, b.winCount-n)
	l.st.Admitted -= min(l.st.Admitted, uint64(n))
}

// admitLocked counts n admitted permits and updates b's demand estimate
// (admitted permits per second, halved in weight every 250ms window).
func (l *Limiter) admitLocked(b *bucket, now time.Time, n int) {
	l.st.Admitted += uint64(n)
	b.winCount += n
	if el := now.Sub(b.winStart); el >= 250*time.Millisecond {
		b.rate = 0.5*b.rate + 0.5*float64(b.winCount)/el.Seconds()
		b.winStart, b.winCount = now, 0
	}
}

// targetLocked is the lease b aims for: Lease worth of its recent rate,
// within [max(1, want), max(maxLease, want)].
func (l *Limiter) targetLocked(b *bucket) int {
	if !l.leasing {
		return b.want
	}
	t := int(math.Ceil(b.rate * l.cfg.Lease.Seconds()))
	return max(min(t, l.maxLease), b.want, 1)
}

// requestLocked queues a refill for b unless one is queued or the server
// said the tokens are not there yet.
func (l *Limiter) requestLocked(b *bucket, now time.Time) {
	if b.queued || b.stamp || now.Before(b.notBefore) {
		return
	}
	l.enqueueLocked(b)
}

func (l *Limiter) enqueueLocked(b *bucket) {
	b.queued = true
	l.queue = append(l.queue, b)
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// loop is the background goroutine: it runs queued refills one at a time.
func (l *Limiter) loop() {
	defer close(l.done)
	for {
		select {
		case <-l.ctx.Done():
			return
		case <-l.wake:
		}
		for l.refillOne() {
		}
	}
}

// maxBatch bounds the refills sent in one round trip (a pipeline).
const maxBatch = 32

// refillOne runs the queued refills, up to maxBatch of them in one round
// trip (per-key buckets queue up together); false when the queue is empty.
func (l *Limiter) refillOne() bool {
	l.mu.Lock()
	if len(l.queue) == 0 || l.closed {
		l.mu.Unlock()
		return false
	}
	var (
		bs   []*bucket
		jobs []job
	)
	for len(l.queue) > 0 && len(jobs) < maxBatch {
		b := l.queue[0]
		l.queue[0] = nil
		l.queue = l.queue[1:]
		take := l.targetLocked(b) - b.lease
		if b.want > b.lease && l.mode != ModeRedis {
			take = max(take, b.want-b.lease)
		}
		if take <= 0 {
			b.queued = false
			continue
		}
		least := 1
		if !l.leasing {
			least = take
		}
		bs = append(bs, b)
		jobs = append(jobs, job{key: b.key, n: take, min: least, lane: b.lane})
	}
	if len(jobs) == 0 {
		l.mu.Unlock()
		return true
	}
	u := l.u
	l.mu.Unlock()

	start := time.Now() // wall clock: for the round-trip hint and hooks only
	ctx, cancel := context.WithTimeout(l.ctx, l.cfg.Timeout)
	res, errs := runScripts(ctx, l.client, u, jobs)
	cancel()
	rtt := time.Since(start)
	var firstErr error
	for _, err := range errs {
		if err != nil {
			firstErr = err
			break
		}
	}
	if l.callHooks != nil {
		l.callHooks.OnRedisCall(l.cfg.Name, rtt, firstErr)
	}

	l.mu.Lock()
	l.st.RoundTrips++
	from := l.mode
	failed, ok := false, false
	for i, b := range bs {
		b.queued = false
		l.st.Calls++
		if err := errs[i]; err != nil {
			if l.closed && errors.Is(err, context.Canceled) {
				continue
			}
			l.st.Errors++
			failed = true
			continue
		}
		ok = true
		l.st.Taken += uint64(res[i].granted)
		b.lease += res[i].granted
		if b.lease >= b.want {
			b.want = 0
		}
		if res[i].granted < jobs[i].n && res[i].wait > 0 {
			b.pending, b.stamp = res[i].wait, true
		}
	}
	if l.closed {
		l.mu.Unlock()
		return false
	}
	if failed {
		l.stampRetry = true
	}
	switch {
	case failed && l.mode == ModeRedis:
		l.mode = ModeFailClosed
		if l.cfg.Policy == FailOpen {
			l.mode = ModeFailOpen
		}
	case !failed && ok:
		if l.rtt == 0 {
			l.rtt = rtt
		} else {
			l.rtt = (3*l.rtt + rtt) / 4
		}
		if l.mode != ModeRedis {
			l.mode = ModeRedis
			l.nextProbe = time.Time{}
			l.dropFallbacksLocked()
		}
	}
	to := l.mode
	l.mu.Unlock()
	if from != to {
		l.modeChanged(from, to, firstErr)
	}
	return true
}

func (l *Limiter) modeChanged(from, to Mode, err error) {
	if to == ModeRedis {
		l.cfg.Logger.Info("redis limiter: redis answers again; using the global budget",
			"limiter", l.cfg.Name, "from", from.String(), "mode", to.String())
	} else {
		l.cfg.Logger.Warn("redis limiter: redis failed; applying the failure policy",
			"limiter", l.cfg.Name, "mode", to.String(), "error", err)
	}
	if l.cfg.Hooks != nil {
		l.cfg.Hooks.OnModeChange(l.cfg.Name, from, to, err)
	}
}

// Mode returns where decisions come from now.
func (l *Limiter) Mode() Mode {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mode
}

// Stats returns a snapshot of the counters.
func (l *Limiter) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.st
	s.Mode, s.Lease, s.Keys = l.mode, l.main.lease, len(l.keys)
	for _, b := range l.lanes {
		s.Lease += b.lease
	}
	return s
}

// MaxLease is the most tokens one worker holds for one bucket when the
// requests are at most this size: the per-worker slack in the envelope.
func (l *Limiter) MaxLease() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.maxLease
}

// Take runs the script once, synchronously: it takes up to n tokens of the
// shared budget (key nil) or of key's budget, all or nothing when exact is
// true, and returns how many it got and, when short, how long until the
// missing ones would be there. It bypasses the lease: for tools, tests and
// callers that want one Redis call per decision.
func (l *Limiter) Take(ctx context.Context, key []byte, n int, exact bool) (granted int, wait time.Duration, err error) {
	if key != nil {
		key = boundKey(key)
	}
	l.mu.Lock()
	closed := l.closed
	k := l.redisKey(key)
	l.st.Calls++
	u := l.u
	l.mu.Unlock()
	if closed {
		return 0, 0, ErrClosed
	}
	least := 1
	if exact {
		least = n
	}
	res, err := runScript(ctx, l.client, k, u, n, least)
	if err != nil {
		l.mu.Lock()
		l.st.Errors++
		l.mu.Unlock()
		return 0, 0, err
	}
	l.mu.Lock()
	l.st.Taken += uint64(res.granted)
	l.mu.Unlock()
	return res.granted, res.wait, nil
}

// Give adds n tokens to the shared budget (key nil) or to key's budget,
// never above its burst, bypassing the lease: for tools and tests that
// want a budget to start full (a missing budget key is an empty bucket).
func (l *Limiter) Give(ctx context.Context, key []byte, n int) error {
	if n <= 0 {
		return nil
	}
	if key != nil {
		key = boundKey(key)
	}
	l.mu.Lock()
	closed, k, u := l.closed, l.redisKey(key), l.u
	l.st.Calls++
	l.mu.Unlock()
	if closed {
		return ErrClosed
	}
	if _, err := runScript(ctx, l.client, k, u, -n, 0); err != nil {
		l.mu.Lock()
		l.st.Errors++
		l.mu.Unlock()
		return err
	}
	return nil
}

// Close stops the background goroutine and gives every unused lease token
// back to Redis (bounded by ctx), then closes the client if New created it.
// Reserve refuses after Close. Idempotent: later calls return nil.
func (l *Limiter) Close(ctx context.Context) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.mu.Unlock()
	l.cancel()
	<-l.done

	l.mu.Lock()
	bs := append(append([]*bucket{l.main}, l.lanes...), mapValues(l.keys)...)
	l.mu.Unlock()
	var errs []error
	for _, b := range bs {
		l.mu.Lock()
		n, u := b.lease, l.u
		b.lease = 0
		l.mu.Unlock()
		if n == 0 {
			continue
		}
		_, err := runScript(ctx, l.client, b.key, u, -n, 0)
		l.mu.Lock()
		l.st.Calls++
		if err != nil {
			l.st.Errors++
			errs = append(errs, fmt.Errorf("algorithms/redislimit: returning %d tokens to %s: %w", n, b.key, err))
		} else {
			l.st.Returned += uint64(n)
		}
		l.mu.Unlock()
	}
	if l.ownClient {
		if err := l.client.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// contextTimeouts reports whether c honours context deadlines (unknown
// client types are assumed to).
func contextTimeouts(c goredis.UniversalClient) bool {
	switch c := c.(type) {
	case *goredis.Client:
		return c.Options().ContextTimeoutEnabled
	case *goredis.ClusterClient:
		return c.Options().ContextTimeoutEnabled
	case *goredis.Ring:
		return c.Options().ContextTimeoutEnabled
	}
	return true
}

func mapValues(m map[string]*bucket) []*bucket {
	out := make([]*bucket, 0, len(m))
	for _, b := range m {
		out = append(out, b)
	}
	return out
}
