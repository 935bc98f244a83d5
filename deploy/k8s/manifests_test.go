// Package k8s holds the Kubernetes manifests of deploy/k8s and their
// offline validation: every kustomization builds with kustomize's own
// library, every object decodes strictly (unknown or duplicate fields are
// errors) into its Go API type, and the properties the deployment relies
// on (README.md) are checked against the code they follow from: the stage
// registry, the topic catalog, the configuration structs and the memory
// budgets.
package k8s

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	monv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/stages"
	"github.com/murphy-rl/murphy/topics"
)

// kustomizations are every buildable kustomization (components are built
// through the overlays that include them).
var kustomizations = []string{"base", "overlays/keda", "overlays/strimzi"}

const (
	configPath = "/etc/murphy/murphy.yaml"
	image      = "ghcr.io/murphy-rl/murphy"
	// shutdownBudget is what a stage may take after SIGTERM: the runtime's
	// default ShutdownTimeout (30 s, pipeline.RuntimeConfig; murphy stage
	// does not change it) for in-flight records and consumers, plus 5 s for
	// the HTTP server, plus the producer's flush and the pool's shutdown.
	shutdownBudget = 45 * time.Second
	// maxUnsettled is the records a stateless stage holds per input before
	// committing (pipeline MaxUnsettled): lag a replica shows while keeping
	// up, which a lagThreshold must exceed.
	maxUnsettled = 256
)

// executeCaps are the capabilities the execute container may add, each
// explained in README.md and execute.yaml.
var executeCaps = []string{"CHOWN", "DAC_READ_SEARCH", "KILL", "NET_ADMIN", "SETGID", "SETUID", "SYS_ADMIN"}

// groupInputs maps each stage's consumer groups (without the prefix) to the
// input topic each consumes: the runtime names of the stage's specs
// (stages/generate/stage.go Specs; the others use the stage's name).
var groupInputs = map[string]map[string]topics.Name{
	"generate": {"generate": topics.Prompts, "generate-refinements": topics.Refinements, "generate-backfill": topics.BackfillPrompts},
	"execute":  {"execute": topics.Candidates},
	"govern":   {"govern": topics.Executions},
	"credit":   {"credit": topics.Samples},
	"emit":     {"emit": topics.Credited},
}

// murphyConfig mirrors cmd/murphy's Config (package main, not importable)
// from the same importable parts; cmd/murphy's TestK8sConfig loads the same
// files through the real loader, so the two cannot drift apart unnoticed.
type murphyConfig struct {
	Kafka          pipeline.KafkaConfig `yaml:"kafka"`
	Topics         topics.Catalog       `yaml:"topics"`
	HTTPAddr       string               `yaml:"http_addr"`
	TaskCache      int                  `yaml:"task_cache"`
	LogLevel       string               `yaml:"log_level"`
	GC             pipeline.GCConfig    `yaml:"gc"`
	stages.Configs `yaml:",inline"`
}

func defaultMurphyConfig() murphyConfig {
	return murphyConfig{Kafka: pipeline.DefaultKafkaConfig(), Topics: topics.DefaultCatalog(), TaskCache: 4096,
		LogLevel: "info", GC: pipeline.DefaultGCConfig(), Configs: stages.DefaultConfigs()}
}

// build is one kustomization's output, decoded.
type build struct {
	dir         string
	deployments map[string]*appsv1.Deployment
	pdbs        map[string]*policyv1.PodDisruptionBudget
	jobs        map[string]*batchv1.Job
	configMaps  map[string]*corev1.ConfigMap // by name without the hash suffix
	secrets     map[string]*corev1.Secret
	scaled      map[string]*kedav1alpha1.ScaledObject
	triggerAuth map[string]*kedav1alpha1.TriggerAuthentication
	podMonitors []*monv1.PodMonitor
	kafkas      []*strimziKafka
	nodePools   []*strimziNodePool
	kafkaTopics []*strimziTopic
	kafkaUsers  map[string]*strimziUser
	namespaces  []string
	cfg         murphyConfig
	env         map[string]string // MURPHY_* of the murphy-kafka ConfigMap
}

