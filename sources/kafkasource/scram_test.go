package kafkasource_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/sources/kafkasource"
)

// TestSCRAMNonASCIIPassword: SCRAM hashes the SASLprep (RFC 4013) form of
// the password, as RFC 5802 requires. The broker (kfake) holds the
// credential of the prepared password; the client is configured with the
// same password as another keyboard or OS may produce it: "ä" decomposed
// (a + U+0308), a no-break space (U+00A0, prepared to a space) and the
// Roman numeral Ⅸ (U+2168, NFKC "IX"). A composed non-ASCII password that
// needs no preparation authenticates too, and a wrong one is refused.
// (The user name stays ASCII: kfake does not take a non-ASCII one.)
func TestSCRAMNonASCIIPassword(t *testing.T) {
	const (
		prepared   = "P\u00e4sswort IX"             // what the broker stores
		configured = "Pa\u0308sswort\u00a0\u2168"   // the same password, unprepared
		composed   = "gr\u00fc\u00dfe-\u65e5\u672c" // "grüße-日本": SASLprep leaves it as it is
	)
	for _, mech := range []string{"SCRAM-SHA-256", "SCRAM-SHA-512"} {
		for _, tc := range []struct {
			name, stored, given string
			ok                  bool
		}{
			{"unprepared", prepared, configured, true},
			{"composed", composed, composed, true},
			{"wrong", prepared, "Passwort IX", false},
		} {
			t.Run(mech+"/"+tc.name, func(t *testing.T) {
				c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(), kfake.Superuser(mech, "pacer", tc.stored),
					kfake.DefaultNumPartitions(1), kfake.AllowAutoTopicCreation())
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(c.Close)
				client := kafkasource.Client{Brokers: c.ListenAddrs(), SASL: kafkasource.SASL{Mechanism: mech, User: "pacer", Password: tc.given}}
				d, err := kafkasource.NewDeadLetter(kafkasource.DeadLetterConfig{Client: client, Topic: "t", Sarama: fastFail})
				if !tc.ok {
					if err == nil {
						d.Close()
						t.Fatalf("password %q accepted for the credential of %q", tc.given, tc.stored)
					}
					return
				}
				if err != nil {
					t.Fatalf("password %q for the credential of %q: %v", tc.given, tc.stored, err)
				}
				defer d.Close()
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				if err := d.DeadLetter(ctx, &pacer.Message{Value: []byte("x")}, nil); err != nil {
					t.Fatalf("produce over %s: %v", mech, err)
				}
			})
		}
	}
}
