//! DescribeUserScramCredentials and AlterUserScramCredentials: the
//! cluster's SCRAM users (`strata_cluster::security_store`), with Kafka's
//! per-user results and messages (`strata_security::scram::store`). With
//! an authorizer, describing needs DESCRIBE on the cluster and altering
//! ALTER, as in Kafka.

use kafka_protocol::messages::alter_user_scram_credentials_response::AlterUserScramCredentialsResult;
use kafka_protocol::messages::describe_user_scram_credentials_response::{
    CredentialInfo, DescribeUserScramCredentialsResult,
};
use kafka_protocol::messages::{
    AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse,
    DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse,
};
use kafka_protocol::ResponseError;
use strata_security::scram::store::{Deletion, Upsertion};

use super::s;
use crate::server::authz::Caller;
use crate::server::Broker;
use strata_security::acl::AclOperation;

const NOT_AUTHORIZED: &str = "Cluster authorization failed.";

pub async fn describe(
    r: DescribeUserScramCredentialsRequest,
    _version: i16,
    b: &Broker,
    caller: &Caller,
) -> DescribeUserScramCredentialsResponse {
    let users: Option<Vec<String>> = r
        .users
        .map(|u| u.into_iter().map(|u| u.name.to_string()).collect());
    let mut resp = DescribeUserScramCredentialsResponse::default();
    if !caller.may_on_cluster(AclOperation::Describe) {
        // Kafka: the top-level error, and one result per user asked
        // about, without its name.
        let denied = ResponseError::ClusterAuthorizationFailed.code();
        resp.error_code = denied;
        resp.error_message = Some(s(NOT_AUTHORIZED));
        resp.results = users
            .unwrap_or_default()
            .iter()
            .map(|_| {
                let mut out = DescribeUserScramCredentialsResult::default();
                out.error_code = denied;
                out.error_message = Some(s(NOT_AUTHORIZED));
                out
            })
            .collect();
        return resp;
    }
    resp.results = b
        .scram
        .describe(users.as_deref())
        .into_iter()
        .map(|d| {
            let mut out = DescribeUserScramCredentialsResult::default();
            out.user = s(d.result.user);
            out.error_code = d.result.error_code;
            out.error_message = d.result.error_message.map(s);
            out.credential_infos = d
                .credentials
                .into_iter()
                .map(|(mechanism, iterations)| {
                    let mut c = CredentialInfo::default();
                    c.mechanism = mechanism;
                    c.iterations = iterations;
                    c
                })
                .collect();
            out
        })
        .collect();
    resp
}

pub async fn alter(
    r: AlterUserScramCredentialsRequest,
    _version: i16,
    b: &Broker,
    caller: &Caller,
) -> AlterUserScramCredentialsResponse {
    let deletions: Vec<Deletion> = r
        .deletions
        .iter()
        .map(|d| Deletion {
            user: d.name.to_string(),
            mechanism: d.mechanism,
        })
        .collect();
    let upsertions: Vec<Upsertion> = r
        .upsertions
        .iter()
        .map(|u| Upsertion {
            user: u.name.to_string(),
            mechanism: u.mechanism,
            iterations: u.iterations,
            salt: u.salt.to_vec(),
            salted_password: u.salted_password.to_vec(),
        })
        .collect();
    let mut resp = AlterUserScramCredentialsResponse::default();
    let every_user =
        |error: ResponseError, message: String| -> Vec<AlterUserScramCredentialsResult> {
            let mut names: Vec<String> = deletions.iter().map(|d| d.user.clone()).collect();
            names.extend(upsertions.iter().map(|u| u.user.clone()));
            names.sort();
            names.dedup();
            names
                .into_iter()
                .map(|user| {
                    let mut out = AlterUserScramCredentialsResult::default();
                    out.user = s(user);
                    out.error_code = error.code();
                    out.error_message = Some(s(message.clone()));
                    out
                })
                .collect()
        };
    if !caller.may_on_cluster(AclOperation::Alter) {
        resp.results = every_user(
            ResponseError::ClusterAuthorizationFailed,
            NOT_AUTHORIZED.to_string(),
        );
        return resp;
    }
    resp.results = match b.scram.alter(&deletions, &upsertions).await {
        Ok(results) => results
            .into_iter()
            .map(|u| {
                let mut out = AlterUserScramCredentialsResult::default();
                out.user = s(u.user);
                out.error_code = u.error_code;
                out.error_message = u.error_message.map(s);
                out
            })
            .collect(),
        Err(e) => {
            // The store could not take the change: every user named fails.
            tracing::warn!(error = %e, "AlterUserScramCredentials not stored");
            every_user(
                ResponseError::UnknownServerError,
                format!("the credentials were not stored: {e}"),
            )
        }
    };
    resp
}
