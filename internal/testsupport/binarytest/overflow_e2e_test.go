package binarytest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/pacer-dev/pacer/internal/testsupport/binharness"
	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
)

func overflowConfig(brokers []string, overflow string) string {
	return fmt.Sprintf(`source:
  type: kafka
  kafka:
    brokers: [%s]
    topics: [jobs]
    group: pacer-overflow
shaping:
  rate: 100/s
  fairness:
    enabled: true
    max_share: 0.25
    overflow: %s
sink:
  type: stdout
dead_letter:
  type: none
`, strings.Join(brokers, ", "), overflow)
}

// TestOverflowTopicMustExist: with a broker that creates no topic on first
// use (auto.create.topics.enable=false), a fairness.overflow topic that
// does not exist is a validate problem on its line, naming it, and run
// refuses to start with its name (before: validate said ok and run looped
// on "consume session ended ... topic does not exist" delivering nothing).
// Once the topic exists validate says ok; with no broker answering it says
// ok with a note that the topic was not checked.
func TestOverflowTopicMustExist(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "jobs"))
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(c.Close)
	brokers := c.ListenAddrs()
	cfg := binharness.WriteFile(t, "overflow.yaml", overflowConfig(brokers, "jobs-deferred"))

	r := binharness.Run(t, nil, "validate", "-c", cfg)
	if want := cfg + `:12: shaping.fairness.overflow: kafka: topic does not exist: deferral topic "jobs-deferred" is not on the brokers`; r.Code != 2 || !strings.Contains(r.Stderr, want) {
		t.Errorf("validate = %d, want 2 and %q\nstdout: %s\nstderr: %s", r.Code, want, r.Stdout, r.Stderr)
	}
	r = binharness.Run(t, nil, "run", "-c", cfg)
	if r.Code == 0 || !strings.Contains(r.Stderr, `pacer: cannot start" err="shaping.fairness.overflow: kafka: topic does not exist: deferral topic \"jobs-deferred\"`) {
		t.Errorf("run = %d, want a refusal naming the topic\nstderr: %s", r.Code, r.Stderr)
	}

	sc := sarama.NewConfig()
	adm, err := sarama.NewClusterAdmin(brokers, sc)
	if err != nil {
		t.Fatal(err)
	}
	if err := adm.CreateTopic("jobs-deferred", &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, false); err != nil {
		t.Fatal(err)
	}
	adm.Close()
	if r := binharness.Run(t, nil, "validate", "-c", cfg); r.Code != 0 || !strings.HasPrefix(r.Stdout, "ok: ") || strings.Contains(r.Stdout, "note:") {
		t.Errorf("validate with the topic created = %d\nstdout: %s\nstderr: %s", r.Code, r.Stdout, r.Stderr)
	}

	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	down := binharness.WriteFile(t, "down.yaml", overflowConfig([]string{fmt.Sprintf("127.0.0.1:%d", port)}, "jobs-deferred"))
	r = binharness.Run(t, nil, "validate", "-c", down)
	if want := `note: shaping.fairness.overflow: topic "jobs-deferred" not checked:`; r.Code != 0 || !strings.Contains(r.Stdout, want) {
		t.Errorf("validate with no broker = %d, want 0 and %q\nstdout: %s\nstderr: %s", r.Code, want, r.Stdout, r.Stderr)
	}
}
