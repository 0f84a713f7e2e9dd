package deploy_test

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/natsauth"
	"gopkg.in/yaml.v3"
)

// renderChart renders the chart's templates the way helm does for the
// constructs they use (field access, if; no sprig functions): with the
// chart's values, release name and namespace. A value a template names
// that values.yaml lacks is an error.
func renderChart(t *testing.T, dir, release string) []map[string]any {
	t.Helper()
	var values map[string]any
	readYAML(t, filepath.Join(dir, "values.yaml"), &values)
	var chart map[string]any
	readYAML(t, filepath.Join(dir, "Chart.yaml"), &chart)
	if chart["apiVersion"] != "v2" || chart["name"] != filepath.Base(dir) {
		t.Errorf("Chart.yaml: %v", chart)
	}
	files, err := filepath.Glob(filepath.Join(dir, "templates", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no templates in %s: %v", dir, err)
	}
	data := map[string]any{
		"Values":  values,
		"Release": map[string]any{"Name": release, "Namespace": "default", "Service": "Helm"},
		"Chart":   chart,
	}
	var docs []map[string]any
	for _, f := range files {
		tmpl, err := template.New(filepath.Base(f)).Option("missingkey=error").ParseFiles(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		var out bytes.Buffer
		if err := tmpl.Execute(&out, data); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		dec := yaml.NewDecoder(&out)
		for {
			var doc map[string]any
			if err := dec.Decode(&doc); err == io.EOF {
				break
			} else if err != nil {
				t.Fatalf("%s renders YAML that does not parse: %v\n%s", f, err, out.String())
			}
			if doc != nil {
				docs = append(docs, doc)
			}
		}
	}
	return docs
}

// path walks a decoded YAML document: keys of maps, indexes of lists.
func path(v any, keys ...any) any {
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func str(v any) string {
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

// TestHelmChart: three agentd pods whose embedded servers route to each
// other by their stable names, data on a volume claim per pod, probes on
// /healthz and /readyz, flags that exist and a configuration that
// validates, services that point at ports the pods open, and a grace
// period that covers the drain.
func TestHelmChart(t *testing.T) {
	const release = "agentic"
	docs := renderChart(t, "helm/agentic", release)
	kinds := map[string]map[string]any{}
	services := map[string]map[string]any{}
	for _, d := range docs {
		kind := str(d["kind"])
		if kind == "Service" {
			services[str(path(d, "metadata", "name"))] = d
			continue
		}
		kinds[kind] = d
	}
	sts, cm := kinds["StatefulSet"], kinds["ConfigMap"]
	if sts == nil || cm == nil || kinds["PodDisruptionBudget"] == nil {
		t.Fatalf("the chart renders %v, want a StatefulSet, a ConfigMap and a PodDisruptionBudget", slices.Collect(maps.Keys(kinds)))
	}
	replicas := path(sts, "spec", "replicas").(int)
	if str(path(sts, "spec", "podManagementPolicy")) != "Parallel" {
		t.Error("StatefulSet: pods must start in parallel: the first is ready only when JetStream has a majority")
	}
	headless := str(path(sts, "spec", "serviceName"))
	hs := services[headless]
	if hs == nil || str(path(hs, "spec", "clusterIP")) != "None" || path(hs, "spec", "publishNotReadyAddresses") != true {
		t.Errorf("StatefulSet serviceName %q: want a headless service that publishes pods before they are ready, got %v", headless, hs)
	}

	pod := path(sts, "spec", "template", "spec")
	ctr := path(pod, "containers", 0).(map[string]any)
	ports := map[string]int{}
	for _, p := range path(ctr, "ports").([]any) {
		ports[str(path(p, "name"))] = path(p, "containerPort").(int)
	}
	env := map[string]string{"POD_NAME": release + "-0", "POD_IP": "10.1.2.3"}
	for _, e := range path(ctr, "env").([]any) {
		if _, ok := env[str(path(e, "name"))]; !ok {
			t.Errorf("container env %v is not one the test knows a value for", e)
		}
	}
	var args []string
	for _, a := range path(ctr, "args").([]any) {
		s := str(a)
		for _, ref := range regexp.MustCompile(`\$\(([A-Z_]+)\)`).FindAllStringSubmatch(s, -1) {
			v, ok := env[ref[1]]
			if !ok {
				t.Errorf("args %q refer to $(%s), which the container's env does not define", s, ref[1])
			}
			s = strings.ReplaceAll(s, ref[0], v)
		}
		args = append(args, s)
	}
	cfgFile := filepath.Join(t.TempDir(), "agentd.yaml")
	if err := os.WriteFile(cfgFile, []byte(str(path(cm, "data", "agentd.yaml"))), 0o600); err != nil {
		t.Fatal(err)
	}
	var configPath string
	for _, m := range path(ctr, "volumeMounts").([]any) {
		if str(path(m, "name")) == "config" {
			configPath = str(path(m, "mountPath"))
		}
	}
	run := resolveAgentd(t, "chart", args, map[string]string{configPath: cfgFile})
	cfg := run.cfg
	if cfg.Name != release+"-0" {
		t.Errorf("chart: pod %s-0 runs as %s", release, cfg.Name)
	}
	for key, tt := range map[string]struct {
		addr string
		port string
	}{
		"nats_listen": {cfg.NATSListen, "nats"}, "nats_cluster_listen": {cfg.NATSClusterListen, "nats-cluster"},
		"gossip_listen": {cfg.GossipListen, "gossip-tcp"}, "gossip_advertise": {cfg.GossipAdvertise, "gossip-udp"},
		"http_listen": {cfg.HTTPListen, "http"},
	} {
		if _, p, _ := net.SplitHostPort(tt.addr); p != strconv.Itoa(ports[tt.port]) {
			t.Errorf("chart: %s %q, but the container's %s port is %d", key, tt.addr, tt.port, ports[tt.port])
		}
	}
	var wantRoutes, wantJoin []string
	for i := range replicas {
		host := fmt.Sprintf("%s-%d.%s", release, i, headless)
		wantRoutes = append(wantRoutes, fmt.Sprintf("nats://%s:%d", host, ports["nats-cluster"]))
		wantJoin = append(wantJoin, fmt.Sprintf("%s:%d", host, ports["gossip-tcp"]))
	}
	if !slices.Equal(cfg.NATSRoutes, wantRoutes) || !slices.Equal(cfg.Join, wantJoin) {
		t.Errorf("chart: routes %v and join %v, want every one of the %d pods: %v, %v", cfg.NATSRoutes, cfg.Join, replicas, wantRoutes, wantJoin)
	}
	if replicas != bus.ClusterReplicas {
		t.Errorf("chart: %d pods; streams get %d replicas on a cluster", replicas, bus.ClusterReplicas)
	}

	// The data directory on a claim per pod.
	var dataMount string
	for _, m := range path(ctr, "volumeMounts").([]any) {
		if str(path(m, "name")) == "data" {
			dataMount = str(path(m, "mountPath"))
		}
	}
	if dataMount != cfg.Data || str(path(sts, "spec", "volumeClaimTemplates", 0, "metadata", "name")) != "data" {
		t.Errorf("chart: data in %s, the data volume at %q, claim %v", cfg.Data, dataMount, path(sts, "spec", "volumeClaimTemplates"))
	}

	// Probes.
	for probe, want := range map[string]string{"startupProbe": "/healthz", "livenessProbe": "/healthz", "readinessProbe": "/readyz"} {
		p := path(ctr, probe, "httpGet")
		if str(path(p, "path")) != want || str(path(p, "port")) != "http" {
			t.Errorf("chart: %s %v, want GET %s on the http port", probe, p, want)
		}
	}
	if grace := time.Duration(path(pod, "terminationGracePeriodSeconds").(int)) * time.Second; grace < run.drain+10*time.Second {
		t.Errorf("chart: terminationGracePeriodSeconds %s, want at least --drain-timeout %s + 10s", grace, run.drain)
	}
	if uid := path(pod, "securityContext", "runAsUser"); uid != chartUID {
		t.Errorf("chart: runs as %v, the image's user is %d", uid, chartUID)
	}

	// Services point at ports the pod opens.
	for name, s := range services {
		for _, p := range path(s, "spec", "ports").([]any) {
			if _, ok := ports[str(path(p, "targetPort"))]; !ok {
				t.Errorf("chart: service %s targets port %v, which the pod does not name", name, path(p, "targetPort"))
			}
		}
	}

	// The init container copies every file node enroll writes for a node
	// that is not the root's: the cluster's (root.pub, nats-bundle.json)
	// and the pod's own (its key, credential and NATS user) — an agentd
	// without them does not start.
	init := str(path(pod, "initContainers", 0, "args", 0))
	root := t.TempDir()
	r, err := natsauth.InitRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if _, err := natsauth.Enroll(out, r, release+"-0", []string{"executor"}, time.Hour, false); err != nil {
		t.Fatal(err)
	}
	files, err := os.ReadDir(out)
	if err != nil || len(files) == 0 {
		t.Fatalf("enrolled files: %v %v", files, err)
	}
	for _, e := range files {
		f := e.Name()
		if strings.HasPrefix(f, "node.") {
			f = "$(POD_NAME)." + f
		}
		if !strings.Contains(init, "/etc/agentic/nodes/"+f) {
			t.Errorf("chart: the init container does not copy %s, which node enroll writes", f)
		}
	}
}