func runBuild(t *testing.T, dir string) *build {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	b := &build{dir: dir, deployments: map[string]*appsv1.Deployment{}, pdbs: map[string]*policyv1.PodDisruptionBudget{},
		jobs: map[string]*batchv1.Job{}, configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{},
		scaled: map[string]*kedav1alpha1.ScaledObject{}, triggerAuth: map[string]*kedav1alpha1.TriggerAuthentication{},
		kafkaUsers: map[string]*strimziUser{}}
	for _, r := range m.Resources() {
		y, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		gvk := r.GetApiVersion() + "/" + r.GetKind()
		where := fmt.Sprintf("%s: %s %s", dir, gvk, r.GetName())
		switch gvk {
		case "apps/v1/Deployment":
			o := decode[appsv1.Deployment](t, where, y)
			b.deployments[o.Name] = o
		case "policy/v1/PodDisruptionBudget":
			o := decode[policyv1.PodDisruptionBudget](t, where, y)
			b.pdbs[o.Name] = o
		case "batch/v1/Job":
			o := decode[batchv1.Job](t, where, y)
			b.jobs[o.Name] = o
		case "v1/ConfigMap":
			o := decode[corev1.ConfigMap](t, where, y)
			b.configMaps[unhashed(o.Name)] = o
		case "v1/Secret":
			o := decode[corev1.Secret](t, where, y)
			b.secrets[o.Name] = o
		case "v1/ServiceAccount":
			decode[corev1.ServiceAccount](t, where, y)
		case "v1/Namespace":
			b.namespaces = append(b.namespaces, decode[corev1.Namespace](t, where, y).Name)
		case "keda.sh/v1alpha1/ScaledObject":
			o := decode[kedav1alpha1.ScaledObject](t, where, y)
			b.scaled[o.Name] = o
		case "keda.sh/v1alpha1/TriggerAuthentication":
			o := decode[kedav1alpha1.TriggerAuthentication](t, where, y)
			b.triggerAuth[o.Name] = o
		case "monitoring.coreos.com/v1/PodMonitor":
			b.podMonitors = append(b.podMonitors, decode[monv1.PodMonitor](t, where, y))
		case "kafka.strimzi.io/v1/Kafka":
			b.kafkas = append(b.kafkas, decode[strimziKafka](t, where, y))
		case "kafka.strimzi.io/v1/KafkaNodePool":
			b.nodePools = append(b.nodePools, decode[strimziNodePool](t, where, y))
		case "kafka.strimzi.io/v1/KafkaTopic":
			b.kafkaTopics = append(b.kafkaTopics, decode[strimziTopic](t, where, y))
		case "kafka.strimzi.io/v1/KafkaUser":
			o := decode[strimziUser](t, where, y)
			b.kafkaUsers[o.Metadata.Name] = o
		default:
			t.Errorf("%s: no Go type to validate this kind against (add one to runBuild)", where)
		}
		if ns := r.GetNamespace(); r.GetKind() != "Namespace" && ns != "murphy" {
			t.Errorf("%s: namespace %q, want murphy", where, ns)
		}
	}
	cm := b.configMaps["murphy-config"]
	if cm == nil {
		t.Fatalf("%s: no ConfigMap murphy-config", dir)
	}
	env := b.configMaps["murphy-kafka"]
	if env == nil {
		t.Fatalf("%s: no ConfigMap murphy-kafka", dir)
	}
	b.env = env.Data
	b.cfg = loadMurphyConfig(t, dir, cm.Data["murphy.yaml"], b.env)
	return b
}

// decode is strict: unknown fields, duplicate fields and fields spelled in
// another case are errors, as for the API server's strict field validation.
func decode[T any](t *testing.T, where string, y []byte) *T {
	t.Helper()
	j, err := sigsyaml.YAMLToJSONStrict(y)
	if err != nil {
		t.Errorf("%s: %v", where, err)
		return new(T)
	}
	o := new(T)
	strict, err := sigsjson.UnmarshalStrict(j, o, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		t.Errorf("%s: %v", where, err)
	}
	for _, e := range strict {
		t.Errorf("%s: %v", where, e)
	}
	return o
}

// unhashed strips the hash suffix kustomize's generators append.
func unhashed(name string) string {
	if i := strings.LastIndexByte(name, '-'); i > 0 && len(name)-i == 11 {
		return name[:i]
	}
	return name
}

// loadMurphyConfig layers defaults, the file (strictly: an unknown key is an
// error, where murphy itself would ignore it) and the MURPHY_* environment,
// as cmd/murphy does, and validates every stage's section.
func loadMurphyConfig(t *testing.T, where, file string, env map[string]string) murphyConfig {
	t.Helper()
	cfg := defaultMurphyConfig()
	dec := yaml.NewDecoder(strings.NewReader(file))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil {
		t.Fatalf("%s: murphy.yaml: %v", where, err)
	}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		name, ok := strings.CutPrefix(k, "MURPHY_")
		if !ok {
			t.Errorf("%s: murphy-kafka key %s is not a MURPHY_ setting", where, k)
			continue
		}
		path := strings.Split(strings.ToLower(name), "__")
		if err := setPath(reflect.ValueOf(&cfg).Elem(), path, env[k]); err != nil {
			t.Errorf("%s: %s: %v", where, k, err)
		}
	}
	// The password and CA files are Secrets mounted in the pods: validate
	// against stand-ins with the same kind of content.
	kafka := cfg.Kafka
	for _, f := range []*string{&kafka.SASL.PasswordFile, &kafka.TLS.CAFile} {
		if *f != "" {
			*f = standIn(t, *f)
		}
	}
	errs := []error{kafka.Validate(), cfg.Topics.Validate(), cfg.GC.Validate(), cfg.Configs.Validate(stages.Names())}
	for _, err := range errs {
		if err != nil {
			t.Errorf("%s: murphy.yaml with the environment does not validate: %v", where, err)
		}
	}
	return cfg
}

