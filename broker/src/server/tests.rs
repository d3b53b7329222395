//! Every handler's response encodes at every version we advertise, against
//! a real `LogManager` in a temporary directory. This catches fields set on
//! versions that cannot carry them, which would otherwise close a client's
//! connection at run time.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Encodable, HeaderVersion, StrBytes};
use kafka_protocol::ResponseError;

use super::dispatch::encode_response;
use super::handlers::{self, s};
use super::versions::range;
use super::Broker;
use crate::config::BrokerConfig;
use crate::log::batch::testing;
use crate::log_manager::LogManager;

async fn broker(dir: &std::path::Path) -> Broker {
    let config = Arc::new(
        BrokerConfig::load(
            None,
            &[
                "group.initial.rebalance.delay.ms=0".into(),
                "offsets.topic.num.partitions=3".into(),
                "transaction.state.log.num.partitions=3".into(),
            ],
        )
        .unwrap(),
    );
    let logs = LogManager::open(dir, config.clone(), None, crate::clock::system()).unwrap();
    logs.create_topic("t", 2, 1, BTreeMap::new(), false)
        .unwrap();
    let groups =
        crate::group::GroupCoordinator::open(logs.clone(), &config, false, crate::clock::system())
            .unwrap();
    groups.follow_leadership_now();
    let producer_ids = Arc::new(crate::producer_ids::ProducerIdManager::open(dir, 0).unwrap());
    let txns = crate::txn::TransactionCoordinator::open(
        logs.clone(),
        groups.clone(),
        producer_ids.clone(),
        &config,
        false,
        crate::clock::system(),
    )
    .unwrap();
    txns.follow_leadership_now();
    let cluster = Arc::new(
        crate::cluster::Cluster::join(
            crate::cluster::open_store(None).unwrap(),
            logs.clone(),
            "127.0.0.1".into(),
            9092,
            None,
            Vec::new(),
            0,
            crate::cluster::membership::SessionTimes {
                session_timeout: std::time::Duration::from_secs(9),
                heartbeat_interval: std::time::Duration::from_secs(2),
            },
            {
                // Never shut down during the test.
                let (tx, rx) = tokio::sync::watch::channel(false);
                std::mem::forget(tx);
                rx
            },
        )
        .await
        .unwrap(),
    );
    let replicas = Arc::new(crate::partition::ReplicaManager::new(
        crate::partition::ReplicaManagerParts {
            node_id: 0,
            logs: logs.clone(),
            cluster: cluster.clone(),
            txns: txns.clone(),
            groups: groups.clone(),
            remote: None,
            config: config.clone(),
            verifier: crate::txn::verification::TxnVerifier::new(
                0,
                true,
                std::time::Duration::from_secs(5),
            ),
        },
    ));
    Broker {
        replicas,
        producer_ids,
        txns,
        logs,
        groups,
        config: config.clone(),
        node_id: 0,
        remote: None,
        dynamic: Arc::new(crate::config::dynamic::DynamicConfigs::in_memory(
            config.clone(),
        )),
        advertised_host: "127.0.0.1".into(),
        advertised_port: 9092,
        listeners: vec![super::listeners::Advertised {
            name: "PLAINTEXT".into(),
            host: "127.0.0.1".into(),
            port: 9092,
        }],
        scram: strata_cluster::security_store::SecurityStore::open(
            crate::cluster::open_store(None).unwrap(),
            None,
            Vec::new(),
            tokio::sync::watch::channel(false).1,
        )
        .await
        .unwrap(),
        acls: strata_cluster::acl_store::AclStore::open(
            crate::cluster::open_store(None).unwrap(),
            None,
            tokio::sync::watch::channel(false).1,
        )
        .await
        .unwrap(),
        authorizer: None,
        max_request_bytes: 1 << 20,
        cluster,
    }
}

fn check<R: Encodable + HeaderVersion>(api: ApiKey, v: i16, r: &R) {
    encode_response(1, v, r).unwrap_or_else(|e| panic!("{api:?} v{v}: {e}"));
}

/// The advertised versions the codec crate encodes; those below it are
/// the legacy module's (tests/e2e/test_old_versions.py decodes each).
fn versions(api: ApiKey) -> std::ops::RangeInclusive<i16> {
    let (lo, hi) = range(api).unwrap();
    lo.max(api.valid_versions().min)..=hi
}

