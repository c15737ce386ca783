//! The Widget operator with kube-rs (kube-runtime's Controller). Both Widgets and ConfigMaps are
//! watched into reflector stores (the ConfigMap store replaces `owns()`'s metadata-only watch so
//! the reconciler can compare against the cached ConfigMap, as the other implementations do);
//! Widgets pass a generation predicate. Server-side apply of the ConfigMap when the cached one
//! differs, a merge patch of the status. kube-rs has no client-side rate limiting.
//! Prints SYNCED, PASS (after EXPECT reconciles) and STATS lines for the runner.
use std::{
    collections::BTreeMap,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc,
    },
    time::Duration,
};

use futures::StreamExt;
use k8s_openapi::{
    api::core::v1::ConfigMap,
    apimachinery::pkg::apis::meta::v1::{Condition, OwnerReference, Time},
    jiff::Timestamp,
};
use kube::{
    api::{Patch, PatchParams},
    runtime::{
        controller::{Action, Config},
        predicates,
        reflector::{self, ObjectRef, Store},
        watcher, Controller, WatchStreamExt,
    },
    Api, Client, CustomResource, Resource, ResourceExt,
};
use serde::{Deserialize, Serialize};
use serde_json::json;

#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default)]
#[kube(
    group = "bench.kubeloop.dev",
    version = "v1",
    kind = "Widget",
    namespaced,
    status = "WidgetStatus",
    schema = "disabled"
)]
pub struct WidgetSpec {
    #[serde(default)]
    pub replicas: i32,
    #[serde(default)]
    pub data: BTreeMap<String, String>,
}

#[derive(Deserialize, Serialize, Clone, Debug, Default)]
#[serde(rename_all = "camelCase")]
pub struct WidgetStatus {
    #[serde(default)]
    pub observed_generation: Option<i64>,
    #[serde(default)]
    pub conditions: Vec<Condition>,
}

struct Ctx {
    client: Client,
    configmaps: Store<ConfigMap>,
    reconciles: AtomicU64,
    expect: u64,
}

#[derive(Debug)]
struct Error(kube::Error);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}
impl std::error::Error for Error {}

const FIELD_MANAGER: &str = "widget-operator";

async fn reconcile(widget: Arc<Widget>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let result = converge(&widget, &ctx).await;
    if ctx.reconciles.fetch_add(1, Ordering::Relaxed) + 1 == ctx.expect {
        println!("PASS");
    }
    result.map(|_| Action::await_change()).map_err(Error)
}

async fn converge(widget: &Widget, ctx: &Ctx) -> Result<(), kube::Error> {
    let name = widget.name_any();
    let namespace = widget.namespace().unwrap_or_default();
    let generation = widget.metadata.generation.unwrap_or_default();
    let uid = widget.metadata.uid.clone().unwrap_or_default();
    let cached = ctx
        .configmaps
        .get(&ObjectRef::new(&name).within(&namespace));
    let matches = cached.is_some_and(|cm| {
        cm.data.clone().unwrap_or_default() == widget.spec.data
            && cm.metadata.owner_references.as_ref().is_some_and(|refs| {
                refs.iter()
                    .any(|r| r.uid == uid && r.controller == Some(true))
            })
    });
    if !matches {
        let owner = OwnerReference {
            api_version: Widget::api_version(&()).into_owned(),
            kind: Widget::kind(&()).into_owned(),
            name: name.clone(),
            uid: uid.clone(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        };
        let desired = json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": { "name": name, "namespace": namespace, "ownerReferences": [owner] },
            "data": widget.spec.data,
        });
        Api::<ConfigMap>::namespaced(ctx.client.clone(), &namespace)
            .patch(
                &name,
                &PatchParams::apply(FIELD_MANAGER).force(),
                &Patch::Apply(&desired),
            )
            .await?;
    }
    let status = widget.status.clone().unwrap_or_default();
    let ready = status.conditions.iter().find(|c| c.type_ == "Ready");
    if status.observed_generation == Some(generation)
        && ready.is_some_and(|c| c.status == "True" && c.observed_generation == Some(generation))
    {
        return Ok(());
    }
    let transition = match ready {
        Some(c) if c.status == "True" => c.last_transition_time.clone(),
        _ => Time(Timestamp::now()),
    };
    let mut conditions: Vec<Condition> = status
        .conditions
        .into_iter()
        .filter(|c| c.type_ != "Ready")
        .collect();
    conditions.push(Condition {
        type_: "Ready".into(),
        status: "True".into(),
        reason: "Reconciled".into(),
        message: String::new(),
        observed_generation: Some(generation),
        last_transition_time: transition,
    });
    let patch = json!({ "status": { "observedGeneration": generation, "conditions": conditions } });
    Api::<Widget>::namespaced(ctx.client.clone(), &namespace)
        .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

/// Prints SYNCED once both watches delivered their initial list. (`Store::wait_until_ready` from a
/// second task never returned here, while the controller's own wait did.)
static INITIAL_LISTS: AtomicU64 = AtomicU64::new(0);
fn synced_once<K>(event: &Result<watcher::Event<K>, watcher::Error>) {
    if matches!(event, Ok(watcher::Event::InitDone))
        && INITIAL_LISTS.fetch_add(1, Ordering::Relaxed) + 1 == 2
    {
        println!("SYNCED");
    }
}

/// A watch of every `K` into a reflector store, reporting its initial list to `synced_once`.
fn reflected<K>(
    api: Api<K>,
    writer: reflector::store::Writer<K>,
) -> impl futures::Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone + Default,
{
    watcher(api, watcher::Config::default())
        .default_backoff()
        .reflect(writer)
        .inspect(|event| synced_once(event))
}

fn error_policy(_widget: Arc<Widget>, error: &Error, _ctx: Arc<Ctx>) -> Action {
    eprintln!("reconcile failed: {error}");
    Action::requeue(Duration::from_millis(100))
}

#[tokio::main]
async fn main() -> Result<(), kube::Error> {
    let concurrency: u16 = std::env::var("CONCURRENCY")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4);
    let expect: u64 = std::env::var("EXPECT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let client = Client::try_default().await?;

    let (widget_reader, widget_writer) = reflector::store();
    let widgets = reflected(Api::<Widget>::all(client.clone()), widget_writer)
        .applied_objects()
        .predicate_filter(predicates::generation, Default::default());
    let (cm_reader, cm_writer) = reflector::store();
    let configmaps = reflected(Api::<ConfigMap>::all(client.clone()), cm_writer).touched_objects();

    let ctx = Arc::new(Ctx {
        client,
        configmaps: cm_reader,
        reconciles: AtomicU64::new(0),
        expect,
    });
    let stats = ctx.clone();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        loop {
            tick.tick().await;
            println!(
                "STATS reconciles={} heap=0",
                stats.reconciles.load(Ordering::Relaxed)
            );
        }
    });
    Controller::for_stream(widgets, widget_reader)
        .owns_stream(configmaps)
        .with_config(Config::default().concurrency(concurrency))
        .shutdown_on_signal()
        .run(reconcile, error_policy, ctx)
        .for_each(|result| {
            if let Err(error) = result {
                eprintln!("controller: {error}");
            }
            futures::future::ready(())
        })
        .await;
    Ok(())
}
