package kafkasource

import (
	"sort"

	"github.com/IBM/sarama"
)

// Topic IDs.
//
// Offsets restart at 0 when a topic is deleted and created again under the
// same name, so topic/partition/offset repeats across the topic's
// generations. Kafka 2.8+ gives every topic a random ID (KIP-516, metadata
// v10+): a session reads the IDs of the topics it claims when it starts
// (Setup, after every rebalance), and a message's ID carries it:
// <topic>/<partition>/<offset>@<topic ID>. Without one (a broker or
// Config.Version before 2.8, or the metadata request failing, which is
// logged) the ID is <topic>/<partition>/<offset>, as before. The ID is read
// once per session: a topic deleted and created again within one session,
// without a rebalance, keeps the ID read at the session's start until the
// next one.

// topicIDs returns the IDs (base64url, Kafka's own notation) of the
// claimed topics that have one.
func (s *Source) topicIDs(client sarama.Client, claims map[string][]int32) map[string]string {
	if client == nil || len(claims) == 0 || !s.sc.Version.IsAtLeast(sarama.V2_8_0_0) {
		return nil
	}
	topics := make([]string, 0, len(claims))
	for t := range claims {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	b, err := client.Coordinator(s.cfg.Group)
	if err == nil {
		var resp *sarama.MetadataResponse
		if resp, err = b.GetMetadata(sarama.NewMetadataRequest(s.sc.Version, topics)); err == nil {
			ids := make(map[string]string, len(resp.Topics))
			for _, t := range resp.Topics {
				if t.Err == sarama.ErrNoError && t.Uuid != (sarama.Uuid{}) {
					ids[t.Name] = t.Uuid.String()
				}
			}
			return ids
		}
	}
	s.cfg.Logger.Warn("kafka: reading the claimed topics' IDs; message IDs of this session are <topic>/<partition>/<offset> without the topic ID (they repeat if a topic is re-created)",
		"group", s.cfg.Group, "topics", topics, "err", err)
	return nil
}
