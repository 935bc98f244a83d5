package main

import (
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/providers/posflag"
	"github.com/knadh/koanf/providers/structs"
	"github.com/knadh/koanf/v2"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Configuration comes, in increasing precedence, from the defaults of each
// component's Config, a YAML file (--config), environment variables
// (MURPHY_SECTION__FIELD, e.g. MURPHY_KAFKA__BROKERS) and flags
// (--section.field, e.g. --credit.max-open-trees). Every leaf field of the
// config struct gets a flag, so --help lists every setting with its default.
//
// A flag's usage is the first paragraph of its field's doc comment: the
// comments on the config structs are the one source of the settings'
// documentation. flagdocs_gen.go holds them, generated from the sources of
// every struct reachable from Config; after editing a config struct run
//
//	go generate ./cmd/murphy
//
// (TestFlagDocsUpToDate fails while the file is stale). Settings no flag
// can hold (maps) are listed in the help of the commands that have them and
// set in the YAML file.
//
// Flags are spelled one way, in kebab-case: --credit.max-open-trees for the
// YAML key credit.max_open_trees, --http-addr for http_addr. The snake_case
// spelling still works (every flag set normalizes "_" to "-"); YAML keys and
// environment variables stay snake_case.

//go:generate go run ./internal/flagdocs/gen -type Config -var fieldDocs -o flagdocs_gen.go

const envPrefix = "MURPHY_"

// keyAnnotation is the flag annotation holding the YAML key a config flag
// sets.
const keyAnnotation = "murphy/config-key"

// kebabFlagNames is the flag name normalization of every murphy flag set:
// "_" reads as "-", so --credit.max_open_trees is --credit.max-open-trees.
func kebabFlagNames(_ *pflag.FlagSet, name string) pflag.NormalizedName {
	return pflag.NormalizedName(strings.ReplaceAll(name, "_", "-"))
}

// flagName is the flag of the YAML key.
func flagName(key string) string { return strings.ReplaceAll(key, "_", "-") }

// walkPrefix registers the leaf fields of the struct cfg points to under prefix.
func walkPrefix(fs *pflag.FlagSet, prefix string, cfg any) {
	walk(fs, prefix, reflect.ValueOf(cfg).Elem())
}

var durationType = reflect.TypeFor[time.Duration]()

// setting is one leaf field of a configuration struct.
type setting struct {
	// key is the dotted YAML path: credit.max_open_trees.
	key string
	// owner is the struct type declaring field.
	owner reflect.Type
	field reflect.StructField
	// value holds the field's current value: its default.
	value reflect.Value
}

// thisPackage is this package's path as reflect reports it: "main" in the
// command, its import path in its test binary; fieldDocs says "main".
var thisPackage = reflect.TypeFor[Config]().PkgPath()

// doc is the first paragraph of the field's doc comment.
func (s setting) doc() string {
	pkg := s.owner.PkgPath()
	if pkg == thisPackage {
		pkg = "main"
	}
	return fieldDocs[pkg+"."+s.owner.Name()+"."+s.field.Name]
}

// usage is the field's doc as a flag usage.
func (s setting) usage() string { return docUsage(s.field.Name, s.doc()) }

// eachSetting calls fn for every leaf field of the struct v under prefix,
// descending into struct fields; an embedded struct without a yaml name
// (`yaml:",inline"`) adds its fields at v's level.
func eachSetting(prefix string, v reflect.Value, fn func(setting)) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if tag == "-" {
			continue
		}
		fv := v.Field(i)
		if f.Anonymous && tag == "" && fv.Kind() == reflect.Struct {
			eachSetting(prefix, fv, fn)
			continue
		}
		if tag == "" {
			tag = strings.ToLower(f.Name)
		}
		if fv.Kind() == reflect.Struct && fv.Type() != durationType {
			eachSetting(prefix+tag+".", fv, fn)
			continue
		}
		fn(setting{key: prefix + tag, owner: t, field: f, value: fv})
	}
}

// configFlagSets records, per flag set walk registered config flags on, the
// settings of those sections that have no flag.
var configFlagSets = struct {
	sync.Mutex
	fileOnly map[*pflag.FlagSet][]setting
}{fileOnly: map[*pflag.FlagSet][]setting{}}