// standIn writes a file in place of the mounted Secret file path: a CA
// certificate for *.crt, a password otherwise.
func standIn(t *testing.T, path string) string {
	t.Helper()
	content := []byte("stand-in-password\n")
	if strings.HasSuffix(path, ".crt") {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "stand-in CA"},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
			BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			t.Fatal(err)
		}
		content = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	}
	f := filepath.Join(t.TempDir(), filepath.Base(path))
	if err := os.WriteFile(f, content, 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// setPath sets the leaf setting at path (YAML keys) of v from an
// environment value, as koanf and its decode hooks do: commas split lists.
func setPath(v reflect.Value, path []string, value string) error {
	f, ok := field(v, path[0])
	if !ok {
		return fmt.Errorf("no setting %q", strings.Join(path, "."))
	}
	if len(path) > 1 {
		if f.Kind() != reflect.Struct {
			return fmt.Errorf("%q is not a section", path[0])
		}
		return setPath(f, path[1:], value)
	}
	switch {
	case f.Type() == reflect.TypeFor[time.Duration]():
		d, err := time.ParseDuration(value)
		f.SetInt(int64(d))
		return err
	case f.Kind() == reflect.String:
		f.SetString(value)
	case f.Kind() == reflect.Bool:
		b, err := strconv.ParseBool(value)
		f.SetBool(b)
		return err
	case f.Kind() >= reflect.Int && f.Kind() <= reflect.Int64:
		n, err := strconv.ParseInt(value, 10, 64)
		f.SetInt(n)
		return err
	case f.Kind() == reflect.Float64:
		x, err := strconv.ParseFloat(value, 64)
		f.SetFloat(x)
		return err
	case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.String:
		f.Set(reflect.ValueOf(strings.Split(value, ",")))
	default:
		return fmt.Errorf("the environment cannot set a %s", f.Type())
	}
	return nil
}

// field finds the struct field of v with YAML key key, looking into inline
// embedded structs.
func field(v reflect.Value, key string) (reflect.Value, bool) {
	t := v.Type()
	for i := range t.NumField() {
		sf := t.Field(i)
		tag, opts, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
		if sf.Anonymous && tag == "" && strings.Contains(opts, "inline") {
			if f, ok := field(v.Field(i), key); ok {
				return f, true
			}
			continue
		}
		if tag == "" {
			tag = strings.ToLower(sf.Name)
		}
		if sf.IsExported() && tag == key {
			return v.Field(i), true
		}
	}
	return reflect.Value{}, false
}

func TestKustomizationsBuildAndDecodeStrictly(t *testing.T) {
	for _, dir := range kustomizations {
		t.Run(dir, func(t *testing.T) { runBuild(t, dir) })
	}
}

func TestStages(t *testing.T) {
	for _, dir := range kustomizations {
		t.Run(dir, func(t *testing.T) {
			b := runBuild(t, dir)
			_, portStr, err := net.SplitHostPort(b.cfg.HTTPAddr)
			if err != nil {
				t.Fatalf("http_addr %q: %v", b.cfg.HTTPAddr, err)
			}
			httpPort, _ := strconv.Atoi(portStr)
			if len(b.deployments) != len(stages.Names()) {
				t.Errorf("%d Deployments, want one per stage (%v)", len(b.deployments), stages.Names())
			}
			for _, name := range stages.Names() {
				d := b.deployments["murphy-"+name]
				if d == nil {
					t.Errorf("stage %s: no Deployment murphy-%s", name, name)
					continue
				}
				checkStageDeployment(t, b, name, d, httpPort)
				pdb := b.pdbs["murphy-"+name]
				if pdb == nil {
					t.Errorf("stage %s: no PodDisruptionBudget murphy-%s", name, name)
					continue
				}
				sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
				if err != nil || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
					t.Errorf("stage %s: the PodDisruptionBudget's selector does not match the pods (%v)", name, err)
				}
				if pdb.Spec.MinAvailable != nil || pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() < 1 {
					t.Errorf("stage %s: the PodDisruptionBudget must allow one pod down (maxUnavailable >= 1), or a single replica blocks every drain", name)
				}
			}
			job := b.jobs["murphy-topics"]
			if job == nil {
				t.Fatal("no Job murphy-topics")
			}
			c := job.Spec.Template.Spec.Containers[0]
			if want := []string{"topics", "create", "--config", configPath}; !slices.Equal(c.Args, want) {
				t.Errorf("topics Job args %v, want %v", c.Args, want)
			}
			checkResources(t, "topics Job", c.Resources)
			checkConfigMounted(t, b, "topics Job", &job.Spec.Template.Spec)
			checkEnvKnown(t, b, "topics Job", c)
		})
	}
}

