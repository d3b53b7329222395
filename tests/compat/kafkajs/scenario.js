#!/usr/bin/env node
// One stage of the compatibility scenario (tests/compat/scenario.py) with
// kafkajs, run by tests/compat/test_compat_kafkajs.py:
//
//   node scenario.js COMMAND IN.json OUT.json
//
// COMMAND: versions | create-topic | produce | consume | group-offsets |
// describe-group | offsets-for-times | reassign | list-reassignments (the
// last two also serve tests/e2e/test_reassignment.py; versions, produce and
// consume also serve tests/compat/test_compat_sasl_ssl.py, over SASL_SSL).
// IN.json holds the arguments, OUT.json gets the result
// ({"ok": ...} or {"error": "..."}). kafkajs logs go to stderr.
'use strict'

const fs = require('fs')
const {
  Kafka, Partitioners, CompressionTypes, CompressionCodecs, logLevel,
} = require('kafkajs')
const SnappyCodec = require('kafkajs-snappy')

// gzip is built into kafkajs; snappy comes from kafkajs-snappy (pure JS). The
// lz4 and zstd codecs published for kafkajs are native addons (see FINDINGS.md).
CompressionCodecs[CompressionTypes.Snappy] = SnappyCodec
const CODECS = {
  none: CompressionTypes.None,
  gzip: CompressionTypes.GZIP,
  snappy: CompressionTypes.Snappy,
}

const [command, inPath, outPath] = process.argv.slice(2)
const args = inPath ? JSON.parse(fs.readFileSync(inPath, 'utf8')) : {}

const logCreator = () => ({ namespace, level, label, log }) => {
  const { message, ...extra } = log
  process.stderr.write(`${label} [${namespace}] ${message} ${JSON.stringify(extra)}\n`)
}

// Optional in IN.json (tests/compat/test_compat_sasl_ssl.py): "ssl": {"ca":
// PEM file} for a TLS listener, "sasl": {"mechanism": "scram-sha-512",
// "username", "password"}; "retries" overrides the client's retry count.
function security () {
  const out = {}
  if (args.ssl) out.ssl = { ca: [fs.readFileSync(args.ssl.ca, 'utf8')] }
  if (args.sasl) out.sasl = { ...args.sasl }
  return out
}

function client () {
  return new Kafka({
    clientId: 'strata-compat-kafkajs',
    brokers: [args.bootstrap],
    logLevel: logLevel.WARN,
    logCreator,
    connectionTimeout: 10000,
    requestTimeout: 30000,
    retry: { retries: args.retries ?? 5 },
    ...security(),
  })
}

function withTimeout (promise, ms, what) {
  let t
  const timer = new Promise((_resolve, reject) => {
    t = setTimeout(() => reject(new Error(`${what}: timed out after ${ms} ms`)), ms)
  })
  return Promise.race([promise, timer]).finally(() => clearTimeout(t))
}

async function describeGroup (group) {
  const admin = client().admin()
  await admin.connect()
  try {
    const { groups } = await admin.describeGroups([group])
    return groups[0]
  } finally {
    await admin.disconnect()
  }
}

