// pipeline.js: a pipelining HBase Thrift1 or Thrift2 client on npm's thrift package, for the e2e tests.
//
// Sends every call of a list at once, the way a Node.js application does
// with callbacks (the library writes each call as it is made and matches
// replies by sequence id), once to the proxy and once straight to a
// reference emulator, and compares every reply.  Exit status 0: the same
// answers; 1: a difference (the first few are printed); 2: a usage or
// connection error.
//
//   node pipeline.js --gen DIR --calls FILE --proxy PORT[:PROTO:TRANSPORT]
//                    --ref PORT[:PROTO:TRANSPORT] [--service thrift1|thrift2]
//                    [--ref-calls FILE] [--ignore FIELD,...]
//
// DIR holds `thrift --gen js:node` output for thrift/hbase.thrift (service
// Hbase) and thrift/hbase2.thrift (THBaseService, --service thrift2); FILE is
// a JSON list of [method, [args...]] written by test_pipeline.py, with
// bytes as {"b": hex}, structs as {"s": name, "f": {field: value}} and maps
// as {"m": [[key, value], ...]}.  --ref-calls: the same calls as the
// reference is to get them (its tables under other names, when one real
// HBase cluster holds both sides); the default is FILE.  --ignore:
// struct fields left out of the comparison.
'use strict';

const fs = require('fs');
const path = require('path');
const thrift = require('thrift');

function usage(why) {
  process.stderr.write('pipeline.js: ' + why + '\n');
  process.exit(2);
}

function parseArgs(argv) {
  const out = {};
  for (let i = 0; i < argv.length; i += 2) {
    if (!argv[i].startsWith('--') || i + 1 >= argv.length) {
      usage('bad arguments');
    }
    out[argv[i].slice(2)] = argv[i + 1];
  }
  for (const k of ['gen', 'calls', 'proxy', 'ref']) {
    if (!out[k]) {
      usage('--' + k + ' is required');
    }
  }
  return out;
}

const args = parseArgs(process.argv.slice(2));
const thrift2 = (args.service || 'thrift1') === 'thrift2';
if (!thrift2 && (args.service || 'thrift1') !== 'thrift1') {
  usage('--service is thrift1 or thrift2');
}
const Service = require(path.resolve(args.gen, thrift2 ? 'THBaseService.js'
                                                       : 'Hbase.js'));
const ttypes = require(path.resolve(args.gen, thrift2 ? 'hbase2_types.js'
                                                      : 'hbase_types.js'));

// JSON from the test back to what the generated code takes.
function decode(v) {
  if (Array.isArray(v)) {
    return v.map(decode);
  }
  if (v !== null && typeof v === 'object') {
    if ('b' in v) {
      return Buffer.from(v.b, 'hex');
    }
    if ('m' in v) {
      const m = {};
      for (const [k, x] of v.m) {
        m[decode(k).toString('latin1')] = decode(x);
      }
      return m;
    }
    if ('s' in v) {
      const f = {};
      for (const k of Object.keys(v.f)) {
        f[k] = decode(v.f[k]);
      }
      return new ttypes[v.s](f);
    }
  }
  return v;
}

// A reply in a plain form both sides can be compared in: bytes as hex,
// objects with sorted keys, i64 as decimal text, server timestamps
// ("now", far above the tests' explicit ones) as "NOW".
const NOW_MS = 1e12;
const IGNORED = new Set((args.ignore || '').split(',').filter((f) => f));

function plain(v, key) {
  if (v === null || v === undefined) {
    return null;
  }
  if (Buffer.isBuffer(v)) {
    return {hex: v.toString('hex')};
  }
  if (typeof v === 'object' && typeof v.toNumber === 'function'
      && v.buffer !== undefined) {
    const n = v.toNumber(true);
    return key === 'timestamp' && n >= NOW_MS ? 'NOW' : String(v.toString(10));
  }
  if (typeof v === 'number') {
    return key === 'timestamp' && v >= NOW_MS ? 'NOW' : v;
  }
  if (Array.isArray(v)) {
    return v.map((x) => plain(x));
  }
  if (typeof v === 'object') {
    const out = {};
    for (const k of Object.keys(v).sort()) {
      if (typeof v[k] !== 'function' && !IGNORED.has(k)) {
        out[k] = plain(v[k], k);
      }
    }
    return out;
  }
  return v;
}

function connect(spec) {
  const [port, proto = 'binary', transport = 'buffered'] = spec.split(':');
  return new Promise((resolve, reject) => {
    const conn = thrift.createConnection('127.0.0.1', Number(port), {
      transport: transport === 'framed' ? thrift.TFramedTransport
        : thrift.TBufferedTransport,
      protocol: proto === 'compact' ? thrift.TCompactProtocol
        : thrift.TBinaryProtocol,
      connect_timeout: 5000,
      timeout: 60000,
    });
    conn.on('error', reject);
    conn.on('connect', () => resolve(conn));
  });
}

// Makes every call at once; resolves to the replies in call order.
async function runAll(spec, calls) {
  const conn = await connect(spec);
  const client = thrift.createClient(Service, conn);
  let failure = null;
  conn.on('error', (e) => { failure = e; });
  const replies = await Promise.all(calls.map(([name, cargs]) =>
    new Promise((resolve) => {
      client[name](...cargs.map(decode), (err, res) => {
        if (err) {
          resolve({exc: err.name || err.constructor.name,
                   fields: plain(Object.assign({}, err))});
        } else {
          resolve({ok: plain(res)});
        }
      });
    })));
  conn.end();
  if (failure !== null) {
    throw failure;
  }
  return replies;
}

async function main() {
  const calls = JSON.parse(fs.readFileSync(args.calls, 'utf8'));
  const refCalls = args['ref-calls']
    ? JSON.parse(fs.readFileSync(args['ref-calls'], 'utf8')) : calls;
  if (refCalls.length !== calls.length) {
    usage('--ref-calls holds ' + refCalls.length + ' calls, --calls '
          + calls.length);
  }
  let got, want;
  try {
    [got, want] = await Promise.all([runAll(args.proxy, calls),
                                     runAll(args.ref, refCalls)]);
  } catch (e) {
    usage('connection failed: ' + e);
  }
  let bad = 0;
  for (let i = 0; i < calls.length; i++) {
    const a = JSON.stringify(got[i]);
    const b = JSON.stringify(want[i]);
    if (a !== b) {
      if (bad < 3) {
        process.stdout.write('call ' + i + ' ' + calls[i][0] + ':\n  proxy:  '
                             + a + '\n  direct: ' + b + '\n');
      }
      bad++;
    }
  }
  process.stdout.write(bad + ' of ' + calls.length + ' replies differ\n');
  process.exit(bad === 0 ? 0 : 1);
}

main();
