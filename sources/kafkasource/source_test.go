package kafkasource_test

import (
	"context"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/sources/kafkasource"
	"github.com/pacer-dev/pacer/sources/sourcetest"
)

// kafkaEnv creates a topic with testenv.KafkaPartitions partitions and a
// group name unique to the test.
func kafkaEnv(t *testing.T, brokers []string) sourcetest.Env {
	t.Helper()
	topic := testenv.UniqueName(t, "src")
	group := topic + "_g"
	createTopic(t, brokers, topic, testenv.KafkaPartitions)
	return sourcetest.Env{
		Publish: func(ctx context.Context, recs []sourcetest.Record) error {
			return produce(brokers, topic, recs)
		},
		NewSource: func(t *testing.T) pacer.Source {
			s, err := kafkasource.New(kafkasource.Config{
				Client:         kafkasource.Client{Brokers: brokers},
				Group:          group,
				Topics:         []string{topic},
				SessionTimeout: 6 * time.Second, HeartbeatInterval: 100 * time.Millisecond,
				CommitInterval: 100 * time.Millisecond,
			})
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
	}
}

func saramaConfig() *sarama.Config {
	sc := sarama.NewConfig()
	sc.Version = sarama.V3_6_0_0
	sc.Producer.Return.Successes = true
	sc.Producer.RequiredAcks = sarama.WaitForAll
	return sc
}

func createTopic(t *testing.T, brokers []string, topic string, partitions int32) {
	t.Helper()
	adm, err := sarama.NewClusterAdmin(brokers, saramaConfig())
	if err != nil {
		t.Fatalf("cluster admin: %v", err)
	}
	defer adm.Close()
	if err := adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: 1}, false); err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
	t.Cleanup(func() {
		adm, err := sarama.NewClusterAdmin(brokers, saramaConfig())
		if err != nil {
			return
		}
		defer adm.Close()
		_ = adm.DeleteTopic(topic)
	})
}

func produce(brokers []string, topic string, recs []sourcetest.Record) error {
	p, err := sarama.NewSyncProducer(brokers, saramaConfig())
	if err != nil {
		return err
	}
	defer p.Close()
	msgs := make([]*sarama.ProducerMessage, len(recs))
	for i, r := range recs {
		pm := &sarama.ProducerMessage{Topic: topic, Key: sarama.ByteEncoder(r.Key), Value: sarama.ByteEncoder(r.Value)}
		for k, v := range r.Headers {
			pm.Headers = append(pm.Headers, sarama.RecordHeader{Key: []byte(k), Value: []byte(v)})
		}
		msgs[i] = pm
	}
	return p.SendMessages(msgs)
}

func TestConformance(t *testing.T) {
	brokers := testenv.Kafka(t)
	sourcetest.Run(t, sourcetest.Harness{
		Features: sourcetest.Features{
			PauseBound:        testenv.KafkaPartitions, // one per claimed partition
			Watermark:         true,
			NakRedeliversLive: true, // while the partition stays claimed
		},
		Setup: func(t *testing.T) sourcetest.Env { return kafkaEnv(t, brokers) },
		// An in-process broker of the test's own, restarted with its data.
		SetupRestartable: func(t *testing.T) sourcetest.Env {
			k := testenv.StartKafkaInProcess(t)
			env := kafkaEnv(t, k.Brokers())
			env.RestartBroker = k.Restart
			return env
		},
	})
}