#[tokio::test]
async fn every_response_encodes_at_every_advertised_version() {
    let dir = tempfile::tempdir().unwrap();
    let b = broker(dir.path()).await;
    let topic = TopicName(s("t"));

    for v in versions(ApiKey::ApiVersions) {
        check(ApiKey::ApiVersions, v, &handlers::cluster::api_versions(0));
    }
    for v in versions(ApiKey::Metadata) {
        let mut req = MetadataRequest::default();
        let mut t = metadata_request::MetadataRequestTopic::default();
        t.name = Some(topic.clone());
        let mut missing = metadata_request::MetadataRequestTopic::default();
        missing.name = Some(TopicName(s("bad name!")));
        req.topics = Some(vec![t, missing]);
        let caller = crate::server::authz::Caller::unchecked();
        let r = handlers::metadata::handle(req, v, &b, "PLAINTEXT", &caller).await;
        assert_eq!(r.topics[0].partitions.len(), 2);
        check(ApiKey::Metadata, v, &r);
    }
    for v in versions(ApiKey::OffsetForLeaderEpoch) {
        let mut req = OffsetForLeaderEpochRequest::default();
        let mut t = offset_for_leader_epoch_request::OffsetForLeaderTopic::default();
        t.topic = topic.clone();
        let mut p = offset_for_leader_epoch_request::OffsetForLeaderPartition::default();
        p.partition = 0;
        p.current_leader_epoch = -1;
        p.leader_epoch = 0;
        let mut fenced = p.clone();
        fenced.partition = 1;
        fenced.current_leader_epoch = 5;
        t.partitions = vec![p, fenced];
        req.topics = vec![t];
        let r = handlers::leader_epoch::handle(req, v, &b).await;
        let parts = &r.topics[0].partitions;
        assert_eq!((parts[0].error_code, parts[0].leader_epoch), (0, 0));
        assert_eq!(
            parts[1].error_code,
            ResponseError::UnknownLeaderEpoch.code()
        );
        check(ApiKey::OffsetForLeaderEpoch, v, &r);
    }
    for v in versions(ApiKey::Produce) {
        let mut req = ProduceRequest::default();
        req.acks = -1;
        req.timeout_ms = 5_000;
        let mut td = produce_request::TopicProduceData::default();
        td.name = topic.clone();
        let mut pd = produce_request::PartitionProduceData::default();
        pd.index = 0;
        pd.records = Some(testing::batch(2, 8, 1_000));
        let mut bad = produce_request::PartitionProduceData::default();
        bad.index = 7;
        bad.records = Some(Bytes::from_static(b"junk"));
        td.partition_data = vec![pd, bad];
        req.topic_data = vec![td];
        let r = handlers::produce::handle(req, v, &b, &crate::server::authz::Caller::unchecked())
            .await
            .unwrap();
        assert_eq!(r.responses[0].partition_responses[0].error_code, 0);
        assert_ne!(r.responses[0].partition_responses[1].error_code, 0);
        check(ApiKey::Produce, v, &r);
    }
    for v in versions(ApiKey::Fetch) {
        let mut req = FetchRequest::default();
        req.max_bytes = 1 << 20;
        let mut ft = fetch_request::FetchTopic::default();
        ft.topic = topic.clone();
        // From v13 (KIP-516) the topic is named by its id only.
        if v >= 13 {
            ft.topic = TopicName(s(""));
            ft.topic_id = b.logs.topic("t").unwrap().id;
        }
        let mut fp = fetch_request::FetchPartition::default();
        fp.partition_max_bytes = 1 << 20;
        let mut oor = fp.clone();
        oor.partition = 1;
        oor.fetch_offset = 99;
        ft.partitions = vec![fp, oor];
        req.topics = vec![ft];
        let r = handlers::fetch::handle(req, v, &b).await;
        assert!(r.responses[0].partitions[0]
            .records
            .as_ref()
            .is_some_and(|r| !r.is_empty()));
        check(ApiKey::Fetch, v, &r);
    }
    for v in versions(ApiKey::ListOffsets) {
        let mut req = ListOffsetsRequest::default();
        let mut t = list_offsets_request::ListOffsetsTopic::default();
        t.name = topic.clone();
        t.partitions = [-1i64, -2, -3, -4, -5, 0]
            .iter()
            .map(|ts| {
                let mut p = list_offsets_request::ListOffsetsPartition::default();
                p.timestamp = *ts;
                p
            })
            .collect();
        req.topics = vec![t];
        let r =
            handlers::list_offsets::handle(req, v, &b, &crate::server::authz::Caller::unchecked())
                .await;
        check(ApiKey::ListOffsets, v, &r);
    }
    for v in versions(ApiKey::FindCoordinator) {
        let mut req = FindCoordinatorRequest::default();
        req.key = s("g");
        req.coordinator_keys = if v >= 4 { vec![s("g")] } else { vec![] };
        check(
            ApiKey::FindCoordinator,
            v,
            &handlers::cluster::find_coordinator(
                req,
                v,
                &b,
                "PLAINTEXT",
                &crate::server::authz::Caller::unchecked(),
            )
            .await,
        );
    }
    for v in versions(ApiKey::DescribeCluster) {
        let mut req = DescribeClusterRequest::default();
        req.endpoint_type = 1;
        check(
            ApiKey::DescribeCluster,
            v,
            &handlers::cluster::describe_cluster(
                req,
                v,
                &b,
                "PLAINTEXT",
                &crate::server::authz::Caller::unchecked(),
            )
            .await,
        );
    }
    for v in versions(ApiKey::ElectLeaders) {
        let mut req = ElectLeadersRequest::default();
        let mut tp = elect_leaders_request::TopicPartitions::default();
        tp.topic = topic.clone();
        tp.partitions = vec![0, 7];
        req.topic_partitions = Some(vec![tp]);
        let resp = handlers::elect_leaders::handle(req, v, &b).await;
        check(ApiKey::ElectLeaders, v, &resp);
    }
    for v in versions(ApiKey::AlterPartitionReassignments) {
        let mut req = AlterPartitionReassignmentsRequest::default();
        let mut t = alter_partition_reassignments_request::ReassignableTopic::default();
        t.name = topic.clone();
        let mut same = alter_partition_reassignments_request::ReassignablePartition::default();
        same.partition_index = 0;
        same.replicas = Some(vec![BrokerId(b.node_id)]);
        let mut elsewhere = same.clone();
        elsewhere.replicas = Some(vec![BrokerId(b.node_id + 1)]);
        let mut cancel = same.clone();
        cancel.replicas = None;
        let mut unknown = same.clone();
        unknown.partition_index = 7;
        t.partitions = vec![same, elsewhere, cancel, unknown];
        req.topics = vec![t];
        let resp = handlers::reassignments::alter(req, v, &b).await;
        let codes: Vec<i16> = resp.responses[0]
            .partitions
            .iter()
            .map(|p| p.error_code)
            .collect();
        // Same replicas: nothing to do; another broker: not live; cancel:
        // none under way; partition 7: unknown.
        assert_eq!(codes, vec![0, 39, 85, 3]);
        check(ApiKey::AlterPartitionReassignments, v, &resp);
    }
    for v in versions(ApiKey::DeleteRecords) {
        let mut req = DeleteRecordsRequest::default();
        let mut t = delete_records_request::DeleteRecordsTopic::default();
        t.name = topic.clone();
        let part = |partition_index, offset| {
            let mut p = delete_records_request::DeleteRecordsPartition::default();
            p.partition_index = partition_index;
            p.offset = offset;
            p
        };
        let hw = b.logs.log("t", 0).map(|l| l.high_watermark()).unwrap();
        // The high watermark (-1), past it, unknown.
        t.partitions = vec![part(0, -1), part(1, 5), part(7, 0)];
        req.topics = vec![t];
        req.timeout_ms = 1000;
        let resp = handlers::delete_records::handle(req, v, &b).await;
        let got: Vec<(i16, i64)> = resp.topics[0]
            .partitions
            .iter()
            .map(|p| (p.error_code, p.low_watermark))
            .collect();
        assert_eq!(got, vec![(0, hw), (1, -1), (3, -1)]);
        check(ApiKey::DeleteRecords, v, &resp);
    }
    for v in versions(ApiKey::DescribeLogDirs) {
        let mut req = DescribeLogDirsRequest::default();
        let mut t = describe_log_dirs_request::DescribableLogDirTopic::default();
        t.topic = topic.clone();
        t.partitions = vec![1, 7];
        req.topics = Some(vec![t]);
        let resp = handlers::log_dirs::handle(req, v, &b).await;
        assert_eq!(resp.results.len(), 1, "one log directory");
        let parts: Vec<i32> = resp.results[0]
            .topics
            .iter()
            .flat_map(|t| t.partitions.iter().map(|p| p.partition_index))
            .collect();
        assert_eq!(parts, vec![1], "hosted partitions of those asked");
        assert!(resp.results[0].total_bytes > 0 && resp.results[0].usable_bytes >= 0);
        check(ApiKey::DescribeLogDirs, v, &resp);
        let all = handlers::log_dirs::handle(DescribeLogDirsRequest::default(), v, &b).await;
        assert!(
            all.results[0].topics.is_empty(),
            "an empty list asks for nothing"
        );
    }
    for v in versions(ApiKey::ListPartitionReassignments) {
        let resp =
            handlers::reassignments::list(ListPartitionReassignmentsRequest::default(), v, &b)
                .await;
        assert!(resp.topics.is_empty());
        check(ApiKey::ListPartitionReassignments, v, &resp);
    }
    for v in versions(ApiKey::CreateTopics) {
        let mut req = CreateTopicsRequest::default();
        let mut t = create_topics_request::CreatableTopic::default();
        t.name = TopicName(s(format!("c{v}")));
        t.num_partitions = 1;
        t.replication_factor = 3;
        let mut ok = t.clone();
        ok.replication_factor = 1;
        ok.name = TopicName(s(format!("ok{v}")));
        req.topics = vec![t, ok];
        let r = handlers::topics::create_topics(req, v, &b).await;
        assert_eq!(r.topics[0].error_code, 38);
        assert_eq!(r.topics[1].error_code, 0);
        check(ApiKey::CreateTopics, v, &r);
    }
    for v in versions(ApiKey::CreatePartitions) {
        let mut req = CreatePartitionsRequest::default();
        let mut t = create_partitions_request::CreatePartitionsTopic::default();
        t.name = topic.clone();
        t.count = 1;
        req.topics = vec![t];
        let r = handlers::topics::create_partitions(req, v, &b).await;
        assert_eq!(r.results[0].error_code, 37);
        check(ApiKey::CreatePartitions, v, &r);
    }
    for v in versions(ApiKey::DescribeConfigs) {
        let mut req = DescribeConfigsRequest::default();
        req.include_synonyms = true;
        req.include_documentation = true;
        let mut t = describe_configs_request::DescribeConfigsResource::default();
        t.resource_type = 2;
        t.resource_name = StrBytes::from_static_str("t");
        t.configuration_keys = None; // null = all keys, as AdminClient sends
        let mut br = t.clone();
        br.resource_type = 4;
        br.resource_name = StrBytes::from_static_str("0");
        req.resources = vec![t, br];
        let r = handlers::configs::describe_configs(req, v, &b).await;
        assert_eq!(
            r.results[0].configs.len(),
            crate::config::TOPIC_CONFIGS.len()
        );
        check(ApiKey::DescribeConfigs, v, &r);
    }
    for v in versions(ApiKey::AlterConfigs) {
        let mut req = AlterConfigsRequest::default();
        let mut res = alter_configs_request::AlterConfigsResource::default();
        res.resource_type = 2;
        res.resource_name = StrBytes::from_static_str("t");
        let mut c = alter_configs_request::AlterableConfig::default();
        c.name = s("retention.ms");
        c.value = Some(s("nope"));
        res.configs = vec![c];
        req.resources = vec![res];
        let r = handlers::configs::alter_configs(req, v, &b).await;
        assert_eq!(r.responses[0].error_code, 40);
        check(ApiKey::AlterConfigs, v, &r);
    }
    for v in versions(ApiKey::IncrementalAlterConfigs) {
        let mut req = IncrementalAlterConfigsRequest::default();
        let mut res = incremental_alter_configs_request::AlterConfigsResource::default();
        res.resource_type = 2;
        res.resource_name = StrBytes::from_static_str("t");
        let mut c = incremental_alter_configs_request::AlterableConfig::default();
        c.name = s("retention.ms");
        c.value = Some(s("60000"));
        res.configs = vec![c];
        req.resources = vec![res];
        let r = handlers::configs::incremental_alter_configs(req, v, &b).await;
        assert_eq!(r.responses[0].error_code, 0);
        check(ApiKey::IncrementalAlterConfigs, v, &r);
    }
    assert_eq!(b.logs.topic("t").unwrap().config.get().retention_ms, 60_000);
    for v in versions(ApiKey::DeleteTopics) {
        let mut req = DeleteTopicsRequest::default();
        if v >= 6 {
            let mut t = delete_topics_request::DeleteTopicState::default();
            t.name = Some(TopicName(s(format!("ok{v}"))));
            req.topics = vec![t];
        } else {
            req.topic_names = vec![TopicName(s(format!("ok{}", v.max(2))))];
        }
        check(
            ApiKey::DeleteTopics,
            v,
            &handlers::topics::delete_topics(req, v, &b).await,
        );
    }

    for v in versions(ApiKey::JoinGroup) {
        let mut req = JoinGroupRequest::default();
        req.group_id = GroupId(s(format!("g{v}")));
        req.session_timeout_ms = 10_000;
        req.rebalance_timeout_ms = 10_000;
        req.protocol_type = s("consumer");
        let mut p = join_group_request::JoinGroupRequestProtocol::default();
        p.name = s("range");
        req.protocols = vec![p];
        let mut r = handlers::groups::join_group(
            req.clone(),
            v,
            &b,
            "c",
            "/127.0.0.1",
            &crate::server::authz::Caller::unchecked(),
        )
        .await;
        if v >= 4 {
            assert_eq!(r.error_code, 79, "MEMBER_ID_REQUIRED");
            req.member_id = r.member_id.clone();
            r = handlers::groups::join_group(
                req,
                v,
                &b,
                "c",
                "/127.0.0.1",
                &crate::server::authz::Caller::unchecked(),
            )
            .await;
        }
        assert_eq!(r.error_code, 0);
        assert_eq!(r.members.len(), 1);
        check(ApiKey::JoinGroup, v, &r);
        let member = r.member_id.clone();
        let group = GroupId(s(format!("g{v}")));
        for sv in versions(ApiKey::SyncGroup) {
            let mut sr = SyncGroupRequest::default();
            sr.group_id = group.clone();
            sr.member_id = member.clone();
            sr.generation_id = 1;
            let resp = handlers::groups::sync_group(
                sr,
                sv,
                &b,
                &crate::server::authz::Caller::unchecked(),
            )
            .await;
            assert_eq!(resp.error_code, 0);
            check(ApiKey::SyncGroup, sv, &resp);
        }
        for hv in versions(ApiKey::Heartbeat) {
            let mut hr = HeartbeatRequest::default();
            hr.group_id = group.clone();
            hr.member_id = member.clone();
            hr.generation_id = 1;
            let resp =
                handlers::groups::heartbeat(hr, hv, &b, &crate::server::authz::Caller::unchecked())
                    .await;
            assert_eq!(resp.error_code, 0);
            check(ApiKey::Heartbeat, hv, &resp);
        }
    }
    for v in versions(ApiKey::OffsetCommit) {
        let mut req = OffsetCommitRequest::default();
        req.group_id = GroupId(s("simple"));
        req.generation_id_or_member_epoch = -1;
        let mut t = offset_commit_request::OffsetCommitRequestTopic::default();
        t.name = topic.clone();
        let mut p = offset_commit_request::OffsetCommitRequestPartition::default();
        p.committed_offset = 1;
        p.committed_metadata = Some(s("x"));
        t.partitions = vec![p];
        req.topics = vec![t];
        let r =
            handlers::groups::offset_commit(req, v, &b, &crate::server::authz::Caller::unchecked())
                .await;
        assert_eq!(r.topics[0].partitions[0].error_code, 0);
        check(ApiKey::OffsetCommit, v, &r);
    }
    for v in versions(ApiKey::OffsetFetch) {
        let mut req = OffsetFetchRequest::default();
        req.group_id = GroupId(s("simple"));
        req.topics = None;
        let mut g = offset_fetch_request::OffsetFetchRequestGroup::default();
        g.group_id = GroupId(s("simple"));
        g.topics = None;
        req.groups = vec![g];
        let r =
            handlers::groups::offset_fetch(req, v, &b, &crate::server::authz::Caller::unchecked())
                .await;
        let committed = if v >= 8 {
            r.groups[0].topics[0].partitions[0].committed_offset
        } else {
            r.topics[0].partitions[0].committed_offset
        };
        assert_eq!(committed, 1);
        check(ApiKey::OffsetFetch, v, &r);
    }
    for v in versions(ApiKey::DescribeGroups) {
        let mut req = DescribeGroupsRequest::default();
        req.groups = vec![GroupId(s("g5")), GroupId(s("missing"))];
        let r = handlers::groups::describe_groups(
            req,
            v,
            &b,
            &crate::server::authz::Caller::unchecked(),
        )
        .await;
        assert_eq!(r.groups[0].group_state.as_str(), "Stable");
        assert_eq!(r.groups[1].group_state.as_str(), "Dead");
        check(ApiKey::DescribeGroups, v, &r);
    }
    for v in versions(ApiKey::ListGroups) {
        let r = handlers::groups::list_groups(
            ListGroupsRequest::default(),
            v,
            &b,
            &crate::server::authz::Caller::unchecked(),
        )
        .await;
        assert!(r.groups.len() >= 2);
        check(ApiKey::ListGroups, v, &r);
    }
    for v in versions(ApiKey::OffsetDelete) {
        let mut req = OffsetDeleteRequest::default();
        req.group_id = GroupId(s("simple"));
        let mut t = offset_delete_request::OffsetDeleteRequestTopic::default();
        t.name = topic.clone();
        t.partitions = vec![offset_delete_request::OffsetDeleteRequestPartition::default()];
        req.topics = vec![t];
        let r =
            handlers::groups::offset_delete(req, v, &b, &crate::server::authz::Caller::unchecked())
                .await;
        assert_eq!(r.topics[0].partitions[0].error_code, 0);
        check(ApiKey::OffsetDelete, v, &r);
    }
    for v in versions(ApiKey::LeaveGroup) {
        let mut req = LeaveGroupRequest::default();
        req.group_id = GroupId(s("g0"));
        req.member_id = s("nobody");
        let mut m = leave_group_request::MemberIdentity::default();
        m.member_id = s("nobody");
        req.members = vec![m];
        check(
            ApiKey::LeaveGroup,
            v,
            &handlers::groups::leave_group(req, v, &b, &crate::server::authz::Caller::unchecked())
                .await,
        );
    }
    for v in versions(ApiKey::DeleteGroups) {
        let mut req = DeleteGroupsRequest::default();
        req.groups_names = vec![GroupId(s("g1")), GroupId(s(format!("nope{v}")))];
        let r =
            handlers::groups::delete_groups(req, v, &b, &crate::server::authz::Caller::unchecked())
                .await;
        assert_eq!(r.results[0].error_code, 68, "NON_EMPTY_GROUP");
        assert_eq!(r.results[1].error_code, 69, "GROUP_ID_NOT_FOUND");
        check(ApiKey::DeleteGroups, v, &r);
    }
    transaction_responses_encode(&b).await;
}

