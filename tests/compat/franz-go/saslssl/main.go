// Command saslssl is franz-go's driver for tests/compat/test_compat_sasl_ssl.py:
// a kgo client over SASL_SSL (SCRAM-SHA-512, TLS with the test CA) that
// produces, consumes as a group member, or shows what a wrong password gets.
//
//	saslssl -mode produce     -seeds H:P -ca ca.pem -user U -password P -topic T < records.json
//	saslssl -mode consume     -seeds H:P -ca ca.pem -user U -password P -topic T -group G -count N
//	saslssl -mode bad-produce -seeds H:P -ca ca.pem -user U -password WRONG -topic T
//
// records.json: [{"key": "...", "value": "..."}]. The result is one JSON
// document on stdout; kgo's warnings go to stderr. It lives in the franz-go
// module (../go.mod pins franz-go; pkg/sasl/scram is part of it) and is
// built with `go build` by the pytest module.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime/debug"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

type rec struct {
	Key       string `json:"key"`
	Value     string `json:"value"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

var (
	mode     = flag.String("mode", "", "produce | consume | bad-produce | version")
	seeds    = flag.String("seeds", "", "bootstrap host:port (the SASL_SSL listener)")
	caFile   = flag.String("ca", "", "PEM file of the CA that signed the broker's certificate")
	user     = flag.String("user", "", "SCRAM-SHA-512 user")
	password = flag.String("password", "", "its password")
	topic    = flag.String("topic", "", "topic")
	group    = flag.String("group", "", "consumer group (consume)")
	count    = flag.Int("count", 0, "records to consume (consume)")
	deadline = flag.Duration("timeout", 45*time.Second, "deadline of the whole run")
)

func fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "saslssl: "+format+"\n", a...)
	os.Exit(1)
}

func emit(v any) {
	if err := json.NewEncoder(os.Stdout).Encode(v); err != nil {
		fail("writing the result: %v", err)
	}
}

// options: the SASL_SSL connection every mode uses. kgo.DialTLSConfig sets
// ServerName from the dialed host (127.0.0.1), which the broker's
// certificate carries as an IP SAN; certificates are verified against ca.
func options() []kgo.Opt {
	pem, err := os.ReadFile(*caFile)
	if err != nil {
		fail("reading -ca: %v", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		fail("no certificate in %s", *caFile)
	}
	return []kgo.Opt{
		kgo.SeedBrokers(*seeds),
		kgo.ClientID("strata-compat-franz-go-sasl"),
		kgo.DialTLSConfig(&tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}),
		kgo.SASL(scram.Auth{User: *user, Pass: *password}.AsSha512Mechanism()),
		kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelWarn, nil)),
	}
}

// produce: every record with acks=all (kgo's default, idempotent), keyed,
// placed by kgo's default partitioner (murmur2 of the key, as Java's);
// returns each record's partition and offset from the Produce responses.
func produce(ctx context.Context) {
	var in []rec
	if err := json.NewDecoder(os.Stdin).Decode(&in); err != nil {
		fail("reading records from stdin: %v", err)
	}
	cl, err := kgo.NewClient(append(options(), kgo.DefaultProduceTopic(*topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(5*time.Millisecond))...)
	if err != nil {
		fail("new client: %v", err)
	}
	defer cl.Close()
	rs := make([]*kgo.Record, len(in))
	for i, r := range in {
		rs[i] = &kgo.Record{Key: []byte(r.Key), Value: []byte(r.Value)}
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		fail("produce: %v", err)
	}
	out := make([]rec, len(rs))
	for i, r := range rs {
		out[i] = rec{string(r.Key), string(r.Value), r.Partition, r.Offset}
	}
	emit(map[string]any{"acks": out})
}

// consume: joins the group (subscribe), reads `count` records from the
// start, commits what it polled (CommitUncommittedOffsets), leaves.
func consume(ctx context.Context) {
	cl, err := kgo.NewClient(append(options(),
		kgo.ConsumerGroup(*group), kgo.ConsumeTopics(*topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(),
		kgo.FetchMaxWait(100*time.Millisecond), kgo.SessionTimeout(10*time.Second),
		kgo.HeartbeatInterval(500*time.Millisecond))...)
	if err != nil {
		fail("new client: %v", err)
	}
	defer cl.Close()
	var got []rec
	next := map[int32]int64{}
	for len(got) < *count {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			fail("group member got %d of %d records before the deadline", len(got), *count)
		}
		var errs []error
		fs.EachError(func(t string, p int32, err error) {
			errs = append(errs, fmt.Errorf("%s[%d]: %w", t, p, err))
		})
		if len(errs) > 0 {
			fail("fetch errors: %v", errors.Join(errs...))
		}
		fs.EachRecord(func(r *kgo.Record) {
			got = append(got, rec{string(r.Key), string(r.Value), r.Partition, r.Offset})
			next[r.Partition] = r.Offset + 1
		})
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		fail("commit: %v", err)
	}
	if err := cl.LeaveGroupContext(ctx); err != nil {
		fail("leave group: %v", err)
	}
	emit(map[string]any{"records": got, "committed": next})
}

// badProduce: one record with these (wrong) credentials; the error kgo
// reports, or the partition/offset if it was (wrongly) accepted.
func badProduce(ctx context.Context) {
	cl, err := kgo.NewClient(append(options(), kgo.DefaultProduceTopic(*topic),
		kgo.RecordDeliveryTimeout(15*time.Second), kgo.RecordRetries(1))...)
	if err != nil {
		fail("new client: %v", err)
	}
	defer cl.Close()
	t0 := time.Now()
	r := &kgo.Record{Key: []byte("refused"), Value: []byte("refused")}
	err = cl.ProduceSync(ctx, r).FirstErr()
	res := map[string]any{"seconds": time.Since(t0).Seconds()}
	if err != nil {
		res["error"] = err.Error()
	} else {
		res["delivered"] = rec{string(r.Key), string(r.Value), r.Partition, r.Offset}
	}
	emit(res)
}

func version() {
	v := map[string]string{"go": "", "franz-go": ""}
	if bi, ok := debug.ReadBuildInfo(); ok {
		v["go"] = bi.GoVersion
		for _, d := range bi.Deps {
			if d.Path == "github.com/twmb/franz-go" {
				v["franz-go"] = d.Version
			}
		}
	}
	emit(v)
}

func main() {
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), *deadline)
	defer cancel()
	switch *mode {
	case "produce":
		produce(ctx)
	case "consume":
		consume(ctx)
	case "bad-produce":
		badProduce(ctx)
	case "version":
		version()
	default:
		fail("unknown -mode %q", *mode)
	}
}
