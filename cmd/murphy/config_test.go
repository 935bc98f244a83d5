package main

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/murphy-rl/murphy/cmd/murphy/internal/flagdocs"
)

// TestFlagDocsUpToDate regenerates flagdocs_gen.go in memory from the
// config structs' sources and compares it with the checked-in file.
func TestFlagDocsUpToDate(t *testing.T) {
	res, err := flagdocs.Generate(flagdocs.Options{Dir: ".", Type: "Config", Var: "fieldDocs"})
	if err != nil {
		t.Fatal(err)
	}
	have, err := os.ReadFile("flagdocs_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, res.Source) {
		t.Fatalf("flagdocs_gen.go is stale: run go generate ./cmd/murphy\n%s", firstDiff(string(have), string(res.Source)))
	}
}

func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < max(len(al), len(bl)); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return "checked in: " + x + "\ngenerated:  " + y
		}
	}
	return ""
}

// TestConfigFieldsDocumented: every leaf setting of Config, flag or not,
// has a doc comment to show in --help.
func TestConfigFieldsDocumented(t *testing.T) {
	n := 0
	eachSetting("", reflect.New(reflect.TypeFor[Config]()).Elem(), func(s setting) {
		n++
		if s.doc() == "" {
			t.Errorf("%s: %s.%s.%s has no doc comment (document the field, then go generate ./cmd/murphy)",
				s.key, s.owner.PkgPath(), s.owner.Name(), s.field.Name)
		}
	})
	if n < 100 {
		t.Fatalf("only %d settings in Config", n)
	}
}

var placeholderUsage = regexp.MustCompile(`(?i)see the component|config documentation|\bTODO\b|\bFIXME\b|\bXXX\b`)

// commands lists root and every command below it by its path.
func commands(root *cobra.Command) map[string]*cobra.Command {
	all := map[string]*cobra.Command{}
	var visit func(c *cobra.Command)
	visit = func(c *cobra.Command) {
		all[c.CommandPath()] = c
		for _, sub := range c.Commands() {
			visit(sub)
		}
	}
	visit(root)
	return all
}

// TestFlagHelpEveryFlagDocumented: no flag of any command has an empty or
// placeholder usage, every flag is kebab-case, and every config flag's
// usage is its field's doc.
func TestFlagHelpEveryFlagDocumented(t *testing.T) {
	usages := map[string]string{}
	eachSetting("", reflect.New(reflect.TypeFor[Config]()).Elem(), func(s setting) { usages[s.key] = s.usage() })
	cmds := commands(newRootCmd())
	for _, want := range []string{"murphy run", "murphy submit", "murphy exec", "murphy credit", "murphy topics create",
		"murphy bench", "murphy bench sandbox", "murphy broker"} {
		if cmds[want] == nil {
			t.Errorf("no command %q", want)
		}
	}
	for _, name := range stageNames {
		if cmds["murphy stage "+name] == nil {
			t.Errorf("no command murphy stage %s", name)
		}
	}
	configFlags := 0
	for path, c := range cmds {
		for _, fs := range []*pflag.FlagSet{c.Flags(), c.PersistentFlags()} {
			fs.VisitAll(func(f *pflag.Flag) {
				where := path + " --" + f.Name
				if strings.TrimSpace(f.Usage) == "" || placeholderUsage.MatchString(f.Usage) {
					t.Errorf("%s: usage %q", where, f.Usage)
				}
				if strings.Contains(f.Name, "_") {
					t.Errorf("%s: not kebab-case", where)
				}
				key, ok := f.Annotations[keyAnnotation]
				if !ok {
					if _, isKey := usages[strings.ReplaceAll(f.Name, "-", "_")]; isKey {
						t.Errorf("%s: names a setting but is not documented from it", where)
					}
					return
				}
				configFlags++
				if want, ok := usages[key[0]]; !ok || f.Usage != want {
					t.Errorf("%s: usage %q, want the doc of %s: %q", where, f.Usage, key[0], want)
				}
				if f.Name != flagName(key[0]) {
					t.Errorf("%s: sets %s", where, key[0])
				}
			})
		}
	}
	if configFlags < 150 {
		t.Errorf("only %d config flags", configFlags)
	}
}

func help(t *testing.T, args ...string) string {
	t.Helper()
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(append(args, "--help"))
	if err := root.Execute(); err != nil {
		t.Fatalf("%v --help: %v\n%s", args, err, out.String())
	}
	return out.String()
}

var snakeFlag = regexp.MustCompile(`(?m)^\s+(-\w, )?--[a-z0-9.-]*_`)