/// The transaction APIs, for a transactional id with an open transaction.
async fn transaction_responses_encode(b: &Broker) {
    use crate::server::handlers::{producer, txn, txn_admin};
    let mut init = InitProducerIdRequest::default();
    init.transactional_id = Some(TransactionalId(s("tx")));
    init.transaction_timeout_ms = 60_000;
    init.producer_id = ProducerId(-1);
    init.producer_epoch = -1;
    let r =
        producer::init_producer_id(init, 4, b, &crate::server::authz::Caller::unchecked()).await;
    assert_eq!(r.error_code, 0);
    let (pid, epoch) = (r.producer_id, r.producer_epoch);
    let topic = || {
        let mut t = add_partitions_to_txn_request::AddPartitionsToTxnTopic::default();
        t.name = TopicName(s("t"));
        t.partitions = vec![0];
        t
    };
    for v in versions(ApiKey::AddPartitionsToTxn) {
        let mut req = AddPartitionsToTxnRequest::default();
        if v <= 3 {
            req.v3_and_below_transactional_id = TransactionalId(s("tx"));
            req.v3_and_below_producer_id = pid;
            req.v3_and_below_producer_epoch = epoch;
            req.v3_and_below_topics = vec![topic()];
        } else {
            let mut one = add_partitions_to_txn_request::AddPartitionsToTxnTransaction::default();
            one.transactional_id = TransactionalId(s("tx"));
            one.producer_id = pid;
            one.producer_epoch = epoch;
            one.verify_only = true;
            one.topics = vec![topic()];
            req.transactions = vec![one];
        }
        let r = txn::add_partitions_to_txn(req, v, b).await;
        let codes: Vec<i16> = r
            .results_by_topic_v3_and_below
            .iter()
            .chain(
                r.results_by_transaction
                    .iter()
                    .flat_map(|t| t.topic_results.iter()),
            )
            .flat_map(|t| {
                t.results_by_partition
                    .iter()
                    .map(|p| p.partition_error_code)
            })
            .collect();
        assert_eq!(codes, vec![0], "v{v}");
        check(ApiKey::AddPartitionsToTxn, v, &r);
    }
    for v in versions(ApiKey::AddOffsetsToTxn) {
        let mut req = AddOffsetsToTxnRequest::default();
        req.transactional_id = TransactionalId(s("tx"));
        req.producer_id = pid;
        req.producer_epoch = epoch;
        req.group_id = GroupId(s("txg"));
        let r = txn::add_offsets_to_txn(req, v, b).await;
        assert_eq!(r.error_code, 0, "v{v}");
        check(ApiKey::AddOffsetsToTxn, v, &r);
    }
    for v in versions(ApiKey::TxnOffsetCommit) {
        let mut req = TxnOffsetCommitRequest::default();
        req.transactional_id = TransactionalId(s("tx"));
        req.group_id = GroupId(s("txg"));
        req.producer_id = pid;
        req.producer_epoch = epoch;
        req.generation_id = -1;
        let mut t = txn_offset_commit_request::TxnOffsetCommitRequestTopic::default();
        t.name = TopicName(s("t"));
        let mut p = txn_offset_commit_request::TxnOffsetCommitRequestPartition::default();
        p.committed_offset = 1;
        t.partitions = vec![p];
        req.topics = vec![t];
        let r = txn::txn_offset_commit(req, v, b).await;
        assert_eq!(r.topics[0].partitions[0].error_code, 0, "v{v}");
        check(ApiKey::TxnOffsetCommit, v, &r);
    }
    for v in versions(ApiKey::DescribeTransactions) {
        let mut req = DescribeTransactionsRequest::default();
        req.transactional_ids = vec![TransactionalId(s("tx")), TransactionalId(s("none"))];
        let r = txn::describe_transactions(req, v, b).await;
        assert_eq!(
            r.transaction_states[0].transaction_state.as_str(),
            "Ongoing"
        );
        assert_eq!(r.transaction_states[1].error_code, 105);
        check(ApiKey::DescribeTransactions, v, &r);
    }
    for v in versions(ApiKey::ListTransactions) {
        let r = txn::list_transactions(ListTransactionsRequest::default(), v, b).await;
        assert_eq!(r.transaction_states.len(), 1);
        check(ApiKey::ListTransactions, v, &r);
    }
    for v in versions(ApiKey::DescribeProducers) {
        let mut req = DescribeProducersRequest::default();
        let mut t = describe_producers_request::TopicRequest::default();
        t.name = TopicName(s("t"));
        t.partition_indexes = vec![0, 9];
        req.topics = vec![t];
        let r = txn_admin::describe_producers(req, v, b).await;
        assert_eq!(r.topics[0].partitions[1].error_code, 3);
        check(ApiKey::DescribeProducers, v, &r);
    }
    for v in versions(ApiKey::EndTxn) {
        let mut req = EndTxnRequest::default();
        req.transactional_id = TransactionalId(s("tx"));
        req.producer_id = pid;
        req.producer_epoch = epoch;
        req.committed = true;
        let r = txn::end_txn(req, v, b).await;
        // The first commits; the rest are retries of it.
        assert!(
            r.error_code == 0 || r.error_code == 51,
            "v{v}: {}",
            r.error_code
        );
        check(ApiKey::EndTxn, v, &r);
    }
    for v in versions(ApiKey::WriteTxnMarkers) {
        let mut req = WriteTxnMarkersRequest::default();
        let mut m = write_txn_markers_request::WritableTxnMarker::default();
        m.producer_id = ProducerId(12345);
        m.producer_epoch = 0;
        let mut t = write_txn_markers_request::WritableTxnMarkerTopic::default();
        t.name = TopicName(s("t"));
        t.partition_indexes = vec![1, 7];
        m.topics = vec![t];
        req.markers = vec![m];
        let r = txn_admin::write_txn_markers(req, v, b).await;
        let codes: Vec<i16> = r.markers[0].topics[0]
            .partitions
            .iter()
            .map(|p| p.error_code)
            .collect();
        assert_eq!(codes, vec![0, 3], "v{v}");
        check(ApiKey::WriteTxnMarkers, v, &r);
    }
}

