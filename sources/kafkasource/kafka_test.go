package kafkasource_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
	"github.com/pacer-dev/pacer/internal/testsupport/testkit"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/sources/kafkasource"
	"github.com/pacer-dev/pacer/sources/sourcetest"
	"github.com/twmb/franz-go/pkg/kfake"
)

func recs(prefix string, n int) []sourcetest.Record {
	out := make([]sourcetest.Record, n)
	for i := range out {
		out[i] = sourcetest.Record{Key: []byte(fmt.Sprint(i % 5)), Value: []byte(fmt.Sprintf("%s-%d", prefix, i))}
	}
	return out
}

// TestInFlightCapPerPartition: with nothing settled, each partition hands
// over at most MaxInFlightPerPartition messages; settling lets it go on.
func TestInFlightCapPerPartition(t *testing.T) {
	brokers, topic := filledTopic(t, "cap", 2, 100)
	s, err := kafkasource.New(kafkasource.Config{Client: kafkasource.Client{Brokers: brokers}, Group: topic, Topics: []string{topic},
		MaxInFlightPerPartition: 3, SessionTimeout: 6 * time.Second, HeartbeatInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []*pacer.Message
	perPart := map[int32]int{}
	sourcetest.RunSource(t, s, func(ctx context.Context, m *pacer.Message) error {
		mu.Lock()
		held = append(held, m)
		perPart[m.Partition]++
		mu.Unlock()
		return nil
	})
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(held) }
	testkit.Eventually(t, 30*time.Second, "6 messages (3 per partition)", func() bool { return count() >= 6 })
	time.Sleep(300 * time.Millisecond) // window for an uncapped source to overrun (can only hide a bug)
	mu.Lock()
	for p, n := range perPart {
		if n > 3 {
			t.Errorf("partition %d handed over %d unsettled messages, cap 3", p, n)
		}
	}
	batch := append([]*pacer.Message(nil), held...)
	mu.Unlock()
	for _, m := range batch {
		if err := m.Acker.Ack(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	testkit.Eventually(t, 30*time.Second, "more after settling", func() bool { return count() > len(batch) })
}

func TestDeadLetter(t *testing.T) {
	brokers := testenv.Kafka(t)
	topic := testenv.UniqueName(t, "dlq")
	createTopic(t, brokers, topic, 1)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	d, err := kafkasource.NewDeadLetter(kafkasource.DeadLetterConfig{Client: kafkasource.Client{Brokers: brokers}, Topic: topic,
		Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	m := &pacer.Message{ID: "orders/1/42", Key: []byte("k"), Value: []byte("body"), Topic: "orders", Partition: 1,
		Offset: 42, Delivered: 1, Attempt: 4, Headers: map[string]string{"trace": "t1"}}
	if err := d.DeadLetter(context.Background(), m, errors.New("http 422")); err != nil {
		t.Fatal(err)
	}
	c, err := sarama.NewConsumer(brokers, saramaConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pc, err := c.ConsumePartition(topic, 0, sarama.OffsetOldest)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	var got *sarama.ConsumerMessage
	select {
	case got = <-pc.Messages():
	case <-time.After(30 * time.Second):
		t.Fatal("no dead letter within 30s")
	}
	h := map[string]string{}
	for _, rh := range got.Headers {
		h[string(rh.Key)] = string(rh.Value)
	}
	want := map[string]string{"trace": "t1", kafkasource.HeaderReason: "http 422", kafkasource.HeaderAttempts: "4",
		kafkasource.HeaderID: "orders/1/42", kafkasource.HeaderTopic: "orders", kafkasource.HeaderPartition: "1",
		kafkasource.HeaderOffset: "42", kafkasource.HeaderDelivered: "1", kafkasource.HeaderTime: "2026-01-02T03:04:05Z"}
	for k, v := range want {
		if h[k] != v {
			t.Errorf("header %s = %q want %q", k, h[k], v)
		}
	}
	if string(got.Key) != "k" || string(got.Value) != "body" {
		t.Errorf("key/value = %q/%q want k/body", got.Key, got.Value)
	}
}

// TestSASL: PLAIN and both SCRAM mechanisms against a kfake cluster with
// SASL on (SCRAM through github.com/xdg-go/scram); a wrong password is refused.
func TestSASL(t *testing.T) {
	for _, mech := range []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"} {
		t.Run(mech, func(t *testing.T) {
			c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(), kfake.Superuser(mech, "pacer", "s3cret"),
				kfake.DefaultNumPartitions(1), kfake.AllowAutoTopicCreation(), kfake.GroupMinSessionTimeout(100*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Close)
			client := kafkasource.Client{Brokers: c.ListenAddrs(), SASL: kafkasource.SASL{Mechanism: mech, User: "pacer", Password: "s3cret"}}
			d, err := kafkasource.NewDeadLetter(kafkasource.DeadLetterConfig{Client: client, Topic: "t"})
			if err != nil {
				t.Fatalf("authenticated producer: %v", err)
			}
			if err := d.DeadLetter(context.Background(), &pacer.Message{Value: []byte("x")}, nil); err != nil {
				t.Fatalf("produce over %s: %v", mech, err)
			}
			d.Close()
			s, err := kafkasource.New(kafkasource.Config{Client: client, Group: "g", Topics: []string{"t"}, SessionTimeout: 6 * time.Second, HeartbeatInterval: 100 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			var got atomic.Int64
			sourcetest.RunSource(t, s, func(ctx context.Context, m *pacer.Message) error { got.Add(1); return m.Acker.Ack(ctx) })
			testkit.Eventually(t, 30*time.Second, "the message over "+mech, func() bool { return got.Load() == 1 })

			bad := client
			bad.SASL.Password = "wrong"
			if d, err := kafkasource.NewDeadLetter(kafkasource.DeadLetterConfig{Client: bad, Topic: "t", Sarama: fastFail}); err == nil {
				d.Close()
				t.Fatalf("wrong password accepted")
			}
		})
	}
}

func fastFail(sc *sarama.Config) {
	sc.Metadata.Retry.Max = 0
	sc.Net.DialTimeout = 2 * time.Second
}

// TestTLSVerifies: against a TLS broker, the CA file makes it work; without
// it the certificate is refused (verification is on by default).
func TestTLSVerifies(t *testing.T) {
	dir := t.TempDir()
	caFile, serverCert := selfSigned(t, dir)
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.TLS(&tls.Config{Certificates: []tls.Certificate{serverCert}, MinVersion: tls.VersionTLS12}),
		kfake.DefaultNumPartitions(1), kfake.AllowAutoTopicCreation(), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	good := kafkasource.Client{Brokers: c.ListenAddrs(), TLS: kafkasource.TLS{Enable: true, CAFile: caFile}}
	d, err := kafkasource.NewDeadLetter(kafkasource.DeadLetterConfig{Client: good, Topic: "t"})
	if err != nil {
		t.Fatalf("with the CA: %v", err)
	}
	if err := d.DeadLetter(context.Background(), &pacer.Message{Value: []byte("x")}, nil); err != nil {
		t.Fatalf("produce over TLS: %v", err)
	}
	d.Close()
	bad := kafkasource.Client{Brokers: c.ListenAddrs(), TLS: kafkasource.TLS{Enable: true}}
	if d, err := kafkasource.NewDeadLetter(kafkasource.DeadLetterConfig{Client: bad, Topic: "t", Sarama: fastFail}); err == nil {
		d.Close()
		t.Fatalf("an unknown certificate was accepted without InsecureSkipVerify")
	}
}

func selfSigned(t *testing.T, dir string) (caFile string, cert tls.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "kfake"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:              []string{"localhost"},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:                  true,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
	caFile = filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	cert, err = tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return caFile, cert
}

func TestConfigValidate(t *testing.T) {
	ok := kafkasource.Config{Client: kafkasource.Client{Brokers: []string{"b:9092"}}, Group: "g", Topics: []string{"t"}}
	tests := []struct {
		name string
		edit func(*kafkasource.Config)
		bad  bool
	}{
		{"ok", func(*kafkasource.Config) {}, false},
		{"no brokers", func(c *kafkasource.Config) { c.Brokers = nil }, true},
		{"no group", func(c *kafkasource.Config) { c.Group = "" }, true},
		{"no topics", func(c *kafkasource.Config) { c.Topics = nil }, true},
		{"bad offset", func(c *kafkasource.Config) { c.InitialOffset = "middle" }, true},
		{"bad balance", func(c *kafkasource.Config) { c.Balance = "cooperative-sticky" }, true},
		{"bad version", func(c *kafkasource.Config) { c.Version = "x.y" }, true},
		{"bad sasl", func(c *kafkasource.Config) { c.SASL.Mechanism = "GSSAPI" }, true},
		{"sasl without user", func(c *kafkasource.Config) { c.SASL.Mechanism = "PLAIN" }, true},
		{"cert without key", func(c *kafkasource.Config) { c.TLS.CertFile = "c.pem" }, true},
		{"negative buffer", func(c *kafkasource.Config) { c.ChannelBufferSize = -1 }, true},
		{"newest, sticky, 2.8", func(c *kafkasource.Config) {
			c.InitialOffset = kafkasource.OffsetNewest
			c.Balance = "sticky"
			c.Version = "2.8.0"
		}, false},
	}
	for _, tc := range tests {
		c := ok
		tc.edit(&c)
		_, err := kafkasource.New(c)
		if (err != nil) != tc.bad {
			t.Errorf("%s: New() = %v, want error %v", tc.name, err, tc.bad)
		}
		if err != nil && !errors.Is(err, kafkasource.ErrInvalidConfig) {
			t.Errorf("%s: error %v does not wrap ErrInvalidConfig", tc.name, err)
		}
	}
}

// TestLateAcksAfterRevokeIgnored: a consumer stops holding messages and the
// engine acks them only afterwards; those acks are ignored safely (the
// session is gone) and the next owner gets every one of them again.
func TestLateAcksAfterRevokeIgnored(t *testing.T) {
	brokers, topic := filledTopic(t, "late", 2, 20)
	cfg := kafkasource.Config{Client: kafkasource.Client{Brokers: brokers}, Group: topic, Topics: []string{topic},
		SessionTimeout: 6 * time.Second, HeartbeatInterval: 100 * time.Millisecond, CommitInterval: 50 * time.Millisecond}
	a, err := kafkasource.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []*pacer.Message
	stopA := sourcetest.RunSource(t, a, func(ctx context.Context, m *pacer.Message) error {
		mu.Lock()
		held = append(held, m)
		mu.Unlock()
		return nil
	})
	testkit.Eventually(t, 30*time.Second, "20 held at a", func() bool { mu.Lock(); defer mu.Unlock(); return len(held) == 20 })
	stopA()
	for _, m := range held {
		if err := m.Acker.Ack(context.Background()); err != nil {
			t.Fatalf("late Ack: %v", err)
		}
	}
	b, err := kafkasource.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	sourcetest.RunSource(t, b, func(ctx context.Context, m *pacer.Message) error {
		mu.Lock()
		seen[string(m.Value)] = true
		mu.Unlock()
		return m.Acker.Ack(ctx)
	})
	testkit.Eventually(t, 30*time.Second, "all 20 again at b", func() bool { mu.Lock(); defer mu.Unlock(); return len(seen) == 20 })
}

// filledTopic creates a topic of the given partitions, unique to the test,
// on testenv's Kafka and produces n records named after it to it.
func filledTopic(t *testing.T, name string, partitions int32, n int) (brokers []string, topic string) {
	t.Helper()
	brokers = testenv.Kafka(t)
	topic = testenv.UniqueName(t, name)
	createTopic(t, brokers, topic, partitions)
	if err := produce(brokers, topic, recs(name, n)); err != nil {
		t.Fatal(err)
	}
	return brokers, topic
}
