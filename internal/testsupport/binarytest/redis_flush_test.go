package binarytest

import (
	"context"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/app/testapi"
	"github.com/pacer-dev/pacer/internal/testsupport/binharness"
	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
)

// TestRedisWipedMidRun: the global budget's keys vanish from Redis while
// the worker runs (a FLUSHALL, a Redis restarted without persistence; the
// test deletes only its own keys, the server is shared). A missing budget
// key is an empty bucket, so the workers get no second burst: the API's
// arrivals stay within the global envelope r(t2-t1)+b+2 over the whole
// run. With a missing key read as a full bucket they went +50.7 over it.
func TestRedisWipedMidRun(t *testing.T) {
	const n, wipeAfter = 600, 250
	rs := testenv.Redis(t)
	rc := rs.Client(t)
	url := testenv.NATS(t)
	js, stream := natsStream(t, url)
	publishNATS(t, js, stream+".in", 0, n)
	api := testapi.New(testapi.Config{})
	t.Cleanup(api.Close)
	cfg := binharness.WriteFile(t, "nats.yaml", natsConfig(url, stream, api.URL(), "", `rate: 1000/s
burst: 100
max_in_flight: 8
global:
  redis_url: `+rs.URL+`
  key: `+rs.Prefix+`wipe
  prefix: "`+rs.Prefix+`"
  rate: 50/s
  burst: 50`, ""))
	w := startWorker(t, cfg, "")
	binharness.Eventually(t, 60*time.Second, "deliveries before the wipe", func() bool { return count(api.Accepted()).unique >= wipeAfter })
	ctx := context.Background()
	keys, err := rc.Keys(ctx, rs.Prefix+"*").Result()
	if err != nil || len(keys) == 0 {
		t.Fatalf("budget keys in Redis: %v, %v", keys, err)
	}
	if err := rc.Del(ctx, keys...).Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("wiped %d keys after %d accepted", len(keys), count(api.Accepted()).unique)
	binharness.Eventually(t, 60*time.Second, "every message accepted after the wipe", func() bool { return count(api.Accepted()).unique >= n })
	if code := w.Stop(t, time.Minute); code != 0 {
		t.Errorf("SIGTERM: exit %d want 0", code)
	}
	if tl := count(api.Accepted()); tl.unique != n {
		t.Errorf("unique accepted = %d want %d", tl.unique, n)
	}
	checkArrivals(t, api, 50, 50, 0, 2)
}
