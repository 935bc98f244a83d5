// Package grafana holds murphy's Grafana dashboard (murphy.json) and its
// test: every panel query parses as PromQL, filters on the dashboard's
// namespace and job variables, and names only metrics a running pipeline
// exports.
package grafana

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/murphy-rl/murphy/deploy/internal/metricnames"
	"github.com/prometheus/prometheus/promql/parser"
)

type dashboard struct {
	Title      string  `json:"title"`
	UID        string  `json:"uid"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []variable `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int             `json:"id"`
	Type       string          `json:"type"`
	Title      string          `json:"title"`
	Datasource *datasource     `json:"datasource"`
	GridPos    *map[string]int `json:"gridPos"`
	Targets    []struct {
		RefID      string      `json:"refId"`
		Expr       string      `json:"expr"`
		Datasource *datasource `json:"datasource"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a row's collapsed panels
}

type datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type variable struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Query      json.RawMessage `json:"query"`
	Datasource *datasource     `json:"datasource"`
	IncludeAll bool            `json:"includeAll"`
	AllValue   string          `json:"allValue"`
}

func load(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile("murphy.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("murphy.json: %v", err)
	}
	return d
}

// query is one PromQL expression of the dashboard and where it is.
type query struct{ where, expr string }

// queries returns every panel target's expression and the metric selectors
// of the query variables (label_values(SELECTOR, label)).
func queries(t *testing.T, d dashboard) []query {
	t.Helper()
	var out []query
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			for _, tg := range p.Targets {
				out = append(out, query{where: "panel " + p.Title + " " + tg.RefID, expr: tg.Expr})
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		sel, _, ok := labelValues(t, v)
		if !ok {
			t.Errorf("variable %s: query is not label_values(SELECTOR, LABEL)", v.Name)
			continue
		}
		out = append(out, query{where: "variable " + v.Name, expr: sel})
	}
	return out
}

var labelValuesRE = regexp.MustCompile(`^label_values\((.+),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)$`)

// labelValues splits a query variable's label_values(SELECTOR, LABEL).
func labelValues(t *testing.T, v variable) (selector, label string, ok bool) {
	t.Helper()
	var q struct {
		Query string `json:"query"`
	}
	if err := json.Unmarshal(v.Query, &q); err != nil {
		var s string
		if json.Unmarshal(v.Query, &s) != nil {
			return "", "", false
		}
		q.Query = s
	}
	m := labelValuesRE.FindStringSubmatch(strings.TrimSpace(q.Query))
	if m == nil {
		return "", "", false
	}
	return m[1], m[2], true
}

func TestDashboardShape(t *testing.T) {
	d := load(t)
	if d.Title == "" || d.UID == "" {
		t.Error("the dashboard needs a title and a uid")
	}
	vars := map[string]variable{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v
	}
	if v, ok := vars["datasource"]; !ok || v.Type != "datasource" {
		t.Error("no datasource variable of type datasource")
	}
	for _, name := range []string{"namespace", "job"} {
		v, ok := vars[name]
		if !ok {
			t.Errorf("no %s variable", name)
			continue
		}
		if _, label, ok := labelValues(t, v); !ok || label != name {
			t.Errorf("variable %s: want label_values(..., %s)", name, name)
		}
		if !v.IncludeAll || v.AllValue != ".*" {
			// "All" must also match series without the label (outside
			// Kubernetes there is no namespace).
			t.Errorf("variable %s: want includeAll with allValue .*", name)
		}
	}
	ids := map[int]string{}
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			if prev, dup := ids[p.ID]; dup || p.ID == 0 {
				t.Errorf("panel %q: id %d missing or also used by %q", p.Title, p.ID, prev)
			}
			ids[p.ID] = p.Title
			if p.GridPos == nil {
				t.Errorf("panel %q has no gridPos", p.Title)
			}
			switch p.Type {
			case "row", "text":
			default:
				if len(p.Targets) == 0 {
					t.Errorf("panel %q has no query", p.Title)
				}
				if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
					t.Errorf("panel %q: datasource is not the ${datasource} variable", p.Title)
				}
			}
			for _, tg := range p.Targets {
				if tg.Datasource != nil && tg.Datasource.UID != "${datasource}" {
					t.Errorf("panel %q %s: datasource is not the ${datasource} variable", p.Title, tg.RefID)
				}
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
}

// TestDashboardQueriesParse checks that every query parses as PromQL and
// that each selector filters on the namespace and job variables.
func TestDashboardQueriesParse(t *testing.T) {
	d := load(t)
	qs := queries(t, d)
	if len(qs) < 20 {
		t.Fatalf("only %d queries", len(qs))
	}
	for _, q := range qs {
		if _, err := metricnames.Selected(q.expr); err != nil {
			t.Errorf("%s: %v\n%s", q.where, err, q.expr)
			continue
		}
		if strings.HasPrefix(q.where, "variable namespace") {
			continue // the variable the others are filtered by
		}
		e, err := parser.NewParser(parser.Options{}).ParseExpr(strings.ReplaceAll(q.expr, "$__rate_interval", "5m"))
		if err != nil {
			t.Errorf("%s: %v", q.where, err)
			continue
		}
		parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
			vs, ok := n.(*parser.VectorSelector)
			if !ok {
				return nil
			}
			want := map[string]string{"namespace": `"$namespace"`, "job": `"$job"`}
			if strings.HasPrefix(q.where, "variable job") {
				delete(want, "job")
			}
			for _, m := range vs.LabelMatchers {
				if w, ok := want[m.Name]; ok && m.Type.String() == "=~" && `"`+m.Value+`"` == w {
					delete(want, m.Name)
				}
			}
			for l, w := range want {
				t.Errorf("%s: selector %s does not filter %s=~%s", q.where, vs, l, w)
			}
			return nil
		})
	}
}

// TestDashboardCovers checks that the subjects the dashboard is for have a
// panel: throughput and lag per stage, sandbox verdicts, rewards, credit,
// emit, dead letters.
func TestDashboardCovers(t *testing.T) {
	d := load(t)
	used := map[string]bool{}
	for _, q := range queries(t, d) {
		names, _ := metricnames.Selected(q.expr)
		for _, n := range names {
			used[n] = true
		}
	}
	for _, n := range []string{
		"murphy_records_in_total", "murphy_records_out_total", "murphy_consumer_lag",
		"murphy_generate_samples_total", "murphy_execute_executions_total",
		"murphy_govern_reward_sum", "murphy_govern_reward_bucket",
		"murphy_credit_trees_completed_total", "murphy_credit_stuck_trees_total",
		"murphy_emit_rows_total", "murphy_dead_letters_total",
	} {
		if !used[n] {
			t.Errorf("no panel queries %s", n)
		}
	}
}

// TestDashboardMetricsExported runs the pipeline and checks that every
// metric the dashboard queries is on its /metrics.
func TestDashboardMetricsExported(t *testing.T) {
	d := load(t)
	set := metricnames.Pipeline(t)
	for _, q := range queries(t, d) {
		missing, err := set.Missing(q.expr)
		if err != nil {
			t.Errorf("%s: %v", q.where, err)
			continue
		}
		for _, n := range missing {
			t.Errorf("%s: %s is not exported by the pipeline (its murphy_ metrics: %v)", q.where, n, set.Names("murphy_"))
		}
	}
}