func checkStageDeployment(t *testing.T, b *build, name string, d *appsv1.Deployment, httpPort int) {
	t.Helper()
	where := "stage " + name
	pod := &d.Spec.Template.Spec
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
		t.Errorf("%s: the selector does not match the pod labels (%v)", where, err)
	}
	if d.Spec.Template.Labels["app.kubernetes.io/component"] != name || d.Spec.Template.Labels["app.kubernetes.io/name"] != "murphy" {
		t.Errorf("%s: pod labels %v", where, d.Spec.Template.Labels)
	}
	if d.Spec.Replicas != nil && b.scaled["murphy-"+name] != nil {
		t.Errorf("%s: replicas is set while a ScaledObject owns the count", where)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%s: %d containers, want 1", where, len(pod.Containers))
	}
	c := pod.Containers[0]
	if !strings.HasPrefix(c.Image, image+":") && !strings.HasPrefix(c.Image, image+"@") {
		t.Errorf("%s: image %q is not %s with a tag", where, c.Image, image)
	}
	if want := []string{"stage", name, "--config", configPath}; !slices.Equal(c.Args, want) {
		t.Errorf("%s: args %v, want %v", where, c.Args, want)
	}
	checkConfigMounted(t, b, where, pod)
	checkEnvKnown(t, b, where, c)

	// Probes on the port http_addr serves.
	probes := map[string]struct {
		p    *corev1.Probe
		path string
	}{"liveness": {c.LivenessProbe, "/healthz"}, "readiness": {c.ReadinessProbe, "/readyz"}, "startup": {c.StartupProbe, "/healthz"}}
	for kind, want := range probes {
		switch {
		case want.p == nil || want.p.HTTPGet == nil:
			t.Errorf("%s: no HTTP %s probe", where, kind)
		case want.p.HTTPGet.Path != want.path:
			t.Errorf("%s: %s probe on %s, want %s", where, kind, want.p.HTTPGet.Path, want.path)
		case resolvePort(c, want.p.HTTPGet.Port) != httpPort:
			t.Errorf("%s: %s probe on port %s, http_addr serves %d", where, kind, want.p.HTTPGet.Port.String(), httpPort)
		}
	}

	checkResources(t, where, c.Resources)
	// Memory: at least the stage's budget (plus the sandboxes for execute),
	// and requested in full.
	budget := int64(mustStage(t, name).MemoryBudgetMB(b.cfg.Topics, &b.cfg.Configs))
	if name == "execute" {
		budget += int64(b.cfg.Execute.Sandbox.Workers * b.cfg.Execute.Sandbox.SlotMemoryMB)
		if b.cfg.Execute.Sandbox.Workers == 0 {
			t.Errorf("%s: execute.sandbox.workers must be set: 0 means one per CPU of the node", where)
		}
	}
	limit := c.Resources.Limits[corev1.ResourceMemory]
	if limit.Cmp(*resource.NewQuantity(budget<<20, resource.BinarySI)) < 0 {
		t.Errorf("%s: memory limit %s below the stage's budget %d MiB", where, limit.String(), budget)
	}
	if req := c.Resources.Requests[corev1.ResourceMemory]; req.Cmp(limit) != 0 {
		t.Errorf("%s: memory request %s != limit %s", where, req.String(), limit.String())
	}

	if pod.TerminationGracePeriodSeconds == nil || time.Duration(*pod.TerminationGracePeriodSeconds)*time.Second < shutdownBudget {
		t.Errorf("%s: terminationGracePeriodSeconds below the shutdown budget %s", where, shutdownBudget)
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Errorf("%s: the service account token is mounted", where)
	}
	if pod.HostNetwork || pod.HostPID || pod.HostIPC {
		t.Errorf("%s: shares a host namespace", where)
	}
	sc := c.SecurityContext
	if sc == nil || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Fatalf("%s: capabilities must drop ALL", where)
	}
	if sc.Privileged != nil && *sc.Privileged {
		t.Errorf("%s: privileged", where)
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("%s: allowPrivilegeEscalation must be false", where)
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("%s: root filesystem writable", where)
	}
	seccomp := sc.SeccompProfile
	if seccomp == nil && pod.SecurityContext != nil {
		seccomp = pod.SecurityContext.SeccompProfile
	}
	if seccomp == nil || (seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault && seccomp.Type != corev1.SeccompProfileTypeLocalhost) {
		t.Errorf("%s: no seccomp profile (RuntimeDefault or Localhost)", where)
	}
	if name != "execute" {
		if len(sc.Capabilities.Add) > 0 {
			t.Errorf("%s: adds capabilities %v", where, sc.Capabilities.Add)
		}
		if pod.SecurityContext == nil || pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot {
			t.Errorf("%s: must run as non-root", where)
		}
		return
	}
	// execute: root only inside a user namespace of its own, the measured
	// capability set and nothing more.
	if pod.HostUsers == nil || *pod.HostUsers {
		t.Errorf("%s: hostUsers must be false: uid 0 and SYS_ADMIN only inside the pod's user namespace", where)
	}
	for _, cp := range sc.Capabilities.Add {
		if strings.HasPrefix(string(cp), "CAP_") {
			t.Errorf("%s: capability %s: spell it without CAP_ (README)", where, cp)
		}
		if !slices.Contains(executeCaps, string(cp)) {
			t.Errorf("%s: capability %s is not among the documented %v", where, cp, executeCaps)
		}
	}
	if sc.ProcMount != nil && *sc.ProcMount == corev1.UnmaskedProcMount && (pod.HostUsers == nil || *pod.HostUsers) {
		t.Errorf("%s: procMount Unmasked without hostUsers: false", where)
	}
	if sc.RunAsUser == nil || *sc.RunAsUser != 0 {
		t.Errorf("%s: must run as uid 0 of its user namespace (the sandbox pool refuses otherwise)", where)
	}
	// The sandboxes' uids must exist in the pod's user namespace (0-65535).
	sb, bl := b.cfg.Execute.Sandbox, b.cfg.Execute.CompileFix.Builder
	for _, r := range [][2]int{{sb.UIDBase, sb.UIDCount}, {bl.UIDBase, bl.UIDCount}} {
		if r[0]+r[1] > 65536 {
			t.Errorf("%s: sandbox uids %d+%d outside the pod's user namespace (0-65535)", where, r[0], r[1])
		}
	}
}

func mustStage(t *testing.T, name string) stages.Descriptor {
	t.Helper()
	d, err := stages.Get(name)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func resolvePort(c corev1.Container, p intstr.IntOrString) int {
	if p.Type == intstr.Int {
		return p.IntValue()
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort)
		}
	}
	return -1
}

func checkResources(t *testing.T, where string, r corev1.ResourceRequirements) {
	t.Helper()
	for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, okReq := r.Requests[res]
		lim, okLim := r.Limits[res]
		switch {
		case !okReq || !okLim:
			t.Errorf("%s: %s request and limit must both be set", where, res)
		case req.Cmp(lim) > 0:
			t.Errorf("%s: %s request %s above its limit %s", where, res, req.String(), lim.String())
		}
	}
}

