// kadm admin smoke test against a running broker (KGO_SEEDS, default
// 127.0.0.1:9092). One top-level test, TestKadmSmoke, whose subtests run in
// order on shared state (two topics, a few groups); every kadm call asserts
// its result. A subtest whose prerequisite failed fails with "prerequisite
// ... failed" rather than running on missing state.
//
// Run alone: KGO_SEEDS=127.0.0.1:9092 go test -run TestKadmSmoke -v .
package franzcompat

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	perPartition = 10 // records produced to each of the first three partitions
	startParts   = 3
	addParts     = 2
)

func seeds() []string {
	s := os.Getenv("KGO_SEEDS")
	if s == "" {
		s = "127.0.0.1:9092"
	}
	return strings.Split(s, ",")
}

type smoke struct {
	adm      *kadm.Client
	cl       *kgo.Client
	t1, t2   string // t1: 3 partitions + records; t2: 1 partition, configs
	group    string // a live consumer group
	cgroup   string // a group with admin-committed offsets only
	failed   map[string]bool
	prodTime time.Time // before the first record was produced
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// step runs fn as a subtest after checking that every step in needs passed.
func (s *smoke) step(t *testing.T, name string, needs []string, fn func(t *testing.T)) {
	t.Run(name, func(t *testing.T) {
		for _, n := range needs {
			if s.failed[n] {
				s.failed[name] = true
				t.Fatalf("prerequisite %q failed", n)
			}
		}
		defer func() {
			if t.Failed() {
				s.failed[name] = true
			}
		}()
		fn(t)
	})
}

func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// eventually polls cond until it returns nil or the deadline passes.
func eventually(t *testing.T, what string, d time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still not true after %v: %v", what, d, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func configValue(rc kadm.ResourceConfig, key string) (kadm.Config, bool) {
	for _, c := range rc.Configs {
		if c.Key == key {
			return c, true
		}
	}
	return kadm.Config{}, false
}

func TestKadmSmoke(t *testing.T) {
	// kadm answers metadata from the client's cache while it is younger than
	// MetadataMinAge (5 s by default): a topic list taken before CreateTopics
	// would be reused. 10 ms is kgo's smallest.
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds()...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MetadataMinAge(10*time.Millisecond))
	must(t, "kgo.NewClient", err)
	defer cl.Close()
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(15000)
	sfx := strconv.FormatInt(time.Now().UnixNano(), 36)
	s := &smoke{
		adm: adm, cl: cl,
		t1: "kadm-smoke-a-" + sfx, t2: "kadm-smoke-b-" + sfx,
		group: "kadm-smoke-live-" + sfx, cgroup: "kadm-smoke-commit-" + sfx,
		failed: map[string]bool{},
	}
	var brokerID int32 = -1
	// Every later step needs the broker id, not the rest of describe_cluster.
	needID := func(t *testing.T) {
		t.Helper()
		if brokerID < 0 {
			t.Fatalf("prerequisite: describe_cluster could not learn the broker id")
		}
	}

	s.step(t, "describe_cluster", nil, func(t *testing.T) {
		ctx := ctxT(t)
		m, err := adm.BrokerMetadata(ctx)
		must(t, "BrokerMetadata", err)
		if len(m.Brokers) != 1 {
			t.Fatalf("brokers: got %d (%v), want 1", len(m.Brokers), m.Brokers)
		}
		b := m.Brokers[0]
		brokerID = b.NodeID
		host, port, _ := net.SplitHostPort(seeds()[0])
		if b.Host != host || strconv.Itoa(int(b.Port)) != port {
			t.Errorf("broker advertises %s:%d, want the seed %s", b.Host, b.Port, seeds()[0])
		}
		if m.Cluster == "" {
			t.Errorf("empty cluster id")
		}
		if m.Controller != b.NodeID {
			t.Errorf("controller %d, want the only broker %d", m.Controller, b.NodeID)
		}
		bs, err := adm.ListBrokers(ctx)
		must(t, "ListBrokers", err)
		if len(bs) != 1 || bs[0].NodeID != brokerID {
			t.Errorf("ListBrokers: %v", bs)
		}
		vs, err := adm.ApiVersions(ctx)
		must(t, "ApiVersions", err)
		v, ok := vs[brokerID]
		if !ok || v.Err != nil {
			t.Fatalf("ApiVersions for %d: %v %v", brokerID, ok, v.Err)
		}
		for _, key := range []int16{0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15, 16, 19, 20, 32, 37, 42, 44, 47} {
			if _, _, ok := v.KeyVersions(key); !ok {
				t.Errorf("ApiVersions lacks key %d (%s)", key, kmsg.NameForKey(key))
			}
		}
		fc := adm.FindGroupCoordinators(ctx, s.group)
		if r := fc[s.group]; r.Err != nil || r.NodeID != brokerID {
			t.Errorf("FindGroupCoordinators: %+v", r)
		}
	})

	s.step(t, "create_topics", nil, func(t *testing.T) {
		ctx := ctxT(t)
		needID(t)
		rs, err := adm.CreateTopics(ctx, startParts, 1, map[string]*string{"retention.ms": kadm.StringPtr("3600000")}, s.t1)
		must(t, "CreateTopics t1", err)
		r := rs[s.t1]
		must(t, "CreateTopics t1 result", r.Err)
		if r.NumPartitions != startParts || r.ReplicationFactor != 1 {
			t.Errorf("CreateTopics t1: partitions %d rf %d, want %d 1", r.NumPartitions, r.ReplicationFactor, startParts)
		}
		if c, ok := r.Configs["retention.ms"]; !ok || c.MaybeValue() != "3600000" {
			t.Errorf("CreateTopics t1: retention.ms in response = %+v (present %v), want 3600000", c, ok)
		}
		r2, err := adm.CreateTopic(ctx, 1, -1, nil, s.t2) // -1: broker default replication factor
		must(t, "CreateTopic t2", err)
		must(t, "CreateTopic t2 result", r2.Err)
		if r2.NumPartitions != 1 {
			t.Errorf("CreateTopic t2: %d partitions, want 1", r2.NumPartitions)
		}
		again, err := adm.CreateTopic(ctx, 1, 1, nil, s.t2)
		if err == nil {
			err = again.Err
		}
		if !errors.Is(err, kerr.TopicAlreadyExists) {
			t.Errorf("creating t2 again: %v, want TOPIC_ALREADY_EXISTS", err)
		}
		bad, err := adm.ValidateCreateTopics(ctx, 1, 1, map[string]*string{"cleanup.policy": kadm.StringPtr("nonsense")}, s.t2+"-invalid")
		if err == nil {
			err = bad[s.t2+"-invalid"].Err
		}
		if !errors.Is(err, kerr.InvalidConfig) {
			t.Errorf("ValidateCreateTopics cleanup.policy=nonsense: %v, want INVALID_CONFIG", err)
		}
	})

	s.step(t, "list_topics", []string{"create_topics"}, func(t *testing.T) {
		ctx := ctxT(t)
		needID(t)
		// kadm answers ListTopics from kgo's metadata cache
		// (RequestCachedMetadata, MetadataMinAge: 5 s), which the
		// describe_cluster step may have filled before the topics existed
		// (CI saw one empty listing 3 ms after CreateTopics answered; the
		// broker had both). Kafka's Admin contract also lets a new topic
		// take a moment to reach every broker. So the listing is polled.
		eventually(t, "ListTopics shows both created topics", 10*time.Second, func() error {
			all, err := adm.ListTopics(ctx)
			if err != nil {
				return err
			}
			if !all.Has(s.t1) || !all.Has(s.t2) {
				return fmt.Errorf("ListTopics lacks %s or %s: %v", s.t1, s.t2, all.Names())
			}
			return nil
		})
		td, err := adm.ListTopics(ctx, s.t1)
		must(t, "ListTopics t1", err)
		d := td[s.t1]
		must(t, "ListTopics t1 detail", d.Err)
		if d.ID == (kadm.TopicID{}) {
			t.Errorf("t1 has a zero topic id")
		}
		if d.IsInternal {
			t.Errorf("t1 reported internal")
		}
		if len(d.Partitions) != startParts {
			t.Fatalf("t1: %d partitions, want %d", len(d.Partitions), startParts)
		}
		for _, p := range d.Partitions.Sorted() {
			if p.Err != nil || p.Leader != brokerID || !slices.Equal(p.Replicas, []int32{brokerID}) || !slices.Equal(p.ISR, []int32{brokerID}) {
				t.Errorf("t1 partition %+v, want leader/replicas/isr = %d", p, brokerID)
			}
		}
		if rf := d.Partitions.NumReplicas(); rf != 1 {
			t.Errorf("t1 replication factor %d, want 1", rf)
		}
		missing, err := adm.ListTopics(ctx, s.t1+"-missing")
		must(t, "ListTopics missing", err)
		if !errors.Is(missing[s.t1+"-missing"].Err, kerr.UnknownTopicOrPartition) {
			t.Errorf("ListTopics of a missing topic: %v, want UNKNOWN_TOPIC_OR_PARTITION", missing[s.t1+"-missing"].Err)
		}
	})

	s.step(t, "describe_configs", []string{"create_topics"}, func(t *testing.T) {
		ctx := ctxT(t)
		needID(t)
		rcs, err := adm.DescribeTopicConfigs(ctx, s.t1, s.t2)
		must(t, "DescribeTopicConfigs", err)
		rc, err := rcs.On(s.t1, nil)
		must(t, "DescribeTopicConfigs t1", err)
		must(t, "DescribeTopicConfigs t1 err", rc.Err)
		c, ok := configValue(rc, "retention.ms")
		if !ok || c.MaybeValue() != "3600000" || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
			t.Errorf("t1 retention.ms = %q source %v (present %v), want 3600000 DYNAMIC_TOPIC_CONFIG", c.MaybeValue(), c.Source, ok)
		}
		c, ok = configValue(rc, "cleanup.policy")
		if !ok || c.MaybeValue() != "delete" || c.Source == kmsg.ConfigSourceDynamicTopicConfig {
			t.Errorf("t1 cleanup.policy = %q source %v (present %v), want the default delete", c.MaybeValue(), c.Source, ok)
		}
		rc2, err := rcs.On(s.t2, nil)
		must(t, "DescribeTopicConfigs t2", err)
		if c, ok := configValue(rc2, "retention.ms"); !ok || c.Source == kmsg.ConfigSourceDynamicTopicConfig {
			t.Errorf("t2 retention.ms = %+v (present %v), want a non-topic default", c, ok)
		}
		bcs, err := adm.DescribeBrokerConfigs(ctx, brokerID)
		must(t, "DescribeBrokerConfigs", err)
		if len(bcs) != 1 || bcs[0].Err != nil || len(bcs[0].Configs) == 0 {
			t.Errorf("DescribeBrokerConfigs(%d): %+v", brokerID, bcs)
		}
		missing, err := adm.DescribeTopicConfigs(ctx, s.t1+"-missing")
		if err == nil && len(missing) == 1 {
			err = missing[0].Err
		}
		if !errors.Is(err, kerr.UnknownTopicOrPartition) {
			t.Errorf("DescribeTopicConfigs of a missing topic: %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
		}
	})

	s.step(t, "alter_configs", []string{"create_topics"}, func(t *testing.T) {
		ctx := ctxT(t)
		needID(t)
		rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
			{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("7200000")},
			{Op: kadm.SetConfig, Name: "max.message.bytes", Value: kadm.StringPtr("2000000")},
		}, s.t2)
		must(t, "AlterTopicConfigs set", err)
		r, err := rs.On(s.t2, nil)
		must(t, "AlterTopicConfigs set t2", err)
		must(t, "AlterTopicConfigs set t2 result", r.Err)
		rcs, err := adm.DescribeTopicConfigs(ctx, s.t2)
		must(t, "DescribeTopicConfigs t2", err)
		for k, want := range map[string]string{"retention.ms": "7200000", "max.message.bytes": "2000000"} {
			if c, ok := configValue(rcs[0], k); !ok || c.MaybeValue() != want || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
				t.Errorf("t2 %s after set = %q source %v, want %s DYNAMIC_TOPIC_CONFIG", k, c.MaybeValue(), c.Source, want)
			}
		}
		rs, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "retention.ms"}}, s.t2)
		must(t, "AlterTopicConfigs delete", err)
		must(t, "AlterTopicConfigs delete t2 result", rs[0].Err)
		rcs, err = adm.DescribeTopicConfigs(ctx, s.t2)
		must(t, "DescribeTopicConfigs t2 after delete", err)
		if c, ok := configValue(rcs[0], "retention.ms"); !ok || c.Source == kmsg.ConfigSourceDynamicTopicConfig || c.MaybeValue() == "7200000" {
			t.Errorf("t2 retention.ms after delete = %q source %v, want the default back", c.MaybeValue(), c.Source)
		}
		if c, _ := configValue(rcs[0], "max.message.bytes"); c.MaybeValue() != "2000000" {
			t.Errorf("t2 max.message.bytes changed by deleting retention.ms: %q", c.MaybeValue())
		}
		// Invalid value / unknown name: Kafka answers INVALID_CONFIG and changes nothing.
		for _, ac := range []kadm.AlterConfig{
			{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("not-a-number")},
			{Op: kadm.SetConfig, Name: "no.such.topic.config", Value: kadm.StringPtr("1")},
		} {
			rs, err = adm.ValidateAlterTopicConfigs(ctx, []kadm.AlterConfig{ac}, s.t2)
			if err == nil {
				err = rs[0].Err
			}
			if !errors.Is(err, kerr.InvalidConfig) {
				t.Errorf("ValidateAlterTopicConfigs %s=%s: %v, want INVALID_CONFIG", ac.Name, *ac.Value, err)
			}
		}
		// validate_only must not apply.
		rs, err = adm.ValidateAlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("1234567")}}, s.t2)
		if err == nil {
			err = rs[0].Err
		}
		must(t, "ValidateAlterTopicConfigs valid", err)
		rcs, err = adm.DescribeTopicConfigs(ctx, s.t2)
		must(t, "DescribeTopicConfigs after validate-only", err)
		if c, _ := configValue(rcs[0], "retention.ms"); c.MaybeValue() == "1234567" {
			t.Errorf("validate-only alter was applied")
		}
	})

	s.step(t, "produce", []string{"create_topics"}, func(t *testing.T) {
		ctx := ctxT(t)
		needID(t)
		s.prodTime = time.Now().Add(-time.Second)
		var recs []*kgo.Record
		for p := int32(0); p < startParts; p++ {
			for i := 0; i < perPartition; i++ {
				recs = append(recs, &kgo.Record{Topic: s.t1, Partition: p, Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("p%d-%d", p, i))})
			}
		}
		must(t, "ProduceSync", cl.ProduceSync(ctx, recs...).FirstErr())
	})

	s.step(t, "list_offsets", []string{"produce"}, func(t *testing.T) {
		ctx := ctxT(t)
		needID(t)
		start, err := adm.ListStartOffsets(ctx, s.t1)
		must(t, "ListStartOffsets", err)
		must(t, "ListStartOffsets result", start.Error())
		end, err := adm.ListEndOffsets(ctx, s.t1)
		must(t, "ListEndOffsets", err)
		must(t, "ListEndOffsets result", end.Error())
		after, err := adm.ListOffsetsAfterMilli(ctx, s.prodTime.UnixMilli(), s.t1)
		must(t, "ListOffsetsAfterMilli", err)
		future, err := adm.ListOffsetsAfterMilli(ctx, time.Now().Add(time.Hour).UnixMilli(), s.t1)
		must(t, "ListOffsetsAfterMilli future", err)
		for p := int32(0); p < startParts; p++ {
			if o, _ := start.Lookup(s.t1, p); o.Offset != 0 {
				t.Errorf("start offset p%d = %d, want 0", p, o.Offset)
			}
			if o, _ := end.Lookup(s.t1, p); o.Offset != perPartition {
				t.Errorf("end offset p%d = %d, want %d", p, o.Offset, perPartition)
			}
			if o, _ := after.Lookup(s.t1, p); o.Err != nil || o.Offset != 0 {
				t.Errorf("offset after produce time p%d = %+v, want 0", p, o)
			}
			// Kafka: no record at or after the timestamp -> the log end offset (kadm maps -1 to the end).
			if o, _ := future.Lookup(s.t1, p); o.Err != nil || o.Offset != perPartition {
				t.Errorf("offset after now+1h p%d = %+v, want %d", p, o, perPartition)
			}
		}
	})

	s.step(t, "list_max_timestamp_offsets", []string{"produce"}, func(t *testing.T) {
		ctx := ctxT(t)
		needID(t)
		maxts, err := adm.ListMaxTimestampOffsets(ctx, s.t1)
		must(t, "ListMaxTimestampOffsets", err)
		for p := int32(0); p < startParts; p++ {
			o, _ := maxts.Lookup(s.t1, p)
			// All records of a partition went in one batch with increasing or equal
			// timestamps; the max-timestamp record is one of them.
			if o.Err != nil || o.Offset < 0 || o.Offset >= perPartition || o.Timestamp < s.prodTime.UnixMilli() {
				t.Errorf("max timestamp offset p%d = %+v", p, o)
			}
		}
	})

	s.step(t, "groups_live", []string{"produce"}, func(t *testing.T) {
		ctx := ctxT(t)
		needID(t)
		consumer, err := kgo.NewClient(kgo.SeedBrokers(seeds()...), kgo.ConsumerGroup(s.group), kgo.ConsumeTopics(s.t1),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
		must(t, "consumer NewClient", err)
		defer consumer.Close()
		got := 0
		for got < startParts*perPartition && ctx.Err() == nil {
			fs := consumer.PollFetches(ctx)
			for _, e := range fs.Errors() {
				if !errors.Is(e.Err, context.DeadlineExceeded) {
					t.Fatalf("fetch error %s/%d: %v", e.Topic, e.Partition, e.Err)
				}
			}
			got += fs.NumRecords()
		}
		if got != startParts*perPartition {
			t.Fatalf("consumed %d records, want %d", got, startParts*perPartition)
		}
		must(t, "CommitUncommittedOffsets", consumer.CommitUncommittedOffsets(ctx))

		lg, err := adm.ListGroups(ctx)
		must(t, "ListGroups", err)
		if g, ok := lg[s.group]; !ok || g.State != "Stable" || g.ProtocolType != "consumer" || g.Coordinator != brokerID {
			t.Errorf("ListGroups entry for the live group: %+v (present %v), want Stable consumer on %d", g, ok, brokerID)
		}
		stable, err := adm.ListGroups(ctx, "Stable")
		must(t, "ListGroups Stable", err)
		if _, ok := stable[s.group]; !ok {
			t.Errorf("ListGroups(Stable) lacks the live group: %v", stable.Groups())
		}
		empty, err := adm.ListGroups(ctx, "Empty")
		must(t, "ListGroups Empty", err)
		if _, ok := empty[s.group]; ok {
			t.Errorf("ListGroups(Empty) lists the live group")
		}
		dg, err := adm.DescribeGroups(ctx, s.group)
		must(t, "DescribeGroups", err)
		d := dg[s.group]
		must(t, "DescribeGroups result", d.Err)
		if d.State != "Stable" || d.ProtocolType != "consumer" || d.Protocol == "" || len(d.Members) != 1 || d.Coordinator.NodeID != brokerID {
			t.Errorf("DescribeGroups live: state %q type %q protocol %q members %d coordinator %d", d.State, d.ProtocolType, d.Protocol, len(d.Members), d.Coordinator.NodeID)
		}
		if ps := d.AssignedPartitions(); len(ps[s.t1]) != startParts {
			t.Errorf("DescribeGroups assigned partitions: %v, want all %d of t1", ps, startParts)
		}
		lags, err := adm.Lag(ctx, s.group)
		must(t, "Lag", err)
		l := lags[s.group]
		must(t, "Lag result", l.Error())
		if total := l.Lag.Total(); total != 0 {
			t.Errorf("Lag of the caught-up live group: %d, want 0 (%v)", total, l.Lag.Sorted())
		}
		consumer.Close() // LeaveGroup
		eventually(t, "group Empty after the member left", 10*time.Second, func() error {
			dg, err := adm.DescribeGroups(ctx, s.group)
			if err != nil {
				return err
			}
			if d := dg[s.group]; d.State != "Empty" || len(d.Members) != 0 {
				return fmt.Errorf("state %q, %d members", d.State, len(d.Members))
			}
			return nil
		})
		fo, err := adm.FetchOffsets(ctx, s.group)
		must(t, "FetchOffsets after leave", err)
		for p := int32(0); p < startParts; p++ {
			if o, ok := fo.Lookup(s.t1, p); !ok || o.Err != nil || o.At != perPartition {
				t.Errorf("committed offset p%d = %+v (present %v), want %d", p, o, ok, perPartition)
			}
		}
	})

	s.step(t, "commit_fetch_offsets", []string{"produce"}, func(t *testing.T) {
		ctx := ctxT(t)
		needID(t)
		os := kadm.Offsets{}
		for p := int32(0); p < startParts; p++ {
			os.Add(kadm.Offset{Topic: s.t1, Partition: p, At: int64(5 + p), LeaderEpoch: -1, Metadata: "m" + strconv.Itoa(int(p))})
		}
		rs, err := adm.CommitOffsets(ctx, s.cgroup, os)
		must(t, "CommitOffsets", err)
		must(t, "CommitOffsets result", rs.Error())
		fo, err := adm.FetchOffsets(ctx, s.cgroup)
		must(t, "FetchOffsets", err)
		must(t, "FetchOffsets result", fo.Error())
		for p := int32(0); p < startParts; p++ {
			o, ok := fo.Lookup(s.t1, p)
			if !ok || o.At != int64(5+p) || o.Metadata != "m"+strconv.Itoa(int(p)) {
				t.Errorf("fetched offset p%d = %+v (present %v), want %d / m%d", p, o, ok, 5+p, p)
			}
		}
		ft, err := adm.FetchOffsetsForTopics(ctx, s.cgroup, s.t1, s.t2)
		must(t, "FetchOffsetsForTopics", err)
		if o, ok := ft.Lookup(s.t2, 0); !ok || o.At != -1 {
			t.Errorf("FetchOffsetsForTopics: uncommitted t2/0 = %+v (present %v), want At -1", o, ok)
		}
		lags, err := adm.Lag(ctx, s.cgroup)
		must(t, "Lag", err)
		l := lags[s.cgroup]
		must(t, "Lag result", l.Error())
		if l.State != "Empty" {
			t.Errorf("admin-only group state %q, want Empty", l.State)
		}
		for p := int32(0); p < startParts; p++ {
			if ml, ok := l.Lag.Lookup(s.t1, p); !ok || ml.Lag != int64(perPartition-5-int(p)) {
				t.Errorf("lag p%d = %+v, want %d", p, ml, perPartition-5-int(p))
			}
		}
		lg, err := adm.ListGroups(ctx)
		must(t, "ListGroups", err)
		if g, ok := lg[s.cgroup]; !ok || g.State != "Empty" {
			t.Errorf("ListGroups entry for the admin-committed group: %+v (present %v), want Empty", g, ok)
		}
		dr, err := adm.DeleteOffsets(ctx, s.cgroup, kadm.TopicsSet{s.t1: {0: {}}})
		must(t, "DeleteOffsets", err)
		must(t, "DeleteOffsets result", dr.Error())
		fo, err = adm.FetchOffsets(ctx, s.cgroup)
		must(t, "FetchOffsets after DeleteOffsets", err)
		if o, ok := fo.Lookup(s.t1, 0); ok && o.At >= 0 {
			t.Errorf("t1/0 still committed after DeleteOffsets: %+v", o)
		}
		if o, ok := fo.Lookup(s.t1, 1); !ok || o.At != 6 {
			t.Errorf("t1/1 after deleting t1/0: %+v (present %v), want 6", o, ok)
		}
		dg, err := adm.DeleteGroups(ctx, s.cgroup)
		must(t, "DeleteGroups", err)
		must(t, "DeleteGroups result", dg.Error())
		lg, err = adm.ListGroups(ctx)
		must(t, "ListGroups after delete", err)
		if _, ok := lg[s.cgroup]; ok {
			t.Errorf("deleted group still listed")
		}
		dg, err = adm.DeleteGroups(ctx, s.cgroup)
		if err == nil {
			err = dg.Error()
		}
		if !errors.Is(err, kerr.GroupIDNotFound) {
			t.Errorf("deleting the group again: %v, want GROUP_ID_NOT_FOUND", err)
		}
	})

	s.step(t, "create_partitions", []string{"produce"}, func(t *testing.T) {
		ctx := ctxT(t)
		needID(t)
		rs, err := adm.CreatePartitions(ctx, addParts, s.t1)
		must(t, "CreatePartitions", err)
		must(t, "CreatePartitions result", rs.Error())
		eventually(t, "t1 has the new partitions", 10*time.Second, func() error {
			td, err := adm.ListTopics(ctx, s.t1)
			if err != nil {
				return err
			}
			if n := len(td[s.t1].Partitions); n != startParts+addParts {
				return fmt.Errorf("%d partitions", n)
			}
			return nil
		})
		end, err := adm.ListEndOffsets(ctx, s.t1)
		must(t, "ListEndOffsets", err)
		for p := int32(startParts); p < startParts+addParts; p++ {
			if o, ok := end.Lookup(s.t1, p); !ok || o.Err != nil || o.Offset != 0 {
				t.Errorf("new partition %d end offset %+v", p, o)
			}
		}
		if o, _ := end.Lookup(s.t1, 0); o.Offset != perPartition {
			t.Errorf("old partition 0 end offset %d after adding partitions, want %d", o.Offset, perPartition)
		}
		rs, err = adm.UpdatePartitions(ctx, 2, s.t1)
		if err == nil {
			err = rs.Error()
		}
		if !errors.Is(err, kerr.InvalidPartitions) {
			t.Errorf("shrinking t1 to 2 partitions: %v, want INVALID_PARTITIONS", err)
		}
		rs, err = adm.ValidateCreatePartitions(ctx, 1, s.t1)
		if err == nil {
			err = rs.Error()
		}
		must(t, "ValidateCreatePartitions", err)
		td, err := adm.ListTopics(ctx, s.t1)
		must(t, "ListTopics", err)
		if n := len(td[s.t1].Partitions); n != startParts+addParts {
			t.Errorf("validate-only CreatePartitions was applied: %d partitions", n)
		}
	})

	s.step(t, "delete_records", []string{"produce"}, func(t *testing.T) {
		ctx := ctxT(t)
		needID(t)
		vs, err := adm.ApiVersions(ctx)
		must(t, "ApiVersions", err)
		if v := vs[brokerID]; v.Err != nil {
			t.Fatalf("ApiVersions: %v", v.Err)
		} else if _, _, ok := v.KeyVersions(21); !ok {
			t.Errorf("ApiVersions lacks key 21 (DeleteRecords)")
		}
		os := kadm.Offsets{}
		os.Add(kadm.Offset{Topic: s.t1, Partition: 0, At: 4})
		os.Add(kadm.Offset{Topic: s.t1, Partition: 1, At: -1}) // -1: up to the high watermark
		rs, err := adm.DeleteRecords(ctx, os)
		must(t, "DeleteRecords", err)
		for p, want := range map[int32]int64{0: 4, 1: perPartition} {
			r, ok := rs.Lookup(s.t1, p)
			if !ok || r.Err != nil || r.LowWatermark != want {
				t.Errorf("DeleteRecords p%d: %+v (present %v), want low watermark %d", p, r, ok, want)
			}
		}
		start, err := adm.ListStartOffsets(ctx, s.t1)
		must(t, "ListStartOffsets", err)
		for p, want := range map[int32]int64{0: 4, 1: perPartition, 2: 0} {
			if o, _ := start.Lookup(s.t1, p); o.Offset != want {
				t.Errorf("start offset p%d after DeleteRecords = %d, want %d", p, o.Offset, want)
			}
		}
		// A consumer from the start of partition 0 begins at 4.
		c, err := kgo.NewClient(kgo.SeedBrokers(seeds()...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{s.t1: {0: kgo.NewOffset().AtStart()}}))
		must(t, "consumer", err)
		defer c.Close()
		fs := c.PollRecords(ctx, 1)
		must(t, "PollRecords", fs.Err())
		if recs := fs.Records(); len(recs) == 0 || recs[0].Offset != 4 {
			t.Errorf("first record from the start of p0 after DeleteRecords: %v, want offset 4", recs)
		}
		// Beyond the high watermark: OFFSET_OUT_OF_RANGE.
		os = kadm.Offsets{}
		os.Add(kadm.Offset{Topic: s.t1, Partition: 2, At: perPartition + 5})
		rs, err = adm.DeleteRecords(ctx, os)
		if err == nil {
			r, _ := rs.Lookup(s.t1, 2)
			err = r.Err
		}
		if !errors.Is(err, kerr.OffsetOutOfRange) {
			t.Errorf("DeleteRecords beyond the high watermark: %v, want OFFSET_OUT_OF_RANGE", err)
		}
	})

	s.step(t, "transactions", []string{"create_topics"}, func(t *testing.T) {
		ctx := ctxT(t)
		needID(t)
		txnID := "kadm-smoke-txn-" + sfx
		p, err := kgo.NewClient(kgo.SeedBrokers(seeds()...), kgo.TransactionalID(txnID), kgo.DefaultProduceTopic(s.t2))
		must(t, "transactional NewClient", err)
		defer p.Close()
		must(t, "BeginTransaction", p.BeginTransaction())
		must(t, "ProduceSync in txn", p.ProduceSync(ctx, kgo.StringRecord("in-txn")).FirstErr())
		var pid int64 = -1
		// Open transaction: DescribeProducers, ListTransactions, DescribeTransactions;
		// the last stable offset stays at the transaction's first offset.
		dp, err := adm.DescribeProducers(ctx, kadm.TopicsSet{s.t2: {0: {}}})
		must(t, "DescribeProducers", err)
		part := dp[s.t2].Partitions[0]
		must(t, "DescribeProducers partition", part.Err)
		if len(part.ActiveProducers) != 1 {
			t.Errorf("DescribeProducers t2/0: %d active producers, want 1 (%+v)", len(part.ActiveProducers), part)
		}
		for id, ap := range part.ActiveProducers {
			pid = id
			if ap.CurrentTxnStartOffset != 0 || ap.LastSequence != 0 {
				t.Errorf("active producer %+v: want txn start offset 0, last sequence 0", ap)
			}
		}
		lt, err := adm.ListTransactions(ctx, nil, nil)
		must(t, "ListTransactions", err)
		if l, ok := lt[txnID]; !ok || l.State != "Ongoing" || l.ProducerID != pid || l.Coordinator != brokerID {
			t.Errorf("ListTransactions entry: %+v (present %v), want Ongoing, producer %d", l, ok, pid)
		}
		dt, err := adm.DescribeTransactions(ctx, txnID)
		must(t, "DescribeTransactions", err)
		d := dt[txnID]
		must(t, "DescribeTransactions result", d.Err)
		if d.State != "Ongoing" || d.ProducerID != pid || len(d.Topics[s.t2]) != 1 {
			t.Errorf("DescribeTransactions open: %+v, want Ongoing, producer %d, t2/0", d, pid)
		}
		committed, err := adm.ListCommittedOffsets(ctx, s.t2)
		must(t, "ListCommittedOffsets open", err)
		if o, _ := committed.Lookup(s.t2, 0); o.Err != nil || o.Offset != 0 {
			t.Errorf("last stable offset with an open txn: %+v, want 0", o)
		}
		must(t, "EndTransaction commit", p.EndTransaction(ctx, kgo.TryCommit))
		eventually(t, "transaction CompleteCommit", 10*time.Second, func() error {
			dt, err := adm.DescribeTransactions(ctx, txnID)
			if err != nil {
				return err
			}
			if d := dt[txnID]; d.State != "CompleteCommit" || len(d.Topics) != 0 {
				return fmt.Errorf("%+v", d)
			}
			return nil
		})
		eventually(t, "last stable offset past the commit marker", 10*time.Second, func() error {
			committed, err := adm.ListCommittedOffsets(ctx, s.t2)
			if err != nil {
				return err
			}
			end, err := adm.ListEndOffsets(ctx, s.t2)
			if err != nil {
				return err
			}
			c, _ := committed.Lookup(s.t2, 0)
			e, _ := end.Lookup(s.t2, 0)
			if c.Offset != 2 || e.Offset != 2 { // the record and the commit marker
				return fmt.Errorf("last stable %d, end %d, want 2 and 2", c.Offset, e.Offset)
			}
			return nil
		})
		dp, err = adm.DescribeProducers(ctx, kadm.TopicsSet{s.t2: {0: {}}})
		must(t, "DescribeProducers after commit", err)
		for _, ap := range dp[s.t2].Partitions[0].ActiveProducers {
			if ap.CurrentTxnStartOffset != -1 {
				t.Errorf("producer after commit %+v: want no open transaction (txn start offset -1)", ap)
			}
		}
	})

	s.step(t, "delete_topics", []string{"create_topics"}, func(t *testing.T) {
		ctx := ctxT(t)
		needID(t)
		rs, err := adm.DeleteTopics(ctx, s.t1, s.t2)
		must(t, "DeleteTopics", err)
		must(t, "DeleteTopics result", rs.Error())
		eventually(t, "deleted topics gone from metadata", 10*time.Second, func() error {
			all, err := adm.ListTopics(ctx)
			if err != nil {
				return err
			}
			if all.Has(s.t1) || all.Has(s.t2) {
				return fmt.Errorf("still listed")
			}
			return nil
		})
		rs, err = adm.DeleteTopics(ctx, s.t1)
		if err == nil {
			err = rs.Error()
		}
		if !errors.Is(err, kerr.UnknownTopicOrPartition) {
			t.Errorf("deleting t1 again: %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
		}
	})
}
