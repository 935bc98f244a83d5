package topics_test

import (
	"strings"
	"testing"

	"github.com/murphy-rl/murphy/topics"
)

func TestCatalogReplication(t *testing.T) {
	for _, c := range []struct {
		name                 string
		rf, minISR, def, brk int
		want                 topics.Replication
		err                  string
	}{
		{name: "single broker default", def: 1, brk: 1, want: topics.Replication{Factor: 1}},
		{name: "cluster default 3", def: 3, brk: 3, want: topics.Replication{Factor: 3, MinInsync: 2}},
		{name: "configured 3 on 5", rf: 3, def: 1, brk: 5, want: topics.Replication{Factor: 3, MinInsync: 2}},
		{name: "factor 2 keeps the cluster's min.insync", rf: 2, def: 1, brk: 3, want: topics.Replication{Factor: 2}},
		{name: "configured min.insync wins", rf: 5, minISR: 2, brk: 5, want: topics.Replication{Factor: 5, MinInsync: 2}},
		{name: "factor beyond brokers", rf: 3, def: 1, brk: 1, err: "replication factor 3 (topics.replication_factor) exceeds the cluster's 1 broker(s)"},
		{name: "default beyond brokers", def: 3, brk: 2, err: "the cluster's default.replication.factor) exceeds the cluster's 2 broker(s)"},
		{name: "min.insync beyond factor", minISR: 2, def: 1, brk: 3, err: "min_insync_replicas 2 exceeds the replication factor 1"},
		{name: "brokers unknown", rf: 3, want: topics.Replication{Factor: 3, MinInsync: 2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cat := topics.DefaultCatalog()
			cat.ReplicationFactor, cat.MinInsyncReplicas = c.rf, c.minISR
			got, err := cat.Replication(c.def, c.brk)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, c.want)
			}
		})
	}
}

func TestCatalogValidateReplication(t *testing.T) {
	for _, c := range []struct {
		rf, minISR int
		ok         bool
	}{{0, 0, true}, {3, 2, true}, {3, 3, true}, {-1, 0, false}, {0, -1, false}, {2, 3, false}} {
		cat := topics.DefaultCatalog()
		cat.ReplicationFactor, cat.MinInsyncReplicas = c.rf, c.minISR
		if err := cat.Validate(); (err == nil) != c.ok {
			t.Errorf("rf %d min.insync %d: Validate() = %v, want ok %v", c.rf, c.minISR, err, c.ok)
		}
	}
}
