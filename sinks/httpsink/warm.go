package httpsink

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// connPool pre-dials keep-alive connections to the API and keeps them warm,
// so a request never waits for a TCP (and TLS) handshake. The transport
// asks it for a connection whenever its own idle pool has none (the
// DialContext / DialTLSContext hook): it gets a spare at once, and the
// pool dials a replacement in the background.
//
// It keeps connections open to the API (spares plus those handed to the
// transport and not closed yet) at target, and at least one spare. A spare the server closes is
// noticed at once (a read pending on it returns) and re-dialled; one that
// sat unused for idle is closed and re-dialled, so spares are never older
// than the API's keep-alive timeout if idle is below it. When dialling
// fails, the pool retries with a backoff (100 ms doubling to 5 s); Warm
// returns the error (the engine logs it), and a request dials on its own.
type connPool struct {
	addr   string      // host:port the URL points at
	tlsCfg *tls.Config // nil for http://
	dialer *net.Dialer
	target int
	idle   time.Duration
	now    func() time.Time

	mu      sync.Mutex
	spares  []*spare // oldest first
	live    int      // handed to the transport and not closed yet
	dialing int
	h2      bool // the API speaks HTTP/2: one connection carries everything
	started bool
	closed  bool
	lastErr error
	backoff time.Duration
	filled  chan struct{} // closed once the first fill attempt ended
	kick    chan struct{}
	done    chan struct{}
	wg      sync.WaitGroup

	dials atomic.Int64 // connections dialled (for tests and figures)
}

type spare struct {
	conn     net.Conn // the connection handed out (a *tls.Conn for https)
	raw      *trackedConn
	born     time.Time
	reading  bool          // a read is pending on conn (HTTP/1.1 only)
	readDone chan struct{} // closed when that read returned
	readErr  error
	readN    int
}

func newConnPool(addr string, tlsCfg *tls.Config, dialer *net.Dialer, target int, idle time.Duration) *connPool {
	return &connPool{
		addr: addr, tlsCfg: tlsCfg, dialer: dialer, target: target, idle: idle, now: time.Now,
		filled: make(chan struct{}), kick: make(chan struct{}, 1), done: make(chan struct{}),
	}
}

// start launches the keeper once.
func (p *connPool) start() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.started || p.closed {
		return
	}
	p.started = true
	p.wg.Add(1)
	go p.keep()
}

// wait blocks until the first fill attempt ended (every first dial
// succeeded or failed) or ctx is done, and returns the latest dial error.
func (p *connPool) wait(ctx context.Context) error {
	p.start()
	select {
	case <-p.filled:
	case <-ctx.Done():
		return ctx.Err()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastErr
}

func (p *connPool) close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	spares := p.spares
	p.spares = nil
	close(p.done)
	p.mu.Unlock()
	for _, s := range spares {
		s.conn.Close()
	}
	p.wg.Wait()
}

func (p *connPool) poke() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// dial is the transport's dial hook: a spare when the address is the API's
// and one is ready, else a fresh connection.
func (p *connPool) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if addr != p.addr {
		return p.dialer.DialContext(ctx, network, addr)
	}
	p.start()
	if c := p.take(); c != nil {
		return c, nil
	}
	c, raw, err := p.dialNew(ctx)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.lastErr, p.backoff = nil, 0
	p.mu.Unlock()
	return p.handOut(c, raw), nil
}

// take returns a spare that is still open, or nil.
func (p *connPool) take() net.Conn {
	for {
		p.mu.Lock()
		n := len(p.spares)
		if n == 0 {
			p.mu.Unlock()
			return nil
		}
		s := p.spares[n-1] // the newest
		p.spares = p.spares[:n-1]
		p.mu.Unlock()
		if s.reading {
			// Stop the pending read without losing anything: an HTTP/1.1
			// server sends nothing unasked, so a read that returns data or
			// an error other than the deadline means the connection is
			// unusable.
			_ = s.conn.SetReadDeadline(time.Unix(1, 0))
			<-s.readDone
			var ne net.Error
			if s.readN > 0 || !errors.As(s.readErr, &ne) || !ne.Timeout() {
				s.conn.Close()
				p.poke()
				continue
			}
			_ = s.conn.SetReadDeadline(time.Time{})
		}
		if p.now().Sub(s.born) >= p.idle {
			s.conn.Close()
			p.poke()
			continue
		}
		c := p.handOut(s.conn, s.raw)
		p.poke() // dial its replacement
		return c
	}
}

// handOut counts c as live until the transport closes it. c itself is
// returned (a *tls.Conn stays one, which the transport needs to see the
// protocol negotiated); the count sits on the raw connection beneath.
func (p *connPool) handOut(c net.Conn, raw *trackedConn) net.Conn {
	p.mu.Lock()
	p.live++
	p.mu.Unlock()
	raw.handed.Store(true)
	return c
}

