//! `strata-tiering`: the tiering manager (Kafka's `RemoteLogManager`). It
//! will upload sealed segments with their indexes to object storage, record
//! them in the catalog, and enforce both the hot window
//! (`local.retention.ms` / `local.retention.bytes`) and total retention
//! (`retention.ms` / `retention.bytes`).
//!
//! It must never delete a local segment the catalog has not recorded. It
//! uses `catalog` only. No code yet.
