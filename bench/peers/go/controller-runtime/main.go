// The Widget operator with controller-runtime, as a kubebuilder user would write it: a typed
// Widget, For(Widget) with GenerationChangedPredicate, Owns(ConfigMap), server-side apply of the
// ConfigMap when the cached one differs, a merge patch of the status. Client-side rate limiting is
// off (QPS < 0). Prints SYNCED, PASS (after EXPECT reconciles) and STATS lines for the runner.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

var groupVersion = schema.GroupVersion{Group: "bench.kubeloop.dev", Version: "v1"}

type WidgetSpec struct {
	Replicas int32             `json:"replicas,omitempty"`
	Data     map[string]string `json:"data,omitempty"`
}

type WidgetStatus struct {
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
}

type Widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              WidgetSpec   `json:"spec,omitempty"`
	Status            WidgetStatus `json:"status,omitempty"`
}

type WidgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Widget `json:"items"`
}

// What controller-gen would generate.
func (in *Widget) DeepCopyObject() k8sruntime.Object {
	out := new(Widget)
	*out = *in
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec.Data = maps.Clone(in.Spec.Data)
	out.Status.Conditions = make([]metav1.Condition, len(in.Status.Conditions))
	for i := range in.Status.Conditions {
		in.Status.Conditions[i].DeepCopyInto(&out.Status.Conditions[i])
	}
	return out
}

func (in *WidgetList) DeepCopyObject() k8sruntime.Object {
	out := new(WidgetList)
	*out = *in
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	out.Items = make([]Widget, len(in.Items))
	for i := range in.Items {
		out.Items[i] = *in.Items[i].DeepCopyObject().(*Widget)
	}
	return out
}

const fieldOwner = "widget-operator"

var reconciles atomic.Int64

type reconciler struct {
	client.Client
	expect int64
}

func (r *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	defer func() {
		if reconciles.Add(1) == r.expect {
			fmt.Println("PASS")
		}
	}()
	var w Widget
	if err := r.Get(ctx, req.NamespacedName, &w); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	var cm corev1.ConfigMap
	err := r.Get(ctx, req.NamespacedName, &cm)
	if err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	if err != nil || !maps.Equal(cm.Data, w.Spec.Data) || !metav1.IsControlledBy(&cm, &w) {
		desired := corev1ac.ConfigMap(w.Name, w.Namespace).
			WithData(w.Spec.Data).
			WithOwnerReferences(metav1ac.OwnerReference().
				WithAPIVersion(groupVersion.String()).WithKind("Widget").
				WithName(w.Name).WithUID(w.UID).
				WithController(true).WithBlockOwnerDeletion(true))
		if err := r.Apply(ctx, desired, client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
			return ctrl.Result{}, err
		}
	}
	if ready := meta.FindStatusCondition(w.Status.Conditions, "Ready"); w.Status.ObservedGeneration == w.Generation &&
		ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == w.Generation {
		return ctrl.Result{}, nil
	}
	conditions := slices.Clone(w.Status.Conditions)
	meta.SetStatusCondition(&conditions, metav1.Condition{
		Type: "Ready", Status: metav1.ConditionTrue, Reason: "Reconciled", ObservedGeneration: w.Generation,
	})
	patch, err := json.Marshal(map[string]any{
		"status": map[string]any{"observedGeneration": w.Generation, "conditions": conditions},
	})
	if err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, r.Status().Patch(ctx, &w, client.RawPatch(types.MergePatchType, patch))
}

func main() {
	log.SetLogger(zap.New()) // JSON to stderr, info level: start-up lines and reconcile errors
	concurrency, _ := strconv.Atoi(os.Getenv("CONCURRENCY"))
	if concurrency <= 0 {
		concurrency = 4
	}
	expect, _ := strconv.ParseInt(os.Getenv("EXPECT"), 10, 64)

	scheme := k8sruntime.NewScheme()
	must(clientgoscheme.AddToScheme(scheme))
	scheme.AddKnownTypes(groupVersion, &Widget{}, &WidgetList{})
	metav1.AddToGroupVersion(scheme, groupVersion)

	cfg := ctrl.GetConfigOrDie()
	cfg.QPS = -1 // no client-side rate limiting
	cfg.Burst = 1 << 20
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                server.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	must(err)
	err = ctrl.NewControllerManagedBy(mgr).
		For(&Widget{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&corev1.ConfigMap{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		Complete(&reconciler{Client: mgr.GetClient(), expect: expect})
	must(err)

	ctx := ctrl.SetupSignalHandler()
	go func() {
		if mgr.GetCache().WaitForCacheSync(ctx) {
			fmt.Println("SYNCED")
		}
		var stats runtime.MemStats
		for range time.Tick(time.Second) {
			runtime.ReadMemStats(&stats)
			fmt.Printf("STATS reconciles=%d heap=%d\n", reconciles.Load(), stats.HeapAlloc)
		}
	}()
	must(mgr.Start(ctx))
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