func walk(fs *pflag.FlagSet, prefix string, v reflect.Value) {
	fs.SetNormalizeFunc(kebabFlagNames)
	var fileOnly []setting
	eachSetting(prefix, v, func(s setting) {
		name := flagName(s.key)
		if !addFlag(fs, name, s.value, s.usage()) {
			fileOnly = append(fileOnly, s)
			return
		}
		_ = fs.SetAnnotation(name, keyAnnotation, []string{s.key})
	})
	configFlagSets.Lock()
	configFlagSets.fileOnly[fs] = append(configFlagSets.fileOnly[fs], fileOnly...)
	configFlagSets.Unlock()
}

// addFlag registers a flag holding fv's type with fv as its default; false
// when no flag can hold the type (maps, slices of structs): such settings
// come from the YAML file.
func addFlag(fs *pflag.FlagSet, name string, fv reflect.Value, usage string) bool {
	if fv.Type() == durationType {
		fs.Duration(name, time.Duration(fv.Int()), usage)
		return true
	}
	switch fv.Kind() {
	case reflect.String:
		fs.String(name, fv.String(), usage)
	case reflect.Bool:
		fs.Bool(name, fv.Bool(), usage)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32:
		fs.Int(name, int(fv.Int()), usage)
	case reflect.Int64:
		fs.Int64(name, fv.Int(), usage)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32:
		fs.Uint(name, uint(fv.Uint()), usage)
	case reflect.Uint64:
		fs.Uint64(name, fv.Uint(), usage)
	case reflect.Float64, reflect.Float32:
		fs.Float64(name, fv.Float(), usage)
	case reflect.Slice:
		et := fv.Type().Elem()
		switch {
		case et == durationType:
			fs.DurationSlice(name, sliceOf[time.Duration](fv), usage)
		case et.Kind() == reflect.String:
			fs.StringSlice(name, sliceOf[string](fv), usage)
		case et.Kind() == reflect.Int:
			fs.IntSlice(name, sliceOf[int](fv), usage)
		case et.Kind() == reflect.Int64:
			fs.Int64Slice(name, sliceOf[int64](fv), usage)
		case et.Kind() == reflect.Float64:
			fs.Float64Slice(name, sliceOf[float64](fv), usage)
		case et.Kind() == reflect.Bool:
			fs.BoolSlice(name, sliceOf[bool](fv), usage)
		default:
			return false
		}
	default:
		return false
	}
	return true
}

// sliceOf copies the slice fv, whose elements convert to E.
func sliceOf[E any](fv reflect.Value) []E {
	if fv.IsNil() {
		return nil
	}
	out := make([]E, fv.Len())
	et := reflect.TypeFor[E]()
	for i := range out {
		out[i] = fv.Index(i).Convert(et).Interface().(E)
	}
	return out
}

// docUsage turns a field's doc comment into a flag usage: without the
// leading field name where a verb follows it ("MaxOpenTrees caps the open
// trees" reads "caps the open trees", "Gamma is the discount" reads "the
// discount"), lower-case where it starts with a capitalised word
// ("Temperature for sampling"), without the final period, and with back
// quotes made plain ones (pflag would take a back-quoted word for the
// flag's value name).
func docUsage(field, doc string) string {
	u := doc
	if rest, ok := strings.CutPrefix(u, field+" "); ok {
		verb, more, _ := strings.Cut(rest, " ")
		verb = strings.TrimRight(verb, ",;:")
		switch {
		case verb == "is" || verb == "are":
			u = more
		case strings.HasSuffix(verb, "s") && more != "" && verb == strings.ToLower(verb):
			u = rest
		}
	}
	if r, n := utf8.DecodeRuneInString(u); unicode.IsUpper(r) {
		word, _, _ := strings.Cut(u[n:], " ")
		if word != "" && word == strings.ToLower(word) {
			u = string(unicode.ToLower(r)) + u[n:]
		}
	}
	if strings.HasSuffix(u, ".") && !strings.HasSuffix(u, "..") {
		u = strings.TrimSuffix(u, ".")
	}
	return strings.ReplaceAll(u, "`", "'")
}