func checkConfigMounted(t *testing.T, b *build, where string, pod *corev1.PodSpec) {
	t.Helper()
	var vol string
	for _, v := range pod.Volumes {
		if v.ConfigMap != nil && unhashed(v.ConfigMap.Name) == "murphy-config" {
			if b.configMaps["murphy-config"].Name != v.ConfigMap.Name {
				t.Errorf("%s: mounts ConfigMap %s, the build has %s", where, v.ConfigMap.Name, b.configMaps["murphy-config"].Name)
			}
			vol = v.Name
		}
	}
	mounted := false
	for _, m := range pod.Containers[0].VolumeMounts {
		if m.Name == vol && m.MountPath+"/murphy.yaml" == configPath {
			mounted = true
		}
	}
	if !mounted {
		t.Errorf("%s: murphy-config not mounted at %s", where, configPath)
	}
}

// checkEnvKnown: the container reads the murphy-kafka ConfigMap, and every
// MURPHY_* variable it sets names a setting (loadMurphyConfig checks the
// ConfigMap's).
func checkEnvKnown(t *testing.T, b *build, where string, c corev1.Container) {
	t.Helper()
	ok := false
	for _, e := range c.EnvFrom {
		if e.ConfigMapRef != nil && e.ConfigMapRef.Name == b.configMaps["murphy-kafka"].Name {
			ok = true
		}
	}
	if !ok {
		t.Errorf("%s: does not read the murphy-kafka ConfigMap (envFrom)", where)
	}
	for _, e := range c.Env {
		if name, ok := strings.CutPrefix(e.Name, "MURPHY_"); ok {
			cfg := defaultMurphyConfig()
			if err := setPath(reflect.ValueOf(&cfg).Elem(), strings.Split(strings.ToLower(name), "__"), "1"); err != nil &&
				strings.HasPrefix(err.Error(), "no setting") {
				t.Errorf("%s: env %s: %v", where, e.Name, err)
			}
		}
	}
}

func TestScaledObjects(t *testing.T) {
	// KEDA's kafka trigger metadata (pkg/scalers/kafka_scaler.go, keda
	// v2.20: the keda:"name=..." tags whose order includes triggerMetadata;
	// resolvedEnv ones as NAMEFromEnv).
	known := []string{"bootstrapServers", "bootstrapServersFromEnv", "consumerGroup", "consumerGroupFromEnv", "topic", "topicFromEnv",
		"partitionLimitation", "lagThreshold", "activationLagThreshold", "offsetResetPolicy", "allowIdleConsumers",
		"excludePersistentLag", "scaleToZeroOnInvalidOffset", "limitToPartitionsWithLag", "ensureEvenDistributionOfPartitions",
		"version", "tls", "unsafeSsl", "sasl", "saslTokenProvider", "awsRegion"}
	for _, dir := range []string{"overlays/keda", "overlays/strimzi"} {
		t.Run(dir, func(t *testing.T) {
			b := runBuild(t, dir)
			if len(b.scaled) != len(stages.Names()) {
				t.Errorf("%d ScaledObjects, want one per stage", len(b.scaled))
			}
			for _, name := range stages.Names() {
				so := b.scaled["murphy-"+name]
				if so == nil {
					t.Errorf("stage %s: no ScaledObject", name)
					continue
				}
				where := "ScaledObject " + so.Name
				d := b.deployments["murphy-"+name]
				if so.Spec.ScaleTargetRef == nil || so.Spec.ScaleTargetRef.Name != "murphy-"+name || d == nil {
					t.Errorf("%s: does not target Deployment murphy-%s", where, name)
					continue
				}
				if so.Spec.MinReplicaCount == nil || *so.Spec.MinReplicaCount < 1 {
					t.Errorf("%s: minReplicaCount must be >= 1", where)
				}
				seen := map[string]bool{}
				for i, tr := range so.Spec.Triggers {
					tw := fmt.Sprintf("%s trigger %d", where, i)
					if tr.Type != "kafka" {
						t.Errorf("%s: type %q", tw, tr.Type)
						continue
					}
					for k := range tr.Metadata {
						if !slices.Contains(known, k) {
							t.Errorf("%s: unknown kafka trigger parameter %q", tw, k)
						}
					}
					group, ok := strings.CutPrefix(tr.Metadata["consumerGroup"], b.cfg.Topics.Prefix)
					input, okInput := groupInputs[name][group]
					if !ok || !okInput {
						t.Errorf("%s: consumerGroup %q is not one of stage %s's groups", tw, tr.Metadata["consumerGroup"], name)
						continue
					}
					seen[group] = true
					if want := b.cfg.Topics.Topic(input); tr.Metadata["topic"] != want {
						t.Errorf("%s: group %s consumes %s, not %s", tw, group, want, tr.Metadata["topic"])
					}
					// maxReplicaCount bounded by the input's partitions.
					parts := b.cfg.Topics.Spec(input).Partitions
					if so.Spec.MaxReplicaCount == nil || int(*so.Spec.MaxReplicaCount) > parts {
						t.Errorf("%s: maxReplicaCount above the %d partitions of %s", tw, parts, tr.Metadata["topic"])
					}
					// The lag a replica shows while it keeps up: the records in
					// flight (up to maxUnsettled per input, cleared in seconds);
					// generate's fetched prompts wait for a generation slot, so
					// beyond its concurrency they are backlog.
					floor := maxUnsettled
					if name == "generate" {
						floor = b.cfg.Generate.Concurrency
					}
					if lag, err := strconv.Atoi(tr.Metadata["lagThreshold"]); err != nil || lag <= floor {
						t.Errorf("%s: lagThreshold %q must be an integer above %d (records in flight count as lag)", tw, tr.Metadata["lagThreshold"], floor)
					}
					if tr.Metadata["offsetResetPolicy"] != "earliest" {
						t.Errorf("%s: offsetResetPolicy must be earliest (murphy's groups start at the first offset)", tw)
					}
					// The brokers: the target's MURPHY_KAFKA__BROKERS.
					if env := tr.Metadata["bootstrapServersFromEnv"]; env != "" {
						if _, ok := b.env[env]; !ok || env != "MURPHY_KAFKA__BROKERS" {
							t.Errorf("%s: bootstrapServersFromEnv %s is not the stages' MURPHY_KAFKA__BROKERS", tw, env)
						}
					} else if tr.Metadata["bootstrapServers"] != strings.Join(b.cfg.Kafka.Brokers, ",") {
						t.Errorf("%s: bootstrapServers %q, the stages use %v", tw, tr.Metadata["bootstrapServers"], b.cfg.Kafka.Brokers)
					}
					if b.cfg.Kafka.SASL.Mechanism != "" {
						want := map[string]string{"SCRAM-SHA-512": "scram_sha512", "SCRAM-SHA-256": "scram_sha256", "PLAIN": "plaintext"}
						if tr.Metadata["sasl"] != want[strings.ToUpper(b.cfg.Kafka.SASL.Mechanism)] {
							t.Errorf("%s: sasl %q, the stages use %s", tw, tr.Metadata["sasl"], b.cfg.Kafka.SASL.Mechanism)
						}
						if tr.AuthenticationRef == nil || b.triggerAuth[tr.AuthenticationRef.Name] == nil {
							t.Errorf("%s: no TriggerAuthentication for SASL", tw)
						}
					}
					if b.cfg.Kafka.TLS.Enabled && tr.Metadata["tls"] != "enable" {
						t.Errorf("%s: tls must be enabled as for the stages", tw)
					}
				}
				for group := range groupInputs[name] {
					if !seen[group] {
						t.Errorf("%s: no trigger for group %s", where, group)
					}
				}
			}
			for _, ta := range b.triggerAuth {
				for _, ref := range ta.Spec.SecretTargetRef {
					if s := b.secrets[ref.Name]; s != nil {
						if _, ok := s.StringData[ref.Key]; !ok {
							t.Errorf("TriggerAuthentication %s: Secret %s has no key %s", ta.Name, ref.Name, ref.Key)
						}
					} else if b.kafkaUsers[ref.Name] == nil && ref.Name != b.kafkas[0].Metadata.Name+"-cluster-ca-cert" {
						t.Errorf("TriggerAuthentication %s: Secret %s is neither in the build nor Strimzi's", ta.Name, ref.Name)
					}
				}
			}
			if len(b.podMonitors) != 1 {
				t.Fatalf("%d PodMonitors, want 1", len(b.podMonitors))
			}
			pm := b.podMonitors[0]
			sel, err := metav1.LabelSelectorAsSelector(&pm.Spec.Selector)
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range stages.Names() {
				d := b.deployments["murphy-"+name]
				if !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
					t.Errorf("PodMonitor does not select stage %s", name)
				}
				for _, ep := range pm.Spec.PodMetricsEndpoints {
					if ep.Port == nil || resolvePort(d.Spec.Template.Spec.Containers[0], intstr.FromString(*ep.Port)) < 0 || ep.Path != "/metrics" {
						t.Errorf("PodMonitor endpoint %v: not /metrics on a named port of stage %s", ep, name)
					}
				}
			}
		})
	}
}