func TestFlagHelpKebabWithDocsAndDefaults(t *testing.T) {
	out := help(t, "run")
	for _, want := range []string{
		"--credit.max-open-trees int",
		"caps the open trees per partition; at the cap the partition waits until a tree completes or reaches its deadline (default 10000)",
		"--credit.deadline duration", "(default 30m0s)",
		"--kafka.brokers strings", "host:port seed addresses (default [127.0.0.1:9092])",
		"--http-addr string", "serves /metrics, /healthz and /readyz",
		"--log-level string", "--task-cache int",
		"--emit.formats strings", "(default [ipc])",
		"--group-sizes ints", "--trees-per-task int", "--samples-out string",
		// maps have no flag: the help lists them
		"Settings without a flag", "govern.group_stats (map[string]bool)", "generate.policy.openai.client.headers",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("murphy run --help lacks %q", want)
		}
	}
	if m := snakeFlag.FindString(out); m != "" {
		t.Errorf("murphy run --help shows a snake_case flag: %q", m)
	}
	if placeholderUsage.MatchString(out) {
		t.Errorf("murphy run --help has a placeholder: %q", placeholderUsage.FindString(out))
	}
	for _, name := range stageNames {
		out := help(t, "stage", name)
		if m := snakeFlag.FindString(out); m != "" {
			t.Errorf("murphy stage %s --help shows a snake_case flag: %q", name, m)
		}
		if !strings.Contains(out, "--"+name+".") {
			t.Errorf("murphy stage %s --help lacks its section's flags", name)
		}
	}
	if out := help(t, "stage", "credit"); strings.Contains(out, "Settings without a flag") {
		t.Errorf("murphy stage credit lists settings without a flag, it has none:\n%s", out)
	}
	if out := help(t, "stage", "govern"); !strings.Contains(out, "govern.llm.extra (map[string]interface {})") {
		t.Errorf("murphy stage govern --help lacks govern.llm.extra:\n%s", out)
	}
}

// stageFlags is the flag set of `murphy stage credit` outside cobra, with
// the config it loads into.
func stageFlags() (*pflag.FlagSet, *Config) {
	cfg := defaultConfig()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	fs.SetOutput(&bytes.Buffer{})
	fs.String("config", "", "YAML configuration file")
	bindCommon(fs, &cfg)
	bindStage(fs, &cfg, "credit")
	bindStage(fs, &cfg, "emit")
	return fs, &cfg
}

func load(t *testing.T, path string, args ...string) *Config {
	t.Helper()
	fs, cfg := stageFlags()
	if err := fs.Parse(args); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	if err := loadConfig(fs, path, cfg); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return cfg
}

// TestFlagSnakeCaseAlias: the snake_case spelling of a flag sets the same
// field as the kebab-case one.
func TestFlagSnakeCaseAlias(t *testing.T) {
	for _, spell := range []func(string) string{flagName, func(k string) string { return k }} {
		args := []string{
			"--" + spell("credit.max_open_trees") + "=7",
			"--" + spell("credit.drop_zero_signal"),
			"--" + spell("credit.prune_order") + "=interp,intrap",
			"--" + spell("emit.file_max_age") + "=3s",
			"--" + spell("kafka.client_id") + "=c",
			"--" + spell("kafka.brokers") + "=a:1,b:2",
			"--" + spell("http_addr") + "=:9100",
			"--" + spell("log_level") + "=warn",
			"--" + spell("task_cache") + "=12",
			"--" + spell("gc.memory_limit_mb") + "=-1",
		}
		cfg := load(t, "", args...)
		got := []any{cfg.Credit.MaxOpenTrees, cfg.Credit.DropZeroSignal, cfg.Credit.PruneOrder, cfg.Emit.FileMaxAge,
			cfg.Kafka.ClientID, cfg.Kafka.Brokers, cfg.HTTPAddr, cfg.LogLevel, cfg.TaskCache, cfg.GC.MemoryLimitMB}
		want := []any{7, true, []string{"interp", "intrap"}, 3 * time.Second, "c", []string{"a:1", "b:2"}, ":9100", "warn", 12, -1}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%v:\n got %v\nwant %v", args, got, want)
		}
	}

	// Through the root command, as `murphy stage credit` and the
	// processes bench memory starts parse them.
	cmds := commands(newRootCmd())
	c := cmds["murphy stage credit"]
	if err := c.ParseFlags([]string{"--credit.max_open_trees", "9", "--log_level", "debug", "--kafka.commit-interval", "1s"}); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Flags().GetInt("credit.max-open-trees"); err != nil || v != 9 {
		t.Errorf("credit.max-open-trees = %d, %v; want 9", v, err)
	}
	if f := c.Flags().Lookup("log_level"); f == nil || f.Name != "log-level" || f.Value.String() != "debug" {
		t.Errorf("log_level looks up %+v", f)
	}
	g := cmds["murphy stage generate"]
	if err := g.ParseFlags([]string{"--generate.max_trees_in_flight", "0", "--generate.policy.simulated.seed", "3"}); err != nil {
		t.Fatal(err)
	}
	if v, _ := g.Flags().GetInt("generate.max-trees-in-flight"); v != 0 {
		t.Errorf("generate.max-trees-in-flight = %d", v)
	}
}

