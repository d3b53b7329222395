//! A metric family read at scrape time (a gauge, a counter or a latency
//! histogram, with its samples), and how it is handed to the Prometheus
//! client library's encoder. The broker's state (logs, tiering, the
//! historical read path, coordinators, the cluster) is read into these on
//! each scrape; the library writes the text format, its escaping and its
//! `# HELP` / `# TYPE` lines.
//!
//! Pure data and encoding: it never reads broker state itself. Each
//! component reads its own state into families (`MetricSource`), and the
//! node registers the components `/metrics` reads at each scrape.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, NoLabelSet};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;

/// A sample's labels, in order: `[("topic", "orders"), ("partition", "3")]`.
pub type Labels = Vec<(&'static str, String)>;

/// What `/metrics` reads at each scrape: a component's families, read
/// from its own state. The node registers each component once; a scrape
/// asks every registered source.
pub trait MetricSource: Send + Sync {
    fn families(&self) -> Vec<Family>;
}

/// A family's name, kind and help, as the components' tables write them.
pub type Def = (&'static str, Kind, &'static str);

impl Family {
    /// An empty family from its definition.
    pub fn of(&(name, kind, help): &Def) -> Self {
        Family::new(kind, name, help)
    }

    /// A family of one unlabelled sample, from its definition.
    pub fn one_of(&(name, kind, help): &Def, value: f64) -> Self {
        Family::one(kind, name, help, value)
    }
}

/// A counter's or gauge's value from an atomic.
pub fn value_of(a: &std::sync::atomic::AtomicU64) -> f64 {
    a.load(std::sync::atomic::Ordering::Relaxed) as f64
}

/// The labels of a partition's samples.
pub fn partition_labels(topic: &str, partition: i32) -> Labels {
    vec![
        ("topic", topic.to_string()),
        ("partition", partition.to_string()),
    ]
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Gauge,
    /// Named with its `_total` suffix here, as it is scraped.
    Counter,
    Histogram,
}

/// One histogram's buckets: (upper bound in seconds, samples in that bucket
/// alone, not cumulative), the sum of the samples in seconds, their count.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HistogramSample {
    pub buckets: Vec<(f64, u64)>,
    pub sum: f64,
    pub count: u64,
}

impl HistogramSample {
    /// From cumulative (upper bound, count at or below it) pairs.
    pub fn from_cumulative(cumulative: &[(f64, u64)], sum: f64, count: u64) -> Self {
        let mut last = 0;
        let buckets = cumulative
            .iter()
            .map(|(le, c)| {
                let own = c.saturating_sub(last);
                last = last.max(*c);
                (*le, own)
            })
            .collect();
        HistogramSample {
            buckets,
            sum,
            count,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Family {
    pub name: &'static str,
    pub help: &'static str,
    pub kind: Kind,
    pub samples: Vec<(Labels, f64)>,
    pub histograms: Vec<(Labels, HistogramSample)>,
}

impl Family {
    pub fn new(kind: Kind, name: &'static str, help: &'static str) -> Self {
        Family {
            name,
            help,
            kind,
            samples: Vec::new(),
            histograms: Vec::new(),
        }
    }

    pub fn gauge(name: &'static str, help: &'static str) -> Self {
        Self::new(Kind::Gauge, name, help)
    }

    pub fn counter(name: &'static str, help: &'static str) -> Self {
        Self::new(Kind::Counter, name, help)
    }

    /// A family of one unlabelled sample.
    pub fn one(kind: Kind, name: &'static str, help: &'static str, value: f64) -> Self {
        let mut f = Self::new(kind, name, help);
        f.samples.push((Vec::new(), value));
        f
    }

    pub fn push(&mut self, labels: Labels, value: f64) {
        self.samples.push((labels, value));
    }

    /// A histogram family of one unlabelled histogram.
    pub fn histogram(name: &'static str, help: &'static str, h: HistogramSample) -> Self {
        let mut f = Self::new(Kind::Histogram, name, help);
        f.histograms.push((Vec::new(), h));
        f
    }

    fn encode(&self, encoder: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let (metric_type, name) = match self.kind {
            Kind::Gauge => (MetricType::Gauge, self.name),
            // The library appends `_total` to a counter's name.
            Kind::Counter => (
                MetricType::Counter,
                self.name.strip_suffix("_total").unwrap_or(self.name),
            ),
            Kind::Histogram => (MetricType::Histogram, self.name),
        };
        let mut metric = encoder.encode_descriptor(name, self.help, None, metric_type)?;
        for (labels, value) in &self.samples {
            let sample = metric.encode_family(labels)?;
            match self.kind {
                Kind::Gauge => ConstGauge::new(*value).encode(sample)?,
                Kind::Counter => ConstCounter::new(value.max(0.0)).encode(sample)?,
                // A histogram's plain samples would not be valid: none are made.
                Kind::Histogram => {}
            }
        }
        if self.kind == Kind::Histogram {
            for (labels, h) in &self.histograms {
                let mut sample = metric.encode_family(labels)?;
                sample.encode_histogram::<NoLabelSet>(h.sum, h.count, &h.buckets, None)?;
            }
        }
        Ok(())
    }
}

/// The families read at one scrape, as the library's collector.
#[derive(Debug)]
pub struct Scraped(pub Vec<Family>);

impl Collector for Scraped {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        for f in &self.0 {
            f.encode(&mut encoder)?;
        }
        Ok(())
    }
}
