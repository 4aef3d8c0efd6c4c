package binarytest

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/app/testapi"
	"github.com/pacer-dev/pacer/internal/testsupport/binharness"
	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
)

// TestPoisonRunNATS: a producer deploy sends a run of 40 messages the API
// refuses (400 each), then 400 good ones, through the binary from
// JetStream. The breaker trips on the tenth 400 in a row, its probes try
// newer messages, the first good one closes it: every good message is
// accepted and the 40 are in the dead-letter file, with no POST /resume.
// (Before: 9 dead letters and 0 of 400 delivered, for good.)
func TestPoisonRunNATS(t *testing.T) {
	const bad, good = 40, 400
	url := testenv.NATS(t)
	js, stream := natsStream(t, url)
	publishNATSValues(t, js, stream+".in", 0, bad+good, func(n int) []byte {
		if n < bad {
			return fmt.Appendf(nil, `{"n":%d,"poison":true}`, n)
		}
		return body(n)
	})
	api := testapi.New(testapi.Config{})
	t.Cleanup(api.Close)
	api.RejectBodyContaining(`"poison"`, 400)
	file := filepath.Join(t.TempDir(), "dlq.jsonl")
	admin := binharness.FreeAddr(t)
	cfg := binharness.WriteFile(t, "nats.yaml", natsConfig(url, stream, api.URL(), admin, "rate: 1000/s\nburst: 50\nmax_in_flight: 4",
		"dead_letter:\n  type: file\n  path: "+file+"\n"))
	w := startWorker(t, cfg, admin)
	var got map[int]string
	binharness.Eventually(t, 120*time.Second, "every good message accepted and the 40 dead-lettered", func() bool {
		got = readDeadLetterFile(t, file)
		return count(api.Accepted()).unique >= good && len(got) >= bad
	})
	st, _ := w.status()
	if code := w.Stop(t, time.Minute); code != 0 {
		t.Errorf("SIGTERM: exit %d want 0", code)
	}
	for i := range bad {
		if r, ok := got[i]; !ok || !strings.Contains(r, "400") {
			t.Errorf("dead letter for %d: reason %q, present %v", i, r, ok)
		}
	}
	if tl := count(api.Accepted()); tl.unique != good {
		t.Errorf("good messages accepted = %d want %d", tl.unique, good)
	}
	if st.Engine.Breaker.Trips == 0 || st.Engine.Breaker.Resets != 0 {
		t.Errorf("breaker %+v: want tripped and closed by itself", st.Engine.Breaker)
	}
	t.Logf("RESULT poison run: %d bad then %d good: %d accepted, %d dead-lettered, breaker trips %d",
		bad, good, count(api.Accepted()).unique, len(got), st.Engine.Breaker.Trips)
}
