package generate

import (
	"context"
	"log/slog"
	"time"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/topics"
)

// Follow starts following what the configuration asks for, until ctx
// ends: the policy-versions topic (versions.follow), the trainer-progress
// topic, the credited topic's end offsets and the admission log
// (staleness.enabled). The compacted topics are read from their start,
// outside any consumer group: the log is the state.
func (s *Stage) Follow(ctx context.Context, kcfg pipeline.KafkaConfig) {
	if s.vers != nil {
		go pipeline.Follow(ctx, kcfg, s.cat.Topic(topics.PolicyVersions), func(pv *topics.PolicyVersion) {
			_ = s.ObserveVersion(ctx, pv)
		})
		go s.retryLoads(ctx)
	}
	if s.bnd != nil {
		s.bnd.setRecovering(true)
		go s.recoverInFlight(ctx, kcfg)
		go pipeline.Follow(ctx, kcfg, s.cat.Topic(topics.TrainerProgressTopic), s.ObserveProgress)
		go s.pollCredited(ctx, kcfg)
	}
}

// retryLoads tries the newest version again every retry interval (a load
// that failed, a server that came back).
func (s *Stage) retryLoads(ctx context.Context) {
	t := time.NewTicker(s.cfg.Versions.RetryInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_ = s.vers.advance(ctx)
		}
	}
}

// recoverInFlight reads what this process needs before it proposes a
// tree: the trainers' progress, the completions written within the tree
// TTL (its consumer group resumes past them) and the admission log from
// the records written within the tree TTL up to its end (a tree older
// than that no longer counts anyway); from there it follows the log.
func (s *Stage) recoverInFlight(ctx context.Context, kcfg pipeline.KafkaConfig) {
	since := s.now().Add(-s.cfg.TreeTTL)
	var to int64
	for ctx.Err() == nil {
		// The compacted progress topic whole: until it is read, whether a
		// trainer bounds is not known.
		err := s.readWindow(ctx, kcfg, s.cat.Topic(topics.TrainerProgressTopic), time.Unix(0, 0), func(rec pipeline.Record) {
			var p topics.TrainerProgress
			if topics.Decode(rec.Value, &p) == nil {
				s.ObserveProgress(&p)
			}
		})
		if err == nil {
			err = s.readWindow(ctx, kcfg, s.cat.Topic(topics.Completions), since, func(rec pipeline.Record) {
				s.bnd.completed(string(rec.Key))
			})
		}
		if err == nil {
			to, err = s.alog.follow(ctx, kcfg, s.cat.Topic(topics.Admissions), since)
		}
		if err == nil {
			break
		}
		slog.Warn("staleness bound: cannot read the trees in flight; retrying", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(2 * time.Second):
		}
	}
	for ctx.Err() == nil {
		ch := s.bnd.waitChan()
		if s.bnd.position() >= to {
			break
		}
		select {
		case <-ctx.Done():
			return
		case <-ch:
		}
	}
	s.bnd.setRecovering(false)
	s.updateBoundMetrics()
}

// readWindow hands fn every record of topic written since since, up to its
// end when asked.
func (s *Stage) readWindow(ctx context.Context, kcfg pipeline.KafkaConfig, topic string, since time.Time, fn func(pipeline.Record)) error {
	ranges, err := pipeline.OffsetsSince(ctx, kcfg, topic, since)
	if err != nil {
		return err
	}
	for p, r := range ranges {
		if err := pipeline.ReadRange(ctx, kcfg, topic, p, r[0], r[1], func(rec pipeline.Record) error {
			fn(rec)
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}

// pollCredited reads the credited topic's high watermarks every poll interval.
func (s *Stage) pollCredited(ctx context.Context, kcfg pipeline.KafkaConfig) {
	topic := s.cat.Topic(topics.Credited)
	marks := pipeline.NewWatermarks(kcfg)
	defer marks.Close()
	t := time.NewTicker(s.cfg.Staleness.PollInterval)
	defer t.Stop()
	for {
		asked := s.now()
		if ends, err := marks.Ends(ctx, topic); err == nil {
			s.setCreditedEnds(ends, asked)
		} else if ctx.Err() == nil {
			slog.Warn("staleness: cannot read the credited topic's offsets", "topic", topic, "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// admitBounded waits until root prompt tree may start under the bound and
// returns the version it starts at: a tree already granted at once, at its
// version; else its proposal is written on the admission log and read back
// granted. A proposal the log voids (the records before it took the
// headroom) is proposed again once the bound changes.
func (s *Stage) admitBounded(ctx context.Context, tree string) (int64, error) {
	waited, waitedVersion := false, false
	for {
		ch := s.bnd.waitChan()
		pr := s.bnd.propose(tree, s.servedVersion(), s.alog.pending())
		switch {
		case pr.Start:
			return pr.Version, nil
		case pr.Record != nil:
			ok, err := s.alog.submit(ctx, pr.Record)
			if err != nil {
				return 0, err
			}
			s.updateBoundMetrics()
			if ok {
				s.m.Admissions.WithLabelValues("granted").Inc()
				return pr.Record.PolicyVersion, nil
			}
			s.m.Admissions.WithLabelValues("voided").Inc()
		default:
			if !waited {
				waited = true
				s.m.HeldBackStale.Inc()
			}
			if pr.Wait == waitVersion && !waitedVersion {
				waitedVersion = true
				s.m.HeldBackVersion.Inc()
			}
		}
		t := time.NewTimer(time.Second)
		select {
		case <-ch:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return 0, ctx.Err()
		}
		t.Stop()
	}
}
