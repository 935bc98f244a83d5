package pipeline_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/pipeline/pipelinetest"
	"github.com/murphy-rl/murphy/topics"
)

// TestOrderedProducerKeepsCallOrder: records produced one call after the
// other through NewOrderedProducer, each with its own key, without waiting
// for acknowledgements, reach every partition in the order of the calls.
func TestOrderedProducerKeepsCallOrder(t *testing.T) {
	pipelinetest.OnEachBroker(t, func(t *testing.T, brokers []string) {
		cat := pipelinetest.Catalog(t, brokers, 3)
		topic := cat.Topic(topics.Credited)
		p := pipeline.NewOrderedProducer(pipelinetest.Kafka(brokers))
		const n = 3000
		var wg sync.WaitGroup
		var mu sync.Mutex
		var errs []error
		wg.Add(n)
		for i := 0; i < n; i++ {
			out := pipeline.Out{Topic: topic, Key: "tree-" + strconv.Itoa(i), Value: []byte(strconv.Itoa(i))}
			p.ProduceAsync([]pipeline.Out{out}, func(err error) {
				defer wg.Done()
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		if len(errs) > 0 {
			t.Fatalf("%d writes failed: %v", len(errs), errs[0])
		}
		recs, err := pipelinetest.ReadAll(context.Background(), brokers, topic, n, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		last := map[int]int{}
		for _, r := range recs {
			i, err := strconv.Atoi(string(r.Value))
			if err != nil {
				t.Fatal(err)
			}
			prev, seen := last[r.Partition]
			if seen && i < prev {
				t.Fatalf("partition %d: record of call %d after call %d", r.Partition, i, prev)
			}
			last[r.Partition] = i
		}
		if len(last) < 2 {
			t.Fatalf("records reached %d partitions; the test needs several", len(last))
		}
	})
}