// The Strimzi resources: no maintained Go module of Strimzi's API types is
// reachable through the module proxy (github.com/RedHatInsights/strimzi-client-go
// and github.com/scholzj/strimzi-go are not on it), so they decode strictly
// into these structs of the kafka.strimzi.io/v1 fields the overlay uses;
// a field outside them is an error here, and enumerations are checked below.

type strimziMeta struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
}

type strimziKafka struct {
	strimziMeta `json:",inline"`
	Spec        struct {
		Kafka struct {
			Version   string `json:"version,omitempty"`
			Listeners []struct {
				Name           string `json:"name"`
				Port           int    `json:"port"`
				Type           string `json:"type"`
				TLS            bool   `json:"tls"`
				Authentication *struct {
					Type string `json:"type"`
				} `json:"authentication,omitempty"`
			} `json:"listeners"`
			Authorization *struct {
				Type string `json:"type"`
			} `json:"authorization,omitempty"`
			Config map[string]any `json:"config,omitempty"`
		} `json:"kafka"`
		EntityOperator *struct {
			TopicOperator *struct{} `json:"topicOperator,omitempty"`
			UserOperator  *struct{} `json:"userOperator,omitempty"`
		} `json:"entityOperator,omitempty"`
	} `json:"spec"`
}

type strimziNodePool struct {
	strimziMeta `json:",inline"`
	Spec        struct {
		Replicas int      `json:"replicas"`
		Roles    []string `json:"roles"`
		Storage  struct {
			Type    string `json:"type"`
			Volumes []struct {
				ID            int    `json:"id"`
				Type          string `json:"type"`
				Size          string `json:"size,omitempty"`
				DeleteClaim   bool   `json:"deleteClaim,omitempty"`
				KRaftMetadata string `json:"kraftMetadata,omitempty"`
			} `json:"volumes"`
		} `json:"storage"`
		Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	} `json:"spec"`
}

