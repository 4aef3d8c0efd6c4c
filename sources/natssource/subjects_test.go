package natssource_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
	"github.com/pacer-dev/pacer/internal/testsupport/testkit"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/sources/natssource"
	"github.com/pacer-dev/pacer/sources/sourcetest"
)

// TestPerSubjectPull runs against the real NATS server (PACER_TEST_NATS_URL;
// testenv says what it uses). Tenant "hot" publishes 1,000 jobs before
// tenants b and c publish 20 each, all on one stream. The engine takes
// nothing of hot (its key is at its share: deliver blocks) and everything
// else. With one consumer, b and c wait behind hot's first message; with
// tenant_in_subject, each tenant has its own consumer: b and c are all
// delivered, hot is read no further than one pull ahead (1.5 x Batch + 1
// pending at the server), and once released every message arrives once.
func TestPerSubjectPull(t *testing.T) {
	url := testenv.NATS(t)
	_, js := connect(t, url)
	for _, perSubject := range []bool{false, true} {
		name := testenv.UniqueName(t, "PSUB")
		stream(t, js, name)
		publishN(t, js, name+".hot.job", 0, 1000)
		publishN(t, js, name+".b.job", 0, 20)
		publishN(t, js, name+".c.job", 0, 20)
		const batch = 8
		cfg := natssource.Config{Conn: natssource.Conn{URL: url}, Stream: name, Consumer: "c", Create: true, Batch: batch,
			FilterSubject: name + ".*.>", DiscoverInterval: 100 * time.Millisecond}
		if perSubject {
			cfg.SubjectToken = 2
		}
		s := newSource(t, cfg)
		release := make(chan struct{})
		var mu sync.Mutex
		got := map[string]int{}
		seen := map[string]bool{}
		var dups atomic.Int64
		stop := sourcetest.RunSource(t, s, func(ctx context.Context, m *pacer.Message) error {
			tenant := string(m.Key)
			if !perSubject {
				tenant = m.Topic[len(name)+1 : len(m.Topic)-len(".job")]
			}
			if tenant == "hot" {
				select { // hot holds its share: its next message waits
				case <-release:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			mu.Lock()
			got[tenant]++
			if seen[m.ID] {
				dups.Add(1)
			}
			seen[m.ID] = true
			mu.Unlock()
			return m.Acker.Ack(ctx)
		})
		count := func(k string) int { mu.Lock(); defer mu.Unlock(); return got[k] }
		if !perSubject {
			time.Sleep(500 * time.Millisecond) // b and c are behind hot's first message: nothing can arrive (can only hide a bug)
			if n := count("b") + count("c"); n != 0 {
				t.Fatalf("one consumer: %d of b's and c's messages overtook hot's blocked head", n)
			}
			close(release)
			stop()
			continue
		}
		testkit.Eventually(t, 30*time.Second, "b's and c's 40 messages beside a blocked hot tenant", func() bool {
			return count("b") == 20 && count("c") == 20
		})
		if s.Paths() != 3 {
			t.Errorf("Paths() = %d, want 3 (hot, b, c)", s.Paths())
		}
		info, err := js.Consumer(context.Background(), name, "c_hot")
		if err != nil {
			t.Fatal(err)
		}
		ci, err := info.Info(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if limit := 1 + batch + batch/2; ci.NumAckPending > limit {
			t.Errorf("hot's consumer has %d pending while hot is blocked, want <= %d (read no further ahead)", ci.NumAckPending, limit)
		}
		close(release)
		testkit.Eventually(t, 60*time.Second, "hot's 1,000", func() bool { return count("hot") == 1000 })
		stop()
		if dups.Load() != 0 {
			t.Errorf("%d duplicates", dups.Load())
		}
	}
}

func TestSubjectTokenValidate(t *testing.T) {
	base := natssource.Config{Stream: "s", Consumer: "c", Create: true, FilterSubject: "jobs.*.>", SubjectToken: 2}
	if err := base.Validate(); err != nil {
		t.Fatalf("valid: %v", err)
	}
	for _, mod := range []func(*natssource.Config){
		func(c *natssource.Config) { c.Create = false },
		func(c *natssource.Config) { c.FilterSubject = "jobs.>" },
		func(c *natssource.Config) { c.FilterSubject = "" },
		func(c *natssource.Config) { c.SubjectToken = 4 },
		func(c *natssource.Config) { c.SubjectToken = -1 },
	} {
		c := base
		mod(&c)
		if err := c.Validate(); !errors.Is(err, natssource.ErrInvalidConfig) {
			t.Errorf("%+v: err %v, want ErrInvalidConfig", c, err)
		}
	}
}
