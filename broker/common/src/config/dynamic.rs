//! Broker settings changeable at run time (`DYNAMIC_BROKER_CONFIGS`, set
//! with IncrementalAlterConfigs / AlterConfigs on the broker resource),
//! persisted in `<data-dir>/dynamic-broker-configs.json` and applied again
//! at start-up over the static configuration. This module stores the
//! values by name (for DescribeConfigs) and publishes them typed
//! (`DynamicSettings`) on a watch: readers take the current snapshot or
//! wait for the next one; applying them is the readers' job.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use strata_prefetch::governor::GovernorConfig;
use strata_prefetch::ClassPolicy;
use tokio::sync::watch;

use super::{BrokerConfig, ConfigSource, DYNAMIC_BROKER_CONFIGS};
use crate::durable_file::write_atomically;

const FILE: &str = "dynamic-broker-configs.json";

/// The dynamic settings, typed: what is in force now.
#[derive(Debug, Clone, PartialEq)]
pub struct DynamicSettings {
    /// `remote.fetch.priority.groups`, `.shares` and `remote.fetch.bulk.paused`.
    pub class_policy: ClassPolicy,
    /// `remote.log.manager.fetch.max.bytes.per.second` (0: unlimited).
    pub fetch_max_bytes_per_second: u64,
    /// `remote.fetch.adaptive.*`; `None` when the adaptive rate is off.
    pub adaptive_rate: Option<GovernorConfig>,
}

#[derive(Debug)]
pub struct DynamicConfigs {
    path: Option<PathBuf>,
    /// The static configuration under the dynamic values.
    broker: Arc<BrokerConfig>,
    values: Mutex<BTreeMap<String, String>>,
    current: watch::Sender<Arc<DynamicSettings>>,
}

impl DynamicConfigs {
    /// Loads the persisted values (none if the file does not exist).
    pub fn load(data_dir: &Path, broker: Arc<BrokerConfig>) -> io::Result<Self> {
        let path = data_dir.join(FILE);
        let values = match std::fs::read(&path) {
            Ok(b) => serde_json::from_slice::<BTreeMap<String, String>>(&b)
                .map_err(|e| {
                    io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("{}: {e}", path.display()),
                    )
                })?
                .into_iter()
                .filter(|(k, _)| DYNAMIC_BROKER_CONFIGS.contains(&k.as_str()))
                .collect(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => BTreeMap::new(),
            Err(e) => return Err(e),
        };
        Ok(Self::new(Some(path), broker, values))
    }

    /// Values kept in memory only (tests).
    pub fn in_memory(broker: Arc<BrokerConfig>) -> Self {
        Self::new(None, broker, BTreeMap::new())
    }

    fn new(
        path: Option<PathBuf>,
        broker: Arc<BrokerConfig>,
        values: BTreeMap<String, String>,
    ) -> Self {
        let typed = Arc::new(parse(&broker, &values));
        DynamicConfigs {
            path,
            broker,
            values: Mutex::new(values),
            current: watch::Sender::new(typed),
        }
    }

    /// The settings in force now.
    pub fn settings(&self) -> Arc<DynamicSettings> {
        self.current.borrow().clone()
    }

    /// A receiver that sees every change (`changed().await`).
    pub fn subscribe(&self) -> watch::Receiver<Arc<DynamicSettings>> {
        self.current.subscribe()
    }

    /// The values set at run time, by name.
    pub fn values(&self) -> BTreeMap<String, String> {
        self.values
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Replaces every dynamic value (already validated), persists them and
    /// publishes the typed settings.
    pub fn replace(&self, new: BTreeMap<String, String>) -> io::Result<()> {
        let mut v = self.values.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(path) = &self.path {
            let json = serde_json::to_vec_pretty(&new).map_err(io::Error::other)?;
            write_atomically(path, &json)?;
        }
        self.current
            .send_replace(Arc::new(parse(&self.broker, &new)));
        *v = new;
        Ok(())
    }

    /// Effective value of a broker setting and where it came from.
    pub fn value(&self, name: &str) -> (String, ConfigSource) {
        let values = self.values.lock().unwrap_or_else(|e| e.into_inner());
        value_of(&self.broker, &values, name)
    }
}

fn value_of(
    broker: &BrokerConfig,
    values: &BTreeMap<String, String>,
    name: &str,
) -> (String, ConfigSource) {
    if let Some(v) = values.get(name) {
        return (v.clone(), ConfigSource::DynamicBrokerConfig);
    }
    let source = if broker.is_explicit(name) {
        ConfigSource::StaticBrokerConfig
    } else {
        ConfigSource::DefaultConfig
    };
    (broker.value(name), source)
}

/// The typed settings of `values` over the static configuration. Values
/// were validated when set; one that does not parse keeps the default.
fn parse(broker: &BrokerConfig, values: &BTreeMap<String, String>) -> DynamicSettings {
    let get = |n: &str| value_of(broker, values, n).0;
    let adaptive_rate = get("remote.fetch.adaptive.enable")
        .eq_ignore_ascii_case("true")
        .then(|| {
            let defaults = GovernorConfig::default();
            GovernorConfig {
                min_rate: get("remote.fetch.adaptive.min.bytes.per.second")
                    .parse::<i64>()
                    .map_or(defaults.min_rate, |v| v.max(1) as u64),
                headroom_percent: get("remote.fetch.adaptive.headroom.percent")
                    .parse::<i64>()
                    .map_or(defaults.headroom_percent, |v| v.max(0) as u64),
            }
        });
    DynamicSettings {
        class_policy: ClassPolicy {
            shares: ClassPolicy::parse_shares(&get("remote.fetch.priority.shares"))
                .unwrap_or(ClassPolicy::default().shares),
            bulk_paused: get("remote.fetch.bulk.paused").eq_ignore_ascii_case("true"),
            members: ClassPolicy::parse_members(&get("remote.fetch.priority.groups"))
                .unwrap_or_default(),
        },
        fetch_max_bytes_per_second: get("remote.log.manager.fetch.max.bytes.per.second")
            .parse::<i64>()
            .map_or(0, |v| v.max(0) as u64),
        adaptive_rate,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_prefetch::PriorityClass;

    #[test]
    fn dynamic_values_win_and_persist() {
        let dir = tempfile::tempdir().unwrap();
        let broker = Arc::new(
            BrokerConfig::load(None, &["remote.fetch.priority.groups=a=bulk".into()]).unwrap(),
        );
        let d = DynamicConfigs::load(dir.path(), broker.clone()).unwrap();
        assert_eq!(
            d.settings().class_policy.class_of(Some("a"), ""),
            PriorityClass::Bulk
        );
        let mut changes = d.subscribe();
        d.replace(BTreeMap::from([
            (
                "remote.fetch.priority.groups".to_string(),
                "a=critical".to_string(),
            ),
            ("remote.fetch.bulk.paused".to_string(), "true".to_string()),
        ]))
        .unwrap();
        assert!(changes.has_changed().unwrap());
        assert!(changes.borrow_and_update().class_policy.bulk_paused);
        let d = DynamicConfigs::load(dir.path(), broker).unwrap();
        let p = d.settings().class_policy.clone();
        assert_eq!(p.class_of(Some("a"), ""), PriorityClass::Critical);
        assert!(p.bulk_paused);
        assert_eq!(
            d.value("remote.fetch.bulk.paused").1,
            ConfigSource::DynamicBrokerConfig
        );
    }
}