type strimziTopic struct {
	strimziMeta `json:",inline"`
	Spec        struct {
		TopicName  string         `json:"topicName"`
		Partitions int            `json:"partitions"`
		Replicas   int            `json:"replicas"`
		Config     map[string]any `json:"config,omitempty"`
	} `json:"spec"`
}

type strimziACL struct {
	Resource struct {
		Type        string `json:"type"`
		Name        string `json:"name"`
		PatternType string `json:"patternType"`
	} `json:"resource"`
	Operations []string `json:"operations"`
	Host       string   `json:"host,omitempty"`
}

type strimziUser struct {
	strimziMeta `json:",inline"`
	Spec        struct {
		Authentication struct {
			Type string `json:"type"`
		} `json:"authentication"`
		Authorization struct {
			Type string       `json:"type"`
			ACLs []strimziACL `json:"acls"`
		} `json:"authorization"`
	} `json:"spec"`
}

// allows reports whether acls grant op on a resource of type typ named name.
func allows(acls []strimziACL, typ, name, op string) bool {
	for _, a := range acls {
		match := a.Resource.Name == name || (a.Resource.PatternType == "prefix" && strings.HasPrefix(name, a.Resource.Name))
		if a.Resource.Type == typ && match && slices.Contains(a.Operations, op) {
			return true
		}
	}
	return false
}

