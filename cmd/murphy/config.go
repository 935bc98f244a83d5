package main

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"time"

	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/providers/posflag"
	"github.com/knadh/koanf/providers/structs"
	"github.com/knadh/koanf/v2"
	"github.com/spf13/pflag"
)

// Configuration comes, in increasing precedence, from the defaults of each
// component's Config, a YAML file (--config), environment variables
// (MURPHY_SECTION__FIELD, e.g. MURPHY_KAFKA__BROKERS) and flags
// (--section.field). Every leaf field of the config struct gets a flag, so
// --help lists every setting with its default.

const envPrefix = "MURPHY_"

// bindFlags registers one flag per leaf field of cfg (a pointer to a struct
// holding the defaults), named by the dotted yaml path.
func bindFlags(fs *pflag.FlagSet, cfg any) { walkPrefix(fs, "", cfg) }

// walkPrefix registers the leaf fields of the struct cfg points to under prefix.
func walkPrefix(fs *pflag.FlagSet, prefix string, cfg any) {
	walk(fs, prefix, reflect.ValueOf(cfg).Elem())
}

var durationType = reflect.TypeFor[time.Duration]()

func walk(fs *pflag.FlagSet, prefix string, v reflect.Value) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := strings.Split(f.Tag.Get("yaml"), ",")[0]
		if tag == "-" {
			continue
		}
		fv := v.Field(i)
		if f.Anonymous && tag == "" && fv.Kind() == reflect.Struct {
			walk(fs, prefix, fv)
			continue
		}
		if tag == "" {
			tag = strings.ToLower(f.Name)
		}
		name := prefix + tag
		usage := "see the component's Config documentation"
		if fv.Type() == durationType {
			fs.Duration(name, time.Duration(fv.Int()), usage)
			continue
		}
		switch fv.Kind() {
		case reflect.Struct:
			walk(fs, name+".", fv)
		case reflect.String:
			fs.String(name, fv.String(), usage)
		case reflect.Bool:
			fs.Bool(name, fv.Bool(), usage)
		case reflect.Int, reflect.Int32:
			fs.Int(name, int(fv.Int()), usage)
		case reflect.Int64:
			fs.Int64(name, fv.Int(), usage)
		case reflect.Float64, reflect.Float32:
			fs.Float64(name, fv.Float(), usage)
		case reflect.Slice:
			switch fv.Type().Elem().Kind() {
			case reflect.String:
				fs.StringSlice(name, fv.Interface().([]string), usage)
			case reflect.Int:
				fs.IntSlice(name, fv.Interface().([]int), usage)
			}
		}
		// Maps and other kinds are set from the YAML file or environment.
	}
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
	if err := k.Load(posflag.Provider(fs, ".", k), nil); err != nil {
		return fmt.Errorf("config flags: %w", err)
	}
	if err := k.UnmarshalWithConf("", cfg, koanf.UnmarshalConf{Tag: "yaml"}); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return nil
}