/// A v2 batch of `producer_id`/`epoch` from `seq`, transactional.
fn transactional_batch(producer_id: i64, epoch: i16, seq: i32) -> Bytes {
    let mut b = testing::batch(1, 8, 1_000).to_vec();
    b[21..23].copy_from_slice(&0x10i16.to_be_bytes());
    b[43..51].copy_from_slice(&producer_id.to_be_bytes());
    b[51..53].copy_from_slice(&epoch.to_be_bytes());
    b[53..57].copy_from_slice(&seq.to_be_bytes());
    let crc = strata_format::batch::compute_crc(&b);
    b[17..21].copy_from_slice(&crc.to_be_bytes());
    Bytes::from(b)
}

async fn produce_one(b: &Broker, txn: Option<&str>, part: i32, records: Bytes) -> (i16, i64) {
    let mut req = ProduceRequest::default();
    req.acks = 1;
    req.timeout_ms = 5_000;
    req.transactional_id = txn.map(|t| TransactionalId(s(t)));
    let mut td = produce_request::TopicProduceData::default();
    td.name = TopicName(s("t"));
    let mut pd = produce_request::PartitionProduceData::default();
    pd.index = part;
    pd.records = Some(records);
    td.partition_data = vec![pd];
    req.topic_data = vec![td];
    let r = handlers::produce::handle(req, 9, b, &crate::server::authz::Caller::unchecked())
        .await
        .unwrap();
    let p = &r.responses[0].partition_responses[0];
    (p.error_code, p.base_offset)
}

