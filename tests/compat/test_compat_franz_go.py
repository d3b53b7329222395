"""franz-go's own integration tests (github.com/twmb/franz-go/pkg/kgo, the
version pinned by tests/compat/franz-go/go.mod / go.sum) and our kadm admin
smoke test (tests/compat/franz-go/kadm_smoke_test.go) against a Strata
broker. README and findings: tests/compat/franz-go/README.md.

    .venv/bin/pytest tests/compat/test_compat_franz_go.py -q              # CI size (~1.5 min; the first build ~3 min more)
    STRATA_FRANZ_RECORDS=500000 .venv/bin/pytest tests/compat/test_compat_franz_go.py -q   # franz-go's own size
    .venv/bin/pytest tests/compat/test_compat_franz_go.py -q -k kadm      # the kadm smoke test only

Each suite is built with the Go toolchain (`go test -c`, which downloads the
pinned modules from the module proxy on first use) and run once, through
`go tool test2json`, against a fresh broker of its own; every top-level kgo
test (a fixed list: a test that disappears from the pinned version fails)
and every kadm step is then its own pytest test. A failure shows that
test's go output (subtests included) and the broker's log tail. The only
skips are the ones franz-go makes itself for features Strata does not
advertise or the suite is not given (EXPECTED_SKIPS, README "Findings"); any
other skip fails.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
FRANZ = HERE / "franz-go"
E2E = HERE.parent / "e2e"
if str(E2E) not in sys.path:
    sys.path.insert(0, str(E2E))

from strata_broker import BrokerError, check_binary  # noqa: E402

_spec = importlib.util.spec_from_file_location("strata_franz_run", FRANZ / "run.py")
fr = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = fr
_spec.loader.exec_module(fr)

RECORDS = fr.CI_RECORDS   # STRATA_FRANZ_RECORDS overrides; franz-go's default is 500000
# Wall-clock limit of one suite run (the binary's own -test.timeout is 30 s less).
RUN_LIMIT = float(os.environ.get("STRATA_FRANZ_TIMEOUT", "900"))
BUILD_LIMIT = 900   # first build downloads franz-go and compiles it (~2 min on 2 cores)

# Every top-level test of pkg/kgo in franz-go v1.22.3 (`kgo.test -test.list '^(Test|Fuzz)'`;
# a Fuzz target runs its seed corpus only).
KGO_TESTS = """
    TestRetiredBrokerConnectionClassifiedAsDead TestRetiredBrokerDoesNotMaskResponseError
    TestUnexpectedFirstReadStillWarns TestAuditApiVersionsResetRetryClosesConns TestIssue1377
    TestIssue1505 TestAuditWriteTxnMarkersPreservesCoordinatorEpoch
    TestStoreCachedMetaTopicIDChange TestOptValuesTxnIDAndShare TestOptValuesCoversEveryOption
    TestStoreCachedMetaEviction TestMaxVersions TestParseBrokerAddr TestParseBrokerAddrErrors
    TestUnknownGroupOffsetFetchPinned TestProcessHooks TestProcessHooksErrors
    TestHookPollStartRecognized TestPing TestIssue1034 TestSCRAMAuth TestSCRAMAuthBadCredentials
    TestOAuthAuth TestShareGroup TestCompressionCodecLZ4WithSpecifiedLevel TestNewCompressor
    TestGzipCompressionLevels TestCompressDecompress TestDecompressBombBounded TestDecompressPools
    TestDecompressZstdHugeClaim Test_xerialDecode TestConfigHeartbeatExceedsSessionTimeout
    TestConfigRejectsEmptyTopicNames TestConfigRejectsEmptyIDs TestConfigRejectsInt32MillisOverflow
    TestSignalSubscriptionChange848 TestShouldNotify848Restart TestIssue325
    TestConsumeTopicRetrieval TestConsumeTopicRetrieval_Many TestConsumeRegex
    TestConsumeRegexShareSkipsInternal Test848RegexBrokerResolves TestIssue337
    TestDirectPartitionPurge TestIssue434 TestAddRemovePartitions TestPauseIssue489
    TestPauseIssueOct2023 TestIssue523 TestIssue648 TestIssue810 TestIssue865
    TestIssueFetchLargerThanBrokerMaxReadBytes TestPooling TestGroupSimple TestHookPollStart
    TestPollWaitStateNoUnderflow TestLookbackMilli TestConsumeMaxDecompressBatchBytes
    TestDeleteStaleCoordinatorsByNodeNoRace TestUnexpectedEOFRetriable TestIsDecompressErr
    TestFetchManagerQuitDrainsPendingFetches Test_stickyAdjustCooperative
    TestRangeBalancerRackAware TestRangeBalancerNoRacks TestRangeBalancerRackNoMatchingRacks
    TestRangeBalancerRackMixedMemberRacks TestRangeBalancerRackShortRackSlice
    TestRangeBalancerRackOddPartitions TestRangeBalancerRackMultiTopicDisjoint
    TestNewConsumerBalancerIssue493 TestAdjustCooperativeStaleClaimIsTransfer
    TestNewConsumerBalancerMalformedMetadataErrors TestNewConsumerBalancerDuplicateMemberIDs
    TestBuildPartitionRacks TestNeedRackMeta TestConsumerBalancerInfo TestBalanceInfoTopics
    TestBalanceInfoBrokers TestBalanceGroupSetsBalanceInfo TestGroupETL
    TestLegacyMessageSetInnerOffsets TestEmptyBatchClaimingRecords TestMetricRateRollNumsRate
    TestMetricTimeRollNumsAvg TestAppendOtelAttributesSkipsUnsupported
    TestValidatePushIntervalMillis TestAppendSumIsMonotonic TestLeastBackupPicksLeast
    TestAuditUniformBytesAdaptiveShrinkStalePartition TestMurmur2KafkaVectors
    TestSaramaHasherPinnedPlacement TestProduceRequestNullBatchEncoding TestClient_Produce
    TestIssue769 TestIssueProduceBrokerTooOldFailsRecords
    TestIssueProduceSyncManualPartitionNegativeDoesNotPanic TestIssue831 TestPromisedRecAppendTo
    TestRecBatchAppendTo TestMessageSetAppendTo TestClient_ProduceLargeMessages
    TestRackAwarePartitioning TestAuditFullPromiseRingBoundAndConvergence
    TestAuditFlushNotStarvedByPromiseChain TestAuditPurgeVsProduceUnknownTopicNoOrphan
    TestAuditFailedRecordSentinels TestAuditFlushWokenByBlockedProduceCancel
    TestEachTopicPreservesTopicID TestNewRecordAttrs TestReadRawRecordsOverflowingLength
    TestReadRawRecordsDirect TestRecordFormatter TestRecordFormatterUnpack TestRecordReader
    TestRecordReaderRegexpMismatch TestRecordReaderRegexpReadError TestRecordReaderJson
    TestNewRecordReaderRejectsBadLayouts TestRecordReaderReuse
    TestRecordReaderOverflowingSizeNoPanic TestRecordReaderTruncatedLastField TestReReaderReadRune
    TestRing TestRingMaxLen TestRingMaxLenDie TestFindCoordinatorSharderDoesNotMutateRequest
    TestAuditShareLeaveWaitsForInflightMigration TestAuditShareMoveCollapseMarksCursorUnusable
    TestShareGroupETL TestShareGroupAckOnClose TestShareGroupOffsetsAdmin TestBuildAckRanges
    TestDrainPurgedAcksLiveCursor TestMergeBacklog TestMergeBacklogMaxDecompressed TestRenumber
    TestMergeBacklogDiscard TestMergeStagesOnFreshSink TestMergeSpanSwept
    TestMergeUnsupportedWaitsForInflight TestMergeBacklogHeadTooBig
    TestAuditTxnRecheckRewindUnmarksAddedToTxn TestUndoStagedBatchesWithInflight
    TestUndoStagedBatchesAfterFailAllRecords TestCreateReqSkipsPendingSeqResetWithInflight
    TestAuditShareMetadataMigrationWaitsForLeave TestDelTopicsWithCoexistingPartitionPauses
    TestKip951MoveAfterPurgeReAddNoPanic TestTxnEtl
    FuzzReadRawRecordsDirect FuzzRecordRoundTrip FuzzRecordReader

