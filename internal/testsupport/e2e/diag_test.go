package e2e

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/IBM/sarama"

	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/sources/kafkasource"
)

// liveWorker is what groupDiagnosis reports of one running worker.
type liveWorker struct {
	name string
	eng  *pacer.Engine
	src  *kafkasource.Source
}

// groupDiagnosis says, when messages are missing, where a Kafka consumer
// group stands: the committed offset of every partition, the group's state
// and who holds which partition (a partition nobody holds, or a group stuck
// rebalancing, strands messages), and every live worker's engine and source
// state (a source left paused, or an engine holding work, strands them too).
func groupDiagnosis(t *testing.T, brokers []string, group, topic string, partitions int, ws []liveWorker) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "\ncommitted offsets: %v", groupOffsets(t, brokers, group, topic, partitions))
	sc := sarama.NewConfig()
	sc.Version = sarama.V3_6_0_0
	if adm, err := sarama.NewClusterAdmin(brokers, sc); err != nil {
		fmt.Fprintf(&b, "\ncluster admin: %v", err)
	} else {
		defer adm.Close()
		gs, err := adm.DescribeConsumerGroups([]string{group})
		switch {
		case err != nil:
			fmt.Fprintf(&b, "\ndescribe group: %v", err)
		case len(gs) == 1:
			g := gs[0]
			fmt.Fprintf(&b, "\ngroup %s: state %q, %d members", group, g.State, len(g.Members))
			held := map[int32]string{}
			ids := make([]string, 0, len(g.Members))
			for id := range g.Members {
				ids = append(ids, id)
			}
			sort.Strings(ids)
			for _, id := range ids {
				a, err := g.Members[id].GetMemberAssignment()
				if err != nil || a == nil {
					fmt.Fprintf(&b, "\n  member %s: no assignment (%v)", id, err)
					continue
				}
				fmt.Fprintf(&b, "\n  member %s: %v", id, a.Topics[topic])
				for _, p := range a.Topics[topic] {
					held[p] = id
				}
			}
			var orphans []int32
			for p := range int32(partitions) {
				if _, ok := held[p]; !ok {
					orphans = append(orphans, p)
				}
			}
			if len(orphans) > 0 {
				fmt.Fprintf(&b, "\n  partitions assigned to nobody: %v", orphans)
			}
		}
	}
	for _, w := range ws {
		st := w.eng.Status()
		fmt.Fprintf(&b, "\nworker %s: engine %s paused=%v reasons=%v queue=%d in_flight=%d retrying=%d consumed=%d admitted=%d acked=%d nacked=%d; source paused=%v handed over %d",
			w.name, st.State, st.Paused, st.PauseReasons, st.QueueDepth, st.InFlight, st.Retrying,
			st.Consumed, st.Admitted, st.Acked, st.Nacked, w.src.Paused(), w.src.Delivered())
	}
	return b.String()
}