const commands = {
  async versions () {
    return {
      kafkajs: require('kafkajs/package.json').version,
      'kafkajs-snappy': require('kafkajs-snappy/package.json').version,
      node: process.version,
      codecs: Object.keys(CODECS),
    }
  },

  async 'create-topic' () {
    const admin = client().admin()
    await admin.connect()
    try {
      const created = await admin.createTopics({
        topics: [{ topic: args.topic, numPartitions: args.partitions, replicationFactor: 1 }],
        waitForLeaders: true,
        timeout: 30000,
      })
      if (!created) throw new Error(`createTopics(${args.topic}) returned false (topic already there?)`)
      return created
    } finally {
      await admin.disconnect()
    }
  },

  // Records: [{seq, key, value, ts}]. Returns [{seq, partition, offset}]: the
  // partition is what kafkajs' default (Java-compatible murmur2) partitioner
  // chose, the offset the partition's baseOffset from the Produce response
  // plus the record's position in that partition's batch.
  async produce () {
    if (!(args.codec in CODECS)) throw new Error(`no ${args.codec} codec registered`)
    const chosen = new Map()
    const createPartitioner = () => {
      const inner = Partitioners.DefaultPartitioner()
      return (a) => {
        const p = inner(a)
        chosen.set(a.message.value.toString(), p)
        return p
      }
    }
    const producer = client().producer({ createPartitioner, allowAutoTopicCreation: false })
    await producer.connect()
    try {
      const metadata = await producer.send({
        topic: args.topic,
        acks: -1,
        timeout: 30000,
        compression: CODECS[args.codec],
        messages: args.records.map(r => ({ key: r.key, value: r.value, timestamp: String(r.ts) })),
      })
      const base = {}
      for (const m of metadata) {
        if (m.errorCode !== 0) throw new Error(`produce error ${JSON.stringify(m)}`)
        base[m.partition] = BigInt(m.baseOffset)
      }
      const next = {}
      return args.records.map(r => {
        const p = chosen.get(r.value)
        if (p === undefined || base[p] === undefined) throw new Error(`no acknowledgement for seq ${r.seq}`)
        const i = next[p] || 0n
        next[p] = i + 1n
        return { seq: r.seq, partition: p, offset: Number(base[p] + i) }
      })
    } finally {
      await producer.disconnect()
    }
  },

  // Reads `count` records as a member of `group`, commits exactly what it
  // processed, describes the group if asked (admin.describeGroups, still a
  // member), leaves. Returns {records: [[partition, offset, key, value, ts]],
  // committed, described}.
  async consume () {
    const consumer = client().consumer({
      groupId: args.group,
      sessionTimeout: 10000,
      heartbeatInterval: 500,
      maxWaitTimeInMs: 100,
      retry: { retries: 5 },
    })
    const got = []
    const next = {}
    let described = null
    let done
    const finished = new Promise(resolve => { done = resolve })
    await consumer.connect()
    try {
      await consumer.subscribe({ topics: [args.topic], fromBeginning: true })
      await consumer.run({
        autoCommit: false,
        eachMessage: async ({ partition, message }) => {
          if (got.length >= args.count) return // fetched but not processed: not committed
          got.push([partition, Number(message.offset), message.key && message.key.toString(),
            message.value.toString(), Number(message.timestamp)])
          next[partition] = Number(message.offset) + 1
          if (got.length === args.count) done()
        },
      })
      await withTimeout(finished, 45000, `group member got ${got.length} of ${args.count} records`)
      consumer.pause([{ topic: args.topic }])
      await consumer.commitOffsets(Object.entries(next).map(([p, o]) => (
        { topic: args.topic, partition: Number(p), offset: String(o) })))
      if (args.describe) described = await describeGroup(args.group)
    } finally {
      await consumer.disconnect() // LeaveGroup; autoCommit is off
    }
    return { records: got, committed: next, described }
  },

  // Committed offsets (OffsetFetch) and end offsets (ListOffsets latest)
  // through the admin client: {partition: [committed or null, end]}.
  async 'group-offsets' () {
    const admin = client().admin()
    await admin.connect()
    try {
      const [t] = await admin.fetchOffsets({ groupId: args.group, topics: [args.topic] })
      const ends = await admin.fetchTopicOffsets(args.topic)
      const out = {}
      for (const e of ends) out[e.partition] = [null, Number(e.high)]
      for (const p of t.partitions) {
        const o = Number(p.offset)
        out[p.partition][0] = o >= 0 ? o : null
      }
      return out
    } finally {
      await admin.disconnect()
    }
  },

  // The group as admin.describeGroups sees it.
  async 'describe-group' () {
    return describeGroup(args.group)
  },

  // {ts: {partition: offset}} from admin.fetchTopicOffsetsByTimestamp (which
  // answers the high watermark where no record is at or after ts).
  async 'offsets-for-times' () {
    const admin = client().admin()
    await admin.connect()
    try {
      const out = {}
      for (const ts of args.timestamps) {
        const res = await admin.fetchTopicOffsetsByTimestamp(args.topic, ts)
        out[ts] = Object.fromEntries(res.map(r => [r.partition, Number(r.offset)]))
      }
      return out
    } finally {
      await admin.disconnect()
    }
  },

  // admin.alterPartitionReassignments (KIP-455), as kafka-reassign-partitions
  // sends it: {"errors": []} or the per-partition errors kafkajs reports.
  async reassign () {
    const admin = client().admin()
    await admin.connect()
    try {
      await admin.alterPartitionReassignments({
        topics: [{ topic: args.topic, partitionAssignment: args.assignments }],
        timeout: 30000,
      })
      return { errors: [] }
    } catch (e) {
      if (!e.errors) throw e
      return {
        errors: e.errors.map(x => ({ topic: x.topic, partition: x.partition, type: x.type, message: x.message })),
      }
    } finally {
      await admin.disconnect()
    }
  },

  // admin.listPartitionReassignments: the reassignments under way.
  async 'list-reassignments' () {
    const admin = client().admin()
    await admin.connect()
    try {
      return await admin.listPartitionReassignments({ topics: args.topics || null, timeout: 30000 })
    } finally {
      await admin.disconnect()
    }
  },
}

async function main () {
  const fn = commands[command]
  if (!fn) throw new Error(`unknown command ${command}; one of ${Object.keys(commands).join(', ')}`)
  return fn()
}

main().then(
  ok => {
    fs.writeFileSync(outPath, JSON.stringify({ ok }))
    process.exit(0)
  },
  err => {
    fs.writeFileSync(outPath, JSON.stringify({ error: `${err.name}: ${err.message}\n${err.stack}` }))
    process.exit(1)
  },
)
