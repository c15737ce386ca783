// The benchmark's Go tooling, built with the peers: the floor operator and the load generators.
//
//	loadgen reconcile               the floor: the Widget operator's API writes with no framework —
//	                                no informer cache, no work queue, no predicates. One watch on
//	                                Widgets; every event whose status is not yet observedGeneration +
//	                                Ready goes straight to a worker (chosen by name, so one Widget's
//	                                writes stay in order), which server-side applies the ConfigMap and
//	                                merge-patches the status. Client-side rate limiting is off.
//	loadgen populate NS N           creates N converged Widgets (Widget, ConfigMap, status)
//	loadgen create NS N             creates N Widgets w-0…w-(N-1)
//	loadgen churn NS N TOTAL RATE   TOTAL spec updates at RATE/s over w-0…w-(N-1); each carries
//	                                data.sent = the time it was sent (Unix ms)
//	loadgen watch NS N              watches Widgets in NS: prints "READY <unix ms>" once all N are
//	                                Ready at their generation, and "LATENCY <ms>" for each update
//	                                (data.sent > 0) when it becomes Ready
//
// CONCURRENCY sets workers (default 4). It runs as its own process so that measuring never takes
// CPU from the operator's process (and Go's JSON decoding keeps it cheap).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

var widgets = schema.GroupVersionResource{Group: "bench.kubeloop.dev", Version: "v1", Resource: "widgets"}

type clients struct {
	core *kubernetes.Clientset
	dyn  *dynamic.DynamicClient
}

func connect() clients {
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	must(err)
	cfg.QPS = -1
	cfg.Burst = 1 << 20
	return clients{core: kubernetes.NewForConfigOrDie(cfg), dyn: dynamic.NewForConfigOrDie(cfg)}
}

// converge writes the ConfigMap and the status of one Widget generation.
func (c clients) converge(ctx context.Context, w *unstructured.Unstructured) error {
	data, _, _ := unstructured.NestedStringMap(w.Object, "spec", "data")
	cm := corev1ac.ConfigMap(w.GetName(), w.GetNamespace()).WithData(data).
		WithOwnerReferences(metav1ac.OwnerReference().
			WithAPIVersion("bench.kubeloop.dev/v1").WithKind("Widget").
			WithName(w.GetName()).WithUID(w.GetUID()).
			WithController(true).WithBlockOwnerDeletion(true))
	if _, err := c.core.CoreV1().ConfigMaps(w.GetNamespace()).
		Apply(ctx, cm, metav1.ApplyOptions{FieldManager: "widget-floor", Force: true}); err != nil {
		return err
	}
	return c.patchStatus(ctx, w)
}

func (c clients) patchStatus(ctx context.Context, w *unstructured.Unstructured) error {
	generation := w.GetGeneration()
	patch, _ := json.Marshal(map[string]any{"status": map[string]any{
		"observedGeneration": generation,
		"conditions": []metav1.Condition{{
			Type: "Ready", Status: metav1.ConditionTrue, Reason: "Reconciled", ObservedGeneration: generation,
			LastTransitionTime: metav1.Now(),
		}},
	}})
	_, err := c.dyn.Resource(widgets).Namespace(w.GetNamespace()).
		Patch(ctx, w.GetName(), types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	return err
}

// populated writes what an operator would have written, with the cheapest requests: a plain
// create of the ConfigMap (the operators compare data and owner, not field managers), the status.
func (c clients) populated(ctx context.Context, w *unstructured.Unstructured) error {
	data, _, _ := unstructured.NestedStringMap(w.Object, "spec", "data")
	yes := true
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: w.GetName(), Namespace: w.GetNamespace(), OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "bench.kubeloop.dev/v1", Kind: "Widget", Name: w.GetName(), UID: w.GetUID(),
			Controller: &yes, BlockOwnerDeletion: &yes,
		}}},
		Data: data,
	}
	if _, err := c.core.CoreV1().ConfigMaps(w.GetNamespace()).Create(ctx, cm, metav1.CreateOptions{}); err != nil &&
		!apierrors.IsAlreadyExists(err) {
		return err
	}
	return c.patchStatus(ctx, w)
}

func converged(w *unstructured.Unstructured) bool {
	observed, _, _ := unstructured.NestedInt64(w.Object, "status", "observedGeneration")
	if observed != w.GetGeneration() {
		return false
	}
	conditions, _, _ := unstructured.NestedSlice(w.Object, "status", "conditions")
	for _, c := range conditions {
		if m, ok := c.(map[string]any); ok && m["type"] == "Ready" && m["status"] == "True" {
			return true
		}
	}
	return false
}