/// KIP-890 part 1: a transactional write to a partition its transaction
/// does not hold, or from a fenced epoch, is refused before it is written.
#[tokio::test]
async fn transactional_produce_is_verified_with_the_coordinator() {
    use crate::server::handlers::{producer, txn};
    let dir = tempfile::tempdir().unwrap();
    let b = broker(dir.path()).await;
    let init = || {
        let mut init = InitProducerIdRequest::default();
        init.transactional_id = Some(TransactionalId(s("verified")));
        init.transaction_timeout_ms = 60_000;
        init.producer_id = ProducerId(-1);
        init.producer_epoch = -1;
        init
    };
    let r =
        producer::init_producer_id(init(), 4, &b, &crate::server::authz::Caller::unchecked()).await;
    assert_eq!(r.error_code, 0);
    let (pid, epoch) = (r.producer_id, r.producer_epoch);
    let end = || b.logs.log("t", 1).unwrap().log_end_offset();

    // Never added to the transaction.
    let (code, _) = produce_one(
        &b,
        Some("verified"),
        1,
        transactional_batch(pid.0, epoch, 0),
    )
    .await;
    assert_eq!(code, ResponseError::InvalidTxnState.code());
    // Named twice in one request: neither copy gets past the refusal.
    let mut req = ProduceRequest::default();
    req.acks = 1;
    req.timeout_ms = 5_000;
    req.transactional_id = Some(TransactionalId(s("verified")));
    let mut td = produce_request::TopicProduceData::default();
    td.name = TopicName(s("t"));
    td.partition_data = (0..2)
        .map(|_| {
            let mut pd = produce_request::PartitionProduceData::default();
            pd.index = 1;
            pd.records = Some(transactional_batch(pid.0, epoch, 0));
            pd
        })
        .collect();
    req.topic_data = vec![td];
    let r = handlers::produce::handle(req, 9, &b, &crate::server::authz::Caller::unchecked())
        .await
        .unwrap();
    let codes: Vec<i16> = r.responses[0]
        .partition_responses
        .iter()
        .map(|p| p.error_code)
        .collect();
    assert_eq!(codes, vec![ResponseError::InvalidTxnState.code(); 2]);
    // Transactional records need the transactional id.
    let (code, _) = produce_one(&b, None, 1, transactional_batch(pid.0, epoch, 0)).await;
    assert_eq!(
        code,
        ResponseError::TransactionalIdAuthorizationFailed.code()
    );
    assert_eq!(end(), 0, "nothing refused is written");

    let mut add = AddPartitionsToTxnRequest::default();
    add.v3_and_below_transactional_id = TransactionalId(s("verified"));
    add.v3_and_below_producer_id = pid;
    add.v3_and_below_producer_epoch = epoch;
    let mut t = add_partitions_to_txn_request::AddPartitionsToTxnTopic::default();
    t.name = TopicName(s("t"));
    t.partitions = vec![1];
    add.v3_and_below_topics = vec![t];
    let r = txn::add_partitions_to_txn(add, 3, &b).await;
    assert_eq!(
        r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code,
        0
    );
    assert_eq!(
        produce_one(
            &b,
            Some("verified"),
            1,
            transactional_batch(pid.0, epoch, 0)
        )
        .await,
        (0, 0)
    );
    // The transaction is open here: no verification, the next batch follows.
    assert_eq!(
        produce_one(
            &b,
            Some("verified"),
            1,
            transactional_batch(pid.0, epoch, 1)
        )
        .await,
        (0, 1)
    );

    // A new producer of the id fences the old epoch (the open transaction
    // is aborted with a marker at the new epoch; until then the client is
    // told CONCURRENT_TRANSACTIONS and retries).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let r = loop {
        let r =
            producer::init_producer_id(init(), 4, &b, &crate::server::authz::Caller::unchecked())
                .await;
        if r.error_code != ResponseError::ConcurrentTransactions.code() {
            break r;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the abort never completed"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    };
    assert_eq!(r.error_code, 0);
    assert!(r.producer_epoch > epoch);
    assert_eq!(b.logs.log("t", 1).unwrap().ongoing_transactions(), 0);
    let before = end();
    let (code, _) = produce_one(
        &b,
        Some("verified"),
        1,
        transactional_batch(pid.0, epoch, 2),
    )
    .await;
    assert_eq!(code, ResponseError::InvalidProducerEpoch.code());
    assert_eq!(end(), before);
    // Partition 0 never saw the producer: only the coordinator knows the
    // old epoch is fenced.
    let (code, _) = produce_one(
        &b,
        Some("verified"),
        0,
        transactional_batch(pid.0, epoch, 0),
    )
    .await;
    assert_eq!(code, ResponseError::InvalidProducerEpoch.code());
    assert_eq!(b.logs.log("t", 0).unwrap().log_end_offset(), 0);
}
