#!/usr/bin/python3
"""keyviz_cost.py: instructions per point operation with the key
visualizer on and off, under callgrind (conf/README.md, "Seeing hotspots").

  tests/bench/keyviz_cost.py --proxy BUILD/daemon/hbase-salt-proxy \\
      --emu BUILD/tests/emu/hbase-emu --pydir BUILD/thrift/py [--ops N]

The proxy runs under valgrind --tool=callgrind with one worker; a Python
client sends N puts and N gets to a salted table (every key new: the
worst case of the hot-key sketch; --keys K cycles through K keys); the
instructions of a run with no operations are subtracted, so what is left
is per operation.  Prints one line per mode and the difference.

--warm S: the ranges of a steady state.  Without it no interval ends
inside a run, so keys are ranged by the first split (by first byte).
With it, the intervals are S seconds long; 1000 puts of keys spread over
the same key space come first, then the run waits until the interval
whose ranges are the quantiles of their sample has begun (and the one
before it is harvested), zeroes callgrind's counters (callgrind_control
-z) and sends the measured operations, which must end inside that
interval (else it says so and fails).

--max PCT: a bound, for meson's bench suite (bench-keyviz-cost): exits 1
when the difference is above it.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', 'ops'))
import opslib  # noqa: E402
import hsptest  # noqa: E402


def run(args, top, keyviz, ops):
    distinct = args.keys or max(ops, 1)
    workdir = os.path.join(top, '%s-%d' % (keyviz, ops))
    os.mkdir(workdir)
    emu = opslib.Emu(args.emu, workdir, tables=('t:d',))
    port, admin = opslib.free_port(), opslib.free_port()
    conf = opslib.proxy_conf(port, [emu.port], admin_port=admin,
                             tables={'t': 'buckets = 16\n'})
    conf = conf.replace('workers = 2', 'workers = 1')
    # one interval an hour: no harvest (a main-thread job once an
    # interval, not a cost per operation) falls inside a run; --warm:
    # intervals of its length, the measured ones inside one
    conf += ('[keyviz]\nenabled = %s\ninterval_s = %d\n'
             % ('true' if keyviz else 'false', args.warm or 3600))
    path = os.path.join(workdir, 'p.conf')
    with open(path, 'w') as f:
        f.write(conf)
    out = os.path.join(workdir, 'cg.%s.%d' % (keyviz, ops))
    # uncompressed names: a dump after --warm's zeroing names its
    # functions itself (callgrind_annotate on --keep's files)
    proc = subprocess.Popen(['valgrind', '--tool=callgrind',
                             '--compress-strings=no', '--compress-pos=no',
                             '--callgrind-out-file=' + out,
                             args.proxy, '-c', path, '--log-level',
                             'warning'],
                            stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    opslib.wait_for(lambda: opslib.can_connect(port)
                    and opslib.can_connect(admin), 60, 'proxy')
    c = opslib.client(port, timeout=60)
    if args.warm:
        # a sample of the key space the measured keys span
        for i in range(1000):
            opslib.put(c, b't', b'user%08d' % (i * max(distinct, 1000)
                                               // 1000), b'v')
        # its interval's quantiles are the ranges of the one two after;
        # measured once the one between is harvested (a second after it)
        target = int(time.time()) // args.warm + 2
        while time.time() < target * args.warm + 1.5:
            time.sleep(0.1)
        subprocess.run(['callgrind_control', '-z', str(proc.pid)],
                       check=True, capture_output=True, timeout=60)
    for i in range(ops):
        opslib.put(c, b't', b'user%08d' % (i % distinct), b'v')
        opslib.get(c, b't', b'user%08d' % (i % distinct))
    if args.warm and time.time() >= (target + 1) * args.warm + 1:
        sys.exit('--warm %d: the operations outlasted the interval; give '
                 'a longer one' % args.warm)
    c._trans.close()
    proc.terminate()
    proc.wait(120)
    emu.close()
    total = 0
    for line in open(out):
        if line.startswith('summary:') or line.startswith('totals:'):
            total = int(line.split()[1])
    return total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--proxy', required=True)
    ap.add_argument('--emu', required=True)
    ap.add_argument('--pydir', required=True)
    ap.add_argument('--ops', type=int, default=2000)
    ap.add_argument('--keys', type=int, default=0,
                    help='distinct keys, cycled (default: every key new)')
    ap.add_argument('--keep', help='directory to keep the callgrind files in')
    ap.add_argument('--warm', type=int, default=0, metavar='S',
                    help='measure with ranges from a sample (intervals of '
                         'S seconds; see above)')
    ap.add_argument('--max', type=float, metavar='PCT',
                    help='fail (exit 1) when the difference is above PCT; '
                         'skip (exit 77) without valgrind')
    args = ap.parse_args()
    if args.max is not None and shutil.which('valgrind') is None:
        print('no valgrind: skipped')
        sys.exit(77)
    hsptest.import_thrift(args.pydir, opslib)
    per = {}
    for keyviz in (False, True):
        with tempfile.TemporaryDirectory() as d:
            top = args.keep or d
            base = run(args, top, keyviz, 0)
            full = run(args, top, keyviz, args.ops)
        # a put and a get per i: 2 point operations
        per[keyviz] = (full - base) / (2.0 * args.ops)
        print('keyviz %-5s %.0f instructions per point operation'
              % ('on' if keyviz else 'off', per[keyviz]))
    diff = 100 * (per[True] - per[False]) / per[False]
    print('difference %+.2f %%' % diff)
    if args.max is not None and diff > args.max:
        sys.exit('the key visualizer costs %+.2f %% per point operation, '
                 'more than --max %.2f %%' % (diff, args.max))


if __name__ == '__main__':
    main()
