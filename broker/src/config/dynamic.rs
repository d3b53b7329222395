//! Broker settings changeable at run time (`DYNAMIC_BROKER_CONFIGS`, set
//! with IncrementalAlterConfigs / AlterConfigs on the broker resource),
//! persisted in `<data-dir>/dynamic-broker-configs.json` and applied again
//! at start-up over the static configuration. This module stores values;
//! applying them is the caller's job.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use strata_prefetch::governor::GovernorConfig;
use strata_prefetch::ClassPolicy;

use super::{BrokerConfig, ConfigSource, DYNAMIC_BROKER_CONFIGS};
use crate::durable_file::write_atomically;

const FILE: &str = "dynamic-broker-configs.json";

#[derive(Debug)]
pub struct DynamicConfigs {
    path: Option<PathBuf>,
    values: Mutex<BTreeMap<String, String>>,
}

impl DynamicConfigs {
    /// Loads the persisted values (none if the file does not exist).
    pub fn load(data_dir: &Path) -> io::Result<Self> {
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
        Ok(DynamicConfigs {
            path: Some(path),
            values: Mutex::new(values),
        })
    }

    /// Values kept in memory only (tests).
    pub fn in_memory() -> Self {
        DynamicConfigs {
            path: None,
            values: Mutex::new(BTreeMap::new()),
        }
    }

    pub fn values(&self) -> BTreeMap<String, String> {
        self.values
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Replaces every dynamic value (already validated) and persists them.
    pub fn replace(&self, new: BTreeMap<String, String>) -> io::Result<()> {
        let mut v = self.values.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(path) = &self.path {
            let json = serde_json::to_vec_pretty(&new).map_err(io::Error::other)?;
            write_atomically(path, &json)?;
        }
        *v = new;
        Ok(())
    }

    /// Effective value of a broker setting and where it came from.
    pub fn value(&self, broker: &BrokerConfig, name: &str) -> (String, ConfigSource) {
        if let Some(v) = self
            .values
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(name)
        {
            return (v.clone(), ConfigSource::DynamicBrokerConfig);
        }
        let source = if broker.is_explicit(name) {
            ConfigSource::StaticBrokerConfig
        } else {
            ConfigSource::DefaultConfig
        };
        (broker.value(name), source)
    }

    /// `remote.log.manager.fetch.max.bytes.per.second` as configured now.
    pub fn fetch_quota_rate(&self, broker: &BrokerConfig) -> u64 {
        self.value(broker, "remote.log.manager.fetch.max.bytes.per.second")
            .0
            .parse::<i64>()
            .map_or(0, |v| v.max(0) as u64)
    }

    /// The adaptive history rate's settings as configured now; `None`
    /// when it is off.
    pub fn adaptive_rate(&self, broker: &BrokerConfig) -> Option<GovernorConfig> {
        let get = |n: &str| self.value(broker, n).0;
        if !get("remote.fetch.adaptive.enable").eq_ignore_ascii_case("true") {
            return None;
        }
        let defaults = GovernorConfig::default();
        Some(GovernorConfig {
            min_rate: get("remote.fetch.adaptive.min.bytes.per.second")
                .parse::<i64>()
                .map_or(defaults.min_rate, |v| v.max(1) as u64),
            headroom_percent: get("remote.fetch.adaptive.headroom.percent")
                .parse::<i64>()
                .map_or(defaults.headroom_percent, |v| v.max(0) as u64),
        })
    }

    /// The historical read path's priority classes as configured now.
    pub fn class_policy(&self, broker: &BrokerConfig) -> ClassPolicy {
        let get = |n: &str| self.value(broker, n).0;
        ClassPolicy {
            shares: ClassPolicy::parse_shares(&get("remote.fetch.priority.shares"))
                .unwrap_or(ClassPolicy::default().shares),
            bulk_paused: get("remote.fetch.bulk.paused").eq_ignore_ascii_case("true"),
            members: ClassPolicy::parse_members(&get("remote.fetch.priority.groups"))
                .unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_prefetch::PriorityClass;

    #[test]
    fn dynamic_values_win_and_persist() {
        let dir = tempfile::tempdir().unwrap();
        let broker =
            BrokerConfig::load(None, &["remote.fetch.priority.groups=a=bulk".into()]).unwrap();
        let d = DynamicConfigs::load(dir.path()).unwrap();
        assert_eq!(
            d.class_policy(&broker).class_of(Some("a"), ""),
            PriorityClass::Bulk
        );
        d.replace(BTreeMap::from([
            (
                "remote.fetch.priority.groups".to_string(),
                "a=critical".to_string(),
            ),
            ("remote.fetch.bulk.paused".to_string(), "true".to_string()),
        ]))
        .unwrap();
        let d = DynamicConfigs::load(dir.path()).unwrap();
        let p = d.class_policy(&broker);
        assert_eq!(p.class_of(Some("a"), ""), PriorityClass::Critical);
        assert!(p.bulk_paused);
        assert_eq!(
            d.value(&broker, "remote.fetch.bulk.paused").1,
            ConfigSource::DynamicBrokerConfig
        );
    }
}
