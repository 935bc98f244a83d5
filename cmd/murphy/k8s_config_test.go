package main

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/v2"
	"github.com/spf13/pflag"
)

// TestK8sConfig loads the Kubernetes manifests' configuration
// (deploy/k8s/base/murphy.yaml and each build's MURPHY_* environment, the
// murphy-kafka ConfigMap's env files) through murphy's own loader, as
// `murphy stage NAME --config /etc/murphy/murphy.yaml` does in the pods, and
// validates it for every stage. The loader ignores keys it does not know,
// so every key of the file and every variable must name a setting.
// deploy/k8s/manifests_test.go checks the built manifests themselves.
func TestK8sConfig(t *testing.T) {
	const dir = "../../deploy/k8s"
	configFile := filepath.Join(dir, "base/murphy.yaml")
	builds := map[string][]string{
		"base":    {"base/kafka.env"},
		"strimzi": {"base/kafka.env", "overlays/strimzi/kafka.env"}, // configMapGenerator behavior: merge
	}
	keys := settingKeys(new(Config))

	k := koanf.New(".")
	if err := k.Load(file.Provider(configFile), yaml.Parser()); err != nil {
		t.Fatal(err)
	}
	for _, key := range k.Keys() {
		if !knownKey(keys, key) {
			t.Errorf("%s: %s is not a setting (murphy would ignore it)", configFile, key)
		}
	}

	for name, envFiles := range builds {
		t.Run(name, func(t *testing.T) {
			env := map[string]string{}
			for _, f := range envFiles {
				for k, v := range readEnvFile(t, filepath.Join(dir, f)) {
					env[k] = v
				}
			}
			for k, v := range env {
				key := strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(k, envPrefix)), "__", ".")
				if !strings.HasPrefix(k, envPrefix) || !keys[key] {
					t.Errorf("%s: %s is not a setting (%s)", name, k, key)
				}
				t.Setenv(k, v)
			}
			cfg := defaultConfig()
			if err := loadConfig(pflag.NewFlagSet("k8s", pflag.ContinueOnError), configFile, &cfg); err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(cfg.Kafka.Brokers, ","); got != env["MURPHY_KAFKA__BROKERS"] {
				t.Errorf("brokers %q, the environment says %q", got, env["MURPHY_KAFKA__BROKERS"])
			}
			// The password and CA files are Secrets mounted in the pods
			// (deploy/k8s/manifests_test.go validates with stand-ins).
			cfg.Kafka.SASL.PasswordFile, cfg.Kafka.TLS.CAFile = "", ""
			if cfg.Kafka.SASL.Mechanism != "" {
				cfg.Kafka.SASL.Password = "stand-in"
			}
			if err := cfg.validate(stageNames); err != nil {
				t.Errorf("%s: %v", name, err)
			}
			if cfg.HTTPAddr == "" {
				t.Error("http_addr is empty: no /metrics, /healthz, /readyz for the probes")
			}
		})
	}
}

// knownKey: key is a setting, or lies under a map setting (file-only).
func knownKey(keys map[string]bool, key string) bool {
	for k := key; k != ""; {
		if keys[k] {
			return true
		}
		i := strings.LastIndexByte(k, '.')
		if i < 0 {
			break
		}
		k = k[:i]
	}
	return false
}

func readEnvFile(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("%s: %q is not KEY=VALUE", path, line)
		}
		out[k] = v
	}
	return out
}
