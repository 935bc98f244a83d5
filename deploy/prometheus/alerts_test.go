// Package prometheus holds murphy's Prometheus alerting rules (alerts.yaml)
// and their tests: promtool check rules and promtool test rules
// (alerts_test.yaml), every expression parsed by the PromQL parser, and
// every metric it names checked against a running pipeline's /metrics.
package prometheus

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/murphy-rl/murphy/deploy/internal/metricnames"
	"go.yaml.in/yaml/v3"
)

// EnvRequire makes a missing promtool a test failure (as does CI).
const EnvRequire = "MURPHY_REQUIRE_PROMTOOL"

// EnvBinary names the promtool binary to use.
const EnvBinary = "MURPHY_PROMTOOL"

type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []rule `yaml:"rules"`
	} `yaml:"groups"`
}

type rule struct {
	Alert       string            `yaml:"alert"`
	Record      string            `yaml:"record"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

func loadRules(t *testing.T) []rule {
	t.Helper()
	b, err := os.ReadFile("alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var f ruleFile
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatalf("alerts.yaml: %v", err)
	}
	var rules []rule
	for _, g := range f.Groups {
		rules = append(rules, g.Rules...)
	}
	if len(rules) == 0 {
		t.Fatal("alerts.yaml has no rules")
	}
	return rules
}

// promtool returns the promtool binary: $MURPHY_PROMTOOL, promtool on PATH,
// or .cache/bin/promtool (deploy/prometheus/install-test-deps.sh). Without
// one the test is skipped, or fails when CI or MURPHY_REQUIRE_PROMTOOL is
// set.
func promtool(t *testing.T) string {
	t.Helper()
	if b := os.Getenv(EnvBinary); b != "" {
		p, err := exec.LookPath(b)
		if err != nil {
			t.Fatalf("%s=%s: not an executable", EnvBinary, b)
		}
		return p
	}
	if p, err := exec.LookPath("promtool"); err == nil {
		return p
	}
	p := filepath.Join(metricnames.Root(t), ".cache", "bin", "promtool")
	if _, err := exec.LookPath(p); err == nil {
		return p
	}
	msg := "promtool not installed: bash deploy/prometheus/install-test-deps.sh puts it in .cache/bin"
	if os.Getenv("CI") != "" || os.Getenv(EnvRequire) != "" {
		t.Fatalf("%s; required because CI or %s is set", msg, EnvRequire)
	}
	t.Skip(msg)
	return ""
}

func runPromtool(t *testing.T, bin string, args ...string) {
	t.Helper()
	start := time.Now()
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("promtool %s (%s):\n%s", strings.Join(args, " "), time.Since(start).Round(time.Millisecond), out)
}

// TestPromtoolCheckRules is promtool check rules alerts.yaml.
func TestPromtoolCheckRules(t *testing.T) {
	runPromtool(t, promtool(t), "check", "rules", "alerts.yaml")
}

// TestPromtoolTestRules runs the rules' unit tests, alerts_test.yaml.
func TestPromtoolTestRules(t *testing.T) {
	runPromtool(t, promtool(t), "test", "rules", "alerts_test.yaml")
}

// TestAlertRules checks every rule with the PromQL parser (the Prometheus
// 3 one, whatever promtool version is installed) and what every alert
// needs: a severity, a summary and a description.
func TestAlertRules(t *testing.T) {
	rules := loadRules(t)
	for _, r := range rules {
		if r.Alert == "" {
			t.Errorf("rule %q is not an alert", r.Record)
			continue
		}
		if _, err := metricnames.Selected(r.Expr); err != nil {
			t.Errorf("%s: %v\n%s", r.Alert, err, r.Expr)
		}
		switch r.Labels["severity"] {
		case "critical", "warning", "info":
		default:
			t.Errorf("%s: severity %q, want critical, warning or info", r.Alert, r.Labels["severity"])
		}
		if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
			t.Errorf("%s: needs a summary and a description", r.Alert)
		}
	}
}

// TestAlertsCover checks that the subjects the rules are for have an alert.
func TestAlertsCover(t *testing.T) {
	used := map[string]bool{}
	alerts := map[string]bool{}
	for _, r := range loadRules(t) {
		alerts[r.Alert] = true
		names, _ := metricnames.Selected(r.Expr)
		for _, n := range names {
			used[n] = true
		}
	}
	for _, n := range []string{
		"murphy_consumer_lag", "murphy_dead_letters_total", "murphy_execute_executions_total",
		"murphy_generate_samples_total", "murphy_credit_stuck_trees_total", "up",
	} {
		if !used[n] {
			t.Errorf("no alert on %s", n)
		}
	}
	for _, a := range []string{"MurphyConsumerLagGrowing", "MurphyDeadLetterRate", "MurphySandboxErrorRate",
		"MurphyInferenceErrorRate", "MurphyStuckTrees", "MurphyStageDown", "MurphyTargetDown"} {
		if !alerts[a] {
			t.Errorf("no alert %s", a)
		}
	}
}

// TestAlertMetricsExported runs the pipeline and checks that every metric
// the rules name is on its /metrics.
func TestAlertMetricsExported(t *testing.T) {
	rules := loadRules(t)
	set := metricnames.Pipeline(t)
	for _, r := range rules {
		missing, err := set.Missing(r.Expr)
		if err != nil {
			t.Errorf("%s: %v", r.Alert, err)
			continue
		}
		for _, n := range missing {
			t.Errorf("%s: %s is not exported by the pipeline (its murphy_ metrics: %v)", r.Alert, n, set.Names("murphy_"))
		}
	}
}
