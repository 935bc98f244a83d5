package generate

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/topics"
)

// admissionLog is the stage's side of the admission log (bound.go): it
// writes proposals (acknowledged before generation starts) and reads the
// log back in order, feeding every record to the bound and handing each
// of its own proposals its decision. Without a broker (tests, the stage
// used as a library) the log is kept in memory, one process's alone.
type admissionLog struct {
	bnd      *bound
	instance string
	// write appends a proposal to the log.
	write func(ctx context.Context, a *topics.Admission) error

	mu      sync.Mutex
	seq     uint64
	epoch   string
	waiting map[string]chan bool // proposal id → its decision, once read back
	// mem is the in-memory log's next offset (no broker).
	mem int64
}

func newAdmissionLog(bnd *bound, instance string, now time.Time) *admissionLog {
	l := &admissionLog{bnd: bnd, instance: instance, epoch: strconv.FormatInt(now.UnixNano(), 36), waiting: map[string]chan bool{}}
	l.write = l.writeMemory
	bnd.setLogStart(0)
	return l
}

// writeMemory appends a to the in-memory log and reads it back at once.
func (l *admissionLog) writeMemory(_ context.Context, a *topics.Admission) error {
	l.mu.Lock()
	off := l.mem
	l.mem++
	l.mu.Unlock()
	l.read(off, a)
	return nil
}

// pending is the number of this process's proposals not read back yet.
func (l *admissionLog) pending() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.waiting)
}

// read feeds the record a at offset of the log to the bound and its
// decision to its proposer, when that is this process.
func (l *admissionLog) read(offset int64, a *topics.Admission) {
	ok := l.bnd.observe(offset, a)
	if a.Instance != l.instance || a.Proposal == "" {
		return
	}
	l.mu.Lock()
	ch := l.waiting[a.Proposal]
	delete(l.waiting, a.Proposal)
	l.mu.Unlock()
	if ch != nil {
		ch <- ok
	}
}

// submit proposes a and returns its decision: at once for an unbounded
// proposal (always granted), else once the log is read back up to it.
func (l *admissionLog) submit(ctx context.Context, a *topics.Admission) (bool, error) {
	l.mu.Lock()
	l.seq++
	a.Instance = l.instance
	a.Proposal = l.instance + "/" + l.epoch + "/" + strconv.FormatUint(l.seq, 10)
	ch := make(chan bool, 1)
	bounded := a.Headroom != nil
	if bounded {
		l.waiting[a.Proposal] = ch
	}
	l.mu.Unlock()
	if err := l.write(ctx, a); err != nil {
		l.forget(a.Proposal)
		return false, fmt.Errorf("generate: admission of %s: %w", a.TreeID, err)
	}
	if !bounded {
		return true, nil
	}
	select {
	case ok := <-ch:
		return ok, nil
	case <-ctx.Done():
		l.forget(a.Proposal) // decided all the same; its prompt is redelivered
		return false, ctx.Err()
	}
}

func (l *admissionLog) forget(id string) {
	l.mu.Lock()
	delete(l.waiting, id)
	l.mu.Unlock()
}

// follow reads the admission log (partition 0 of topic) on the broker from
// the records written within the tree TTL on, and sends proposals there:
// what the in-memory log did until now is replaced.
func (l *admissionLog) follow(ctx context.Context, kcfg pipeline.KafkaConfig, topic string, since time.Time) (caughtUp int64, err error) {
	ranges, err := pipeline.OffsetsSince(ctx, kcfg, topic, since)
	if err != nil {
		return 0, err
	}
	from, to := ranges[0][0], ranges[0][1]
	prod := pipeline.NewProducer(kcfg)
	go func() {
		<-ctx.Done()
		_ = prod.Close()
	}()
	l.mu.Lock()
	l.write = func(ctx context.Context, a *topics.Admission) error {
		b, err := topics.Encode(a)
		if err != nil {
			return err
		}
		return prod.Produce(ctx, pipeline.Out{Topic: topic, Key: a.TreeID, Value: b, Partition: pipeline.ToPartition(0)})
	}
	l.mu.Unlock()
	l.bnd.setLogStart(from)
	go func() {
		for rec := range pipeline.TailPartition(ctx, kcfg, topic, 0, from) {
			var a topics.Admission
			if err := topics.Decode(rec.Value, &a); err != nil {
				// Counted all the same: a record the others may read as a
				// grant occupies its offset.
				slog.Warn("admission log: bad record", "offset", rec.Offset, "err", err)
				l.bnd.skip(rec.Offset)
				continue
			}
			l.read(rec.Offset, &a)
		}
	}()
	return to, nil
}
