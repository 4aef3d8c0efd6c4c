package natssource_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
	"github.com/pacer-dev/pacer/internal/testsupport/testkit"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/sources/natssource"
	"github.com/pacer-dev/pacer/sources/sourcetest"
)

// TestNakWaitsItsDelay: a Nak'ed message comes back no sooner than the
// delay the engine asked for, and a Nak with no delay waits ReturnDelay: the
// source sends NakWithDelay, never a bare Nak (which the server redelivers
// at once, turning every retry into a hot loop against the downstream).
// AckWait is far longer than both delays, so only the Nak's delay can bring
// a message back within the test. The delays are lower bounds measured on
// the server's side of the same machine: a slow machine makes the
// redelivery later, never earlier, so the check cannot fail a correct
// source.
func TestNakWaitsItsDelay(t *testing.T) {
	url := testenv.NATS(t)
	_, js := connect(t, url)
	name := testenv.UniqueName(t, "NKD")
	stream(t, js, name)
	const returnDelay = time.Second
	s := newSource(t, natssource.Config{Conn: natssource.Conn{URL: url}, Stream: name, Consumer: "c", Create: true,
		AckWait: time.Minute, ReturnDelay: returnDelay, Batch: 4})
	// The value published -> the delay its first delivery is Nak'ed with,
	// and the delay the source must keep.
	steps := []struct {
		value     string
		nak, want time.Duration
	}{
		{"0", 1500 * time.Millisecond, 1500 * time.Millisecond},
		{"1", 0, returnDelay},
	}
	var mu sync.Mutex
	nakedAt := map[string]time.Time{}
	again := map[string]time.Time{}
	sourcetest.RunSource(t, s, func(ctx context.Context, m *pacer.Message) error {
		v := string(m.Value)
		mu.Lock()
		defer mu.Unlock()
		if _, naked := nakedAt[v]; !naked {
			for _, st := range steps {
				if st.value == v {
					nakedAt[v] = time.Now()
					return m.Acker.Nak(ctx, st.nak)
				}
			}
		}
		if _, ok := again[v]; !ok {
			again[v] = time.Now()
		}
		return m.Acker.Ack(ctx)
	})
	publishN(t, js, name+".in", 0, len(steps))
	testkit.Eventually(t, 30*time.Second, "every Nak'ed message redelivered", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(again) == len(steps)
	})
	mu.Lock()
	defer mu.Unlock()
	for _, st := range steps {
		// 10ms for the two processes' reading of the same clock.
		if got := again[st.value].Sub(nakedAt[st.value]); got < st.want-10*time.Millisecond {
			t.Errorf("Nak(%v) of %q: redelivered after %v, want >= %v", st.nak, st.value, got, st.want)
		}
	}
}
