package testenv

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// KafkaImage is the image used when a Docker engine answers and
// PACER_TEST_KAFKA_BROKERS is unset.
const KafkaImage = "apache/kafka-native:3.9.1"

// KafkaPartitions is how many partitions an in-process or container broker
// gives an auto-created topic.
const KafkaPartitions = 4

// KafkaBroker is a Kafka cluster handed to a test. Which backend it is
// (environment, container, in-process kfake) is in Backend; only the
// in-process one can be stopped and restarted (CanRestart), which is what
// chaos tests need. Its methods are safe for concurrent use.
type KafkaBroker struct {
	backend string
	addrs   []string

	mu      sync.Mutex
	cluster *kfake.Cluster // nil while stopped, or for other backends
	ports   []int
	dir     string
}

// Kafka returns the bootstrap addresses of a Kafka cluster for t: from
// PACER_TEST_KAFKA_BROKERS (comma separated), else a container when Docker
// answers, else an in-process kfake cluster. It is closed in t.Cleanup.
// Tests must use unique topic and group names (see UniqueName).
func Kafka(t testing.TB) []string {
	t.Helper()
	return StartKafka(t).Brokers()
}

// StartKafka is Kafka returning a handle, for tests that cut the broker.
func StartKafka(t testing.TB) *KafkaBroker {
	t.Helper()
	if env := os.Getenv("PACER_TEST_KAFKA_BROKERS"); env != "" {
		addrs := strings.Split(env, ",")
		logf(t, "Kafka from PACER_TEST_KAFKA_BROKERS=%s", env)
		return &KafkaBroker{backend: "env", addrs: addrs}
	}
	if ok, why := Docker(); ok {
		return startKafkaContainer(t)
	} else {
		logf(t, "Kafka: no container (%s); using in-process kfake", why)
	}
	return startKfake(t)
}

// StartKafkaInProcess always starts an in-process kfake cluster, whatever
// the environment says: for tests that must stop and restart the broker.
func StartKafkaInProcess(t testing.TB) *KafkaBroker {
	t.Helper()
	return startKfake(t)
}

func startKfake(t testing.TB) *KafkaBroker {
	t.Helper()
	// Persist to a temp dir so that Restart brings back topics, records and
	// committed offsets, like a real broker coming back.
	dir := t.TempDir()
	c, err := kfake.NewCluster(kfakeOpts(dir, kfake.NumBrokers(1))...)
	if err != nil {
		t.Fatalf("testenv: kfake.NewCluster: %v", err)
	}
	addrs := c.ListenAddrs()
	ports := make([]int, len(addrs))
	for i, a := range addrs {
		_, p, _ := net.SplitHostPort(a)
		ports[i], _ = strconv.Atoi(p)
	}
	k := &KafkaBroker{backend: "kfake", addrs: addrs, cluster: c, ports: ports, dir: dir}
	logf(t, "Kafka in-process kfake at %s (data in %s)", strings.Join(addrs, ","), dir)
	t.Cleanup(k.Stop)
	return k
}

func startKafkaContainer(t testing.TB) *KafkaBroker {
	t.Helper()
	port, err := FreePort()
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := strconv.Itoa(port)
	req := testcontainers.ContainerRequest{
		Image:        KafkaImage,
		ExposedPorts: []string{p + ":9092/tcp"},
		Env: map[string]string{
			"KAFKA_NODE_ID":                                  "1",
			"KAFKA_PROCESS_ROLES":                            "broker,controller",
			"KAFKA_LISTENERS":                                "PLAINTEXT://:9092,CONTROLLER://:9093",
			"KAFKA_ADVERTISED_LISTENERS":                     "PLAINTEXT://127.0.0.1:" + p,
			"KAFKA_CONTROLLER_LISTENER_NAMES":                "CONTROLLER",
			"KAFKA_LISTENER_SECURITY_PROTOCOL_MAP":           "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
			"KAFKA_CONTROLLER_QUORUM_VOTERS":                 "1@localhost:9093",
			"KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR":         "1",
			"KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
			"KAFKA_TRANSACTION_STATE_LOG_MIN_ISR":            "1",
			"KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS":         "0",
			"KAFKA_NUM_PARTITIONS":                           strconv.Itoa(KafkaPartitions),
			"KAFKA_AUTO_CREATE_TOPICS_ENABLE":                "true",
		},
		WaitingFor: wait.ForListeningPort("9092/tcp"),
	}
	c, err := testcontainers.GenericContainer(ctx, testcontainers.GenericContainerRequest{ContainerRequest: req, Started: true})
	if err != nil {
		t.Fatalf("testenv: Kafka container %s: %v", KafkaImage, err)
	}
	t.Cleanup(func() { _ = testcontainers.TerminateContainer(c) })
	addr := "127.0.0.1:" + p
	logf(t, "Kafka container %s at %s", KafkaImage, addr)
	return &KafkaBroker{backend: "container", addrs: []string{addr}}
}

