package deploy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// objects is everything one render produced, decoded into the Kubernetes
// API types.
type objects struct {
	configMaps      []*corev1.ConfigMap
	services        []*corev1.Service
	serviceAccounts []*corev1.ServiceAccount
	deployments     []*appsv1.Deployment
	pdbs            []*policyv1.PodDisruptionBudget
	hpas            []*autoscalingv2.HorizontalPodAutoscaler
	serviceMonitors []*monitoringv1.ServiceMonitor
	prometheusRules []*monitoringv1.PrometheusRule
	scaledObjects   []*scaledObject
	all             []metav1.Object
}

// deployment returns the one Deployment, failing the test otherwise.
func (o *objects) deployment(t *testing.T) *appsv1.Deployment {
	t.Helper()
	if len(o.deployments) != 1 {
		t.Fatalf("rendered %d Deployments, want 1", len(o.deployments))
	}
	return o.deployments[0]
}

// decodeAll splits a rendered YAML stream into documents and decodes each
// strictly (an unknown or duplicate field fails) into the API type its
// apiVersion and kind name. A kind the tests do not know fails too.
func decodeAll(stream string) (*objects, error) {
	o := &objects{}
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(stream)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return o, nil
		}
		if err != nil {
			return nil, err
		}
		if blank(string(doc)) {
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			return nil, fmt.Errorf("type of %s: %w", head(doc), err)
		}
		var obj metav1.Object
		switch tm.APIVersion + "/" + tm.Kind {
		case "v1/ConfigMap":
			obj, err = decodeStrict(doc, &o.configMaps)
		case "v1/Service":
			obj, err = decodeStrict(doc, &o.services)
		case "v1/ServiceAccount":
			obj, err = decodeStrict(doc, &o.serviceAccounts)
		case "apps/v1/Deployment":
			obj, err = decodeStrict(doc, &o.deployments)
		case "policy/v1/PodDisruptionBudget":
			obj, err = decodeStrict(doc, &o.pdbs)
		case "autoscaling/v2/HorizontalPodAutoscaler":
			obj, err = decodeStrict(doc, &o.hpas)
		case "monitoring.coreos.com/v1/ServiceMonitor":
			obj, err = decodeStrict(doc, &o.serviceMonitors)
		case "monitoring.coreos.com/v1/PrometheusRule":
			obj, err = decodeStrict(doc, &o.prometheusRules)
		case "keda.sh/v1alpha1/ScaledObject":
			obj, err = decodeStrict(doc, &o.scaledObjects)
		default:
			return nil, fmt.Errorf("unexpected kind %s/%s in %s", tm.APIVersion, tm.Kind, head(doc))
		}
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", tm.Kind, head(doc), err)
		}
		o.all = append(o.all, obj)
	}
}

// decodeStrict decodes doc into a new T, appended to list.
func decodeStrict[T any, PT interface {
	*T
	metav1.Object
}](doc []byte, list *[]PT) (metav1.Object, error) {
	v := PT(new(T))
	if err := yaml.UnmarshalStrict(doc, v); err != nil {
		return nil, err
	}
	*list = append(*list, v)
	return v, nil
}

func head(doc []byte) string {
	line, _, _ := bytes.Cut(bytes.TrimSpace(doc), []byte("\n"))
	return fmt.Sprintf("%q", line)
}

// scaledObject is KEDA's ScaledObject (keda.sh/v1alpha1), the fields of
// github.com/kedacore/keda/v2/apis/keda/v1alpha1 this chart may write,
// copied here rather than importing KEDA's module (its dependency tree is
// the operator's). Unknown fields fail, as with the other kinds; trigger
// metadata is a free-form map in KEDA too.
type scaledObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		ScaleTargetRef struct {
			APIVersion    string `json:"apiVersion,omitempty"`
			Kind          string `json:"kind,omitempty"`
			Name          string `json:"name"`
			EnvSourceName string `json:"envSourceContainerName,omitempty"`
		} `json:"scaleTargetRef"`
		PollingInterval *int32 `json:"pollingInterval,omitempty"`
		CooldownPeriod  *int32 `json:"cooldownPeriod,omitempty"`
		MinReplicaCount *int32 `json:"minReplicaCount,omitempty"`
		MaxReplicaCount *int32 `json:"maxReplicaCount,omitempty"`
		Advanced        *struct {
			HorizontalPodAutoscalerConfig *struct {
				Name     string                                         `json:"name,omitempty"`
				Behavior *autoscalingv2.HorizontalPodAutoscalerBehavior `json:"behavior,omitempty"`
			} `json:"horizontalPodAutoscalerConfig,omitempty"`
			RestoreToOriginalReplicaCount bool `json:"restoreToOriginalReplicaCount,omitempty"`
		} `json:"advanced,omitempty"`
		Triggers []struct {
			Type              string            `json:"type"`
			Name              string            `json:"name,omitempty"`
			UseCachedMetrics  bool              `json:"useCachedMetrics,omitempty"`
			Metadata          map[string]string `json:"metadata"`
			AuthenticationRef *struct {
				Name string `json:"name"`
				Kind string `json:"kind,omitempty"`
			} `json:"authenticationRef,omitempty"`
			MetricType string `json:"metricType,omitempty"`
		} `json:"triggers"`
	} `json:"spec"`
}
