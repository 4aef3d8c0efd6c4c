package pacer

import (
	"sync"
	"time"

	"github.com/pacer-dev/pacer/internal/base/redact"
)

// Failure logging: nothing that drains or holds up the work goes unsaid,
// and a storm of failures does not flood the log.
//
//   - Every dead letter is logged at WARN with its reason, the first
//     deadLetterLogFirst of each deadLetterLogEvery interval one by one;
//     the rest are counted and the count is logged (with the last reason)
//     at the next dead letter after the interval, and when Run returns.
//   - retryBurst retries within retryBurstEvery give one WARN per interval
//     with the last error: a downstream refusing connections or failing
//     every request shows in the log long before retries run out.
const (
	deadLetterLogFirst = 10
	deadLetterLogEvery = time.Minute
	retryBurst         = 10
	retryBurstEvery    = 10 * time.Second
)

type failureLog struct {
	mu sync.Mutex
	// dead letters
	dlStart      time.Time
	dlLogged     int
	dlSuppressed int
	dlLast       string
	// retries
	rStart  time.Time
	rCount  int
	rWarned bool
}

// noteDeadLetter logs a dead letter (rate-limited, see failureLog).
func (e *Engine) noteDeadLetter(m *Message, reason error) {
	now := e.clock.Now()
	f := &e.flog
	f.mu.Lock()
	var flushN int
	var flushLast string
	if f.dlStart.IsZero() || now.Sub(f.dlStart) >= deadLetterLogEvery {
		flushN, flushLast = f.dlSuppressed, f.dlLast
		f.dlStart, f.dlLogged, f.dlSuppressed = now, 0, 0
	}
	one := f.dlLogged < deadLetterLogFirst
	if one {
		f.dlLogged++
	} else {
		f.dlSuppressed++
		f.dlLast = redact.Error(reason)
	}
	f.mu.Unlock()
	if flushN > 0 {
		e.log.Warn("pacer: more messages were dead-lettered than logged one by one", "count", flushN, "interval", deadLetterLogEvery.String(), "last_reason", flushLast)
	}
	if one {
		e.log.Warn("pacer: dead-lettered", "id", m.ID, "attempts", m.Attempt, "reason", redact.Error(reason))
	}
}

// flushDeadLetterLog logs the count of dead letters not logged one by one.
func (e *Engine) flushDeadLetterLog() {
	f := &e.flog
	f.mu.Lock()
	n, last := f.dlSuppressed, f.dlLast
	f.dlSuppressed = 0
	f.mu.Unlock()
	if n > 0 {
		e.log.Warn("pacer: more messages were dead-lettered than logged one by one", "count", n, "interval", deadLetterLogEvery.String(), "last_reason", last)
	}
}

// noteRetry counts a retry and warns once per interval about a burst.
func (e *Engine) noteRetry(now time.Time, m *Message, err error) {
	f := &e.flog
	f.mu.Lock()
	if f.rStart.IsZero() || now.Sub(f.rStart) >= retryBurstEvery || now.Before(f.rStart) {
		f.rStart, f.rCount, f.rWarned = now, 0, false
	}
	f.rCount++
	warn := f.rCount >= retryBurst && !f.rWarned
	if warn {
		f.rWarned = true
	}
	f.mu.Unlock()
	if warn {
		e.log.Warn("pacer: retry burst: the downstream keeps failing", "retries", retryBurst, "within", retryBurstEvery.String(),
			"last_id", m.ID, "last_err", redact.Error(err))
	}
}
