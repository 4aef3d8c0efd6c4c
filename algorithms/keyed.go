package algorithms

import (
	"fmt"
	"math"
	"sync"
	"time"
)

// KeyedConfig configures a Keyed limiter table.
type KeyedConfig struct {
	// MaxKeys bounds the table (>= 1): memory is MaxKeys limiters.
	MaxKeys int
	// IdleTTL evicts a key unused for IdleTTL; it then starts afresh from
	// New. Choose IdleTTL at least the time a key's limiter takes to refill
	// (Burst/Rate for a bucket), so that eviction never hands a key more than
	// it would have had anyway. 0 = keys never go idle.
	IdleTTL time.Duration
	// New makes the limiter of a key first seen at now. Required. It is
	// called with the table locked, so it must not call back into the
	// Keyed; when it fails the request is refused (wait 0).
	New func(now time.Time) (Limiter, error)
}

// Keyed holds one limiter per key (tenant, user, message key) in a bounded
// table, least recently used first.
//
// Guarantee: isolation. A key's decisions depend only on that key's own
// requests: one hot key cannot take another key's budget. Memory is bounded
// by MaxKeys entries of at most MaxKeyBytes+1 key bytes each: a key longer
// than MaxKeyBytes is held by its SHA-256 digest (see BoundKey), so 10,000
// keys of any length cost a few megabytes (a DualRate, the entry and at
// most 65 key bytes: about 400 bytes a key, BenchmarkKeyedLongKeys).
//
// Full-table policy: when a new key arrives and the table is full, keys idle
// for IdleTTL or more are evicted first; if none is, the new key is refused
// (ok=false, consuming nothing) with a wait hint of when the least recently
// used key becomes idle (0 when IdleTTL is 0). Busy keys are never evicted,
// because a fresh limiter would hand an evicted busy key a full burst again.
//
// Lookups do not allocate (the key []byte is not copied); adding a key
// allocates one table entry. A stale now is passed on to the key's limiter
// (which treats it as its latest time) and never makes a key look idle.
// Safe for concurrent use: one mutex over the table and the key's decision.
type Keyed struct {
	mu   sync.Mutex
	cfg  KeyedConfig
	m    map[string]*keyEntry
	head keyEntry // sentinel of the LRU list: head.next is the most recent
	last latest   // latest Unix ns seen
}

type keyEntry struct {
	key        string
	lim        Limiter
	used       int64 // Unix ns of the last use
	prev, next *keyEntry
}

// NewKeyed returns an empty keyed table at now (a later call with an
// earlier time counts as now for idleness; the zero Time: nothing seen).
func NewKeyed(cfg KeyedConfig, now time.Time) (*Keyed, error) {
	if cfg.MaxKeys < 1 {
		return nil, fmt.Errorf("%w: keyed max keys %d must be >= 1", ErrInvalidConfig, cfg.MaxKeys)
	}
	if err := checkDuration("keyed idle ttl", cfg.IdleTTL, true); err != nil {
		return nil, err
	}
	if cfg.New == nil {
		return nil, fmt.Errorf("%w: keyed New is nil", ErrInvalidConfig)
	}
	k := &Keyed{cfg: cfg, m: make(map[string]*keyEntry, min(cfg.MaxKeys, 1024)), last: latest{unixNano(now)}}
	k.head.next, k.head.prev = &k.head, &k.head
	return k, nil
}

func (k *Keyed) unlink(e *keyEntry) {
	e.prev.next, e.next.prev = e.next, e.prev
}

func (k *Keyed) pushFront(e *keyEntry) {
	e.prev, e.next = &k.head, k.head.next
	k.head.next.prev = e
	k.head.next = e
}

// evictIdle removes keys idle for IdleTTL at t, oldest first.
func (k *Keyed) evictIdle(t int64) {
	if k.cfg.IdleTTL <= 0 {
		return
	}
	for e := k.head.prev; e != &k.head && t-e.used >= int64(k.cfg.IdleTTL); e = k.head.prev {
		k.unlink(e)
		delete(k.m, e.key)
	}
}

// ReserveKey asks key's limiter for n permits at now (see Limiter). A new
// key is added when there is room (see the full-table policy).
func (k *Keyed) ReserveKey(now time.Time, key []byte, n int) (time.Duration, bool) {
	var kb KeyBuf
	key = BoundKey(key, &kb)
	t := unixNano(now)
	k.mu.Lock()
	defer k.mu.Unlock()
	t = k.last.see(t)
	e, ok := k.m[string(key)]
	if !ok {
		if len(k.m) >= k.cfg.MaxKeys {
			k.evictIdle(t)
		}
		if len(k.m) >= k.cfg.MaxKeys {
			if k.cfg.IdleTTL <= 0 {
				return Never, false // keys never leave: no room, ever
			}
			return time.Duration(k.head.prev.used + int64(k.cfg.IdleTTL) - t), false
		}
		lim, err := k.cfg.New(now)
		if err != nil || lim == nil {
			return 0, false
		}
		e = &keyEntry{key: string(key), lim: lim}
		k.m[e.key] = e
	} else {
		k.unlink(e)
	}
	e.used = t
	k.pushFront(e)
	return e.lim.Reserve(now, n)
}

// TokensKey returns key's limiter's Tokens at now: for a key not held, what
// a new limiter would hold (New is called and the limiter dropped; the table
// is unchanged); +Inf when the limiter does not read its tokens, 0 when New
// fails.
func (k *Keyed) TokensKey(now time.Time, key []byte) float64 {
	var kb KeyBuf
	key = BoundKey(key, &kb)
	k.mu.Lock()
	defer k.mu.Unlock()
	var lim Limiter
	if e, ok := k.m[string(key)]; ok {
		lim = e.lim
	} else if l, err := k.cfg.New(now); err == nil && l != nil {
		lim = l
	} else {
		return 0
	}
	if tr, ok := lim.(TokenReader); ok {
		return tr.Tokens(now)
	}
	return math.Inf(1)
}

// CancelKey gives back n permits to key's limiter (no-op for an unknown key).
func (k *Keyed) CancelKey(now time.Time, key []byte, n int) {
	var kb KeyBuf
	key = BoundKey(key, &kb)
	k.mu.Lock()
	defer k.mu.Unlock()
	if e, ok := k.m[string(key)]; ok {
		e.lim.Cancel(now, n)
	}
}

// Len returns the number of keys held.
func (k *Keyed) Len() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.m)
}
