package metricnames

import (
	"slices"
	"strings"
	"testing"
)

const exposition = `# HELP murphy_records_in_total Records consumed, by stage and topic.
# TYPE murphy_records_in_total counter
murphy_records_in_total{stage="execute",topic="murphy.candidates"} 12
# HELP murphy_handler_seconds Handler latency per record, by stage.
# TYPE murphy_handler_seconds histogram
murphy_handler_seconds_bucket{stage="execute",le="0.5"} 3
murphy_handler_seconds_bucket{stage="execute",le="+Inf"} 4
murphy_handler_seconds_sum{stage="execute"} 1.5
murphy_handler_seconds_count{stage="execute"} 4
# HELP go_gc_duration_seconds A summary of the GC pause durations.
# TYPE go_gc_duration_seconds summary
go_gc_duration_seconds{quantile="0.5"} 0.001
go_gc_duration_seconds_sum 0.01
go_gc_duration_seconds_count 9
`

func TestSetHas(t *testing.T) {
	var s Set
	if err := s.Add(strings.NewReader(exposition)); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{
		"murphy_records_in_total": true, "murphy_records_in": false, "murphy_records_in_total_count": false,
		"murphy_handler_seconds_bucket": true, "murphy_handler_seconds_sum": true, "murphy_handler_seconds_count": true,
		"murphy_handler_seconds": true, "go_gc_duration_seconds": true, "go_gc_duration_seconds_count": true,
		"go_gc_duration_seconds_bucket": false, "up": true, "murphy_dead_letters_total": false,
	} {
		if got := s.Has(name); got != want {
			t.Errorf("Has(%s) = %v, want %v", name, got, want)
		}
	}
}

func TestSelected(t *testing.T) {
	got, err := Selected(`sum by (stage) (rate(murphy_records_in_total{namespace=~"$namespace"}[$__rate_interval]))
		/ on (stage) histogram_quantile(0.9, sum by (stage, le) (rate({__name__="murphy_handler_seconds_bucket"}[5m])))
		and absent(up{job="x"})`)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"murphy_records_in_total", "murphy_handler_seconds_bucket", "up"}
	if !slices.Equal(got, want) {
		t.Errorf("Selected = %v, want %v", got, want)
	}
	if _, err := Selected(`{__name__=~"murphy_.*"}`); err == nil {
		t.Error("a __name__ regexp selector: want an error (it cannot be checked)")
	}
	if _, err := Selected(`rate(murphy_records_in_total[$interval])`); err == nil {
		t.Error("an unknown variable outside a string: want a parse error")
	}
	var s Set
	_ = s.Add(strings.NewReader(exposition))
	missing, err := s.Missing(`murphy_records_in_total + murphy_nope_total`)
	if err != nil || !slices.Equal(missing, []string{"murphy_nope_total"}) {
		t.Errorf("Missing = %v, %v", missing, err)
	}
}