// kfakeOpts are the in-process cluster's options, the same at the first
// start and at every Restart, plus where it listens.
func kfakeOpts(dir string, listen kfake.Opt) []kfake.Opt {
	return []kfake.Opt{
		listen,
		kfake.AllowAutoTopicCreation(),
		kfake.DefaultNumPartitions(KafkaPartitions),
		kfake.DataDir(dir),
		kfake.GroupMinSessionTimeout(100 * time.Millisecond),
	}
}

// Brokers returns the bootstrap addresses; they stay the same across Restart.
func (k *KafkaBroker) Brokers() []string { return append([]string(nil), k.addrs...) }

// Backend is "env", "container" or "kfake".
func (k *KafkaBroker) Backend() string { return k.backend }

// CanRestart reports whether Stop and Restart work (the in-process backend).
func (k *KafkaBroker) CanRestart() bool { return k.backend == "kfake" }

// Stop shuts the in-process cluster down (clients see refused connections);
// its data stays on disk for Restart. It is idempotent and a no-op for the
// other backends.
func (k *KafkaBroker) Stop() {
	k.mu.Lock()
	c := k.cluster
	k.cluster = nil
	k.mu.Unlock()
	if c != nil {
		c.Close()
	}
}

// Observe calls fn with every request with key (kmsg.Fetch, kmsg.SyncGroup,
// ...) that the in-process cluster receives, before the cluster handles it
// as usual: for tests that check what a client asks the broker for. fn runs
// on the cluster's goroutine and must not block. The observer lasts until
// Stop (a restarted cluster has none). It fails t for the other backends.
func (k *KafkaBroker) Observe(t testing.TB, key kmsg.Key, fn func(kmsg.Request)) {
	t.Helper()
	k.mu.Lock()
	c := k.cluster
	k.mu.Unlock()
	if c == nil {
		t.Fatalf("testenv: Observe needs the running in-process kfake cluster (backend %q)", k.backend)
	}
	c.ControlKey(int16(key), func(req kmsg.Request) (kmsg.Response, error, bool) {
		fn(req)
		return nil, nil, false // not handled: the cluster answers as usual
	})
}

// Restart starts the in-process cluster again on the same ports with the
// same data (topics, records, committed offsets). It stops it first if it
// is running.
func (k *KafkaBroker) Restart() error {
	if !k.CanRestart() {
		return fmt.Errorf("testenv: Kafka backend %q cannot be restarted", k.backend)
	}
	k.Stop()
	k.mu.Lock()
	defer k.mu.Unlock()
	var err error
	// The port was just released; retry briefly in case it lingers.
	for i := 0; i < 50; i++ {
		var c *kfake.Cluster
		c, err = kfake.NewCluster(kfakeOpts(k.dir, kfake.Ports(k.ports...))...)
		if err == nil {
			k.cluster = c
			return nil
		}
		time.Sleep(20 * time.Millisecond) // waiting for the OS to free the port, not test logic
	}
	return fmt.Errorf("testenv: restart kfake on %v: %w", k.ports, err)
}

// FreePort asks the kernel for a free TCP port on 127.0.0.1.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("testenv: free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

var uniqueSeq struct {
	sync.Mutex
	n int
}

// UniqueName returns a name unique to this test binary run, safe as a Kafka
// topic, a JetStream stream or consumer name: prefix, the test name
// (sanitised), the process ID and a counter.
func UniqueName(t testing.TB, prefix string) string {
	uniqueSeq.Lock()
	uniqueSeq.n++
	n := uniqueSeq.n
	uniqueSeq.Unlock()
	name := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		}
		return '_'
	}, t.Name())
	if len(name) > 40 {
		name = name[len(name)-40:]
	}
	return fmt.Sprintf("%s_%s_%d_%d", prefix, name, os.Getpid(), n)
}
