package backfill

import (
	"fmt"
	"io"
	"sort"
	"time"
)

// Yield is a manifest run's reproducibility, as BugSwarm reports it for
// its job pairs: of the items tried, how many reproduced (gave at least one
// verified task), why the others were rejected, how long an item took, and
// how often a dependency cache was reused.
type Yield struct {
	Items      int `json:"items"`
	Reproduced int `json:"reproduced"`
	// Rejected counts the items that gave no task, by the reason they were
	// rejected for (an item's most frequent one); Failed those that stopped
	// with an error.
	Rejected map[string]int `json:"rejected_by_reason"`
	Failed   int            `json:"failed"`
	// Tasks counts verified tasks; Candidates the candidate tasks rejected,
	// by reason (an injection tries many).
	Tasks      int            `json:"tasks"`
	Candidates map[string]int `json:"candidates_rejected_by_reason"`
	// Time per item.
	Total  time.Duration `json:"total_ns"`
	Mean   time.Duration `json:"mean_ns"`
	Median time.Duration `json:"median_ns"`
	Max    time.Duration `json:"max_ns"`
	// Dependencies: items whose dependencies were resolved now (Misses),
	// taken from a cache an earlier item or run resolved (Hits), that
	// could not be resolved (Unresolved), or that needed none (None).
	Deps struct {
		Hits       int           `json:"hits"`
		Misses     int           `json:"misses"`
		Unresolved int           `json:"unresolved"`
		None       int           `json:"none"`
		Time       time.Duration `json:"resolve_ns"`
	} `json:"dependencies"`
	PerItem []YieldItem `json:"per_item"`
}

// YieldItem is one item of a Yield.
type YieldItem struct {
	Name    string        `json:"name"`
	Kind    string        `json:"kind"`
	Outcome string        `json:"outcome"` // reproduced, rejected, failed
	Reason  string        `json:"reason,omitempty"`
	Tasks   int           `json:"tasks"`
	Time    time.Duration `json:"time_ns"`
	Deps    string        `json:"dependencies"` // hit, miss, unresolved, none
	Cause   string        `json:"log_cause,omitempty"`
}

// NewYield is an empty Yield.
func NewYield() *Yield {
	return &Yield{Rejected: map[string]int{}, Candidates: map[string]int{}}
}

// Add accounts for one item's result (res may be nil when err is not).
func (y *Yield) Add(name, kind string, res *Result, err error, d time.Duration) {
	it := YieldItem{Name: name, Kind: kind, Time: d, Deps: "none"}
	y.Items++
	y.Total += d
	switch {
	case err != nil:
		it.Outcome = "failed"
		y.Failed++
	case len(res.Tasks) > 0:
		it.Outcome = "reproduced"
		y.Reproduced++
	default:
		it.Outcome = "rejected"
		it.Reason = mainReason(res.Rejected)
		y.Rejected[it.Reason]++
	}
	if res != nil {
		it.Tasks, it.Cause = len(res.Tasks), res.Cause
		y.Tasks += len(res.Tasks)
		for _, rj := range res.Rejected {
			y.Candidates[rj.Reason]++
		}
		if r := res.Dependencies; r != nil && len(r.Ecosystems) > 0 {
			y.Deps.Time += r.Duration
			switch {
			case r.Failed != "":
				it.Deps = "unresolved"
				y.Deps.Unresolved++
			case r.Hit:
				it.Deps = "hit"
				y.Deps.Hits++
			default:
				it.Deps = "miss"
				y.Deps.Misses++
			}
		}
	}
	if it.Deps == "none" {
		y.Deps.None++
	}
	y.PerItem = append(y.PerItem, it)
	times := make([]time.Duration, len(y.PerItem))
	for i, p := range y.PerItem {
		times[i] = p.Time
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	y.Mean, y.Max = y.Total/time.Duration(y.Items), times[len(times)-1]
	y.Median = times[len(times)/2]
	if len(times)%2 == 0 {
		y.Median = (times[len(times)/2-1] + times[len(times)/2]) / 2
	}
}

// mainReason is an item's most frequent rejection (the first among ties;
// duplicates of an injection's draws count last).
func mainReason(rs []Rejection) string {
	if len(rs) == 0 {
		return "none"
	}
	n := map[string]int{}
	for _, r := range rs {
		if r.Reason != RejectDuplicate {
			n[r.Reason]++
		}
	}
	best := rs[0].Reason
	for _, r := range rs {
		if n[r.Reason] > n[best] {
			best = r.Reason
		}
	}
	return best
}

// WriteText writes the yield for people: the totals, then one line per
// item.
func (y *Yield) WriteText(w io.Writer) {
	rate := 0.0
	if y.Items > 0 {
		rate = float64(y.Reproduced) / float64(y.Items)
	}
	fmt.Fprintf(w, "yield: %d items, %d reproduced (%.0f%%), %d rejected (%s), %d failed; %d tasks\n",
		y.Items, y.Reproduced, 100*rate, y.Items-y.Reproduced-y.Failed, counts(y.Rejected), y.Failed, y.Tasks)
	fmt.Fprintf(w, "  time per item: mean %s, median %s, max %s (total %s)\n",
		y.Mean.Round(time.Millisecond), y.Median.Round(time.Millisecond), y.Max.Round(time.Millisecond), y.Total.Round(time.Millisecond))
	fmt.Fprintf(w, "  dependency caches: %d hits, %d resolved, %d unresolved, %d items needed none (resolution %s)\n",
		y.Deps.Hits, y.Deps.Misses, y.Deps.Unresolved, y.Deps.None, y.Deps.Time.Round(time.Millisecond))
	if len(y.Candidates) > 0 {
		fmt.Fprintf(w, "  candidate tasks rejected by reason: %s\n", counts(y.Candidates))
	}
	for _, it := range y.PerItem {
		what := it.Outcome
		if it.Reason != "" {
			what += " (" + it.Reason + ")"
		}
		fmt.Fprintf(w, "  %-40s %-7s %-32s %3d tasks  %9s  deps %s\n", it.Name, it.Kind, what, it.Tasks, it.Time.Round(time.Millisecond), it.Deps)
	}
}
