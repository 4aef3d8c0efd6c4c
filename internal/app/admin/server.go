package admin

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// Defaults of Limits: an admin listener serves probes, a Prometheus scrape
// and an operator's requests, all small and short.
const (
	DefaultReadHeaderTimeout = 5 * time.Second
	DefaultReadTimeout       = 10 * time.Second
	DefaultWriteTimeout      = 30 * time.Second
	DefaultIdleTimeout       = 30 * time.Second // above a 15 s scrape interval: its keep-alive stays
	DefaultMaxHeaderBytes    = 64 << 10
	DefaultMaxConns          = 256
)

// Limits bound what clients of the admin server can hold. A zero field
// takes its Default.
type Limits struct {
	// ReadHeaderTimeout closes a connection whose request headers have not
	// arrived in time (one opened and left silent included).
	ReadHeaderTimeout time.Duration
	// ReadTimeout and WriteTimeout bound reading a whole request and
	// writing its response.
	ReadTimeout, WriteTimeout time.Duration
	// IdleTimeout closes a keep-alive connection left idle that long.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request's headers.
	MaxHeaderBytes int
	// MaxConns bounds the connections held open. When a new one would
	// exceed it, the connection idle longest (silent since it opened, or
	// between requests) is closed to make room; a connection serving a
	// request is never closed for it, and when all are busy the new one is
	// closed. So a flood of idle connections costs at most MaxConns
	// connections' memory and file descriptors, and /healthz and /readyz
	// keep answering.
	MaxConns int
}

func (l Limits) withDefaults() Limits {
	or := func(d *time.Duration, def time.Duration) {
		if *d <= 0 {
			*d = def
		}
	}
	or(&l.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	or(&l.ReadTimeout, DefaultReadTimeout)
	or(&l.WriteTimeout, DefaultWriteTimeout)
	or(&l.IdleTimeout, DefaultIdleTimeout)
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if l.MaxConns <= 0 {
		l.MaxConns = DefaultMaxConns
	}
	return l
}

// NewServer returns the admin HTTP server for h with lim's timeouts,
// header bound and connection cap (see Limits). Serve it on a listener;
// Shutdown stops it.
func NewServer(h http.Handler, lim Limits) *http.Server {
	lim = lim.withDefaults()
	c := &connCap{max: lim.MaxConns, conns: map[net.Conn]*connEntry{}}
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: lim.ReadHeaderTimeout,
		ReadTimeout:       lim.ReadTimeout,
		WriteTimeout:      lim.WriteTimeout,
		IdleTimeout:       lim.IdleTimeout,
		MaxHeaderBytes:    lim.MaxHeaderBytes,
		ConnState:         c.track,
	}
}

// connCap keeps at most max connections open, closing the one idle
// longest to make room (see Limits.MaxConns). It learns of connections
// through http.Server.ConnState.
type connCap struct {
	max int

	mu    sync.Mutex
	conns map[net.Conn]*connEntry
	open  int    // conns not yet closed by the cap
	seq   uint64 // orders entries by when they went idle
}

type connEntry struct {
	busy    bool   // serving a request
	idle    uint64 // seq when it last became idle (or opened)
	closing bool   // closed by the cap; StateClosed still to come
}

func (c *connCap) track(conn net.Conn, st http.ConnState) {
	var victim net.Conn
	c.mu.Lock()
	switch st {
	case http.StateNew:
		c.seq++
		c.conns[conn] = &connEntry{idle: c.seq}
		c.open++
		if c.open > c.max {
			victim = c.idlestLocked(conn)
			if victim == nil {
				victim = conn // every other one is busy
			}
			c.conns[victim].closing = true
			c.open--
		}
	case http.StateActive, http.StateIdle:
		if e, ok := c.conns[conn]; ok {
			e.busy = st == http.StateActive
			if !e.busy {
				c.seq++
				e.idle = c.seq
			}
		}
	case http.StateHijacked, http.StateClosed:
		if e, ok := c.conns[conn]; ok {
			if !e.closing {
				c.open--
			}
			delete(c.conns, conn)
		}
	}
	c.mu.Unlock()
	if victim != nil {
		_ = victim.Close()
	}
}

// idlestLocked returns the connection other than except idle longest, or
// nil when all are busy. O(max) per call, on a connection beyond the cap
// only.
func (c *connCap) idlestLocked(except net.Conn) net.Conn {
	var best net.Conn
	var bestSeq uint64
	for conn, e := range c.conns {
		if conn == except || e.busy || e.closing {
			continue
		}
		if best == nil || e.idle < bestSeq {
			best, bestSeq = conn, e.idle
		}
	}
	return best
}