// trackedConn is a dialled TCP connection that tells the pool when a
// connection it handed out is closed.
type trackedConn struct {
	net.Conn
	p      *connPool
	handed atomic.Bool
	once   sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		if c.handed.Load() {
			c.p.mu.Lock()
			c.p.live--
			c.p.mu.Unlock()
			c.p.poke()
		}
	})
	return c.Conn.Close()
}

// dialNew dials the API (and shakes hands for https).
func (p *connPool) dialNew(ctx context.Context) (net.Conn, *trackedConn, error) {
	p.dials.Add(1)
	c, err := p.dialer.DialContext(ctx, "tcp", p.addr)
	if err != nil {
		return nil, nil, err
	}
	raw := &trackedConn{Conn: c, p: p}
	if p.tlsCfg == nil {
		return raw, raw, nil
	}
	tc := tls.Client(raw, p.tlsCfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		raw.Close()
		return nil, nil, err
	}
	if tc.ConnectionState().NegotiatedProtocol == "h2" {
		p.mu.Lock()
		p.h2 = true
		p.mu.Unlock()
	}
	return tc, raw, nil
}

// keep is the keeper: it dials what is missing, expires old spares and
// backs off on dial errors.
func (p *connPool) keep() {
	defer p.wg.Done()
	var firstOnce sync.Once
	first := true
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return
		}
		now := p.now()
		var expired []*spare
		kept := p.spares[:0]
		for _, s := range p.spares {
			if now.Sub(s.born) >= p.idle {
				expired = append(expired, s)
			} else {
				kept = append(kept, s)
			}
		}
		if p.h2 && len(kept) > 1 {
			// HTTP/2 multiplexes every request over one connection: the
			// other pre-dialled ones would only idle.
			expired = append(expired, kept[:len(kept)-1]...)
			kept = kept[len(kept)-1:]
		}
		p.spares = kept
		// One spare beyond the target: a request that starts just before
		// the transport returns a finished request's connection to its
		// idle pool asks for a new one, and must not wait for a dial.
		want := max(p.target-p.live, 1) - len(p.spares) - p.dialing
		if p.h2 {
			want = 1 - len(p.spares) - p.dialing // one spare beside the shared one
		}
		wait := p.idle
		if len(p.spares) > 0 {
			wait = p.spares[0].born.Add(p.idle).Sub(now)
		}
		backoff := p.backoff
		if backoff > 0 {
			want = min(want, 1-p.dialing) // one probe at a time while failing
			wait = min(wait, backoff)
		}
		var batch sync.WaitGroup
		for range max(want, 0) {
			p.dialing++
			batch.Add(1)
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				defer batch.Done()
				p.fillOne()
			}()
		}
		p.mu.Unlock()
		for _, s := range expired {
			s.conn.Close()
		}
		if first {
			first = false
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				batch.Wait()
				firstOnce.Do(func() { close(p.filled) })
			}()
		}
		t := time.NewTimer(max(wait, time.Millisecond))
		select {
		case <-p.kick:
		case <-t.C:
		case <-p.done:
			t.Stop()
			return
		}
		t.Stop()
	}
}

// fillOne dials one spare and parks it (with a pending read for HTTP/1.1,
// which notices the server closing it).
func (p *connPool) fillOne() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-p.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	c, raw, err := p.dialNew(ctx)
	p.mu.Lock()
	p.dialing--
	if err != nil {
		if !p.closed {
			p.lastErr = err
			p.backoff = min(max(2*p.backoff, 100*time.Millisecond), 5*time.Second)
		}
		p.mu.Unlock()
		return
	}
	p.lastErr, p.backoff = nil, 0
	if p.closed {
		p.mu.Unlock()
		c.Close()
		return
	}
	s := &spare{conn: c, raw: raw, born: p.now()}
	if !p.h2 {
		s.reading = true
		s.readDone = make(chan struct{})
	}
	p.spares = append(p.spares, s)
	p.mu.Unlock()
	if s.reading {
		p.wg.Add(1)
		go p.watch(s)
	}
}

// watch holds a read on a parked HTTP/1.1 connection: it returns when the
// server closes the connection (or take interrupts it with a deadline).
func (p *connPool) watch(s *spare) {
	defer p.wg.Done()
	var b [1]byte
	s.readN, s.readErr = s.conn.Read(b[:])
	var ne net.Error
	interrupted := s.readN == 0 && errors.As(s.readErr, &ne) && ne.Timeout()
	close(s.readDone)
	if interrupted {
		return // take owns it now
	}
	// The server closed it (or sent something unasked): drop it, unless
	// take already has it (then take sees readN/readErr and drops it).
	p.mu.Lock()
	for i, x := range p.spares {
		if x == s {
			p.spares = append(p.spares[:i], p.spares[i+1:]...)
			p.mu.Unlock()
			s.conn.Close()
			p.poke()
			return
		}
	}
	p.mu.Unlock()
}
