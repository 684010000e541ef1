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

--sampling N: [keyviz] hot_key_sampling = N (1: every read and write
feeds the hot-key sketches; the proxy's default otherwise).

--max PCT: a bound, for meson's bench suite (bench-keyviz-cost): exits 1
when the difference is above it.

--by-function N: also the N functions whose instructions per point
operation differ most between on and off (each function's own, not
inclusive: (on - on with no operations) - (off - off with none)).  The
difference above moves by +-0.5 % from run to run (the client's timing
changes how the proxy's reads split); the key visualizer's own functions
(keyviz_notes, the codec's) do not, so a change to them shows there.
After --warm's zeroing, the functions on the worker's stack then
(proxy_worker_main, event_base_dispatch, ...) carry its whole
difference.
"""
import argparse
import os
import re
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
    if args.sampling:
        conf += 'hot_key_sampling = %d\n' % args.sampling
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
    return total, (by_function(out) if args.by_function else {})


# "  1,234 ( 0.01%)  file:function [object]"
ANNOTATE_LINE = re.compile(r'\s*([\d,]+)\s+\([^)]*\)\s+(\S.*?)\s*(\[.*\])?$')


def by_function(path):
    """Each function's own instructions in the callgrind file path."""
    out = subprocess.run(['callgrind_annotate', '--inclusive=no',
                          '--threshold=100', path], check=True,
                         capture_output=True, text=True).stdout
    fns = {}
    for line in out.splitlines():
        m = ANNOTATE_LINE.match(line)
        if m is None or 'PROGRAM TOTALS' in line:
            continue
        name = m.group(2).rsplit(':', 1)[-1]
        fns[name] = fns.get(name, 0) + int(m.group(1).replace(',', ''))
    return fns


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--proxy', required=True)
    ap.add_argument('--emu', required=True)
    ap.add_argument('--pydir', required=True)
    ap.add_argument('--ops', type=int, default=2000)
    ap.add_argument('--keys', type=int, default=0,
                    help='distinct keys, cycled (default: every key new)')
    ap.add_argument('--sampling', type=int, default=0, metavar='N',
                    help='[keyviz] hot_key_sampling (default: the '
                         "proxy's)")
    ap.add_argument('--keep', help='directory to keep the callgrind files in')
    ap.add_argument('--warm', type=int, default=0, metavar='S',
                    help='measure with ranges from a sample (intervals of '
                         'S seconds; see above)')
    ap.add_argument('--by-function', type=int, default=0, metavar='N',
                    help='print the N functions whose cost differs most '
                         '(see above)')
    ap.add_argument('--max', type=float, metavar='PCT',
                    help='fail (exit 1) when the difference is above PCT; '
                         'skip (exit 77) without valgrind')
    args = ap.parse_args()
    if args.max is not None and shutil.which('valgrind') is None:
        print('no valgrind: skipped')
        sys.exit(77)
    hsptest.import_thrift(args.pydir, opslib)
    per, fns = {}, {}
    for keyviz in (False, True):
        with tempfile.TemporaryDirectory() as d:
            top = args.keep or d
            base, base_fns = run(args, top, keyviz, 0)
            full, full_fns = run(args, top, keyviz, args.ops)
        # a put and a get per i: 2 point operations
        per[keyviz] = (full - base) / (2.0 * args.ops)
        fns[keyviz] = {f: (full_fns.get(f, 0) - base_fns.get(f, 0))
                       / (2.0 * args.ops)
                       for f in set(base_fns) | set(full_fns)}
        print('keyviz %-5s %.0f instructions per point operation'
              % ('on' if keyviz else 'off', per[keyviz]))
    diff = 100 * (per[True] - per[False]) / per[False]
    print('difference %+.2f %%' % diff)
    if args.by_function:
        names = set(fns[False]) | set(fns[True])
        delta = {f: fns[True].get(f, 0) - fns[False].get(f, 0)
                 for f in names}
        print('per point operation, on - off, by function:')
        for f in sorted(names, key=lambda f: -abs(delta[f]))[
                :args.by_function]:
            print('  %+8.1f  %s (off %.1f)' % (delta[f], f,
                                              fns[False].get(f, 0)))
    if args.max is not None and diff > args.max:
        sys.exit('the key visualizer costs %+.2f %% per point operation, '
                 'more than --max %.2f %%' % (diff, args.max))


if __name__ == '__main__':
    main()