// setupFlags gives every command of root one flag naming style (kebab-case,
// snake_case accepted), takes the usage of config flags registered by hand
// from their fields' doc comments too, and lists in a command's help the
// settings without a flag. newRootCmd calls it once the commands are added.
func setupFlags(root *cobra.Command) {
	root.SetGlobalNormalizationFunc(kebabFlagNames)
	usages := map[string]string{}
	eachSetting("", reflect.New(reflect.TypeFor[Config]()).Elem(), func(s setting) { usages[s.key] = s.usage() })
	configFlagSets.Lock()
	defer configFlagSets.Unlock()
	var visit func(c *cobra.Command)
	visit = func(c *cobra.Command) {
		for _, fs := range []*pflag.FlagSet{c.Flags(), c.PersistentFlags()} {
			fileOnly, ok := configFlagSets.fileOnly[fs]
			if !ok {
				continue // no config sections: the command's own flags
			}
			fs.VisitAll(func(f *pflag.Flag) {
				if _, done := f.Annotations[keyAnnotation]; done {
					return
				}
				key := strings.ReplaceAll(f.Name, "-", "_")
				if u, ok := usages[key]; ok && u != "" {
					f.Usage = u
					_ = fs.SetAnnotation(f.Name, keyAnnotation, []string{key})
				}
			})
			if note := fileOnlyNote(fileOnly); note != "" {
				long := c.Long
				if long == "" {
					long = c.Short
				}
				c.Long = long + "\n\n" + note
			}
		}
		for _, sub := range c.Commands() {
			visit(sub)
		}
	}
	visit(root)
}

// fileOnlyNote describes the settings that have no flag.
func fileOnlyNote(settings []setting) string {
	if len(settings) == 0 {
		return ""
	}
	s := append([]setting(nil), settings...)
	sort.Slice(s, func(i, j int) bool { return s[i].key < s[j].key })
	var b strings.Builder
	b.WriteString("Settings without a flag (set them in the --config YAML file):")
	for _, st := range s {
		fmt.Fprintf(&b, "\n  %s (%s)\n      %s", st.key, st.value.Type(), st.usage())
	}
	return b.String()
}

// settingKeys is the set of the YAML keys of cfg's leaf fields.
func settingKeys(cfg any) map[string]bool {
	keys := map[string]bool{}
	eachSetting("", reflect.ValueOf(cfg).Elem(), func(s setting) { keys[s.key] = true })
	return keys
}

// flagKey is the YAML key a flag of fs sets: its annotation, else its name
// in snake_case.
func flagKey(f *pflag.Flag) string {
	if a := f.Annotations[keyAnnotation]; len(a) == 1 {
		return a[0]
	}
	return strings.ReplaceAll(f.Name, "-", "_")
}

// loadConfig layers defaults (cfg's current values), the YAML file, the
// environment and the flags that were set, and decodes the result into cfg.
func loadConfig(fs *pflag.FlagSet, path string, cfg any) error {
	k := koanf.New(".")
	if err := k.Load(structs.Provider(cfg, "yaml"), nil); err != nil {
		return fmt.Errorf("config defaults: %w", err)
	}
	if path != "" {
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("config file: %w", err)
		}
		if err := k.Load(file.Provider(path), yaml.Parser()); err != nil {
			return fmt.Errorf("config file %s: %w", path, err)
		}
	}
	err := k.Load(env.Provider(".", env.Opt{
		Prefix: envPrefix,
		TransformFunc: func(key, value string) (string, any) {
			key = strings.ToLower(strings.TrimPrefix(key, envPrefix))
			key = strings.ReplaceAll(key, "__", ".")
			if strings.Contains(value, ",") {
				return key, strings.Split(value, ",")
			}
			return key, value
		},
	}), nil)
	if err != nil {
		return fmt.Errorf("config environment: %w", err)
	}
	// Flags are named in kebab-case, the keys in snake_case; flags that set
	// no key of cfg (the command's own) are left out.
	keys := settingKeys(cfg)
	flags := posflag.ProviderWithFlag(fs, ".", k, func(f *pflag.Flag) (string, any) {
		key := flagKey(f)
		if !keys[key] {
			return "", nil
		}
		return key, posflag.FlagVal(fs, f)
	})
	if err := k.Load(flags, nil); err != nil {
		return fmt.Errorf("config flags: %w", err)
	}
	if err := k.UnmarshalWithConf("", cfg, koanf.UnmarshalConf{Tag: "yaml"}); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return nil
}