""".split()

_NO_848 = ("Strata does not implement KIP-848 (ConsumerGroupHeartbeat, key 68, not advertised); "
           "franz-go skips it itself")
_NO_SHARE = ("Strata does not implement share groups (KIP-932: ShareFetch/ShareAcknowledge v2, "
             "keys 78/79, not advertised); franz-go skips it itself")
_NO_SASL = "Strata has no SASL listener; the test needs KGO_TEST_SCRAM(_SEEDS) / KGO_TEST_OAUTH_SEEDS"

# Top-level tests franz-go skips on Strata, with why (README "Findings").
# A listed test that passes is fine (the feature arrived); an unlisted skip fails.
EXPECTED_SKIPS = {
    "TestSCRAMAuth": _NO_SASL,
    "TestSCRAMAuthBadCredentials": _NO_SASL,
    "TestOAuthAuth": _NO_SASL,
    "Test848RegexBrokerResolves": _NO_848,
    "TestShareGroup": _NO_SHARE,
    "TestShareGroupETL": _NO_SHARE,
    "TestShareGroupAckOnClose": _NO_SHARE,
    "TestShareGroupOffsetsAdmin": _NO_SHARE,
    "TestConsumeRegexShareSkipsInternal": _NO_SHARE,
    "TestIssueProduceBrokerTooOldFailsRecords": (
        "Strata takes Produce v0-v2 (as Kafka 3.x does; Kafka 4.0 dropped them): the test checks "
        "the client's errBrokerTooOld against a broker that refuses v2, so franz-go skips it"),
}

# TestKadmSmoke's steps, in order (kadm_smoke_test.go).
KADM_STEPS = [
    "describe_cluster", "create_topics", "list_topics", "describe_configs", "alter_configs",
    "produce", "list_offsets", "list_max_timestamp_offsets", "groups_live",
    "commit_fetch_offsets", "create_partitions", "delete_records", "transactions", "delete_topics",
]


@dataclass
class SuiteRun:
    run: "fr.Run"
    broker_log: Path
    broker_state: str

    def broker_tail(self, max_chars: int = 20000) -> str:
        try:
            text = self.broker_log.read_text(errors="replace")
        except OSError:
            return "(no broker log)"
        return text if len(text) <= max_chars else "...[truncated]...\n" + text[-max_chars:]


def _run_suite(suite: str, base: Path) -> SuiteRun:
    try:
        check_binary()
    except BrokerError as e:
        pytest.fail(str(e), pytrace=False)
    try:
        binary = fr.build(suite, base / "bin", timeout=BUILD_LIMIT)
    except Exception as e:  # a missing toolchain or a failed build is a failure, never a skip
        pytest.fail(f"building franz-go's {suite} tests failed: {e}", pytrace=False)
    try:
        broker = fr.start_broker(base, suite)
    except (BrokerError, OSError) as e:
        pytest.fail(f"could not start broker for {suite}: {e}", pytrace=False)
    try:
        run = fr.run_tests(binary, suite, broker.bootstrap, base / f"{suite}.jsonl", RECORDS,
                           timeout=RUN_LIMIT)
    finally:
        alive = broker.alive()
        broker.close()
        state = "running at the end" if alive else f"DIED (exit code {broker.last_returncode})"
    print(fr.summarize(run))
    return SuiteRun(run, broker.log_path, state)


@pytest.fixture(scope="module")
def kgo_run(tmp_path_factory) -> SuiteRun:
    return _run_suite("kgo", tmp_path_factory.mktemp("franz-kgo"))


@pytest.fixture(scope="module")
def kadm_run(tmp_path_factory) -> SuiteRun:
    return _run_suite("kadm", tmp_path_factory.mktemp("franz-kadm"))


def _output(run: "fr.Run", name: str) -> str:
    parts = [run.results[name].text()] if name in run.results else []
    parts += [r.text(8000) for _, r in sorted(run.sub(name).items())]
    return "".join(parts)


def _check(sr: SuiteRun, name: str, expected_skip: str | None = None):
    run = sr.run
    r = run.results.get(name)
    where = (f"{run.suite} run: exit {run.rc}, {run.wall:.0f}s{' TIMED OUT' if run.timed_out else ''}; "
             f"broker {sr.broker_state}; events {run.log}, broker log {sr.broker_log}")
    if r is None:
        pytest.fail(f"{name}: franz-go never reported this test (gone from the pinned version, or the run "
                    f"was cut short)\n{where}\n--- go output tail ---\n{run.tail()}\n"
                    f"--- broker log tail ---\n{sr.broker_tail()}", pytrace=False)
    if r.action == "pass":
        return
    if r.action == "skip":
        if expected_skip:
            pytest.skip(f"{expected_skip} [franz-go: {r.skip_reason()}]")
        pytest.fail(f"{name}: skipped by franz-go, which this suite does not expect: {r.skip_reason()}\n"
                    f"{where}\n--- go output ---\n{_output(run, name)}", pytrace=False)
    failed_subs = [k for k, s in run.sub(name).items() if s.action in ("fail", "run")]
    what = "FAILED" if r.action == "fail" else "never finished"
    pytest.fail(f"{name} {what} ({r.elapsed:.1f}s){'; subtests: ' + ', '.join(sorted(failed_subs)) if failed_subs else ''}\n"
                f"{where}\n--- go output ---\n{_output(run, name)}\n"
                f"--- broker log tail ({sr.broker_log}) ---\n{sr.broker_tail()}", pytrace=False)


@pytest.mark.timeout(BUILD_LIMIT + RUN_LIMIT + 120)
@pytest.mark.parametrize("name", KGO_TESTS)
def test_kgo(kgo_run, name):
    _check(kgo_run, name, EXPECTED_SKIPS.get(name))


@pytest.mark.timeout(BUILD_LIMIT + RUN_LIMIT + 120)
def test_kgo_no_unlisted_tests(kgo_run):
    """A test franz-go ran that KGO_TESTS lacks (a version bump): list it."""
    extra = sorted(set(kgo_run.run.top()) - set(KGO_TESTS))
    assert not extra, f"franz-go ran tests missing from KGO_TESTS: {extra}"


@pytest.mark.timeout(BUILD_LIMIT + RUN_LIMIT + 120)
def test_kgo_broker_survived(kgo_run):
    assert kgo_run.broker_state.startswith("running"), (
        f"broker {kgo_run.broker_state}\n{kgo_run.broker_tail()}")


@pytest.mark.timeout(BUILD_LIMIT + RUN_LIMIT + 120)
@pytest.mark.parametrize("step", KADM_STEPS)
def test_kadm(kadm_run, step):
    _check(kadm_run, f"TestKadmSmoke/{step}")


@pytest.mark.timeout(BUILD_LIMIT + RUN_LIMIT + 120)
def test_kadm_all_steps_listed(kadm_run):
    ran = {k.split("/", 1)[1] for k in kadm_run.run.sub("TestKadmSmoke") if k.count("/") == 1}
    assert ran == set(KADM_STEPS), f"kadm steps run {sorted(ran)} != KADM_STEPS {KADM_STEPS}"
