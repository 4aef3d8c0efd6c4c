package pacer_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/pacer"
)

// blob is one value in memory, as Redis keeps it for BlobState.
type blob struct {
	mu sync.Mutex
	b  []byte
}

func (s *blob) state() pacer.BlobState {
	return pacer.BlobState{
		Get: func(context.Context) ([]byte, bool, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			return append([]byte(nil), s.b...), s.b != nil, nil
		},
		Put: func(_ context.Context, b []byte) error {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.b = append([]byte(nil), b...)
			return nil
		},
	}
}

// TestBlobStateRoundTrip: BlobState saves and loads the shaper's state in
// the file's format; two engines in a row over one blob keep one envelope
// (the second does not spend a second burst); garbage is an error.
func TestBlobStateRoundTrip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var bl blob
		st := bl.state()
		if _, ok, err := st.Load(context.Background()); ok || err != nil {
			t.Fatalf("Load of nothing: ok %v err %v", ok, err)
		}
		want := pacer.ShaperState{SavedAt: time.Now(), Clean: true, Until: time.Now(),
			Bucket: &algorithms.DualRateState{At: time.Now(), Tokens: 3.5, Next: time.Now().Add(time.Second)}}
		if err := st.Save(context.Background(), want); err != nil {
			t.Fatal(err)
		}
		got, ok, err := st.Load(context.Background())
		if err != nil || !ok || got.Bucket == nil || got.Bucket.Tokens != 3.5 || !got.Clean || !got.Until.Equal(want.Until) || !got.Bucket.Next.Equal(want.Bucket.Next) {
			t.Fatalf("Load = %+v %v %v, want %+v", got, ok, err, want)
		}
		bl.b = []byte("{not json")
		if _, _, err := st.Load(context.Background()); err == nil {
			t.Error("Load of garbage: no error")
		}
		bl.b = nil
		a := runOnce(t, st, stateShaping, 0, 10, 0)
		b := runOnce(t, st, stateShaping, 10, 10, 0)
		all := append(a, b...)
		if err := checkEnvelope(all, 10, 10); err != nil {
			t.Errorf("two runs over one blob: %v", err)
		}
	})
}
