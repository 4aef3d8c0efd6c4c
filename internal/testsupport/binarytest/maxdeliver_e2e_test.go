package binarytest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/app/testapi"
	"github.com/pacer-dev/pacer/internal/testsupport/binharness"
)

func maxDeliverConfig(url, stream, api, dlq, admin string, maxDeliver int, rate string) string {
	return fmt.Sprintf(`source:
  type: nats
  nats:
    url: %s
    stream: %s
    consumer: md
    max_deliver: %d
    ack_wait: 2s
shaping:
  rate: %s
  burst: 1
  queue_size: 50
  max_in_flight: 2
  adaptive:
    mode: off
sink:
  type: http
  http:
    url: %s/orders
dead_letter:
  type: file
  path: %s
admin:
  listen: %s
drain_timeout: 5s
`, url, stream, maxDeliver, rate, api, dlq, admin)
}

// deadLetterIDs reads the message IDs of a JSON-lines dead-letter file.
func deadLetterIDs(t *testing.T, path string) map[string]string {
	t.Helper()
	out := map[string]string{}
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return out
	}
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		i := strings.Index(line, `"id":"`)
		if i < 0 {
			continue
		}
		id := line[i+6:]
		id = id[:strings.IndexByte(id, '"')]
		out[id] = line
	}
	return out
}

// TestMaxDeliverStopRestart (real NATS with PACER_TEST_NATS_URL): with
// max_deliver: 1, a clean stop used to hand back the queued messages,
// which spent their only delivery, and the server discarded them: gone
// without a trace. Now every message held on its last delivery at the stop
// is dead-lettered, and a restart finds nothing lost: delivered +
// dead-lettered = published. With max_deliver: 3 the stop hands messages
// back and the restart delivers every one.
func TestMaxDeliverStopRestart(t *testing.T) {
	for _, md := range []int{1, 3} {
		t.Run(fmt.Sprintf("max_deliver=%d", md), func(t *testing.T) {
			const n = 20
			url, stream, _ := setupNATS(t, n)
			api := testapi.New(testapi.Config{})
			t.Cleanup(api.Close)
			dlq := filepath.Join(t.TempDir(), "dlq.jsonl")
			addr := binharness.FreeAddr(t)
			slow := binharness.WriteFile(t, "slow.yaml", maxDeliverConfig(url, stream, api.URL(), dlq, addr, md, "2/s"))
			if r := binharness.Run(t, nil, "validate", "-c", slow); !strings.Contains(r.Stdout, "warning: source.nats.max_deliver") {
				t.Errorf("validate does not warn about max_deliver:\n%s", r.Stdout)
			}
			p := binharness.Start(t, nil, "run", "-c", slow)
			binharness.Eventually(t, 30*time.Second, "a few delivered", func() bool {
				st, err := binharness.Status(addr)
				return err == nil && binharness.Num(st, "engine", "acked") >= 2 && binharness.Num(st, "engine", "consumed") >= 10
			})
			if code := p.Stop(t, 30*time.Second); code != 0 {
				t.Fatalf("exit = %d", code)
			}
			first := distinctKeys(api.Accepted())
			dl := deadLetterIDs(t, dlq)
			if md == 1 {
				if len(dl) == 0 {
					t.Errorf("max_deliver 1: nothing dead-lettered at the stop; the held messages were handed back to be discarded\n%s", p.Stderr())
				}
				for id, line := range dl {
					if !strings.Contains(line, "last broker delivery") {
						t.Errorf("%s dead-lettered for %s, want the last-delivery reason", id, line)
					}
				}
			} else if len(dl) != 0 {
				t.Errorf("max_deliver %d: %d dead letters at the stop, want 0 (handed back)", md, len(dl))
			}

			fast := binharness.WriteFile(t, "fast.yaml", maxDeliverConfig(url, stream, api.URL(), dlq, addr, md, "100/s"))
			p2 := binharness.Start(t, nil, "run", "-c", fast)
			binharness.Eventually(t, 30*time.Second, "every message delivered or dead-lettered", func() bool {
				return distinctKeys(api.Accepted())+len(deadLetterIDs(t, dlq)) >= n
			})
			time.Sleep(3 * time.Second) // an AckWait: anything redelivered would show up now
			p2.Stop(t, 30*time.Second)
			checkAPIEnvelope(t, api, fast) // both runs: the slow one stays far inside 100/s, burst 1
			got, dead := distinctKeys(api.Accepted()), len(deadLetterIDs(t, dlq))
			if got+dead != n {
				t.Errorf("delivered %d + dead-lettered %d = %d, want %d (first run delivered %d)", got, dead, got+dead, n, first)
			}
			if md > 1 && got != n {
				t.Errorf("max_deliver %d: delivered %d of %d after the restart", md, got, n)
			}
		})
	}
}
