package pipeline

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// RegisterMetrics registers what promauto creates; a name registered twice
// is an error, not a panic, and undoes the registrations made before it.
func TestRegisterMetricsUndoesAFailedRegistration(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	var c prometheus.Counter
	if err := RegisterMetrics(reg, func(f promauto.Factory) {
		c = f.NewCounter(prometheus.CounterOpts{Name: "x_total", Help: "x"})
	}); err != nil {
		t.Fatal(err)
	}
	c.Inc()
	err := RegisterMetrics(reg, func(f promauto.Factory) {
		f.NewCounter(prometheus.CounterOpts{Name: "y_total", Help: "y"})
		f.NewCounter(prometheus.CounterOpts{Name: "x_total", Help: "x"})
	})
	if _, ok := err.(prometheus.AlreadyRegisteredError); !ok {
		t.Fatalf("second x_total: %v, want an AlreadyRegisteredError", err)
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(fams) != 1 || fams[0].GetName() != "x_total" {
		t.Fatalf("registered after the failure: %v, want x_total alone", fams)
	}
	if err := RegisterMetrics(nil, func(f promauto.Factory) {
		f.NewCounter(prometheus.CounterOpts{Name: "x_total", Help: "x"}).Inc()
	}); err != nil {
		t.Fatalf("nil registerer: %v", err)
	}
}