func TestStrimzi(t *testing.T) {
	b := runBuild(t, "overlays/strimzi")
	if len(b.kafkas) != 1 || len(b.nodePools) == 0 {
		t.Fatalf("%d Kafka, %d KafkaNodePool: want one cluster with node pools", len(b.kafkas), len(b.nodePools))
	}
	k := b.kafkas[0]
	cluster := k.Metadata.Name
	roles := map[string]bool{}
	for _, np := range b.nodePools {
		if np.Metadata.Labels["strimzi.io/cluster"] != cluster {
			t.Errorf("KafkaNodePool %s: not labelled strimzi.io/cluster=%s", np.Metadata.Name, cluster)
		}
		for _, r := range np.Spec.Roles {
			if r != "controller" && r != "broker" {
				t.Errorf("KafkaNodePool %s: role %q", np.Metadata.Name, r)
			}
			roles[r] = true
		}
		if s := np.Spec.Storage.Type; s != "jbod" && s != "persistent-claim" && s != "ephemeral" {
			t.Errorf("KafkaNodePool %s: storage type %q", np.Metadata.Name, s)
		}
	}
	if !roles["controller"] || !roles["broker"] {
		t.Errorf("KRaft needs controller and broker nodes, have %v", roles)
	}
	// The stages reach the cluster's bootstrap Service on a listener that
	// authenticates as they do.
	if len(b.cfg.Kafka.Brokers) != 1 {
		t.Fatalf("brokers %v, want the bootstrap address", b.cfg.Kafka.Brokers)
	}
	host, port, err := net.SplitHostPort(b.cfg.Kafka.Brokers[0])
	if err != nil {
		t.Fatal(err)
	}
	if want := cluster + "-kafka-bootstrap"; host != want && !strings.HasPrefix(host, want+".") {
		t.Errorf("brokers %s: not the bootstrap Service %s", b.cfg.Kafka.Brokers[0], want)
	}
	found := false
	for _, l := range k.Spec.Kafka.Listeners {
		if strconv.Itoa(l.Port) != port {
			continue
		}
		found = true
		if l.TLS != b.cfg.Kafka.TLS.Enabled {
			t.Errorf("listener %s: tls %v, the stages %v", l.Name, l.TLS, b.cfg.Kafka.TLS.Enabled)
		}
		if l.Authentication == nil || !strings.EqualFold(l.Authentication.Type, b.cfg.Kafka.SASL.Mechanism) {
			t.Errorf("listener %s: authentication %v, the stages use %s", l.Name, l.Authentication, b.cfg.Kafka.SASL.Mechanism)
		}
	}
	if !found {
		t.Errorf("no listener on port %s", port)
	}
	if k.Spec.Kafka.Authorization == nil || k.Spec.Kafka.Authorization.Type != "simple" {
		t.Error("the cluster must authorize (simple) for the KafkaUsers' ACLs to mean anything")
	}
	if k.Spec.EntityOperator == nil || k.Spec.EntityOperator.TopicOperator == nil || k.Spec.EntityOperator.UserOperator == nil {
		t.Error("the Topic and User Operators must run for KafkaTopics and KafkaUsers")
	}

	// The stages' replication, resolved against this cluster: its brokers
	// and its default.replication.factor.
	brokers := 0
	for _, np := range b.nodePools {
		if slices.Contains(np.Spec.Roles, "broker") {
			brokers += np.Spec.Replicas
		}
	}
	defRF, _ := strconv.Atoi(fmt.Sprint(k.Spec.Kafka.Config["default.replication.factor"]))
	repl, err := b.cfg.Topics.Replication(defRF, brokers)
	if err != nil {
		t.Fatalf("the stages' replication on %d brokers: %v", brokers, err)
	}
	if repl.Factor < 3 || repl.MinInsync < 2 {
		t.Errorf("replication %+v: one broker down must neither lose nor block an acknowledged write", repl)
	}

	// A KafkaTopic for every catalog topic, as the catalog specifies it.
	byName := map[string]*strimziTopic{}
	for _, kt := range b.kafkaTopics {
		if kt.Metadata.Labels["strimzi.io/cluster"] != cluster {
			t.Errorf("KafkaTopic %s: not labelled for cluster %s", kt.Metadata.Name, cluster)
		}
		byName[kt.Spec.TopicName] = kt
	}
	for _, n := range topics.All() {
		name := b.cfg.Topics.Topic(n)
		kt := byName[name]
		if kt == nil {
			t.Errorf("no KafkaTopic for %s", name)
			continue
		}
		delete(byName, name)
		spec := b.cfg.Topics.Spec(n)
		if kt.Spec.Partitions != spec.Partitions {
			t.Errorf("KafkaTopic %s: %d partitions, the catalog %d", name, kt.Spec.Partitions, spec.Partitions)
		}
		if got, _ := kt.Spec.Config["cleanup.policy"].(string); (got == "compact") != spec.Compacted {
			t.Errorf("KafkaTopic %s: cleanup.policy %q, compacted in the catalog: %v", name, got, spec.Compacted)
		}
		if got := fmt.Sprint(kt.Spec.Config["max.message.bytes"]); got != strconv.Itoa(spec.MaxMessageBytes) {
			t.Errorf("KafkaTopic %s: max.message.bytes %s, the catalog %d", name, got, spec.MaxMessageBytes)
		}
		min, _ := strconv.Atoi(fmt.Sprint(k.Spec.Kafka.Config["min.insync.replicas"]))
		if v, ok := kt.Spec.Config["min.insync.replicas"]; ok {
			min, _ = strconv.Atoi(fmt.Sprint(v))
		}
		if kt.Spec.Replicas <= min {
			t.Errorf("KafkaTopic %s: %d replicas do not survive a broker down with min.insync.replicas %d", name, kt.Spec.Replicas, min)
		}
		// The stages and the topics Job would create it as the KafkaTopic
		// says (the same replication wherever a topic comes from).
		if kt.Spec.Replicas != repl.Factor || min != repl.MinInsync {
			t.Errorf("KafkaTopic %s: replicas %d, min.insync.replicas %d; the stages' configuration resolves to %d, %d",
				name, kt.Spec.Replicas, min, repl.Factor, repl.MinInsync)
		}
	}
	for name := range byName {
		t.Errorf("KafkaTopic %s is not in the catalog", name)
	}

	// The stages' user: every topic and group it uses.
	u := b.kafkaUsers[b.cfg.Kafka.SASL.Username]
	if u == nil {
		t.Fatalf("no KafkaUser %q (kafka.sasl.username)", b.cfg.Kafka.SASL.Username)
	}
	if !strings.EqualFold(u.Spec.Authentication.Type, b.cfg.Kafka.SASL.Mechanism) || u.Spec.Authorization.Type != "simple" {
		t.Errorf("KafkaUser %s: authentication %s / authorization %s", u.Metadata.Name, u.Spec.Authentication.Type, u.Spec.Authorization.Type)
	}
	for _, n := range topics.All() {
		for _, op := range []string{"Describe", "Read", "Write"} {
			if !allows(u.Spec.Authorization.ACLs, "topic", b.cfg.Topics.Topic(n), op) {
				t.Errorf("KafkaUser %s may not %s topic %s", u.Metadata.Name, op, b.cfg.Topics.Topic(n))
			}
		}
	}
	groups := []string{"generate-completions-murphy-generate-5d9f8-abcde"} // one per generate pod
	for _, g := range groupInputs {
		for group := range g {
			groups = append(groups, group)
		}
	}
	for _, group := range groups {
		if !allows(u.Spec.Authorization.ACLs, "group", b.cfg.Topics.Prefix+group, "Read") {
			t.Errorf("KafkaUser %s may not use group %s", u.Metadata.Name, b.cfg.Topics.Prefix+group)
		}
		if ku := b.kafkaUsers["murphy-keda"]; ku == nil || !allows(ku.Spec.Authorization.ACLs, "group", b.cfg.Topics.Prefix+group, "Describe") {
			t.Errorf("KafkaUser murphy-keda may not describe group %s", b.cfg.Topics.Prefix+group)
		}
	}
	for _, ku := range b.kafkaUsers {
		for _, a := range ku.Spec.Authorization.ACLs {
			if !slices.Contains([]string{"topic", "group", "cluster", "transactionalId"}, a.Resource.Type) ||
				!slices.Contains([]string{"literal", "prefix"}, a.Resource.PatternType) {
				t.Errorf("KafkaUser %s: ACL resource %+v", ku.Metadata.Name, a.Resource)
			}
		}
	}
	// The password and CA files the environment names are mounted.
	for _, name := range stages.Names() {
		pod := b.deployments["murphy-"+name].Spec.Template.Spec
		for _, f := range []string{b.cfg.Kafka.SASL.PasswordFile, b.cfg.Kafka.TLS.CAFile} {
			if f != "" && !mountsFile(pod, f) {
				t.Errorf("stage %s: %s is not mounted from a Secret", name, f)
			}
		}
	}
}

// mountsFile reports whether path is a Secret item mounted in the pod's
// first container.
func mountsFile(pod corev1.PodSpec, path string) bool {
	for _, m := range pod.Containers[0].VolumeMounts {
		for _, v := range pod.Volumes {
			if v.Name != m.Name || v.Secret == nil {
				continue
			}
			for _, it := range v.Secret.Items {
				if m.MountPath+"/"+it.Path == path {
					return true
				}
			}
		}
	}
	return false
}

// TestReadmeCommands: the README applies the kustomizations that exist.
func TestReadmeCommands(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range kustomizations[1:] {
		if !bytes.Contains(readme, []byte("deploy/k8s/"+dir)) {
			t.Errorf("README.md does not mention deploy/k8s/%s", dir)
		}
	}
}
