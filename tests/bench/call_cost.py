#!/usr/bin/python3
"""call_cost.py: what a point call costs the proxy outside the codec, as
calls into the libraries per call, under callgrind (tests/bench/
BENCHMARKS.md, "Outside the codec (wt-pipe26)").

  tests/bench/call_cost.py --proxy BUILD/daemon/hbase-salt-proxy \\
      --emu BUILD/tests/emu/hbase-emu --pydir BUILD/thrift/py [--ops N]

The proxy runs under valgrind --tool=callgrind with one worker; a Python
client sends N gets and N puts to a salted table, between a zeroing of
callgrind's counters and a dump.  Counted per point call, from the
dump's call counts (exact, whatever the build's optimisation, whatever
the machine's load):

- clock readings (g_get_monotonic_time): one per socket read callback
  at most (req.h req_clock_hold); main before wt-pipe26 read it 6 times
  a call;
- evbuffer_get_length: main before wt-pipe26 asked 15 times a call;
- reply headers parsed (wire_read_msg_begin): the request's and the
  reply's; main before wt-pipe26 parsed the reply's twice (metrics).

--check: exits 1 when one is above its bound (meson's bench suite,
bench-call-cost); 77 (skipped) without valgrind.
"""
import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', 'ops'))
import opslib  # noqa: E402
import hsptest  # noqa: E402

# per point call: (function, bound, what main before wt-pipe26 made)
BOUNDS = (('g_get_monotonic_time', 2.2, 6),
          ('evbuffer_get_length', 10.5, 15),
          ('wire_read_msg_begin', 2.2, 3))


def calls(path):
    """{function name: calls to it} over a callgrind dump."""
    n = collections.Counter()
    fn = None
    with open(path) as f:
        for line in f:
            if line.startswith('cfn='):
                # uncompressed names (--compress-strings=no): cfn=NAME,
                # or cfn=(id) NAME on a first mention
                fn = re.sub(r'^\(\d+\)\s*', '', line[4:].strip())
            elif line.startswith('calls=') and fn is not None:
                n[fn] += int(line[6:].split()[0])
                fn = None
    return n


def run(args, top):
    emu = opslib.Emu(args.emu, top, tables=('t:d',))
    port, admin = opslib.free_port(), opslib.free_port()
    conf = opslib.proxy_conf(port, [emu.port], admin_port=admin,
                             tables={'t': 'buckets = 16\n'})
    conf = conf.replace('workers = 2', 'workers = 1')
    # nothing per interval inside the run: the key visualizer is the
    # codec's and its own benchmark's (keyviz_cost.py)
    conf += '[keyviz]\nenabled = false\n'
    path = os.path.join(top, 'p.conf')
    with open(path, 'w') as f:
        f.write(conf)
    out = os.path.join(top, 'cg.out')
    proc = subprocess.Popen(['valgrind', '--tool=callgrind',
                             '--compress-strings=no', '--compress-pos=no',
                             '--callgrind-out-file=' + out + '.%p',
                             args.proxy, '-c', path, '--log-level',
                             'warning'],
                            stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        opslib.wait_for(lambda: opslib.can_connect(port)
                        and opslib.can_connect(admin), 60, 'proxy')
        c = opslib.client(port, timeout=60)
        # warm: connections open, pools grown
        for i in range(50):
            opslib.put(c, b't', b'user%08d' % i, b'v')
            opslib.get(c, b't', b'user%08d' % i)
        subprocess.run(['callgrind_control', '-z', str(proc.pid)],
                       check=True, capture_output=True, timeout=60)
        for i in range(args.ops):
            opslib.put(c, b't', b'user%08d' % i, b'v')
            opslib.get(c, b't', b'user%08d' % i)
        subprocess.run(['callgrind_control', '-d', str(proc.pid)],
                       check=True, capture_output=True, timeout=60)
        c._trans.close()
    finally:
        proc.terminate()
        proc.wait(120)
        emu.close()
    dumps = sorted(p for p in os.listdir(top) if p.startswith('cg.out.')
                   and not p.endswith('.%d' % proc.pid))
    # the dump asked for (cg.out.PID.1), not the one at exit
    first = [p for p in dumps if p.endswith('.1')]
    return calls(os.path.join(top, (first or dumps)[0]))


def main():
    ap = argparse.ArgumentParser()
    for path in ('--proxy', '--emu', '--pydir'):
        ap.add_argument(path, required=True)
    ap.add_argument('--ops', type=int, default=500)
    ap.add_argument('--keep', help='directory to keep the callgrind files in')
    ap.add_argument('--check', action='store_true',
                    help='fail (exit 1) above the bounds; skip (exit 77) '
                         'without valgrind')
    args = ap.parse_args()
    if shutil.which('valgrind') is None:
        print('no valgrind: skipped')
        sys.exit(77)
    hsptest.import_thrift(args.pydir, opslib)
    with tempfile.TemporaryDirectory() as d:
        n = run(args, args.keep or d)
    over = []
    for fn, bound, main_had in BOUNDS:
        # a put and a get per i: 2 point calls
        per = n[fn] / (2.0 * args.ops)
        print('%-22s %5.2f calls per point call (bound %.1f; main before '
              'wt-pipe26: %d)' % (fn, per, bound, main_had))
        if per > bound:
            over.append(fn)
    if args.check and over:
        sys.exit('above the bound: ' + ', '.join(over))


if __name__ == '__main__':
    main()