// TestConfigPrecedence: defaults < YAML file < environment < flags, for
// a stage section's key and a top-level one, whichever flag spelling; a flag
// left at its default overrides nothing.
func TestConfigPrecedence(t *testing.T) {
	path := filepath.Join(t.TempDir(), "murphy.yaml")
	yaml := "log_level: debug\ntask_cache: 11\nkafka:\n  brokers: [file:1]\ncredit:\n  max_open_trees: 10\n  deadline: 5m\nemit:\n  formats: [parquet]\n"
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	type got struct {
		MaxOpenTrees int
		Deadline     time.Duration
		LogLevel     string
		TaskCache    int
		Brokers      []string
		Formats      []string
	}
	read := func(c *Config) got {
		return got{c.Credit.MaxOpenTrees, c.Credit.Deadline, c.LogLevel, c.TaskCache, c.Kafka.Brokers, c.Emit.Formats}
	}
	check := func(name string, c *Config, want got) {
		t.Helper()
		if g := read(c); !reflect.DeepEqual(g, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", name, g, want)
		}
	}
	check("defaults", load(t, ""), got{10000, 10 * time.Minute, "info", 4096, []string{"127.0.0.1:9092"}, []string{"ipc"}})
	check("file", load(t, path), got{10, 5 * time.Minute, "debug", 11, []string{"file:1"}, []string{"parquet"}})

	t.Setenv("MURPHY_CREDIT__MAX_OPEN_TREES", "20")
	t.Setenv("MURPHY_LOG_LEVEL", "warn")
	t.Setenv("MURPHY_KAFKA__BROKERS", "env:1,env:2")
	fileEnv := got{20, 5 * time.Minute, "warn", 11, []string{"env:1", "env:2"}, []string{"parquet"}}
	check("file+env", load(t, path), fileEnv)
	// Flags set to their defaults' values still win; unset ones do not.
	check("file+env, unrelated flag", load(t, path, "--credit.tick-interval", "2s"), fileEnv)

	for _, args := range [][]string{
		{"--credit.max-open-trees", "30", "--log-level", "error", "--kafka.brokers", "flag:1", "--task-cache", "4096"},
		{"--credit.max_open_trees", "30", "--log_level", "error", "--kafka.brokers", "flag:1", "--task_cache", "4096"},
	} {
		check("file+env+flags "+strings.Join(args, " "), load(t, path, args...),
			got{30, 5 * time.Minute, "error", 4096, []string{"flag:1"}, []string{"parquet"}})
	}
}

func TestFlagDocUsage(t *testing.T) {
	for _, c := range []struct{ field, doc, want string }{
		{"MaxOpenTrees", "MaxOpenTrees caps the open trees per partition.", "caps the open trees per partition"},
		{"Gamma", "Gamma is the MERS discount γ >= 0 (unused by MARS).", "the MERS discount γ >= 0 (unused by MARS)"},
		{"Headers", "Headers are extra HTTP headers sent with every request.", "extra HTTP headers sent with every request"},
		{"GroupStats", "GroupStats overrides, per cause, whether it counts.", "overrides, per cause, whether it counts"},
		{"Temperature", "Temperature for sampling.", "temperature for sampling"},
		{"Stop", "Stop sequences.", "stop sequences"},
		{"TopP", "TopP for nucleus sampling.", "TopP for nucleus sampling"},
		{"UIDBase", "UIDBase and UIDCount give the range.", "UIDBase and UIDCount give the range"},
		{"HTTPAddr", "HTTPAddr serves /metrics (\"\" = off).", "serves /metrics (\"\" = off)"},
		{"Seed", "Seed seeds `random` in every job.", "seeds 'random' in every job"},
		{"Formats", "Formats lists ipc, parquet, ...", "lists ipc, parquet, ..."},
	} {
		if got := docUsage(c.field, c.doc); got != c.want {
			t.Errorf("docUsage(%q, %q) = %q, want %q", c.field, c.doc, got, c.want)
		}
	}
}
