//! The settings reference, written from the config tables (`defs.rs`,
//! `cluster_defs.rs`) so the documentation cannot drift from the code:
//! `strata config reference` prints it, and `docs/operations.md` holds it
//! between markers that a unit test compares with this output.
//!
//! Text only; it reads the tables and nothing else.

use super::defs::{ConfigDef, ConfigType, Validator, DYNAMIC_BROKER_CONFIGS, TOPIC_CONFIGS};

pub(crate) const BEGIN: &str =
    "<!-- BEGIN GENERATED: strata config reference (do not edit; see docs/operations.md) -->";
pub const END: &str = "<!-- END GENERATED -->";

fn kind(k: ConfigType) -> &'static str {
    match k {
        ConfigType::Boolean => "boolean",
        ConfigType::String => "string",
        ConfigType::Int => "int",
        ConfigType::Long => "long",
        ConfigType::Double => "double",
        ConfigType::List => "list",
        ConfigType::Password => "password",
    }
}

fn valid(v: Validator) -> String {
    match v {
        Validator::LongAtLeast(n) => format!("≥ {n}"),
        Validator::IntAtLeast(n) => format!("≥ {n}"),
        Validator::IntBetween(a, b) => format!("{a} … {b}"),
        Validator::DoubleBetween(a, b) => format!("{a} … {b}"),
        Validator::Bool => "true, false".into(),
        Validator::OneOf(vs) => vs.join(", "),
        Validator::ListOf(vs) => format!("list of: {}", vs.join(", ")),
        Validator::Custom(_) => "see meaning".into(),
    }
}

/// A cell: pipes escaped, long numbers readable.
fn cell(s: &str) -> String {
    let s = match s {
        "9223372036854775807" => "Long.MAX_VALUE",
        "2147483647" => "Integer.MAX_VALUE",
        "" => "(empty)",
        other => other,
    };
    s.replace('|', "\\|").replace('\n', " ")
}

fn table(out: &mut String, defs: &[&ConfigDef], topic: bool) {
    if topic {
        out.push_str("| setting | type | default | valid | broker default from | meaning |\n");
        out.push_str("| --- | --- | --- | --- | --- | --- |\n");
    } else {
        out.push_str("| setting | type | default | valid | dynamic | meaning |\n");
        out.push_str("| --- | --- | --- | --- | --- | --- |\n");
    }
    for d in defs {
        let fourth = if topic {
            d.broker_synonym
                .map(|s| format!("`{s}`"))
                .unwrap_or_else(|| "–".into())
        } else if DYNAMIC_BROKER_CONFIGS.contains(&d.name) {
            "yes".into()
        } else {
            "–".into()
        };
        out.push_str(&format!(
            "| `{}` | {} | `{}` | {} | {} | {} |\n",
            d.name,
            kind(d.kind),
            cell(d.default),
            cell(&valid(d.validator)),
            fourth,
            cell(d.doc)
        ));
    }
}

/// The reference in Markdown, between [`BEGIN`] and [`END`].
pub fn markdown() -> String {
    let mut out = String::new();
    out.push_str(BEGIN);
    out.push_str("\n\n### Topic settings\n\n");
    out.push_str(
        "Set per topic (CreateTopics, IncrementalAlterConfigs, `strata topic create --config`, `strata topic alter --set`); without an override a topic takes the broker setting named in the fifth column.\n\n",
    );
    let mut topics: Vec<&ConfigDef> = TOPIC_CONFIGS.iter().collect();
    topics.sort_by_key(|d| d.name);
    table(&mut out, &topics, true);
    out.push_str("\n### Broker settings\n\n");
    out.push_str(
        "Set at start (`--set NAME=VALUE`, `--config FILE.toml`); the dynamic ones also at run time (IncrementalAlterConfigs on the broker resource, the admin API), persisted in the data directory.\n\n",
    );
    let mut brokers: Vec<&ConfigDef> = super::broker_defs().collect();
    brokers.sort_by_key(|d| d.name);
    brokers.dedup_by_key(|d| d.name);
    table(&mut out, &brokers, false);
    out.push('\n');
    out.push_str(END);
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/operations.md holds exactly what the tables say. To update it
    /// after changing a setting: `STRATA_BLESS=1 cargo test -p
    /// strata-broker operations_doc`.
    #[test]
    fn operations_doc_holds_the_generated_reference() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/operations.md");
        let doc = std::fs::read_to_string(&path).expect("docs/operations.md");
        let (Some(b), Some(e)) = (doc.find(BEGIN), doc.find(END)) else {
            panic!("docs/operations.md has no generated section ({BEGIN} ... {END})");
        };
        let current = &doc[b..e + END.len() + 1];
        let want = markdown();
        if current != want {
            if std::env::var("STRATA_BLESS").is_ok() {
                let updated = format!("{}{}{}", &doc[..b], want, &doc[e + END.len() + 1..]);
                std::fs::write(&path, updated).expect("write docs/operations.md");
                return;
            }
            panic!(
                "docs/operations.md's settings reference is out of date with the config tables: run `STRATA_BLESS=1 cargo test -p strata-common operations_doc`"
            );
        }
        for d in TOPIC_CONFIGS.iter().chain(super::super::broker_defs()) {
            assert!(
                want.contains(&format!("| `{}` |", d.name)),
                "{} missing",
                d.name
            );
        }
    }
}
