package emit

import "fmt"

// murmur2 is the Java Kafka client's key hash (also kafka-go's
// Murmur2Balancer and franz-go's default), so the key of a batch decides its
// partition the same way in every client.
func murmur2(data []byte) uint32 {
	const (
		seed uint32 = 0x9747b28c
		m    uint32 = 0x5bd1e995
		r           = 24
	)
	n := len(data)
	h := seed ^ uint32(n)
	for i := 0; i+4 <= n; i += 4 {
		k := uint32(data[i]) | uint32(data[i+1])<<8 | uint32(data[i+2])<<16 | uint32(data[i+3])<<24
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
	}
	tail := data[n&^3:]
	switch len(tail) {
	case 3:
		h ^= uint32(tail[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(tail[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(tail[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return h
}

// partitionOf is the partition a murmur2 partitioner assigns to key.
func partitionOf(key string, partitions int) int {
	return int((murmur2([]byte(key)) & 0x7fffffff) % uint32(partitions))
}

// batchKey returns a deterministic Kafka key for the batches of source
// partition p that a murmur2 partitioner sends to partition p mod
// partitions. All batches of one credited partition then land, in order, on
// one batches partition: trainers splitting partitions by rank see whole
// partitions, and a restarted stage finds its last batch at the tail of a
// single partition.
func batchKey(sourceTopic string, p, partitions int) string {
	want := p % partitions
	for salt := 0; ; salt++ {
		k := fmt.Sprintf("%s/%d/%d", sourceTopic, p, salt)
		if partitionOf(k, partitions) == want {
			return k
		}
	}
}
