package kafkasource

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"
)

// committer commits one group session's marked offsets promptly, so a
// crash repeats what was in flight, not a commit interval's worth of
// traffic: a commit starts as soon as a partition's watermark advances,
// unless one started within the last CommitInterval, in which case it
// starts when that interval ends; the advances in between are coalesced
// into that one commit, unless CommitAfter messages were acknowledged
// since the last commit started: then the next commit starts as soon as the
// previous one is done, so at high rates what a crash repeats stays
// bounded in messages (CommitAfter plus what is acked during one commit's
// round trip), not in time. flush starts a commit at once (Pause). Sarama
// commits synchronously when the session ends (rebalance, stop), after
// every claim has stopped marking.
type committer struct {
	sess  sarama.ConsumerGroupSession
	every time.Duration
	after int64         // acks since the last commit that skip the interval (<= 0: never)
	acked atomic.Int64  // acks since the last commit started
	kick  chan struct{} // an advance to commit (capacity 1)
	now   chan struct{} // commit without waiting out the interval (capacity 1)
	done  chan struct{}
	wg    sync.WaitGroup
}

func newCommitter(sess sarama.ConsumerGroupSession, every time.Duration, after int) *committer {
	c := &committer{sess: sess, every: every, after: int64(after), kick: make(chan struct{}, 1), now: make(chan struct{}, 1), done: make(chan struct{})}
	c.wg.Add(1)
	go c.run()
	return c
}

// marked reports a watermark advance over n messages (it never blocks).
func (c *committer) marked(n int64) {
	if c.after > 0 && c.acked.Add(n) >= c.after {
		c.flush()
		return
	}
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// flush asks for a commit now, skipping the coalescing interval.
func (c *committer) flush() {
	select {
	case c.now <- struct{}{}:
	default:
	}
}

// stop ends the committer; it does not commit (the session's release does).
func (c *committer) stop() {
	close(c.done)
	c.wg.Wait()
}

func (c *committer) run() {
	defer c.wg.Done()
	t := time.NewTimer(c.every)
	t.Stop()
	for {
		select {
		case <-c.kick:
		case <-c.now:
		case <-c.done:
			return
		}
		c.acked.Store(0)
		c.sess.Commit()
		// Coalesce: advances during the next interval wait for its end;
		// a flush does not.
		t.Reset(c.every)
		select {
		case <-t.C:
		case <-c.now:
			t.Stop()
			select {
			case c.kick <- struct{}{}:
			default:
			}
		case <-c.done:
			t.Stop()
			return
		}
	}
}
