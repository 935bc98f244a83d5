package pipeline

import (
	"testing"

	"github.com/segmentio/kafka-go"
)

// An Out's explicit partition wins over its key; without one the key's
// murmur2 hash decides, as the Java client's partitioner does.
func TestPartitionerHonoursExplicitPartition(t *testing.T) {
	parts := []int{0, 1, 2, 3}
	var b partitioner
	for p := range 9 {
		m := toKafka(Out{Topic: "t", Key: "tree-17", Partition: ToPartition(p)})
		if got := b.Balance(m, parts...); got != p%4 {
			t.Fatalf("ToPartition(%d) went to %d of 4", p, got)
		}
	}
	m := toKafka(Out{Topic: "t", Key: "tree-17"})
	if got, want := b.Balance(m, parts...), (kafka.Murmur2Balancer{}).Balance(m, parts...); got != want {
		t.Fatalf("keyed record went to %d, murmur2 says %d", got, want)
	}
	if _, ok := (Out{}).Partition.Get(); ok {
		t.Fatal("the zero Out has an explicit partition")
	}
}
