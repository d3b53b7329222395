//! `strata-security`: who a Kafka client is and what it may do.
//!
//! - `principal`: Kafka's principal (`User:alice`), as ACLs name it.
//! - `acl`: resource patterns, access control entries, bindings and the
//!   filters DescribeAcls and DeleteAcls match with, with Kafka's wire
//!   codes and the rules a new binding must meet.
//! - `authorizer`: Kafka's `StandardAuthorizer` decision over a set of
//!   bindings (DENY wins, implied operations, prefixed patterns, the
//!   literal wildcard, `super.users`, `allow.everyone.if.no.acl.found`),
//!   and the KIP-430 authorized-operations bit fields.
//! - `dn`: a certificate's subject as Java prints it (what the mapping
//!   rules match).
//! - `jaas`: Kafka's `sasl.jaas.config` value (one login module).
//! - `listeners`: named listeners and their security protocols, as
//!   Kafka's `listeners` and related settings define them.
//! - `oauthbearer`: OAUTHBEARER's client message and JWT validation
//!   against a JSON Web Key Set (KIP-768's broker-side checks).
//! - `plain`: SASL/PLAIN against a `PlainLoginModule` line's users.
//! - `principal_mapping`: `ssl.principal.mapping.rules`, a certificate's
//!   DN to a principal name.
//! - `quota`: client quotas: Kafka's eight levels, who shares a rate,
//!   rates over windows and the throttle time (time handed in).
//! - `sasl`: a connection's SASL authentication, Kafka's
//!   `SaslServerAuthenticator` states without I/O (handshake v0 and v1,
//!   SaslAuthenticate, KIP-368 sessions and re-authentication).
//! - `scram`: SCRAM-SHA-256/512 credentials and the server side of an
//!   exchange (RFC 5802), bytes in and bytes out.
//!
//! The crate does no I/O and knows no other workspace crate: where the
//! bindings are stored (the cluster store) and which check each Kafka API
//! makes (the server) are above it.

pub mod acl;
pub mod authorizer;
pub mod dn;
pub mod jaas;
pub mod listeners;
pub mod oauthbearer;
pub mod plain;
pub mod principal;
pub mod principal_mapping;
pub mod quota;
pub mod sasl;
pub mod scram;