func reconcile(c clients, concurrency int) {
	ctx := context.Background()
	queues := make([]chan *unstructured.Unstructured, concurrency)
	var writes atomic.Int64
	for i := range queues {
		queues[i] = make(chan *unstructured.Unstructured, 4096)
		go func(in chan *unstructured.Unstructured) {
			for w := range in {
				for attempt := 0; attempt < 5; attempt++ {
					if err := c.converge(ctx, w); err == nil {
						break
					} else {
						fmt.Fprintln(os.Stderr, err)
						time.Sleep(100 * time.Millisecond)
					}
				}
				writes.Add(1)
			}
		}(queues[i])
	}
	dispatch := func(w *unstructured.Unstructured) {
		if converged(w) {
			return
		}
		h := fnv.New32a()
		h.Write([]byte(w.GetNamespace() + "/" + w.GetName()))
		queues[int(h.Sum32())%concurrency] <- w
	}
	go func() {
		for range time.Tick(time.Second) {
			fmt.Printf("STATS reconciles=%d heap=0\n", writes.Load())
		}
	}()
	for {
		list, err := c.dyn.Resource(widgets).List(ctx, metav1.ListOptions{})
		must(err)
		fmt.Println("SYNCED")
		for i := range list.Items {
			dispatch(&list.Items[i])
		}
		w, err := c.dyn.Resource(widgets).Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
		must(err)
		for event := range w.ResultChan() {
			if event.Type == watch.Added || event.Type == watch.Modified {
				if obj, ok := event.Object.(*unstructured.Unstructured); ok {
					dispatch(obj)
				}
			}
		}
	}
}

// parallel runs do(0…n-1) on concurrency goroutines.
func parallel(n, concurrency int, do func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range concurrency {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				do(int(i))
			}
		})
	}
	wg.Wait()
}

func create(c clients, namespace string, n, concurrency int, converge bool) {
	ctx := context.Background()
	parallel(n, concurrency, func(i int) {
		w := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "bench.kubeloop.dev/v1", "kind": "Widget",
			"metadata": map[string]any{"name": fmt.Sprintf("w-%d", i), "namespace": namespace},
			"spec":     map[string]any{"replicas": int64(1), "data": map[string]any{"value": "0", "sent": "0"}},
		}}
		created, err := c.dyn.Resource(widgets).Namespace(namespace).Create(ctx, w, metav1.CreateOptions{})
		must(err)
		if converge {
			must(c.populated(ctx, created))
		}
	})
}

func churn(c clients, namespace string, n, total int, rate float64) {
	ctx := context.Background()
	start := time.Now()
	var wg sync.WaitGroup
	for i := range total {
		if wait := time.Until(start.Add(time.Duration(float64(i) / rate * float64(time.Second)))); wait > 0 {
			time.Sleep(wait)
		}
		wg.Go(func() {
			patch := fmt.Sprintf(`{"spec":{"data":{"value":"%d","sent":"%d"}}}`, i, time.Now().UnixMilli())
			_, err := c.dyn.Resource(widgets).Namespace(namespace).
				Patch(ctx, fmt.Sprintf("w-%d", i%n), types.MergePatchType, []byte(patch), metav1.PatchOptions{})
			must(err)
		})
	}
	wg.Wait()
}

func watchReady(c clients, namespace string, n int) {
	ctx := context.Background()
	readyAt := map[string]int64{} // name → generation that is Ready
	seen := map[string]bool{}     // name/generation whose latency was printed
	all := false
	observe := func(w *unstructured.Unstructured) {
		name, generation := w.GetName(), w.GetGeneration()
		if !converged(w) {
			delete(readyAt, name)
			return
		}
		readyAt[name] = generation
		sent, _, _ := unstructured.NestedString(w.Object, "spec", "data", "sent")
		if ms, _ := strconv.ParseInt(sent, 10, 64); ms > 0 {
			key := fmt.Sprintf("%s/%d", name, generation)
			if !seen[key] {
				seen[key] = true
				fmt.Printf("LATENCY %d\n", time.Now().UnixMilli()-ms)
			}
		}
		if !all && len(readyAt) >= n {
			all = true
			fmt.Printf("READY %d\n", time.Now().UnixMilli())
		}
	}
	list, err := c.dyn.Resource(widgets).Namespace(namespace).List(ctx, metav1.ListOptions{})
	must(err)
	for i := range list.Items {
		observe(&list.Items[i])
	}
	fmt.Println("WATCHING")
	rv := list.GetResourceVersion()
	for {
		w, err := c.dyn.Resource(widgets).Namespace(namespace).Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
		must(err)
		for event := range w.ResultChan() {
			if obj, ok := event.Object.(*unstructured.Unstructured); ok {
				rv = obj.GetResourceVersion()
				if event.Type == watch.Added || event.Type == watch.Modified {
					observe(obj)
				}
			}
		}
	}
}

func main() {
	c := connect()
	concurrency, _ := strconv.Atoi(os.Getenv("CONCURRENCY"))
	if concurrency <= 0 {
		concurrency = 4
	}
	arg := func(i int) int {
		n, err := strconv.Atoi(os.Args[i])
		must(err)
		return n
	}
	switch {
	case len(os.Args) == 2 && os.Args[1] == "reconcile":
		reconcile(c, concurrency)
	case len(os.Args) == 4 && os.Args[1] == "populate":
		create(c, os.Args[2], arg(3), concurrency, true)
	case len(os.Args) == 4 && os.Args[1] == "create":
		create(c, os.Args[2], arg(3), concurrency, false)
	case len(os.Args) == 6 && os.Args[1] == "churn":
		churn(c, os.Args[2], arg(3), arg(4), float64(arg(5)))
	case len(os.Args) == 4 && os.Args[1] == "watch":
		watchReady(c, os.Args[2], arg(3))
	default:
		fmt.Fprintln(os.Stderr, "usage: loadgen reconcile | populate NS N | create NS N | churn NS N TOTAL RATE | watch NS N")
		os.Exit(2)
	}
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
